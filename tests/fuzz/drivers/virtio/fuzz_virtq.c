/* libFuzzer target for drivers/virtio/virtq.c. The input is a script: a config
 * (layout, features, queue size) and then operations, either driver calls or
 * device writes with device-controlled bytes (split used entries and used
 * idx, packed descriptor flags/ids/lengths, event suppression fields). A small
 * honest device is mixed in so runs get deep into the ring. After every step
 * the ring's invariants are checked; any violation aborts. */
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arch.h>
#include "drivers/virtio/virtq.h"
#include "drivers/virtio/virtio_ring_reg.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"

#define CHECK(c)                                                                    \
	do {                                                                        \
		if (!(c)) {                                                         \
			fprintf(stderr, "fuzz_virtq: invariant failed: %s (line %d)\n", \
				#c, __LINE__);                                      \
			abort();                                                    \
		}                                                                   \
	} while (0)

#define MAXQ	16	/* largest queue the fuzzer builds */
#define NTOK	64	/* tokens: more than can ever be in flight */
#define MAXOPS	4096

struct input {
	const u8 *p;
	size_t n;
};

static u8 g8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static u16 g16(struct input *in)
{
	u16 lo = g8(in);

	return (u16)(lo | (u16)g8(in) << 8);
}

static u32 g32(struct input *in)
{
	u32 lo = g16(in);

	return lo | (u32)g16(in) << 16;
}

/* What the driver side of the fuzzer knows about each token. */
struct tok {
	bool inflight;
	u32 in_len;
	u16 need;	/* descriptors / ring slots the documented policy uses */
};

/* What the fuzzer's device has taken from the ring (honest part). */
struct taken {
	u16 id;
	u16 ndesc;
};

struct state {
	struct virtq vq;
	struct virtq_config cfg;
	struct tok tok[NTOK];
	unsigned breaks;	/* broken false -> true transitions */
	bool was_broken;
	u64 maps_transient, unmaps;	/* transient queues: dma_map / dma_unmap calls */
	/* device: split */
	u16 dev_last_avail, dev_used_idx;
	/* device: packed */
	u16 dev_avail_pos, dev_used_pos;
	bool dev_avail_wrap, dev_used_wrap;
	struct taken taken[MAXQ];
	unsigned ntaken;
};

static u8 bufs[8][64];	/* the ring never touches buffer contents */

static void fuzz_notify(void *ctx, u32 data)
{
	struct state *s = ctx;

	CHECK((data & 0xffffu) == s->cfg.index);
	if (!s->cfg.notification_data)
		CHECK(data == s->cfg.index);
}

/* The DMA seam (kernel/mm/dma.h): identity, and a domain that counts. */
dma_addr_t dma_phys(const void *va)
{
	return (dma_addr_t)(uintptr_t)va;
}

bool mm_in_rodata(const void *va, size_t len)
{
	(void)va;
	(void)len;
	return false;
}

static struct state *fuzz_state;	/* the one the domain below belongs to */

static dma_addr_t fuzz_map(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	(void)dom;
	(void)len;
	fuzz_state->maps_transient += !!(flags & DMA_TRANSIENT);
	return (dma_addr_t)(uintptr_t)va;
}

/* Every transient map is given back exactly once, whatever the device did. */
static void fuzz_unmap(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	(void)dom;
	(void)va;
	(void)len;
	CHECK(flags & DMA_TRANSIENT);
	fuzz_state->unmaps++;
	CHECK(fuzz_state->unmaps <= fuzz_state->maps_transient);
}

static void fuzz_flush(struct dma_domain *dom)
{
	(void)dom;
}

static void fuzz_clear(struct dma_domain *dom)
{
	(void)dom;
}

static const struct dma_ops fuzz_dma_ops = { fuzz_map, fuzz_unmap, fuzz_flush, fuzz_clear };
static struct dma_domain fuzz_domain = { &fuzz_dma_ops };

static unsigned inflight_toks(const struct state *s, unsigned *need)
{
	unsigned i, n = 0, d = 0;

	for (i = 0; i < NTOK; i++)
		if (s->tok[i].inflight) {
			n++;
			d += s->tok[i].need;
		}
	if (need)
		*need = d;
	return n;
}

static void check_invariants(struct state *s)
{
	struct virtq *vq = &s->vq;
	unsigned need, n = inflight_toks(s, &need);

	CHECK(virtq_num_free(vq) <= vq->num);
	CHECK(vq->inflight == n);
	if (!vq->stopped)
		CHECK(virtq_num_free(vq) == vq->num - need);
	if (vq->broken && !s->was_broken)
		s->breaks++;
	s->was_broken = vq->broken;
	CHECK(shim_klog_count() == s->breaks);	/* each break logs exactly once */
}

/* A token the ring handed back: must be one we added, in flight, once. */
static void returned(struct state *s, void *t, u32 len, bool check_len)
{
	ptrdiff_t k = (struct tok *)t - s->tok;

	CHECK(k >= 0 && k < NTOK);
	CHECK((void *)&s->tok[k] == t);
	CHECK(s->tok[k].inflight);
	if (check_len)
		CHECK(len <= s->tok[k].in_len);
	s->tok[k].inflight = false;
}

static void op_add(struct state *s, struct input *in)
{
	struct virtq *vq = &s->vq;
	struct virtq_sg out[4], inv[4];
	unsigned n_out = g8(in) % 4, n_in = g8(in) % 4, total = n_out + n_in, i, k;
	unsigned free_before = virtq_num_free(vq);
	bool bad = false, use_indirect;
	u32 in_len = 0;
	u16 need;
	int rc;

	for (i = 0; i < total; i++) {
		struct virtq_sg *sg = i < n_out ? &out[i] : &inv[i - n_out];
		u8 l = g8(in);

		sg->addr = bufs[i];
		sg->len = l % 64;
		if (sg->len == 0)
			bad = true;
		if (i >= n_out)
			in_len += sg->len;
	}
	k = g8(in) % NTOK;
	for (i = 0; i < NTOK && s->tok[k].inflight; i++)
		k = (k + 1) % NTOK;
	CHECK(!s->tok[k].inflight);	/* NTOK > any queue */

	use_indirect = vq->indirect_max >= 2 && total >= 2 && total <= vq->indirect_max &&
		       !(total <= vq->direct_max && free_before >= vq->num / 2u);
	need = (u16)(use_indirect ? 1 : total);
	rc = virtq_add(vq, out, n_out, inv, n_in, &s->tok[k]);
	if (vq->broken || vq->stopped)
		CHECK(rc == -EIO);
	else if (total == 0 || total > vq->num || bad)
		CHECK(rc == -EINVAL);
	else if (need > free_before)
		CHECK(rc == -ENOSPC);
	else
		CHECK(rc == 0);
	if (rc == 0) {
		s->tok[k].inflight = true;
		s->tok[k].in_len = in_len;
		s->tok[k].need = need;
		CHECK(virtq_num_free(vq) == free_before - need);
	} else {
		CHECK(virtq_num_free(vq) == free_before);
	}
}

static void op_get(struct state *s)
{
	bool was = s->vq.broken || s->vq.stopped;
	u32 len = 0;
	void *t = virtq_get(&s->vq, &len);

	if (was)
		CHECK(t == NULL);
	if (t)
		returned(s, t, len, true);
}

static void drain_detach(struct state *s)
{
	void *t;
	unsigned guard = 0;

	while ((t = virtq_detach_unused(&s->vq))) {
		returned(s, t, 0, false);
		CHECK(++guard <= s->vq.num);
	}
	CHECK(inflight_toks(s, NULL) == 0);
	CHECK(virtq_num_free(&s->vq) == s->vq.num);
	CHECK(s->unmaps == s->maps_transient);
}

static void dev_reset(struct state *s)
{
	s->dev_last_avail = 0;
	s->dev_used_idx = 0;
	s->dev_avail_pos = 0;
	s->dev_used_pos = 0;
	s->dev_avail_wrap = true;
	s->dev_used_wrap = true;
	s->ntaken = 0;
}

/* Honest device: take what the driver made available (reading only ring
 * memory, like a device). Garbage written by other ops may confuse it; that
 * is fine, it only has to stay in bounds. */
static void dev_fetch(struct state *s)
{
	struct virtq *vq = &s->vq;
	unsigned guard;

	if (!vq->is_packed) {
		u16 idx = READ_ONCE(vq->split.avail->idx);

		for (guard = 0; s->dev_last_avail != idx && s->ntaken < vq->num && guard < vq->num;
		     guard++) {
			u16 head = vq->split.avail->ring[s->dev_last_avail & (vq->num - 1)];

			s->taken[s->ntaken].id = head;
			s->taken[s->ntaken].ndesc = 1;
			s->ntaken++;
			s->dev_last_avail++;
		}
		return;
	}
	for (guard = 0; s->ntaken < vq->num && guard < vq->num; guard++) {
		u16 pos = s->dev_avail_pos, f, id = 0, n = 0;
		bool w = s->dev_avail_wrap;

		f = READ_ONCE(vq->packed.desc[pos].flags);
		if (!!(f & VIRTQ_DESC_F_AVAIL) != w || !!(f & VIRTQ_DESC_F_USED) == w)
			return;
		do {
			f = vq->packed.desc[pos].flags;
			id = vq->packed.desc[pos].id;
			n++;
			if (++pos == vq->num) {
				pos = 0;
				w = !w;
			}
		} while ((f & VIRTQ_DESC_F_NEXT) && n < vq->num);
		s->taken[s->ntaken].id = id;
		s->taken[s->ntaken].ndesc = n;
		s->ntaken++;
		s->dev_avail_pos = pos;
		s->dev_avail_wrap = w;
	}
}

/* Honest-ish completion of taken[k] (or, in-order style, of the first k+1
 * with one entry), with a fuzzed length. */
static void dev_complete(struct state *s, struct input *in, bool batch)
{
	struct virtq *vq = &s->vq;
	unsigned k, i, nbuf, ndesc = 0;
	u32 len = g8(in) % 80;
	u16 id;

	dev_fetch(s);
	if (!s->ntaken)
		return;
	k = g8(in) % s->ntaken;
	if (batch) {
		nbuf = k + 1;
		for (i = 0; i < nbuf; i++)
			ndesc += s->taken[i].ndesc;
		id = s->taken[k].id;
		memmove(&s->taken[0], &s->taken[nbuf], (s->ntaken - nbuf) * sizeof(s->taken[0]));
		s->ntaken -= nbuf;
	} else {
		nbuf = 1;
		ndesc = s->taken[k].ndesc;
		id = s->taken[k].id;
		memmove(&s->taken[k], &s->taken[k + 1], (s->ntaken - k - 1) * sizeof(s->taken[0]));
		s->ntaken--;
	}
	if (!vq->is_packed) {
		u16 slot = s->dev_used_idx & (vq->num - 1);

		vq->split.used->ring[slot].id = id;
		vq->split.used->ring[slot].len = len;
		s->dev_used_idx = (u16)(s->dev_used_idx + nbuf);
		dma_wmb();	/* orders the entry before the idx */
		WRITE_ONCE(vq->split.used->idx, s->dev_used_idx);
	} else {
		u16 pos = s->dev_used_pos;
		u16 f = s->dev_used_wrap ? (VIRTQ_DESC_F_AVAIL | VIRTQ_DESC_F_USED) : 0;

		vq->packed.desc[pos].id = id;
		vq->packed.desc[pos].len = len;
		dma_wmb();	/* orders id/len before the flags */
		WRITE_ONCE(vq->packed.desc[pos].flags, (u16)(f | (len ? VIRTQ_DESC_F_WRITE : 0)));
		for (i = 0; i < ndesc; i++)
			if (++s->dev_used_pos == vq->num) {
				s->dev_used_pos = 0;
				s->dev_used_wrap = !s->dev_used_wrap;
			}
	}
}

/* Hostile device: arbitrary values where the device may write. */
static void dev_raw(struct state *s, struct input *in, u8 what)
{
	struct virtq *vq = &s->vq;
	u16 num = vq->num;

	if (!vq->is_packed) {
		switch (what % 4) {
		case 0: {	/* a used entry, id usually small */
			u16 slot = g8(in) % num;
			u8 sel = g8(in);

			vq->split.used->ring[slot].id = sel & 1 ? g32(in) : g8(in) % (num + 2);
			vq->split.used->ring[slot].len = sel & 2 ? g32(in) : g8(in);
			break;
		}
		case 1:	/* used idx: nudge or anything */
			if (g8(in) & 1)
				WRITE_ONCE(vq->split.used->idx, (u16)(vq->split.used->idx + g8(in) % 4));
			else
				WRITE_ONCE(vq->split.used->idx, g16(in));
			break;
		case 2:
			WRITE_ONCE(vq->split.used->flags, g16(in));
			break;
		default:
			WRITE_ONCE(*(le16 *)&vq->split.used->ring[num], g16(in));
			break;
		}
		return;
	}
	switch (what % 4) {
	case 0: {	/* a descriptor anywhere, raw */
		u16 pos = g8(in) % num;

		vq->packed.desc[pos].id = g16(in);
		vq->packed.desc[pos].len = g32(in);
		WRITE_ONCE(vq->packed.desc[pos].flags, g16(in));
		break;
	}
	case 1: {	/* a plausible used descriptor at the driver's next used slot */
		u16 pos = vq->packed.last_used;
		u8 sel = g8(in);
		u16 f = 0;

		if (sel & 1)
			f |= VIRTQ_DESC_F_AVAIL;
		if (sel & 2)
			f |= VIRTQ_DESC_F_USED;
		if (sel & 4)
			f |= VIRTQ_DESC_F_WRITE;
		vq->packed.desc[pos].id = g8(in) % (num + 2);
		vq->packed.desc[pos].len = g8(in);
		WRITE_ONCE(vq->packed.desc[pos].flags, f);
		break;
	}
	case 2:
		WRITE_ONCE(vq->packed.device->desc, g16(in));
		break;
	default:
		WRITE_ONCE(vq->packed.device->flags, g16(in));
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct state st;
	struct state *s = &st;
	struct input in = { data, size };
	size_t rb, pb;
	void *ring, *priv;
	unsigned ops;
	u8 c = g8(&in), nb = g8(&in);

	memset(s, 0, sizeof(*s));
	s->cfg.packed = c & 1;
	s->cfg.event_idx = c & 2;
	s->cfg.indirect = c & 4;
	s->cfg.in_order = c & 8;
	s->cfg.notification_data = c & 16;
	s->cfg.weak_barriers = c & 32;
	s->cfg.indirect_max = (u16)(c >> 6);	/* 0 (default) .. 3 */
	s->cfg.num = s->cfg.packed ? (u16)(1 + nb % MAXQ) : (u16)(1u << (nb % 5));
	s->cfg.index = 7;
	s->cfg.notify = fuzz_notify;
	fuzz_state = s;
	s->cfg.dma = (nb & 0x80) ? &fuzz_domain : NULL;
	s->cfg.transient = (nb & 0x40) && (nb & 0x80);
	s->cfg.direct_max = (nb & 0x20) ? 4 : 0;	/* as for a device behind an IOMMU */
	s->cfg.ctx = s;

	CHECK(virtq_mem_size(&s->cfg, &rb, &pb) == 0);
	ring = aligned_alloc(VIRTQ_RING_ALIGN, rb);
	priv = malloc(pb);
	CHECK(ring && priv);
	CHECK(virtq_init(&s->vq, &s->cfg, ring, priv) == 0);
	dev_reset(s);
	shim_klog_reset();

	for (ops = 0; in.n && ops < MAXOPS; ops++) {
		u8 op = g8(&in);

		switch (op % 20) {
		case 0: case 1: case 2:
			op_add(s, &in);
			break;
		case 3: case 4: case 5:
			op_get(s);
			break;
		case 6:
			virtq_kick(&s->vq);
			break;
		case 7:
			(void)virtq_kick_prepare(&s->vq);
			break;
		case 8:
			virtq_disable_cb(&s->vq);
			break;
		case 9:
			(void)virtq_enable_cb(&s->vq);
			break;
		case 10:
			(void)virtq_enable_cb_delayed(&s->vq, g16(&in));
			break;
		case 11:
			(void)virtq_more_used(&s->vq);
			break;
		case 12: case 13: case 14:
			dev_complete(s, &in, false);
			break;
		case 15:
			dev_complete(s, &in, true);
			break;
		case 16: case 17:
			dev_raw(s, &in, g8(&in));
			break;
		case 18:
			dev_fetch(s);
			break;
		default:	/* shutdown: detach everything, queue reset, go on */
			drain_detach(s);
			check_invariants(s);
			virtq_reset_state(&s->vq);
			CHECK(shim_klog_count() == s->breaks);	/* nothing dropped */
			CHECK(!virtq_is_broken(&s->vq));
			s->was_broken = false;
			dev_reset(s);
			break;
		}
		check_invariants(s);
	}
	drain_detach(s);
	free(ring);
	free(priv);
	return 0;
}
