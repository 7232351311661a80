/* Host tests for drivers/acpi/aml_s5.c (\_S5 and the GED). Every table is handed over as an
 * exact-size heap copy, so a read one byte past the end is an ASan error. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arch.h>
#include "drivers/acpi/aml_s5.h"

/* A growable AML byte buffer with the encoders the tests need. */
struct aml {
	u8 b[1u << 21];
	u32 n;
};
static struct aml *A;

static void put(const void *p, u32 n)
{
	if (!n)
		return;
	assert_true(A->n + n <= sizeof A->b);
	memcpy(A->b + A->n, p, n);
	A->n += n;
}

static void put1(u8 v)
{
	put(&v, 1);
}

/* PkgLength for a body of body_len bytes, in the shortest encoding. */
static void put_pkglen(u32 body_len)
{
	u32 total;

	if (body_len + 1 <= 0x3f) {
		put1((u8)(body_len + 1));
		return;
	}
	if (body_len + 2 <= 0xfff) {
		total = body_len + 2;
		put1((u8)(0x40 | (total & 0xf)));
		put1((u8)(total >> 4));
		return;
	}
	if (body_len + 3 <= 0xfffff) {
		total = body_len + 3;
		put1((u8)(0x80 | (total & 0xf)));
		put1((u8)(total >> 4));
		put1((u8)(total >> 12));
		return;
	}
	total = body_len + 4;
	put1((u8)(0xc0 | (total & 0xf)));
	put1((u8)(total >> 4));
	put1((u8)(total >> 12));
	put1((u8)(total >> 20));
}

/* Name(_S5_, Package () { elems }) where elems are already-encoded bytes. */
static void put_s5(bool root, const u8 *elems, u32 elen, u8 count)
{
	put1(0x08);
	if (root)
		put1('\\');
	put("_S5_", 4);
	put1(0x12);
	put_pkglen(elen + 1);
	put1(count);
	put(elems, elen);
}

static int scan(struct aml_s5 *out)
{
	u8 *copy = malloc(A->n ? A->n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, A->b, A->n);
	r = aml_find_s5(copy, A->n, out);
	free(copy);
	return r;
}

static int setup(void **state)
{
	(void)state;
	A = calloc(1, sizeof *A);
	return A ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(A);
	return 0;
}

/* QEMU's q35 and pc DSDTs (hw/i386/acpi-build.c): Scope (\) { Name (_S3_,
 * Package (4) {One, One, Zero, Zero}) ... Name (_S5_, Package (4) {Zero,
 * Zero, Zero, Zero}) } after the device tree, all as ZeroOp/OneOp. */
static void qemu_shape(u8 s5a)
{
	static const u8 s3[] = { 0x01, 0x01, 0x00, 0x00 };
	u8 s5[] = { 0x00, 0x00, 0x00, 0x00 };
	u8 scope[64];
	u32 i;

	s5[0] = s5a;
	/* Something earlier that mentions _S5_ without declaring it, and noise
	 * that looks like names. */
	put("\x10\x0d\\_SB_\x5b\x82\x05PCI0", 13);
	put("\xa4_S5_", 5);			/* Return (_S5_) */
	put("\x14\x09_S5X\x00\xa4\x00", 9);	/* Method (_S5X) { Return (Zero) } */
	for (i = 0; i < sizeof scope; i++)
		scope[i] = (u8)(0x20 + i);
	put(scope, sizeof scope);
	put1(0x10);				/* Scope (\) */
	put_pkglen(2 + 2 * (1 + 4 + 1 + 1 + 1 + 4));
	put("\\\x00", 2);
	put1(0x08);
	put("_S3_", 4);
	put1(0x12);
	put_pkglen(1 + sizeof s3);
	put1(4);
	put(s3, sizeof s3);
	put_s5(false, s5, sizeof s5, 4);
}

static void test_qemu_q35_shape(void **state)
{
	struct aml_s5 s = { 9, 9 };

	(void)state;
	qemu_shape(0x00);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 0);
	assert_int_equal(s.slp_typb, 0);
}

static void test_qemu_shape_one(void **state)
{
	struct aml_s5 s;

	(void)state;
	qemu_shape(0x01);	/* OneOp */
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 1);
	assert_int_equal(s.slp_typb, 0);
}

