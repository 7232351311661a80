/* kernel/mm/frames.c: rounding and clipping, holes, exhaustion, contiguous runs
 * with alignment, double free, big-range size math, and a randomized run
 * against a byte-per-page model. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/mm/frames.h"

#define KiB 1024ull
#define MiB (1024 * KiB)
#define GiB (1024 * MiB)
#define PG ((u64)PAGE_SIZE)

static struct frames fr;
static u64 *bitmap;

static void setup_range(u64 lo, u64 hi)
{
	free(bitmap);
	bitmap = malloc(frames_bitmap_bytes(lo, hi) + 8);
	frames_init(&fr, lo, hi, bitmap);
}

static int teardown(void **state)
{
	free(bitmap);
	bitmap = NULL;
	return 0;
}

static void test_bitmap_bytes(void **state)
{
	assert_int_equal(frames_bitmap_bytes(0, 0), 0);
	assert_int_equal(frames_bitmap_bytes(5 * PG, 5 * PG), 0);
	assert_int_equal(frames_bitmap_bytes(6 * PG, 5 * PG), 0);
	assert_int_equal(frames_bitmap_bytes(0, 1), 8);
	assert_int_equal(frames_bitmap_bytes(0, PG), 8);
	assert_int_equal(frames_bitmap_bytes(0, 64 * PG), 8);
	assert_int_equal(frames_bitmap_bytes(0, 64 * PG + 1), 16);
	assert_int_equal(frames_bitmap_bytes(PG - 1, PG + 1), 8);	/* pages 0 and 1 */
	assert_int_equal(frames_bitmap_bytes(1 * MiB, 1 * MiB + 64 * PG), 8);
	/* 24 GiB = 6291456 pages = 98304 words */
	assert_int_equal(frames_bitmap_bytes(0, 24 * GiB), 786432);
	assert_int_equal(frames_bitmap_bytes(4 * GiB, 28 * GiB), 786432);
	/* 1 TiB + 1 byte: one extra page, one extra word */
	assert_int_equal(frames_bitmap_bytes(0, 1024 * GiB + 1), 1024 * GiB / PG / 8 + 8);
}

static void test_starts_all_used(void **state)
{
	setup_range(0, 1 * MiB);
	assert_int_equal(fr.npages, 256);
	assert_int_equal(fr.nfree, 0);
	assert_int_equal(fr.ntotal, 0);
	assert_int_equal(frames_alloc(&fr), 0);
	assert_int_equal(frames_alloc_contig(&fr, 1, PG), 0);
	assert_int_equal(frames_free(&fr, 0x1000, 1), 0);	/* a reserved page: caller's business */
	assert_int_equal(fr.nfree, 1);
}

static void test_holes_and_exhaustion(void **state)
{
	u64 seen[1024] = { 0 };
	int n = 0;
	u64 p;

	setup_range(0, 8 * MiB);
	frames_add_free(&fr, 1 * MiB, 1 * MiB);
	frames_add_free(&fr, 3 * MiB, 1 * MiB);
	assert_int_equal(fr.nfree, 512);
	assert_int_equal(fr.ntotal, 512);

	while ((p = frames_alloc(&fr)) != 0) {
		assert_true((p >= 1 * MiB && p < 2 * MiB) || (p >= 3 * MiB && p < 4 * MiB));
		assert_int_equal(p % PG, 0);
		for (int i = 0; i < n; i++)
			assert_true(seen[i] != p);
		seen[n++] = p;
		assert_true(n <= 512);
	}
	assert_int_equal(n, 512);
	assert_int_equal(fr.nfree, 0);
	assert_int_equal(fr.ntotal, 512);
	assert_int_equal(frames_alloc(&fr), 0);

	assert_int_equal(frames_free(&fr, seen[100], 1), 0);
	assert_int_equal(frames_alloc(&fr), seen[100]);
	for (int i = 0; i < n; i++)
		assert_int_equal(frames_free(&fr, seen[i], 1), 0);
	assert_int_equal(fr.nfree, 512);
}

