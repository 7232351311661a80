/* Host tests for drivers/iommu/vtd_pt.c: page tables built in fake memory (every
 * table page a separate aligned heap block, counted), the IOVA windows and
 * fault-record decoding. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arch.h>
#include "drivers/iommu/vtd_pt.h"

static unsigned live, budget;

static void *fake_alloc(void *ctx, u64 *pa)
{
	void *p;

	(void)ctx;
	if (budget == 0)
		return NULL;
	budget--;
	p = aligned_alloc(4096, 4096);
	assert_non_null(p);
	memset(p, 0, 4096);
	live++;
	*pa = (u64)(uintptr_t)p;
	return p;
}

static void fake_free(void *ctx, void *va)
{
	(void)ctx;
	live--;
	free(va);
}

static void *fake_va(void *ctx, u64 pa)
{
	(void)ctx;
	return (void *)(uintptr_t)pa;
}

static struct vtd_pt new_pt(int levels)
{
	struct vtd_pt pt = { .alloc = fake_alloc, .free = fake_free, .va = fake_va };

	assert_int_equal(vtd_pt_init(&pt, levels), 0);
	return pt;
}

static int setup(void **state)
{
	(void)state;
	live = 0;
	budget = 1000;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	assert_int_equal(live, 0);	/* every table page given back */
	return 0;
}

/* A walk by hand through the tables the builder wrote: the unit's view. */
static u64 walk(const struct vtd_pt *pt, u64 iova)
{
	const u64 *t = pt->root;
	int l;

	for (l = pt->levels; l > 1; l--) {
		u64 e = t[(iova >> (12 + 9 * (l - 1))) & 511];

		if ((e & 3) != 3)
			return 0;
		t = (const u64 *)(uintptr_t)(e & VTD_PTE_ADDR);
	}
	return t[(iova >> 12) & 511];
}

static void test_map_lookup_both_widths(void **state)
{
	int levels;

	(void)state;
	for (levels = 3; levels <= 4; levels++) {
		struct vtd_pt pt = new_pt(levels);
		u64 ro = vtd_iova(0x1234000, 4096, false), rw = vtd_iova(0x1234000, 4096, true);
		bool added;

		assert_int_equal(vtd_pt_map(&pt, ro, 0x1234000, VTD_PTE_R, &added), 0);
		assert_true(added);
		assert_int_equal(vtd_pt_map(&pt, rw, 0x1234000, VTD_PTE_R | VTD_PTE_W, &added), 0);
		assert_true(added);
		/* same page again: nothing new */
		assert_int_equal(vtd_pt_map(&pt, ro, 0x1234000, VTD_PTE_R, &added), 0);
		assert_false(added);
		/* a different page or right at a taken IOVA is refused */
		assert_int_equal(vtd_pt_map(&pt, ro, 0x5678000, VTD_PTE_R, &added), -EEXIST);
		assert_int_equal(vtd_pt_map(&pt, ro, 0x1234000, VTD_PTE_R | VTD_PTE_W, &added), -EEXIST);
		assert_int_equal(walk(&pt, ro), 0x1234000 | VTD_PTE_R);
		assert_int_equal(walk(&pt, rw), 0x1234000 | VTD_PTE_R | VTD_PTE_W);
		assert_int_equal(vtd_pt_lookup(&pt, ro + 0x10), 0x1234000 | VTD_PTE_R);
		/* the physical address itself is not mapped: identity bugs fault */
		assert_int_equal(vtd_pt_lookup(&pt, 0x1234000), 0);
		assert_int_equal(walk(&pt, 0x1234000), 0);
		assert_int_equal(pt.mapped, 2);
		/* root + one table per level below it for each window */
		assert_int_equal(pt.table_pages, 1 + 2 * (levels - 1) - (levels == 4 ? 1 : 0));
		vtd_pt_clear(&pt);
		assert_int_equal(pt.mapped, 0);
		assert_int_equal(pt.table_pages, 1);
		assert_int_equal(vtd_pt_lookup(&pt, ro), 0);
		vtd_pt_destroy(&pt);
	}
}

