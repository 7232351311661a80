/* kernel/mm/dma.c, the DMA seam: identity without a domain, dma_attach
 * asking the IOMMU drivers of the dma_iommus linker set in turn (two
 * registered here), each call forwarded to the domain's ops with its flags,
 * and read-only image data mapped long-lived and never unmapped. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"

/* ---- what the seam stands on: the identity map and the image's rodata ---- */

static const char rodata[64] = "read-only image data";

dma_addr_t dma_phys(const void *va)
{
	return (dma_addr_t)(uintptr_t)va ^ 0x5000000000000000ull;
}

bool mm_in_rodata(const void *va, size_t len)
{
	const char *p = va;

	return p >= rodata && p < rodata + sizeof rodata && len <= (size_t)(rodata + sizeof rodata - p);
}

/* ---- a recording IOMMU driver ---- */

struct rec {
	struct dma_domain dom;
	int maps, unmaps, flushes, clears;
	unsigned last_flags;
	const void *last_va;
	size_t last_len;
};

static struct rec rec_a, rec_b;

static struct rec *rec_of(struct dma_domain *d)
{
	return (struct rec *)(void *)((char *)d - offsetof(struct rec, dom));
}

static dma_addr_t rec_map(struct dma_domain *d, const void *va, size_t len, unsigned flags)
{
	struct rec *r = rec_of(d);

	r->maps++;
	r->last_flags = flags;
	r->last_va = va;
	r->last_len = len;
	return 0x1000 + (dma_addr_t)r->maps;
}

static void rec_unmap(struct dma_domain *d, const void *va, size_t len, unsigned flags)
{
	struct rec *r = rec_of(d);

	r->unmaps++;
	r->last_flags = flags;
	r->last_va = va;
	r->last_len = len;
}

static void rec_flush(struct dma_domain *d)
{
	rec_of(d)->flushes++;
}

static void rec_clear(struct dma_domain *d)
{
	rec_of(d)->clears++;
}

static const struct dma_ops rec_ops = { .map = rec_map, .unmap = rec_unmap, .flush = rec_flush, .clear = rec_clear };

/* Two drivers: each takes the device whose address is its own tag; the
 * fault callback and its argument reach the one that takes it. */
static struct pci_dev *const dev_a = (struct pci_dev *)&rec_a, *const dev_b = (struct pci_dev *)&rec_b;
static void (*seen_fault)(void *);
static void *seen_arg;
static int asked;

static struct dma_domain *attach_a(struct pci_dev *p, void (*fault)(void *arg), void *arg)
{
	asked++;
	if (p != dev_a)
		return NULL;
	seen_fault = fault;
	seen_arg = arg;
	rec_a.dom.ops = &rec_ops;
	return &rec_a.dom;
}

static struct dma_domain *attach_b(struct pci_dev *p, void (*fault)(void *arg), void *arg)
{
	asked++;
	if (p != dev_b)
		return NULL;
	seen_fault = fault;
	seen_arg = arg;
	rec_b.dom.ops = &rec_ops;
	return &rec_b.dom;
}

/* b confines what it covers (strict); a confines nothing (no op). */
static int confines_asked;

static bool confines_b(struct pci_dev *p)
{
	confines_asked++;
	return p == dev_b;
}

DMA_IOMMU(a, .name = "a", .attach = attach_a);
DMA_IOMMU(b, .name = "b", .attach = attach_b, .confines = confines_b);

static void on_fault(void *arg)
{
	(void)arg;
}

static int reset(void **state)
{
	memset(&rec_a, 0, sizeof rec_a);
	memset(&rec_b, 0, sizeof rec_b);
	seen_fault = NULL;
	seen_arg = NULL;
	asked = 0;
	confines_asked = 0;
	return 0;
}

static void test_identity_without_domain(void **state)
{
	char buf[16] = "";

	assert_true(dma_map(NULL, buf, sizeof buf, DMA_WRITE | DMA_TRANSIENT) == dma_phys(buf));
	assert_true(dma_map(NULL, rodata, 8, 0) == dma_phys(rodata));
	dma_unmap(NULL, buf, sizeof buf, DMA_TRANSIENT);	/* nothing to do, and no crash */
	dma_flush(NULL);
	dma_clear(NULL);
	assert_int_equal(rec_a.maps + rec_a.unmaps + rec_a.flushes + rec_a.clears, 0);
}

static void test_attach_asks_each_driver(void **state)
{
	int arg;

	assert_ptr_equal(dma_attach(dev_b, on_fault, &arg), &rec_b.dom);
	assert_ptr_equal(seen_fault, on_fault);
	assert_ptr_equal(seen_arg, &arg);
	assert_ptr_equal(dma_attach(dev_a, on_fault, &arg), &rec_a.dom);
	asked = 0;
	assert_null(dma_attach((struct pci_dev *)&asked, on_fault, &arg));	/* no driver covers it */
	assert_int_equal(asked, 2);	/* both were asked */
}

