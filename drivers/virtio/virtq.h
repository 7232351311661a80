/* virtq: one virtqueue (split or packed layout behind one API). Owns the ring
 * indices, the driver-private shadows and the checks on every value the
 * device writes. Knows no transport and no IOMMU: memory comes from the
 * caller, addresses from the DMA seam (kernel/mm/dma.h) in cfg->dma's
 * domain, notifications go through cfg->notify. */
#ifndef VIREO_VIRTQ_H
#define VIREO_VIRTQ_H

#include "lib/types.h"
#include "drivers/virtio/virtio_ring_reg.h"

struct dma_domain;

#define VIRTQ_MAX_SIZE		1024u	/* our cap on the queue size (num) */
#define VIRTQ_INDIRECT_DEFAULT	16u	/* entries per indirect table if 0 given */
#define VIRTQ_INDIRECT_MAX	256u	/* cap on cfg->indirect_max */
#define VIRTQ_RING_ALIGN	4096u	/* ring memory alignment */

struct virtq_config {
	u16 num;		/* queue size: split power of two; packed any; <= VIRTQ_MAX_SIZE */
	u16 index;		/* queue index, for notifications and logs */
	bool packed;		/* VIRTIO_F_RING_PACKED */
	bool event_idx;		/* VIRTIO_F_EVENT_IDX */
	bool indirect;		/* VIRTIO_F_INDIRECT_DESC */
	bool in_order;		/* VIRTIO_F_IN_ORDER */
	bool notification_data;	/* VIRTIO_F_NOTIFICATION_DATA */
	bool weak_barriers;	/* true: dma_* barriers; false: mb/rmb/wmb (ORDER_PLATFORM) */
	u16 indirect_max;	/* entries per indirect table; 0 = default; capped at num */
	/* Chains of up to direct_max elements go direct, not through a table,
	 * while at least half the ring is free (a fuller ring gets one slot
	 * per chain again). For a device behind an IOMMU, where each
	 * descriptor the device reads is one translation: a table costs one
	 * more read (the ring descriptor pointing at it). 0: tables whenever
	 * they fit. */
	u16 direct_max;
	/* The device's DMA domain (kernel/mm/dma.h): every address the device
	 * is given is dma_map()'s in it, read-only unless the device writes
	 * the element (DMA_WRITE); NULL: identity. The ring and buffers on a
	 * queue that is not transient are mapped long-lived (until the
	 * domain is cleared). A map that returns 0 holds nothing. */
	struct dma_domain *dma;
	/* transient (with a domain only): every buffer added is mapped
	 * DMA_TRANSIENT and, once the device returned it (virtq_get) or the
	 * queue was stopped (virtq_detach_unused), handed to dma_unmap with the
	 * same va, len and flags, before its token goes back to the caller;
	 * dma_flush then runs once per virtq_get / virtq_detach_unused call that
	 * unmapped something. The ring itself is never transient. Costs 16
	 * bytes of private memory per descriptor and per indirect-table entry. */
	bool transient;
	/* Available-buffer notification; data per §2.9 (see virtq_notify). */
	void (*notify)(void *ctx, u32 data);
	void *ctx;
};

/* One element of a scatter-gather list: a driver VA and a length. */
struct virtq_sg {
	const void *addr;
	u32 len;
};

struct virtq_stats {
	u64 adds;		/* buffers made available */
	u64 indirect_adds;	/* ... of which through an indirect table */
	u64 enospc;		/* adds refused for lack of descriptors */
	u64 kicks;		/* notifications sent to the device */
	u64 kicks_suppressed;	/* new buffers, but the device asked for no notification */
	u64 completions;	/* tokens returned by virtq_get */
	u64 batched;		/* ... of which skipped by an in-order batch entry */
	u64 detached;		/* tokens returned by virtq_detach_unused */
	u64 unmaps;		/* transient elements handed to dma_unmap */
};

struct virtq_slot;	/* per-descriptor / per-buffer-id shadow, private to virtq.c */
struct virtq_tmap;	/* per-element record of a transient mapping, private to virtq.c */

/* Callback mode the driver asked for (virtq_disable_cb/enable_cb/_delayed). */
enum virtq_cb_mode {
	VIRTQ_CB_ENABLED,
	VIRTQ_CB_DISABLED,
	VIRTQ_CB_DELAYED,
};

/* Queue state. Fields are read-only outside virtq.c (tests and debug
 * output read them; nothing else should). */
