/* fake_dev: the device side of a virtqueue for host tests; see fake_dev.h. */
#include "tests/host/simdev/fake_dev.h"

#include <arch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/mm/mm.h"

/* The device's own fences: the same as the shim's dma_*() but not counted
 * in shim_barriers, which tells which set the driver chose
 * (test_virtio_net's ORDER_PLATFORM tests). */
#define fd_rmb() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define fd_wmb() __atomic_thread_fence(__ATOMIC_RELEASE)
#define fd_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)

static void dev_err(struct fake_dev *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void dev_err(struct fake_dev *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->error, sizeof d->error, fmt, ap);
	va_end(ap);
	d->errors++;
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "fake_dev: driver error: %s\n", d->error);
}

u32 fake_hash(u32 h, const void *p, size_t n)
{
	const u8 *b = p;

	while (n--) {
		h ^= *b++;
		h *= 16777619u;
	}
	return h;
}

static int tpage_find(const struct fake_dev *d, uintptr_t page)
{
	unsigned i;

	for (i = 0; i < d->ntpage; i++)
		if (d->tpage[i].page == page)
			return (int)i;
	return -1;
}

static dma_addr_t fake_dma_map(void *ctx, const void *va, size_t len, bool device_writes, bool transient)
{
	struct fake_dev *d = ctx;
	uintptr_t page;

	if (d) {
		d->maps++;
		d->maps_writable += device_writes;
		if (transient && d->refuse)
			return 0;
		if (!transient) {
			uintptr_t start = (uintptr_t)va & ~4095ul, end = ((uintptr_t)va + len + 4095) & ~4095ul;
			unsigned k;

			d->kmaps++;
			for (k = 0; k < d->nkept && !(d->kept[k].start == start && d->kept[k].end == end); k++)
				;
			if (k == d->nkept && d->nkept < FAKE_KEPT) {
				d->kept[k].start = start;
				d->kept[k].end = end;
				d->nkept++;
			}
		}
		if (transient) {
			d->tmaps++;
			for (page = (uintptr_t)va & ~4095ul; page < (uintptr_t)va + len; page += 4096) {
				int i = tpage_find(d, page);

				if (i < 0) {
					if (d->ntpage == FAKE_TPAGES) {
						dev_err(d, "more than %d transient pages", FAKE_TPAGES);
						continue;
					}
					i = (int)d->ntpage++;
					d->tpage[i].page = page;
					d->tpage[i].refs = 0;
				}
				d->tpage[i].refs++;
			}
		}
		if (d->eager && d->pending)
			fake_dev_fetch(d);
	}
	return (dma_addr_t)(uintptr_t)va ^ FAKE_DMA_XOR;
}

static void fake_dma_unmap(void *ctx, const void *va, size_t len, bool device_writes)
{
	struct fake_dev *d = ctx;
	uintptr_t page, a = (uintptr_t)va;
	unsigned b, k;

	(void)device_writes;
	d->unmaps++;
	for (b = 0; b < d->npending; b++)
		for (k = 0; k < d->pending[b].nseg; k++) {
			uintptr_t s = (uintptr_t)d->pending[b].seg[k].va;

			if (s < a + len && a < s + d->pending[b].seg[k].len)
				dev_err(d, "unmapped %p+%zu while the device holds it", va, len);
		}
	for (page = a & ~4095ul; page < a + len; page += 4096) {
		int i = tpage_find(d, page);

		if (i < 0) {
			dev_err(d, "unmap of %#lx, not mapped", (unsigned long)page);
			continue;
		}
		if (--d->tpage[i].refs == 0)
			d->tpage[i] = d->tpage[--d->ntpage];
	}
}

static void fake_dma_unmap_flush(void *ctx)
{
	struct fake_dev *d = ctx;

	d->unmap_flushes++;
}

/* ---- the DMA seam's ops over the model above (kernel/mm/dma.h) ---- */

static struct fake_dev *fake_of(struct dma_domain *dom)
{
	return (struct fake_dev *)(void *)((char *)dom - offsetof(struct fake_dev, dma));
}

static dma_addr_t fake_op_map(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	return fake_dma_map(fake_of(dom), va, len, flags & DMA_WRITE, flags & DMA_TRANSIENT);
}

