/*
 * virtio over PCI: the modern transport (common/notify/ISR/device
 * capabilities, §4.1.4) and the legacy one (I/O BAR registers, §4.1.4.8)
 * behind one ops table. Registers only: rings belong to virtq.c. Interrupts
 * are MSI-X (one vector for config, one per queue while the table lasts),
 * else INTx through the IOAPIC, else a polling timer.
 */
#include <arch.h>

#include "drivers/pci/pci.h"
#include "drivers/virtio/virtio.h"
#include "drivers/virtio/virtio_pci_caps.h"
#include "drivers/virtio/virtio_pci_reg.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/string.h"
#include "kernel/time/time.h"

#define CC(field) offsetof(struct virtio_pci_common_cfg, field)
#define MAX_ENTRIES (VIRTIO_MAX_VQS + 1)
#define POLL_NS (1 * NSEC_PER_MSEC)

struct vpci;

struct vpci_entry {
	struct vpci *vp;
	u16 entry;
	int vector;
};

struct vpci {
	struct virtio_dev vdev;
	struct pci_dev *pci;
	/* modern */
	u64 common, isr, device, notify;
	u32 device_len, notify_len, notify_mult;
	struct virtio_pci_layout layout;
	/* legacy */
	u16 io;
	u32 io_len;
	/* interrupts */
	enum { IRQ_NONE, IRQ_MSIX, IRQ_INTX, IRQ_POLL } irq_mode;
	u16 msix_entries;
	struct vpci_entry ent[MAX_ENTRIES];
	int intx_vector;
	struct timer poll;
	char desc[40];
};

static struct vpci *virtio_pci_to_vp(struct virtio_dev *d)
{
	return (struct vpci *)d;	/* vdev is the first member */
}

/* ---- modern ---- */

static u8 virtio_pci_m_get_status(struct virtio_dev *d)
{
	return mmio_r8(virtio_pci_to_vp(d)->common + CC(device_status));
}

static void virtio_pci_m_set_status(struct virtio_dev *d, u8 s)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	int i;

	u64 deadline;

	mmio_w8(vp->common + CC(device_status), s);
	if (s != 0)
		return;
	/* §4.1.4.3.2: reset completes when status reads back 0. Bounded in
	 * time and in reads; the core checks the result (virtio_core.c). */
	deadline = time_ns() + VIRTIO_RESET_TIMEOUT_NS;
	for (i = 0; i < 100000 && mmio_r8(vp->common + CC(device_status)); i++) {
		if (time_ns() > deadline)
			break;
		pause();
	}
}

__cold static u64 virtio_pci_m_get_features(struct virtio_dev *d)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	u64 f;

	mmio_w32(vp->common + CC(device_feature_select), 0);
	f = mmio_r32(vp->common + CC(device_feature));
	mmio_w32(vp->common + CC(device_feature_select), 1);
	f |= (u64)mmio_r32(vp->common + CC(device_feature)) << 32;
	return f;
}

__cold static void virtio_pci_m_set_features(struct virtio_dev *d, u64 f)
{
	struct vpci *vp = virtio_pci_to_vp(d);

	mmio_w32(vp->common + CC(driver_feature_select), 0);
	mmio_w32(vp->common + CC(driver_feature), (u32)f);
	mmio_w32(vp->common + CC(driver_feature_select), 1);
	mmio_w32(vp->common + CC(driver_feature), (u32)(f >> 32));
}

static u8 virtio_pci_m_generation(struct virtio_dev *d)
{
	return mmio_r8(virtio_pci_to_vp(d)->common + CC(config_generation));
}

static int virtio_pci_m_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 w)
{
	struct vpci *vp = virtio_pci_to_vp(d);

	if (!vp->device)
		return -ERANGE;
	return mmio_window_read(vp->device, vp->device_len, off, buf, w);
}

