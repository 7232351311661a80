/* boot/pvh_info.c: the PVH start info and its E820 map into boot_info, from
 * a fake guest-physical window. Hostile maps: unsorted, overlapping,
 * wrapping, too many entries, the image outside RAM, unreadable pointers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "boot/pvh_info.h"

/* Guest-physical [WIN_BASE, WIN_BASE + sizeof win) is readable. */
#define WIN_BASE 0x9000ULL
static u8 win[0x3000];
static struct boot_info bi;

static const void *phys(u64 pa, u64 len)
{
	if (pa < WIN_BASE || len > sizeof win || pa - WIN_BASE > sizeof win - len)
		return NULL;
	return win + (pa - WIN_BASE);
}

#define SI_PA WIN_BASE
#define MAP_PA (WIN_BASE + 0x100)
#define CMD_PA (WIN_BASE + 0x1000)
#define RSDP_PA (WIN_BASE + 0x2000)
#define IMG_LO 0x100000ULL
#define IMG_HI 0x180000ULL

static struct hvm_start_info *si(void)
{
	return (struct hvm_start_info *)win;
}

static void setup(const struct hvm_memmap_entry *m, u32 n)
{
	memset(win, 0, sizeof win);
	memset(&bi, 0xcc, sizeof bi);
	*si() = (struct hvm_start_info){ .magic = HVM_START_MAGIC, .version = 1, .memmap_paddr = MAP_PA,
					 .memmap_entries = n };
	memcpy(win + (MAP_PA - WIN_BASE), m, n * sizeof *m);
}

static int fill(const char **why)
{
	return pvh_fill_boot_info(&bi, SI_PA, phys, IMG_LO, IMG_HI, why);
}

static void expect(u32 i, u64 base, u64 len, u32 type)
{
	assert_true(i < bi.nregions);
	assert_int_equal(bi.regions[i].base, base);
	assert_int_equal(bi.regions[i].len, len);
	assert_int_equal(bi.regions[i].type, type);
}

/* QEMU's pvh.bin map for -m 64 on pc, and a command line and RSDP. */
static void test_qemu_map(void **state)
{
	static const struct hvm_memmap_entry m[] = {
		{ 0, 0x9fc00, E820_RAM, 0 },
		{ 0x9fc00, 0x400, E820_RESERVED, 0 },
		{ 0xf0000, 0x10000, E820_RESERVED, 0 },
		{ 0x100000, 0x3ee0000, E820_RAM, 0 },
		{ 0x3fe0000, 0x20000, E820_RESERVED, 0 },
		{ 0xfffc0000, 0x40000, E820_RESERVED, 0 },
	};
	const char *why;
	u8 *rsdp = win + (RSDP_PA - WIN_BASE);

	setup(m, 6);
	strcpy((char *)win + (CMD_PA - WIN_BASE), "verbose http=8080");
	si()->cmdline_paddr = CMD_PA;
	si()->rsdp_paddr = RSDP_PA;
	memcpy(rsdp, "RSD PTR ", 8);
	rsdp[15] = 2;
	assert_int_equal(fill(&why), 0);
	assert_null(why);
	assert_int_equal(bi.nregions, 7);
	expect(0, 0, 0x9f000, BOOT_MEM_FREE);	/* trimmed to whole pages */
	expect(1, 0x9fc00, 0x400, BOOT_MEM_RESERVED);
	expect(2, 0xf0000, 0x10000, BOOT_MEM_RESERVED);
	expect(3, IMG_LO, IMG_HI - IMG_LO, BOOT_MEM_LOADER);
	expect(4, IMG_HI, 0x3fe0000 - IMG_HI, BOOT_MEM_FREE);
	expect(5, 0x3fe0000, 0x20000, BOOT_MEM_RESERVED);
	expect(6, 0xfffc0000, 0x40000, BOOT_MEM_RESERVED);
	assert_int_equal(bi.regions_dropped, 0);
	assert_string_equal(bi.cmdline, "verbose http=8080");
	assert_string_equal(bi.cmdline_src, "pvh");
	assert_int_equal(bi.rsdp, RSDP_PA);
	assert_int_equal(bi.rsdp_rev, 2);
}

