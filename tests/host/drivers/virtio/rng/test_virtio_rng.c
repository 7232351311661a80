/* drivers/virtio/rng/virtio_rng.c, unchanged, against the simulated device
 * (tests/host/simdev/simdev.h: its queue 0 filling every posted buffer at
 * once, as virtio-rng does) and the real virtio core: entropy is gathered, and a
 * device that completes every buffer at once with nothing in it cannot
 * keep the event loop re-posting (budgets per pass and in all), and a
 * posted buffer always has a wakeup coming, whenever the device fills it
 * (every interleaving of two device actions with the driver's steps).
 * The DMA policy through the real core: a device on a function an IOMMU
 * confines (iommu=strict) is refused unless it got a domain. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/mm/dma.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/simdev/simdev.h"
#include <arch.h>

static struct simdev dev;

/* A strict IOMMU driver that confines the function at &confined_fn and
 * has no domain to give (every attach fails): the refusals' paths. Other
 * functions are not its. */
static int confined_fn, other_fn;
static int attach_calls;

static struct dma_domain *strict_attach(struct pci_dev *p, void (*fault)(void *arg), void *arg)
{
	(void)p;
	(void)fault;
	(void)arg;
	attach_calls++;
	return NULL;
}

static bool strict_confines(struct pci_dev *p)
{
	return p == (struct pci_dev *)&confined_fn;
}

DMA_IOMMU(strict, .name = "strict", .attach = strict_attach, .confines = strict_confines);

static void bring_up(u32 len)
{
	sd_init(&dev, VIRTIO_ID_RNG, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);	/* no config space */
	dev.qmax[0] = 8;
	dev.auto_fill = true;
	dev.auto_len = len;
	assert_int_equal(hk_probe(&dev.vd), 0);
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	assert_int_equal(dev.auto_done, 1);	/* the probe's buffer, at once */
}

static int teardown(void **state)
{
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	hk_run(100000);
	hk_loop_reset();
	assert_int_equal(sd_errors(&dev), 0);
	sd_fini(&dev);
	hk_free_kept();
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	return 0;
}

static void test_rng_gathers(void **state)
{
	u64 before = hk_entropy_bytes();

	bring_up(64);
	sd_irq(&dev, 0, true);
	assert_true(hk_run(100000) < 100000);
	assert_int_equal(hk_entropy_bytes() - before, 256);
	assert_int_equal(dev.auto_done, 4);
	assert_true(hk_log_contains("256 bytes of entropy"));
}

/* What the device may write (the posted buffer, the used ring) is on
 * DMA-only pages, never inside the driver's struct with its work item
 * (issue 30). */
static void test_rng_buffer_on_dma_page(void **state)
{
	struct fake_dev *q = &dev.q[0];

	(void)state;
	sd_init(&dev, VIRTIO_ID_RNG, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);
	dev.qmax[0] = 8;
	assert_int_equal(hk_probe(&dev.vd), 0);
	assert_int_equal(sd_posted(&dev, 0), 1);
	assert_true(q->pending[0].nseg == 1 && q->pending[0].seg[0].write);
	assert_true(dma_page_only((u64)(uintptr_t)q->pending[0].seg[0].va));
	assert_true(dma_page_only((u64)(uintptr_t)q->used));
}

/* Zero-length completions, each re-posted buffer completed again at once:
 * the driver gives the device up after a fixed number, logged. */
static void test_rng_empty_completions_bounded(void **state)
{
	bring_up(0);
	sd_irq(&dev, 0, true);
	assert_true(hk_run(100000) < 100);
	assert_true(dev.auto_done <= 8);
	assert_true(hk_log_contains("empty completions; device given up"));
	/* Further interrupts change nothing. */
	sd_irq(&dev, 0, true);
	hk_run(100000);
	assert_true(dev.auto_done <= 8);
}

/* One byte per completion: 256 completions, taken at most 16 per pass. */
static void test_rng_pass_budget(void **state)
{
	u64 before = hk_entropy_bytes();
	unsigned passes;

	bring_up(1);
	sd_irq(&dev, 0, true);
	assert_int_equal(hk_run(1), 1);
	assert_true(dev.auto_done <= 1 + 16);
	passes = 1 + hk_run(100000);
	assert_true(passes >= 256 / 16);
	assert_int_equal(hk_entropy_bytes() - before, 256);
	assert_int_equal(dev.auto_done, 256);
}