static void fake_op_unmap(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	if (!(flags & DMA_TRANSIENT))
		dev_err(fake_of(dom), "unmap of a long-lived mapping %p+%zu", va, len);
	fake_dma_unmap(fake_of(dom), va, len, flags & DMA_WRITE);
}

static void fake_op_flush(struct dma_domain *dom)
{
	fake_dma_unmap_flush(fake_of(dom));
}

/* The device was reset: nothing of it stays mapped. */
static void fake_op_clear(struct dma_domain *dom)
{
	struct fake_dev *d = fake_of(dom);

	d->ntpage = 0;
	d->nkept = 0;
}

static const struct dma_ops fake_dma_ops = {
	.map = fake_op_map,
	.unmap = fake_op_unmap,
	.flush = fake_op_flush,
	.clear = fake_op_clear,
};

struct dma_domain *fake_dev_domain(struct fake_dev *d)
{
	d->dma.ops = &fake_dma_ops;
	return &d->dma;
}

/* Identity addresses as the device sees them (kernel/mm/dma.h's dma_phys
 * for host tests): XORed, so an address the driver never mapped is caught. */
dma_addr_t dma_phys(const void *va)
{
	return fake_dma_map(NULL, va, 0, true, false);
}

/* No image here: nothing is read-only data (kernel/mm/mm.h). */
bool mm_in_rodata(const void *va, size_t len)
{
	(void)va;
	(void)len;
	return false;
}

bool fake_dev_dma_read(struct fake_dev *d, dma_addr_t addr, u32 len)
{
	uintptr_t a = (uintptr_t)fake_dma_va(addr), page;
	unsigned k;

	for (page = a & ~4095ul; page < a + len; page += 4096) {
		for (k = 0; k < d->nkept && !(page >= d->kept[k].start && page < d->kept[k].end); k++)
			;
		if (k == d->nkept && tpage_find(d, page) < 0) {
			d->faults++;
			return false;
		}
	}
	return true;
}

void *fake_dma_va(dma_addr_t addr)
{
	return (void *)(uintptr_t)(addr ^ FAKE_DMA_XOR);
}

static void *dev_va(struct fake_dev *d, dma_addr_t addr)
{
	if ((addr & FAKE_DMA_XOR) != FAKE_DMA_XOR)
		dev_err(d, "address %#llx was not mapped", (unsigned long long)addr);
	return fake_dma_va(addr);
}

void fake_dev_notify(void *ctx, u32 data)
{
	struct fake_dev *d = ctx;

	d->notifies++;
	d->last_notify = data;
	if ((data & 0xffffu) != d->index)
		dev_err(d, "notify for queue %u, expected %u", data & 0xffffu, d->index);
}

void fake_dev_reset(struct fake_dev *d)
{
	d->last_avail = 0;
	d->used_idx = 0;
	d->next_head = 0;
	d->avail_pos = 0;
	d->used_pos = 0;
	d->avail_wrap = true;
	d->used_wrap = true;
	d->npending = 0;
	d->have_last_id = false;
	d->lie = FAKE_LIE_NONE;
	d->scribbled = false;
}

void fake_dev_init(struct fake_dev *d, const struct virtq_config *cfg, const struct virtq *vq)
{
	dma_addr_t desc, driver, device;

	free(d->pending);
	memset(d, 0, sizeof(*d));
	d->dma.ops = &fake_dma_ops;	/* the queue may already map through it */
	d->num = cfg->num;
	d->index = cfg->index;
	d->packed = cfg->packed;
	d->event_idx = cfg->event_idx;
	d->in_order = cfg->in_order;
	d->indirect = cfg->indirect;
	d->fill = 0x40;
	d->pending = calloc(cfg->num, sizeof(*d->pending));

	virtq_ring_addrs(vq, &desc, &driver, &device);
	if (d->packed) {
		d->pdesc = dev_va(d, desc);
		d->drv_evt = dev_va(d, driver);
		d->dev_evt = dev_va(d, device);
		if ((driver | device) & (PVIRTQ_EVENT_ALIGN - 1) || desc & (PVIRTQ_DESC_ALIGN - 1))
			dev_err(d, "packed ring parts misaligned");
	} else {
		d->desc = dev_va(d, desc);
		d->avail = dev_va(d, driver);
		d->used = dev_va(d, device);
		if (desc & (VIRTQ_DESC_ALIGN - 1) || driver & (VIRTQ_AVAIL_ALIGN - 1) ||
		    device & (VIRTQ_USED_ALIGN - 1))
			dev_err(d, "split ring parts misaligned");
	}
	fake_dev_reset(d);
}

