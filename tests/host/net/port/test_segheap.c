/* net/port/segheap.c: sizing, the class ladder's rounding bound, slot and run
 * reuse, the hard cap, checked frees, and a randomized run against a shadow
 * that checks blocks never overlap or get clobbered. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/port/segheap.h"

#define NPAGES 64u

static struct segheap h;
static u8 *mem;
static size_t mem_len;

static int setup(void **state)
{
	(void)state;
	mem_len = segheap_region_bytes(NPAGES);
	mem = aligned_alloc(4096, ALIGN_UP(mem_len, (size_t)4096));
	memset(mem, 0xee, mem_len);
	assert_int_equal(segheap_init(&h, mem, mem_len), NPAGES);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(mem);
	return 0;
}

static void test_sizing(void **state)
{
	struct segheap g;

	(void)state;
	assert_int_equal(segheap_init(&g, mem, mem_len - 1), NPAGES - 1);
	assert_int_equal(segheap_init(&g, mem, 100), 0);
	assert_null(segheap_alloc(&g, 8));
	assert_int_equal(g.fails, 1);
	segheap_free(&g, mem);
	assert_int_equal(g.bad_frees, 1);
	assert_true(h.base >= mem && h.base + NPAGES * SEGHEAP_PAGE == mem + mem_len);
}

static void test_rounding_bound(void **state)
{
	size_t n, prev = 0;

	(void)state;
	for (n = 0; n <= SEGHEAP_SMALL_MAX; n++) {
		size_t b = segheap_block_bytes(n);

		assert_true(b >= n && b % SEGHEAP_ALIGN == 0 && b >= prev);
		if (n <= 128)
			assert_true(b <= (n ? n : 1) + 15);
		else
			assert_true(b * 100 <= n * 126);
		prev = b;
	}
	assert_int_equal(segheap_block_bytes(SEGHEAP_SMALL_MAX + 1), SEGHEAP_PAGE);
	assert_int_equal(segheap_block_bytes(3 * SEGHEAP_PAGE), 3 * SEGHEAP_PAGE);
	/* lwIP's common blocks (each with mem.c's 8-byte size header). */
	assert_int_equal(segheap_block_bytes(296 + 8), 320);	/* tcp_pcb */
	assert_int_equal(segheap_block_bytes(32 + 8), 48);	/* tcp_seg */
	assert_int_equal(segheap_block_bytes(24 + 8), 32);	/* ROM/REF pbuf */
	for (u32 c = 0; c < SEGHEAP_NCLASS; c++)
		assert_true(segheap_class_size(c) >= 512 ?
			    SEGHEAP_PAGE % segheap_class_size(c) < 8 * (SEGHEAP_PAGE / segheap_class_size(c)) : 1);
	assert_int_equal(segheap_class_size(SEGHEAP_NCLASS), 0);
}

static void test_every_size_aligned_in_region(void **state)
{
	static u8 *p[SEGHEAP_SMALL_MAX + 1];
	size_t n;

	(void)state;
	for (n = 1; n <= SEGHEAP_SMALL_MAX; n += 7) {
		p[n] = segheap_alloc(&h, n);
		assert_non_null(p[n]);
		assert_int_equal((uintptr_t)p[n] % SEGHEAP_ALIGN, 0);
		assert_true(p[n] >= h.base && p[n] + n <= h.base + NPAGES * SEGHEAP_PAGE);
		memset(p[n], (int)(n & 0xff), n);
	}
	for (size_t m = 1; m < n; m += 7) {
		for (size_t k = 0; k < m; k++)
			assert_int_equal(p[m][k], (u8)(m & 0xff));
		segheap_free(&h, p[m]);
	}
	assert_int_equal(h.bytes, 0);
	assert_int_equal(h.pages_used, 0);
	assert_int_equal(h.bad_frees, 0);
}

/* One class fills every page; the next request fails and is counted; after
 * freeing, the pages serve another class and then one run of all of them. */
static void test_cap_and_page_reuse(void **state)
{
	u32 per_page = SEGHEAP_PAGE / 288, total = per_page * NPAGES, i;
	u8 **v = calloc(total, sizeof(*v));
	void *big;

	(void)state;
	for (i = 0; i < total; i++) {
		v[i] = segheap_alloc(&h, 280);
		assert_non_null(v[i]);
	}
	assert_int_equal(h.pages_used, NPAGES);
	assert_int_equal(h.bytes, (size_t)total * 288);
	assert_null(segheap_alloc(&h, 280));
	assert_null(segheap_alloc(&h, 16));
	assert_null(segheap_alloc(&h, 3 * SEGHEAP_PAGE));
	assert_int_equal(h.fails, 3);
	/* A freed slot is the next one handed out: O(1) reuse. */
	assert_int_equal(segheap_free(&h, v[17]), 288);
	assert_ptr_equal(segheap_alloc(&h, 270), v[17]);
	for (i = 0; i < total; i++)
		segheap_free(&h, v[i]);
	assert_int_equal(h.pages_used, 0);
	assert_int_equal(h.class_live[12], 0);
	for (i = 0; i < NPAGES; i++) {
		v[i] = segheap_alloc(&h, 2000);
		v[NPAGES + i] = segheap_alloc(&h, 2000);
		v[2 * NPAGES + i] = segheap_alloc(&h, 2000);
		v[3 * NPAGES + i] = segheap_alloc(&h, 2000);
	}
	assert_int_equal(h.pages_used, NPAGES);
	for (i = 0; i < 4 * NPAGES; i++)
		segheap_free(&h, v[i]);
	big = segheap_alloc(&h, NPAGES * SEGHEAP_PAGE);
	assert_ptr_equal(big, h.base);
	assert_null(segheap_alloc(&h, NPAGES * SEGHEAP_PAGE + 1));
	segheap_free(&h, big);
	assert_int_equal(h.pages_used, 0);
	assert_int_equal(h.bad_frees, 0);
	free(v);
}

