/*
 * The virtio core's device life cycle, apart from the device registry so
 * the host harness (tests/host/simdev) runs this very code: the status
 * walk of spec §3.1.1 (reset, ACKNOWLEDGE, DRIVER, features, FEATURES_OK
 * re-read, queues, DRIVER_OK, or FAILED unwinding in reverse), queue setup,
 * config reads that retry on a generation change, and teardown.
 *
 * Teardown order (as Linux keeps queues "broken" until ready and frees IRQs
 * first): queues stop calling into their driver and the interrupts are torn
 * down, then the device is reset, then driver state and queues are freed.
 * A reset that does not read back 0 within VIRTIO_RESET_TIMEOUT_NS (1 ms,
 * the transport waits) leaves the device FAILED and everything it may still
 * write kept, never freed.
 */
#include <arch.h>

#include "drivers/virtio/virtio.h"
#include "drivers/virtio/virtio_core.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "lib/string.h"

static u64 feature_mask = ~0ULL;
CMDLINE_PARAM(features, .key = "virtio.features", .type = CMDLINE_HEX, .dst = &feature_mask,
	      .def = "0xffffffffffffffff", .values = "hex mask",
	      .help = "virtio feature bits that may be negotiated (live-migration lock-down); "
		      "a device that cannot work without a masked bit is marked FAILED");

static const struct virtio_feature_name core_names[] = {
	{ VIRTIO_F_NOTIFY_ON_EMPTY, "NOTIFY_ON_EMPTY" },
	{ VIRTIO_F_ANY_LAYOUT, "ANY_LAYOUT" },
	{ VIRTIO_F_INDIRECT_DESC, "INDIRECT_DESC" },
	{ VIRTIO_F_EVENT_IDX, "EVENT_IDX" },
	{ VIRTIO_F_VERSION_1, "VERSION_1" },
	{ VIRTIO_F_ACCESS_PLATFORM, "ACCESS_PLATFORM" },
	{ VIRTIO_F_RING_PACKED, "RING_PACKED" },
	{ VIRTIO_F_IN_ORDER, "IN_ORDER" },
	{ VIRTIO_F_ORDER_PLATFORM, "ORDER_PLATFORM" },
	{ VIRTIO_F_SR_IOV, "SR_IOV" },
	{ VIRTIO_F_NOTIFICATION_DATA, "NOTIFICATION_DATA" },
	{ VIRTIO_F_NOTIF_CONFIG_DATA, "NOTIF_CONFIG_DATA" },
	{ VIRTIO_F_RING_RESET, "RING_RESET" },
	{ 0, NULL },
};

const char *virtio_status_name(u8 status, char *buf, size_t size)
{
	static const char *const names[8] = { "ACKNOWLEDGE", "DRIVER", "DRIVER_OK", "FEATURES_OK",
					      "bit4", "bit5", "DEVICE_NEEDS_RESET", "FAILED" };
	size_t n = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < 8; i++) {
		if (!(status & (1u << i)))
			continue;
		if (n && n + 1 < size)
			buf[n++] = '|';
		n += strlcpy(buf + n, names[i], n < size ? size - n : 0);
		if (n >= size)
			n = size - 1;
	}
	if (n == 0)
		strlcpy(buf, "0", size);
	return buf;
}

static void virtio_core_add_status(struct virtio_dev *d, u8 bits)
{
	d->ops->set_status(d, d->ops->get_status(d) | bits);
}

static const char *virtio_feature_name(const struct virtio_feature_name *t, int bit)
{
	for (; t && t->name; t++)
		if (t->bit == bit)
			return t->name;
	return NULL;
}