static void test_bad_arguments(void **state)
{
	struct vtd_pt pt = { .alloc = fake_alloc, .free = fake_free, .va = fake_va };
	bool added;

	(void)state;
	assert_int_equal(vtd_pt_init(&pt, 2), -EINVAL);
	assert_int_equal(vtd_pt_init(&pt, 5), -EINVAL);
	pt = new_pt(3);
	assert_int_equal(vtd_pt_map(&pt, 1ull << 39, 0x1000, VTD_PTE_R, &added), -ERANGE);
	assert_int_equal(vtd_pt_map(&pt, VTD_WIN_RO + 0x800, 0x1000, VTD_PTE_R, &added), -ERANGE);
	assert_int_equal(vtd_pt_map(&pt, VTD_WIN_RO, 0x1001, VTD_PTE_R, &added), -ERANGE);
	assert_int_equal(vtd_pt_map(&pt, VTD_WIN_RO, 0x1000, VTD_PTE_W, &added), -ERANGE);
	assert_int_equal(vtd_pt_map(&pt, VTD_WIN_RO, 0x1000, 0x80 | VTD_PTE_R, &added), -ERANGE);
	assert_int_equal(vtd_pt_lookup(&pt, 1ull << 39), 0);
	assert_int_equal(pt.mapped, 0);
	vtd_pt_destroy(&pt);
	/* 4 levels reach 2^48 */
	pt = new_pt(4);
	assert_int_equal(vtd_pt_map(&pt, 1ull << 40, 0x1000, VTD_PTE_R, &added), 0);
	assert_int_equal(vtd_pt_map(&pt, 1ull << 48, 0x1000, VTD_PTE_R, &added), -ERANGE);
	vtd_pt_destroy(&pt);
}

/* Out of table pages half way: -ENOMEM, nothing half-mapped, and what was
 * allocated is still freed by destroy. */
static void test_out_of_memory(void **state)
{
	struct vtd_pt pt = new_pt(4);
	bool added;

	(void)state;
	budget = 2;
	assert_int_equal(vtd_pt_map(&pt, VTD_WIN_RW, 0x2000, VTD_PTE_R | VTD_PTE_W, &added), -ENOMEM);
	assert_false(added);
	assert_int_equal(vtd_pt_lookup(&pt, VTD_WIN_RW), 0);
	budget = 1;
	assert_int_equal(vtd_pt_map(&pt, VTD_WIN_RW, 0x2000, VTD_PTE_R | VTD_PTE_W, &added), 0);
	assert_true(added);
	vtd_pt_destroy(&pt);
}

/* Many pages: every one found where the unit will look, in the right window,
 * and the windows never overlap each other or physical addresses. */
static void test_many_pages(void **state)
{
	struct vtd_pt pt = new_pt(3);
	u64 pa;
	bool added;

	(void)state;
	budget = 100000;
	for (pa = 0; pa < (64ull << 20); pa += 0x3000) {
		assert_int_equal(vtd_pt_map(&pt, vtd_iova(pa, 1, pa & 0x1000), pa,
					    VTD_PTE_R | ((pa & 0x1000) ? VTD_PTE_W : 0), &added), 0);
		assert_true(added);
	}
	for (pa = 0; pa < (64ull << 20); pa += 0x1000) {
		bool mapped = pa % 0x3000 == 0;
		bool w = pa & 0x1000;

		assert_int_equal(walk(&pt, vtd_iova(pa, 1, w)),
				 mapped ? (pa | VTD_PTE_R | (w ? VTD_PTE_W : 0)) : 0);
		assert_int_equal(walk(&pt, vtd_iova(pa, 1, !w)), 0);
		assert_int_equal(walk(&pt, pa), 0);
	}
	vtd_pt_destroy(&pt);
}

static void test_iova_windows(void **state)
{
	(void)state;
	assert_int_equal(vtd_iova(0x1000, 10, false), VTD_WIN_RO + 0x1000);
	assert_int_equal(vtd_iova(0x1000, 10, true), VTD_WIN_RW + 0x1000);
	assert_true(vtd_iova(0, 1, false) >= (1ull << 37));	/* never a physical address */
	assert_int_equal(vtd_iova(0x1000, 0, true), 0);
	assert_int_equal(vtd_iova(VTD_WIN_SIZE - 16, 16, true), VTD_WIN_RW + VTD_WIN_SIZE - 16);
	assert_int_equal(vtd_iova(VTD_WIN_SIZE - 16, 17, true), 0);
	assert_int_equal(vtd_iova(~0ull - 4, 16, true), 0);	/* wraps */
	assert_true(VTD_WIN_RW + VTD_WIN_SIZE <= (1ull << 39));	/* fits 3 levels */
}