static int virtio_pci_m_cfg_write(struct virtio_dev *d, u32 off, const void *buf, u32 w)
{
	struct vpci *vp = virtio_pci_to_vp(d);

	if (!vp->device)
		return -ERANGE;
	return mmio_window_write(vp->device, vp->device_len, off, buf, w);
}

__cold static u16 virtio_pci_m_queue_max(struct virtio_dev *d, u16 idx)
{
	struct vpci *vp = virtio_pci_to_vp(d);

	if (idx >= mmio_r16(vp->common + CC(num_queues)))
		return 0;
	mmio_w16(vp->common + CC(queue_select), idx);
	return mmio_r16(vp->common + CC(queue_size));
}

static bool virtio_pci_m_size_fixed(struct virtio_dev *d)
{
	return false;
}

__cold static int virtio_pci_m_queue_setup(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	dma_addr_t desc, drv, dev;
	u64 off;
	u16 noff;

	virtq_ring_addrs(&q->vq, &desc, &drv, &dev);
	mmio_w16(vp->common + CC(queue_select), q->index);
	mmio_w16(vp->common + CC(queue_size), q->num);
	if (q->msix_entry != 0xffff) {
		mmio_w16(vp->common + CC(queue_msix_vector), q->msix_entry);
		if (mmio_r16(vp->common + CC(queue_msix_vector)) != q->msix_entry) {
			kprintf("virtio%u: queue %u: device refused MSI-X entry %u\n", d->index, q->index,
				q->msix_entry);
			return -EIO;
		}
	}
	mmio_w32(vp->common + CC(queue_desc), (u32)desc);
	mmio_w32(vp->common + CC(queue_desc) + 4, (u32)(desc >> 32));
	mmio_w32(vp->common + CC(queue_driver), (u32)drv);
	mmio_w32(vp->common + CC(queue_driver) + 4, (u32)(drv >> 32));
	mmio_w32(vp->common + CC(queue_device), (u32)dev);
	mmio_w32(vp->common + CC(queue_device) + 4, (u32)(dev >> 32));
	noff = mmio_r16(vp->common + CC(queue_notify_off));
	if (virtio_pci_notify_offset(&vp->layout, noff, virtio_has(d, VIRTIO_F_NOTIFICATION_DATA), &off) < 0) {
		kprintf("virtio%u: queue %u notify offset %u outside the notify window\n", d->index, q->index,
			noff);
		return -ERANGE;
	}
	q->notify_addr = vp->notify + (off - vp->layout.notify.offset);
	mmio_w16(vp->common + CC(queue_enable), 1);
	return 0;
}

__cold static int virtio_pci_m_queue_reset(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	u64 deadline;
	int i;

	if (vp->layout.common.length < VIRTIO_PCI_COMMON_Q_RESET + 2)
		return -ENOTSUP;
	mmio_w16(vp->common + CC(queue_select), q->index);
	mmio_w16(vp->common + VIRTIO_PCI_COMMON_Q_RESET, 1);
	/* §4.1.4.3.2 (virtio 1.2): the device presents 1 while the reset is
	 * under way and 0 in both queue_reset and queue_enable once it is done;
	 * the reset is complete only when queue_reset reads back 0. */
	deadline = time_ns() + VIRTIO_RESET_TIMEOUT_NS;	/* from the loop: 1 ms at most */
	for (i = 0; i < 100000 && mmio_r16(vp->common + VIRTIO_PCI_COMMON_Q_RESET); i++) {
		if (time_ns() > deadline)
			break;
		pause();
	}
	if (mmio_r16(vp->common + VIRTIO_PCI_COMMON_Q_RESET) != 0) {
		kprintf("virtio%u: queue %u: queue_reset never read back 0\n", d->index, q->index);
		return -ETIMEDOUT;
	}
	if (mmio_r16(vp->common + CC(queue_enable)) != 0) {
		kprintf("virtio%u: queue %u: still enabled after its reset\n", d->index, q->index);
		return -EIO;
	}
	return 0;
}

