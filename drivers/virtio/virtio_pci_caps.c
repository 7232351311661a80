/* virtio-pci capability discovery, virtio 1.2 §4.1.4. The capabilities are
 * device-supplied: every field is checked against the config snapshot and
 * the BARs we decoded ourselves before anything maps it. */
#include "drivers/virtio/virtio_pci_caps.h"
#include "drivers/virtio/virtio_pci_reg.h"
#include "lib/string.h"
#include <arch.h>

#define CAP_CFG_TYPE	offsetof(struct virtio_pci_cap, cfg_type)
#define CAP_BAR		offsetof(struct virtio_pci_cap, bar)
#define CAP_OFFSET	offsetof(struct virtio_pci_cap, offset)
#define CAP_LENGTH	offsetof(struct virtio_pci_cap, length)
#define CAP_LEN		2	/* cap_len byte */
#define CAP_MULTIPLIER	offsetof(struct virtio_pci_notify_cap, notify_off_multiplier)

/* Minimum structure length and offset alignment per cfg_type. */
static void virtio_pci_type_needs(u8 type, u32 *min_len, u32 *align, u32 *cap_min)
{
	*cap_min = sizeof(struct virtio_pci_cap);
	switch (type) {
	case VIRTIO_PCI_CAP_COMMON_CFG:
		*min_len = sizeof(struct virtio_pci_common_cfg);
		*align = 4;
		break;
	case VIRTIO_PCI_CAP_NOTIFY_CFG:
		*min_len = 2;
		*align = 2;
		*cap_min = sizeof(struct virtio_pci_notify_cap);
		break;
	case VIRTIO_PCI_CAP_ISR_CFG:
		*min_len = 1;
		*align = 1;
		break;
	default:	/* DEVICE */
		*min_len = 1;
		*align = 4;
		break;
	}
}

static struct virtio_pci_region *virtio_pci_slot_for(struct virtio_pci_layout *l, u8 type)
{
	switch (type) {
	case VIRTIO_PCI_CAP_COMMON_CFG:	return &l->common;
	case VIRTIO_PCI_CAP_NOTIFY_CFG:	return &l->notify;
	case VIRTIO_PCI_CAP_ISR_CFG:	return &l->isr;
	case VIRTIO_PCI_CAP_DEVICE_CFG:	return &l->device;
	default:			return NULL;
	}
}

/* Check one COMMON/NOTIFY/ISR/DEVICE cap at off and fill r. Logs and
 * returns false if anything is out of bounds. */
static bool virtio_pci_cap_accept(const u8 *cfg, size_t end, u8 off, u8 type,
		       const struct pci_bar bars[6], struct virtio_pci_layout *l,
		       struct virtio_pci_region *r)
{
	u32 min_len, align, cap_min, offset, length, mult = 0;
	u8 cap_len = cfg[off + CAP_LEN], bar;

	virtio_pci_type_needs(type, &min_len, &align, &cap_min);
	if (cap_len < cap_min || (size_t)off + cap_len > end) {
		klog("virtio-pci: cap 0x%x (type %u): cap_len %u bad", off, type, cap_len);
		return false;
	}
	bar = cfg[off + CAP_BAR];
	offset = pci_cfg_rd32(cfg, end, off + CAP_OFFSET);
	length = pci_cfg_rd32(cfg, end, off + CAP_LENGTH);
	if (bar >= 6 || (bars[bar].kind != PCI_BAR_MEM32 &&
			 bars[bar].kind != PCI_BAR_MEM64) || bars[bar].size == 0) {
		klog("virtio-pci: cap 0x%x (type %u): BAR %u is not a memory BAR",
		     off, type, bar);
		return false;
	}
	if ((u64)offset + length > bars[bar].size) {
		klog("virtio-pci: cap 0x%x (type %u): 0x%x+0x%x outside BAR %u",
		     off, type, offset, length, bar);
		return false;
	}
	if (length < min_len || (offset & (align - 1))) {
		klog("virtio-pci: cap 0x%x (type %u): length 0x%x / offset 0x%x unusable",
		     off, type, length, offset);
		return false;
	}
	if (type == VIRTIO_PCI_CAP_NOTIFY_CFG) {
		mult = pci_cfg_rd32(cfg, end, off + CAP_MULTIPLIER);
		if (mult != 0 && !IS_POW2(mult)) {
			klog("virtio-pci: cap 0x%x: notify_off_multiplier %u not a power of two",
			     off, mult);
			return false;
		}
		l->notify_off_multiplier = mult;
	}
	r->present = true;
	r->bar = bar;
	r->cap_off = off;
	r->offset = offset;
	r->length = length;
	return true;
}

int virtio_pci_parse_caps(const u8 *cfg, size_t len, const struct pci_bar bars[6],
			  struct virtio_pci_layout *out)
{
	size_t end = MIN(len, (size_t)PCI_CFG_LEN);	/* vendor caps are < 0x100 */
	struct virtio_pci_region *r;
	struct pci_cap_iter it;
	int off;
	u8 id, type;

	memset(out, 0, sizeof *out);
	pci_cap_iter_init(&it, cfg, len);
	while ((off = pci_cap_iter_next(&it, &id)) > 0) {
		if (id != PCI_CAP_ID_VNDR)
			continue;
		/* cfg_type sits at +3: the iterator only promised +0..+1. */
		if ((size_t)off + CAP_CFG_TYPE >= end) {
			klog("virtio-pci: cap 0x%x truncated by config space", off);
			continue;
		}
		type = cfg[off + CAP_CFG_TYPE];
		if (type == VIRTIO_PCI_CAP_PCI_CFG) {
			if (!out->pci_cfg_cap)
				out->pci_cfg_cap = (u8)off;
			continue;
		}
		r = virtio_pci_slot_for(out, type);
		if (!r || r->present)
			continue;	/* unknown type, or the first one won */
		virtio_pci_cap_accept(cfg, end, (u8)off, type, bars, out, r);
	}
	if (off < 0)
		return -EBADMSG;
	if (!out->common.present || !out->notify.present || !out->isr.present)
		return -ENODEV;
	return 0;
}

int virtio_pci_notify_offset(const struct virtio_pci_layout *l, u16 queue_notify_off,
			     bool notification_data, u64 *off_out)
{
	u64 rel, width = notification_data ? 4 : 2;

	if (!l->notify.present)
		return -ENODEV;
	/* u16 * u32 < 2^48: no overflow in 64 bits. */
	rel = (u64)queue_notify_off * l->notify_off_multiplier;
	if (rel + width > l->notify.length)
		return -ERANGE;
	*off_out = (u64)l->notify.offset + rel;
	return 0;
}