/* Typical firmware: Name (\_S5, Package (0x04) { 0x07, 0x07, 0, 0 }). */
static void test_root_prefix_byte_consts(void **state)
{
	static const u8 e[] = { 0x0a, 0x07, 0x0a, 0x05, 0x00, 0x00 };
	struct aml_s5 s;

	(void)state;
	put_s5(true, e, sizeof e, 4);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 7);
	assert_int_equal(s.slp_typb, 5);
}

static void test_wide_consts(void **state)
{
	static const u8 e[] = { 0x0b, 0x03, 0x00, 0x0c, 0x06, 0, 0, 0, 0x0e, 2, 0, 0, 0, 0, 0, 0, 0 };
	struct aml_s5 s;

	(void)state;
	put_s5(false, e, sizeof e, 3);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 3);
	assert_int_equal(s.slp_typb, 6);
}

/* ACPI 1.0 single-integer form: SLP_TYPa in byte 0, SLP_TYPb in byte 1. */
static void test_single_packed(void **state)
{
	static const u8 e[] = { 0x0b, 0x05, 0x06 };
	struct aml_s5 s;

	(void)state;
	put_s5(false, e, sizeof e, 1);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 5);
	assert_int_equal(s.slp_typb, 6);
}

static void test_not_declared(void **state)
{
	struct aml_s5 s;

	(void)state;
	/* Return (_S5_), Method (_S5_) { Return (Zero) } */
	put("\xa4_S5_\x14\x0a_S5_\x00\xa4\x00\x00\x00", 16);
	assert_int_equal(scan(&s), -ENOENT);
	A->n = 0;
	assert_int_equal(scan(&s), -ENOENT);
	put("_S5_", 4);		/* at offset 0: nothing before it */
	assert_int_equal(scan(&s), -ENOENT);
}

static void test_bad_values(void **state)
{
	static const u8 big[] = { 0x0a, 0x08, 0x00 };
	static const u8 ones[] = { 0xff, 0x00 };
	static const u8 name[] = { 'A', 'B', 'C', 'D', 0x00 };
	static const u8 packed_big[] = { 0x0b, 0x00, 0x09 };
	struct aml_s5 s = { 0x55, 0x55 };

	(void)state;
	put_s5(false, big, sizeof big, 2);
	assert_int_equal(scan(&s), -EBADMSG);
	A->n = 0;
	put_s5(false, ones, sizeof ones, 2);
	assert_int_equal(scan(&s), -EBADMSG);
	A->n = 0;
	put_s5(false, name, sizeof name, 2);
	assert_int_equal(scan(&s), -EBADMSG);
	A->n = 0;
	put_s5(false, packed_big, sizeof packed_big, 1);
	assert_int_equal(scan(&s), -EBADMSG);
	A->n = 0;
	put_s5(false, NULL, 0, 0);	/* empty package */
	assert_int_equal(scan(&s), -EBADMSG);
	assert_int_equal(s.slp_typa, 0x55);	/* untouched on failure */
}

/* Every prefix of a good table: only the whole one succeeds, nothing reads
 * past the end. */
static void test_truncated(void **state)
{
	static const u8 e[] = { 0x0a, 0x05, 0x0c, 0x06, 0, 0, 0 };
	struct aml_s5 s;
	u32 full, n;

	(void)state;
	put("\x10\x05\\\x00\x01\x02", 6);
	put_s5(true, e, sizeof e, 2);
	full = A->n;
	for (n = 0; n < full; n++) {
		A->n = n;
		assert_int_not_equal(scan(&s), 0);
	}
	A->n = full;
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 5);
	assert_int_equal(s.slp_typb, 6);
}

/* PkgLength that claims more than the table holds, or less than the
 * elements need, in every encoding width. */
static void test_lying_lengths(void **state)
{
	static const u8 over1[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x3f, 0x02, 0x00, 0x00 };
	static const u8 over4[] = { 0x08, '_', 'S', '5', '_', 0x12, 0xcf, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00 };
	static const u8 under[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x02, 0x02, 0x0a, 0x03, 0x0a, 0x03 };
	static const u8 zero[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x00, 0x02, 0x00, 0x00 };
	static const u8 rsvd[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x70, 0x00, 0x02, 0x00, 0x00 };
	static const u8 cut_prefix[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x05, 0x02, 0x0c, 0x01, 0x00 };
	const u8 *cases[] = { over1, over4, under, zero, rsvd, cut_prefix };
	const u32 lens[] = { sizeof over1, sizeof over4, sizeof under, sizeof zero, sizeof rsvd,
			     sizeof cut_prefix };
	struct aml_s5 s;
	u32 i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		A->n = 0;
		put(cases[i], lens[i]);
		assert_int_equal(scan(&s), -EBADMSG);
	}
}