static void test_rounding_and_page_zero(void **state)
{
	setup_range(0, 1 * MiB);

	frames_add_free(&fr, 0x1001, 0x2fff);	/* [0x1001, 0x4000) -> pages 2, 3 */
	assert_int_equal(fr.nfree, 2);
	frames_add_free(&fr, 0x5000, 0xfff);	/* less than a page once rounded */
	frames_add_free(&fr, 0x5001, 0x1000);
	assert_int_equal(fr.nfree, 2);

	frames_add_free(&fr, 0, 16 * PG);	/* page 0 is never freed */
	assert_int_equal(fr.nfree, 15);
	assert_int_equal(fr.ntotal, 15);
	frames_add_free(&fr, 0, 16 * PG);	/* overlap: nothing counted twice */
	assert_int_equal(fr.ntotal, 15);

	frames_reserve(&fr, 0x2001, 1);		/* outward: all of page 2 */
	frames_reserve(&fr, 0x3fff, 2);		/* pages 3 and 4 */
	assert_int_equal(fr.nfree, 12);
	assert_int_equal(fr.ntotal, 12);
	frames_reserve(&fr, 0x2000, 3 * PG);	/* already reserved: no change */
	assert_int_equal(fr.nfree, 12);
	frames_reserve(&fr, 0x9000, 0);		/* empty */
	assert_int_equal(fr.nfree, 12);

	for (int i = 0; i < 12; i++) {
		u64 p = frames_alloc(&fr);

		assert_true(p != 0 && p != 0x2000 && p != 0x3000 && p != 0x4000 && p < 16 * PG);
	}
	assert_int_equal(frames_alloc(&fr), 0);
	assert_int_equal(fr.ntotal, 12);
}

static void test_clipping(void **state)
{
	setup_range(1 * MiB + 123, 2 * MiB);	/* base rounds down to 1 MiB */
	assert_int_equal(fr.base, 1 * MiB);
	assert_int_equal(fr.npages, 256);

	frames_add_free(&fr, 0, 64 * MiB);
	assert_int_equal(fr.nfree, 256);
	frames_reserve(&fr, 0, 1 * MiB + 1);	/* first page only */
	frames_reserve(&fr, 2 * MiB - 1, 1 * GiB);	/* last page only */
	assert_int_equal(fr.nfree, 254);
	frames_add_free(&fr, 4 * MiB, 4 * MiB);	/* wholly outside */
	frames_reserve(&fr, 0, 1 * MiB);
	assert_int_equal(fr.nfree, 254);

	/* Lengths that wrap the address space are clipped, not wrapped. */
	frames_reserve(&fr, 2 * MiB - PG, UINT64_MAX);
	assert_int_equal(fr.nfree, 254);
	frames_reserve(&fr, UINT64_MAX - 10, 100);
	frames_add_free(&fr, UINT64_MAX - 10, 100);
	frames_add_free(&fr, 1 * MiB, UINT64_MAX);
	assert_int_equal(fr.nfree, 256);
	assert_int_equal(fr.ntotal, 256);
}

static void test_contig_alignment_across_holes(void **state)
{
	setup_range(0, 1 * MiB);
	frames_add_free(&fr, 1 * PG, 15 * PG);	/* pages 1..15 */
	frames_add_free(&fr, 17 * PG, 47 * PG);	/* pages 17..63: page 16 is a hole */
	assert_int_equal(fr.nfree, 62);

	/* 64 KiB aligned: 0x0 has page 0, 0x10000 has the hole, 0x20000 fits. */
	assert_int_equal(frames_alloc_contig(&fr, 16, 64 * KiB), 0x20000);
	assert_int_equal(frames_alloc_contig(&fr, 16, 64 * KiB), 0x30000);
	assert_int_equal(frames_alloc_contig(&fr, 16, 64 * KiB), 0);
	assert_int_equal(fr.nfree, 30);

	/* Page-aligned runs: lowest first, skipping the hole. */
	assert_int_equal(frames_alloc_contig(&fr, 4, PG), 0x1000);
	assert_int_equal(frames_alloc_contig(&fr, 12, PG), 0x11000);
	/* Left: pages 5..15 (11) and 29..31 (3). */
	assert_int_equal(fr.nfree, 14);
	assert_int_equal(frames_alloc_contig(&fr, 12, PG), 0);
	assert_int_equal(frames_alloc_contig(&fr, 4, 16 * KiB), 0x8000);	/* 5..7 skipped for alignment */
	assert_int_equal(frames_alloc_contig(&fr, 4, 16 * KiB), 0xc000);
	assert_int_equal(frames_alloc_contig(&fr, 4, 16 * KiB), 0);
	assert_int_equal(frames_alloc_contig(&fr, 3, PG), 0x5000);
	assert_int_equal(frames_alloc_contig(&fr, 3, PG), 0x1d000);
	assert_int_equal(fr.nfree, 0);
	assert_int_equal(frames_alloc_contig(&fr, 1, PG), 0);
}

