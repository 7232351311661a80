/* The virtio core's two recovery paths, driven in a real VMM on a virtio-rng
 * device and checked from outside its driver, through virtio.h alone:
 *
 *  - DEVICE_NEEDS_RESET: one buffer whose head descriptor breaks the ring's
 *    rules is published on the device's queue 0. The device must flag
 *    NEEDS_RESET and raise a config interrupt; the bus (virtio.c) resets it
 *    and probes it again, and the fresh driver fills its queue once more.
 *  - RING_RESET: with one buffer in flight, queue 0 alone is reset (the
 *    device stays DRIVER_OK), the buffer detached, the queue re-enabled and
 *    handed back to its driver (virtio_driver.vq_reset), which fills it again.
 *  - A DMA fault (selftest=iommu-fault, the device behind an enabled VT-d
 *    unit with ACCESS_PLATFORM): the test's buffer, which the device
 *    writes, is handed out at its read-only address (vtd_stray_next). The
 *    unit refuses the device's write and reports the fault; the bus resets
 *    the device and probes it again (a DMA-fault recovery), and the fresh
 *    driver fills its queue once more.
 *
 * The test's own buffer and token are used for the posted buffer, never the
 * driver's. "Delivered" means: queue 0 live, at least one completion since
 * the mark, and every descriptor free again (the driver stopped posting,
 * having what it wanted). A timer polls for it every SELFTEST_POLL_NS while
 * a test runs, and gives up after SELFTEST_DEADLINE_NS. */
#include <arch.h>

#include "drivers/virtio/virtio.h"
#include "debug/virtio_selftest.h"
#include "debug/virtq_fault.h"
#include "drivers/iommu/vtd.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/shell.h"
#include "kernel/time/time.h"
#include "lib/string.h"

#define SELFTEST_DEADLINE_NS (10 * NSEC_PER_SEC)
#define SELFTEST_POLL_NS (20 * NSEC_PER_MSEC)

enum selftest_phase {
	ST_IDLE,		/* armed, waiting for the boot entropy */
	ST_WAIT_RESET,		/* needs-reset: malformed buffer posted */
	ST_WAIT_REFILL,		/* ring-reset: queue re-enabled, refilling */
	ST_DONE,
};

static struct {
	enum virtio_selftest kind;
	enum selftest_phase phase;
	struct virtio_dev *vd;	/* the device under test */
	u32 resets_before;	/* vd->resets when the test started */
	u32 dma_resets_before;	/* vd->dma_fault_resets when the test started */
	u64 completions_mark;	/* queue 0's completions when a phase started */
	u64 deadline_ns;	/* 0 while no phase with a deadline runs */
	struct timer poll;
	u8 buf[64];		/* the test's own buffer */
} st;

static const char *const selftest_names[] = {
	[VIRTIO_SELFTEST_NONE] = "none",
	[VIRTIO_SELFTEST_NEEDS_RESET] = "virtio-needs-reset",
	[VIRTIO_SELFTEST_RING_RESET] = "virtio-ring-reset",
	[VIRTIO_SELFTEST_IOMMU_FAULT] = "iommu-fault",
};

/* Prints the self-test's one final line (why may be NULL); later calls do nothing. */
static void virtio_selftest_finish(const char *verdict, const char *why)
{
	if (st.phase == ST_DONE)
		return;
	st.phase = ST_DONE;
	timer_stop(&st.poll);
	if (why)
		kprintf("selftest: %s: %s (%s)\n", selftest_names[st.kind], verdict, why);
	else
		kprintf("selftest: %s: %s\n", selftest_names[st.kind], verdict);
}

/* Queue 0 of the device under test while it is bound and live, else NULL. */
static struct virtio_vq *virtio_selftest_queue(void)
{
	struct virtio_dev *d = st.vd;

	if (!d->driver || d->nvqs == 0 || !d->vqs[0] || !d->vqs[0]->live)
		return NULL;
	return d->vqs[0];
}

/* The driver filled the queue since the mark and stopped posting. */
static bool virtio_selftest_delivered(const struct virtio_vq *q)
{
	return q->vq.stats.completions > st.completions_mark && virtq_num_free(&q->vq) == q->vq.num;
}

/* Posts the test's buffer on q and kicks. */
static int virtio_selftest_post(struct virtio_vq *q)
{
	struct virtq_sg in = { st.buf, sizeof st.buf };
	int err = virtq_add(&q->vq, NULL, 0, &in, 1, &st);

	if (err == 0)
		virtq_kick(&q->vq);
	return err;
}

