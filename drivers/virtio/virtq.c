/* virtq: split (§2.7) and packed (§2.8) virtqueues behind one API.
 *
 * Trust model: everything the device can write (split used ring and
 * avail_event, packed descriptors and device event suppression) is read once
 * with READ_ONCE, checked, and never used as an index before the check. The
 * driver never reads back memory it wrote for the device (descriptors, avail
 * ring, indirect tables): chain links, tokens, lengths and the indirect flag
 * live in the private shadow array vq->slot[]. A broken rule marks the queue
 * broken (virtq_fail) instead of trusting or panicking.
 *
 * Ring memory layout (one block, VIRTQ_RING_ALIGN-aligned, device-visible):
 *   split:  desc[num] | avail (+used_event) | pad to 4096 | used (+avail_event)
 *           (the legacy layout, so legacy transports can use it unchanged)
 *   packed: desc[num] | driver event suppression | device event suppression
 *   then, if indirect: num tables of indirect_max descriptors, one per split
 *   head descriptor / packed buffer id, so a table is never shared.
 */
#include "lib/types.h"
#include "drivers/virtio/virtq.h"
#include "drivers/virtio/virtio_ring_reg.h"
#include "kernel/mm/dma.h"
#include "lib/string.h"
#include <arch.h>

#define NO_SLOT 0xffffu	/* end of a shadow list; never a valid index (num <= 1024) */

struct virtq_slot {
	void *token;	/* non-NULL iff this is an in-flight head / buffer id */
	u32 in_len;	/* device-writable bytes posted with the buffer */
	u16 next;	/* split: next descriptor (chain or free list); packed: next free id */
	u16 ndescs;	/* ring descriptors the buffer holds (1 when indirect) */
	u16 fifo_next;	/* in_order: the next newer in-flight buffer */
	u16 pos0;	/* packed, direct, transient: its first record (virtq_tmap) */
	u16 nelem;	/* indirect: elements in the table */
	bool indirect;
};

/* Transient queues: what one element mapped, for dma_unmap. Split direct
 * elements by descriptor index (a descriptor is the buffer's until it is
 * released); packed direct ones in records taken from a free list of num
 * (ring positions are reused while older buffers are still in flight, but
 * never more than num descriptors are), linked from the slot's pos0; table
 * elements at num + slot * indirect_max + k. Driver-private, like the slots. */
struct virtq_tmap {
	const void *va;
	u32 len;
	u16 next;	/* packed: next record of the chain, or of the free list */
	bool writes;
	bool live;	/* mapped and not yet unmapped */
};

struct virtq_layout {
	size_t driver_off, device_off, indirect_off, ring_bytes;
	u16 indirect_max;
};

/* ---- barriers, chosen once per queue ----------------------------------- *
 *
 * Virtio 1.2 section 6 (Reserved Feature Bits), VIRTIO_F_ORDER_PLATFORM (36):
 * "If this feature bit is negotiated, the ordering in effect for any memory
 * accesses by the driver that need to be ordered in a specific way with
 * respect to accesses by the device is the one suitable for devices
 * described by the platform. This implies that the driver needs to use
 * memory barriers suitable for devices described by the platform; e.g. for
 * the PCI transport in the case of hardware PCI devices. If this feature bit
 * is not negotiated, then the device and driver are assumed to be
 * implemented in software, that is they can be assumed to run on identical
 * CPUs in an SMP configuration. Thus a weaker form of memory barriers is
 * sufficient to yield better performance." (6.1: "A driver SHOULD accept
 * VIRTIO_F_ORDER_PLATFORM if it is offered.")
 *
 * So, per queue, fixed at virtq_init from the negotiated bit
 * (virtio_core.c: weak_barriers = !ORDER_PLATFORM):
 *   not negotiated (weak_barriers): the SMP barriers of kernel/arch/arch.h,
 *     dma_wmb()/dma_rmb() (compiler barriers: x86-TSO keeps stores in order
 *     and loads in order as another CPU sees them) and dma_mb() (a locked
 *     add: the one reordering TSO allows, store then load, needs it);
 *   negotiated: the platform's device barriers, wmb() = sfence, rmb() =
 *     lfence, mb() = mfence, which also order non-temporal and
 *     write-combining accesses as a hardware device on the bus sees them.
 * The notification itself needs no barrier of its own: every kick goes
 * through virtq_kick_prepare(), whose virtq_mb() orders the published ring
 * before the suppression read and the transport's uncached MMIO store
 * (virtio_pci.c, virtio_mmio.c), which x86 never moves before older stores.
 * QEMU 7.2's devices do not offer ORDER_PLATFORM (no property turns it on;
 * the boot log's feature line never lists it), so under QEMU every queue
 * takes the weak set; tests/host/drivers/virtio/net/test_virtio_net.c checks both choices by
 * counting the barriers the host shim executes. */

static inline void virtq_wmb(const struct virtq *vq)
{
	if (vq->weak_barriers)
		dma_wmb();
	else
		wmb();
}

static inline void virtq_rmb(const struct virtq *vq)
{
	if (vq->weak_barriers)
		dma_rmb();
	else
		rmb();
}

static inline void virtq_mb(const struct virtq *vq)
{
	if (vq->weak_barriers)
		dma_mb();
	else
		mb();
}

/* ---- small helpers ------------------------------------------------------ */

static void virtq_zero_ring(void *p, size_t n)
{
	volatile u64 *q = p;	/* ring memory is page-aligned, n a page multiple */
	size_t i;

	for (i = 0; i < n / sizeof(u64); i++)
		q[i] = 0;
}

static void *virtq_fail(struct virtq *vq, const char *why)
{
	if (!vq->broken) {
		vq->broken = true;
		vq->add_slow = true;
		klog("virtq %u: device broke the ring: %s", vq->index, why);
	}
	return NULL;
}

/* Event-index test (§2.7.7/§2.7.10): has the index moved past 'event' when
 * going from old to new? All arithmetic wraps at 2^16. */