static void test_contig_invalid(void **state)
{
	setup_range(0, 1 * MiB);
	frames_add_free(&fr, 0, 1 * MiB);
	assert_int_equal(frames_alloc_contig(&fr, 0, PG), 0);
	assert_int_equal(frames_alloc_contig(&fr, 1, 0), 0);
	assert_int_equal(frames_alloc_contig(&fr, 1, 3 * PG), 0);
	assert_int_equal(frames_alloc_contig(&fr, 1, PG / 2), 0);
	assert_int_equal(frames_alloc_contig(&fr, 256, PG), 0);	/* more than is free */
	assert_int_equal(frames_alloc_contig(&fr, 1, 1ull << 63), 0);	/* only 0 is aligned */
	assert_int_equal(frames_alloc_contig(&fr, 1, 1 * MiB), 0);	/* ditto */
	assert_int_equal(frames_alloc_contig(&fr, 255, PG), PG);	/* everything */
	assert_int_equal(fr.nfree, 0);
}

static void test_free_errors_change_nothing(void **state)
{
	u64 run, nfree;

	setup_range(1 * MiB, 2 * MiB);
	frames_add_free(&fr, 1 * MiB, 1 * MiB);
	run = frames_alloc_contig(&fr, 4, PG);
	assert_int_equal(run, 1 * MiB);
	nfree = fr.nfree;

	assert_int_equal(frames_free(&fr, run + 1, 1), -EINVAL);	/* unaligned */
	assert_int_equal(frames_free(&fr, run, 0), -EINVAL);		/* empty */
	assert_int_equal(frames_free(&fr, 0, 1), -EINVAL);		/* below range */
	assert_int_equal(frames_free(&fr, 1 * MiB - PG, 2), -EINVAL);	/* starts below */
	assert_int_equal(frames_free(&fr, 2 * MiB, 1), -EINVAL);	/* past the end */
	assert_int_equal(frames_free(&fr, 2 * MiB - PG, 2), -EINVAL);	/* runs past the end */
	assert_int_equal(frames_free(&fr, run, UINT64_MAX), -EINVAL);	/* absurd length */
	assert_int_equal(frames_free(&fr, run + 4 * PG, 1), -EINVAL);	/* never allocated */
	assert_int_equal(fr.nfree, nfree);

	assert_int_equal(frames_free(&fr, run + PG, 1), 0);
	/* Double free of page 1 inside a 4-page free: the other 3 stay used. */
	assert_int_equal(frames_free(&fr, run, 4), -EINVAL);
	assert_int_equal(fr.nfree, nfree + 1);
	assert_int_equal(frames_free(&fr, run + PG, 1), -EINVAL);
	assert_int_equal(frames_free(&fr, run, 1), 0);
	assert_int_equal(frames_free(&fr, run + 2 * PG, 2), 0);
	assert_int_equal(fr.nfree, nfree + 4);
	assert_int_equal(fr.ntotal, 256);
}

static void test_large_range(void **state)
{
	u64 pages = 24 * GiB / PG, p;

	setup_range(0, 24 * GiB);
	assert_int_equal(fr.npages, pages);
	frames_add_free(&fr, 0, 640 * KiB);		/* low memory, with page 0 */
	frames_add_free(&fr, 1 * MiB, 3 * GiB - 1 * MiB);
	frames_add_free(&fr, 4 * GiB, 20 * GiB);	/* above the PCI hole */
	assert_int_equal(fr.nfree, 159 + (3 * GiB - 1 * MiB) / PG + 20 * GiB / PG);
	assert_int_equal(fr.ntotal, fr.nfree);

	p = frames_alloc_contig(&fr, 512, 2 * MiB);
	assert_int_equal(p, 2 * MiB);
	p = frames_alloc_contig(&fr, 1024 * 1024, 1 * GiB);	/* 4 GiB, 1 GiB aligned */
	assert_int_equal(p, 4 * GiB);				/* 0..3 GiB has holes */
	assert_int_equal(frames_free(&fr, p, 1024 * 1024), 0);
	p = frames_alloc(&fr);
	assert_true(p != 0 && p < 24 * GiB);
}

