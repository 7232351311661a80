/* fake_dev: plays the device side of one virtqueue (split or packed) in
 * ordinary host memory, for the host tests. It reads only what a device may
 * read (descriptors, indirect tables, avail ring, driver event area), writes
 * only what a device may write (used ring / used descriptors, device event
 * area, writable buffers), and counts every spec rule the driver breaks in
 * 'errors'. Setting 'lie' makes the next completion write a bad value. */
#ifndef VIREO_FAKE_DEV_H
#define VIREO_FAKE_DEV_H

#include "lib/types.h"
#include "drivers/virtio/virtio_ring_reg.h"
#include "drivers/virtio/virtq.h"
#include "kernel/mm/dma.h"

#define FAKE_MAX_SEGS	64
#define FAKE_TPAGES	256	/* pages with live transient mappings */
#define FAKE_KEPT	16	/* long-lived mappings recorded (ring, kept ranges) */
#define FAKE_LEN_ALL	0xffffffffu	/* complete: fill every writable byte */
/* Device addresses are driver VAs XORed with this, so a VA handed to the
 * device unmapped is caught (user VAs never have these bits set). */
#define FAKE_DMA_XOR	0x0f00000000000000ull

enum fake_lie {
	FAKE_LIE_NONE,
	FAKE_LIE_ID_RANGE,	/* id >= num */
	FAKE_LIE_ID_REPEAT,	/* id of the previous completion again */
	FAKE_LIE_ID_NONHEAD,	/* split: 2nd descriptor of the chain; packed: id never made available */
	FAKE_LIE_LEN,		/* len one past the writable bytes posted */
	FAKE_LIE_IDX_JUMP,	/* split: used idx advanced by num + 1 */
	FAKE_LIE_IDX_AHEAD,	/* split: used idx advanced one past the buffers in flight */
	FAKE_LIE_IDX_BACK,	/* split: used idx moved backwards */
	FAKE_LIE_WRAP,		/* packed: used with the wrong wrap counter (AVAIL=USED=!w) */
	FAKE_LIE_FLAGS,		/* packed: USED=w but AVAIL=!w */
};

struct fake_seg {
	u8 *va;
	u32 len;
	bool write;
};

/* A buffer the device took from the ring and has not completed yet. */
struct fake_buf {
	u16 id;		/* split: head descriptor; packed: buffer id */
	u16 ndesc;	/* ring descriptors it occupies */
	u16 second;	/* split: 2nd descriptor of a direct chain, else 0xffff */
	bool indirect;
	unsigned nseg;
	struct fake_seg seg[FAKE_MAX_SEGS];
	u32 out_len, in_len;
	u32 out_hash;	/* fake_hash of the readable bytes, in order */
};

struct fake_dev {
	/* The device's DMA domain (kernel/mm/dma.h) with this model's ops:
	 * fake_dev_domain() sets them; a queue given it maps through them. */
	struct dma_domain dma;

	/* negotiated features and queue */
	u16 num, index;
	bool packed, event_idx, in_order, indirect;

	/* the ring as the device sees it (translated from device addresses) */
	struct virtq_desc *desc;
	struct virtq_avail *avail;
	struct virtq_used *used;
	struct pvirtq_desc *pdesc;
	struct pvirtq_event_suppress *drv_evt, *dev_evt;

	/* device indices */
	u16 last_avail, used_idx, next_head;	/* split */
	u16 avail_pos, used_pos;		/* packed */
	bool avail_wrap, used_wrap;

	/* taken, not yet completed, in the order taken */
	struct fake_buf *pending;
	unsigned npending;

	/* observations */
	unsigned notifies;		/* available-buffer notifications received */
	u32 last_notify;		/* their data */
	unsigned interrupts;		/* used-buffer notifications we would send */
	unsigned fetched, completed, indirect_seen, used_wrap_flips, maps;
	unsigned maps_writable;		/* dma_map calls for device-writable memory */
	u32 last_out_hash, last_out_len;	/* of the last completed buffer */
	u16 last_id;
	bool have_last_id;

	/* IOMMU model for transient queues: pages mapped transient, counted;
	 * a page whose count drops to 0 is gone and the device faults on it */
	struct { uintptr_t page; unsigned refs; } tpage[FAKE_TPAGES];
	unsigned ntpage;
	unsigned tmaps, unmaps, unmap_flushes, faults;
	/* long-lived maps (transient false): whole pages, reachable until
	 * fake_dev_fini; kmaps counts the calls */
	struct { uintptr_t start, end; } kept[FAKE_KEPT];
	unsigned nkept, kmaps;
	bool refuse;			/* transient maps return 0 (mapping refused) */