static void test_runs_first_fit(void **state)
{
	u8 *a, *b, *c, *d;

	(void)state;
	a = segheap_alloc(&h, 2 * SEGHEAP_PAGE);
	b = segheap_alloc(&h, SEGHEAP_SMALL_MAX + 1);
	c = segheap_alloc(&h, 5 * SEGHEAP_PAGE - 3);
	assert_ptr_equal(b, a + 2 * SEGHEAP_PAGE);
	assert_ptr_equal(c, b + SEGHEAP_PAGE);
	assert_int_equal(h.pages_used, 8);
	segheap_free(&h, a);
	d = segheap_alloc(&h, 3 * SEGHEAP_PAGE);	/* does not fit in a's hole */
	assert_ptr_equal(d, c + 5 * SEGHEAP_PAGE);
	segheap_free(&h, b);
	assert_ptr_equal(segheap_alloc(&h, 3 * SEGHEAP_PAGE), a);	/* a + b now */
	assert_int_equal(h.bad_frees, 0);
}

static void test_bad_frees_counted(void **state)
{
	u8 *a, *r, *b;
	size_t before;

	(void)state;
	a = segheap_alloc(&h, 100);
	b = segheap_alloc(&h, 100);
	r = segheap_alloc(&h, 2 * SEGHEAP_PAGE);
	before = h.bytes;
	segheap_free(&h, mem);			/* descriptors, not a page */
	segheap_free(&h, h.base + NPAGES * SEGHEAP_PAGE);	/* past the end */
	segheap_free(&h, a + 8);		/* inside a slot */
	segheap_free(&h, b + 112);		/* the next, never-carved slot */
	segheap_free(&h, r + SEGHEAP_PAGE);	/* inside a run */
	segheap_free(&h, r + 8);
	segheap_free(&h, h.base + 40 * SEGHEAP_PAGE);	/* a free page */
	assert_int_equal(h.bad_frees, 7);
	assert_int_equal(h.bytes, before);
	assert_int_equal(segheap_free(&h, a), 112);
	assert_int_equal(segheap_free(&h, a), 0);	/* double free */
	assert_int_equal(h.bad_frees, 8);
	segheap_free(&h, NULL);
	assert_int_equal(h.bad_frees, 8);
	/* The heap is intact: both blocks come back, distinct. */
	assert_ptr_equal(segheap_alloc(&h, 100), a);
	assert_ptr_not_equal(segheap_alloc(&h, 100), b);
	assert_int_equal(segheap_free(&h, r), 2 * SEGHEAP_PAGE);
	assert_int_equal(segheap_free(&h, r), 0);
	assert_int_equal(h.bad_frees, 9);
}

/* Random sizes (mostly small, some runs), random frees; every block is
 * filled with its own pattern and checked before it is freed. */
static void test_random_against_shadow(void **state)
{
	enum { SLOTS = 3000, OPS = 200000 };
	static u8 *p[SLOTS];
	static size_t len[SLOTS];
	size_t sum = 0;
	u32 seed = 12345, i;

	(void)state;
	for (i = 0; i < OPS; i++) {
		u32 k, r;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 8;
		k = r % SLOTS;
		if (p[k]) {
			for (size_t j = 0; j < len[k]; j++)
				assert_int_equal(p[k][j], (u8)(k * 7 + j));
			segheap_free(&h, p[k]);
			sum -= segheap_block_bytes(len[k]);
			p[k] = NULL;
			continue;
		}
		len[k] = (r >> 12) % 16 == 0 ? (r >> 4) % (3 * SEGHEAP_PAGE) : (r >> 4) % 700;
		p[k] = segheap_alloc(&h, len[k]);
		if (p[k] == NULL)
			continue;
		sum += segheap_block_bytes(len[k]);
		for (size_t j = 0; j < len[k]; j++)
			p[k][j] = (u8)(k * 7 + j);
		assert_int_equal(h.bytes, sum);
		assert_true(h.pages_used <= NPAGES);
	}
	for (i = 0; i < SLOTS; i++)
		segheap_free(&h, p[i]);
	assert_int_equal(h.bytes, 0);
	assert_int_equal(h.pages_used, 0);
	assert_int_equal(h.bad_frees, 0);
	assert_true(h.fails > 0);	/* the run did press on the cap */
	for (i = 0; i < SEGHEAP_NCLASS; i++) {
		assert_int_equal(h.class_live[i], 0);
		assert_int_equal(h.partial[i], SEGHEAP_NONE);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sizing, setup, teardown),
		cmocka_unit_test(test_rounding_bound),
		cmocka_unit_test_setup_teardown(test_every_size_aligned_in_region, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_and_page_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runs_first_fit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_frees_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_random_against_shadow, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