/* Model: one byte per page. */
enum { M_RESERVED, M_FREE, M_ALLOC };

static void model_check(const u8 *m, u64 n)
{
	u64 nfree = 0, nalloc = 0;

	for (u64 i = 0; i < n; i++) {
		nfree += m[i] == M_FREE;
		nalloc += m[i] == M_ALLOC;
	}
	assert_int_equal(fr.nfree, nfree);
	assert_int_equal(fr.ntotal, nfree + nalloc);
}

static void test_randomized_against_model(void **state)
{
	const u64 base = 16 * MiB, n = 3000;
	u8 *m = calloc(n, 1);
	u64 p, i, k;

	srand(12345);
	setup_range(base, base + n * PG);

	/* Random free regions and reservations, rounding as documented. */
	for (int r = 0; r < 40; r++) {
		u64 a = base - 4 * PG + (u64)rand() % ((n + 8) * PG);
		u64 len = (u64)rand() % (200 * PG);
		bool res = rand() % 3 == 0;
		u64 lo, hi;

		if (res) {
			frames_reserve(&fr, a, len);
			lo = ALIGN_DOWN(a, PG);
			hi = ALIGN_UP(a + len, PG);
		} else {
			frames_add_free(&fr, a, len);
			lo = ALIGN_UP(a, PG);
			hi = ALIGN_DOWN(a + len, PG);
		}
		for (u64 q = lo; len && q < hi; q += PG)
			if (q >= base && q < base + n * PG)
				m[(q - base) / PG] = res ? M_RESERVED : M_FREE;
		model_check(m, n);
	}

	for (int step = 0; step < 30000; step++) {
		int op = rand() % 10;

		if (op < 4) {
			p = frames_alloc(&fr);
			if (p == 0) {
				for (i = 0; i < n; i++)
					assert_true(m[i] != M_FREE);
			} else {
				i = (p - base) / PG;
				assert_true(p >= base && p % PG == 0 && i < n);
				assert_int_equal(m[i], M_FREE);
				m[i] = M_ALLOC;
			}
		} else if (op < 6) {
			u64 np = 1 + (u64)rand() % 8, align = PG << (rand() % 5), want = 0;

			/* The model's answer: lowest aligned all-free run. */
			for (i = ALIGN_UP(base, align); i + np * PG <= base + n * PG; i += align) {
				for (k = 0; k < np && m[(i - base) / PG + k] == M_FREE; k++)
					;
				if (k == np) {
					want = i;
					break;
				}
			}
			p = frames_alloc_contig(&fr, np, align);
			assert_int_equal(p, want);
			for (k = 0; p && k < np; k++)
				m[(p - base) / PG + k] = M_ALLOC;
		} else if (op < 9) {
			/* Free a random allocated page and up to 3 allocated neighbours. */
			i = (u64)rand() % n;
			if (m[i] != M_ALLOC)
				continue;
			for (k = 1; k < 4 && i + k < n && m[i + k] == M_ALLOC && rand() % 2; k++)
				;
			assert_int_equal(frames_free(&fr, base + i * PG, k), 0);
			while (k--)
				m[i + k] = M_FREE;
		} else {
			/* A free that must fail: a run touching a free page, or unaligned. */
			i = (u64)rand() % n;
			if (m[i] == M_FREE)
				assert_int_equal(frames_free(&fr, base + i * PG, 1 + (u64)rand() % 3), -EINVAL);
			else
				assert_int_equal(frames_free(&fr, base + i * PG + 8, 1), -EINVAL);
		}
		model_check(m, n);
	}
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bitmap_bytes),
		cmocka_unit_test_teardown(test_starts_all_used, teardown),
		cmocka_unit_test_teardown(test_holes_and_exhaustion, teardown),
		cmocka_unit_test_teardown(test_rounding_and_page_zero, teardown),
		cmocka_unit_test_teardown(test_clipping, teardown),
		cmocka_unit_test_teardown(test_contig_alignment_across_holes, teardown),
		cmocka_unit_test_teardown(test_contig_invalid, teardown),
		cmocka_unit_test_teardown(test_free_errors_change_nothing, teardown),
		cmocka_unit_test_teardown(test_large_range, teardown),
		cmocka_unit_test_teardown(test_randomized_against_model, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