static inline bool virtq_need_event(u16 event, u16 new_idx, u16 old_idx)
{
	return (u16)(new_idx - event - 1) < (u16)(new_idx - old_idx);
}

static dma_addr_t virtq_map(const struct virtq *vq, const void *va, size_t len, bool device_writes)
{
	return dma_map(vq->dma, va, len, device_writes ? DMA_WRITE : 0);
}

/* Inside virtq_keep_mapped's range (wrap-safe: both ends checked as
 * offsets from its start). */
static bool virtq_kept(const struct virtq *vq, const struct virtq_sg *sg)
{
	uintptr_t off = (uintptr_t)sg->addr - (uintptr_t)vq->keep_va;

	return vq->keep_len && (uintptr_t)sg->addr >= (uintptr_t)vq->keep_va && off <= vq->keep_len &&
	       sg->len <= vq->keep_len - off;
}

/* One element of a buffer; on a transient queue recorded in *t (a kept
 * element is recorded as holding nothing to unmap). */
static dma_addr_t virtq_map_el(const struct virtq *vq, size_t t, const struct virtq_sg *sg,
			       bool device_writes)
{
	if (!vq->transient)
		return virtq_map(vq, sg->addr, sg->len, device_writes);
	if (virtq_kept(vq, sg)) {
		vq->tmap[t].live = false;
		return virtq_map(vq, sg->addr, sg->len, device_writes);
	}
	dma_addr_t addr = dma_map(vq->dma, sg->addr, sg->len, DMA_TRANSIENT | (device_writes ? DMA_WRITE : 0));

	vq->tmap[t].va = sg->addr;
	vq->tmap[t].len = sg->len;
	vq->tmap[t].writes = device_writes;
	vq->tmap[t].live = addr != 0;	/* 0: refused, nothing held (the device faults on it) */
	return addr;
}

static void virtq_unmap_el(struct virtq *vq, size_t t)
{
	struct virtq_tmap *m = &vq->tmap[t];

	if (!m->live)
		return;
	m->live = false;
	dma_unmap(vq->dma, m->va, m->len, DMA_TRANSIENT | (m->writes ? DMA_WRITE : 0));
	vq->stats.unmaps++;
	vq->unmapped = true;
}

/* Buffer id is back from the device (or the device was reset): drop the
 * mappings of its elements. Walks the private shadows only. */
static void virtq_unmap_chain(struct virtq *vq, u16 id)
{
	const struct virtq_slot *s = &vq->slot[id];
	size_t base = vq->num + (size_t)id * vq->indirect_max;
	u16 k, p = vq->is_packed ? s->pos0 : id, nx;

	if (s->indirect) {
		for (k = 0; k < s->nelem; k++)
			virtq_unmap_el(vq, base + k);
		return;
	}
	for (k = 0; k < s->ndescs && p != NO_SLOT; k++) {
		virtq_unmap_el(vq, p);
		if (vq->is_packed) {
			nx = vq->tmap[p].next;
			vq->tmap[p].next = vq->tmap_free;
			vq->tmap_free = p;
			p = nx;
		} else if (vq->in_order) {
			p = (u16)((p + 1u) & (vq->num - 1u));
		} else {
			p = vq->slot[p].next;
		}
	}
}

/* End of a reclaim pass: one invalidation for what it unmapped. */
static void virtq_unmap_flush(struct virtq *vq)
{
	if (!vq->unmapped)
		return;
	vq->unmapped = false;
	dma_flush(vq->dma);
}

static size_t virtq_indirect_table_off(const struct virtq *vq, u16 i)
{
	return vq->indirect_off + (size_t)i * vq->indirect_max * sizeof(struct virtq_desc);
}

static const struct virtq_sg *virtq_sg_at(const struct virtq_sg *out, unsigned n_out,
				    const struct virtq_sg *in, unsigned k)
{
	return k < n_out ? &out[k] : &in[k - n_out];
}

static le16 *virtq_split_used_event(const struct virtq *vq)
{
	return &vq->split.avail->ring[vq->num];
}

static le16 *virtq_split_avail_event(const struct virtq *vq)
{
	return (le16 *)&vq->split.used->ring[vq->num];
}

static u16 virtq_packed_avail_bits(bool wrap)
{
	return wrap ? VIRTQ_DESC_F_AVAIL : VIRTQ_DESC_F_USED;
}

static void virtq_fifo_push(struct virtq *vq, u16 id)
{
	vq->slot[id].fifo_next = NO_SLOT;
	if (vq->fifo_head == NO_SLOT)
		vq->fifo_head = id;
	else
		vq->slot[vq->fifo_tail].fifo_next = id;
	vq->fifo_tail = id;
}

static void virtq_fifo_pop(struct virtq *vq)
{
	u16 id = vq->fifo_head;

	vq->fifo_head = vq->slot[id].fifo_next;
	if (vq->fifo_head == NO_SLOT)
		vq->fifo_tail = NO_SLOT;
	vq->slot[id].fifo_next = NO_SLOT;
}

/* In-order: number of in-flight buffers from the oldest up to and including
 * id, or 0 if id is not in the in-flight list. Bounded by vq->inflight. */
static u16 virtq_fifo_distance(const struct virtq *vq, u16 id)
{
	u16 cur = vq->fifo_head, k = 1;

	while (cur != NO_SLOT && k <= vq->inflight) {
		if (cur == id)
			return k;
		cur = vq->slot[cur].fifo_next;
		k++;
	}
	return 0;
}

/* ---- layout and setup ---------------------------------------------------- */

