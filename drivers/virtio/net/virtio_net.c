/*
 * virtio-net driver (device id 1). Receive: page-sized buffers stay posted;
 * every used length and header is checked (vnet_hdr.c) before a frame is
 * looked at, and a bad one is dropped, counted by reason, and its buffer
 * reposted. A good frame goes up without a copy (virtio_net.h) and its
 * buffers return when the upper layer releases them. The interrupt only
 * disables the queue's callbacks and queues the poll (NAPI style); the poll
 * runs from the loop with a budget, then re-arms the queue as the coalescing
 * policy (coalesce.h) says.
 */
#include <arch.h>

#include "drivers/virtio/virtio.h"
#include "drivers/virtio/net/virtio_net.h"
#include "drivers/virtio/net/virtio_net_reg.h"
#include "drivers/virtio/net/vnet_ctrl.h"
#include "kernel/cmdline.h"
#include "drivers/virtio/net/vnet_gso.h"
#include "drivers/virtio/net/vnet_features.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "lib/string.h"
#include "kernel/time/time.h"

/* Buffers per poll (a merged frame counts each of its buffers and may end
 * up to max_buffers - 1 past the budget). With receive TSO a 64 KiB frame
 * spans 17 page-sized buffers (4,096 bytes each, the first holding the
 * 12-byte header), so a poll takes at most 64 + 16 = 80 buffers, 320 KiB
 * of frames. Receive memory stays what it was with the offload: the pool
 * is min(ring, RX_MAX_BUFS) = 256 one-page DMA-only buffers, 1 MiB, plus
 * 256 control structs (kmalloc, ~128 B each), whatever the frames
 * (net/port/lwipopts.h "receive memory" for what the stack may keep of it). */
#define RX_BUDGET 64
#define RX_MAX_BUFS 256
/* Control commands go out one at a time from a short queue and are never
 * waited for in place: a device answers when its I/O thread gets to it,
 * which on a loaded host is often more than a millisecond after the notify
 * (a 1 ms busy-wait at probe time used to give up: "allmulti on refused
 * (-110)"), and bring-up need not wait for filters it does not depend on.
 * The answer is polled (commands are rare; the queue's interrupt stays
 * off): at once after the notify, then every CTRL_POLL_NS, for at most
 * CTRL_TIMEOUT_NS. A command not answered by then fails, with everything
 * queued behind it; it stays the device's, and nothing is sent until its
 * late answer is taken (by the next vnet_ctrl_queue). Bounds: CTRL_QUEUE
 * queued commands per device (probe's three plus one); a queued command of
 * the same class and command is replaced, since only the latest setting
 * matters; a full queue refuses with -ENOSPC. At most
 * CTRL_TIMEOUT_NS / CTRL_POLL_NS = 1000 polls per command. */
#define CTRL_QUEUE 4
#define CTRL_POLL_NS (1 * NSEC_PER_MSEC)
#define CTRL_TIMEOUT_NS (1 * NSEC_PER_SEC)
#define MAX_VNETS 4

/* A transmit slot's virtio-net header lives in vn->hdrs, pages of their own
 * that hold nothing else: on a translated queue they are mapped once
 * (read-only) for the queue's life (virtq_keep_mapped), not per packet,
 * so only the upper layer's data is mapped and unmapped per frame. */
#define TXHDR_STRIDE 16u
_Static_assert(VIRTIO_NET_HDR_LEN <= TXHDR_STRIDE, "a header slot holds the longest transmit header");
_Static_assert(2 + VNET_CTRL_DATA_MAX <= PAGE_SIZE, "a command's bytes fit their page");

/* Transmit bounce space (issue 30: what a device can read). A transmit
 * buffer is mapped read-only, but an IOMMU maps whole pages, so a zero-copy
 * frame shows the device everything else on its pages: lwIP's heap holds
 * PCBs, pbuf structs (pointers), TCP queues and the TLS records next to
 * the payload, the kernel heap holds the merged-TSO record's free function,
 * app bodies sit among app data. So under a confining IOMMU (the device
 * has a domain and iommu=strict: vn->confined, the condition of
 * VNET_RX_CONFINED too) every segment that is
 * not in the image's read-only data (the baked site: public bytes, mapped
 * once, kernel/mm/dma.c) is copied here first, into DMA-only pages that
 * follow the header pages in one run, mapped once for the queue's life.
 * Without an IOMMU the device reads all of memory anyway: zero-copy, no
 * pool. The pool is BOUNCE_CHUNK-byte chunks, min(ring, BOUNCE_CHUNKS_MAX)
 * of them but at least BOUNCE_FRAME_CHUNKS; a frame's bounced bytes take
 * one contiguous run (so a frame keeps at most n + 1 descriptors): an
 * MTU-sized frame one chunk, so a 256-entry ring of them fits whole
 * (256 x 2 KiB = 512 KiB), a 64 KiB TSO frame 33, eight of them in flight.
 * A frame that finds no run waits as if the ring were full (-ENOSPC: a
 * completion frees chunks); an empty pool always takes the largest frame. */
#define BOUNCE_CHUNK 2048u
#define BOUNCE_CHUNKS_MAX 256u
#define BOUNCE_FRAME_CHUNKS ((VNET_FRAME_MAX + BOUNCE_CHUNK - 1) / BOUNCE_CHUNK)
_Static_assert(BOUNCE_CHUNKS_MAX % 64 == 0 && BOUNCE_FRAME_CHUNKS <= BOUNCE_CHUNKS_MAX, "bounce bitmap");

struct txslot {
	u8 *hdr;	/* VIRTIO_NET_HDR_LEN bytes in vn->hdrs */
	void *token;
	struct txslot *next_free;
	u16 bfirst, bn;	/* bounce chunks this frame holds */
};

struct vnet {
	struct virtio_dev *vd;		/* NULL while the device is removed */
	struct virtio_dev *key;		/* the device this state belongs to */
	struct virtio_vq *rx, *tx, *ctrl;
	struct work rx_work, tx_work, refill_work, kick_work;
	struct timer coal_timer;
	struct timer recheck;		/* vnet_recheck() */
	struct coal_policy coal;
	bool coal_device;		/* NOTF_COAL programs the device */
	bool coal_dev_set;
	u16 coal_dev_frames;		/* last programmed */
	u32 coal_dev_usecs;
	u32 coal_acc;			/* frames since the last coal_sample */
	u64 irqs_sampled;
	bool in_poll;
	struct vnet_rx_cfg rxcfg;
	struct vnet_rxbuf *free_rx;
	u32 nposted, nheld, ntotal;
	u32 rx_skip;			/* buffers of a dropped packet still to discard */
	u16 buf_pages;
	struct txslot *slots, *free_tx;
	u32 nslots;
	u8 *hdrs;			/* the slots' headers, hdr_pages pages, then the bounce pool */
	u32 hdr_pages, dma_pages;	/* dma_pages: the whole DMA-only run */
	u8 *bounce;			/* NULL: not confined, zero-copy */
	u32 bounce_chunks, bounce_next;
	u64 bounce_used[BOUNCE_CHUNKS_MAX / 64];
	bool tx_pending_kick;
	bool attached;
	bool confined;			/* an IOMMU confines the device (vnet_confined) */
	bool rx_csum_whole;		/* vnet_set_rx_csum_whole */
	struct vnet_upper up;
	u8 mac[6];
	bool mac_random;		/* not the device's: none, or a bad one */
	u16 mtu;
	bool link_up;
	u32 link_resumes;
	u32 announces;			/* VIRTIO_NET_S_ANNOUNCE requests taken */
	struct vnet_qstats st[2];
	struct vnet_ctrl_cmd cmd;	/* built here ... */
	struct vnet_ctrl_cmd ctrl_q[CTRL_QUEUE];	/* ... queued here, oldest first ... */
	struct vnet_ctrl_cmd cmd_dev;	/* ... and sent from here */
	u32 ctrl_n;			/* queued */
	bool ctrl_busy;			/* cmd_dev is the device's */
	bool ctrl_late;			/* ... and was not answered in time */
	u64 ctrl_deadline;
	struct timer ctrl_timer;
	/* What the device writes for cmd_dev (ack, then result), on a
	 * DMA-only page of its own, copied into cmd_dev once answered; the
	 * page after it holds what the device reads (the command's header
	 * and data, copied from cmd_dev): struct vnet is never mapped. */
	u8 *ctrl_in;
};