	unsigned errors;		/* driver broke a rule */
	char error[192];		/* the last one */

	u8 fill;			/* writable bytes get fill + offset */
	const u8 *data;			/* if set, the next completion writes these
					 * data_len bytes (zeros past them) instead
					 * of the fill pattern; then cleared */
	u32 data_len;
	bool eager;			/* also fetch from inside dma_map, i.e. in the
					 * middle of virtq_add, like a device running
					 * concurrently: catches publishing too early */
	enum fake_lie lie;		/* applied to the next completion, then cleared */
	/* Packed: the last descriptor the device wrote that the driver did not
	 * make (fake_dev_raw_packed, FAKE_LIE_WRAP/FLAGS), and where. The ring
	 * is shared: until the driver writes that slot again, the device takes
	 * it for its own, never for a buffer made available (it could look
	 * like one, and send the device reading memory at the driver's old
	 * address with the length it wrote itself). */
	bool scribbled;
	u16 scribble_pos;
	struct pvirtq_desc scribble;
};

/* cfg->dma for a queue driven by d: a domain whose map counts (maps,
 * maps_writable, kmaps, tmaps) and models an IOMMU for transient maps, and
 * whose unmap treats an unmap of memory the device holds (taken, not
 * completed) or of a page with no transient mapping as a driver error.
 * Identity addresses (no domain: dma_phys, defined here for every host test
 * of a driver) are the VA XORed with FAKE_DMA_XOR, so a VA handed to the
 * device unmapped is caught. */
struct dma_domain *fake_dev_domain(struct fake_dev *d);
/* The device reading [addr, addr+len) of transient memory: false (and a
 * fault counted) when a page of it is no longer mapped. */
bool fake_dev_dma_read(struct fake_dev *d, dma_addr_t addr, u32 len);
void *fake_dma_va(dma_addr_t addr);
/* cfg->notify (ctx = the fake_dev). */
void fake_dev_notify(void *ctx, u32 data);

u32 fake_hash(u32 h, const void *p, size_t n);
#define FAKE_HASH_INIT 2166136261u

/* Attach to the queue vq set up with cfg (reads its ring addresses). */
void fake_dev_init(struct fake_dev *d, const struct virtq_config *cfg, const struct virtq *vq);
/* Device-side queue reset: back to index 0, nothing pending. */
void fake_dev_reset(struct fake_dev *d);
void fake_dev_fini(struct fake_dev *d);

/* Take every newly available buffer into d->pending. Returns how many. */
unsigned fake_dev_fetch(struct fake_dev *d);

/* Complete pending[i]: write min(len, in_len) bytes (FAKE_LEN_ALL: all) and
 * publish one used entry; decides the interrupt. Returns the id, or -1. */
int fake_dev_complete(struct fake_dev *d, unsigned i, u32 len);

/* In-order batch: complete pending[0..k-1] with one used entry carrying the
 * last buffer's id and len_last (the others are fully written). */
int fake_dev_complete_batch(struct fake_dev *d, unsigned k, u32 len_last);

/* Split: publish a raw used entry (any id/len) and advance used idx by adv. */
void fake_dev_raw_used(struct fake_dev *d, u32 id, u32 len, u16 adv);
/* Packed: write a raw descriptor at the device's used position (no advance). */
void fake_dev_raw_packed(struct fake_dev *d, u16 id, u32 len, u16 flags);

/* Whether completing every buffer taken and not yet completed (after
 * fetching what is newly available), one used entry each in any order,
 * would send a used-buffer notification under the driver's suppression
 * fields as they are now. Takes newly available buffers first (as the
 * device may at any time), else only reads; false with none outstanding. */
bool fake_dev_will_notify(struct fake_dev *d);

/* Available-buffer notification suppression, device side. */
void fake_dev_set_no_notify(struct fake_dev *d, bool on);	/* split flags */
void fake_dev_set_avail_event(struct fake_dev *d, u16 idx);	/* split event idx */
void fake_dev_set_event(struct fake_dev *d, u16 flags, u16 off, bool wrap);	/* packed */

#endif