void fake_dev_fini(struct fake_dev *d)
{
	free(d->pending);
	d->pending = NULL;
}

/* ---- reading buffers ------------------------------------------------------- */

static void add_seg(struct fake_dev *d, struct fake_buf *b, u64 addr, u32 len, bool write,
		    bool *seen_write)
{
	u8 *va;

	if (len == 0)
		dev_err(d, "zero-length descriptor");
	if (!write && *seen_write)
		dev_err(d, "readable descriptor after a writable one");
	if (write)
		*seen_write = true;
	if (b->nseg == FAKE_MAX_SEGS) {
		dev_err(d, "more than %d elements", FAKE_MAX_SEGS);
		return;
	}
	va = dev_va(d, addr);
	b->seg[b->nseg].va = va;
	b->seg[b->nseg].len = len;
	b->seg[b->nseg].write = write;
	b->nseg++;
	if (write) {
		b->in_len += len;
	} else {
		b->out_len += len;
		b->out_hash = fake_hash(b->out_hash, va, len);
	}
}

static void split_table(struct fake_dev *d, struct fake_buf *b, const struct virtq_desc *dd,
			bool *seen_write)
{
	const struct virtq_desc *t = dev_va(d, dd->addr);
	unsigned count = dd->len / sizeof(*t), i = 0, n = 0;

	if (dd->len == 0 || dd->len % sizeof(*t)) {
		dev_err(d, "indirect table length %u", dd->len);
		return;
	}
	if (count > d->num)
		dev_err(d, "indirect chain of %u longer than the queue", count);
	for (;;) {
		if (++n > count) {
			dev_err(d, "indirect chain loops");
			return;
		}
		if (t[i].flags & VIRTQ_DESC_F_INDIRECT)
			dev_err(d, "INDIRECT inside an indirect table");
		add_seg(d, b, t[i].addr, t[i].len, t[i].flags & VIRTQ_DESC_F_WRITE, seen_write);
		if (!(t[i].flags & VIRTQ_DESC_F_NEXT))
			break;
		/* Our driver always lays tables out sequentially (required by
		 * IN_ORDER, §2.7.5.3.1). */
		if (t[i].next != i + 1 || t[i].next >= count) {
			dev_err(d, "indirect next %u after %u", t[i].next, i);
			return;
		}
		i = t[i].next;
	}
	if (n != count)
		dev_err(d, "indirect table has %u entries, chain used %u", count, n);
}

static bool split_chain(struct fake_dev *d, u16 head, struct fake_buf *b)
{
	u16 i = head, mask = (u16)(d->num - 1);
	unsigned n = 0;
	bool seen_write = false;

	memset(b, 0, sizeof(*b));
	b->id = head;
	b->second = 0xffff;
	b->out_hash = FAKE_HASH_INIT;
	for (;;) {
		const struct virtq_desc *dd;

		if (i >= d->num) {
			dev_err(d, "descriptor %u out of range", i);
			return false;
		}
		if (++n > d->num) {
			dev_err(d, "descriptor chain loops");
			return false;
		}
		if (n == 2)
			b->second = i;
		dd = &d->desc[i];
		if (dd->flags & VIRTQ_DESC_F_INDIRECT) {
			if (!d->indirect)
				dev_err(d, "INDIRECT not negotiated");
			if (dd->flags & VIRTQ_DESC_F_NEXT)
				dev_err(d, "INDIRECT with NEXT");
			if (dd->flags & VIRTQ_DESC_F_WRITE)
				dev_err(d, "WRITE on an INDIRECT descriptor (ignored by devices)");
			if (n != 1)
				dev_err(d, "our driver puts INDIRECT only in a chain of one");
			split_table(d, b, dd, &seen_write);
			b->indirect = true;
			d->indirect_seen++;
			break;
		}
		add_seg(d, b, dd->addr, dd->len, dd->flags & VIRTQ_DESC_F_WRITE, &seen_write);
		if (!(dd->flags & VIRTQ_DESC_F_NEXT))
			break;
		if (d->in_order && dd->next != ((i + 1) & mask))
			dev_err(d, "in_order: descriptor %u links to %u", i, dd->next);
		i = dd->next;
	}
	b->ndesc = (u16)n;
	return true;
}