static struct vnet *vnets[MAX_VNETS];
static struct {
	enum coal_mode mode;
	u16 frames;
	u32 usecs;
} coal_cfg = { COAL_ADAPTIVE, 0, 0 };

static int vnet_coal_cfg_parse(const char *val, void *dst, char *why, size_t why_len)
{
	enum coal_mode mode;
	u16 frames;
	u32 usecs;

	(void)dst;
	if (coal_parse(val, &mode, &frames, &usecs) < 0) {
		ksnprintf(why, why_len, "want off, adaptive or <frames 1-%u>,<usecs 0-%u>", COAL_FRAMES_MAX,
			  COAL_USECS_MAX);
		return -EINVAL;
	}
	coal_cfg.mode = mode;
	coal_cfg.frames = frames;
	coal_cfg.usecs = usecs;
	return 0;
}
CMDLINE_PARAM(coalesce, .key = "coalesce", .type = CMDLINE_CUSTOM, .parse = vnet_coal_cfg_parse, .def = "adaptive",
	      .values = "off, adaptive, <frames>,<usecs>",
	      .help = "virtio-net receive interrupt coalescing (frames 1-64, usecs 0-200)");

struct vnet *vnet_get(void)
{
	for (unsigned i = 0; i < MAX_VNETS; i++)
		if (vnets[i])
			return vnets[i];
	return NULL;
}

static void vnet_set_link(struct vnet *vn, bool up);

/* Usable: probed and not broken. A device found broken reports link down
 * to the upper layer, once: it will carry nothing until it is reset. */
static bool vnet_live(struct vnet *vn)
{
	if (vn->vd && !vn->vd->broken)
		return true;
	if (vn->vd && vn->link_up) {
		kprintf("virtio%u: net: link down (device broken)\n", vn->vd->index);
		vnet_set_link(vn, false);
	}
	return false;
}

/* ---- control queue (polled: commands are rare and made from the loop) ---- */

static const char *vnet_ctrl_name(const struct vnet_ctrl_cmd *c)
{
	if (c->hdr[0] == VIRTIO_NET_CTRL_RX && c->hdr[1] == VIRTIO_NET_CTRL_RX_PROMISC)
		return c->data[0] ? "promisc on" : "promisc off";
	if (c->hdr[0] == VIRTIO_NET_CTRL_RX && c->hdr[1] == VIRTIO_NET_CTRL_RX_ALLMULTI)
		return c->data[0] ? "allmulti on" : "allmulti off";
	if (c->hdr[0] == VIRTIO_NET_CTRL_MAC)
		return "MAC filter";
	if (c->hdr[0] == VIRTIO_NET_CTRL_ANNOUNCE)
		return "announce ack";
	if (c->hdr[0] == VIRTIO_NET_CTRL_NOTF_COAL)
		return "NOTF_COAL";
	return "command";
}

/* The outcome of one command: 0, or why it failed (-EIO refused, -EPROTO
 * a malformed answer, -ETIMEDOUT none in time). */
static void vnet_ctrl_done(struct vnet *vn, const struct vnet_ctrl_cmd *c, int err)
{
	if (!err || !vn->vd)
		return;
	if (c->hdr[0] == VIRTIO_NET_CTRL_NOTF_COAL) {
		if (vn->coal_device)
			kprintf("virtio%u: net: NOTF_COAL refused (%d); coalescing in the driver\n", vn->vd->index,
				err);
		vn->coal_device = false;
		return;
	}
	kprintf("virtio%u: net: %s refused (%d)\n", vn->vd->index, vnet_ctrl_name(c), err);
}

/* Takes the device's answer to cmd_dev if there is one. */
static bool vnet_ctrl_reap(struct vnet *vn)
{
	u32 len = 0;
	void *tok = virtq_get(&vn->ctrl->vq, &len);
	bool late = vn->ctrl_late;
	int err;

	if (!tok)
		return false;
	/* Copied out once: the checks and the caller read the copy. */
	vn->cmd_dev.ack = vn->ctrl_in[0];
	memcpy(vn->cmd_dev.result, vn->ctrl_in + 1, sizeof(vn->cmd_dev.result));
	err = tok == &vn->cmd_dev ? vnet_ctrl_ack_check(&vn->cmd_dev.ack, len) : -EPROTO;
	vn->ctrl_busy = vn->ctrl_late = false;
	if (late)
		kprintf("virtio%u: net: late answer to %s (%d); control queue usable again\n", vn->vd->index,
			vnet_ctrl_name(&vn->cmd_dev), err);
	else
		vnet_ctrl_done(vn, &vn->cmd_dev, err);
	return true;
}

/* Sends what is queued while the device answers at once; leaves the poll
 * timer armed while a command is out. */
static void vnet_ctrl_pump(struct vnet *vn)
{
	struct virtq_sg out[3], in[2];
	struct vnet_ctrl_cmd *c = &vn->cmd_dev;
	unsigned no, ni;
	u8 *ob;
	int err;

	for (;;) {
		if (vn->ctrl_busy && !vnet_ctrl_reap(vn)) {
			if (!vn->ctrl_late)
				timer_start(&vn->ctrl_timer, MIN(time_ns() + CTRL_POLL_NS, vn->ctrl_deadline));
			return;
		}
		if (!vn->ctrl_n)
			return;
		*c = vn->ctrl_q[0];
		memmove(&vn->ctrl_q[0], &vn->ctrl_q[1], --vn->ctrl_n * sizeof(vn->ctrl_q[0]));
		no = ni = 0;
		ob = vn->ctrl_in + PAGE_SIZE;
		memcpy(ob, c->hdr, 2);
		memcpy(ob + 2, c->data, c->data_len);
		out[no++] = (struct virtq_sg){ ob, 2 };
		if (c->data_split && c->data_split < c->data_len) {
			out[no++] = (struct virtq_sg){ ob + 2, c->data_split };
			out[no++] = (struct virtq_sg){ ob + 2 + c->data_split, c->data_len - c->data_split };
		} else if (c->data_len) {
			out[no++] = (struct virtq_sg){ ob + 2, c->data_len };
		}
		vn->ctrl_in[0] = c->ack;
		memset(vn->ctrl_in + 1, 0, sizeof(c->result));
		in[ni++] = (struct virtq_sg){ vn->ctrl_in, 1 };
		if (c->result_len)
			in[ni++] = (struct virtq_sg){ vn->ctrl_in + 1, c->result_len };
		err = virtq_add(&vn->ctrl->vq, out, no, in, ni, c);
		if (err) {
			vnet_ctrl_done(vn, c, err);
			continue;
		}
		vn->ctrl_busy = true;
		vn->ctrl_deadline = time_ns() + CTRL_TIMEOUT_NS;
		virtq_kick(&vn->ctrl->vq);
	}
}

/* Fails every queued command (and the one out, which stays the device's
 * until it answers). */
static void vnet_ctrl_fail_all(struct vnet *vn, int err)
{
	struct vnet_ctrl_cmd c;

	if (vn->ctrl_busy)
		vnet_ctrl_done(vn, &vn->cmd_dev, err);
	while (vn->ctrl_n) {
		c = vn->ctrl_q[0];
		memmove(&vn->ctrl_q[0], &vn->ctrl_q[1], --vn->ctrl_n * sizeof(vn->ctrl_q[0]));
		vnet_ctrl_done(vn, &c, err);
	}
}