static void virtio_core_print_features(struct virtio_dev *d)
{
	const struct virtio_feature_name *dev_names = d->driver ? d->driver->feature_names : NULL;
	char line[512];
	size_t n = 0;
	int b;

	for (b = 0; b < 64; b++) {
		const char *name;
		char tmp[8];

		if (!((d->features >> b) & 1))
			continue;
		name = virtio_feature_name(core_names, b);
		if (!name)
			name = virtio_feature_name(dev_names, b);
		if (!name) {
			tmp[0] = 'b';
			tmp[1] = 'i';
			tmp[2] = 't';
			tmp[3] = (char)('0' + b / 10);
			tmp[4] = (char)('0' + b % 10);
			tmp[5] = '\0';
			name = tmp;
		}
		if (n + strlen(name) + 2 >= sizeof line)
			break;
		line[n++] = ' ';
		n += strlcpy(line + n, name, sizeof line - n);
	}
	line[n] = '\0';
	kprintf("virtio%u: features%s\n", d->index, n ? line : " none");
}

/* §3.1.1 steps 4-6: read offered features, write the subset we take,
 * set FEATURES_OK and read it back. */
static int virtio_core_negotiate(struct virtio_dev *d, const struct virtio_driver *drv)
{
	u64 want;

	d->offered = d->ops->get_features(d);
	want = (drv->features | VIRTIO_TRANSPORT_FEATURES) & d->offered & feature_mask;
	if (drv->features_fixup)
		want = drv->features_fixup(want);
	if (d->modern && !(want & VIRTIO_BIT(VIRTIO_F_VERSION_1))) {
		kprintf("virtio%u: VERSION_1 is %s; this modern device cannot be driven\n", d->index,
			(d->offered & VIRTIO_BIT(VIRTIO_F_VERSION_1)) ? "locked out by virtio.features" : "not offered");
		return -ENOTSUP;
	}
	if (!d->modern)
		want &= 0xffffffffULL;	/* legacy: 32 feature bits, no VERSION_1 */
	if ((d->offered & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM)) && !(want & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM)))
		kprintf("virtio%u: ACCESS_PLATFORM offered but locked out; the device may refuse\n", d->index);
	d->ops->set_features(d, want);
	d->features = want;
	if (!d->modern)
		return 0;	/* legacy devices have no FEATURES_OK handshake */
	virtio_core_add_status(d, VIRTIO_S_FEATURES_OK);
	if (!(d->ops->get_status(d) & VIRTIO_S_FEATURES_OK)) {
		kprintf("virtio%u: device refused features %#lx\n", d->index, want);
		return -ENODEV;
	}
	return 0;
}

static void virtio_core_free_vqs(struct virtio_dev *d)
{
	u16 i;

	for (i = 0; i < VIRTIO_MAX_VQS; i++) {
		struct virtio_vq *q = d->vqs[i];

		if (!q)
			continue;
		/* The shadow state (priv_mem) is ours alone; the rings are
		 * the device's to write until a reset completes. */
		if (d->dead)
			virtio_keep_forever(q->ring_mem, q->ring_pages);
		else if (q->ring_mem)
			dma_pages_free(q->ring_mem, q->ring_pages);
		kfree(q->priv_mem);
		kfree(q);
		d->vqs[i] = NULL;
	}
	d->nvqs = 0;
}

void virtio_quiesce(struct virtio_dev *d)
{
	u16 i;

	for (i = 0; i < VIRTIO_MAX_VQS; i++) {
		struct virtio_vq *q = d->vqs[i];

		if (!q || !q->live)
			continue;	/* never set up, or already quiet */
		q->live = false;	/* an interrupt on its way calls nothing */
		virtq_disable_cb(&q->vq);
	}
	if (d->irq_on) {
		d->ops->irq_teardown(d);
		d->irq_on = false;
	}
}

/* Writes 0 and checks it reads back (the transport waits, bounded by
 * VIRTIO_RESET_TIMEOUT_NS). Returns 0, or -ETIMEDOUT with the device
 * marked dead: FAILED, never probed again, its memory kept. */
