/* virtio over PCI register layouts (virtio 1.2 §4.1): capabilities, common
 * configuration, ISR bits and the legacy I/O header. Layouts only. */
#ifndef VIREO_VIRTIO_PCI_REG_H
#define VIREO_VIRTIO_PCI_REG_H

#include "lib/types.h"

#define VIRTIO_PCI_VENDOR_ID		0x1af4
#define VIRTIO_PCI_DEVICE_LEGACY_MIN	0x1000	/* transitional: 0x1000..0x103f */
#define VIRTIO_PCI_DEVICE_LEGACY_MAX	0x103f
#define VIRTIO_PCI_DEVICE_MODERN_BASE	0x1040	/* + virtio device id */

/* cfg_type of a vendor-specific (id 0x09) capability, §4.1.4. */
#define VIRTIO_PCI_CAP_COMMON_CFG	1
#define VIRTIO_PCI_CAP_NOTIFY_CFG	2
#define VIRTIO_PCI_CAP_ISR_CFG		3
#define VIRTIO_PCI_CAP_DEVICE_CFG	4
#define VIRTIO_PCI_CAP_PCI_CFG		5
#define VIRTIO_PCI_CAP_SHARED_MEMORY_CFG 8
#define VIRTIO_PCI_CAP_VENDOR_CFG	9

/* Generic virtio structure capability, §4.1.4. Lives in config space:
 * read it byte-wise from a snapshot, not through this struct. */
struct virtio_pci_cap {
	u8   cap_vndr;		/* 0x09 */
	u8   cap_next;
	u8   cap_len;		/* length of this capability, >= 16 */
	u8   cfg_type;		/* VIRTIO_PCI_CAP_* */
	u8   bar;		/* 0..5; other values reserved: ignore the cap */
	u8   id;		/* several caps of one type (shared memory) */
	u8   padding[2];
	le32 offset;		/* within the BAR */
	le32 length;		/* of the structure, bytes */
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_pci_cap, cfg_type) == 3, "spec");
_Static_assert(offsetof(struct virtio_pci_cap, bar) == 4, "spec");
_Static_assert(offsetof(struct virtio_pci_cap, offset) == 8, "spec");
_Static_assert(offsetof(struct virtio_pci_cap, length) == 12, "spec");
_Static_assert(sizeof(struct virtio_pci_cap) == 16, "spec");

/* 64-bit offset/length variant (shared memory regions). */
struct virtio_pci_cap64 {
	struct virtio_pci_cap cap;
	le32 offset_hi;
	le32 length_hi;
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_pci_cap64, offset_hi) == 16, "spec");
_Static_assert(sizeof(struct virtio_pci_cap64) == 24, "spec");

/* Notification capability, §4.1.4.4: queue q is notified by writing at
 * offset + queue_notify_off(q) * notify_off_multiplier within the BAR. */
struct virtio_pci_notify_cap {
	struct virtio_pci_cap cap;
	le32 notify_off_multiplier;	/* 0 or a power of two */
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_pci_notify_cap, notify_off_multiplier) == 16, "spec");
_Static_assert(sizeof(struct virtio_pci_notify_cap) == 20, "spec");

/* PCI configuration access capability, §4.1.4: a window into the BARs
 * through config space; vireo does not use it. */
struct virtio_pci_cfg_cap {
	struct virtio_pci_cap cap;
	u8   pci_cfg_data[4];
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_pci_cfg_cap) == 20, "spec");

/* virtio 1.x common configuration, §4.1.4.3. All fields little-endian. */
struct virtio_pci_common_cfg {
	le32 device_feature_select;	/* rw */
	le32 device_feature;		/* ro, 32 bits of the window chosen above */
	le32 driver_feature_select;	/* rw */
	le32 driver_feature;		/* rw */
	le16 config_msix_vector;	/* rw */
	le16 num_queues;		/* ro */
	u8   device_status;		/* rw, writing 0 resets */
	u8   config_generation;		/* ro, re-read config if it changes */
	le16 queue_select;		/* rw, selects the queue for the fields below */
	le16 queue_size;		/* rw, device max on read */
	le16 queue_msix_vector;		/* rw */
	le16 queue_enable;		/* rw */
	le16 queue_notify_off;		/* ro, times notify_off_multiplier */
	le64 queue_desc;		/* rw, guest-physical */
	le64 queue_driver;		/* rw, avail ring */
	le64 queue_device;		/* rw, used ring */
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_pci_common_cfg, device_feature) == 0x04, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, driver_feature_select) == 0x08, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, driver_feature) == 0x0c, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, config_msix_vector) == 0x10, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, num_queues) == 0x12, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, device_status) == 0x14, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, config_generation) == 0x15, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_select) == 0x16, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_size) == 0x18, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_msix_vector) == 0x1a, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_enable) == 0x1c, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_notify_off) == 0x1e, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_desc) == 0x20, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_driver) == 0x28, "spec");
_Static_assert(offsetof(struct virtio_pci_common_cfg, queue_device) == 0x30, "spec");
_Static_assert(sizeof(struct virtio_pci_common_cfg) == 0x38, "spec");

/* virtio 1.2 fields after the struct above; present only if the common
 * cfg length covers them, and meaningful only once the matching feature
 * (VIRTIO_F_NOTIF_CONFIG_DATA, VIRTIO_F_RING_RESET) is negotiated. */
#define VIRTIO_PCI_COMMON_Q_NOTIFY_DATA	0x38	/* le16, ro */
#define VIRTIO_PCI_COMMON_Q_RESET	0x3a	/* le16, rw */

/* No MSI-X vector assigned (config_msix_vector / queue_msix_vector). */
#define VIRTIO_MSI_NO_VECTOR		0xffff

/* ISR status byte, §4.1.4.5: reading it clears it. */
#define VIRTIO_PCI_ISR_QUEUE		0x1
#define VIRTIO_PCI_ISR_CONFIG		0x2

/* Legacy (and transitional) devices: registers at the start of I/O BAR 0,
 * §4.1.4 "Legacy Interfaces: A Note on PCI Device Layout". Fields are
 * guest-endian; x86 is little-endian anyway. */
#define VIRTIO_PCI_LEGACY_DEVICE_FEATURES	0x00	/* 32, ro */
#define VIRTIO_PCI_LEGACY_DRIVER_FEATURES	0x04	/* 32, rw */
#define VIRTIO_PCI_LEGACY_QUEUE_PFN		0x08	/* 32, rw: addr >> 12 */
#define VIRTIO_PCI_LEGACY_QUEUE_SIZE		0x0c	/* 16, ro */
#define VIRTIO_PCI_LEGACY_QUEUE_SELECT		0x0e	/* 16, rw */
#define VIRTIO_PCI_LEGACY_QUEUE_NOTIFY		0x10	/* 16, rw */
#define VIRTIO_PCI_LEGACY_STATUS		0x12	/* 8, rw */
#define VIRTIO_PCI_LEGACY_ISR			0x13	/* 8, ro, clears on read */
/* Only while MSI-X is enabled on the function: */
#define VIRTIO_PCI_LEGACY_CONFIG_VECTOR		0x14	/* 16, rw */
#define VIRTIO_PCI_LEGACY_QUEUE_VECTOR		0x16	/* 16, rw */
/* Device-specific config follows the header; where depends on MSI-X. */
#define VIRTIO_PCI_LEGACY_CONFIG(msix_enabled)	((msix_enabled) ? 0x18 : 0x14)

#define VIRTIO_PCI_LEGACY_QUEUE_PFN_SHIFT	12
#define VIRTIO_PCI_LEGACY_VRING_ALIGN		4096

#endif