static int virtq_layout(const struct virtq_config *cfg, struct virtq_layout *l)
{
	size_t num, end;

	if (!cfg || cfg->num == 0 || cfg->num > VIRTQ_MAX_SIZE)
		return -EINVAL;
	if (!cfg->packed && !IS_POW2(cfg->num))
		return -EINVAL;
	if (cfg->indirect_max > VIRTQ_INDIRECT_MAX)
		return -EINVAL;
	num = cfg->num;

	l->driver_off = VIRTQ_DESC_SIZE(num);
	if (cfg->packed) {
		l->device_off = l->driver_off + sizeof(struct pvirtq_event_suppress);
		end = l->device_off + sizeof(struct pvirtq_event_suppress);
	} else {
		l->device_off = ALIGN_UP(l->driver_off + VIRTQ_AVAIL_SIZE(num),
					 (size_t)VIRTQ_LEGACY_ALIGN);
		end = l->device_off + VIRTQ_USED_SIZE(num);
	}

	/* Chains in a table are limited to the queue size (§2.7.5.3.1). */
	l->indirect_max = 0;
	if (cfg->indirect) {
		l->indirect_max = cfg->indirect_max ? cfg->indirect_max : VIRTQ_INDIRECT_DEFAULT;
		if (l->indirect_max > cfg->num)
			l->indirect_max = cfg->num;
	}
	l->indirect_off = ALIGN_UP(end, (size_t)VIRTQ_DESC_ALIGN);
	end = l->indirect_off + num * l->indirect_max * sizeof(struct virtq_desc);
	l->ring_bytes = ALIGN_UP(end, (size_t)VIRTQ_RING_ALIGN);
	return 0;
}

int virtq_mem_size(const struct virtq_config *cfg, size_t *ring_bytes, size_t *priv_bytes)
{
	struct virtq_layout l;
	int err;

	err = virtq_layout(cfg, &l);
	if (err)
		return err;
	if (ring_bytes)
		*ring_bytes = l.ring_bytes;
	if (priv_bytes)
		*priv_bytes = (size_t)cfg->num * sizeof(struct virtq_slot) +
			      (cfg->transient ? (size_t)cfg->num * (1u + l.indirect_max) *
						sizeof(struct virtq_tmap) : 0);
	return 0;
}

/* Everything a fresh or reset queue starts with; the ring memory is zeroed. */
__cold static void virtq_start(struct virtq *vq)
{
	u16 i;

	virtq_zero_ring(vq->ring_mem, vq->ring_bytes);
	for (i = 0; i < vq->num; i++) {
		vq->slot[i].token = NULL;
		vq->slot[i].in_len = 0;
		vq->slot[i].next = (u16)(i + 1u < vq->num ? i + 1u : NO_SLOT);
		vq->slot[i].ndescs = 0;
		vq->slot[i].fifo_next = NO_SLOT;
		vq->slot[i].indirect = false;
		vq->slot[i].pos0 = 0;
		vq->slot[i].nelem = 0;
	}
	if (vq->tmap) {
		memset(vq->tmap, 0, (size_t)vq->num * (1u + vq->indirect_max) * sizeof(struct virtq_tmap));
		for (i = 0; i < vq->num; i++)
			vq->tmap[i].next = (u16)(i + 1u < vq->num ? i + 1u : NO_SLOT);
	}
	vq->tmap_free = 0;
	vq->unmapped = false;
	vq->broken = false;
	vq->stopped = false;
	vq->debug_corrupt = NULL;
	vq->add_slow = false;
	vq->cb_mode = VIRTQ_CB_ENABLED;	/* zeroed flags/used_event mean "notify" */
	vq->num_free = vq->num;
	vq->inflight = 0;
	vq->added = 0;
	vq->fifo_head = NO_SLOT;
	vq->fifo_tail = NO_SLOT;
	vq->batch = false;
	vq->batch_last = NO_SLOT;
	vq->batch_len = 0;
	if (vq->is_packed) {
		vq->packed.next_avail = 0;
		vq->packed.last_used = 0;
		vq->packed.avail_wrap = true;	/* both wrap counters start at 1 */
		vq->packed.used_wrap = true;
		vq->packed.free_id = 0;
	} else {
		vq->split.avail_idx = 0;
		vq->split.last_used = 0;
		vq->split.free_head = 0;
		vq->split.next_desc = 0;
	}
}

__cold int virtq_init(struct virtq *vq, const struct virtq_config *cfg, void *ring_mem, void *priv_mem)
{
	struct virtq_layout l;
	u8 *base = ring_mem;
	int err;

	if (!vq || !cfg || !ring_mem || !priv_mem || !cfg->notify)
		return -EINVAL;
	err = virtq_layout(cfg, &l);
	if (err)
		return err;
	if ((uintptr_t)ring_mem & (VIRTQ_RING_ALIGN - 1))
		return -EINVAL;
	if ((uintptr_t)priv_mem & (_Alignof(struct virtq_slot) - 1))
		return -EINVAL;

	memset(vq, 0, sizeof(*vq));
	vq->num = cfg->num;
	vq->index = cfg->index;
	vq->indirect_max = l.indirect_max;
	vq->direct_max = cfg->direct_max;
	vq->is_packed = cfg->packed;
	vq->event_idx = cfg->event_idx;
	vq->indirect = cfg->indirect;
	vq->in_order = cfg->in_order;
	vq->notification_data = cfg->notification_data;
	vq->weak_barriers = cfg->weak_barriers;
	vq->dma = cfg->dma;
	vq->notify = cfg->notify;
	vq->ctx = cfg->ctx;

	vq->ring_mem = ring_mem;
	vq->ring_bytes = l.ring_bytes;
	vq->driver_off = l.driver_off;
	vq->device_off = l.device_off;
	vq->indirect_off = l.indirect_off;
	vq->slot = priv_mem;
	if (cfg->transient)
		vq->tmap = (struct virtq_tmap *)(vq->slot + cfg->num);
	vq->transient = cfg->transient && cfg->dma;
	/* One mapping for the whole block: ring parts and indirect tables are
	 * then at fixed offsets from ring_dma. */
	vq->ring_dma = virtq_map(vq, ring_mem, l.ring_bytes, true);	/* the device writes the used ring */

	if (vq->is_packed) {
		vq->packed.desc = (struct pvirtq_desc *)base;
		vq->packed.driver = (struct pvirtq_event_suppress *)(base + l.driver_off);
		vq->packed.device = (struct pvirtq_event_suppress *)(base + l.device_off);
	} else {
		vq->split.desc = (struct virtq_desc *)base;
		vq->split.avail = (struct virtq_avail *)(base + l.driver_off);
		vq->split.used = (struct virtq_used *)(base + l.device_off);
	}
	virtq_start(vq);
	return 0;
}