/* A broken candidate does not hide a good one after it. */
static void test_bad_then_good(void **state)
{
	static const u8 bad[] = { 0x0a, 0x09, 0x00 };
	static const u8 good[] = { 0x0a, 0x02, 0x0a, 0x03 };
	struct aml_s5 s;

	(void)state;
	put_s5(false, bad, sizeof bad, 2);
	put_s5(true, good, sizeof good, 2);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 2);
	assert_int_equal(s.slp_typb, 3);
}

/* 20000 nested Device () scopes with _S5_ innermost, their lengths right
 * or all lying: found either way, in one pass, without recursion. */
static void nest(u32 depth, bool lie)
{
	static const u8 e[] = { 0x0a, 0x04, 0x0a, 0x04 };
	u32 inner = 1 + 1 + 4 + 1 + 1 + 1 + sizeof e, i, body;

	for (i = 0; i < depth; i++) {
		body = inner + 4 + (depth - 1 - i) * (2 + 4 + 4);
		put("\x5b\x82", 2);		/* DeviceOp */
		if (lie) {
			put("\xcf\xff\xff\xff", 4);
		} else {
			u32 t = body + 4;

			put1((u8)(0xc0 | (t & 0xf)));
			put1((u8)(t >> 4));
			put1((u8)(t >> 12));
			put1((u8)(t >> 20));
		}
		put("DEV_", 4);
	}
	put_s5(false, e, sizeof e, 2);
}

static void test_deep_nesting(void **state)
{
	struct aml_s5 s;

	(void)state;
	nest(20000, false);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typa, 4);
	A->n = 0;
	nest(20000, true);
	assert_int_equal(scan(&s), 0);
	assert_int_equal(s.slp_typb, 4);
}

/* The worst case the bound allows: a maximal table that is nothing but
 * broken candidates is rejected; one byte more is refused outright. */
static void test_size_bound(void **state)
{
	static const u8 cand[] = { 0x08, '_', 'S', '5', '_', 0x12, 0x3f, 0x02 };
	struct aml_s5 s;

	(void)state;
	while (A->n + sizeof cand <= AML_S5_MAX_LEN)
		put(cand, sizeof cand);
	while (A->n < AML_S5_MAX_LEN)
		put1(0x08);
	assert_int_equal(scan(&s), -EBADMSG);
	put1(0x00);
	assert_int_equal(scan(&s), -E2BIG);
	assert_int_equal(aml_find_s5(NULL, 0, &s), -EINVAL);
	assert_int_equal(aml_find_s5(A->b, 0, NULL), -EINVAL);
}

/* ---- the Generic Event Device (aml_find_ged) ---- */

static int scan_ged(struct aml_ged *out)
{
	u8 *copy = malloc(A->n ? A->n : 1);
	int r;

	assert_non_null(copy);
	memcpy(copy, A->b, A->n);
	r = aml_find_ged(copy, A->n, out);
	free(copy);
	return r;
}

/* QEMU microvm's GED (hw/acpi/generic_event_device.c): Device (GED) {
 * Name (_HID, "ACPI0013"), Name (_UID, "GED"), Name (_CRS, ResourceTemplate
 * () { Interrupt (ResourceConsumer, Edge, ActiveHigh, Exclusive) {irq} }),
 * OperationRegion (EREG, SystemMemory, base, 4), Field ..., Method (_EVT) }.
 * flags is the interrupt descriptor's flag byte, space the region's. */
static void ged_shape(u8 flags, u32 irq, u8 space, const u8 *off, u32 off_len, const u8 *len, u32 len_len)
{
	u8 crs[] = { 0x89, 0x06, 0x00, flags, 0x01, (u8)irq, (u8)(irq >> 8), (u8)(irq >> 16), (u8)(irq >> 24),
		     0x79, 0x00 };

	put("\x5b\x82\x4f\x04GED_", 8);			/* Device (GED), some PkgLength */
	put("\x08_HID\x0d" "ACPI0013\x00", 15);
	put("\x08_UID\x0dGED\x00", 10);
	put("\x08_CRS\x11\x0e\x0a\x0b", 9);		/* Name (_CRS, Buffer (11) { */
	put(crs, sizeof crs);
	put("\x5b\x80" "EREG", 6);
	put1(space);
	put(off, off_len);
	put(len, len_len);
	put("\x5b\x81\x0b" "EREG\x03" "ESEL\x20", 13);	/* Field (EREG, DWordAcc, ...) { ESEL, 32 } */
	put("\x14\x0a_EVT\x09\xa4\x00", 8);		/* Method (_EVT, 1) { ... } */
}