static void test_no_cmdline_no_rsdp(void **state)
{
	static const struct hvm_memmap_entry m[] = { { 0x100000, 0x1000000, E820_RAM, 0 } };
	const char *why;

	setup(m, 1);
	si()->rsdp_paddr = 0x7fff0000;	/* unreadable: ignored, not trusted */
	assert_int_equal(fill(&why), 0);
	assert_string_equal(bi.cmdline, "");
	assert_string_equal(bi.cmdline_src, "none");
	assert_int_equal(bi.rsdp, 0);
	assert_int_equal(bi.nregions, 2);
	expect(0, IMG_LO, IMG_HI - IMG_LO, BOOT_MEM_LOADER);
	expect(1, IMG_HI, 0x1100000 - IMG_HI, BOOT_MEM_FREE);
}

/* Unsorted and overlapping: reserved and ACPI ranges win over RAM, in
 * whatever order they come, and the result is sorted and disjoint. */
static void test_overlaps(void **state)
{
	static const struct hvm_memmap_entry m[] = {
		{ 0x2000000, 0x100000, E820_ACPI, 0 },		/* inside RAM */
		{ 0x100000, 0x4000000, E820_RAM, 0 },
		{ 0x3000000, 0x2000000, E820_RESERVED, 0 },	/* straddles RAM's end */
		{ 0x2080000, 0x10000, E820_NVS, 0 },		/* inside the ACPI range */
		{ 0x200000, 0x1000, 77, 0 },			/* unknown type: reserved */
		{ 0x4000000, 0, E820_RAM, 0 },			/* empty: ignored */
		{ 0x100000, 0x80000, E820_RAM, 0 },		/* duplicate RAM */
	};
	const char *why;
	u32 i;

	setup(m, 7);
	assert_int_equal(fill(&why), 0);
	expect(0, IMG_LO, IMG_HI - IMG_LO, BOOT_MEM_LOADER);
	expect(1, IMG_HI, 0x200000 - IMG_HI, BOOT_MEM_FREE);
	expect(2, 0x200000, 0x1000, BOOT_MEM_RESERVED);
	expect(3, 0x201000, 0x2000000 - 0x201000, BOOT_MEM_FREE);
	expect(4, 0x2000000, 0x80000, BOOT_MEM_ACPI_RECLAIM);
	expect(5, 0x2080000, 0x10000, BOOT_MEM_ACPI_NVS);
	expect(6, 0x2090000, 0x70000, BOOT_MEM_ACPI_RECLAIM);
	expect(7, 0x2100000, 0xf00000, BOOT_MEM_FREE);
	expect(8, 0x3000000, 0x2000000, BOOT_MEM_RESERVED);
	assert_int_equal(bi.nregions, 9);
	for (i = 1; i < bi.nregions; i++)
		assert_true(bi.regions[i - 1].base + bi.regions[i - 1].len <= bi.regions[i].base);
}

static void test_wrapping_entry(void **state)
{
	static const struct hvm_memmap_entry m[] = {
		{ 0x100000, 0x1000000, E820_RAM, 0 },
		{ 0xfffffffffffff000ULL, 0x10000, E820_RESERVED, 0 },
		{ 0xffffffffffff0000ULL, 0x100000, E820_RAM, 0 },	/* wraps: clipped, then trimmed */
	};
	const char *why;
	u32 i;

	setup(m, 3);
	assert_int_equal(fill(&why), 0);
	for (i = 0; i < bi.nregions; i++) {
		assert_true(bi.regions[i].len > 0);
		assert_true(bi.regions[i].base + bi.regions[i].len > bi.regions[i].base);
		if (bi.regions[i].type == BOOT_MEM_FREE)
			assert_true(bi.regions[i].base + bi.regions[i].len <= 0xfffffffffffff000ULL);
	}
}