static void vnet_ctrl_timer_fn(struct timer *t, void *arg)
{
	struct vnet *vn = arg;

	(void)t;
	if (!vn->vd || !vn->ctrl || !vn->ctrl_busy)
		return;
	if (!virtq_is_broken(&vn->ctrl->vq) && (vnet_ctrl_reap(vn) || time_ns() < vn->ctrl_deadline)) {
		vnet_ctrl_pump(vn);
		return;
	}
	kprintf("virtio%u: net: %s not answered in %lu ms; %u queued command%s dropped\n", vn->vd->index,
		vnet_ctrl_name(&vn->cmd_dev), CTRL_TIMEOUT_NS / NSEC_PER_MSEC, vn->ctrl_n, vn->ctrl_n == 1 ? "" : "s");
	vn->ctrl_late = true;
	vnet_ctrl_fail_all(vn, -ETIMEDOUT);
}

/* Queues vn->cmd; the outcome reaches vnet_ctrl_done. 0, or -ENOTSUP (no
 * control queue), -EBUSY (the device has not answered an earlier command
 * yet), -ENOSPC (queue full). */
static int vnet_ctrl_queue(struct vnet *vn)
{
	u32 i;

	if (!vn->ctrl)
		return -ENOTSUP;
	if (vn->ctrl_late && !vnet_ctrl_reap(vn))
		return -EBUSY;
	for (i = 0; i < vn->ctrl_n; i++)
		if (vn->ctrl_q[i].hdr[0] == vn->cmd.hdr[0] && vn->ctrl_q[i].hdr[1] == vn->cmd.hdr[1])
			break;
	if (i == CTRL_QUEUE)
		return -ENOSPC;
	vn->ctrl_q[i] = vn->cmd;
	if (i == vn->ctrl_n)
		vn->ctrl_n++;
	vnet_ctrl_pump(vn);
	return 0;
}

/* Forgets the queue when the device is reset or goes: what it held is no
 * longer its own. */
static void vnet_ctrl_reset(struct vnet *vn)
{
	timer_stop(&vn->ctrl_timer);
	vn->ctrl_n = 0;
	vn->ctrl_busy = vn->ctrl_late = false;
}

/* ---- receive buffers ---- */

static int vnet_rx_alloc(struct vnet *vn, u32 n);

__cold static void vnet_rxbuf_destroy(struct vnet_rxbuf *b)
{
	dma_pages_free(b->buf, b->pages);
	kfree(b);
}

static void vnet_rx_free(struct vnet *vn, struct vnet_rxbuf *b)
{
	if (b->pages != vn->buf_pages) {	/* from before a re-probe changed the size */
		vn->ntotal--;
		vnet_rxbuf_destroy(b);
		vnet_rx_alloc(vn, 1);		/* the pool keeps its size */
		return;
	}
	b->next_free = vn->free_rx;
	vn->free_rx = b;
}

static void vnet_rx_free_chain(struct vnet *vn, struct vnet_rxbuf *b)
{
	while (b) {
		struct vnet_rxbuf *next = b->next;

		vnet_rx_free(vn, b);
		b = next;
	}
}

static void vnet_recheck_soon(struct vnet *vn);

static void vnet_rx_post(struct vnet *vn)
{
	bool added = false;

	if (!vnet_live(vn))
		return;
	while (vn->free_rx) {
		struct vnet_rxbuf *b = vn->free_rx;
		struct virtq_sg in = { b->buf, b->cap };

		if (virtq_add(&vn->rx->vq, NULL, 0, &in, 1, b) < 0)
			break;
		vn->free_rx = b->next_free;
		vn->nposted++;
		added = true;
	}
	if (added) {
		virtq_kick(&vn->rx->vq);
		vnet_recheck_soon(vn);
	}
}

static void vnet_rx_refill(void *arg)
{
	vnet_rx_post(arg);
}

void vnet_rx_release(struct vnet_rxbuf *b)
{
	struct vnet *vn = b->owner;

	vn->nheld--;
	b->next = NULL;
	vnet_rx_free(vn, b);
	if (!vn->in_poll)	/* the poll reposts when it ends */
		work_queue(&vn->refill_work);
}

void vnet_rx_pool(struct vnet *vn, u32 *held, u32 *total)
{
	*held = vn->nheld;
	*total = vn->ntotal;
}

static int vnet_rx_alloc(struct vnet *vn, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		/* The control struct in kernel memory, the frame bytes on
		 * DMA-only pages: nothing the kernel relies on is device-writable. */
		struct vnet_rxbuf *b = kzalloc(sizeof(*b));

		if (!b)
			break;
		b->buf = dma_pages_alloc(vn->buf_pages);
		if (!b->buf) {
			kfree(b);
			break;
		}
		b->pages = vn->buf_pages;
		b->cap = (u32)(vn->buf_pages * PAGE_SIZE);
		b->owner = vn;
		vn->ntotal++;
		vnet_rx_free(vn, b);
	}
	return i ? 0 : -ENOMEM;
}

/* ---- receive ---- */

/* Takes one received packet whose first buffer is b; returns the buffers
 * it took off the ring (the poll's budget counts buffers). */
static unsigned vnet_rx_frame(struct vnet *vn, struct vnet_rxbuf *b, u32 used)
{
	struct vnet_qstats *st = &vn->st[0];
	struct vnet_rxbuf *tail = b;
	struct vnet_rx_info info;
	unsigned flags = 0, segs = 1;

	b->next = NULL;
	if (vnet_hdr_rx_check(&vn->rxcfg, b->buf, used, b->cap, &info) < 0) {
		st->drops[info.drop]++;
		vn->rx_skip += info.skip;
		vnet_rx_free(vn, b);
		return 1;
	}
	b->data = b->buf + info.frame_off;
	b->len = info.first_len;
	/* Merged frames (MRG_RXBUF, num_buffers > 1): the rest of the buffers
	 * are taken, validated and chained. */
	while (info.bufs_left) {
		u32 l2;
		struct vnet_rxbuf *more = virtq_get(&vn->rx->vq, &l2);

		if (!more) {
			virtio_set_broken(vn->vd, "merged frame missing buffers");
			vnet_rx_free_chain(vn, b);
			return segs;
		}
		vn->nposted--;
		more->next = NULL;
		if (vnet_hdr_rx_merge(&vn->rxcfg, &info, l2, more->cap) < 0) {
			st->drops[info.drop]++;
			vn->rx_skip += info.skip;
			vnet_rx_free(vn, more);
			vnet_rx_free_chain(vn, b);
			return segs + 1;
		}
		more->data = more->buf;
		more->len = l2;
		tail->next = more;
		tail = more;
		segs++;
	}
	if (info.csum_valid || info.needs_csum) {
		flags |= VNET_RX_CSUM_OK;
		st->csum_offloaded++;
	}
	if (info.gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		st->gso_frames++;
		st->gso_segments += vnet_hdr_rx_gso_segments(&info);
	}
	if (vn->confined)
		flags |= VNET_RX_CONFINED;
	if (info.needs_csum && segs == 1 && vn->rx_csum_whole)
		vnet_hdr_csum_complete(b->data, b->len, info.csum_start, info.csum_offset);
	st->frames++;
	st->bytes += info.frame_len;
	if (!vn->attached) {
		vnet_rx_free_chain(vn, b);
		return segs;
	}
	vn->nheld += segs;
	vn->up.rx(vn->up.ctx, b, info.frame_len, flags);
	return segs;
}

static unsigned vnet_tx_reclaim(struct vnet *vn);
static void vnet_bounce_put(struct vnet *vn, struct txslot *s);

/* Re-enables the receive interrupt as the coalescing policy says, after a
 * poll that found the queue empty (coalesce.h, driver contract). */