struct virtq {
	/* configuration, fixed at virtq_init */
	u16 num;
	u16 index;
	u16 indirect_max;	/* 0 when indirect is off */
	u16 direct_max;		/* virtq_config's */
	bool is_packed;		/* packed layout (else split) */
	bool event_idx, indirect, in_order, notification_data, weak_barriers;
	bool transient;
	struct dma_domain *dma;
	void (*notify)(void *ctx, u32 data);
	void *ctx;

	/* memory */
	void *ring_mem;		/* device-visible, VIRTQ_RING_ALIGN-aligned */
	size_t ring_bytes;
	dma_addr_t ring_dma;	/* device address of ring_mem */
	size_t driver_off, device_off, indirect_off;	/* offsets in ring_mem */
	struct virtq_slot *slot;	/* driver-private shadows, num entries */
	struct virtq_tmap *tmap;	/* transient: what each element mapped (virtq.c) */
	const u8 *keep_va;		/* transient: virtq_keep_mapped's range ... */
	size_t keep_len;		/* ... (0: none) */
	bool unmapped;			/* transient: an unmap since the last flush */
	u16 tmap_free;			/* transient, packed: free direct-element records */

	/* state common to both layouts */
	bool broken;		/* device misbehaved: no more adds or gets */
	bool stopped;		/* detach_unused ran: only reset_state is useful */
	/* The ring's test seam (virtq_arm_debug): armed, the next add hands its
	 * built, unpublished head to it (head_flags: a packed head's flags,
	 * published after), then disarms. NULL in production. */
	void (*debug_corrupt)(struct virtq *vq, u16 head, u16 *head_flags);
	bool add_slow;		/* broken, stopped or debug_corrupt: virtq_add's slow path */
	u8 cb_mode;		/* enum virtq_cb_mode */
	u16 num_free;		/* free descriptors (split) / ring slots (packed) */
	u16 inflight;		/* buffers added and not yet returned */
	u32 added;		/* buffers (split) / descriptors (packed) since last kick_prepare */
	u16 fifo_head, fifo_tail;	/* in_order: oldest and newest in-flight buffer */
	bool batch;		/* in_order: a used entry covered buffers not yet returned */
	u16 batch_last;		/* ... the last buffer of that batch */
	u32 batch_len;		/* ... and the length the device gave for it */

	union {
		struct {
			struct virtq_desc *desc;
			struct virtq_avail *avail;
			struct virtq_used *used;
			u16 avail_idx;	/* shadow of avail->idx */
			u16 last_used;	/* next used entry to read */
			u16 free_head;	/* free list (without in_order) */
			u16 next_desc;	/* next descriptor (with in_order) */
		} split;
		struct {
			struct pvirtq_desc *desc;
			struct pvirtq_event_suppress *driver;	/* we write */
			struct pvirtq_event_suppress *device;	/* device writes */
			u16 next_avail;	/* next ring slot to fill */
			u16 last_used;	/* next ring slot to check for a used buffer */
			bool avail_wrap;	/* Driver Ring Wrap Counter */
			bool used_wrap;		/* wrap counter of last_used */
			u16 free_id;	/* free buffer-id list */
		} packed;
	};

	struct virtq_stats stats;
};

/* Memory the caller must provide for cfg: ring_bytes of device-visible memory
 * (VIRTQ_RING_ALIGN-aligned, contiguous for the device; includes the indirect
 * tables) and priv_bytes of driver-private memory (pointer-aligned).
 * Returns 0, or -EINVAL if cfg is unusable (num 0, over VIRTQ_MAX_SIZE, not a
 * power of two for split, indirect_max over VIRTQ_INDIRECT_MAX). */
int virtq_mem_size(const struct virtq_config *cfg, size_t *ring_bytes, size_t *priv_bytes);

/* Set up vq over caller memory sized by virtq_mem_size(). The memory stays
 * the caller's; vq keeps pointers into it until the caller stops using vq.
 * Zeroes the ring. Returns 0 or -EINVAL. */
int virtq_init(struct virtq *vq, const struct virtq_config *cfg, void *ring_mem, void *priv_mem);

/* Device addresses the transport programs: descriptor area, driver area
 * (split avail ring / packed driver event suppression) and device area
 * (split used ring / packed device event suppression). The split layout is
 * also the legacy one: desc at 0, avail after it, used on the next 4096. */
