/* drivers/virtio/virtio_mmio_parse.c: virtio_mmio.device= windows and the checks on
 * a window's identifying registers and queue sizes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/virtio_mmio_parse.h"
#include "drivers/virtio/virtio_mmio_reg.h"

/* The DSDT's devices as ACPI publishes them (aml_find_devices), then the
 * transport's checks of the virtio-mmio ones (vmmio_add_platform). */
static int aml_scan(const u8 *aml, u32 len, struct vmmio_list *l, char *why, size_t why_len)
{
	static struct aml_dev devs[64];
	u32 n = aml_find_devices(aml, len, devs, 64);

	return vmmio_add_platform(devs, n < 64 ? n : 64, l, why, why_len);
}

static char why[64];

static int parse(const char *s, struct vmmio_window *w)
{
	why[0] = '\0';
	return vmmio_parse(s, w, why, sizeof why);
}

static void test_forms(void **state)
{
	struct vmmio_window w;

	/* What QEMU microvm appends. */
	assert_int_equal(parse("512@0xfeb00e00:12", &w), 0);
	assert_int_equal(w.base, 0xfeb00e00);
	assert_int_equal(w.size, 512);
	assert_int_equal(w.gsi, 12);
	assert_false(w.has_id);
	/* Firecracker's, with a suffix and an id. */
	assert_int_equal(parse("4K@0xd0000000:5:2", &w), 0);
	assert_int_equal(w.size, 4096);
	assert_int_equal(w.base, 0xd0000000);
	assert_int_equal(w.gsi, 5);
	assert_true(w.has_id);
	assert_int_equal(w.id, 2);
	assert_int_equal(parse("0x200@4272950784:23", &w), 0);
	assert_int_equal(w.base, 4272950784ULL);
	assert_int_equal(parse("64k@0xfeb00000:255", &w), 0);
	assert_int_equal(w.size, 0x10000);
}

static void test_bad_values(void **state)
{
	static const char *const bad[] = {
		"", "512", "512@", "512@0xfeb00000", "512@0xfeb00000:", "@0xfeb00000:5", "512@0xfeb00000:5:",
		"512@0xfeb00000:5:x", "512@0xfeb00000:5x", "512 @0xfeb00000:5", "0x@0x1000:5",
		"255@0xfeb00000:5",		/* smaller than the registers */
		"65537@0xfeb00000:5", "1M@0xfeb00000:5", "99999999999999999999@0x1000:5",
		"16777216G@0x1000:5",		/* the suffix overflows */
		"512@0xfeb00002:5",		/* misaligned */
		"512@0xfffffffffffffe00:5",	/* wraps */
		"512@0x800000000000:5",		/* above 2^47 */
		"512@0xfeb00000:0", "512@0xfeb00000:256", "512@0xfeb00000:4294967301",
		"512@0xfeb00000:5:4294967296", "512@0xfeb00000:5:1:2",
		"512@0xfeb00000:0x", "-512@0xfeb00000:5",
	};
	struct vmmio_window w;
	size_t i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(parse(bad[i], &w), -EINVAL);
		assert_true(why[0] != '\0');
		assert_true(strlen(why) < sizeof why);
	}
}

static void test_list_overlaps_and_bound(void **state)
{
	static struct vmmio_list l;
	char v[64];
	u32 i;

	memset(&l, 0, sizeof l);
	assert_int_equal(vmmio_cmdline_add("512@0xfeb00000:16", &l, why, sizeof why), 0);
	assert_int_equal(vmmio_cmdline_add("512@0xfeb00200:17", &l, why, sizeof why), 0);	/* adjacent */
	assert_int_equal(vmmio_cmdline_add("512@0xfeb00000:18", &l, why, sizeof why), -EINVAL);	/* the same */
	assert_non_null(strstr(why, "overlaps"));
	assert_int_equal(vmmio_cmdline_add("4K@0xfeaff000:18", &l, why, sizeof why), 0);	/* ends where the first starts */
	assert_int_equal(vmmio_cmdline_add("0x300@0xfeb00100:18", &l, why, sizeof why), -EINVAL);	/* straddles */
	assert_int_equal(vmmio_cmdline_add("0x100@0xfeb003fc:18", &l, why, sizeof why), -EINVAL);	/* last 4 bytes */
	assert_int_equal(vmmio_cmdline_add("garbage", &l, why, sizeof why), -EINVAL);
	assert_int_equal(vmmio_cmdline_add("512@0xd0000000:17", &l, why, sizeof why), -EINVAL);	/* irq taken */
	assert_non_null(strstr(why, "irq"));
	assert_int_equal(l.n, 3);
	assert_int_equal(l.refused, 5);
	for (i = l.n; i < VMMIO_MAX_DEVICES; i++) {
		snprintf(v, sizeof v, "512@0x%x:%u", 0xd0000000u + i * 0x1000, 100 + i);
		assert_int_equal(vmmio_cmdline_add(v, &l, why, sizeof why), 0);
	}
	assert_int_equal(vmmio_cmdline_add("512@0xc0000000:5", &l, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "32"));
	assert_int_equal(vmmio_cmdline_add("512@0xc0000000:200", &l, why, sizeof why), -EINVAL);
	assert_non_null(strstr(why, "32"));
	assert_int_equal(l.n, VMMIO_MAX_DEVICES);
}