static void vnet_rx_rearm(struct vnet *vn)
{
	struct virtq *vq = &vn->rx->vq;
	u64 now = time_ns(), irqs = vn->rx->interrupts, dl;
	u16 frames;
	bool ok;

	coal_sample(&vn->coal, now, vn->coal_acc, (u32)(irqs - vn->irqs_sampled), loop_busy_ns());
	vn->coal_acc = 0;
	vn->irqs_sampled = irqs;
	frames = coal_frames(&vn->coal);
	if (vn->coal_device) {
		u32 usecs = coal_usecs(&vn->coal);

		if (!vn->coal_dev_set || frames != vn->coal_dev_frames || usecs != vn->coal_dev_usecs) {
			int err;

			if (virtio_has(vn->vd, VIRTIO_NET_F_VQ_NOTF_COAL))
				err = vnet_ctrl_coal_vq_set(&vn->cmd, VIRTIO_NET_RXQ(0), frames, usecs);
			else
				err = vnet_ctrl_coal_set(&vn->cmd, false, frames, usecs);
			if (err >= 0)
				err = vnet_ctrl_queue(vn);
			/* The answer comes later: a refusal or no answer turns
			 * coal_device off there (vnet_ctrl_done). */
			if (err < 0) {
				kprintf("virtio%u: net: NOTF_COAL refused (%d); coalescing in the driver\n",
					vn->vd->index, err);
				vn->coal_device = false;
			} else {
				vn->coal_dev_set = true;
				vn->coal_dev_frames = frames;
				vn->coal_dev_usecs = usecs;
			}
		}
	}
	if (!vn->coal_device && frames > 1)
		ok = virtq_enable_cb_delayed(vq, frames);
	else
		ok = virtq_enable_cb(vq);
	if (!ok) {	/* completions raced in: poll again */
		virtq_disable_cb(vq);
		work_queue(&vn->rx_work);
		return;
	}
	vnet_recheck_soon(vn);
	dl = coal_deadline(&vn->coal, now, vn->coal_device);
	if (dl != COAL_NO_DEADLINE)
		timer_start(&vn->coal_timer, dl);
	else
		timer_stop(&vn->coal_timer);
}

static void vnet_rx_poll(void *arg)
{
	struct vnet *vn = arg;
	struct vnet_qstats *st = &vn->st[0];
	struct vnet_rxbuf *b;
	unsigned n = 0;
	u32 len;

	if (!vnet_live(vn))
		return;
	st->polls++;
	st->interrupts = vn->rx->interrupts;
	vn->in_poll = true;
	while (n < RX_BUDGET && (b = virtq_get(&vn->rx->vq, &len))) {
		vn->nposted--;
		if (vn->rx_skip) {	/* the rest of a packet already dropped */
			vn->rx_skip--;
			vnet_rx_free(vn, b);
			n++;
			continue;
		}
		n += vnet_rx_frame(vn, b, len);
		if (!vnet_live(vn))
			break;
	}
	vn->in_poll = false;
	if (!vnet_live(vn))
		return;
	vnet_tx_reclaim(vn);
	if (virtq_is_broken(&vn->rx->vq)) {
		virtio_set_broken(vn->vd, "receive queue broken");
		return;
	}
	vnet_rx_post(vn);
	vn->coal_acc += n;
	if (n >= RX_BUDGET) {	/* a merged frame may end past the budget */
		st->budget_exhausted++;
		work_queue(&vn->rx_work);
		return;
	}
	vnet_rx_rearm(vn);
}

static void vnet_rx_irq(struct virtio_vq *q)
{
	struct vnet *vn = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&vn->rx_work);
}

static void vnet_coal_timer_fn(struct timer *t, void *arg)
{
	struct vnet *vn = arg;

	(void)t;
	vn->st[0].coal_timer_wakeups++;
	virtq_disable_cb(&vn->rx->vq);
	work_queue(&vn->rx_work);
}

/* ---- transmit ----
 *
 * The transmit queue's wakeup rule: whenever a frame is in flight (added
 * and not yet reclaimed), either the device has been asked to interrupt by
 * the time it has completed all of them, or the kick or the poll is
 * queued. A frame in flight holds the upper layer's memory (a zero-copy
 * body, the reflector's receive buffer), so a queue that breaks the rule
 * keeps it until something else makes the driver look: the next send, or
 * nothing at all when the next send waits for that memory (the reflector
 * with every receive buffer in flight, issue 37). Every path keeps it:
 * - vnet_tx() adds a frame and queues the kick;
 * - the kick and the poll end in vnet_tx_arm(), which arms for everything
 *   in flight, or queues the poll when the device got there first;
 * - the interrupt disables the callback and queues the poll;
 * - a reclaim anywhere else (vnet_tx() with no free slot, the receive
 *   poll, link resume) moves neither the device's used index nor the
 *   armed event: what is still in flight stays covered by it.
 * The event index moves only forward with the frames in flight, so an
 * interrupt decided for an earlier event and delivered after a later one
 * was armed ends in a poll that arms again for what is left. */

static unsigned vnet_tx_reclaim(struct vnet *vn)
{
	struct txslot *s;
	unsigned n = 0;
	u32 len;

	if (!vn->tx)
		return 0;
	while ((s = virtq_get(&vn->tx->vq, &len))) {
		void *token = s->token;

		s->token = NULL;
		vnet_bounce_put(vn, s);
		s->next_free = vn->free_tx;
		vn->free_tx = s;
		n++;
		if (token && vn->attached)
			vn->up.tx_done(vn->up.ctx, token);
	}
	/* A device that broke the transmit ring's rules completes nothing
	 * more: the device is broken and the link goes down (vnet_live()), so the
	 * upper layer drops its backlog instead of waiting for completions. */
	if (vn->vd && virtq_is_broken(&vn->tx->vq)) {
		virtio_set_broken(vn->vd, "transmit queue broken");
		vnet_live(vn);
	}
	return n;
}

/* Re-establishes the rule above: one interrupt once everything in flight
 * is done. virtq_enable_cb_delayed() reads the used index again after
 * publishing the event (§2.7.14: re-check after re-enabling, since the
 * device may have passed the event before it saw it, §2.7.7); if it has,
 * the interrupt may never come and the poll takes over. Nothing in
 * flight: nothing to wake for, and the next kick arms. */
static void vnet_tx_arm(struct vnet *vn)
{
	struct virtq *vq = &vn->tx->vq;

	if (!vq->inflight)
		return;
	if (!virtq_enable_cb_delayed(vq, vq->inflight)) {
		virtq_disable_cb(vq);
		work_queue(&vn->tx_work);
	}
	vnet_recheck_soon(vn);
}

/* The re-checks above are the driver's half of a handshake whose other
 * half runs in the device, concurrently: the driver stores the event, then
 * reads the index; the device stores the index, then reads the event. With
 * a full barrier between each store and read, one of them sees the other.
 * QEMU before 8.1 under TCG with one vCPU does not carry out the guest's
 * barriers (its commit "tcg: Do not elide memory barriers for
 * !CF_PARALLEL in system mode", c914d46d0a), so on QEMU 7.2 both can miss:
 * a queue is armed, the device used what it holds and sent nothing, and the
 * reflector stops for good (seen with the rule above kept: about one
 * overload run in four, tests/matrix/test_echo_flood.py). The same holds
 * for kicks (avail idx against the device's avail event). So the driver
 * looks once more, RECHECK_NS after it armed or posted: used buffers on
 * either queue are taken as their interrupt, the receive queue is notified,
 * and the transmit queue while frames are in flight (a notification the
 * device does not need costs it one look at the ring). The timer runs
 * again while frames are in flight, and stops when nothing is: an idle
 * device costs nothing. */
#define RECHECK_NS (10 * NSEC_PER_MSEC)

static void vnet_tx_irq(struct virtio_vq *q);

