/* kernel/mm/mm_range.c: what an MMIO mapping may cover. Device-supplied
 * addresses (BARs) are refused when they are empty, wrap, are too long,
 * leave the identity-mappable range, or touch RAM or the kernel image on
 * any page the mapping would change. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arch.h>
#include "kernel/mm/mm_range.h"

static const struct mm_range ram[] = {
	{ 0x100000, 0x7f000000 },		/* RAM below the PCI hole */
	{ 0x100000000ULL, 0x180000000ULL },	/* RAM above 4 GiB */
};
static const struct mm_range image = { 0x7e000000, 0x7e400000 };

static int check(u64 phys, u64 len, u64 max)
{
	return mm_range_check_mmio(ram, 2, image, phys, len, max);
}

static void test_mmio_good(void **state)
{
	assert_int_equal(check(0xfebd0000, 0x1000, MM_MMIO_MAX), 0);
	assert_int_equal(check(0xb0000000, 256ULL << 20, MM_MMIO_MAX), 0);	/* ECAM */
	assert_int_equal(check(0x7f000000, 0x1000, MM_MMIO_MAX), 0);	/* right after RAM */
	assert_int_equal(check(0x800000000ULL, 0x4000, MM_MMIO_MAX), 0);	/* 64-bit BAR */
	assert_int_equal(check(0x800000000ULL, 1ULL << 40, 0), 0);	/* no length limit asked */
}

static void test_mmio_bad_lengths(void **state)
{
	assert_int_equal(check(0xfebd0000, 0, MM_MMIO_MAX), -EINVAL);
	assert_int_equal(check(0xfffffffffffff000ULL, 0x2000, MM_MMIO_MAX), -EINVAL);
	assert_int_equal(check(0xc0000000, MM_MMIO_MAX + 1, MM_MMIO_MAX), -E2BIG);
	assert_int_equal(check(0x800000000ULL, 1ULL << 40, MM_MMIO_MAX), -E2BIG);
	assert_int_equal(check(MM_PHYS_LIMIT - 0x1000, 0x2000, MM_MMIO_MAX), -ERANGE);
	assert_int_equal(check(MM_PHYS_LIMIT, 0x1000, MM_MMIO_MAX), -ERANGE);
}

static void test_mmio_overlaps(void **state)
{
	/* Inside RAM, straddling its ends, or sharing one page with it. */
	assert_int_equal(check(0x200000, 0x1000, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(check(0xff000, 0x2000, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(check(0x7effffff, 2, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(check(0x7f000000 - 1, 1, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(check(0x17ffff000ULL, 0x2000, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(check(0x0, 0x200000000ULL, 0), -EFAULT);	/* over all of it */
	/* Over the kernel image, even with no RAM listed. */
	assert_int_equal(mm_range_check_mmio(NULL, 0, image, 0x7e100000, 0x1000, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(mm_range_check_mmio(NULL, 0, image, 0x7e3ff800, 0x10, MM_MMIO_MAX), -EFAULT);
	assert_int_equal(mm_range_check_mmio(NULL, 0, image, 0x7e400000, 0x10, MM_MMIO_MAX), 0);
	/* Just below the first page of RAM, ending on its boundary. */
	assert_int_equal(check(0xff000, 0x1000, MM_MMIO_MAX), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mmio_good),
		cmocka_unit_test(test_mmio_bad_lengths),
		cmocka_unit_test(test_mmio_overlaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