static void virtio_pci_m_notify(struct virtio_vq *q, u32 data)
{
	if (virtio_has(q->vdev, VIRTIO_F_NOTIFICATION_DATA))
		mmio_w32(q->notify_addr, data);
	else
		mmio_w16(q->notify_addr, (u16)data);
}

/* ---- legacy (I/O ports) ---- */

static u8 virtio_pci_l_get_status(struct virtio_dev *d)
{
	return inb(virtio_pci_to_vp(d)->io + VIRTIO_PCI_LEGACY_STATUS);
}

static void virtio_pci_l_set_status(struct virtio_dev *d, u8 s)
{
	outb(virtio_pci_to_vp(d)->io + VIRTIO_PCI_LEGACY_STATUS, s);
	if (s == 0)
		(void)inb(virtio_pci_to_vp(d)->io + VIRTIO_PCI_LEGACY_STATUS);	/* flush */
}

__cold static u64 virtio_pci_l_get_features(struct virtio_dev *d)
{
	return inl(virtio_pci_to_vp(d)->io + VIRTIO_PCI_LEGACY_DEVICE_FEATURES);
}

__cold static void virtio_pci_l_set_features(struct virtio_dev *d, u64 f)
{
	outl(virtio_pci_to_vp(d)->io + VIRTIO_PCI_LEGACY_DRIVER_FEATURES, (u32)f);
}

static u8 virtio_pci_l_generation(struct virtio_dev *d)
{
	return 0;	/* legacy has none: reads are best effort */
}

static u32 virtio_pci_l_cfg_base(struct vpci *vp)
{
	return VIRTIO_PCI_LEGACY_CONFIG(vp->irq_mode == IRQ_MSIX);
}

static int virtio_pci_l_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 w)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	u32 base = virtio_pci_l_cfg_base(vp);

	if (off > vp->io_len - base || w > vp->io_len - base - off)
		return -ERANGE;
	if (w == 4)
		*(u32 *)buf = inl((u16)(vp->io + base + off));
	else if (w == 2)
		*(u16 *)buf = inw((u16)(vp->io + base + off));
	else
		*(u8 *)buf = inb((u16)(vp->io + base + off));
	return 0;
}

static int virtio_pci_l_cfg_write(struct virtio_dev *d, u32 off, const void *buf, u32 w)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	u32 base = virtio_pci_l_cfg_base(vp);

	if (off > vp->io_len - base || w > vp->io_len - base - off)
		return -ERANGE;
	if (w == 4)
		outl((u16)(vp->io + base + off), *(const u32 *)buf);
	else if (w == 2)
		outw((u16)(vp->io + base + off), *(const u16 *)buf);
	else
		outb((u16)(vp->io + base + off), *(const u8 *)buf);
	return 0;
}

__cold static u16 virtio_pci_l_queue_max(struct virtio_dev *d, u16 idx)
{
	struct vpci *vp = virtio_pci_to_vp(d);

	outw(vp->io + VIRTIO_PCI_LEGACY_QUEUE_SELECT, idx);
	return inw(vp->io + VIRTIO_PCI_LEGACY_QUEUE_SIZE);
}

static bool virtio_pci_l_size_fixed(struct virtio_dev *d)
{
	return true;
}

__cold static int virtio_pci_l_queue_setup(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	dma_addr_t desc, drv, dev;

	virtq_ring_addrs(&q->vq, &desc, &drv, &dev);
	if (desc & (VIRTIO_PCI_LEGACY_VRING_ALIGN - 1) || (desc >> VIRTIO_PCI_LEGACY_QUEUE_PFN_SHIFT) > 0xffffffffULL)
		return -ERANGE;
	outw(vp->io + VIRTIO_PCI_LEGACY_QUEUE_SELECT, q->index);
	if (q->msix_entry != 0xffff) {
		outw(vp->io + VIRTIO_PCI_LEGACY_QUEUE_VECTOR, q->msix_entry);
		if (inw(vp->io + VIRTIO_PCI_LEGACY_QUEUE_VECTOR) != q->msix_entry)
			return -EIO;
	}
	outl(vp->io + VIRTIO_PCI_LEGACY_QUEUE_PFN, (u32)(desc >> VIRTIO_PCI_LEGACY_QUEUE_PFN_SHIFT));
	return 0;
}