/* ---- the wakeup rule (issue 37's audit) ----
 *
 * While a buffer is posted, an interrupt is pending or armed for it (the
 * device raises one when it fills it: sd_wakeup_due) or the poll is
 * queued. Checked after every step of a script of fills and late
 * interrupts, with up to two device actions (fill the posted buffer,
 * deliver the interrupt it decided on) at every step boundary and every
 * full barrier of the driver (shim_mb_hook: between re-enabling the
 * callback and re-reading the used ring), split and packed, with and
 * without the event index. At the end the device fills whatever is posted,
 * raising only the interrupts it decides on: RNG_WANT bytes gathered,
 * nothing left posted. */
enum { R_FILL, R_IRQ, R_N };

static struct {
	bool on, in_hook;
	unsigned points, next, n, at[2], act[2];
} rs;

static void r_fill(void)
{
	static const u8 bytes[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

	sd_raw_write(&dev, 0, bytes, sizeof bytes);	/* -1 when none is posted */
}

static void r_point(void)
{
	if (!rs.on || rs.in_hook)
		return;
	rs.in_hook = true;
	while (rs.next < rs.n && rs.at[rs.next] == rs.points) {
		if (rs.act[rs.next++] == R_FILL)
			r_fill();
		else
			sd_irq(&dev, 0, false);
	}
	rs.points++;
	rs.in_hook = false;
}

static unsigned r_script(u64 features, unsigned n, const unsigned *at, const unsigned *act)
{
	static const struct {
		bool fill, irq;
	} steps[] = {
		{ true, false }, { false, true }, { true, true }, { true, false },
		{ false, false }, { false, true }, { true, true }, { true, false },
	};
	u64 before = hk_entropy_bytes();
	const struct virtq *q;
	unsigned points;

	sd_init(&dev, VIRTIO_ID_RNG, features, 0);	/* no config space */
	dev.qmax[0] = 8;
	dev.raw = true;	/* the script fills buffers itself */
	assert_int_equal(hk_probe(&dev.vd), 0);
	q = &dev.vd.vqs[0]->vq;
	rs = (typeof(rs)){ .on = true, .n = n };
	for (unsigned i = 0; i < n; i++) {
		rs.at[i] = at[i];
		rs.act[i] = act[i];
	}
	shim_mb_hook = r_point;
	for (unsigned k = 0; k < ARRAY_SIZE(steps); k++) {
		r_point();
		if (steps[k].fill)
			r_fill();
		if (steps[k].irq)
			sd_irq(&dev, 0, false);
		assert_true(hk_run(100000) < 100000);
		if (q->inflight && !hk_work_pending() && !sd_wakeup_due(&dev, 0))
			fail_msg("features %#llx, %u actions (first at %u), after step %u: a buffer posted, no interrupt "
				 "pending or armed, no poll queued", (unsigned long long)features, n, n ? at[0] : 0, k + 1);
	}
	r_point();
	shim_mb_hook = NULL;
	points = rs.points;
	rs.on = false;
	for (unsigned r = 0; r < 40; r++) {
		r_fill();
		sd_irq(&dev, 0, false);
		assert_true(hk_run(100000) < 100000);
	}
	if (hk_entropy_bytes() - before != 256 || q->inflight)
		fail_msg("features %#llx, %u actions (first at %u): device idle, %llu bytes gathered, %u posted",
			 (unsigned long long)features, n, n ? at[0] : 0,
			 (unsigned long long)(hk_entropy_bytes() - before), q->inflight);
	teardown(NULL);
	return points;
}

static void test_rng_wakeup_interleavings(void **state)
{
	static const u64 configs[] = {
		VIRTIO_BIT(VIRTIO_F_VERSION_1),
		VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_EVENT_IDX),
		VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_PACKED) | VIRTIO_BIT(VIRTIO_F_EVENT_IDX),
		VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_RING_PACKED),
	};
	unsigned runs = 0;

	for (unsigned c = 0; c < ARRAY_SIZE(configs); c++) {
		unsigned n0 = r_script(configs[c], 0, NULL, NULL);

		for (unsigned a1 = 0; a1 < n0; a1++) {
			for (unsigned k1 = 0; k1 < R_N; k1++) {
				unsigned at[2] = { a1, 0 }, act[2] = { k1, 0 };
				unsigned n1 = r_script(configs[c], 1, at, act);

				runs++;
				for (unsigned a2 = a1; a2 < n1; a2++) {
					for (unsigned k2 = 0; k2 < R_N; k2++) {
						at[1] = a2;
						act[1] = k2;
						r_script(configs[c], 2, at, act);
						runs++;
					}
				}
			}
		}
	}
	print_message("rng: %u interleavings\n", runs);
}