static bool id_pending(const struct fake_dev *d, u16 id)
{
	unsigned i;

	for (i = 0; i < d->npending; i++)
		if (d->pending[i].id == id)
			return true;
	return false;
}

static unsigned fetch_split(struct fake_dev *d)
{
	u16 aidx = READ_ONCE(d->avail->idx), mask = (u16)(d->num - 1);
	unsigned n = 0;

	if ((u16)(aidx - d->last_avail) > d->num) {
		dev_err(d, "avail idx %u ran ahead of %u", aidx, d->last_avail);
		return 0;
	}
	fd_rmb();	/* orders the avail idx read before the entries and descriptors */
	while (d->last_avail != aidx) {
		u16 head = d->avail->ring[d->last_avail & mask];
		struct fake_buf *b;

		if (d->npending == d->num) {
			dev_err(d, "more buffers available than the queue holds");
			return n;
		}
		if (d->in_order && head != d->next_head)
			dev_err(d, "in_order: head %u, expected %u", head, d->next_head);
		if (id_pending(d, head))
			dev_err(d, "head %u made available twice", head);
		b = &d->pending[d->npending];
		if (!split_chain(d, head, b))
			return n;
		d->next_head = (u16)((head + b->ndesc) & mask);
		d->npending++;
		d->fetched++;
		d->last_avail++;
		n++;
	}
	return n;
}

static bool packed_is_avail(u16 flags, bool wrap)
{
	return !!(flags & VIRTQ_DESC_F_AVAIL) == wrap && !!(flags & VIRTQ_DESC_F_USED) != wrap;
}

static void packed_table(struct fake_dev *d, struct fake_buf *b, const struct pvirtq_desc *dd,
			 bool *seen_write)
{
	const struct pvirtq_desc *t = dev_va(d, dd->addr);
	unsigned count = dd->len / sizeof(*t), i;

	if (dd->len == 0 || dd->len % sizeof(*t)) {
		dev_err(d, "indirect table length %u", dd->len);
		return;
	}
	if (count > d->num)
		dev_err(d, "indirect list of %u longer than the queue", count);
	for (i = 0; i < count; i++) {
		if (t[i].flags & ~VIRTQ_DESC_F_WRITE)
			dev_err(d, "flags %#x in an indirect table", t[i].flags);
		add_seg(d, b, t[i].addr, t[i].len, t[i].flags & VIRTQ_DESC_F_WRITE, seen_write);
	}
}

/* The device's own scribble, not yet overwritten by the driver. */
static bool scribbled_at(const struct fake_dev *d, u16 pos)
{
	return d->scribbled && pos == d->scribble_pos && !memcmp(&d->pdesc[pos], &d->scribble, sizeof d->scribble);
}

static void scribble(struct fake_dev *d, u16 pos)
{
	d->scribbled = true;
	d->scribble_pos = pos;
	memcpy(&d->scribble, &d->pdesc[pos], sizeof d->scribble);
}