static int virtio_core_reset_device(struct virtio_dev *d)
{
	u8 status;

	d->ops->set_status(d, 0);
	status = d->ops->get_status(d);
	if (status == 0)
		return 0;
	if (!d->dead)
		kprintf("virtio%u: reset did not complete (status %#x); device left FAILED, "
			"its rings and buffers kept, not freed\n", d->index, status);
	d->dead = true;
	d->ops->set_status(d, status | VIRTIO_S_FAILED);
	return -ETIMEDOUT;
}

static void virtio_core_dma_fault(void *arg);

/* The one console line for a device the DMA policy refuses (dma_verdict):
 * which device, why, and how to allow it. */
__cold static void virtio_core_refuse(struct virtio_dev *d, const struct virtio_driver *drv, enum dma_verdict v)
{
	kprintf("virtio%u: %s (%s) refused: an IOMMU confines it (iommu=strict) but %s\n", d->index, drv->name,
		d->ops->describe(d),
		v == DMA_REFUSE_NOT_OFFERED ? "it does not offer ACCESS_PLATFORM; to drive it, boot with "
					      "iommu=permissive or give the QEMU device iommu_platform=on" :
		v == DMA_REFUSE_LOCKED_OUT ? "virtio.features masks ACCESS_PLATFORM (bit 33); unmask it or boot "
					     "with iommu=permissive" :
		"no IOMMU domain is left for it; it stays blocked");
}

__cold int virtio_core_probe(struct virtio_dev *d, const struct virtio_driver *drv)
{
	char st[96];
	int err;

	if (d->dead)
		return -EIO;
	d->driver = drv;
	d->broken = false;
	err = virtio_core_reset_device(d);						/* step 1: reset */
	if (err)
		goto fail;
	virtio_core_add_status(d, VIRTIO_S_ACKNOWLEDGE);				/* step 2 */
	virtio_core_add_status(d, VIRTIO_S_DRIVER);					/* step 3 */
	err = d->ops->irq_setup(d);	/* before config reads: legacy layout depends on MSI-X */
	if (err)
		goto fail;
	d->irq_on = true;
	err = virtio_core_negotiate(d, drv);					/* steps 4-6 */
	if (err)
		goto fail_irq;
	/* Before any queue exists: with ACCESS_PLATFORM the device gets a
	 * translated domain of its own from the IOMMU driver that covers it
	 * (the DMA seam, kernel/mm/dma.h); without it, identity addresses,
	 * unless an IOMMU confines the function (iommu=strict), which blocks
	 * them: then the device is refused, FAILED and never driven. */
	if (!d->dma && d->pci && virtio_has(d, VIRTIO_F_ACCESS_PLATFORM))
		d->dma = dma_attach(d->pci, virtio_core_dma_fault, d);
	if (d->pci) {
		enum dma_verdict v = dma_verdict(dma_confined(d->pci),
						 d->offered & VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM),
						 virtio_has(d, VIRTIO_F_ACCESS_PLATFORM), d->dma != NULL);

		if (v != DMA_DRIVE) {
			virtio_core_refuse(d, drv, v);
			err = -EPERM;
			goto fail_irq;
		}
	}
	err = drv->probe(d);						/* step 7 */
	if (err)
		goto fail_vqs;
	if (!(d->ops->get_status(d) & VIRTIO_S_DRIVER_OK))
		virtio_device_ready(d);					/* step 8 */
	kprintf("virtio%u: %s driver bound, status %s\n", d->index, drv->name,
		virtio_status_name(d->ops->get_status(d), st, sizeof st));
	virtio_core_print_features(d);
	return 0;

fail_vqs:
	/* The driver quiesced before freeing its state (virtio_quiesce); a
	 * driver that did not is covered here, before the reset. */
	virtio_quiesce(d);
	virtio_core_reset_device(d);
	if (!d->dead)
		dma_clear(d->dma);	/* the rings and buffers are freed next */
	virtio_core_free_vqs(d);
fail_irq:
	virtio_quiesce(d);