static void virtio_pci_l_notify(struct virtio_vq *q, u32 data)
{
	outw(virtio_pci_to_vp(q->vdev)->io + VIRTIO_PCI_LEGACY_QUEUE_NOTIFY, q->index);
}

/* ---- interrupts (both) ---- */

static void virtio_pci_entry_irq(void *arg)
{
	struct vpci_entry *e = arg;
	struct vpci *vp = e->vp;
	u16 i;

	if (e->entry == 0 || vp->msix_entries == 1)
		virtio_config_interrupt(&vp->vdev);
	for (i = 0; i < VIRTIO_MAX_VQS; i++) {
		struct virtio_vq *q = vp->vdev.vqs[i];

		if (q && q->msix_entry == e->entry)
			virtio_vq_interrupt(q);
	}
}

static void virtio_pci_all_queues(struct vpci *vp)
{
	u16 i;

	for (i = 0; i < VIRTIO_MAX_VQS; i++)
		if (vp->vdev.vqs[i])
			virtio_vq_interrupt(vp->vdev.vqs[i]);
}

static void virtio_pci_intx_irq(void *arg)
{
	struct vpci *vp = arg;
	u8 isr;

	/* Reading ISR acknowledges (and deasserts) the level interrupt. */
	isr = vp->vdev.modern ? mmio_r8(vp->isr) : inb(vp->io + VIRTIO_PCI_LEGACY_ISR);
	if (isr & VIRTIO_PCI_ISR_CONFIG)
		virtio_config_interrupt(&vp->vdev);
	if (isr & VIRTIO_PCI_ISR_QUEUE)
		virtio_pci_all_queues(vp);
}

static void virtio_pci_poll_tick(struct timer *t, void *arg)
{
	struct vpci *vp = arg;
	u16 i;
	u8 isr;

	for (i = 0; i < VIRTIO_MAX_VQS; i++) {
		struct virtio_vq *q = vp->vdev.vqs[i];

		if (q && virtq_more_used(&q->vq))
			virtio_vq_interrupt(q);
	}
	/* Reading ISR clears it: a config change (or DEVICE_NEEDS_RESET)
	 * seen here is not seen anywhere else. */
	isr = vp->vdev.modern ? mmio_r8(vp->isr) : inb(vp->io + VIRTIO_PCI_LEGACY_ISR);
	if (isr & VIRTIO_PCI_ISR_CONFIG)
		virtio_config_interrupt(&vp->vdev);
	timer_start(&vp->poll, time_ns() + POLL_NS);
}

__cold static void virtio_pci_set_config_vector(struct vpci *vp, u16 entry)
{
	if (vp->vdev.modern)
		mmio_w16(vp->common + CC(config_msix_vector), entry);
	else
		outw(vp->io + VIRTIO_PCI_LEGACY_CONFIG_VECTOR, entry);
}