static const u8 off_fea[] = { 0x0c, 0x00, 0x00, 0xa0, 0xfe };
static const u8 len_4[] = { 0x0a, 0x04 };

static void test_ged_qemu_microvm(void **state)
{
	struct aml_ged g;

	(void)state;
	put("\x5b\x82\x10" "COM1\x08_HID\x0c\x41\xd0\x05\x01", 16);	/* another device first */
	ged_shape(0x03, 9, 0x00, off_fea, sizeof off_fea, len_4, sizeof len_4);
	put("\x5b\x82\x0a" "PWRB\x08_HID\x0d" "PNP0C0C\x00", 21);
	assert_int_equal(scan_ged(&g), 0);
	assert_int_equal(g.gsi, 9);
	assert_true(g.edge);
	assert_false(g.active_low);
	assert_int_equal(g.evt_addr, 0xfea00000);
	assert_int_equal(g.evt_len, 4);
}

static void test_ged_flags_and_wide_offset(void **state)
{
	static const u8 q[] = { 0x0e, 0x00, 0x10, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00 };	/* 0x1000_0000_1000 */
	static const u8 w[] = { 0x0b, 0x00, 0x01 };						/* 256 */
	struct aml_ged g;

	(void)state;
	ged_shape(0x05, 40, 0x00, q, sizeof q, w, sizeof w);	/* level, active low */
	assert_int_equal(scan_ged(&g), 0);
	assert_int_equal(g.gsi, 40);
	assert_false(g.edge);
	assert_true(g.active_low);
	assert_int_equal(g.evt_addr, 0x100000001000ULL);
	assert_int_equal(g.evt_len, 256);
}

static void test_ged_refused(void **state)
{
	static const u8 off_odd[] = { 0x0c, 0x02, 0x00, 0xa0, 0xfe };
	static const u8 off_high[] = { 0x0e, 0, 0, 0, 0, 0, 0x80, 0, 0 };	/* 2^47 */
	static const u8 len_2[] = { 0x0a, 0x02 };
	static const u8 len_big[] = { 0x0b, 0x01, 0x10 };			/* 4097 */
	static const u8 len_name[] = { 'L', 'E', 'N', '_' };			/* not a constant */
	struct aml_ged g;

	(void)state;
	assert_int_equal(scan_ged(&g), -ENOENT);
	put("\x08_HID\x0d" "ACPI0012\x00", 15);
	assert_int_equal(scan_ged(&g), -ENOENT);
	/* Each broken in one way: SystemIO region, interrupt 0 and 256, a
	 * 2-byte and a 4097-byte region, a misaligned one, one at 2^47, a
	 * length that is a name. */
	ged_shape(0x03, 9, 0x01, off_fea, sizeof off_fea, len_4, sizeof len_4);
	assert_int_equal(scan_ged(&g), -EBADMSG);
	A->n = 0;
	ged_shape(0x03, 0, 0x00, off_fea, sizeof off_fea, len_4, sizeof len_4);
	ged_shape(0x03, 256, 0x00, off_fea, sizeof off_fea, len_4, sizeof len_4);
	ged_shape(0x03, 9, 0x00, off_fea, sizeof off_fea, len_2, sizeof len_2);
	ged_shape(0x03, 9, 0x00, off_fea, sizeof off_fea, len_big, sizeof len_big);
	ged_shape(0x03, 9, 0x00, off_odd, sizeof off_odd, len_4, sizeof len_4);
	ged_shape(0x03, 9, 0x00, off_high, sizeof off_high, len_4, sizeof len_4);
	ged_shape(0x03, 9, 0x00, off_fea, sizeof off_fea, len_name, sizeof len_name);
	assert_int_equal(scan_ged(&g), -EBADMSG);
	/* ... and then a good one: it wins. */
	ged_shape(0x03, 7, 0x00, off_fea, sizeof off_fea, len_4, sizeof len_4);
	assert_int_equal(scan_ged(&g), 0);
	assert_int_equal(g.gsi, 7);
	assert_int_equal(aml_find_ged(NULL, 0, &g), -EINVAL);
	assert_int_equal(aml_find_ged(A->b, 0, NULL), -EINVAL);
}