void virtq_ring_addrs(const struct virtq *vq, dma_addr_t *desc, dma_addr_t *driver,
		      dma_addr_t *device);

/* Make a buffer available: n_out device-readable elements then n_in
 * device-writable ones. The memory they describe belongs to the device until
 * token (non-NULL, opaque) comes back from virtq_get/virtq_detach_unused.
 * Uses an indirect table when negotiated and 2 <= n_out + n_in <= indirect_max.
 * Does not notify: call virtq_kick. Returns 0, -ENOSPC (not enough free
 * descriptors now), -EINVAL (bad arguments), -EIO (queue broken or stopped). */
int virtq_add(struct virtq *vq, const struct virtq_sg *out, unsigned n_out,
	      const struct virtq_sg *in, unsigned n_in, void *token);

/* After adds: true if the device must be notified (it did not suppress it).
 * Resets the "added since last kick" count. False when nothing was added. */
bool virtq_kick_prepare(struct virtq *vq);

/* Notify the device unconditionally (cfg->notify with the §2.9 data:
 * index, or with notification_data split index | avail_idx << 16, packed
 * index | next_off << 16 | wrap << 31). Nothing when broken. */
void virtq_notify(struct virtq *vq);

/* virtq_kick_prepare then virtq_notify if needed. True if notified. */
bool virtq_kick(struct virtq *vq);

/* Next completed buffer: returns its token (ownership of the buffer goes back
 * to the caller) and stores the bytes the device wrote in *len (checked to be
 * no more than the writable bytes posted). NULL if none, or broken: a device
 * value that breaks the ring's rules marks the queue broken, logs once, and
 * from then on this returns NULL and virtq_add -EIO. */
void *virtq_get(struct virtq *vq, u32 *len);

/* True if virtq_get would return something (or find a device error). */
bool virtq_more_used(const struct virtq *vq);

/* Ask the device not to send used-buffer notifications (advisory). */
void virtq_disable_cb(struct virtq *vq);

/* Ask for a notification on the next used buffer. Returns false if used
 * buffers are already pending (the caller must poll again, since the
 * notification may have been missed); true otherwise (also when broken). */
bool virtq_enable_cb(struct virtq *vq);

/* Ask for a notification only after about n more used buffers (n is clamped
 * to 1..in-flight). Split with event_idx: exact; packed with event_idx: after
 * n descriptors' worth, i.e. at most n buffers. Without event_idx: same as
 * virtq_enable_cb. Returns false if n are already pending (poll again). */
bool virtq_enable_cb_delayed(struct virtq *vq, u16 n);

/* At shutdown, after the device stopped using the queue (device or queue
 * reset): returns one token never returned by virtq_get (used or not), NULL
 * when none is left. Works on a broken queue. After the first call the queue
 * is stopped: virtq_add returns -EIO until virtq_reset_state. */
void *virtq_detach_unused(struct virtq *vq);
/* Transient queue: an element lying wholly inside [va, va+len) is driver
 * memory that lives as long as the device's mappings (virtio-net's transmit
 * header slots): it is mapped long-lived (without DMA_TRANSIENT), i.e. once
 * on first use and kept until the device's domain is cleared, and never
 * handed to dma_unmap. Elements outside it keep the per-buffer rules. One range per
 * queue (a later call replaces it; len 0 removes it); it survives
 * virtq_reset_state. The caller frees the range only after the device's
 * mappings are gone (its domain cleared or the device kept for good).
 * Nothing on a queue that is not transient (every mapping is long-lived). */
void virtq_keep_mapped(struct virtq *vq, const void *va, size_t len);

/* After a device-side queue reset and once virtq_detach_unused returned NULL:
 * forget all state, zero the ring and start again at index 0 (also clears
 * broken). Tokens still outstanding are dropped (and logged). */
void virtq_reset_state(struct virtq *vq);

/* The ring's one test seam, for debug/ only (debug/virtq_fault.c): the next
 * virtq_add calls corrupt(vq, head, &head_flags) on the head it built, before
 * publishing it, and disarms. virtq_reset_state disarms too. */
void virtq_arm_debug(struct virtq *vq, void (*corrupt)(struct virtq *vq, u16 head, u16 *head_flags));

/* Free descriptors (split) or ring slots (packed). */
unsigned virtq_num_free(const struct virtq *vq);

/* True once the device broke the ring's rules. */
bool virtq_is_broken(const struct virtq *vq);

#endif