static unsigned fetch_packed(struct fake_dev *d)
{
	unsigned n = 0;

	while (packed_is_avail(READ_ONCE(d->pdesc[d->avail_pos].flags), d->avail_wrap)) {
		u16 pos = d->avail_pos, id = 0;
		bool w = d->avail_wrap, seen_write = false;
		unsigned count = 0;
		struct fake_buf *b;

		if (d->npending == d->num) {
			dev_err(d, "more buffers available than the queue holds");
			return n;
		}
		fd_rmb();	/* orders the head flags read before the rest of the list */
		b = &d->pending[d->npending];
		memset(b, 0, sizeof(*b));
		b->second = 0xffff;
		b->out_hash = FAKE_HASH_INIT;
		for (;;) {
			const struct pvirtq_desc *dd = &d->pdesc[pos];

			if (scribbled_at(d, pos))
				return n;	/* ours, not the driver's: nothing more to take */
			if (++count > d->num) {
				dev_err(d, "descriptor list longer than the queue");
				return n;
			}
			if (!packed_is_avail(dd->flags, w))
				dev_err(d, "list element %u flags %#x wrong for wrap %d",
					pos, dd->flags, w);
			if (dd->flags & VIRTQ_DESC_F_INDIRECT) {
				if (!d->indirect)
					dev_err(d, "INDIRECT not negotiated");
				if (count != 1 || (dd->flags & VIRTQ_DESC_F_NEXT))
					dev_err(d, "INDIRECT inside a list");
				if (dd->flags & VIRTQ_DESC_F_WRITE)
					dev_err(d, "WRITE on an INDIRECT descriptor (reserved)");
				packed_table(d, b, dd, &seen_write);
				b->indirect = true;
				d->indirect_seen++;
			} else {
				add_seg(d, b, dd->addr, dd->len, dd->flags & VIRTQ_DESC_F_WRITE,
					&seen_write);
			}
			id = dd->id;	/* the last descriptor's id counts */
			if (++pos == d->num) {
				pos = 0;
				w = !w;
			}
			if (!(dd->flags & VIRTQ_DESC_F_NEXT))
				break;
		}
		if (id >= d->num)
			dev_err(d, "buffer id %u out of range", id);
		if (id_pending(d, id))
			dev_err(d, "buffer id %u already in flight", id);
		b->id = id;
		b->ndesc = (u16)count;
		d->avail_pos = pos;
		d->avail_wrap = w;
		d->npending++;
		d->fetched++;
		n++;
	}
	return n;
}

unsigned fake_dev_fetch(struct fake_dev *d)
{
	return d->packed ? fetch_packed(d) : fetch_split(d);
}

/* ---- completing buffers ---------------------------------------------------- */

static u32 write_data(struct fake_dev *d, const struct fake_buf *b, u32 len)
{
	u32 done = 0;
	unsigned i, j;

	if (len > b->in_len)
		len = b->in_len;
	for (i = 0; i < b->nseg && done < len; i++) {
		if (!b->seg[i].write)
			continue;
		for (j = 0; j < b->seg[i].len && done < len; j++, done++)
			b->seg[i].va[j] = !d->data ? (u8)(d->fill + done)
				: done < d->data_len ? d->data[done] : 0;
	}
	d->data = NULL;
	d->data_len = 0;
	return done;
}

static bool need_event(u16 event, u16 new_idx, u16 old_idx)
{
	return (u16)(new_idx - event - 1) < (u16)(new_idx - old_idx);
}

static u16 lie_id(struct fake_dev *d, const struct fake_buf *b, u16 id)
{
	u16 i;

	switch (d->lie) {
	case FAKE_LIE_ID_RANGE:
		return (u16)(d->num + 3);
	case FAKE_LIE_ID_REPEAT:
		if (!d->have_last_id)
			dev_err(d, "test bug: no previous id to repeat");
		return d->last_id;
	case FAKE_LIE_ID_NONHEAD:
		if (!d->packed) {
			if (b->second == 0xffff)
				dev_err(d, "test bug: chain has no second descriptor");
			return b->second;
		}
		for (i = (u16)(d->num - 1); i > 0; i--)
			if (i != id && !id_pending(d, i) && !(d->have_last_id && i == d->last_id))
				return i;
		dev_err(d, "test bug: no unused buffer id");
		return id;
	default:
		return id;
	}
}