void virtq_ring_addrs(const struct virtq *vq, dma_addr_t *desc, dma_addr_t *driver,
		      dma_addr_t *device)
{
	if (desc)
		*desc = vq->ring_dma;
	if (driver)
		*driver = vq->ring_dma + vq->driver_off;
	if (device)
		*device = vq->ring_dma + vq->device_off;
}

/* ---- adding buffers ------------------------------------------------------ */

/* A buffer built in the ring but not yet visible to the device: the head
 * (split: descriptor index; packed: ring position, its flags and the count
 * of descriptors) that virtq_add_publish() makes available. */
struct add_head {
	u16 pos;
	u16 flags;
	u16 ndescs;
};

static void virtq_split_add(struct virtq *vq, const struct virtq_sg *out, unsigned n_out,
		      const struct virtq_sg *in, unsigned n_in, void *token,
		      bool use_indirect, u32 in_len, struct add_head *h)
{
	unsigned total = n_out + n_in, k;
	u16 mask = (u16)(vq->num - 1);
	u16 head, i, after, ndescs;
	struct virtq_desc *d;

	/* With IN_ORDER descriptors are used in ring order (§2.7.5). */
	head = vq->in_order ? vq->split.next_desc : vq->split.free_head;

	if (use_indirect) {
		struct virtq_desc *table =
			(struct virtq_desc *)((u8 *)vq->ring_mem + virtq_indirect_table_off(vq, head));

		for (k = 0; k < total; k++) {
			const struct virtq_sg *sg = virtq_sg_at(out, n_out, in, k);

			table[k].addr = virtq_map_el(vq, vq->num + (size_t)head * vq->indirect_max + k, sg,
						     k >= n_out);
			table[k].len = sg->len;
			table[k].flags = (u16)((k >= n_out ? VIRTQ_DESC_F_WRITE : 0) |
					       (k + 1 < total ? VIRTQ_DESC_F_NEXT : 0));
			table[k].next = (u16)(k + 1 < total ? k + 1 : 0);
		}
		d = &vq->split.desc[head];
		d->addr = vq->ring_dma + virtq_indirect_table_off(vq, head);
		d->len = (u32)(total * sizeof(struct virtq_desc));
		d->flags = VIRTQ_DESC_F_INDIRECT;
		d->next = 0;
		ndescs = 1;
		after = vq->in_order ? (u16)((head + 1) & mask) : vq->slot[head].next;
	} else {
		i = head;
		for (k = 0; k < total; k++) {
			const struct virtq_sg *sg = virtq_sg_at(out, n_out, in, k);
			u16 nx = vq->in_order ? (u16)((i + 1) & mask) : vq->slot[i].next;

			d = &vq->split.desc[i];
			d->addr = virtq_map_el(vq, i, sg, k >= n_out);
			d->len = sg->len;
			d->flags = (u16)((k >= n_out ? VIRTQ_DESC_F_WRITE : 0) |
					 (k + 1 < total ? VIRTQ_DESC_F_NEXT : 0));
			d->next = k + 1 < total ? nx : 0;
			i = nx;
		}
		ndescs = (u16)total;
		after = i;
	}
	if (vq->in_order)
		vq->split.next_desc = after;
	else
		vq->split.free_head = after;

	vq->slot[head].token = token;
	vq->slot[head].in_len = in_len;
	vq->slot[head].ndescs = ndescs;
	vq->slot[head].indirect = use_indirect;
	vq->slot[head].nelem = (u16)total;
	vq->num_free = (u16)(vq->num_free - ndescs);
	if (vq->in_order)
		virtq_fifo_push(vq, head);
	h->pos = head;
}

static void virtq_split_publish(struct virtq *vq, const struct add_head *h)
{
	u16 mask = (u16)(vq->num - 1);

	vq->split.avail->ring[vq->split.avail_idx & mask] = h->pos;
	virtq_wmb(vq);	/* orders descriptors and the ring entry before the idx that publishes them */
	vq->split.avail_idx++;
	WRITE_ONCE(vq->split.avail->idx, vq->split.avail_idx);
	vq->added++;
}

