/* The virtio bus: devices found by a transport, drivers matched by id, the
 * status handshake, feature negotiation and virtqueue setup. Drivers see
 * only this API (features, config space, queues), never PCI. */
#ifndef VIREO_VIRTIO_H
#define VIREO_VIRTIO_H

#include "drivers/virtio/virtq.h"
#include "vireo/linkset.h"
#include "lib/types.h"

/* Device status bits, §2.1. */
#define VIRTIO_S_ACKNOWLEDGE 0x01
#define VIRTIO_S_DRIVER 0x02
#define VIRTIO_S_DRIVER_OK 0x04
#define VIRTIO_S_FEATURES_OK 0x08
#define VIRTIO_S_NEEDS_RESET 0x40
#define VIRTIO_S_FAILED 0x80

/* Transport-independent feature bits, §6. */
#define VIRTIO_F_NOTIFY_ON_EMPTY 24
#define VIRTIO_F_ANY_LAYOUT 27
#define VIRTIO_F_INDIRECT_DESC 28
#define VIRTIO_F_EVENT_IDX 29
#define VIRTIO_F_VERSION_1 32
#define VIRTIO_F_ACCESS_PLATFORM 33
#define VIRTIO_F_RING_PACKED 34
#define VIRTIO_F_IN_ORDER 35
#define VIRTIO_F_ORDER_PLATFORM 36
#define VIRTIO_F_SR_IOV 37
#define VIRTIO_F_NOTIFICATION_DATA 38
#define VIRTIO_F_NOTIF_CONFIG_DATA 39
#define VIRTIO_F_RING_RESET 40
#define VIRTIO_BIT(b) (1ULL << (b))

/* What the core itself can drive; drivers add their device bits. */
#define VIRTIO_TRANSPORT_FEATURES                                                                   \
	(VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) | VIRTIO_BIT(VIRTIO_F_EVENT_IDX) |                      \
	 VIRTIO_BIT(VIRTIO_F_VERSION_1) | VIRTIO_BIT(VIRTIO_F_ACCESS_PLATFORM) |                    \
	 VIRTIO_BIT(VIRTIO_F_RING_PACKED) | VIRTIO_BIT(VIRTIO_F_IN_ORDER) |                         \
	 VIRTIO_BIT(VIRTIO_F_ORDER_PLATFORM) | VIRTIO_BIT(VIRTIO_F_NOTIFICATION_DATA) |             \
	 VIRTIO_BIT(VIRTIO_F_RING_RESET) | VIRTIO_BIT(VIRTIO_F_ANY_LAYOUT))

#define VIRTIO_ID_NET 1
#define VIRTIO_ID_BLOCK 2
#define VIRTIO_ID_CONSOLE 3
#define VIRTIO_ID_RNG 4
#define VIRTIO_VENDOR_ANY 0xffff

struct virtio_dev;
struct virtio_vq;

/* The transport seam: registers only, never rings. */
struct virtio_transport_ops {
	const char *name;
	u8 (*get_status)(struct virtio_dev *d);
	void (*set_status)(struct virtio_dev *d, u8 status);	/* 0 resets */
	u64 (*get_features)(struct virtio_dev *d);
	void (*set_features)(struct virtio_dev *d, u64 features);
	u8 (*config_generation)(struct virtio_dev *d);
	/* Device-specific config, width-exact; off is bounds-checked. */
	int (*cfg_read)(struct virtio_dev *d, u32 off, void *buf, u32 width);
	int (*cfg_write)(struct virtio_dev *d, u32 off, const void *buf, u32 width);
	u16 (*queue_max)(struct virtio_dev *d, u16 idx);	/* 0: no such queue */
	bool (*queue_size_fixed)(struct virtio_dev *d);		/* legacy: size == max */
	/* Programs a ring and enables it, with its interrupt route. */
	int (*queue_setup)(struct virtio_dev *d, struct virtio_vq *q);
	int (*queue_reset)(struct virtio_dev *d, struct virtio_vq *q);	/* RING_RESET */
	void (*notify)(struct virtio_vq *q, u32 data);
	/* Interrupts: set up delivery for nvq queues plus config changes. */
	int (*irq_setup)(struct virtio_dev *d);
	void (*irq_teardown)(struct virtio_dev *d);
	const char *(*describe)(struct virtio_dev *d);		/* "00:02.0 modern" */
};

