/* virtio-rng (device id 4): one queue the device fills with random bytes.
 * vireo gathers RNG_WANT bytes at boot and mixes them into kernel/random.c.
 * The smallest complete virtio driver, and the template for a new one: a
 * table of ids, probe (state, queue, ready, first buffer), the queue's
 * interrupt deferring to loop work, remove, and a refill after a queue
 * reset. The core's recovery self-tests (debug/virtio_selftest.c) run on
 * this device from outside the driver. */
#include <arch.h>

#include "drivers/virtio/virtio.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"

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

struct vrng {
	struct virtio_dev *vd;
	struct virtio_vq *q;
	struct work work;
	u8 *buf;		/* RNG_BUF bytes on a DMA-only page of its own */
	u32 total;
	u32 empty;		/* zero-length completions so far */
	bool reported;
	bool stopped;		/* gave up on the device: posts nothing more */
};

static int rng_post(struct vrng *r)
{
	struct virtq_sg in = { r->buf, RNG_BUF };
	int err = virtq_add(&r->q->vq, NULL, 0, &in, 1, r);

	if (err == 0)
		virtq_kick(&r->q->vq);
	return err;
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
	/* Not inside r: the device may write only pages that hold nothing
	 * else (r has the work item's function pointer). */
	r->buf = dma_pages_alloc(1);
	if (!r->buf) {
		kfree(r);
		return -ENOMEM;
	}
	r->vd = d;
	work_init(&r->work, rng_poll, r);
	r->q = virtio_setup_vq(d, 0, 0, rng_irq, r);
	if (!r->q) {
		dma_pages_free(r->buf, 1);
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
		if (d->dead)
			virtio_keep_forever(r->buf, 1);
		else
			dma_pages_free(r->buf, 1);
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
		virtio_keep_forever(r->buf, 1);	/* may still be written */
	else
		dma_pages_free(r->buf, 1);
	kfree(r);		/* kernel memory: the device never had it */
}

/* The queue was reset and is empty: gather (and report) RNG_WANT bytes again. */
static void rng_vq_reset(struct virtio_vq *q)
{
	struct vrng *r = q->priv;

	r->total = 0;
	r->reported = false;
	if (!r->stopped && rng_post(r) < 0)
		kprintf("virtio%u: rng: could not post after the queue reset\n", r->vd->index);
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
	.vq_reset = rng_vq_reset,
};
VIRTIO_DRIVER(virtio_rng_driver);