static void virtio_selftest_start_needs_reset(struct virtio_vq *q)
{
	struct virtio_dev *d = st.vd;

	st.resets_before = d->resets;
	st.completions_mark = 0;	/* the re-probed device's new queue counts from 0 */
	kprintf("selftest: virtio-needs-reset: virtio%u queue %u: posting a malformed descriptor (%s)\n",
		d->index, q->index,
		q->vq.is_packed ? "packed: indirect table of odd length" : "split: next beyond the queue size");
	virtq_debug_corrupt_next(&q->vq);
	if (virtio_selftest_post(q) < 0) {
		virtio_selftest_finish("FAIL", "could not post the malformed buffer");
		return;
	}
	st.phase = ST_WAIT_RESET;
	st.deadline_ns = time_ns() + SELFTEST_DEADLINE_NS;
}

static void virtio_selftest_start_iommu_fault(struct virtio_vq *q)
{
	struct virtio_dev *d = st.vd;

	if (!d->dma) {
		kprintf("selftest: iommu-fault: virtio%u is not translated (no enabled VT-d unit covers it, or "
			"ACCESS_PLATFORM not negotiated)\n", d->index);
		virtio_selftest_finish("skipped", "the device is not behind a translating IOMMU");
		return;
	}
	st.resets_before = d->resets;
	st.dma_resets_before = d->dma_fault_resets;
	st.completions_mark = 0;	/* the re-probed device's new queue counts from 0 */
	kprintf("selftest: iommu-fault: virtio%u queue %u: handing the device a buffer it writes at its "
		"read-only address\n", d->index, q->index);
	vtd_stray_next();
	if (virtio_selftest_post(q) < 0) {
		virtio_selftest_finish("FAIL", "could not post the buffer");
		return;
	}
	st.phase = ST_WAIT_RESET;
	st.deadline_ns = time_ns() + SELFTEST_DEADLINE_NS;
}

static void virtio_selftest_start_ring_reset(struct virtio_vq *q)
{
	struct virtio_dev *d = st.vd;
	u64 detached;
	int err;

	if (!virtio_has(d, VIRTIO_F_RING_RESET)) {
		kprintf("selftest: virtio-ring-reset: virtio%u: RING_RESET not negotiated (device %s it)\n",
			d->index, (d->offered & VIRTIO_BIT(VIRTIO_F_RING_RESET)) ? "offers" : "does not offer");
		virtio_selftest_finish("skipped", "RING_RESET not negotiated");
		return;
	}
	if (!d->driver->vq_reset) {
		virtio_selftest_finish("FAIL", "the driver cannot refill a reset queue");
		return;
	}
	kprintf("selftest: virtio-ring-reset: virtio%u queue %u (%s ring): resetting with one buffer in flight\n",
		d->index, q->index, q->vq.is_packed ? "packed" : "split");
	if (virtio_selftest_post(q) < 0) {
		virtio_selftest_finish("FAIL", "could not post a buffer");
		return;
	}
	detached = q->vq.stats.detached;
	st.completions_mark = q->vq.stats.completions;
	st.phase = ST_WAIT_REFILL;
	st.deadline_ns = time_ns() + SELFTEST_DEADLINE_NS;
	err = virtio_reset_vq(q);	/* the driver posts again from its vq_reset */
	if (err < 0) {
		kprintf("selftest: virtio-ring-reset: virtio%u queue %u: reset failed (%d)\n", d->index,
			q->index, err);
		virtio_selftest_finish("FAIL", "queue reset failed");
		return;
	}
	detached = q->vq.stats.detached - detached;
	kprintf("selftest: virtio-ring-reset: virtio%u queue %u reset, %lu buffer%s detached, re-enabled\n",
		d->index, q->index, detached, detached == 1 ? "" : "s");
	if (detached != 1)
		virtio_selftest_finish("FAIL", "the in-flight buffer was not detached exactly once");
}