static void test_tiny_why(void **state)
{
	struct vmmio_window w;
	char small[4] = "xyz";

	assert_int_equal(vmmio_parse("nope", &w, small, sizeof small), -EINVAL);
	assert_int_equal(strlen(small), 3);
	assert_int_equal(vmmio_parse("nope", &w, small, 0), -EINVAL);
}

static void test_ids(void **state)
{
	const char *w;

	assert_int_equal(vmmio_check_ids(VMMIO_MAGIC_VALUE, 2, 1, &w), 2);
	assert_null(w);
	assert_int_equal(vmmio_check_ids(VMMIO_MAGIC_VALUE, 1, 4, &w), 1);
	assert_int_equal(vmmio_check_ids(VMMIO_MAGIC_VALUE, 2, 0, &w), 0);	/* empty slot */
	assert_int_equal(vmmio_check_ids(0x76726974, 2, 1, &w), -ENODEV);	/* byte-swapped */
	assert_non_null(strstr(w, "magic"));
	assert_int_equal(vmmio_check_ids(0xffffffff, 0xffffffff, 0xffffffff, &w), -ENODEV);	/* nothing there */
	assert_int_equal(vmmio_check_ids(VMMIO_MAGIC_VALUE, 0, 1, &w), -ENODEV);
	assert_int_equal(vmmio_check_ids(VMMIO_MAGIC_VALUE, 3, 1, &w), -ENODEV);
	assert_non_null(strstr(w, "version"));
}

static void test_queue_max(void **state)
{
	bool bad;

	assert_int_equal(vmmio_queue_max(0, &bad), 0);
	assert_false(bad);
	assert_int_equal(vmmio_queue_max(256, &bad), 256);
	assert_false(bad);
	assert_int_equal(vmmio_queue_max(32768, &bad), 32768);
	assert_false(bad);
	assert_int_equal(vmmio_queue_max(32769, &bad), 0);
	assert_true(bad);
	assert_int_equal(vmmio_queue_max(0x10100, &bad), 0);	/* would truncate to 256 */
	assert_true(bad);
}

/* One device as QEMU microvm's DSDT has it: Device (VRnn) { _HID
 * "LNRO0005", _UID, _CCA, _CRS { Memory32Fixed, Interrupt } }. */
static size_t put_dev(u8 *p, u32 base, u32 size, u32 gsi)
{
	static const u8 head[] = { 0x5b, 0x82, 0x3a, 'V', 'R', '0', '0', 0x08, '_', 'H', 'I', 'D',
				   0x0d, 'L', 'N', 'R', 'O', '0', '0', '0', '5', 0x00,
				   0x08, '_', 'U', 'I', 'D', 0x00, 0x08, '_', 'C', 'C', 'A', 0x01,
				   0x08, '_', 'C', 'R', 'S', 0x11, 0x1a, 0x0a, 0x17 };
	size_t n = sizeof head;

	memcpy(p, head, n);
	p[n++] = 0x86, p[n++] = 0x09, p[n++] = 0x00, p[n++] = 0x01;
	memcpy(p + n, &base, 4), n += 4;
	memcpy(p + n, &size, 4), n += 4;
	p[n++] = 0x89, p[n++] = 0x06, p[n++] = 0x00, p[n++] = 0x09, p[n++] = 0x01;
	memcpy(p + n, &gsi, 4), n += 4;
	p[n++] = 0x79, p[n++] = 0x00;
	return n;
}