static void test_image_outside_ram(void **state)
{
	static const struct hvm_memmap_entry a[] = { { 0x200000, 0x1000000, E820_RAM, 0 } };
	static const struct hvm_memmap_entry b[] = {
		{ 0x100000, 0x1000000, E820_RAM, 0 },
		{ 0x140000, 0x1000, E820_RESERVED, 0 },		/* a hole inside the image */
	};
	const char *why;

	setup(a, 1);
	assert_int_equal(fill(&why), -1);
	assert_non_null(strstr(why, "image"));
	setup(b, 2);
	assert_int_equal(fill(&why), -1);
	assert_non_null(strstr(why, "image"));
}

static void test_bad_start_info(void **state)
{
	static const struct hvm_memmap_entry m[] = { { 0x100000, 0x1000000, E820_RAM, 0 } };
	const char *why;

	setup(m, 1);
	si()->magic ^= 1;
	assert_int_equal(fill(&why), -1);
	assert_non_null(strstr(why, "magic"));

	setup(m, 1);
	si()->version = 0;
	assert_int_equal(fill(&why), -1);
	assert_non_null(strstr(why, "no memory map"));

	setup(m, 1);
	si()->memmap_entries = 129;
	assert_int_equal(fill(&why), -1);
	assert_non_null(strstr(why, "128"));

	setup(m, 1);
	si()->memmap_entries = 0xffffffff;
	assert_int_equal(fill(&why), -1);

	setup(m, 1);
	si()->memmap_paddr = 0x7fff0000;	/* unreadable */
	assert_int_equal(fill(&why), -1);
	assert_non_null(strstr(why, "not readable"));

	setup(m, 1);
	assert_int_equal(pvh_fill_boot_info(&bi, 0, phys, IMG_LO, IMG_HI, &why), -1);
	assert_int_equal(pvh_fill_boot_info(&bi, 0x50000000, phys, IMG_LO, IMG_HI, &why), -1);
}

/* 128 entries is the bound; all of them alternating types still fit. */
static void test_max_entries(void **state)
{
	static struct hvm_memmap_entry m[128];
	const char *why;
	u32 i;

	m[0] = (struct hvm_memmap_entry){ 0x100000, 0x100000, E820_RAM, 0 };
	for (i = 1; i < 128; i++)
		m[i] = (struct hvm_memmap_entry){ 0x200000 + (u64)i * 0x2000, 0x1000,
						  i & 1 ? E820_RAM : E820_RESERVED, 0 };
	setup(m, 128);
	assert_int_equal(fill(&why), 0);
	assert_int_equal(bi.nregions, 2 + 127);	/* the image splits the first */
	assert_int_equal(bi.regions_dropped, 0);
}

/* A command line with no NUL inside BOOT_CMDLINE_MAX is cut; one that runs
 * off the readable window stops there. */
static void test_cmdline_bounds(void **state)
{
	static const struct hvm_memmap_entry m[] = { { 0x100000, 0x1000000, E820_RAM, 0 } };
	const char *why;

	setup(m, 1);
	memset(win + (CMD_PA - WIN_BASE), 'a', 0x1800);
	si()->cmdline_paddr = CMD_PA;
	assert_int_equal(fill(&why), 0);
	assert_int_equal(strlen(bi.cmdline), BOOT_CMDLINE_MAX - 1);

	setup(m, 1);
	memset(win + sizeof win - 10, 'b', 10);
	si()->cmdline_paddr = WIN_BASE + sizeof win - 10;
	assert_int_equal(fill(&why), 0);
	assert_string_equal(bi.cmdline, "bbbbbbbbbb");

	setup(m, 1);
	si()->cmdline_paddr = ~0ULL;
	assert_int_equal(fill(&why), 0);
	assert_string_equal(bi.cmdline, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qemu_map),	  cmocka_unit_test(test_no_cmdline_no_rsdp),
		cmocka_unit_test(test_overlaps),	  cmocka_unit_test(test_wrapping_entry),
		cmocka_unit_test(test_image_outside_ram), cmocka_unit_test(test_bad_start_info),
		cmocka_unit_test(test_max_entries),	  cmocka_unit_test(test_cmdline_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