struct virtio_vq {
	struct virtq vq;
	struct virtio_dev *vdev;
	u16 index;
	u16 num;
	u16 msix_entry;		/* table entry, or 0xffff for none */
	int vector;		/* CPU vector, -1 if shared/polled */
	void (*callback)(struct virtio_vq *q);	/* interrupt context */
	void *priv;
	u64 interrupts;
	void *ring_mem;
	size_t ring_pages;
	void *priv_mem;
	u64 notify_addr;	/* transport's: where the kick goes */
	bool live;
};

#define VIRTIO_MAX_VQS 16	/* virtio-console: 2 control + 2 per port */

struct virtio_device_id {
	u16 device;		/* virtio device id; 0 ends a table */
	u16 vendor;		/* subsystem vendor, or VIRTIO_VENDOR_ANY */
};

/* A feature bit's name for the boot log's feature line; a table of them
 * lists only the bits that have one (a 64-entry array of pointers per
 * device was 512 bytes each) and ends with a NULL name. */
struct virtio_feature_name {
	u8 bit;
	const char *name;
};

struct virtio_driver {
	const char *name;
	const struct virtio_device_id *ids;
	u64 features;		/* device bits it drives (transport bits are added) */
	const struct virtio_feature_name *feature_names;	/* ends with a NULL name; NULL: none */
	/* Optional: given what would be negotiated (offered, driven and
	 * allowed), returns it with every feature whose requirement is
	 * missing taken out, and any the driver's own settings turn off. */
	u64 (*features_fixup)(u64 want);
	/* Called after FEATURES_OK: set up queues, post buffers, call
	 * virtio_device_ready(). Returns 0 or a negative error. */
	int (*probe)(struct virtio_dev *d);
	/* Undo probe: the device has already been reset. */
	void (*remove)(struct virtio_dev *d);
	void (*config_changed)(struct virtio_dev *d);	/* loop context */
	/* Optional: queue q was reset alone (virtio_reset_vq) and is live
	 * again, empty; what the driver had posted on it was detached and is
	 * not coming back. The driver posts afresh. Loop context. */
	void (*vq_reset)(struct virtio_vq *q);
};

/* Registers a driver at link time, in the virtio_drivers linker set
 * (include/vireo/linkset.h), which the bus walks: VIRTIO_DRIVER(my_driver); */
#define VIRTIO_DRIVER(drv) VIREO_LINKSET_ADD(virtio_drivers, const struct virtio_driver, drv, drv)

struct pci_dev;
struct dma_domain;

/* Recoveries from IOMMU faults a device gets before it is left removed. */
#define VIRTIO_DMA_FAULT_RESETS	8

struct virtio_dev {
	u16 device_id;
	u16 vendor_id;
	u32 index;			/* virtioN */
	const struct virtio_transport_ops *ops;
	void *transport;
	u64 offered, features;
	bool modern;			/* VERSION_1 transport */
	bool broken;
	bool irq_on;			/* irq_setup done, not yet torn down */
	bool dead;			/* a reset timed out: FAILED for good, memory kept */
	u32 resets;			/* DEVICE_NEEDS_RESET recoveries */
	const struct virtio_driver *driver;
	void *priv;
	struct virtio_vq *vqs[VIRTIO_MAX_VQS];
	u16 nvqs;
	void (*config_irq)(struct virtio_dev *d);	/* set by the core */
	struct pci_dev *pci;		/* PCI transport's function, else NULL */
	/* ACCESS_PLATFORM and an IOMMU driver took the function: the device's
	 * DMA domain (kernel/mm/dma.h); NULL: identity addresses. */
	struct dma_domain *dma;
	bool dma_fault;			/* the unit reported a fault: reset pending */
	u32 dma_fault_resets;		/* recoveries from DMA faults (budgeted) */
	bool reset_requested;		/* virtio_request_reset(): reset pending */
	struct virtio_dev *next;
};

