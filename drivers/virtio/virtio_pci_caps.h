/* virtio-pci modern transport discovery: finds and bounds-checks the
 * vendor capabilities that locate the common, notify, ISR and device
 * structures inside the function's memory BARs. Pure parsing. */
#ifndef VIREO_VIRTIO_PCI_CAPS_H
#define VIREO_VIRTIO_PCI_CAPS_H

#include "lib/types.h"
#include "drivers/pci/pci_parse.h"

/* Where one virtio structure lives: bytes [offset, offset + length) of
 * memory BAR 'bar', already checked to lie inside that BAR. */
struct virtio_pci_region {
	bool present;
	u8   bar;
	u8   cap_off;		/* config-space offset of the capability */
	u32  offset;
	u32  length;
};

struct virtio_pci_layout {
	struct virtio_pci_region common;	/* length >= 0x38 */
	struct virtio_pci_region notify;	/* length >= 2 */
	struct virtio_pci_region isr;		/* length >= 1 */
	struct virtio_pci_region device;	/* optional */
	u32  notify_off_multiplier;		/* 0 or a power of two */
	u8   pci_cfg_cap;	/* offset of a PCI_CFG (type 5) cap, 0 if none;
				 * recorded only, vireo does not use it */
};

/* Walk the vendor-specific capabilities (id 0x09) of the config snapshot
 * cfg[0..len) and take the first valid COMMON, NOTIFY, ISR and DEVICE cap.
 * bars[] is the function's decoded BARs (pci_bar_decode; the upper slot of
 * a 64-bit BAR is PCI_BAR_NONE). A cap is valid if cap_len >= 16 (20 for
 * NOTIFY) and fits in config space, bar < 6 names a memory BAR of non-zero
 * size, offset + length lies inside it (64-bit arithmetic), the length
 * covers the structure (COMMON 0x38, NOTIFY 2, ISR 1, DEVICE 1), COMMON and
 * DEVICE offsets are 4-aligned, NOTIFY is 2-aligned with a multiplier of 0
 * or a power of two. Invalid caps are skipped with one klog line each;
 * unknown cfg_types and later caps of an already-found type are ignored.
 * Returns 0 when COMMON, NOTIFY and ISR were all found; -ENODEV when one
 * is missing (use the legacy interface, if the device has one); -EBADMSG
 * when the capability list itself is malformed (logged by pci_parse).
 * *out is zeroed first and meaningful only on 0. */
int virtio_pci_parse_caps(const u8 *cfg, size_t len, const struct pci_bar bars[6],
			  struct virtio_pci_layout *out);

/* Offset within BAR l->notify.bar of the notification address for a queue
 * whose common-cfg queue_notify_off is queue_notify_off; the write there is
 * 4 bytes wide with VIRTIO_F_NOTIFICATION_DATA, else 2. Returns 0, -ENODEV
 * if l has no notify region, -ERANGE if the write would not fit inside the
 * notify region (never overflows: computed in 64 bits). */
int virtio_pci_notify_offset(const struct virtio_pci_layout *l, u16 queue_notify_off,
			     bool notification_data, u64 *off_out);

#endif