static void virtio_selftest_poll(struct timer *t, void *arg)
{
	struct virtio_vq *q = virtio_selftest_queue();
	struct virtio_dev *d = st.vd;

	if (st.phase == ST_DONE)
		return;
	if (st.deadline_ns && time_ns() >= st.deadline_ns) {
		virtio_selftest_finish("FAIL", st.phase == ST_WAIT_RESET ? "no reset and recovery within 10 s"
								  : "no entropy after the queue reset within 10 s");
		return;
	}
	switch (st.phase) {
	case ST_IDLE:
		if (!q || !virtio_selftest_delivered(q))
			break;
		if (st.kind == VIRTIO_SELFTEST_NEEDS_RESET)
			virtio_selftest_start_needs_reset(q);
		else if (st.kind == VIRTIO_SELFTEST_IOMMU_FAULT)
			virtio_selftest_start_iommu_fault(q);
		else
			virtio_selftest_start_ring_reset(q);
		break;
	case ST_WAIT_RESET:
		/* The new queue counts from 0; a malformed buffer that somehow
		 * completed leaves resets unchanged: wait for the deadline. */
		if (d->resets == st.resets_before || !q || !virtio_selftest_delivered(q))
			break;
		if (st.kind == VIRTIO_SELFTEST_IOMMU_FAULT) {
			u32 dma = d->dma_fault_resets - st.dma_resets_before;

			kprintf("selftest: iommu-fault: virtio%u recovered after %u reset%s, %u of them for a DMA "
				"fault\n", d->index, d->resets - st.resets_before,
				d->resets - st.resets_before == 1 ? "" : "s", dma);
			if (dma == 1 && d->resets - st.resets_before == 1)
				virtio_selftest_finish("pass", NULL);
			else
				virtio_selftest_finish("FAIL", dma ? "more than one reset"
								   : "reset, but not for a DMA fault");
			break;
		}
		kprintf("selftest: virtio-needs-reset: virtio%u recovered after %u reset%s\n", d->index,
			d->resets - st.resets_before, d->resets - st.resets_before == 1 ? "" : "s");
		if (d->resets - st.resets_before == 1)
			virtio_selftest_finish("pass", NULL);
		else
			virtio_selftest_finish("FAIL", "more than one reset");
		break;
	case ST_WAIT_REFILL:
		if (q && virtio_selftest_delivered(q))
			virtio_selftest_finish("pass", NULL);
		break;
	case ST_DONE:
		break;
	}
	if (st.phase != ST_DONE)
		timer_start(&st.poll, time_ns() + SELFTEST_POLL_NS);
}

int virtio_selftest(enum virtio_selftest kind)
{
	struct virtio_dev *d;

	if (kind == VIRTIO_SELFTEST_NONE)
		return 0;
	st.kind = kind;
	st.phase = ST_IDLE;
	st.completions_mark = 0;
	st.deadline_ns = 0;
	timer_init(&st.poll, virtio_selftest_poll, NULL);
	for (d = virtio_devices(); d; d = d->next)
		if (d->device_id == VIRTIO_ID_RNG && d->driver)
			break;
	if (!d) {
		virtio_selftest_finish("FAIL", "no virtio-rng device bound");
		return -ENODEV;
	}
	st.vd = d;
	kprintf("selftest: %s: armed on virtio%u; starts once it has delivered entropy\n", selftest_names[kind],
		d->index);
	timer_start(&st.poll, time_ns() + SELFTEST_POLL_NS);
	return 0;
}

int virtio_fault_corrupt_next(u16 device_id, u16 qidx)
{
	struct virtio_dev *d;

	for (d = virtio_devices(); d; d = d->next) {
		struct virtio_vq *q;

		if (d->device_id != device_id || !d->driver || d->broken || d->dead)
			continue;
		if (qidx >= d->nvqs || !(q = d->vqs[qidx]) || !q->live)
			return -EIO;
		virtq_debug_corrupt_next(&q->vq);
		return (int)d->index;
	}
	return -EIO;
}

/* `fault net-needs-reset` (debug only): the next receive buffer posted to the
 * first virtio-net device gets a malformed head descriptor, so the device
 * sets DEVICE_NEEDS_RESET once it reaches that buffer and the core resets
 * and probes the device again (receive, not transmit: see
 * virtio_fault_corrupt_next). */
static void virtio_selftest_cmd_fault(const char *what)
{
	int idx;

	if (strcmp(what, "net-needs-reset")) {
		kprintf("fault: unknown fault '%s' (known: net-needs-reset)\n", what);
		return;
	}
	idx = virtio_fault_corrupt_next(VIRTIO_ID_NET, 0);	/* 0: receive */
	if (idx < 0)
		kprintf("fault: net-needs-reset: no live virtio-net device\n");
	else
		kprintf("fault: net-needs-reset: virtio%d: the next receive buffer gets a malformed descriptor\n",
			idx);
}
SHELL_CMD(fault, .name = "fault", .fn = virtio_selftest_cmd_fault, .usage = "net-needs-reset", .debug = true,
	  .help = "malformed virtio-net rx buffer");