__cold static int virtio_pci_irq_setup(struct virtio_dev *d)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	int n, i;

	n = pci_msix_enable(vp->pci);
	if (n > 0) {
		vp->irq_mode = IRQ_MSIX;
		vp->msix_entries = (u16)MIN(n, MAX_ENTRIES);
		for (i = 0; i < vp->msix_entries; i++) {
			vp->ent[i].vp = vp;
			vp->ent[i].entry = (u16)i;
			vp->ent[i].vector = irq_alloc_vector(virtio_pci_entry_irq, &vp->ent[i]);
			if (vp->ent[i].vector < 0 || pci_msix_set(vp->pci, (u16)i, vp->ent[i].vector) < 0) {
				vp->msix_entries = (u16)i;
				break;
			}
		}
		if (vp->msix_entries > 0) {
			virtio_pci_set_config_vector(vp, 0);
			return 0;
		}
		pci_msix_disable(vp->pci);
	}
	vp->intx_vector = pci_intx_route(vp->pci, virtio_pci_intx_irq, vp);
	if (vp->intx_vector >= 0) {
		vp->irq_mode = IRQ_INTX;
		return 0;
	}
	kprintf("virtio%u: no MSI-X and no INTx route: polling every %lu us\n", d->index, POLL_NS / 1000);
	vp->irq_mode = IRQ_POLL;
	timer_init(&vp->poll, virtio_pci_poll_tick, vp);
	timer_start(&vp->poll, time_ns() + POLL_NS);
	return 0;
}

__cold static void virtio_pci_irq_teardown(struct virtio_dev *d)
{
	struct vpci *vp = virtio_pci_to_vp(d);
	int i;

	if (vp->irq_mode == IRQ_MSIX) {
		for (i = 0; i < vp->msix_entries; i++) {
			pci_msix_mask(vp->pci, (u16)i, true);
			irq_free_vector(vp->ent[i].vector);
		}
		pci_msix_disable(vp->pci);
	} else if (vp->irq_mode == IRQ_INTX) {
		if (vp->pci->intx_gsi >= 0)
			irq_mask_gsi((u32)vp->pci->intx_gsi, true);
		irq_free_vector(vp->intx_vector);
	} else if (vp->irq_mode == IRQ_POLL) {
		timer_stop(&vp->poll);
	}
	vp->irq_mode = IRQ_NONE;
}

/* Queue setup hook shared by both transports: pick the MSI-X entry. */
__cold static int virtio_pci_queue_setup(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vpci *vp = virtio_pci_to_vp(d);

	if (vp->irq_mode == IRQ_MSIX) {
		/* Entry 0 is config; queues get their own while they last,
		 * then share the last one. */
		q->msix_entry = vp->msix_entries > 1 ? (u16)MIN(1 + q->index, vp->msix_entries - 1) : 0;
		q->vector = vp->ent[q->msix_entry].vector;
	}
	return d->modern ? virtio_pci_m_queue_setup(d, q) : virtio_pci_l_queue_setup(d, q);
}

__cold static const char *virtio_pci_describe(struct virtio_dev *d)
{
	return virtio_pci_to_vp(d)->desc;
}

static const struct virtio_transport_ops modern_ops = {
	.name = "virtio-pci-modern",
	.get_status = virtio_pci_m_get_status,
	.set_status = virtio_pci_m_set_status,
	.get_features = virtio_pci_m_get_features,
	.set_features = virtio_pci_m_set_features,
	.config_generation = virtio_pci_m_generation,
	.cfg_read = virtio_pci_m_cfg_read,
	.cfg_write = virtio_pci_m_cfg_write,
	.queue_max = virtio_pci_m_queue_max,
	.queue_size_fixed = virtio_pci_m_size_fixed,
	.queue_setup = virtio_pci_queue_setup,
	.queue_reset = virtio_pci_m_queue_reset,
	.notify = virtio_pci_m_notify,
	.irq_setup = virtio_pci_irq_setup,
	.irq_teardown = virtio_pci_irq_teardown,
	.describe = virtio_pci_describe,
};

