/* drivers/virtio_mmio_parse.c: virtio_mmio.device= windows and the checks on
 * a window's identifying registers and queue sizes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio_mmio_parse.h"
#include "drivers/virtio_mmio_reg.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),	 cmocka_unit_test(test_bad_values),
		cmocka_unit_test(test_list_overlaps_and_bound), cmocka_unit_test(test_tiny_why),
		cmocka_unit_test(test_ids),	 cmocka_unit_test(test_queue_max),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