static void test_ops_get_the_flags(void **state)
{
	char buf[32] = "";
	struct dma_domain *d = dma_attach(dev_a, on_fault, NULL);

	assert_true(dma_map(d, buf, 10, DMA_WRITE | DMA_TRANSIENT) == 0x1001);
	assert_int_equal(rec_a.last_flags, DMA_WRITE | DMA_TRANSIENT);
	assert_ptr_equal(rec_a.last_va, buf);
	assert_int_equal(rec_a.last_len, 10);
	assert_true(dma_map(d, buf, 32, 0) == 0x1002);	/* read-only, long-lived */
	assert_int_equal(rec_a.last_flags, 0);
	dma_unmap(d, buf, 10, DMA_WRITE | DMA_TRANSIENT);
	assert_int_equal(rec_a.unmaps, 1);
	assert_int_equal(rec_a.last_flags, DMA_WRITE | DMA_TRANSIENT);
	dma_flush(d);
	dma_clear(d);
	assert_int_equal(rec_a.flushes, 1);
	assert_int_equal(rec_a.clears, 1);
	assert_int_equal(rec_b.maps + rec_b.unmaps, 0);
}

/* Read-only image data goes out long-lived however it is asked for, and
 * its unmaps never reach the driver; memory beside it is not exempt. */
static void test_rodata_stays_mapped(void **state)
{
	char buf[8] = "";
	struct dma_domain *d = dma_attach(dev_a, on_fault, NULL);

	dma_map(d, rodata + 4, 16, DMA_TRANSIENT);
	assert_int_equal(rec_a.last_flags, 0);
	dma_unmap(d, rodata + 4, 16, DMA_TRANSIENT);
	assert_int_equal(rec_a.unmaps, 0);
	dma_map(d, rodata + 60, 8, DMA_TRANSIENT);	/* runs past its end */
	assert_int_equal(rec_a.last_flags, DMA_TRANSIENT);
	dma_map(d, buf, sizeof buf, DMA_TRANSIENT);
	assert_int_equal(rec_a.last_flags, DMA_TRANSIENT);
	dma_unmap(d, buf, sizeof buf, DMA_TRANSIENT);
	assert_int_equal(rec_a.unmaps, 1);
}

/* Confined when any driver says so; a driver without the op confines
 * nothing. */
static void test_confined_asks_each_driver(void **state)
{
	assert_true(dma_confined(dev_b));
	assert_false(dma_confined(dev_a));
	assert_false(dma_confined((struct pci_dev *)&asked));
	assert_int_equal(confines_asked, 3);
}

/* The policy table: every combination of the four inputs. */
static void test_verdict_table(void **state)
{
	for (int i = 0; i < 16; i++) {
		bool confined = i & 1, offered = i & 2, negotiated = i & 4, attached = i & 8;
		enum dma_verdict v = dma_verdict(confined, offered, negotiated, attached);

		if (!confined || attached)
			assert_int_equal(v, DMA_DRIVE);	/* permissive or uncovered: identity is fine */
		else if (!offered)
			assert_int_equal(v, DMA_REFUSE_NOT_OFFERED);
		else if (!negotiated)
			assert_int_equal(v, DMA_REFUSE_LOCKED_OUT);
		else
			assert_int_equal(v, DMA_REFUSE_NO_DOMAIN);
	}
	/* the cases the virtio core meets, spelled out */
	assert_int_equal(dma_verdict(true, false, false, false), DMA_REFUSE_NOT_OFFERED);	/* strict, no AP */
	assert_int_equal(dma_verdict(false, false, false, false), DMA_DRIVE);	/* permissive, no AP */
	assert_int_equal(dma_verdict(true, true, true, true), DMA_DRIVE);	/* strict, translated */
	assert_int_equal(dma_verdict(true, true, true, false), DMA_REFUSE_NO_DOMAIN);	/* domains ran out */
}

/* The readable half of the audit: a translated device given read access
 * to a page that is neither DMA-only nor image read-only data is counted
 * per page, at map time; writable maps are the table walk's, identity
 * devices nobody's (they reach all of memory anyway). */
static void test_readable_non_dma_counted(void **state)
{
	static char heap[3 * 4096] __attribute__((aligned(4096)));
	struct dma_domain *d = dma_attach(dev_a, on_fault, NULL);
	u8 *dp = dma_pages_alloc(2);
	u64 before = dma_ro_exposed();

	assert_non_null(dp);
	dma_map(d, dp + 100, 5000, DMA_TRANSIENT);	/* DMA-only: both pages */
	dma_map(d, rodata, 16, DMA_TRANSIENT);		/* the image's read-only data */
	dma_map(d, heap, 64, DMA_WRITE | DMA_TRANSIENT);
	dma_map(NULL, heap, 64, 0);
	assert_true(dma_ro_exposed() == before);
	dma_map(d, heap + 4000, 200, DMA_TRANSIENT);	/* straddles two heap pages */
	assert_true(dma_ro_exposed() == before + 2);
	dma_map(d, dp + 4000, 200, 0);			/* DMA-only run, across its pages */
	assert_true(dma_ro_exposed() == before + 2);
	dma_pages_free(dp, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_identity_without_domain, reset),
		cmocka_unit_test_setup(test_attach_asks_each_driver, reset),
		cmocka_unit_test_setup(test_ops_get_the_flags, reset),
		cmocka_unit_test_setup(test_rodata_stays_mapped, reset),
		cmocka_unit_test_setup(test_confined_asks_each_driver, reset),
		cmocka_unit_test_setup(test_verdict_table, reset),
		cmocka_unit_test_setup(test_readable_non_dma_counted, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