__cold static void vnet_recheck(struct timer *t, void *arg)
{
	struct vnet *vn = arg;

	/* Stopped before the queues go (remove, a failed probe); a broken
	 * queue reports nothing used and takes no notification. */
	if (virtq_more_used(&vn->rx->vq))
		vnet_rx_irq(vn->rx);
	if (virtq_more_used(&vn->tx->vq))
		vnet_tx_irq(vn->tx);
	virtq_notify(&vn->rx->vq);
	if (vn->tx->vq.inflight) {
		virtq_notify(&vn->tx->vq);
		timer_start(t, time_ns() + RECHECK_NS);
	}
}

__attribute__((noinline)) static void vnet_recheck_soon(struct vnet *vn)
{
	if (!vn->recheck.armed)
		timer_start(&vn->recheck, time_ns() + RECHECK_NS);
}

/* A free run of n chunks, next-fit from where the last one ended (frames
 * complete about in order, so the pool is used as a ring); -1: none. */
static int vnet_bounce_get(struct vnet *vn, u32 n)
{
	u32 tries, start = vn->bounce_next, run = 0, i;

	for (tries = 0; tries < vn->bounce_chunks + n; tries++) {
		i = (start + tries) % vn->bounce_chunks;
		if (i == 0)
			run = 0;	/* a run never wraps */
		if (vn->bounce_used[i / 64] >> (i % 64) & 1) {
			run = 0;
			continue;
		}
		if (++run == n) {
			u32 first = i + 1 - n, k;

			for (k = first; k <= i; k++)
				vn->bounce_used[k / 64] |= 1ull << (k % 64);
			vn->bounce_next = (i + 1) % vn->bounce_chunks;
			return (int)first;
		}
	}
	return -1;
}

static void vnet_bounce_put(struct vnet *vn, struct txslot *s)
{
	for (u32 k = s->bfirst; k < (u32)s->bfirst + s->bn; k++)
		vn->bounce_used[k / 64] &= ~(1ull << (k % 64));
	s->bn = 0;
}

/* Copies every segment of sg a confined device may not read in place into
 * a bounce run (see BOUNCE_CHUNK), building out[1..]: consecutive bounced
 * segments become one element. Returns the element count, or -ENOSPC (no
 * run free now). Zero-copy without a pool, or when nothing needs a copy. */
static int vnet_tx_bounce(struct vnet *vn, struct txslot *s, const struct virtq_sg *sg, unsigned n,
			  struct virtq_sg *out)
{
	u32 need = 0, off = 0;
	unsigned i, m = 0;
	bool prev = false;
	int first;
	u8 *dst;

	s->bn = 0;
	if (vn->bounce)
		for (i = 0; i < n; i++)
			if (!mm_in_rodata(sg[i].addr, sg[i].len))
				need += sg[i].len;
	if (!need) {
		for (i = 0; i < n; i++)
			out[i] = sg[i];
		return (int)n;
	}
	if (need > vn->bounce_chunks * BOUNCE_CHUNK)
		return -EINVAL;	/* longer than any frame: never fits */
	first = vnet_bounce_get(vn, (need + BOUNCE_CHUNK - 1) / BOUNCE_CHUNK);
	if (first < 0)
		return -ENOSPC;
	s->bfirst = (u16)first;
	s->bn = (u16)((need + BOUNCE_CHUNK - 1) / BOUNCE_CHUNK);
	dst = vn->bounce + (size_t)first * BOUNCE_CHUNK;
	for (i = 0; i < n; i++) {
		if (mm_in_rodata(sg[i].addr, sg[i].len)) {
			out[m++] = sg[i];
			prev = false;
			continue;
		}
		memcpy(dst + off, sg[i].addr, sg[i].len);
		if (prev)
			out[m - 1].len += sg[i].len;
		else
			out[m++] = (struct virtq_sg){ dst + off, sg[i].len };
		off += sg[i].len;
		prev = true;
	}
	vn->st[1].bounced++;
	vn->st[1].bounce_bytes += need;
	return (int)m;
}

/* Kicks once per loop pass however many frames were queued in it. */
static void vnet_tx_kick(void *arg)
{
	struct vnet *vn = arg;

	if (!vn->tx_pending_kick || !vnet_live(vn))
		return;
	vn->tx_pending_kick = false;
	virtq_kick(&vn->tx->vq);
	vnet_tx_arm(vn);
}

int vnet_tx(struct vnet *vn, const struct virtq_sg *sg, unsigned n, unsigned flags, void *token)
{
	struct virtq_sg out[VNET_TX_MAX_SG + 1];
	struct txslot *s;
	u16 start = 0, off = 0, gso = VNET_TX_GSO_SIZE(flags);
	bool offload = false;
	unsigned i;
	u32 bytes = 0;
	int err;

	if (!vnet_live(vn) || !vn->link_up || n == 0 || n > VNET_TX_MAX_SG)
		return -EIO;
	if (!vn->free_tx) {
		vnet_tx_reclaim(vn);
		if (!vnet_live(vn))
			return -EIO;
	}
	s = vn->free_tx;
	if (!s) {
		vn->st[1].no_room++;
		return -ENOSPC;
	}
	if ((flags & VNET_TX_CSUM) && virtio_has(vn->vd, VIRTIO_NET_F_CSUM))
		offload = vnet_hdr_tx_csum_prep((u8 *)(uintptr_t)sg[0].addr, sg[0].len, &start, &off) == 0;
	vnet_hdr_tx_hdr(s->hdr, vn->rxcfg.hdr_len, offload, start, off);
	/* A frame for the device to segment is longer than the MTU: without
	 * the offload it cannot be sent at all. */
	if (gso && (!offload || vnet_tx_gso_hdr(s->hdr, sg[0].addr, sg[0].len, start, gso,
						 virtio_has(vn->vd, VIRTIO_NET_F_HOST_TSO4),
						 virtio_has(vn->vd, VIRTIO_NET_F_HOST_TSO6)) < 0))
		return -EINVAL;
	out[0] = (struct virtq_sg){ s->hdr, vn->rxcfg.hdr_len };
	for (i = 0; i < n; i++)
		bytes += sg[i].len;
	/* After the checksum was filled in: the copy carries it. */
	err = vnet_tx_bounce(vn, s, sg, n, out + 1);
	if (err == -ENOSPC)
		vn->st[1].bounce_full++;
	if (err < 0)
		return err;
	err = virtq_add(&vn->tx->vq, out, (unsigned)err + 1, NULL, 0, s);
	if (err < 0)
		vnet_bounce_put(vn, s);
	if (err == -ENOSPC) {
		vn->st[1].no_room++;
		return -ENOSPC;
	}
	if (err < 0) {
		/* Not "full": a chain the ring can never take (longer than the
		 * queue) or a broken queue. Retrying cannot help, so it fails
		 * fast: the device is marked broken and the link goes down,
		 * and the upper layer releases what it queued for us. */
		kprintf("virtio%u: net: transmit add failed (%d), %u pieces on a ring of %u\n", vn->vd->index,
			err, n + 1, vn->tx->vq.num);
		virtio_set_broken(vn->vd, "transmit add failed");
		vnet_live(vn);
		return -EIO;
	}
	vn->free_tx = s->next_free;
	s->token = token;
	vn->st[1].frames++;
	vn->st[1].bytes += bytes;
	if (offload)
		vn->st[1].csum_offloaded++;
	if (gso) {
		u32 hl = (u32)s->hdr[2] | (u32)s->hdr[3] << 8;

		vn->st[1].gso_frames++;
		vn->st[1].gso_segments += (bytes - hl + gso - 1) / gso;
	}
	if (!vn->tx_pending_kick) {
		vn->tx_pending_kick = true;
		work_queue(&vn->kick_work);
	}
	return 0;
}

/* A panic's last frames (see virtio_net.h): no completion goes up any
 * more, and the device is notified now, since the loop that kicks never
 * runs again. */
