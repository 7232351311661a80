/* boot/relr.c: the UEFI image's RELR self-relocation, against tables built
 * by hand from the format (an even entry names a word, odd entries are
 * 63-word bitmaps after it). Every word of a fake image starts at its index;
 * afterwards exactly the named words hold index + base. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "boot/relr.h"

#define WORDS 400
#define BASE 0x7f0000000000ull

static u64 img[WORDS];

/* Relocates img as if loaded at BASE: the table's offsets are from img. */
static void run(const u64 *relr, size_t n)
{
	size_t i;

	for (i = 0; i < WORDS; i++)
		img[i] = i;
	/* relr_apply adds base to base + offset: hand it img's address, then
	 * take it off again, so the words gain exactly BASE. */
	for (i = 0; i < WORDS; i++)
		img[i] += BASE - (u64)(uintptr_t)img;
	relr_apply((u64)(uintptr_t)img, relr, n);
	for (i = 0; i < WORDS; i++)
		img[i] -= BASE - (u64)(uintptr_t)img;
}

static void expect(const size_t *moved, size_t nmoved)
{
	size_t i, j;

	for (i = 0; i < WORDS; i++) {
		bool want = false;

		for (j = 0; j < nmoved; j++)
			want |= moved[j] == i;
		if (want)
			assert_true(img[i] == i + (u64)(uintptr_t)img);
		else
			assert_true(img[i] == i);
	}
}

static void test_empty_table_moves_nothing(void **state)
{
	run(NULL, 0);
	expect(NULL, 0);
}

static void test_addresses_alone(void **state)
{
	const u64 t[] = { 3 * 8, 10 * 8, 399 * 8 };
	const size_t m[] = { 3, 10, 399 };

	run(t, 3);
	expect(m, 3);
}

static void test_bitmap_after_address(void **state)
{
	/* word 5, then bitmap bits 1, 2 and 63: words 6, 7 and 68 */
	const u64 t[] = { 5 * 8, 1 | 1ull << 1 | 1ull << 2 | 1ull << 63 };
	const size_t m[] = { 5, 6, 7, 68 };

	run(t, 2);
	expect(m, 4);
}

static void test_consecutive_bitmaps_step_63_words(void **state)
{
	/* word 0; bitmap 1 covers words 1..63, bitmap 2 covers 64..126 */
	const u64 t[] = { 0, 1 | 1ull << 63, 1 | 1ull << 1 | 1ull << 63, 1 | 1ull << 5 };
	const size_t m[] = { 0, 63, 64, 126, 131 };

	run(t, 4);
	expect(m, 5);
}

static void test_full_bitmap_then_new_address(void **state)
{
	u64 t[] = { 100 * 8, ~0ull, 300 * 8 };
	size_t m[65], i;

	for (i = 0; i < 64; i++)
		m[i] = 100 + i;
	m[64] = 300;
	run(t, 3);
	expect(m, 65);
}

static void test_bitmap_without_address_is_ignored(void **state)
{
	const u64 t[] = { 1 | 1ull << 1, 7 * 8 };
	const size_t m[] = { 7 };

	run(t, 2);
	expect(m, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_table_moves_nothing),
		cmocka_unit_test(test_addresses_alone),
		cmocka_unit_test(test_bitmap_after_address),
		cmocka_unit_test(test_consecutive_bitmaps_step_63_words),
		cmocka_unit_test(test_full_bitmap_then_new_address),
		cmocka_unit_test(test_bitmap_without_address_is_ignored),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