static void virtq_packed_add(struct virtq *vq, const struct virtq_sg *out, unsigned n_out,
		       const struct virtq_sg *in, unsigned n_in, void *token,
		       bool use_indirect, u32 in_len, struct add_head *h)
{
	unsigned total = n_out + n_in, k;
	u16 id = vq->packed.free_id;
	u16 pos = vq->packed.next_avail, head = pos, head_flags = 0, ndescs;
	bool wrap = vq->packed.avail_wrap;
	struct pvirtq_desc *d;

	if (use_indirect) {
		struct pvirtq_desc *table =
			(struct pvirtq_desc *)((u8 *)vq->ring_mem + virtq_indirect_table_off(vq, id));

		/* In a table only WRITE is valid; id is reserved (§2.8.7). */
		for (k = 0; k < total; k++) {
			const struct virtq_sg *sg = virtq_sg_at(out, n_out, in, k);

			table[k].addr = virtq_map_el(vq, vq->num + (size_t)id * vq->indirect_max + k, sg,
						     k >= n_out);
			table[k].len = sg->len;
			table[k].id = 0;
			table[k].flags = (u16)(k >= n_out ? VIRTQ_DESC_F_WRITE : 0);
		}
		d = &vq->packed.desc[pos];
		d->addr = vq->ring_dma + virtq_indirect_table_off(vq, id);
		d->len = (u32)(total * sizeof(struct pvirtq_desc));
		d->id = id;
		head_flags = (u16)(VIRTQ_DESC_F_INDIRECT | virtq_packed_avail_bits(wrap));
		if (++pos == vq->num) {
			pos = 0;
			wrap = !wrap;
		}
		ndescs = 1;
	} else {
		u16 rec = NO_SLOT, prev = NO_SLOT;

		for (k = 0; k < total; k++) {
			const struct virtq_sg *sg = virtq_sg_at(out, n_out, in, k);
			u16 flags = (u16)((k >= n_out ? VIRTQ_DESC_F_WRITE : 0) |
					  (k + 1 < total ? VIRTQ_DESC_F_NEXT : 0) |
					  virtq_packed_avail_bits(wrap));

			d = &vq->packed.desc[pos];
			if (vq->transient) {	/* at most num direct descriptors in flight */
				rec = vq->tmap_free;
				vq->tmap_free = vq->tmap[rec].next;
				vq->tmap[rec].next = NO_SLOT;
				if (prev == NO_SLOT)
					vq->slot[id].pos0 = rec;
				else
					vq->tmap[prev].next = rec;
				prev = rec;
			}
			d->addr = virtq_map_el(vq, rec, sg, k >= n_out);
			d->len = sg->len;
			d->id = id;	/* required in the last one; harmless in the rest */
			if (k == 0)
				head_flags = flags;	/* published last, below */
			else
				d->flags = flags;
			if (++pos == vq->num) {
				pos = 0;
				wrap = !wrap;
			}
		}
		ndescs = (u16)total;
	}
	vq->packed.next_avail = pos;
	vq->packed.avail_wrap = wrap;

	vq->packed.free_id = vq->slot[id].next;
	vq->slot[id].next = NO_SLOT;
	vq->slot[id].token = token;
	vq->slot[id].in_len = in_len;
	vq->slot[id].ndescs = ndescs;
	vq->slot[id].indirect = use_indirect;
	vq->slot[id].nelem = (u16)total;
	vq->num_free = (u16)(vq->num_free - ndescs);
	if (vq->in_order)
		virtq_fifo_push(vq, id);
	h->pos = head;
	h->flags = head_flags;
	h->ndescs = ndescs;
}

static void virtq_packed_publish(struct virtq *vq, const struct add_head *h)
{
	virtq_wmb(vq);	/* orders the rest of the list before the head flags that publish it */
	WRITE_ONCE(vq->packed.desc[h->pos].flags, h->flags);
	vq->added += h->ndescs;
}

/* Checks the request and builds it in the ring, unpublished (*h). */
static inline __attribute__((always_inline)) int
virtq_add_build(struct virtq *vq, const struct virtq_sg *out, unsigned n_out,
	  const struct virtq_sg *in, unsigned n_in, void *token, struct add_head *h)
{
	u64 bytes = 0, in_bytes = 0;
	unsigned total, k;
	bool use_indirect;
	u16 need;

	if (!token || n_out > vq->num || n_in > vq->num)
		return -EINVAL;
	total = n_out + n_in;
	if (total == 0 || total > vq->num)	/* no chain longer than the queue */
		return -EINVAL;
	if ((n_out && !out) || (n_in && !in))
		return -EINVAL;
	for (k = 0; k < total; k++) {
		const struct virtq_sg *sg = virtq_sg_at(out, n_out, in, k);

		if (!sg->addr || sg->len == 0)
			return -EINVAL;
		bytes += sg->len;
		if (k >= n_out)
			in_bytes += sg->len;
	}
	if (bytes > 0xffffffffu)	/* chains stay under 2^32 bytes (§2.7.5.1) */
		return -EINVAL;

	/* Policy: one table per request whenever it fits, so a multi-element
	 * request costs one ring slot; single elements go direct (a table
	 * would only add a fetch), as do chains longer than indirect_max, and
	 * chains up to direct_max while half the ring is free. */
	use_indirect = vq->indirect_max >= 2 && total >= 2 && total <= vq->indirect_max &&
		       !(total <= vq->direct_max && vq->num_free >= vq->num / 2u);
	need = (u16)(use_indirect ? 1 : total);
	if (need > vq->num_free || (vq->is_packed && vq->packed.free_id == NO_SLOT)) {
		vq->stats.enospc++;
		return -ENOSPC;
	}

	if (vq->is_packed)
		virtq_packed_add(vq, out, n_out, in, n_in, token, use_indirect, (u32)in_bytes, h);
	else
		virtq_split_add(vq, out, n_out, in, n_in, token, use_indirect, (u32)in_bytes, h);
	vq->inflight++;
	vq->stats.adds++;
	if (use_indirect)
		vq->stats.indirect_adds++;
	return 0;
}

static inline void virtq_add_publish(struct virtq *vq, const struct add_head *h)
{
	if (vq->is_packed)
		virtq_packed_publish(vq, h);
	else
		virtq_split_publish(vq, h);
}

/* Every add that is not plain: the queue broken or stopped (-EIO), or the
 * test seam armed (virtq_arm_debug), which goes on this one add. */
static __attribute__((noinline, cold)) int
virtq_add_slow(struct virtq *vq, const struct virtq_sg *out, unsigned n_out,
	       const struct virtq_sg *in, unsigned n_in, void *token)
{
	struct add_head h;
	int err;

	if (vq->broken || vq->stopped)
		return -EIO;
	err = virtq_add_build(vq, out, n_out, in, n_in, token, &h);
	if (err)
		return err;
	if (vq->debug_corrupt) {
		void (*corrupt)(struct virtq *, u16, u16 *) = vq->debug_corrupt;

		vq->debug_corrupt = NULL;
		corrupt(vq, h.pos, &h.flags);
	}
	vq->add_slow = false;	/* neither broken nor stopped, and the fault is spent */
	virtq_add_publish(vq, &h);
	return 0;
}

/* The hot path tests one flag, add_slow, in place of broken || stopped; the
 * fault and its branches live in virtq_add_slow alone. */