int vnet_tx_emergency(struct vnet *vn, const void *frame, u32 len)
{
	struct virtq_sg sg = { frame, len };
	int err;

	if (!vn || !vn->tx)
		return -EIO;
	vn->attached = false;
	err = vnet_tx(vn, &sg, 1, 0, NULL);
	if (err == 0) {
		vn->tx_pending_kick = false;
		virtq_kick(&vn->tx->vq);
	}
	return err;
}

static void vnet_tx_poll(void *arg)
{
	struct vnet *vn = arg;

	if (!vnet_live(vn))
		return;
	vn->st[1].polls++;
	vn->st[1].interrupts = vn->tx->interrupts;
	vnet_tx_reclaim(vn);
	vnet_tx_arm(vn);	/* nothing when the reclaim found the queue broken */
}

static void vnet_tx_irq(struct virtio_vq *q)
{
	struct vnet *vn = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&vn->tx_work);
}

/* ---- the upper-layer interface ---- */

int vnet_attach(struct vnet *vn, const struct vnet_upper *up)
{
	if (vn->attached || !up->rx || !up->tx_done || !up->link)
		return -EBUSY;
	vn->up = *up;
	vn->attached = true;
	vn->up.link(vn->up.ctx, vn->link_up);
	return 0;
}

void vnet_set_rx_csum_whole(struct vnet *vn, bool on)
{
	vn->rx_csum_whole = on;
}

void vnet_get_info(struct vnet *vn, struct vnet_info *info)
{
	memset(info, 0, sizeof(*info));
	info->index = vn->key->index;
	memcpy(info->mac, vn->mac, 6);
	info->mtu = vn->mtu;
	info->link_up = vn->link_up;
	if (vn->vd) {
		info->tx_csum = virtio_has(vn->vd, VIRTIO_NET_F_CSUM);
		info->rx_csum = virtio_has(vn->vd, VIRTIO_NET_F_GUEST_CSUM);
		info->tx_tso4 = virtio_has(vn->vd, VIRTIO_NET_F_HOST_TSO4);
		info->tx_tso6 = virtio_has(vn->vd, VIRTIO_NET_F_HOST_TSO6);
		info->rx_tso4 = virtio_has(vn->vd, VIRTIO_NET_F_GUEST_TSO4);
		info->rx_tso6 = virtio_has(vn->vd, VIRTIO_NET_F_GUEST_TSO6);
	}
}

void vnet_get_stats(struct vnet *vn, struct vnet_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->q[0] = vn->st[0];
	st->q[1] = vn->st[1];
	if (vn->rx)
		st->q[0].interrupts = vn->rx->interrupts;
	if (vn->tx)
		st->q[1].interrupts = vn->tx->interrupts;
	st->rx_posted = vn->nposted;
	st->rx_held = vn->nheld;
	st->rx_total = vn->ntotal;
	st->coal_mode = vn->coal.mode;
	st->coal_frames = coal_frames(&vn->coal);
	st->coal_usecs = coal_usecs(&vn->coal);
	st->coal_device = vn->coal_device;
	st->coal = vn->coal.stats;
	st->resets = vn->key->resets;
	st->link_resumes = vn->link_resumes;
	st->announces = vn->announces;
}

/* ---- configuration ---- */

/* Link up again: nothing may wait for an event the down time could have
 * swallowed. Completions the device made while we were not looking are
 * reclaimed now (their tokens go back, so a backlog above can drain), the
 * receive ring is refilled, both queues are notified whether or not the
 * suppression fields ask for it (a device that ran out of receive buffers
 * or parked a transmit looks at its rings again), and the receive queue is
 * polled once, so a frame used without an interrupt is taken and the
 * queue re-armed from a known state. */
static void vnet_link_resume(struct vnet *vn)
{
	if (!vnet_live(vn))
		return;
	vnet_tx_reclaim(vn);
	vnet_rx_post(vn);
	virtq_notify(&vn->rx->vq);
	if (vn->tx->vq.inflight)
		virtq_notify(&vn->tx->vq);
	virtq_disable_cb(&vn->rx->vq);
	work_queue(&vn->rx_work);
	vn->link_resumes++;
}

static void vnet_set_link(struct vnet *vn, bool up)
{
	if (up == vn->link_up)
		return;
	/* A broken device stays down: bringing it up would have
	 * vnet_link_resume()'s vnet_live() report it down again, nested, before the
	 * upper layer was told it was up. */
	if (up && !vnet_live(vn))
		return;
	vn->link_up = up;
	if (up)
		vnet_link_resume(vn);
	if (vn->attached)
		vn->up.link(vn->up.ctx, up);
}

static void vnet_read_link(struct vnet *vn, bool announce_log)
{
	struct virtio_dev *d = vn->vd;
	u16 status = VIRTIO_NET_S_LINK_UP;
	bool up;
	int err;

	/* A torn read (the generation never settled) changes nothing: the
	 * next config interrupt reads again. */
	if (virtio_has(d, VIRTIO_NET_F_STATUS) &&
	    virtio_cfg_read16(d, offsetof(struct virtio_net_config, status), &status) < 0)
		return;
	up = status & VIRTIO_NET_S_LINK_UP;
	if (up != vn->link_up || announce_log)
		kprintf("virtio%u: net: link %s\n", d->index, up ? "up" : "down");
	vnet_set_link(vn, up);
	/* Spec 5.1.6.5.4 (Gratuitous Packet Sending): processing the
	 * notification "involves: 1. Sending the gratuitous packets (eg. ARP)
	 * or marking there are pending gratuitous packets to be sent and
	 * letting deferred routine to send them. 2. Sending
	 * VIRTIO_NET_CTRL_ANNOUNCE_ACK command through control vq." So the
	 * upper layer sends first (on the transmit queue, ahead of the ack),
	 * then the ack clears the bit. */
	if ((status & VIRTIO_NET_S_ANNOUNCE) && virtio_has(d, VIRTIO_NET_F_GUEST_ANNOUNCE)) {
		kprintf("virtio%u: net: announce requested\n", d->index);
		vn->announces++;
		if (vn->attached && vn->up.announce)
			vn->up.announce(vn->up.ctx);
		if (vnet_ctrl_announce_ack(&vn->cmd) >= 0 && (err = vnet_ctrl_queue(vn)))
			kprintf("virtio%u: net: announce ack not sent (%d)\n", d->index, err);
	}
}

static void vnet_config_changed(struct virtio_dev *d)
{
	vnet_read_link(d->priv, false);
}

static void vnet_ctrl_setup(struct vnet *vn)
{
	struct virtio_dev *d = vn->vd;
	int err;

	if (!vn->ctrl || !virtio_has(d, VIRTIO_NET_F_CTRL_RX))
		return;
	/* Our MAC, broadcast and all multicast (IPv6 neighbour discovery).
	 * Queued, not awaited: a refusal is logged when it comes. */
	if (vnet_ctrl_rx_mode(&vn->cmd, VIRTIO_NET_CTRL_RX_PROMISC, false) >= 0 && (err = vnet_ctrl_queue(vn)))
		kprintf("virtio%u: net: promisc off not sent (%d)\n", d->index, err);
	if (vnet_ctrl_rx_mode(&vn->cmd, VIRTIO_NET_CTRL_RX_ALLMULTI, true) >= 0 && (err = vnet_ctrl_queue(vn)))
		kprintf("virtio%u: net: allmulti on not sent (%d)\n", d->index, err);
	if (vnet_ctrl_mac_table(&vn->cmd, (const u8 (*)[6])vn->mac, 1, NULL, 0) >= 0 && (err = vnet_ctrl_queue(vn)))
		kprintf("virtio%u: net: MAC filter not sent (%d)\n", d->index, err);
}