static void test_aml_scan(void **state)
{
	static u8 aml[4096];
	static struct vmmio_list l;
	size_t n = 0;

	memset(&l, 0, sizeof l);
	memset(aml, 0x5b, 16), n = 16;	/* other AML before */
	n += put_dev(aml + n, 0xfeb02e00, 0x200, 47);
	n += put_dev(aml + n, 0xfeb02c00, 0x200, 46);
	assert_int_equal(aml_scan(aml, (u32)n, &l, why, sizeof why), 2);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.w[0].base, 0xfeb02e00);
	assert_int_equal(l.w[0].size, 0x200);
	assert_int_equal(l.w[0].gsi, 47);
	assert_int_equal(l.w[1].gsi, 46);
	/* The command line naming the same window again keeps one. */
	assert_int_equal(vmmio_cmdline_add("512@0xfeb02e00:47", &l, why, sizeof why), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.refused, 0);
	/* Scanning again adds nothing. */
	assert_int_equal(aml_scan(aml, (u32)n, &l, why, sizeof why), 0);
	assert_int_equal(l.n, 2);
}

static void test_aml_hostile(void **state)
{
	static u8 aml[4096];
	static struct vmmio_list l;
	size_t n, k, dev;

	/* Cut anywhere: never reads past len; the device counts once both
	 * descriptors are whole (the end tag, 2 bytes, is not needed). */
	memset(aml, 0, sizeof aml);
	dev = put_dev(aml, 0xfeb00000, 0x200, 16);
	for (k = 0; k <= dev; k++) {
		memset(&l, 0, sizeof l);
		aml_scan(aml, (u32)k, &l, why, sizeof why);
		assert_int_equal(l.n, k >= dev - 2 ? 1 : 0);
	}
	/* Out of bounds values are refused, with the reason. */
	memset(&l, 0, sizeof l);
	n = put_dev(aml, 0xfeb00000, 0x100000, 16);	/* too big */
	n += put_dev(aml + n, 0xfeb00002, 0x200, 17);	/* misaligned */
	n += put_dev(aml + n, 0xfeb01000, 0x200, 0);	/* gsi 0 */
	n += put_dev(aml + n, 0xfeb02000, 0x200, 300);	/* gsi past 255 */
	assert_int_equal(aml_scan(aml, (u32)n, &l, why, sizeof why), 0);
	assert_int_equal(l.refused, 4);
	assert_non_null(strstr(why, "out of bounds"));
	/* Two devices on one window: the second is refused as an overlap. */
	memset(&l, 0, sizeof l);
	n = put_dev(aml, 0xfeb00000, 0x200, 16);
	n += put_dev(aml + n, 0xfeb00100, 0x200, 17);
	assert_int_equal(aml_scan(aml, (u32)n, &l, why, sizeof why), 1);
	assert_int_equal(l.refused, 1);
	/* A _HID with no descriptors before the next _HID. */
	memset(&l, 0, sizeof l);
	memcpy(aml, "\x0dLNRO0005", 10);
	n = 10 + put_dev(aml + 10, 0xfeb00000, 0x200, 16);
	assert_int_equal(aml_scan(aml, (u32)n, &l, why, sizeof why), 1);
	assert_int_equal(l.refused, 1);
	assert_non_null(strstr(why, "without"));
	/* Descriptors farther than AML_DEV_SPAN from the _HID are not its. */
	memset(&l, 0, sizeof l);
	memset(aml, 0, sizeof aml);
	memcpy(aml, "\x0dLNRO0005", 10);
	put_dev(aml + 10 + AML_DEV_SPAN, 0xfeb00000, 0x200, 16);
	memset(aml + 10 + AML_DEV_SPAN, 0, 22);	/* drop that one's own _HID */
	assert_int_equal(aml_scan(aml, 10 + AML_DEV_SPAN + 64, &l, why, sizeof why), 0);
	assert_int_equal(l.refused, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),	 cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_list_overlaps_and_bound), cmocka_unit_test(test_tiny_why),
		cmocka_unit_test(test_ids),	 cmocka_unit_test(test_queue_max),
		cmocka_unit_test(test_aml_scan), cmocka_unit_test(test_aml_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