int virtq_add(struct virtq *vq, const struct virtq_sg *out, unsigned n_out,
	      const struct virtq_sg *in, unsigned n_in, void *token)
{
	struct add_head h;
	int err;

	if (__builtin_expect(vq->add_slow, 0))
		return virtq_add_slow(vq, out, n_out, in, n_in, token);
	err = virtq_add_build(vq, out, n_out, in, n_in, token, &h);
	if (err == 0)
		virtq_add_publish(vq, &h);
	return err;
}

/* ---- notifying the device ------------------------------------------------ */

static bool virtq_split_need_kick(const struct virtq *vq, u32 added)
{
	u16 new_idx = vq->split.avail_idx;
	u16 old_idx = (u16)(new_idx - added);

	if (added >= 0xffffu)	/* idx went around: old/new no longer tell */
		return true;
	if (vq->event_idx)
		return virtq_need_event(READ_ONCE(*virtq_split_avail_event(vq)), new_idx, old_idx);
	return !(READ_ONCE(vq->split.used->flags) & VIRTQ_USED_F_NO_NOTIFY);
}

static bool virtq_packed_need_kick(const struct virtq *vq, u32 added)
{
	u16 flags, off_wrap, event, new_pos, old_pos;
	bool wrap;

	if (added >= vq->num)	/* a full lap since the last kick: always notify */
		return true;
	flags = READ_ONCE(vq->packed.device->flags) & VIRTQ_EVENT_FLAGS_MASK;
	if (flags == VIRTQ_EVENT_FLAGS_DISABLE)
		return false;
	if (flags != VIRTQ_EVENT_FLAGS_DESC || !vq->event_idx)
		return true;	/* ENABLE, or a value we may not honour: notify */

	/* Positions of the current lap are 0..num-1, those of the previous lap
	 * num below that; u16 arithmetic keeps the event test wrap-correct. */
	off_wrap = READ_ONCE(vq->packed.device->desc);
	event = off_wrap & VIRTQ_EVENT_OFF_MASK;
	wrap = off_wrap >> VIRTQ_EVENT_WRAP_SHIFT;
	if (wrap != vq->packed.avail_wrap)
		event = (u16)(event - vq->num);
	new_pos = vq->packed.next_avail;
	old_pos = (u16)(new_pos - added);
	return virtq_need_event(event, new_pos, old_pos);
}

bool virtq_kick_prepare(struct virtq *vq)
{
	u32 added = vq->added;
	bool need;

	if (vq->broken || vq->stopped || added == 0)
		return false;
	vq->added = 0;
	virtq_mb(vq);	/* orders publishing the buffers before reading the device's suppression fields */
	need = vq->is_packed ? virtq_packed_need_kick(vq, added) : virtq_split_need_kick(vq, added);
	if (!need)
		vq->stats.kicks_suppressed++;
	return need;
}

void virtq_notify(struct virtq *vq)
{
	u32 data = vq->index;

	if (vq->broken)
		return;
	if (vq->notification_data) {
		if (vq->is_packed)
			data |= (u32)vq->packed.next_avail << VIRTQ_NOTIFY_OFF_SHIFT |
				(u32)vq->packed.avail_wrap << VIRTQ_NOTIFY_WRAP_SHIFT;
		else
			data |= (u32)vq->split.avail_idx << VIRTQ_NOTIFY_OFF_SHIFT;
	}
	vq->stats.kicks++;
	vq->notify(vq->ctx, data);
}

bool virtq_kick(struct virtq *vq)
{
	if (!virtq_kick_prepare(vq))
		return false;
	virtq_notify(vq);
	return true;
}

/* ---- used buffers ---------------------------------------------------------- */

/* Give back buffer id (split: head descriptor) to the free pool, without
 * touching where the used ring is read. Returns its token. */
static void *virtq_release(struct virtq *vq, u16 id)
{
	struct virtq_slot *s = &vq->slot[id];
	void *token = s->token;
	u16 last = id, k;

	if (vq->transient)
		virtq_unmap_chain(vq, id);	/* before the links below change */
	if (vq->in_order)
		virtq_fifo_pop(vq);	/* callers only release the oldest with in_order */
	if (vq->is_packed) {
		s->next = vq->packed.free_id;
		vq->packed.free_id = id;
	} else if (!vq->in_order) {
		/* Walk the shadow links, never vq->split.desc[]. */
		for (k = 1; k < s->ndescs; k++)
			last = vq->slot[last].next;
		vq->slot[last].next = vq->split.free_head;
		vq->split.free_head = id;
	}
	vq->num_free = (u16)(vq->num_free + s->ndescs);
	s->token = NULL;
	s->in_len = 0;
	s->ndescs = 0;
	s->indirect = false;
	vq->inflight--;
	return token;
}

/* Buffer id was used: release it and step past its used entry/descriptors. */
static void *virtq_complete(struct virtq *vq, u16 id)
{
	u16 ndescs = vq->slot[id].ndescs;

	if (vq->is_packed) {
		u16 pos = (u16)(vq->packed.last_used + ndescs);

		if (pos >= vq->num) {
			pos = (u16)(pos - vq->num);
			vq->packed.used_wrap = !vq->packed.used_wrap;
		}
		vq->packed.last_used = pos;
	} else {
		vq->split.last_used++;
	}
	return virtq_release(vq, id);
}

/* In-order batch: hand out the oldest buffer the batch covered. Buffers the
 * device skipped count as fully used (§2.7.9/§2.8.11): len = what we posted. */
static void *virtq_batch_pop(struct virtq *vq, u32 *len)
{
	u16 id = vq->fifo_head;

	if (id == vq->batch_last) {
		*len = vq->batch_len;
		vq->batch = false;
	} else {
		*len = vq->slot[id].in_len;
		vq->stats.batched++;
	}
	return virtq_complete(vq, id);
}

/* In-order: used entry for id stands for every buffer up to id. */
static void *virtq_start_batch(struct virtq *vq, u16 id, u32 len, u32 *len_out)
{
	vq->batch = true;
	vq->batch_last = id;
	vq->batch_len = len;
	return virtq_batch_pop(vq, len_out);
}