static void vnet_coal_setup(struct vnet *vn)
{
	struct virtio_dev *d = vn->vd;

	coal_init(&vn->coal, coal_cfg.mode, coal_cfg.frames, coal_cfg.usecs);
	coal_limit_frames(&vn->coal, (u16)MAX(1u, vn->nposted / 2));
	vn->coal_device = vn->ctrl && (virtio_has(d, VIRTIO_NET_F_NOTF_COAL) ||
				       virtio_has(d, VIRTIO_NET_F_VQ_NOTF_COAL));
	vn->coal_dev_set = false;
	/* Driver-side coalescing holds interrupts back through the event
	 * index; without it every completion interrupts anyway. */
	if (!vn->coal_device && coal_cfg.mode != COAL_OFF && !virtio_has(d, VIRTIO_F_EVENT_IDX)) {
		kprintf("virtio%u: net: no RING_EVENT_IDX or NOTF_COAL: coalescing off\n", d->index);
		coal_init(&vn->coal, COAL_OFF, 0, 0);
	}
	vn->coal_acc = 0;
	vn->irqs_sampled = vn->rx->interrupts;
}

static struct vnet *vnet_for(struct virtio_dev *d)
{
	unsigned i, slot = MAX_VNETS;

	for (i = 0; i < MAX_VNETS; i++) {
		if (vnets[i] && vnets[i]->key == d)
			return vnets[i];
		if (!vnets[i] && slot == MAX_VNETS)
			slot = i;
	}
	if (slot == MAX_VNETS)
		return NULL;
	vnets[slot] = kzalloc(sizeof(struct vnet));
	if (vnets[slot]) {
		/* The control queue's reply bytes, for the struct's life
		 * (vnet_destroy; kept for good if the device died). */
		vnets[slot]->ctrl_in = dma_pages_alloc(2);
		if (!vnets[slot]->ctrl_in) {
			kfree(vnets[slot]);
			vnets[slot] = NULL;
			return NULL;
		}
		vnets[slot]->key = d;
		work_init(&vnets[slot]->rx_work, vnet_rx_poll, vnets[slot]);
		work_init(&vnets[slot]->tx_work, vnet_tx_poll, vnets[slot]);
		work_init(&vnets[slot]->refill_work, vnet_rx_refill, vnets[slot]);
		work_init(&vnets[slot]->kick_work, vnet_tx_kick, vnets[slot]);
		timer_init(&vnets[slot]->coal_timer, vnet_coal_timer_fn, vnets[slot]);
		timer_init(&vnets[slot]->recheck, vnet_recheck, vnets[slot]);
		timer_init(&vnets[slot]->ctrl_timer, vnet_ctrl_timer_fn, vnets[slot]);
	}
	return vnets[slot];
}

static void vnet_forget(struct vnet *vn)
{
	unsigned i;

	for (i = 0; i < MAX_VNETS; i++)
		if (vnets[i] == vn)
			vnets[i] = NULL;
}

/* The struct goes; its control page too unless the device may still write
 * it (dead: its reset never completed). */
__cold static void vnet_destroy(struct vnet *vn, bool dead)
{
	if (dead)
		virtio_keep_forever(vn->ctrl_in, 2);
	else
		dma_pages_free(vn->ctrl_in, 2);
	kfree(vn);
}

static void vnet_free_buffers(struct vnet *vn)
{
	while (vn->free_rx) {
		struct vnet_rxbuf *b = vn->free_rx;

		vn->free_rx = b->next_free;
		vn->ntotal--;
		vnet_rxbuf_destroy(b);
	}
}

/* The device's MAC if it offers one that is unicast and not zero; else a
 * random locally administered unicast one (kept across re-probes). */
static void vnet_read_mac(struct vnet *vn, bool again)
{
	struct virtio_dev *d = vn->vd;
	const char *why = NULL;
	u8 mac[6];

	if (!virtio_has(d, VIRTIO_NET_F_MAC))
		why = "none offered";
	else if (virtio_cfg_read(d, offsetof(struct virtio_net_config, mac), mac, 6) < 0)
		why = "unreadable";
	else if (mac[0] & 1)
		why = "multicast";
	else if (!(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]))
		why = "all zero";
	if (!why) {
		memcpy(vn->mac, mac, 6);
		vn->mac_random = false;
		return;
	}
	if (virtio_has(d, VIRTIO_NET_F_MAC))
		kprintf("virtio%u: net: device MAC %s; using a random one\n", d->index, why);
	if (again && vn->mac_random)
		return;	/* the upper layer already knows this one */
	do {
		u64 r = random_u64();

		memcpy(vn->mac, &r, 6);
		vn->mac[0] = (u8)((vn->mac[0] & 0xfe) | 0x02);	/* unicast, locally administered */
	} while (!(vn->mac[1] | vn->mac[2] | vn->mac[3] | vn->mac[4] | vn->mac[5]));
	vn->mac_random = true;
}