/* Publish one used entry for id covering nbufs buffers / ndesc descriptors. */
static void publish(struct fake_dev *d, const struct fake_buf *b, u32 len, unsigned nbufs,
		    unsigned ndesc)
{
	u16 id = lie_id(d, b, b->id);

	if (d->lie == FAKE_LIE_LEN)
		len = b->in_len + 1;

	if (!d->packed) {
		u16 old = d->used_idx, adv = (u16)nbufs, mask = (u16)(d->num - 1);

		if (d->lie == FAKE_LIE_IDX_JUMP)
			adv = (u16)(d->num + 1);
		if (d->lie == FAKE_LIE_IDX_BACK)
			adv = (u16)-1;
		if (d->lie == FAKE_LIE_IDX_AHEAD)	/* the device knows all are fetched */
			adv = (u16)(d->npending + nbufs + 1);
		d->used->ring[d->used_idx & mask].id = id;
		d->used->ring[d->used_idx & mask].len = len;
		d->used_idx = (u16)(d->used_idx + adv);
		fd_wmb();	/* orders the entry before the idx that publishes it */
		WRITE_ONCE(d->used->idx, d->used_idx);
		fd_mb();	/* orders the idx store before reading the driver's suppression */
		if (d->event_idx) {
			if (need_event(READ_ONCE(d->avail->ring[d->num]), d->used_idx, old))
				d->interrupts++;
			if (READ_ONCE(d->avail->flags))
				dev_err(d, "avail flags %#x with event idx", d->avail->flags);
		} else if (!(READ_ONCE(d->avail->flags) & VIRTQ_AVAIL_F_NO_INTERRUPT)) {
			d->interrupts++;
		}
	} else {
		u16 pos = d->used_pos, flags, ev_flags, ev;
		bool w = d->used_wrap, irq = false;
		unsigned k;

		flags = d->used_wrap ? (VIRTQ_DESC_F_AVAIL | VIRTQ_DESC_F_USED) : 0;
		if (d->lie == FAKE_LIE_WRAP)
			flags = d->used_wrap ? 0 : (VIRTQ_DESC_F_AVAIL | VIRTQ_DESC_F_USED);
		if (d->lie == FAKE_LIE_FLAGS)
			flags = d->used_wrap ? VIRTQ_DESC_F_USED : VIRTQ_DESC_F_AVAIL;

		if (len)
			flags |= VIRTQ_DESC_F_WRITE;	/* §2.8.4: data was written */
		d->pdesc[pos].id = id;
		d->pdesc[pos].len = len;
		fd_wmb();	/* orders id/len before the flags that publish them */
		WRITE_ONCE(d->pdesc[pos].flags, flags);
		fd_mb();	/* orders the flags store before reading the driver's suppression */
		if (d->lie == FAKE_LIE_WRAP || d->lie == FAKE_LIE_FLAGS)
			scribble(d, pos);

		ev_flags = READ_ONCE(d->drv_evt->flags);
		ev = READ_ONCE(d->drv_evt->desc);
		if (ev_flags & ~VIRTQ_EVENT_FLAGS_MASK || ev_flags == 3)
			dev_err(d, "driver event flags %#x reserved", ev_flags);
		if (ev_flags == VIRTQ_EVENT_FLAGS_ENABLE) {
			irq = true;
		} else if (ev_flags == VIRTQ_EVENT_FLAGS_DESC) {
			if (!d->event_idx)
				dev_err(d, "DESC event without event idx");
			/* Fires if the used range [pos, pos+ndesc) holds off/wrap. */
			for (k = 0; k < ndesc; k++) {
				if (pos == (ev & VIRTQ_EVENT_OFF_MASK) &&
				    w == (ev >> VIRTQ_EVENT_WRAP_SHIFT))
					irq = true;
				if (++pos == d->num) {
					pos = 0;
					w = !w;
				}
			}
		}
		if (irq)
			d->interrupts++;
		for (k = 0; k < ndesc; k++) {
			if (++d->used_pos == d->num) {
				d->used_pos = 0;
				d->used_wrap = !d->used_wrap;
				d->used_wrap_flips++;
			}
		}
	}
	d->last_id = id;
	d->have_last_id = true;
	d->lie = FAKE_LIE_NONE;
}

static void take(struct fake_dev *d, unsigned i, struct fake_buf *out)
{
	*out = d->pending[i];
	memmove(&d->pending[i], &d->pending[i + 1], (d->npending - i - 1) * sizeof(*out));
	d->npending--;
}

int fake_dev_complete(struct fake_dev *d, unsigned i, u32 len)
{
	struct fake_buf b;

	if (i >= d->npending) {
		dev_err(d, "test bug: complete %u of %u pending", i, d->npending);
		return -1;
	}
	if (d->in_order && i != 0)
		dev_err(d, "test bug: in_order device completing out of order");
	take(d, i, &b);
	len = write_data(d, &b, len);
	d->last_out_hash = b.out_hash;
	d->last_out_len = b.out_len;
	publish(d, &b, len, 1, b.ndesc);
	d->completed++;
	return b.id;
}

