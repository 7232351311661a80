/* virtio-rng (device id 4): one queue the device fills with random bytes.
 * vireo gathers RNG_WANT bytes at boot and mixes them into kernel/random.c;
 * it is also the smallest end-to-end exercise of the virtio core, and the
 * device the core's recovery self-tests run on (selftest=virtio-*). */
#include <arch.h>

#include "drivers/virtio.h"
#include "drivers/virtio_rng.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/random.h"
#include "kernel/time.h"

#define RNG_BUF 64
#define RNG_WANT 256
/* Device-driven loop budgets. A pass takes at most RNG_POLL_BUDGET
 * completions, then yields to the loop. Completions that bring nothing
 * (used length 0) are allowed RNG_EMPTY_MAX times in all, then the device
 * is given up on: a device that completes every buffer at once with no
 * bytes would otherwise keep the loop re-posting and re-kicking forever.
 * So the driver posts at most RNG_WANT (each completion that is not empty
 * brings >= 1 byte) + RNG_EMPTY_MAX buffers per RNG_WANT gathered. */
#define RNG_POLL_BUDGET 16
#define RNG_EMPTY_MAX 8
#define SELFTEST_DEADLINE_NS (5 * NSEC_PER_SEC)

struct vrng {
	struct virtio_dev *vd;
	struct virtio_vq *q;
	struct work work;
	u8 buf[RNG_BUF];
	u32 total;
	u32 empty;		/* zero-length completions so far */
	bool reported;
	bool stopped;		/* gave up on the device: posts nothing more */
};

/* Self-test state outlives struct vrng: a DEVICE_NEEDS_RESET recovery frees
 * the driver state and probes the device again. */
enum selftest_phase {
	ST_IDLE,	/* not armed, or waiting for the first entropy */
	ST_WAIT_RESET,	/* needs-reset: malformed buffer posted */
	ST_WAIT_ENTROPY,	/* ring-reset: queue re-enabled, refilling */
	ST_DONE,
};

static struct {
	enum vrng_selftest kind;
	enum selftest_phase phase;
	struct virtio_dev *vd;	/* the device under test */
	u32 resets_before;	/* vd->resets when the test started */
	struct timer deadline;
} st;

static const char *const selftest_names[] = {
	[VRNG_SELFTEST_NONE] = "none",
	[VRNG_SELFTEST_NEEDS_RESET] = "virtio-needs-reset",
	[VRNG_SELFTEST_RING_RESET] = "virtio-ring-reset",
};

static const struct virtio_driver virtio_rng_driver;

static int rng_post(struct vrng *r)
{
	struct virtq_sg in = { r->buf, sizeof r->buf };
	int err = virtq_add(&r->q->vq, NULL, 0, &in, 1, r);

	if (err == 0)
		virtq_kick(&r->q->vq);
	return err;
}

/* Prints the self-test's one final line (why may be NULL); later calls do nothing. */
static void selftest_finish(const char *verdict, const char *why)
{
	if (st.phase == ST_DONE)
		return;
	st.phase = ST_DONE;
	timer_stop(&st.deadline);
	if (why)
		kprintf("selftest: %s: %s (%s)\n", selftest_names[st.kind], verdict, why);
	else
		kprintf("selftest: %s: %s\n", selftest_names[st.kind], verdict);
}

static void selftest_timeout(struct timer *t, void *arg)
{
	selftest_finish("FAIL", st.phase == ST_WAIT_RESET ? "no reset and recovery within 5 s"
							  : "no entropy after the queue reset within 5 s");
}

/* DEVICE_NEEDS_RESET: publish one buffer whose head descriptor breaks the
 * ring's rules. The device must flag NEEDS_RESET and raise a config
 * interrupt; the core then resets the device and probes it again, and the
 * fresh driver state reports entropy once more (checked in selftest_step). */