static void *virtq_split_get(struct virtq *vq, u32 *len)
{
	u16 seen, pending, slotn, dist;
	u32 id, l;
	void *token;

	if (vq->batch) {
		token = virtq_batch_pop(vq, len);
		goto out;
	}
	seen = READ_ONCE(vq->split.used->idx);
	pending = (u16)(seen - vq->split.last_used);
	if (pending == 0)
		return NULL;
	/* Each used entry stands for at least one distinct in-flight buffer. */
	if (pending > vq->inflight)
		return virtq_fail(vq, "used idx ran ahead of the buffers in flight");

	virtq_rmb(vq);	/* orders the used idx read before reading the entries it covers */

	slotn = vq->split.last_used & (u16)(vq->num - 1);
	id = READ_ONCE(vq->split.used->ring[slotn].id);
	l = READ_ONCE(vq->split.used->ring[slotn].len);
	if (id >= vq->num || !vq->slot[id].token)
		return virtq_fail(vq, "used id is not an in-flight head");
	if (l > vq->slot[id].in_len)
		return virtq_fail(vq, "used len exceeds the writable bytes posted");

	if (vq->in_order && id != vq->fifo_head) {
		dist = virtq_fifo_distance(vq, (u16)id);
		if (dist == 0)
			return virtq_fail(vq, "in-order used id not in flight");
		/* A batch of dist buffers advances used idx by dist (§2.7.9). */
		if (dist > pending)
			return virtq_fail(vq, "in-order batch runs past used idx");
		token = virtq_start_batch(vq, (u16)id, l, len);
	} else {
		*len = l;
		token = virtq_complete(vq, (u16)id);
	}
out:
	/* Callbacks on with event idx: the next used entry must notify us. */
	if (vq->event_idx && vq->cb_mode == VIRTQ_CB_ENABLED) {
		WRITE_ONCE(*virtq_split_used_event(vq), vq->split.last_used);
		virtq_mb(vq);	/* orders the used_event store before the next used idx read */
	}
	return token;
}

static void *virtq_packed_get(struct virtq *vq, u32 *len)
{
	u16 pos = vq->packed.last_used, flags, id;
	bool w = vq->packed.used_wrap, avail, used;
	u32 l;

	if (vq->batch)
		return virtq_batch_pop(vq, len);
	if (vq->inflight == 0)
		return NULL;	/* nothing the device could legitimately return */

	/* pos is in [last_used, next_avail): it holds either our available
	 * descriptor (AVAIL=w, USED=!w) or a used one (AVAIL=USED=w). */
	flags = READ_ONCE(vq->packed.desc[pos].flags);
	avail = !!(flags & VIRTQ_DESC_F_AVAIL);
	used = !!(flags & VIRTQ_DESC_F_USED);
	if (used != w) {
		if (avail == w)
			return NULL;
		return virtq_fail(vq, "descriptor flags match neither wrap counter");
	}
	if (avail != w)
		return virtq_fail(vq, "used descriptor with AVAIL != USED");

	virtq_rmb(vq);	/* orders the flags read before reading the id and len they publish */

	id = READ_ONCE(vq->packed.desc[pos].id);
	l = READ_ONCE(vq->packed.desc[pos].len);
	if (id >= vq->num || !vq->slot[id].token)
		return virtq_fail(vq, "used buffer id not in flight");
	/* len is reserved in a used descriptor without WRITE (§2.8.4); only
	 * accept that for buffers with nothing writable. */
	if (vq->slot[id].in_len == 0 && !(flags & VIRTQ_DESC_F_WRITE))
		l = 0;
	else if (l > vq->slot[id].in_len)
		return virtq_fail(vq, "used len exceeds the writable bytes posted");

	if (vq->in_order && id != vq->fifo_head) {
		if (virtq_fifo_distance(vq, id) == 0)
			return virtq_fail(vq, "in-order used id not in flight");
		return virtq_start_batch(vq, id, l, len);
	}
	*len = l;
	return virtq_complete(vq, id);
}

void *virtq_get(struct virtq *vq, u32 *len)
{
	u32 l = 0;
	void *token;

	if (vq->broken || vq->stopped)
		return NULL;
	token = vq->is_packed ? virtq_packed_get(vq, &l) : virtq_split_get(vq, &l);
	/* Batched per pass: invalidate when the caller's loop finds nothing
	 * more, or when nothing is left in flight (a caller waiting for one
	 * buffer stops there). */
	if (!token || vq->inflight == 0)
		virtq_unmap_flush(vq);
	if (token) {
		vq->stats.completions++;
		if (len)
			*len = l;
	}
	return token;
}

static bool virtq_more_used_now(const struct virtq *vq)
{
	u16 flags;
	bool w;

	if (vq->broken || vq->stopped)
		return false;
	if (vq->batch)
		return true;
	if (!vq->is_packed)
		return READ_ONCE(vq->split.used->idx) != vq->split.last_used;
	if (vq->inflight == 0)
		return false;
	/* Anything but our own available marker is for virtq_get to judge. */
	flags = READ_ONCE(vq->packed.desc[vq->packed.last_used].flags);
	w = vq->packed.used_wrap;
	return !(!!(flags & VIRTQ_DESC_F_AVAIL) == w && !!(flags & VIRTQ_DESC_F_USED) != w);
}

bool virtq_more_used(const struct virtq *vq)
{
	return virtq_more_used_now(vq);
}

/* ---- used-buffer notification control ---------------------------------------- */

void virtq_disable_cb(struct virtq *vq)
{
	vq->cb_mode = VIRTQ_CB_DISABLED;
	if (vq->is_packed)
		WRITE_ONCE(vq->packed.driver->flags, (u16)VIRTQ_EVENT_FLAGS_DISABLE);
	else if (vq->event_idx)
		/* flags must stay 0 with event idx: park used_event as far
		 * behind as it goes (65535 entries before it fires). */
		WRITE_ONCE(*virtq_split_used_event(vq), (u16)(vq->split.last_used - 1));
	else
		WRITE_ONCE(vq->split.avail->flags, (u16)VIRTQ_AVAIL_F_NO_INTERRUPT);
}