int fake_dev_complete_batch(struct fake_dev *d, unsigned k, u32 len_last)
{
	struct fake_buf b;
	unsigned i, ndesc = 0;

	if (k == 0 || k > d->npending) {
		dev_err(d, "test bug: batch of %u with %u pending", k, d->npending);
		return -1;
	}
	for (i = 0; i < k; i++) {
		take(d, 0, &b);
		ndesc += b.ndesc;
		if (i + 1 < k)
			write_data(d, &b, FAKE_LEN_ALL);	/* skipped: used completely */
		d->completed++;
	}
	len_last = write_data(d, &b, len_last);
	d->last_out_hash = b.out_hash;
	d->last_out_len = b.out_len;
	publish(d, &b, len_last, k, ndesc);
	return b.id;
}

void fake_dev_raw_used(struct fake_dev *d, u32 id, u32 len, u16 adv)
{
	u16 mask = (u16)(d->num - 1);

	d->used->ring[d->used_idx & mask].id = id;
	d->used->ring[d->used_idx & mask].len = len;
	d->used_idx = (u16)(d->used_idx + adv);
	fd_wmb();	/* orders the entry before the idx that publishes it */
	WRITE_ONCE(d->used->idx, d->used_idx);
}

void fake_dev_raw_packed(struct fake_dev *d, u16 id, u32 len, u16 flags)
{
	d->pdesc[d->used_pos].id = id;
	d->pdesc[d->used_pos].len = len;
	fd_wmb();	/* orders id/len before the flags */
	WRITE_ONCE(d->pdesc[d->used_pos].flags, flags);
	scribble(d, d->used_pos);
}

/* ---- device-side notification suppression ---------------------------------- */

void fake_dev_set_no_notify(struct fake_dev *d, bool on)
{
	WRITE_ONCE(d->used->flags, (u16)(on ? VIRTQ_USED_F_NO_NOTIFY : 0));
	fd_mb();	/* orders the flags store before our next avail read */
}

bool fake_dev_will_notify(struct fake_dev *d)
{
	u16 ev_flags, ev, pos;
	bool w;
	u32 ndesc = 0;

	fake_dev_fetch(d);
	if (!d->npending)
		return false;
	if (!d->packed) {
		/* Entry k moves used idx from used_idx + k - 1 to used_idx + k:
		 * need_event fires for k - 1 == used_event - used_idx. */
		if (d->event_idx)
			return (u16)(READ_ONCE(d->avail->ring[d->num]) - d->used_idx) < d->npending;
		return !(READ_ONCE(d->avail->flags) & VIRTQ_AVAIL_F_NO_INTERRUPT);
	}
	ev_flags = READ_ONCE(d->drv_evt->flags);
	if (ev_flags == VIRTQ_EVENT_FLAGS_ENABLE)
		return true;
	if (ev_flags != VIRTQ_EVENT_FLAGS_DESC)
		return false;
	/* The used descriptors go to [used_pos, used_pos + ndesc) whatever
	 * the order the buffers complete in. */
	for (unsigned i = 0; i < d->npending; i++)
		ndesc += d->pending[i].ndesc;
	ev = READ_ONCE(d->drv_evt->desc);
	pos = d->used_pos;
	w = d->used_wrap;
	for (u32 k = 0; k < ndesc; k++) {
		if (pos == (ev & VIRTQ_EVENT_OFF_MASK) && w == (ev >> VIRTQ_EVENT_WRAP_SHIFT))
			return true;
		if (++pos == d->num) {
			pos = 0;
			w = !w;
		}
	}
	return false;
}

void fake_dev_set_avail_event(struct fake_dev *d, u16 idx)
{
	WRITE_ONCE(*(le16 *)&d->used->ring[d->num], idx);
	fd_mb();	/* orders the avail_event store before our next avail read */
}

void fake_dev_set_event(struct fake_dev *d, u16 flags, u16 off, bool wrap)
{
	WRITE_ONCE(d->dev_evt->desc, (u16)(off | (u16)wrap << VIRTQ_EVENT_WRAP_SHIFT));
	fd_wmb();	/* orders the offset before the flags that enable it */
	WRITE_ONCE(d->dev_evt->flags, flags);
	fd_mb();	/* orders the event stores before our next descriptor read */
}