static void start_needs_reset(struct vrng *r)
{
	struct virtio_dev *d = r->vd;
	int err;

	st.resets_before = d->resets;
	kprintf("selftest: virtio-needs-reset: virtio%u queue %u: posting a malformed descriptor (%s)\n",
		d->index, r->q->index,
		r->q->vq.is_packed ? "packed: indirect table of odd length" : "split: next beyond the queue size");
	virtq_debug_corrupt_next(&r->q->vq);
	err = rng_post(r);
	if (err < 0) {
		selftest_finish("FAIL", "could not post the malformed buffer");
		return;
	}
	st.phase = ST_WAIT_RESET;
	timer_start(&st.deadline, time_ns() + SELFTEST_DEADLINE_NS);
}

/* RING_RESET: with one buffer in flight, reset the queue alone (the device
 * stays DRIVER_OK), detach that buffer, forget the ring state, program and
 * re-enable the queue, then gather entropy through it again. */
static void start_ring_reset(struct vrng *r)
{
	struct virtio_dev *d = r->vd;
	u64 detached;
	int err;

	if (!virtio_has(d, VIRTIO_F_RING_RESET)) {
		kprintf("selftest: virtio-ring-reset: virtio%u: RING_RESET not negotiated (device %s it)\n",
			d->index, (d->offered & VIRTIO_BIT(VIRTIO_F_RING_RESET)) ? "offers" : "does not offer");
		selftest_finish("skipped", "RING_RESET not negotiated");
		return;
	}
	kprintf("selftest: virtio-ring-reset: virtio%u queue %u (%s ring): resetting with one buffer in flight\n",
		d->index, r->q->index, r->q->vq.is_packed ? "packed" : "split");
	if (rng_post(r) < 0) {
		selftest_finish("FAIL", "could not post a buffer");
		return;
	}
	detached = r->q->vq.stats.detached;
	err = virtio_reset_vq(r->q);
	if (err < 0) {
		kprintf("selftest: virtio-ring-reset: virtio%u queue %u: reset failed (%d)\n", d->index,
			r->q->index, err);
		selftest_finish("FAIL", "queue reset failed");
		return;
	}
	detached = r->q->vq.stats.detached - detached;
	kprintf("selftest: virtio-ring-reset: virtio%u queue %u reset, %lu buffer%s detached, re-enabled\n",
		d->index, r->q->index, detached, detached == 1 ? "" : "s");
	if (detached != 1) {
		selftest_finish("FAIL", "the in-flight buffer was not detached exactly once");
		return;
	}
	r->total = 0;
	r->reported = false;
	st.phase = ST_WAIT_ENTROPY;
	timer_start(&st.deadline, time_ns() + SELFTEST_DEADLINE_NS);
	if (rng_post(r) < 0)
		selftest_finish("FAIL", "could not post after the queue reset");
}

/* Runs from rng_poll each time r has its RNG_WANT bytes. */
static void selftest_step(struct vrng *r)
{
	if (st.kind == VRNG_SELFTEST_NONE || st.vd != r->vd)
		return;
	switch (st.phase) {
	case ST_IDLE:
		if (st.kind == VRNG_SELFTEST_NEEDS_RESET)
			start_needs_reset(r);
		else
			start_ring_reset(r);
		break;
	case ST_WAIT_RESET:
		if (r->vd->resets == st.resets_before)
			break;	/* the malformed buffer somehow completed: wait for the deadline */
		kprintf("selftest: virtio-needs-reset: virtio%u recovered after %u reset%s\n", r->vd->index,
			r->vd->resets - st.resets_before, r->vd->resets - st.resets_before == 1 ? "" : "s");
		if (r->vd->resets - st.resets_before == 1)
			selftest_finish("pass", NULL);
		else
			selftest_finish("FAIL", "more than one reset");
		break;
	case ST_WAIT_ENTROPY:
		selftest_finish("pass", NULL);
		break;
	case ST_DONE:
		break;
	}
}