static void test_fault_decode(void **state)
{
	struct vtd_fault f;

	(void)state;
	/* QEMU's record for a write by 00:02.0 to an unmapped page */
	vtd_fault_decode(0x4000123456ull | 0x800, (1ull << 63) | (0x5ull << 32) | 0x0010, &f);
	assert_true(f.valid);
	assert_int_equal(f.source, 0x10);
	assert_int_equal(f.reason, 5);
	assert_false(f.read);
	assert_int_equal(f.addr, 0x4000123000ull);
	assert_string_equal(vtd_fault_reason(f.reason), "write to a page without write permission");
	vtd_fault_decode(0, (1ull << 62) | (0x6ull << 32) | 0xffff, &f);
	assert_false(f.valid);
	assert_true(f.read);
	assert_int_equal(f.source, 0xffff);
	assert_string_equal(vtd_fault_reason(0x2), "context entry not present");
	assert_string_equal(vtd_fault_reason(0xee), "unknown");
	/* interrupt remapping: the record's FI holds the entry index (63:48) */
	vtd_fault_decode(0x0005ull << 48, (1ull << 63) | (0x26ull << 32) | 0x0010, &f);
	assert_int_equal(f.reason, 0x26);
	assert_string_equal(vtd_fault_reason(f.reason), "interrupt source id does not match its entry");
	assert_string_equal(vtd_fault_reason(0x25), "compatibility-format interrupt blocked");
	assert_string_equal(vtd_fault_reason(0x22), "interrupt remapping entry not present");
	assert_string_equal(vtd_fault_reason(0x28), "unknown");
}

/* Transient mappings: counted per page, the last put clears the entry (the
 * unit then faults on it), a page a long-lived buffer uses is never
 * cleared by puts. */
static void test_refcounts(void **state)
{
	struct vtd_pt pt = new_pt(3);
	u64 ro = vtd_iova(0x7000, 1, false), rw = vtd_iova(0x7000, 1, true);
	bool added, removed;
	unsigned i;

	(void)state;
	/* two buffers in one page: mapped by the first, kept until both go */
	assert_int_equal(vtd_pt_get(&pt, ro, 0x7000, VTD_PTE_R, &added), 0);
	assert_true(added);
	assert_int_equal(vtd_pt_get(&pt, ro, 0x7000, VTD_PTE_R, &added), 0);
	assert_false(added);
	assert_int_equal(vtd_pt_refs(&pt, ro), 2);
	/* the unit sees the plain entry; the count sits in ignored bits */
	assert_int_equal(walk(&pt, ro) & ~VTD_PTE_REF, 0x7000 | VTD_PTE_R);
	assert_int_equal(walk(&pt, ro) & 0xc000000000000800ull, 0);	/* bits the unit checks: clear */
	assert_int_equal(vtd_pt_lookup(&pt, ro), 0x7000 | VTD_PTE_R);
	assert_int_equal(vtd_pt_put(&pt, ro, &removed), 0);
	assert_false(removed);
	assert_int_equal(walk(&pt, ro) & ~VTD_PTE_REF, 0x7000 | VTD_PTE_R);	/* still in flight */
	assert_int_equal(vtd_pt_put(&pt, ro, &removed), 0);
	assert_true(removed);
	assert_int_equal(walk(&pt, ro), 0);
	assert_int_equal(pt.mapped, 0);
	assert_int_equal(vtd_pt_put(&pt, ro, &removed), -ENOENT);	/* nothing left to drop */
	assert_false(removed);
	assert_int_equal(vtd_pt_put(&pt, vtd_iova(0x40000000, 1, false), &removed), -ENOENT);

	/* windows are counted apart */
	assert_int_equal(vtd_pt_get(&pt, ro, 0x7000, VTD_PTE_R, &added), 0);
	assert_int_equal(vtd_pt_get(&pt, rw, 0x7000, VTD_PTE_R | VTD_PTE_W, &added), 0);
	assert_int_equal(vtd_pt_put(&pt, rw, &removed), 0);
	assert_true(removed);
	assert_int_equal(vtd_pt_refs(&pt, ro), 1);
	/* a long-lived buffer joins the page: pinned, puts leave it */
	assert_int_equal(vtd_pt_map(&pt, ro, 0x7000, VTD_PTE_R, &added), 0);
	assert_false(added);
	assert_int_equal(vtd_pt_refs(&pt, ro), 0);
	assert_int_equal(vtd_pt_put(&pt, ro, &removed), 0);
	assert_false(removed);
	assert_int_equal(walk(&pt, ro), 0x7000 | VTD_PTE_R);
	/* and transient buffers on a pinned page do not unpin it */
	assert_int_equal(vtd_pt_get(&pt, ro, 0x7000, VTD_PTE_R, &added), 0);
	assert_int_equal(vtd_pt_put(&pt, ro, &removed), 0);
	assert_false(removed);
	assert_int_equal(walk(&pt, ro), 0x7000 | VTD_PTE_R);
	/* a different page at a counted IOVA is still refused */
	assert_int_equal(vtd_pt_get(&pt, rw, 0x7000, VTD_PTE_R | VTD_PTE_W, &added), 0);
	assert_int_equal(vtd_pt_get(&pt, rw, 0x8000, VTD_PTE_R | VTD_PTE_W, &added), -EEXIST);
	assert_int_equal(vtd_pt_refs(&pt, rw), 1);

	/* the count saturates into a pin, never wraps to "unmapped" */
	for (i = 1; i < VTD_PTE_REF_MAX; i++)
		assert_int_equal(vtd_pt_get(&pt, rw, 0x7000, VTD_PTE_R | VTD_PTE_W, &added), 0);
	assert_int_equal(vtd_pt_refs(&pt, rw), VTD_PTE_REF_MAX);
	assert_int_equal(vtd_pt_get(&pt, rw, 0x7000, VTD_PTE_R | VTD_PTE_W, &added), 0);
	assert_int_equal(vtd_pt_refs(&pt, rw), 0);
	for (i = 0; i <= VTD_PTE_REF_MAX; i++) {
		assert_int_equal(vtd_pt_put(&pt, rw, &removed), 0);
		assert_false(removed);
	}
	assert_int_equal(walk(&pt, rw), 0x7000 | VTD_PTE_R | VTD_PTE_W);
	assert_int_equal(pt.mapped, 2);
	vtd_pt_clear(&pt);
	assert_int_equal(vtd_pt_put(&pt, rw, &removed), -ENOENT);	/* after a reset */
	vtd_pt_destroy(&pt);
}