static const struct virtio_transport_ops legacy_ops = {
	.name = "virtio-pci-legacy",
	.get_status = virtio_pci_l_get_status,
	.set_status = virtio_pci_l_set_status,
	.get_features = virtio_pci_l_get_features,
	.set_features = virtio_pci_l_set_features,
	.config_generation = virtio_pci_l_generation,
	.cfg_read = virtio_pci_l_cfg_read,
	.cfg_write = virtio_pci_l_cfg_write,
	.queue_max = virtio_pci_l_queue_max,
	.queue_size_fixed = virtio_pci_l_size_fixed,
	.queue_setup = virtio_pci_queue_setup,
	.queue_reset = NULL,
	.notify = virtio_pci_l_notify,
	.irq_setup = virtio_pci_irq_setup,
	.irq_teardown = virtio_pci_irq_teardown,
	.describe = virtio_pci_describe,
};

/* Only the capability's window of its BAR is mapped (the parser checked it
 * lies inside the BAR; pci_map_bar_window checks again, and the BAR). */
__cold static u64 virtio_pci_map_region(struct pci_dev *p, const struct virtio_pci_region *r)
{
	if (!r->present)
		return 0;
	return pci_map_bar_window(p, r->bar, r->offset, r->length);
}

__cold static int virtio_pci_probe(struct pci_dev *p, const struct pci_id *id)
{
	u16 did = p->hdr.device_id;
	struct vpci *vp;
	int err;

	if (did < VIRTIO_PCI_DEVICE_LEGACY_MIN || did > VIRTIO_PCI_DEVICE_MODERN_BASE + 0x3f)
		return -ENODEV;
	vp = kzalloc(sizeof(*vp));
	if (!vp)
		return -ENOMEM;
	vp->pci = p;
	vp->intx_vector = -1;
	p->priv = vp;
	pci_enable(p);

	err = virtio_pci_parse_caps(p->cfg, sizeof p->cfg, p->bar, &vp->layout);
	if (err == 0) {
		vp->common = virtio_pci_map_region(p, &vp->layout.common);
		vp->isr = virtio_pci_map_region(p, &vp->layout.isr);
		vp->device = virtio_pci_map_region(p, &vp->layout.device);
		vp->device_len = vp->layout.device.length;
		vp->notify = virtio_pci_map_region(p, &vp->layout.notify);
		vp->notify_len = vp->layout.notify.length;
		vp->notify_mult = vp->layout.notify_off_multiplier;
	}
	if (err == 0 && vp->common && vp->isr && vp->notify) {
		vp->vdev.modern = true;
		vp->vdev.ops = &modern_ops;
		vp->vdev.device_id = did >= VIRTIO_PCI_DEVICE_MODERN_BASE ? (u16)(did - VIRTIO_PCI_DEVICE_MODERN_BASE)
									   : p->hdr.subsys_id;
	} else if (did <= VIRTIO_PCI_DEVICE_LEGACY_MAX && p->bar[0].kind == PCI_BAR_IO && p->bar[0].size >= 0x18) {
		vp->vdev.ops = &legacy_ops;
		vp->io = (u16)p->bar[0].base;
		vp->io_len = (u32)p->bar[0].size;
		vp->vdev.device_id = p->hdr.subsys_id;
	} else {
		kprintf("pci: %02x:%02x.%u virtio device without a usable transport\n", p->bus, p->dev, p->fn);
		kfree(vp);
		return -ENODEV;
	}
	vp->vdev.vendor_id = p->hdr.subsys_vendor_id;
	vp->vdev.transport = vp;
	vp->vdev.pci = p;
	ksnprintf(vp->desc, sizeof vp->desc, "pci %02x:%02x.%u %s", p->bus, p->dev, p->fn,
		  vp->vdev.modern ? "modern" : "legacy");
	virtio_add_device(&vp->vdev);
	return 0;
}

static const struct pci_id virtio_pci_ids[] = {
	{ .vendor = VIRTIO_PCI_VENDOR_ID, .device = PCI_ANY_ID },
	{ 0 },
};

static const struct pci_driver virtio_pci_driver = {
	.name = "virtio-pci",
	.ids = virtio_pci_ids,
	.probe = virtio_pci_probe,
};
PCI_DRIVER(virtio_pci_driver);
