/* boot/iso9660.c: the seed reader against volumes the real tools make
 * (tests/host/boot/iso_fixtures.sh: cloud-localds's genisoimage line, nova's
 * config drive, Rock Ridge only, Joliet only, xorriso, plain), then against
 * small volumes built here field by field and broken one way at a time.
 * Every read goes through a counter, so the bounds are checked too. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot/iso9660.h"

#ifndef ISO_FIXTURES
#error "ISO_FIXTURES: the directory iso_fixtures.sh wrote (tests/host/boot/host.mk)"
#endif

struct disk {
	u8 *data;
	size_t sectors;
	unsigned reads;
	int fail_at;	/* a read of this sector fails (-1: none) */
};

static int disk_read(void *ctx, u32 lba, u8 *buf)
{
	struct disk *d = ctx;

	d->reads++;
	if ((int)lba == d->fail_at || lba >= d->sectors)
		return -EIO;
	memcpy(buf, d->data + (size_t)lba * ISO_SECTOR, ISO_SECTOR);
	return 0;
}

static u8 scratch[ISO_SECTOR];

static struct iso_vol vol_of(struct disk *d)
{
	return (struct iso_vol){ .read = disk_read, .ctx = d, .buf = scratch };
}

static char *slurp(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof path, "%s/%s", ISO_FIXTURES, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static struct disk disk_of(const char *name)
{
	size_t len;
	char *data = slurp(name, &len);

	return (struct disk){ .data = (u8 *)data, .sectors = len / ISO_SECTOR, .fail_at = -1 };
}

/* path in v reads whole to the fixture file want. */
static void expect_file(struct iso_vol *v, const char *path, const char *want)
{
	static u8 got[16384];
	struct iso_file f;
	size_t len;
	char *exp = slurp(want, &len);

	assert_int_equal(iso_lookup(v, path, &f), 0);
	assert_false(f.dir);
	assert_int_equal(iso_read(v, &f, got, sizeof got), (int)len);
	assert_memory_equal(got, exp, len);
	free(exp);
}

static void mount_ok(struct disk *d, struct iso_vol *v, const char *label, enum iso_names names)
{
	*v = vol_of(d);
	assert_int_equal(iso_mount(v), 0);
	assert_string_equal(v->label, label);
	assert_int_equal(v->names, names);
}

/* ---- what the tools make ---- */

static void test_cloud_localds(void **state)
{
	struct disk d = disk_of("cidata-localds.iso");
	struct iso_vol v;
	struct iso_file f;
	u8 small[4096];

	mount_ok(&d, &v, "cidata", ISO_NAMES_ROCK_RIDGE);
	expect_file(&v, "user-data", "nocloud/user-data");
	expect_file(&v, "meta-data", "nocloud/meta-data");
	assert_int_equal(iso_lookup(&v, "network-config", &f), -ENOENT);
	/* 5000 bytes: three sectors, the last one partly; a cap under it refuses */
	assert_int_equal(iso_lookup(&v, "big-file", &f), 0);
	assert_int_equal(f.len, 5000);
	assert_int_equal(iso_read(&v, &f, small, sizeof small), -EOVERFLOW);
	assert_int_equal(iso_read(&v, &f, small, 4999), -EOVERFLOW);
	free(d.data);
}

static void test_nova_config_drive(void **state)
{
	struct disk d = disk_of("config2-nova.iso");
	struct iso_vol v;
	struct iso_file f;
	u8 buf[64];

	mount_ok(&d, &v, "config-2", ISO_NAMES_ROCK_RIDGE);
	expect_file(&v, "openstack/latest/user_data", "config2/openstack/latest/user_data");
	expect_file(&v, "openstack/latest/meta_data.json", "config2/openstack/latest/meta_data.json");
	assert_int_equal(iso_lookup(&v, "openstack/latest/network_data.json", &f), 0);
	assert_int_equal(iso_lookup(&v, "openstack/latest/vendor_data.json", &f), -ENOENT);
	assert_int_equal(iso_lookup(&v, "openstack/2012-08-10/user_data", &f), -ENOENT);
	/* a directory is found but not read; a file is not a directory */
	assert_int_equal(iso_lookup(&v, "openstack/latest", &f), 0);
	assert_true(f.dir);
	assert_int_equal(iso_read(&v, &f, buf, sizeof buf), -EINVAL);
	assert_int_equal(iso_lookup(&v, "openstack/latest/user_data/x", &f), -ENOENT);
	assert_int_equal(iso_lookup(&v, "openstack//latest", &f), -ENOENT);
	assert_int_equal(iso_lookup(&v, "", &f), -ENOENT);
	free(d.data);
}

static void test_rock_ridge_only(void **state)
{
	struct disk d = disk_of("cidata-rr.iso");
	struct iso_vol v;

	mount_ok(&d, &v, "cidata", ISO_NAMES_ROCK_RIDGE);
	expect_file(&v, "user-data", "nocloud/user-data");
	free(d.data);
}

static void test_joliet_only(void **state)
{
	struct disk d = disk_of("cidata-joliet.iso");
	struct iso_vol v;

	mount_ok(&d, &v, "cidata", ISO_NAMES_JOLIET);
	expect_file(&v, "user-data", "nocloud/user-data");
	expect_file(&v, "meta-data", "nocloud/meta-data");
	free(d.data);
}

static void test_xorriso(void **state)
{
	struct disk d = disk_of("cidata-xorriso.iso");
	struct iso_vol v;

	mount_ok(&d, &v, "cidata", ISO_NAMES_ROCK_RIDGE);
	expect_file(&v, "user-data", "nocloud/user-data");
	free(d.data);
}

static void test_plain_names_as_linux_shows_them(void **state)
{
	struct disk d = disk_of("cidata-plain.iso");
	struct iso_vol v;
	struct iso_file f;

	/* Level 1 makes USER_DAT.;1 of user-data: Linux shows user_dat, and
	 * so does the reader, so a plain volume has no user-data to find. */
	mount_ok(&d, &v, "cidata", ISO_NAMES_PLAIN);
	assert_int_equal(iso_lookup(&v, "user-data", &f), -ENOENT);
	expect_file(&v, "user_dat", "nocloud/user-data");
	free(d.data);
}

static void test_read_errors_propagate(void **state)
{
	struct disk d = disk_of("cidata-localds.iso");
	struct iso_vol v = vol_of(&d);
	struct iso_file f;

	d.fail_at = ISO_FIRST_VD;
	assert_int_equal(iso_mount(&v), -EIO);
	d.fail_at = -1;
	assert_int_equal(iso_mount(&v), 0);
	assert_int_equal(iso_lookup(&v, "user-data", &f), 0);
	d.fail_at = (int)f.lba;
	{
		u8 buf[64];

		assert_int_equal(iso_read(&v, &f, buf, sizeof buf), -EIO);
	}
	d.fail_at = (int)v.root_lba;
	assert_int_equal(iso_lookup(&v, "user-data", &f), -EIO);
	free(d.data);
}

/* ---- volumes built here ---- */

#define NSEC 64
#define ROOT 20		/* the root directory's sector */
static u8 img[NSEC * ISO_SECTOR];
static struct disk built = { .data = img, .sectors = NSEC, .fail_at = -1 };

static void le32_both(u8 *p, u32 v)
{
	p[0] = (u8)v, p[1] = (u8)(v >> 8), p[2] = (u8)(v >> 16), p[3] = (u8)(v >> 24);
	p[4] = p[3], p[5] = p[2], p[6] = p[1], p[7] = p[0];
}

/* A directory record at p: its length. su (sulen bytes) after the name. */
static size_t record(u8 *p, const char *name, size_t nlen, u32 lba, u32 len, u8 flags, const u8 *su,
		     size_t sulen)
{
	size_t rl = 33 + nlen + (nlen & 1 ? 0 : 1) + sulen;

	memset(p, 0, rl);
	p[0] = (u8)rl;
	le32_both(p + 2, lba);
	le32_both(p + 10, len);
	p[25] = flags;
	p[28] = 1, p[31] = 1;	/* volume sequence number */
	p[32] = (u8)nlen;
	memcpy(p + 33, name, nlen);
	if (sulen)
		memcpy(p + 33 + nlen + (nlen & 1 ? 0 : 1), su, sulen);
	return rl;
}

static const u8 SP[7] = { 'S', 'P', 7, 1, 0xbe, 0xef, 0 };

/* NM entry for name, flags: its bytes in out, its length. */
static size_t nm(u8 *out, const char *name, u8 flags)
{
	size_t n = strlen(name);

	out[0] = 'N', out[1] = 'M', out[2] = (u8)(5 + n), out[3] = 1, out[4] = flags;
	memcpy(out + 5, name, n);
	return 5 + n;
}

/* The volume: primary descriptor at 16 (label, NSEC sectors, the root at
 * ROOT), terminator at 17; root with ".", ".." and, when rr, SP on "." */
static size_t root_off;

static void build(bool rr)
{
	u8 *pvd = img + 16 * ISO_SECTOR, *term = img + 17 * ISO_SECTOR, *root = img + ROOT * ISO_SECTOR;
	u8 dot = 0, dotdot = 1;

	memset(img, 0, sizeof img);
	pvd[0] = 1;
	memcpy(pvd + 1, "CD001", 5);
	pvd[6] = 1;
	memset(pvd + 40, ' ', 32);
	memcpy(pvd + 40, "cidata", 6);
	le32_both(pvd + 80, NSEC);
	pvd[128] = 0x00, pvd[129] = 0x08, pvd[130] = 0x08, pvd[131] = 0x00;	/* 2048, both-endian */
	record(pvd + 156, (const char *)&dot, 1, ROOT, ISO_SECTOR, 2, NULL, 0);
	term[0] = 255;
	memcpy(term + 1, "CD001", 5);
	root_off = record(root, (const char *)&dot, 1, ROOT, ISO_SECTOR, 2, rr ? SP : NULL, rr ? sizeof SP : 0);
	root_off += record(root + root_off, (const char *)&dotdot, 1, ROOT, ISO_SECTOR, 2, NULL, 0);
	built.reads = 0;
	built.fail_at = -1;
}

/* Adds a record to the root; returns its offset in img. */
static size_t add(const char *name, u32 lba, u32 len, u8 flags, const u8 *su, size_t sulen)
{
	size_t at = ROOT * ISO_SECTOR + root_off;

	root_off += record(img + at, name, strlen(name), lba, len, flags, su, sulen);
	return at;
}

static int lookup(const char *path, struct iso_file *f)
{
	struct iso_vol v = vol_of(&built);
	int err = iso_mount(&v);

	return err ? err : iso_lookup(&v, path, f);
}

static void test_built_volume_reads(void **state)
{
	struct iso_vol v = vol_of(&built);
	struct iso_file f;
	u8 su[64];
	u8 out[16];

	build(true);
	add("USER_DAT.;1", 30, 6, 0, su, nm(su, "user-data", 0));
	memcpy(img + 30 * ISO_SECTOR, "http=1", 6);
	assert_int_equal(iso_mount(&v), 0);
	assert_int_equal(v.names, ISO_NAMES_ROCK_RIDGE);
	assert_int_equal(iso_lookup(&v, "user-data", &f), 0);
	assert_int_equal(iso_read(&v, &f, out, sizeof out), 6);
	assert_memory_equal(out, "http=1", 6);
	/* Without SP on ".", NM entries mean nothing: the plain name counts. */
	build(false);
	add("USER_DAT.;1", 30, 6, 0, su, nm(su, "user-data", 0));
	assert_int_equal(lookup("user-data", &f), -ENOENT);
	assert_int_equal(lookup("user_dat", &f), 0);
}

static void test_hostile_volume_descriptors(void **state)
{
	struct iso_vol v = vol_of(&built);
	struct iso_file f;

	build(true);
	img[16 * ISO_SECTOR + 1] = 'X';	/* not CD001: not ISO 9660 */
	assert_int_equal(iso_mount(&v), -EINVAL);
	build(true);
	img[16 * ISO_SECTOR + 129] = 0x02;	/* 512-byte blocks */
	assert_int_equal(iso_mount(&v), -EINVAL);
	build(true);
	le32_both(img + 16 * ISO_SECTOR + 80, ROOT);	/* the volume ends before its root */
	assert_int_equal(iso_mount(&v), -EBADMSG);
	build(true);
	img[16 * ISO_SECTOR + 156] = 40;	/* the root record's length */
	assert_int_equal(iso_mount(&v), -EBADMSG);
	build(true);
	memcpy(img + 17 * ISO_SECTOR + 1, "CD002", 5);	/* a damaged descriptor after the primary */
	assert_int_equal(iso_mount(&v), -EBADMSG);
	/* No terminator anywhere: ISO_MAX_VDS sectors are read, then it mounts. */
	build(true);
	for (int i = 0; i < 30; i++) {
		img[(17 + i) * ISO_SECTOR] = 0;		/* boot records */
		memcpy(img + (17 + i) * ISO_SECTOR + 1, "CD001", 5);
	}
	built.reads = 0;
	assert_int_equal(iso_mount(&v), 0);
	assert_int_equal(built.reads, ISO_MAX_VDS + 1);	/* and the root, for SP */
	/* A Joliet tree outside the volume is not used. */
	build(false);
	img[17 * ISO_SECTOR] = 2;
	memcpy(img + 17 * ISO_SECTOR + 88, "%/E", 3);
	record(img + 17 * ISO_SECTOR + 156, "\0", 1, NSEC + 5, ISO_SECTOR, 2, NULL, 0);
	img[18 * ISO_SECTOR] = 255;
	memcpy(img + 18 * ISO_SECTOR + 1, "CD001", 5);
	assert_int_equal(iso_mount(&v), 0);
	assert_int_equal(v.names, ISO_NAMES_PLAIN);
	(void)f;
}

static void test_hostile_records(void **state)
{
	struct iso_file f;
	size_t at;
	u8 su[600];
	size_t n;

	/* A zero length byte ends the sector's records: what follows is unseen. */
	build(true);
	at = add("A.;1", 30, 1, 0, NULL, 0);
	img[at] = 0;
	assert_int_equal(lookup("a", &f), -ENOENT);
	/* shorter than the fixed part */
	build(true);
	at = add("A.;1", 30, 1, 0, NULL, 0);
	img[at] = 20;
	assert_int_equal(lookup("a", &f), -EBADMSG);
	/* a name longer than its record */
	build(true);
	at = add("A.;1", 30, 1, 0, NULL, 0);
	img[at + 32] = 200;
	assert_int_equal(lookup("a", &f), -EBADMSG);
	/* a record running past the directory's length */
	build(true);
	le32_both(img + 16 * ISO_SECTOR + 156 + 10, (u32)root_off + 10);
	le32_both(img + ROOT * ISO_SECTOR + 10, (u32)root_off + 10);
	add("A.;1", 30, 1, 0, NULL, 0);
	assert_int_equal(lookup("a", &f), -EBADMSG);
	/* an extent outside the volume, or wrapping */
	build(true);
	add("A.;1", NSEC, 1, 0, NULL, 0);
	assert_int_equal(lookup("a", &f), -EBADMSG);
	build(true);
	add("A.;1", 0xffffffff, 0xffffffff, 0, NULL, 0);
	assert_int_equal(lookup("a", &f), -EBADMSG);
	/* multi-extent and interleaved files are refused */
	build(true);
	add("A.;1", 30, 1, 0x80, NULL, 0);
	assert_int_equal(lookup("a", &f), -ENOTSUP);
	build(true);
	at = add("A.;1", 30, 1, 0, NULL, 0);
	img[at + 26] = 1;
	assert_int_equal(lookup("a", &f), -ENOTSUP);
	/* Rock Ridge: a SUSP entry of length 0, or past the record, ends the
	 * walk (the plain name stands); CONTINUE chains stop at ISO_NAME_MAX. */
	build(true);
	n = nm(su, "user-data", 0);
	su[2] = 0;
	add("A.;1", 30, 1, 0, su, n);
	assert_int_equal(lookup("user-data", &f), -ENOENT);
	assert_int_equal(lookup("a", &f), 0);
	build(true);
	n = nm(su, "user-data", 0);
	su[2] = 200;
	add("A.;1", 30, 1, 0, su, n);
	assert_int_equal(lookup("a", &f), 0);
	build(true);
	n = 0;
	for (int i = 0; i < 14; i++)
		n += nm(su + n, "abcdefgh", 1);	/* 112 characters, each "continued" (a 220-byte record) */
	add("B.;1", 30, 1, 0, su, n);
	assert_int_equal(lookup("abcdefghabcdefgh", &f), -ENOENT);
	assert_int_equal(lookup("b", &f), -ENOENT);	/* an NM was there, too long to be ours */
	/* NM with a NUL or a byte over 0x7e names nothing we look for */
	build(true);
	n = nm(su, "us\xffr", 0);
	add("C.;1", 30, 1, 0, su, n);
	assert_int_equal(lookup("c", &f), -ENOENT);
}

static void test_bounds(void **state)
{
	struct iso_file f;
	u8 su[64];

	/* a directory over ISO_MAX_DIR_BYTES */
	build(true);
	add("D", 30, ISO_MAX_DIR_BYTES + 1, 2, su, nm(su, "d", 0));
	assert_int_equal(lookup("d/x", &f), -EOVERFLOW);
	/* a directory that contains itself: the path's depth bounds the walk */
	build(true);
	add("D", ROOT, ISO_SECTOR, 2, su, nm(su, "d", 0));
	assert_int_equal(lookup("d/d/d/x", &f), -ENOENT);
	built.reads = 0;
	assert_int_equal(lookup("d/d/d/d/d/d/d/d", &f), -EOVERFLOW);
	assert_true(built.reads <= 3 + ISO_MAX_DEPTH);
	/* a file named as a directory */
	build(true);
	add("F.;1", 30, 4, 0, su, nm(su, "f", 0));
	assert_int_equal(lookup("f/x", &f), -ENOENT);
	/* a name longer than ISO_NAME_MAX never matches (and is not copied) */
	{
		char path[ISO_NAME_MAX + 2];

		memset(path, 'a', sizeof path - 1);
		path[sizeof path - 1] = '\0';
		assert_int_equal(lookup(path, &f), -ENOENT);
	}
	/* the whole of a largest directory is read once: its sectors, no more */
	build(true);
	le32_both(img + ROOT * ISO_SECTOR + 10, ISO_MAX_DIR_BYTES);
	le32_both(img + 16 * ISO_SECTOR + 156 + 10, ISO_MAX_DIR_BYTES);
	built.reads = 0;
	assert_int_equal(lookup("zzz", &f), -ENOENT);
	assert_int_equal(built.reads, 2 + 1 + ISO_MAX_DIR_BYTES / ISO_SECTOR);
}

static void test_joliet_names(void **state)
{
	struct iso_vol v = vol_of(&built);
	struct iso_file f;
	u8 *jroot = img + 22 * ISO_SECTOR;
	static const char ud[] = "\0u\0s\0e\0r\0-\0d\0a\0t\0a\0;\0001";
	static const char odd[] = "\0a\0";
	static const char wide[] = "\x04\x10\0b";
	u8 dot = 0;
	size_t off;

	build(false);
	img[17 * ISO_SECTOR] = 2;
	memcpy(img + 17 * ISO_SECTOR + 1, "CD001", 5);
	memcpy(img + 17 * ISO_SECTOR + 88, "%/@", 3);
	record(img + 17 * ISO_SECTOR + 156, (const char *)&dot, 1, 22, ISO_SECTOR, 2, NULL, 0);
	img[18 * ISO_SECTOR] = 255;
	memcpy(img + 18 * ISO_SECTOR + 1, "CD001", 5);
	off = record(jroot, (const char *)&dot, 1, 22, ISO_SECTOR, 2, NULL, 0);
	off += record(jroot + off, ud, sizeof ud - 1, 30, 3, 0, NULL, 0);
	off += record(jroot + off, odd, sizeof odd - 1, 30, 3, 0, NULL, 0);	/* odd length */
	off += record(jroot + off, wide, sizeof wide - 1, 30, 3, 0, NULL, 0);	/* not ASCII */
	assert_int_equal(iso_mount(&v), 0);
	assert_int_equal(v.names, ISO_NAMES_JOLIET);
	assert_int_equal(v.root_lba, 22);
	assert_int_equal(iso_lookup(&v, "user-data", &f), 0);
	assert_int_equal(f.lba, 30);
	assert_int_equal(iso_lookup(&v, "a", &f), -ENOENT);
	assert_int_equal(iso_lookup(&v, "b", &f), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cloud_localds),
		cmocka_unit_test(test_nova_config_drive),
		cmocka_unit_test(test_rock_ridge_only),
		cmocka_unit_test(test_joliet_only),
		cmocka_unit_test(test_xorriso),
		cmocka_unit_test(test_plain_names_as_linux_shows_them),
		cmocka_unit_test(test_read_errors_propagate),
		cmocka_unit_test(test_built_volume_reads),
		cmocka_unit_test(test_hostile_volume_descriptors),
		cmocka_unit_test(test_hostile_records),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_joliet_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