/* Cut at every length: never a read past the end (ASan), and success only
 * once both the interrupt and the region are whole. */
static void test_ged_truncated(void **state)
{
	struct aml_ged g;
	u32 full, n, need = 0;

	(void)state;
	ged_shape(0x03, 9, 0x00, off_fea, sizeof off_fea, len_4, sizeof len_4);
	full = A->n;
	for (n = 0; n <= full; n++) {
		int r;

		A->n = n;
		r = scan_ged(&g);
		assert_true(r == 0 || r == -ENOENT || r == -EBADMSG);
		if (r == 0 && !need)
			need = n;
	}
	/* Device (8) + _HID (15) + _UID (10) + _CRS head (9) + descriptor (9)
	 * and end tag (2) + OperationRegion (6 + 1 + 5 + 2). */
	assert_int_equal(need, 8 + 15 + 10 + 9 + 11 + 14);
}

/* The scan stops AML_GED_SPAN bytes after the _HID. */
static void test_ged_span(void **state)
{
	struct aml_ged g;
	u32 i;

	(void)state;
	put("\x08_HID\x0d" "ACPI0013\x00", 15);
	for (i = 0; i < AML_GED_SPAN; i++)
		put1(0xa3);	/* Noop */
	put("\x11\x0e\x0a\x0b\x89\x06\x00\x03\x01\x09\x00\x00\x00\x79\x00", 15);
	put("\x5b\x80" "EREG\x00\x0c\x00\x00\xa0\xfe\x0a\x04", 14);
	assert_int_equal(scan_ged(&g), -EBADMSG);
}

/* A Device's _HID string and a _CRS with Memory32Fixed (base, size) and
 * an Extended Interrupt (gsi), as QEMU microvm writes its virtio-mmio ones. */
static void put_crs_dev(const char hid[8], u32 base, u32 size, u32 gsi)
{
	put("\x08_HID\x0d", 6);
	put(hid, 8);
	put1(0);
	put("\x08_CRS\x11\x1a\x0a\x17", 9);
	put("\x86\x09\x00\x01", 4);
	put(&base, 4);
	put(&size, 4);
	put("\x89\x06\x00\x0b\x01", 5);
	put(&gsi, 4);
	put("\x79\x00", 2);
}

/* The platform devices ACPI publishes: every _HID string with its window
 * and interrupt, whatever the device; past max, counted and not stored. */
static void test_devices(void **state)
{
	struct aml_dev d[3];

	(void)state;
	put_crs_dev("LNRO0005", 0xfeb00e00, 0x200, 47);
	put("\x08_HID\x0d" "QEMU0002\x00", 15);	/* no resources */
	put_crs_dev("LNRO0005", 0xfeb00c00, 0x200, 46);
	put_crs_dev("ABCD0001", 0x1000, 0x100, 5);
	memset(d, 0x5a, sizeof d);
	assert_int_equal(aml_find_devices(A->b, A->n, d, 3), 4);
	assert_string_equal(d[0].hid, "LNRO0005");
	assert_true(d[0].mem && d[0].irq);
	assert_int_equal(d[0].base, 0xfeb00e00);
	assert_int_equal(d[0].size, 0x200);
	assert_int_equal(d[0].gsi, 47);
	assert_string_equal(d[1].hid, "QEMU0002");
	assert_false(d[1].mem || d[1].irq);	/* the next _HID ends its span */
	assert_string_equal(d[2].hid, "LNRO0005");
	assert_int_equal(d[2].gsi, 46);
	/* Cut short anywhere: never a read past len, never more than max. */
	for (u32 k = 0; k < A->n; k++)
		assert_true(aml_find_devices(A->b, k, d, 3) <= 4);
	assert_int_equal(aml_find_devices(A->b, A->n, d, 0), 4);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_qemu_q35_shape),
		T(test_qemu_shape_one),
		T(test_root_prefix_byte_consts),
		T(test_wide_consts),
		T(test_single_packed),
		T(test_not_declared),
		T(test_bad_values),
		T(test_truncated),
		T(test_lying_lengths),
		T(test_bad_then_good),
		T(test_deep_nesting),
		T(test_size_bound),
		T(test_ged_qemu_microvm),
		T(test_ged_flags_and_wide_offset),
		T(test_ged_refused),
		T(test_ged_truncated),
		T(test_ged_span),
		T(test_devices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