bool virtq_enable_cb(struct virtq *vq)
{
	if (vq->broken || vq->stopped)
		return true;
	vq->cb_mode = VIRTQ_CB_ENABLED;
	if (vq->is_packed)
		WRITE_ONCE(vq->packed.driver->flags, (u16)VIRTQ_EVENT_FLAGS_ENABLE);
	else if (vq->event_idx)
		WRITE_ONCE(*virtq_split_used_event(vq), vq->split.last_used);
	else
		WRITE_ONCE(vq->split.avail->flags, (u16)0);
	virtq_mb(vq);	/* orders the enable store before re-reading the used ring */
	return !virtq_more_used_now(vq);
}

/* Packed: has the device used at least n descriptors' worth past last_used
 * (so it may have crossed the event before seeing it)? Also true if what it
 * wrote is bogus, so the caller polls and virtq_get reports it. */
static bool virtq_packed_used_reaches(const struct virtq *vq, u16 n)
{
	u16 pos = vq->packed.last_used, cur = vq->fifo_head, flags, id, span, c;
	bool w = vq->packed.used_wrap, avail, used;
	u32 dist = 0;

	if (vq->batch)
		return true;
	while (dist < n) {	/* every step moves dist by >= 1 */
		flags = READ_ONCE(vq->packed.desc[pos].flags);
		avail = !!(flags & VIRTQ_DESC_F_AVAIL);
		used = !!(flags & VIRTQ_DESC_F_USED);
		if (avail == w && used != w)
			return false;
		if (avail != w || used != w)
			return true;
		virtq_rmb(vq);	/* orders the flags read before the id read */
		id = READ_ONCE(vq->packed.desc[pos].id);
		if (id >= vq->num || !vq->slot[id].token)
			return true;
		if (vq->in_order) {
			span = 0;
			for (c = 0; ; c++) {	/* the batch ends at id */
				if (cur == NO_SLOT || c >= vq->inflight)
					return true;
				span = (u16)(span + vq->slot[cur].ndescs);
				if (cur == id)
					break;
				cur = vq->slot[cur].fifo_next;
			}
			cur = vq->slot[id].fifo_next;
		} else {
			span = vq->slot[id].ndescs;
		}
		dist += span;
		pos = (u16)(pos + span);
		if (pos >= vq->num) {
			pos = (u16)(pos - vq->num);
			w = !w;
		}
	}
	return true;
}

bool virtq_enable_cb_delayed(struct virtq *vq, u16 n)
{
	u16 limit, pending;

	if (vq->broken || vq->stopped)
		return true;
	if (!vq->event_idx)
		return virtq_enable_cb(vq);

	vq->cb_mode = VIRTQ_CB_DELAYED;
	/* Never aim past what is in flight, or the notification never comes. */
	limit = vq->is_packed ? (u16)(vq->num - vq->num_free) : vq->inflight;
	if (n > limit)
		n = limit;
	if (n == 0)
		n = 1;

	if (vq->is_packed) {
		u16 pos = (u16)(vq->packed.last_used + n - 1);
		bool wrap = vq->packed.used_wrap;

		if (pos >= vq->num) {
			pos = (u16)(pos - vq->num);
			wrap = !wrap;
		}
		WRITE_ONCE(vq->packed.driver->desc,
			   (u16)(pos | (u16)wrap << VIRTQ_EVENT_WRAP_SHIFT));
		virtq_wmb(vq);	/* orders the event offset before the flags that enable it */
		WRITE_ONCE(vq->packed.driver->flags, (u16)VIRTQ_EVENT_FLAGS_DESC);
		virtq_mb(vq);	/* orders the event stores before re-reading descriptors */
		return !virtq_packed_used_reaches(vq, n);
	}

	/* Device notifies once used idx moves past used_event (§2.7.7). */
	WRITE_ONCE(*virtq_split_used_event(vq), (u16)(vq->split.last_used + n - 1));
	virtq_mb(vq);	/* orders the used_event store before re-reading used idx */
	pending = (u16)(READ_ONCE(vq->split.used->idx) - vq->split.last_used);
	return pending < n;
}

/* ---- shutdown and reset ------------------------------------------------------ */

void *virtq_detach_unused(struct virtq *vq)
{
	u16 i;

	vq->stopped = true;
	vq->add_slow = true;
	vq->batch = false;
	if (vq->inflight == 0) {
		virtq_unmap_flush(vq);
		return NULL;
	}
	if (vq->in_order) {
		i = vq->fifo_head;	/* oldest first keeps the fifo consistent */
		if (i == NO_SLOT) {
			virtq_unmap_flush(vq);
			return NULL;
		}
	} else {
		for (i = 0; i < vq->num && !vq->slot[i].token; i++)
			;
		if (i == vq->num) {
			virtq_unmap_flush(vq);
			return NULL;
		}
	}
	vq->stats.detached++;
	return virtq_release(vq, i);
}

void virtq_reset_state(struct virtq *vq)
{
	size_t t;

	if (vq->inflight)
		klog("virtq %u: reset drops %u outstanding buffers", vq->index, vq->inflight);
	if (vq->transient) {	/* the device is reset: their mappings go too */
		for (t = 0; t < (size_t)vq->num * (1u + vq->indirect_max); t++)
			virtq_unmap_el(vq, t);
		virtq_unmap_flush(vq);
	}
	virtq_start(vq);
}

void virtq_keep_mapped(struct virtq *vq, const void *va, size_t len)
{
	vq->keep_va = va;
	vq->keep_len = va ? len : 0;
}

void virtq_arm_debug(struct virtq *vq, void (*corrupt)(struct virtq *vq, u16 head, u16 *head_flags))
{
	vq->debug_corrupt = corrupt;
	vq->add_slow = true;
}

unsigned virtq_num_free(const struct virtq *vq)
{
	return vq->num_free;
}

bool virtq_is_broken(const struct virtq *vq)
{
	return vq->broken;
}