/* Transport entry: a device was found; matches and probes a driver.
 * Returns the probe's result, or -ENODEV when no driver matches. */
int virtio_add_device(struct virtio_dev *d);
/* The device is gone: removes its driver (if bound) and unlinks it. Used by
 * the host harness between simulated devices; no kernel transport reports a
 * removal yet. */
void virtio_del_device(struct virtio_dev *d);
struct virtio_dev *virtio_devices(void);

static inline bool virtio_has(const struct virtio_dev *d, unsigned bit)
{
	return (d->features >> bit) & 1;
}

/* Device config reads that retry while config_generation changes (at most
 * VIRTIO_CFG_TRIES passes). Return 0, -EBUSY (never stable: torn, logged;
 * *v is not to be used) or -ERANGE (outside the device's config). */
#define VIRTIO_CFG_TRIES 16
int virtio_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 len);
int virtio_cfg_read16(struct virtio_dev *d, u32 off, u16 *v);
int virtio_cfg_read32(struct virtio_dev *d, u32 off, u32 *v);
/* One width-exact device config write (no generation retry: a write has no
 * torn value to re-read). Safe with interrupts off and on the panic path.
 * Returns 0 or -ERANGE (outside the device's config). */
int virtio_cfg_write32(struct virtio_dev *d, u32 off, u32 v);

/* Allocates and enables queue idx with at most num_hint entries (0: the
 * device's maximum, capped at VIRTQ_MAX_SIZE); the callback runs in
 * interrupt context. Returns the queue or NULL (logged). */
struct virtio_vq *virtio_setup_vq(struct virtio_dev *d, u16 idx, u16 num_hint,
				  void (*callback)(struct virtio_vq *q), void *priv);
/* The same for a queue whose buffers are transient (transmit chains,
 * control commands, console output): behind a VT-d domain each buffer's
 * pages are unmapped when the queue reclaims it (drivers/virtio/virtq.h). */
struct virtio_vq *virtio_setup_vq_transient(struct virtio_dev *d, u16 idx, u16 num_hint,
					    void (*callback)(struct virtio_vq *q), void *priv);
/* Resets one queue (RING_RESET), detaches what was posted on it, frees
 * nothing, re-enables it and calls the driver's vq_reset; returns 0,
 * -ENOTSUP or the transport's error. */
int virtio_reset_vq(struct virtio_vq *q);
/* Sets DRIVER_OK: the device is live. */
void virtio_device_ready(struct virtio_dev *d);
/* Stops every queue of d calling into its driver and tears the interrupts
 * down. A driver whose probe fails after a queue went live calls it before
 * freeing the state its callbacks use; the core calls it before a reset. */
void virtio_quiesce(struct virtio_dev *d);
/* Memory a device that never completed its reset may still write (d->dead):
 * never freed, only counted (npages 0: a kmalloc block). */
void virtio_keep_forever(void *p, size_t npages);
/* What virtio_keep_forever() has been given so far. */
void virtio_kept(u64 *pages, u64 *blocks);
/* How long a transport waits for a reset to read back 0; a busy-wait, so
 * no longer than the event loop allows one to be (1 ms). */
#define VIRTIO_RESET_TIMEOUT_NS 1000000ULL
/* Marks the device broken after a device-side violation (logged once). */
void virtio_set_broken(struct virtio_dev *d, const char *why);
/* The driver asks for its device to be reset and probed again, as for
 * DEVICE_NEEDS_RESET (a request the device never completed, a queue it
 * broke): logged with why, run from the bus's loop work, never from
 * inside this call. The driver's remove() then gets back what was on the
 * rings (virtq_detach_unused) and its probe() runs again; the driver
 * bounds how often it asks. */
void virtio_request_reset(struct virtio_dev *d, const char *why);
/* Formats status bits by name into buf. */
const char *virtio_status_name(u8 status, char *buf, size_t size);
/* The queue's interrupt fired (transport -> core). */
void virtio_vq_interrupt(struct virtio_vq *q);
void virtio_config_interrupt(struct virtio_dev *d);

#endif