fail:
	virtio_core_add_status(d, VIRTIO_S_FAILED);
	kprintf("virtio%u: %s probe failed (%d), status %s\n", d->index, drv->name, err,
		virtio_status_name(d->ops->get_status(d), st, sizeof st));
	d->driver = NULL;
	return err;
}

void virtio_core_remove(struct virtio_dev *d)
{
	/* Nothing calls into the driver from here on, then the device stops
	 * touching our memory (or is found unable to: dead). */
	virtio_quiesce(d);
	virtio_core_reset_device(d);
	/* Reset done: the device no longer uses what it was given, and its
	 * memory is freed next. A dead device keeps its mappings, like its
	 * memory (virtio_keep_forever). */
	if (!d->dead)
		dma_clear(d->dma);
	if (d->driver && d->driver->remove)
		d->driver->remove(d);
	virtio_core_free_vqs(d);
	d->driver = NULL;
}

int virtio_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 len)
{
	u8 *p = buf;
	u8 gen;
	int tries = 0, err = 0;
	u32 i;

	do {
		gen = d->ops->config_generation(d);
		for (i = 0; i < len && !err;) {
			u32 w = (len - i >= 4 && !((off + i) & 3)) ? 4 : (len - i >= 2 && !((off + i) & 1)) ? 2 : 1;

			err = d->ops->cfg_read(d, off + i, p + i, w);
			i += w;
		}
	} while (!err && gen != d->ops->config_generation(d) && ++tries < VIRTIO_CFG_TRIES);
	if (err == 0 && tries == VIRTIO_CFG_TRIES) {
		kprintf("virtio%u: config at %u changed on each of %d reads; giving up\n", d->index, off,
			VIRTIO_CFG_TRIES);
		err = -EBUSY;
	}
	return err;
}

int virtio_cfg_read16(struct virtio_dev *d, u32 off, u16 *v)
{
	return virtio_cfg_read(d, off, v, 2);
}

int virtio_cfg_read32(struct virtio_dev *d, u32 off, u32 *v)
{
	return virtio_cfg_read(d, off, v, 4);
}

int virtio_cfg_write32(struct virtio_dev *d, u32 off, u32 v)
{
	return d->ops->cfg_write(d, off, &v, 4);
}

/* The unit reported a fault for this device (interrupt context): reset and
 * probe it again from the loop, like DEVICE_NEEDS_RESET (virtio.c). */
static void virtio_core_dma_fault(void *arg)
{
	struct virtio_dev *d = arg;

	d->dma_fault = true;
	virtio_config_interrupt(d);
}

static void virtio_core_vq_notify(void *ctx, u32 data)
{
	struct virtio_vq *q = ctx;

	q->vdev->ops->notify(q, data);
}

#define VIRTIO_DIRECT_MAX 4