static void rng_poll(void *arg)
{
	struct vrng *r = arg;
	unsigned n = 0;
	u32 len;

	if (r->stopped)
		return;
	while (n < RNG_POLL_BUDGET && virtq_get(&r->q->vq, &len) == r) {
		n++;
		random_add_entropy(r->buf, len);	/* len <= RNG_BUF: checked by virtq */
		r->total += len;
		if (len == 0 && ++r->empty >= RNG_EMPTY_MAX) {
			r->stopped = true;
			kprintf("virtio%u: rng: %u empty completions; device given up, %u bytes gathered\n",
				r->vd->index, r->empty, r->total);
			return;
		}
		if (r->total < RNG_WANT && rng_post(r) < 0)
			break;
	}
	if (virtq_is_broken(&r->q->vq)) {
		virtio_set_broken(r->vd, "rng queue broken");
		return;
	}
	if (n == RNG_POLL_BUDGET) {	/* more may be waiting: after other work */
		work_queue(&r->work);
		return;
	}
	if (r->total >= RNG_WANT) {
		if (!r->reported) {
			r->reported = true;
			kprintf("virtio%u: rng: %u bytes of entropy mixed in (%s ring%s%s)\n", r->vd->index,
				r->total, r->q->vq.is_packed ? "packed" : "split",
				r->q->vq.event_idx ? ", event idx" : "", r->q->vector >= 0 ? ", msi-x" : "");
		}
		selftest_step(r);
		return;
	}
	if (!virtq_enable_cb(&r->q->vq)) {
		virtq_disable_cb(&r->q->vq);
		work_queue(&r->work);
	}
}

static void rng_irq(struct virtio_vq *q)
{
	struct vrng *r = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&r->work);
}

static int rng_probe(struct virtio_dev *d)
{
	struct vrng *r = kzalloc(sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->vd = d;
	work_init(&r->work, rng_poll, r);
	r->q = virtio_setup_vq(d, 0, 0, rng_irq, r);
	if (!r->q) {
		kfree(r);
		return -EIO;
	}
	d->priv = r;
	virtio_device_ready(d);
	err = rng_post(r);
	if (err < 0) {
		/* Nothing posted; the queue is live: quiesce before r goes. */
		virtio_quiesce(d);
		work_cancel(&r->work);
		kfree(r);
		d->priv = NULL;
	}
	return err;
}

static void rng_remove(struct virtio_dev *d)
{
	struct vrng *r = d->priv;

	if (!r)
		return;
	work_cancel(&r->work);	/* an interrupt may have queued it */
	d->priv = NULL;
	if (d->dead)
		virtio_keep_forever(r, 0);	/* r->buf may still be written */
	else
		kfree(r);
}

int virtio_rng_selftest(enum vrng_selftest kind)
{
	struct virtio_dev *d;

	if (kind == VRNG_SELFTEST_NONE)
		return 0;
	st.kind = kind;
	st.phase = ST_IDLE;
	timer_init(&st.deadline, selftest_timeout, NULL);
	for (d = virtio_devices(); d; d = d->next)
		if (d->driver == &virtio_rng_driver && d->priv)
			break;
	if (!d) {
		selftest_finish("FAIL", "no virtio-rng device bound");
		return -ENODEV;
	}
	st.vd = d;
	kprintf("selftest: %s: armed on virtio%u; starts once it has delivered entropy\n", selftest_names[kind],
		d->index);
	if (((struct vrng *)d->priv)->reported)
		work_queue(&((struct vrng *)d->priv)->work);
	return 0;
}

static const struct virtio_device_id rng_ids[] = {
	{ VIRTIO_ID_RNG, VIRTIO_VENDOR_ANY },
	{ 0, 0 },
};

static const struct virtio_driver virtio_rng_driver = {
	.name = "virtio-rng",
	.ids = rng_ids,
	.features = 0,
	.probe = rng_probe,
	.remove = rng_remove,
};
VIRTIO_DRIVER(virtio_rng_driver);
