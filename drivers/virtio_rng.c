/* virtio-rng (device id 4): one queue the device fills with random bytes.
 * vireo gathers RNG_WANT bytes at boot and mixes them into kernel/random.c;
 * it is also the smallest end-to-end exercise of the virtio core. */
#include <arch.h>

#include "drivers/virtio.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/random.h"

#define RNG_BUF 64
#define RNG_WANT 256

struct vrng {
	struct virtio_dev *vd;
	struct virtio_vq *q;
	struct work work;
	u8 buf[RNG_BUF];
	u32 total;
	bool reported;
};

static int rng_post(struct vrng *r)
{
	struct virtq_sg in = { r->buf, sizeof r->buf };
	int err = virtq_add(&r->q->vq, NULL, 0, &in, 1, r);

	if (err == 0)
		virtq_kick(&r->q->vq);
	return err;
}

static void rng_poll(void *arg)
{
	struct vrng *r = arg;
	u32 len;

	while (virtq_get(&r->q->vq, &len) == r) {
		random_add_entropy(r->buf, len);	/* len <= RNG_BUF: checked by virtq */
		r->total += len;
		if (r->total < RNG_WANT && rng_post(r) < 0)
			break;
	}
	if (virtq_is_broken(&r->q->vq)) {
		virtio_set_broken(r->vd, "rng queue broken");
		return;
	}
	if (r->total >= RNG_WANT && !r->reported) {
		r->reported = true;
		kprintf("virtio%u: rng: %u bytes of entropy mixed in (%s ring%s%s)\n", r->vd->index, r->total,
			r->q->vq.is_packed ? "packed" : "split", r->q->vq.event_idx ? ", event idx" : "",
			r->q->vector >= 0 ? ", msi-x" : "");
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
	return rng_post(r);
}

static void rng_remove(struct virtio_dev *d)
{
	kfree(d->priv);
	d->priv = NULL;
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