__cold static struct virtio_vq *virtio_core_setup_vq(struct virtio_dev *d, u16 idx, u16 num_hint,
					      void (*callback)(struct virtio_vq *q), void *priv,
					      bool transient)
{
	struct virtq_config cfg = { 0 };
	struct virtio_vq *q;
	size_t ring_bytes, priv_bytes;
	u16 max = d->ops->queue_max(d, idx), num;

	if (idx >= VIRTIO_MAX_VQS || max == 0 || d->vqs[idx]) {
		kprintf("virtio%u: queue %u unavailable (device max %u)\n", d->index, idx, max);
		return NULL;
	}
	cfg.packed = virtio_has(d, VIRTIO_F_RING_PACKED);
	if (d->ops->queue_size_fixed(d)) {
		num = max;	/* legacy: the device's size or nothing */
	} else {
		num = MIN(max, (u16)VIRTQ_MAX_SIZE);
		if (num_hint)
			num = MIN(num, num_hint);
		if (!cfg.packed)
			while (num & (num - 1))
				num &= (u16)(num - 1);	/* split rings: power of two */
	}
	cfg.num = num;
	cfg.index = idx;
	cfg.event_idx = virtio_has(d, VIRTIO_F_EVENT_IDX);
	cfg.indirect = virtio_has(d, VIRTIO_F_INDIRECT_DESC);
	cfg.in_order = virtio_has(d, VIRTIO_F_IN_ORDER);
	cfg.notification_data = virtio_has(d, VIRTIO_F_NOTIFICATION_DATA);
	cfg.weak_barriers = !virtio_has(d, VIRTIO_F_ORDER_PLATFORM);
	cfg.dma = d->dma;
	/* Per-buffer unmapping only where there is something to unmap: with
	 * identity addresses (no domain) a transient queue would record each
	 * element and call dma_unmap for nothing, on the transmit path. */
	cfg.transient = transient && d->dma;
	/* Behind an IOMMU every descriptor the device reads is one translation,
	 * and a table costs one read more than the chain's own descriptors:
	 * short chains (virtio-net's header, packet headers and body) go
	 * direct while the ring has room. */
	cfg.direct_max = d->dma ? VIRTIO_DIRECT_MAX : 0;
	cfg.notify = virtio_core_vq_notify;
	if (virtq_mem_size(&cfg, &ring_bytes, &priv_bytes) < 0) {
		kprintf("virtio%u: queue %u size %u not usable (max %u)\n", d->index, idx, num, max);
		return NULL;
	}
	q = kzalloc(sizeof(*q));
	if (!q)
		return NULL;
	cfg.ctx = q;
	q->vdev = d;
	q->index = idx;
	q->num = num;
	q->callback = callback;
	q->priv = priv;
	q->vector = -1;
	q->msix_entry = 0xffff;
	q->ring_pages = ALIGN_UP(ring_bytes, (size_t)PAGE_SIZE) / PAGE_SIZE;
	q->ring_mem = dma_pages_alloc(q->ring_pages);
	q->priv_mem = kzalloc(priv_bytes);
	d->vqs[idx] = q;
	d->nvqs = MAX(d->nvqs, (u16)(idx + 1));
	if (!q->ring_mem || !q->priv_mem || virtq_init(&q->vq, &cfg, q->ring_mem, q->priv_mem) < 0 ||
	    d->ops->queue_setup(d, q) < 0) {
		kprintf("virtio%u: queue %u setup failed\n", d->index, idx);
		return NULL;	/* freed with the device's other queues on unwind */
	}
	q->live = true;
	return q;
}

struct virtio_vq *virtio_setup_vq(struct virtio_dev *d, u16 idx, u16 num_hint,
				  void (*callback)(struct virtio_vq *q), void *priv)
{
	return virtio_core_setup_vq(d, idx, num_hint, callback, priv, false);
}

struct virtio_vq *virtio_setup_vq_transient(struct virtio_dev *d, u16 idx, u16 num_hint,
					    void (*callback)(struct virtio_vq *q), void *priv)
{
	return virtio_core_setup_vq(d, idx, num_hint, callback, priv, true);
}

int virtio_reset_vq(struct virtio_vq *q)
{
	struct virtio_dev *d = q->vdev;
	int err;

	if (!virtio_has(d, VIRTIO_F_RING_RESET) || !d->ops->queue_reset)
		return -ENOTSUP;
	q->live = false;
	err = d->ops->queue_reset(d, q);
	if (err)
		return err;
	while (virtq_detach_unused(&q->vq))
		;
	virtq_reset_state(&q->vq);
	err = d->ops->queue_setup(d, q);
	q->live = err == 0;
	if (q->live && d->driver && d->driver->vq_reset)
		d->driver->vq_reset(q);
	return err;
}

void virtio_device_ready(struct virtio_dev *d)
{
	virtio_core_add_status(d, VIRTIO_S_DRIVER_OK);
}

void virtio_vq_interrupt(struct virtio_vq *q)
{
	q->interrupts++;
	if (q->live && q->callback)
		q->callback(q);
}