/* vtd_pt_walk (the audit's view): every leaf once, in IOVA order, with its
 * rights and references masked; nothing else. */
struct seen {
	unsigned n;
	u64 iova[8], pte[8];
};

static void note_leaf(void *arg, u64 iova, u64 pte)
{
	struct seen *s = arg;

	if (s->n < 8) {
		s->iova[s->n] = iova;
		s->pte[s->n] = pte;
	}
	s->n++;
}

static void test_walk(void **state)
{
	int levels;

	(void)state;
	for (levels = 3; levels <= 4; levels++) {
		struct vtd_pt pt = new_pt(levels);
		struct seen s = { 0 };
		bool added;

		vtd_pt_walk(&pt, note_leaf, &s);
		assert_int_equal(s.n, 0);
		assert_int_equal(vtd_pt_map(&pt, vtd_iova(0x9000, 1, true), 0x9000, VTD_PTE_R | VTD_PTE_W, &added), 0);
		assert_int_equal(vtd_pt_get(&pt, vtd_iova(0x3000, 1, false), 0x3000, VTD_PTE_R, &added), 0);
		assert_int_equal(vtd_pt_get(&pt, vtd_iova(0x3000, 1, false), 0x3000, VTD_PTE_R, &added), 0);
		assert_int_equal(vtd_pt_map(&pt, vtd_iova(0x1ff000, 1, true), 0x1ff000, VTD_PTE_R | VTD_PTE_W,
					    &added), 0);
		assert_int_equal(vtd_pt_map(&pt, 0x200000, 0x200000, VTD_PTE_R | VTD_PTE_W, &added), 0);
		vtd_pt_walk(&pt, note_leaf, &s);
		assert_int_equal(s.n, 4);
		assert_int_equal(s.iova[0], 0x200000);	/* an identity (reserved-region) map */
		assert_int_equal(s.pte[0], 0x200000 | VTD_PTE_R | VTD_PTE_W);
		assert_int_equal(s.iova[1], VTD_WIN_RO + 0x3000);
		assert_int_equal(s.pte[1], 0x3000 | VTD_PTE_R);	/* two references, masked */
		assert_int_equal(s.iova[2], VTD_WIN_RW + 0x9000);
		assert_int_equal(s.pte[2], 0x9000 | VTD_PTE_R | VTD_PTE_W);
		assert_int_equal(s.iova[3], VTD_WIN_RW + 0x1ff000);
		assert_int_equal(s.pte[3], 0x1ff000 | VTD_PTE_R | VTD_PTE_W);
		vtd_pt_destroy(&pt);
	}
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_map_lookup_both_widths),
		T(test_bad_arguments),
		T(test_out_of_memory),
		T(test_many_pages),
		T(test_iova_windows),
		T(test_fault_decode),
		T(test_refcounts),
		T(test_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