/* Confined, no ACCESS_PLATFORM: refused before any queue exists, FAILED,
 * one line naming the device and how to allow it; the device is given
 * nothing to write. */
static void test_rng_refused_confined_without_access_platform(void **state)
{
	(void)state;
	hk_log_reset();
	sd_init(&dev, VIRTIO_ID_RNG, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);
	dev.vd.pci = (struct pci_dev *)&confined_fn;
	dev.qmax[0] = 8;
	assert_int_equal(hk_probe(&dev.vd), -EPERM);
	assert_true(dev.status & VIRTIO_S_FAILED);
	assert_false(dev.status & VIRTIO_S_DRIVER_OK);
	assert_null(dev.vd.driver);
	assert_int_equal(sd_posted(&dev, 0), 0);
	assert_int_equal(attach_calls, 0);	/* nothing to attach without ACCESS_PLATFORM */
	assert_true(hk_log_contains("virtio-rng (") && hk_log_contains(") refused: an IOMMU confines it "
		"(iommu=strict) but it does not offer ACCESS_PLATFORM; to drive it, boot with iommu=permissive "
		"or give the QEMU device iommu_platform=on"));
}

/* Confined, ACCESS_PLATFORM negotiated, but no domain: refused too, never
 * driven on the physical addresses the unit blocks. */
static void test_rng_refused_confined_without_domain(void **state)
{
	(void)state;
	hk_log_reset();
	attach_calls = 0;
	sd_init(&dev, VIRTIO_ID_RNG, VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM), 0);
	dev.vd.pci = (struct pci_dev *)&confined_fn;
	dev.qmax[0] = 8;
	assert_int_equal(hk_probe(&dev.vd), -EPERM);
	assert_int_equal(attach_calls, 1);
	assert_true(dev.status & VIRTIO_S_FAILED);
	assert_int_equal(sd_posted(&dev, 0), 0);
	assert_true(hk_log_contains("no IOMMU domain is left for it; it stays blocked"));
}

/* A function no IOMMU confines (permissive, or no unit covers it): driven
 * on identity addresses without ACCESS_PLATFORM, as before. */
static void test_rng_driven_unconfined_without_access_platform(void **state)
{
	(void)state;
	hk_log_reset();
	sd_init(&dev, VIRTIO_ID_RNG, VIRTIO_BIT(VIRTIO_F_VERSION_1), 0);
	dev.vd.pci = (struct pci_dev *)&other_fn;
	dev.qmax[0] = 8;
	assert_int_equal(hk_probe(&dev.vd), 0);
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	assert_int_equal(sd_posted(&dev, 0), 1);
	assert_false(hk_log_contains("refused"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_rng_gathers, teardown),
		cmocka_unit_test_teardown(test_rng_buffer_on_dma_page, teardown),
		cmocka_unit_test_teardown(test_rng_empty_completions_bounded, teardown),
		cmocka_unit_test_teardown(test_rng_pass_budget, teardown),
		cmocka_unit_test(test_rng_wakeup_interleavings),
		cmocka_unit_test_teardown(test_rng_refused_confined_without_access_platform, teardown),
		cmocka_unit_test_teardown(test_rng_refused_confined_without_domain, teardown),
		cmocka_unit_test_teardown(test_rng_driven_unconfined_without_access_platform, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