__cold static int vnet_net_probe(struct virtio_dev *d)
{
	struct vnet *vn = vnet_for(d);
	bool mrg = virtio_has(d, VIRTIO_NET_F_MRG_RXBUF);
	bool again;
	u32 i, cap, want;
	u16 pages;
	int err;

	if (!vn)
		return -ENOMEM;
	again = vn->attached;
	vn->vd = d;
	d->priv = vn;
	vnet_read_mac(vn, again);
	vn->mtu = 1500;
	if (virtio_has(d, VIRTIO_NET_F_MTU)) {
		u16 mtu = 0;

		if (virtio_cfg_read16(d, offsetof(struct virtio_net_config, mtu), &mtu) < 0)
			kprintf("virtio%u: net: device mtu unreadable, using 1500\n", d->index);
		else if (mtu >= 68)
			vn->mtu = mtu;
		else
			kprintf("virtio%u: net: device mtu %u is below 68, using 1500\n", d->index, mtu);
	}
	vn->rxcfg.hdr_len = vnet_hdr_len(d->modern, mrg);
	vn->rxcfg.mrg_rxbuf = mrg;
	vn->rxcfg.guest_csum = virtio_has(d, VIRTIO_NET_F_GUEST_CSUM);
	vn->rxcfg.max_frame = MIN((u32)vn->mtu + 18, (u32)VNET_FRAME_MAX);
	vn->rxcfg.guest_tso4 = virtio_has(d, VIRTIO_NET_F_GUEST_TSO4);
	vn->rxcfg.guest_tso6 = virtio_has(d, VIRTIO_NET_F_GUEST_TSO6);
	vn->rxcfg.max_gso_frame = VNET_FRAME_MAX;

	vn->rx = virtio_setup_vq(d, VIRTIO_NET_RXQ(0), 0, vnet_rx_irq, vn);
	vn->tx = vn->rx ? virtio_setup_vq_transient(d, VIRTIO_NET_TXQ(0), 0, vnet_tx_irq, vn) : NULL;
	if (!vn->tx) {
		err = -EIO;
		goto fail;
	}
	vn->ctrl = NULL;
	vnet_ctrl_reset(vn);
	if (virtio_has(d, VIRTIO_NET_F_CTRL_VQ)) {
		vn->ctrl = virtio_setup_vq_transient(d, 2, 64, NULL, vn);
		if (vn->ctrl)
			virtq_disable_cb(&vn->ctrl->vq);	/* polled */
	}
	vn->rxcfg.max_buffers = vn->rx->num;

	/* Receive buffers: one page each with MRG_RXBUF (frames longer than a
	 * buffer span several), else big enough for a whole frame. */
	cap = mrg ? PAGE_SIZE : vn->rxcfg.hdr_len + vn->rxcfg.max_frame;
	pages = (u16)(ALIGN_UP(cap, (u32)PAGE_SIZE) / PAGE_SIZE);
	if (pages != vn->buf_pages) {
		vn->buf_pages = pages;
		vnet_free_buffers(vn);	/* held ones are freed as they come back */
	}
	want = MIN((u32)vn->rx->num, (u32)RX_MAX_BUFS);
	if (vn->ntotal < want && vnet_rx_alloc(vn, want - vn->ntotal) < 0 && !vn->free_rx) {
		err = -ENOMEM;
		goto fail;
	}
	vn->nslots = vn->tx->num;
	vn->slots = kzalloc(vn->nslots * sizeof(*vn->slots));
	vn->hdr_pages = ALIGN_UP(vn->nslots * TXHDR_STRIDE, (u32)PAGE_SIZE) / PAGE_SIZE;
	/* The bounce pool only when an IOMMU confines the device (above):
	 * translated and, on PCI, the IOMMU's policy says so (iommu=strict;
	 * permissive translates but keeps the zero-copy paths). */
	vn->confined = d->dma && (!d->pci || dma_confined(d->pci));
	vn->bounce_chunks = vn->confined ? MAX(MIN(vn->nslots, BOUNCE_CHUNKS_MAX), BOUNCE_FRAME_CHUNKS) : 0;
	vn->dma_pages = vn->hdr_pages + ALIGN_UP(vn->bounce_chunks * BOUNCE_CHUNK, (u32)PAGE_SIZE) / PAGE_SIZE;
	vn->hdrs = dma_pages_alloc(vn->dma_pages);
	if (!vn->slots || !vn->hdrs) {
		err = -ENOMEM;
		goto fail;
	}
	vn->bounce = vn->bounce_chunks ? vn->hdrs + (size_t)vn->hdr_pages * PAGE_SIZE : NULL;
	vn->bounce_next = 0;
	memset(vn->bounce_used, 0, sizeof(vn->bounce_used));
	vn->free_tx = NULL;
	for (i = 0; i < vn->nslots; i++) {
		vn->slots[i].hdr = vn->hdrs + (size_t)i * TXHDR_STRIDE;
		vn->slots[i].next_free = vn->free_tx;
		vn->free_tx = &vn->slots[i];
	}
	/* Freed only after the core cleared the device's domain (remove), or
	 * kept for good with a dead device: nothing stays mapped once freed. */
	virtq_keep_mapped(&vn->tx->vq, vn->hdrs, (size_t)vn->dma_pages * PAGE_SIZE);
	vn->nposted = 0;
	vn->rx_skip = 0;
	vn->tx_pending_kick = false;
	virtq_disable_cb(&vn->tx->vq);
	vnet_rx_post(vn);
	vnet_coal_setup(vn);
	virtio_device_ready(d);
	vnet_ctrl_setup(vn);
	kprintf("virtio%u: net: mac %02x:%02x:%02x:%02x:%02x:%02x%s mtu %u, rx %u x %u B%s, tx ring %u, hdr %u%s\n",
		d->index, vn->mac[0], vn->mac[1], vn->mac[2], vn->mac[3], vn->mac[4], vn->mac[5],
		vn->mac_random ? " (random)" : "", vn->mtu, vn->nposted,
		vn->buf_pages * PAGE_SIZE,
		mrg ? " mergeable" : "", vn->tx->num, vn->rxcfg.hdr_len, vn->ctrl ? ", ctrl" : "");
	kprintf("virtio%u: net: coalescing %s%s, frames %u usecs %u\n", d->index,
		vn->coal.mode == COAL_OFF ? "off" : vn->coal.mode == COAL_FIXED ? "fixed" : "adaptive",
		vn->coal_device ? " (device, NOTF_COAL)" : vn->coal.mode == COAL_OFF ? "" : " (driver, event index)",
		coal_frames(&vn->coal), coal_usecs(&vn->coal));
	vnet_rx_rearm(vn);
	vnet_read_link(vn, true);
	return 0;

fail:
	/* The receive queue may be live with its interrupt routed: nothing
	 * may call into vn (or run work queued on it) once it is freed. */
	virtio_quiesce(d);
	timer_stop(&vn->coal_timer);
	timer_stop(&vn->recheck);
	vnet_ctrl_reset(vn);
	work_cancel(&vn->rx_work);
	work_cancel(&vn->tx_work);
	work_cancel(&vn->refill_work);
	work_cancel(&vn->kick_work);
	kfree(vn->slots);
	vn->slots = NULL;
	if (vn->hdrs)	/* nothing was sent: never mapped */
		dma_pages_free(vn->hdrs, vn->dma_pages);
	vn->hdrs = vn->bounce = NULL;
	vn->rx = vn->tx = vn->ctrl = NULL;	/* the core frees the queues */
	vn->vd = NULL;
	d->priv = NULL;
	if (!vn->attached) {
		vnet_free_buffers(vn);
		vnet_forget(vn);
		vnet_destroy(vn, d->dead);
	}
	return err;
}

__cold static void vnet_net_remove(struct virtio_dev *d)
{
	struct vnet *vn = d->priv;
	void *t;

	if (!vn)
		return;
	/* The device is reset: nothing it holds will be used again. Link down
	 * and no device first, so the upper layer drops what it had queued for
	 * us and nothing it does from tx_done() below can reach these queues. */
	timer_stop(&vn->coal_timer);
	timer_stop(&vn->recheck);
	vnet_ctrl_reset(vn);
	vnet_set_link(vn, false);
	vn->vd = NULL;
	while ((t = virtq_detach_unused(&vn->rx->vq))) {
		vn->nposted--;
		if (d->dead) {	/* the device may still write it: kept for good */
			struct vnet_rxbuf *b = t;

			vn->ntotal--;
			virtio_keep_forever(b->buf, b->pages);
			kfree(b);	/* kernel memory: the device never had it */
			continue;
		}
		vnet_rx_free(vn, t);
	}
	/* Transmit frames go back even from a dead device: it may only read
	 * them, never write (and whoever runs the device can read all of
	 * memory anyway). The slots' headers stay with it all the same. */
	while ((t = virtq_detach_unused(&vn->tx->vq))) {
		struct txslot *s = t;

		if (s->token && vn->attached)
			vn->up.tx_done(vn->up.ctx, s->token);
		s->token = NULL;
	}
	if (d->dead) {
		virtio_keep_forever(vn->slots, 0);
		virtio_keep_forever(vn->hdrs, vn->dma_pages);
	} else {
		kfree(vn->slots);
		dma_pages_free(vn->hdrs, vn->dma_pages);	/* the core cleared the domain first */
	}
	vn->slots = NULL;
	vn->hdrs = vn->bounce = NULL;
	vn->free_tx = NULL;
	vn->rx = vn->tx = vn->ctrl = NULL;
	d->priv = NULL;
	if (vn->attached)
		return;	/* kept for the re-probe, with the upper layer's buffers */
	work_cancel(&vn->rx_work);
	work_cancel(&vn->tx_work);
	work_cancel(&vn->refill_work);
	work_cancel(&vn->kick_work);
	vnet_free_buffers(vn);
	vnet_forget(vn);
	vnet_destroy(vn, d->dead);
}

static const struct virtio_device_id net_ids[] = {
	{ VIRTIO_ID_NET, VIRTIO_VENDOR_ANY },
	{ 0, 0 },
};

static const struct virtio_driver virtio_net_driver = {
	.name = "virtio-net",
	.ids = net_ids,
	.features = VIRTIO_BIT(VIRTIO_NET_F_MAC) | VIRTIO_BIT(VIRTIO_NET_F_MTU) |
		    VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_NET_F_STATUS) |
		    VIRTIO_BIT(VIRTIO_NET_F_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) |
		    VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX) |
		    VIRTIO_BIT(VIRTIO_NET_F_GUEST_ANNOUNCE) | VIRTIO_BIT(VIRTIO_NET_F_NOTF_COAL) |
		    VIRTIO_BIT(VIRTIO_NET_F_VQ_NOTF_COAL) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) |
		    VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) |
		    VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6),
	.feature_names = vnet_net_feature_names,
	.features_fixup = vnet_net_features_fixup,
	.probe = vnet_net_probe,
	.remove = vnet_net_remove,
	.config_changed = vnet_config_changed,
};
VIRTIO_DRIVER(virtio_net_driver);
