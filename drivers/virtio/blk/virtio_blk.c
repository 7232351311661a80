/*
 * virtio-blk (device id 2, virtio 1.2 §5.2): one request queue on any
 * transport and ring the core drives (modern and legacy PCI, virtio-mmio;
 * split or packed, indirect descriptors, event index).
 *
 * Negotiated: SIZE_MAX, SEG_MAX, BLK_SIZE, TOPOLOGY, RO, FLUSH, CONFIG_WCE,
 * DISCARD, WRITE_ZEROES; GET_ID (a request type, not a bit) gives the
 * serial. Not driven: MQ (one queue is what a single-core loop can use),
 * GEOMETRY (legacy CHS), SECURE_ERASE, ZONED, LIFETIME.
 *
 * Every value the device writes is checked:
 * - config: capacity (below 2^48 sectors, whole logical blocks), blk_size
 *   (a power of two in 512..4096: anything else refuses the device, since
 *   a wrong block size corrupts data), size_max (at least 512, else the
 *   device is refused), seg_max (0 is taken as 1), the topology exponent
 *   (at most 3) and the discard/write-zeroes limits (a zero limit turns the
 *   feature off), writeback (0 or 1; anything else is taken as writeback,
 *   the safe reading), each logged once;
 * - completions: the ring's rules (virtq.c: ids, indices, the used length
 *   against what was posted writable), the token against the driver's own
 *   table of requests in flight, the used length of a modern device (the
 *   whole writable part: data and status; a legacy device's is ignored, as
 *   the spec's legacy note advises), and the status byte, which the driver
 *   sets to 0xff before posting: anything but OK, IOERR or UNSUPP (0xff: it
 *   was never written) is a violation.
 * A violation fails every request in flight with -EIO, logs once, and asks
 * the bus for a reset; never a panic.
 *
 * Bounded waits (no peer has them; anchors-wave3.md A1): a request not
 * completed within blk.timeout= milliseconds makes the driver ask for a
 * reset and a new probe (virtio_request_reset()); the requests in flight
 * come back from the ring at remove and fail with -EIO, those waiting for
 * a slot are sent to the device again once it is back. After
 * VBLK_RESETS_MAX resets in a row with no request completed in between the
 * device is given up: logged, its requests fail at once.
 *
 * Memory the device writes (status bytes, the serial, read buffers) is on
 * pages holding nothing else (vblk_buf_alloc(); virtio_blk.h).
 */
#include <arch.h>

#include "drivers/virtio/blk/virtio_blk.h"
#include "drivers/virtio/blk/virtio_blk_reg.h"
#include "drivers/virtio/virtio.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/fmt.h"
#include "lib/string.h"

#define VBLK_MAX 8		/* devices driven */
/* Requests on the ring at once, per device: each holds one slot (a header
 * and a discard segment on the device-readable page, a status byte on the
 * device-writable one). 64 x 32 B fits a page; the ring may be smaller. */
#define VBLK_SLOTS 64
#define VBLK_SLOT_RO 32		/* bytes per slot on the readable page */
/* Per request at most VBLK_SEGS data elements (plus header and status):
 * one indirect table of VIRTQ_INDIRECT_DEFAULT (16) entries. */
#define VBLK_SEGS 14
#define VBLK_IO_MAX (1u << 20)	/* bytes per READ/WRITE request, at most */
#define VBLK_ID_OFF 128		/* GET_ID's 20 bytes on the writable page */
/* Completions taken per pass of the poll, then it yields to the loop. */
#define VBLK_POLL_BUDGET 64
/* Resets asked for in a row with nothing completed in between, then the
 * device is given up: a device that stalls at once after every probe
 * costs at most 4 timeouts. */
#define VBLK_RESETS_MAX 4
/* While requests are in flight the queue is looked at again every
 * VBLK_RECHECK_NS even without an interrupt, and the device notified again
 * if nothing moved: QEMU 7.2 under TCG can miss an interrupt or a kick
 * (docs/architecture.md, the late re-check); at most 50 wakeups a second,
 * none while idle. */
#define VBLK_RECHECK_NS (20 * NSEC_PER_MSEC)
#define VBLK_STATUS_UNSET 0xff
#define VBLK_GET_ID 0x80	/* the driver's own request: the serial */

static u64 blk_timeout_ms = 30000;
CMDLINE_PARAM(timeout, .key = "blk.timeout", .type = CMDLINE_UINT, .dst = &blk_timeout_ms, .min = 100,
	      .max = 3600000, .def = "30000",
	      .help = "virtio-blk: milliseconds a request may take before the device is reset and probed again "
		      "(its requests fail with an I/O error)");

struct vblk_slot {
	struct vblk_req *req;	/* NULL: free */
	struct virtio_blk_req_hdr *hdr;	/* device-readable page */
	struct virtio_blk_discard_wz *seg;	/* device-readable page */
	volatile u8 *status;	/* device-writable page */
	u64 deadline;		/* time_ns() */
	u32 writable;		/* bytes posted device-writable (data + status) */
	struct vblk_slot *next_free;
};

struct vblk {
	struct virtio_dev *key;		/* the device this state belongs to */
	struct virtio_dev *vd;		/* NULL while absent (reset, failed probe) */
	struct virtio_vq *q;
	struct work poll_work, done_work;
	struct timer timer;		/* deadlines and the re-check */
	u8 *pages;			/* [0] readable: headers, segments; [1] writable: status, id */
	struct vblk_slot slot[VBLK_SLOTS];
	struct vblk_slot *free_slots;
	u32 nslots, inflight;
	struct vblk_req *park_head, *park_tail;	/* waiting for a slot or ring room */
	struct vblk_req *done_head, *done_tail;	/* completed, callbacks not yet run */
	u64 seen_completions;		/* at the last re-check */
	u32 resets_in_a_row;
	bool gave_up, violated, timed_out;
	bool legacy;			/* ignore used lengths */
	u32 seg_size;			/* bytes per data element (SIZE_MAX) */
	u32 segs;			/* data elements per request (SEG_MAX) */
	bool reset_pending;		/* asked the bus; remove and probe come next */
	struct vblk_req id_req;		/* GET_ID, once per device */
	bool id_known;			/* answered (a serial or none) */
	bool id_out;			/* id_req parked or on the ring */
	struct vblk_info info;
	struct vblk_stats stats;
	u64 completions;
};

static struct vblk *vblks[VBLK_MAX];

void *vblk_buf_alloc(size_t bytes)
{
	if (bytes == 0)
		return NULL;
	return dma_pages_alloc(ALIGN_UP(bytes, (size_t)PAGE_SIZE) / PAGE_SIZE);
}

void vblk_buf_free(void *p, size_t bytes)
{
	if (p)
		dma_pages_free(p, ALIGN_UP(bytes, (size_t)PAGE_SIZE) / PAGE_SIZE);
}

struct vblk *vblk_get(unsigned i)
{
	unsigned n = 0;

	for (unsigned k = 0; k < VBLK_MAX; k++)
		if (vblks[k] && n++ == i)
			return vblks[k];
	return NULL;
}

void vblk_get_info(const struct vblk *b, struct vblk_info *info)
{
	*info = b->info;
	info->present = b->vd != NULL && !b->gave_up;
}

void vblk_get_stats(const struct vblk *b, struct vblk_stats *st)
{
	struct vblk_req *r;

	*st = b->stats;
	st->inflight = b->inflight;
	st->parked = 0;
	for (r = b->park_head; r; r = r->next)
		st->parked++;
}

static const char *vblk_op_name(u8 op)
{
	static const char *const names[] = { "read", "write", "flush", "discard", "write-zeroes" };

	return op < ARRAY_SIZE(names) ? names[op] : "request";
}

/* ---- completions: always from the done work, never inside a call ---- */

static void vblk_complete(struct vblk *b, struct vblk_req *r, int err)
{
	r->err = err;
	r->next = NULL;
	if (b->done_tail)
		b->done_tail->next = r;
	else
		b->done_head = r;
	b->done_tail = r;
	if (err)
		b->stats.errors++;
	work_queue(&b->done_work);
}

static void vblk_deliver(void *arg)
{
	struct vblk *b = arg;
	struct vblk_req *r = b->done_head;

	b->done_head = b->done_tail = NULL;
	while (r) {
		struct vblk_req *next = r->next;

		r->next = NULL;
		r->done(r, r->err);	/* may submit more: they go to a fresh list */
		r = next;
	}
}

/* ---- submission ---- */

static void vblk_arm(struct vblk *b);
static void vblk_violation(struct vblk *b, const char *why);

static void vblk_park(struct vblk *b, struct vblk_req *r, bool front)
{
	if (front) {
		r->next = b->park_head;
		b->park_head = r;
		if (!b->park_tail)
			b->park_tail = r;
		return;
	}
	r->next = NULL;
	if (b->park_tail)
		b->park_tail->next = r;
	else
		b->park_head = r;
	b->park_tail = r;
}

static u32 vblk_type(u8 op)
{
	switch (op) {
	case VBLK_READ: return VIRTIO_BLK_T_IN;
	case VBLK_WRITE: return VIRTIO_BLK_T_OUT;
	case VBLK_FLUSH: return VIRTIO_BLK_T_FLUSH;
	case VBLK_DISCARD: return VIRTIO_BLK_T_DISCARD;
	case VBLK_GET_ID: return VIRTIO_BLK_T_GET_ID;
	default: return VIRTIO_BLK_T_WRITE_ZEROES;
	}
}

/* Puts r on the ring in slot s. 0, -ENOSPC (ring full now: the slot is
 * given back and r parked by the caller) or -EIO (queue broken). */
static int vblk_post(struct vblk *b, struct vblk_slot *s, struct vblk_req *r)
{
	struct virtq_sg out[2 + VBLK_SEGS], in[1 + VBLK_SEGS];
	unsigned nout = 0, nin = 0;
	int err;

	s->hdr->type = vblk_type(r->op);
	s->hdr->reserved = 0;
	s->hdr->sector = r->op == VBLK_FLUSH ? 0 : r->sector;
	out[nout++] = (struct virtq_sg){ s->hdr, sizeof *s->hdr };
	if (r->op == VBLK_READ || r->op == VBLK_WRITE) {
		const u8 *p = r->buf;
		u32 left = r->len;
		struct virtq_sg *sg = r->op == VBLK_READ ? in : out;
		unsigned *n = r->op == VBLK_READ ? &nin : &nout;

		while (left) {
			u32 take = MIN(left, b->seg_size);

			sg[(*n)++] = (struct virtq_sg){ p, take };
			p += take;
			left -= take;
		}
	} else if (r->op == VBLK_DISCARD || r->op == VBLK_WRITE_ZEROES) {
		s->seg->sector = r->sector;
		s->seg->num_sectors = r->len / VIRTIO_BLK_SECTOR;
		s->seg->flags = 0;
		out[nout++] = (struct virtq_sg){ s->seg, sizeof *s->seg };
	} else if (r->op == VBLK_GET_ID) {
		in[nin++] = (struct virtq_sg){ r->buf, VIRTIO_BLK_ID_BYTES };
	}
	*s->status = VBLK_STATUS_UNSET;
	in[nin++] = (struct virtq_sg){ (const void *)s->status, 1 };
	s->writable = (r->op == VBLK_READ ? r->len : r->op == VBLK_GET_ID ? VIRTIO_BLK_ID_BYTES : 0) + 1;
	s->req = r;
	s->deadline = time_ns() + blk_timeout_ms * NSEC_PER_MSEC;
	err = virtq_add(&b->q->vq, out, nout, in, nin, s);
	if (err) {
		s->req = NULL;
		return err;
	}
	b->inflight++;
	return 0;
}

/* Sends what waits, in order, while slots and ring room last. */
static void vblk_pump(struct vblk *b)
{
	bool added = false;

	if (!b->vd || !b->q || b->violated || b->reset_pending)
		return;
	while (b->park_head && b->free_slots) {
		struct vblk_req *r = b->park_head;
		struct vblk_slot *s = b->free_slots;
		int err;

		b->park_head = r->next;
		if (!b->park_head)
			b->park_tail = NULL;
		b->free_slots = s->next_free;
		err = vblk_post(b, s, r);
		if (err) {
			s->next_free = b->free_slots;
			b->free_slots = s;
			vblk_park(b, r, true);
			if (err != -ENOSPC)
				vblk_violation(b, "request queue broken");
			break;
		}
		added = true;
	}
	if (added) {
		virtq_kick(&b->q->vq);
		vblk_arm(b);
	}
}

int vblk_submit(struct vblk *b, struct vblk_req *r)
{
	const struct vblk_info *in = &b->info;
	u32 bs = in->block_size;

	switch (r->op) {
	case VBLK_READ:
	case VBLK_WRITE:
		if (!r->buf || !r->len || r->len % bs || r->len > in->max_io)
			return -EINVAL;
		break;
	case VBLK_FLUSH:
		break;
	case VBLK_DISCARD:
	case VBLK_WRITE_ZEROES:
		if (!(r->op == VBLK_DISCARD ? in->discard : in->write_zeroes))
			return -ENOTSUP;
		if (!r->len || r->len % bs || r->len > (r->op == VBLK_DISCARD ? in->max_discard : in->max_write_zeroes))
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (r->op != VBLK_FLUSH &&
	    ((r->sector * VIRTIO_BLK_SECTOR) % bs || r->sector > in->sectors ||
	     r->len / VIRTIO_BLK_SECTOR > in->sectors - r->sector))
		return -EINVAL;
	if (in->ro && r->op != VBLK_READ && r->op != VBLK_FLUSH)
		return -EROFS;
	switch (r->op) {
	case VBLK_READ:
		b->stats.reads++;
		b->stats.read_bytes += r->len;
		break;
	case VBLK_WRITE:
		b->stats.writes++;
		b->stats.write_bytes += r->len;
		break;
	case VBLK_FLUSH:
		b->stats.flushes++;
		break;
	case VBLK_DISCARD:
		b->stats.discards++;
		break;
	default:
		b->stats.write_zeroes++;
		break;
	}
	if (b->gave_up || !b->vd) {
		vblk_complete(b, r, -EIO);
		return 0;
	}
	if (r->op == VBLK_FLUSH && !in->writeback) {	/* write-through: nothing to flush */
		vblk_complete(b, r, 0);
		return 0;
	}
	vblk_park(b, r, false);
	vblk_pump(b);
	return 0;
}

/* ---- the device broke a rule, or never answered: reset it ---- */

static void vblk_reset(struct vblk *b, const char *why)
{
	char line[160];

	if (b->reset_pending || !b->vd)
		return;
	b->reset_pending = true;
	b->stats.resets++;
	if (++b->resets_in_a_row > VBLK_RESETS_MAX)
		b->gave_up = true;	/* the probe after this reset refuses the device */
	ksnprintf(line, sizeof line, "blk: %s; %u more in flight fail with an I/O error%s", why, b->inflight,
		  b->gave_up ? "; device given up after 4 resets in a row" : "");
	virtio_request_reset(b->vd, line);
}

static void vblk_violation(struct vblk *b, const char *why)
{
	if (b->violated)
		return;
	b->violated = true;
	b->stats.violations++;
	if (b->vd)
		virtio_set_broken(b->vd, why);
	vblk_reset(b, why);
}

/* ---- the queue ---- */

static bool vblk_slot_ok(const struct vblk *b, const void *tok)
{
	const struct vblk_slot *s = tok;

	return s >= b->slot && s < b->slot + b->nslots && ((const u8 *)s - (const u8 *)b->slot) % sizeof *s == 0 &&
	       s->req;
}

static void vblk_poll(void *arg)
{
	struct vblk *b = arg;
	unsigned n = 0;
	void *tok;
	u32 len;

	if (!b->q || b->violated)
		return;
	while (n < VBLK_POLL_BUDGET && (tok = virtq_get(&b->q->vq, &len))) {
		struct vblk_slot *s = tok;
		struct vblk_req *r;
		u8 st;
		int err;

		n++;
		if (!vblk_slot_ok(b, tok)) {
			vblk_violation(b, "completion of a request not in flight");
			return;
		}
		r = s->req;
		st = *s->status;
		s->req = NULL;
		s->next_free = b->free_slots;
		b->free_slots = s;
		b->inflight--;
		if (!b->legacy && len != s->writable) {
			char why[96];

			ksnprintf(why, sizeof why, "%s completed with used length %u, posted %u", vblk_op_name(r->op),
				  len, s->writable);
			vblk_complete(b, r, -EIO);
			vblk_violation(b, why);
			return;
		}
		if (st > VIRTIO_BLK_S_UNSUPP) {
			char why[96];

			ksnprintf(why, sizeof why, "%s completed with status %#x%s", vblk_op_name(r->op), st,
				  st == VBLK_STATUS_UNSET ? " (never written)" : "");
			vblk_complete(b, r, -EIO);
			vblk_violation(b, why);
			return;
		}
		b->completions++;
		b->resets_in_a_row = 0;
		err = st == VIRTIO_BLK_S_OK ? 0 : st == VIRTIO_BLK_S_UNSUPP ? -ENOTSUP : -EIO;
		vblk_complete(b, r, err);
	}
	if (virtq_is_broken(&b->q->vq)) {
		vblk_violation(b, "request queue broken");
		return;
	}
	vblk_pump(b);
	if (n == VBLK_POLL_BUDGET) {	/* more may be waiting: after other work */
		work_queue(&b->poll_work);
		return;
	}
	if (!virtq_enable_cb(&b->q->vq)) {
		virtq_disable_cb(&b->q->vq);
		work_queue(&b->poll_work);
	}
	vblk_arm(b);
}

static void vblk_irq(struct virtio_vq *q)
{
	struct vblk *b = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&b->poll_work);
}

/* While requests are in flight: the re-check and the deadlines. */
static void vblk_arm(struct vblk *b)
{
	if (!b->inflight) {
		timer_stop(&b->timer);
		return;
	}
	if (!b->timer.armed)
		timer_start(&b->timer, time_ns() + VBLK_RECHECK_NS);
}

static void vblk_timer(struct timer *t, void *arg)
{
	struct vblk *b = arg;
	u64 now = time_ns();
	unsigned i;

	if (!b->q || b->violated || b->reset_pending || !b->inflight)
		return;
	for (i = 0; i < b->nslots; i++) {
		struct vblk_slot *s = &b->slot[i];
		char why[128];

		if (!s->req || s->deadline > now)
			continue;
		b->stats.timeouts++;
		ksnprintf(why, sizeof why, "%s of %u bytes at sector %lu not completed within %lu ms",
			  s->req->op == VBLK_GET_ID ? "GET_ID" : vblk_op_name(s->req->op), s->req->len,
			  (unsigned long)s->req->sector, (unsigned long)blk_timeout_ms);
		vblk_reset(b, why);
		return;
	}
	if (virtq_more_used(&b->q->vq))
		work_queue(&b->poll_work);
	else if (b->completions == b->seen_completions)
		virtq_notify(&b->q->vq);	/* nothing moved: the kick may have been missed */
	b->seen_completions = b->completions;
	timer_start(&b->timer, now + VBLK_RECHECK_NS);
}

/* ---- GET_ID ---- */

static void vblk_id_done(struct vblk_req *r, int err)
{
	struct vblk *b = r->priv;
	const u8 *id = r->buf;
	unsigned i;

	b->id_out = false;
	b->id_known = true;
	b->info.id_pending = false;
	if (err) {
		kprintf("virtio%u: blk: no serial (GET_ID %s)\n", b->info.index,
			err == -ENOTSUP ? "not supported" : "failed");
		return;
	}
	for (i = 0; i < VIRTIO_BLK_ID_BYTES && id[i]; i++)
		b->info.serial[i] = id[i] >= 0x20 && id[i] < 0x7f ? (char)id[i] : '?';
	b->info.serial[i] = '\0';
	kprintf("virtio%u: blk: serial \"%s\"\n", b->info.index, b->info.serial);
}

/* ---- probe and remove ---- */

static const struct virtio_feature_name blk_feature_names[] = {
	{ VIRTIO_BLK_F_SIZE_MAX, "SIZE_MAX" },
	{ VIRTIO_BLK_F_SEG_MAX, "SEG_MAX" },
	{ VIRTIO_BLK_F_GEOMETRY, "GEOMETRY" },
	{ VIRTIO_BLK_F_RO, "RO" },
	{ VIRTIO_BLK_F_BLK_SIZE, "BLK_SIZE" },
	{ VIRTIO_BLK_F_FLUSH, "FLUSH" },
	{ VIRTIO_BLK_F_TOPOLOGY, "TOPOLOGY" },
	{ VIRTIO_BLK_F_CONFIG_WCE, "CONFIG_WCE" },
	{ VIRTIO_BLK_F_MQ, "MQ" },
	{ VIRTIO_BLK_F_DISCARD, "DISCARD" },
	{ VIRTIO_BLK_F_WRITE_ZEROES, "WRITE_ZEROES" },
	{ 0, NULL },
};

#define VBLK_CFG(f) ((u32)offsetof(struct virtio_blk_config, f))

static int vblk_cfg32(struct virtio_dev *d, u32 off, u32 *v, const char *what)
{
	int err = virtio_cfg_read32(d, off, v);

	if (err)
		kprintf("virtio%u: blk: %s unreadable (%d)\n", d->index, what, err);
	return err;
}

/* The limits of DISCARD or WRITE_ZEROES (one segment per request): bytes
 * per request, or 0 (feature off, logged) for a zero or unreadable limit. */
__cold static u32 vblk_range_limit(struct virtio_dev *d, u32 sectors_off, u32 seg_off, u32 bs, const char *what)
{
	u32 sectors, segs;

	if (vblk_cfg32(d, sectors_off, &sectors, what) || vblk_cfg32(d, seg_off, &segs, what))
		return 0;
	if (sectors == 0 || segs == 0) {
		kprintf("virtio%u: blk: %s limits %u sectors x %u segments; %s off\n", d->index, what, sectors, segs,
			what);
		return 0;
	}
	sectors = MIN(sectors, (u32)(VBLK_IO_MAX / VIRTIO_BLK_SECTOR) * 64);	/* 64 MiB a request */
	return ALIGN_DOWN(sectors * VIRTIO_BLK_SECTOR, bs);
}

/* Reads and checks the config (above). 0, or -EIO: the device is refused. */
__cold static int vblk_read_config(struct vblk *b, struct virtio_dev *d)
{
	struct vblk_info *in = &b->info;
	u64 cap;
	u32 v, segs = VBLK_SEGS;

	in->index = d->index;
	in->block_size = VIRTIO_BLK_SECTOR;
	if (virtio_has(d, VIRTIO_BLK_F_BLK_SIZE)) {
		if (vblk_cfg32(d, VBLK_CFG(blk_size), &v, "blk_size"))
			return -EIO;
		if (!IS_POW2(v) || v < 512 || v > 4096) {
			kprintf("virtio%u: blk: blk_size %u is not a power of two in 512..4096; device refused\n",
				d->index, v);
			return -EIO;
		}
		in->block_size = v;
	}
	in->phys_block_size = in->block_size;
	if (virtio_has(d, VIRTIO_BLK_F_TOPOLOGY)) {
		u8 exp;

		if (virtio_cfg_read(d, VBLK_CFG(physical_block_exp), &exp, 1) == 0) {
			if (exp <= 3)
				in->phys_block_size = in->block_size << exp;
			else
				kprintf("virtio%u: blk: physical_block_exp %u over 3; ignored\n", d->index, exp);
		}
	}
	if (virtio_cfg_read(d, VBLK_CFG(capacity), &cap, 8)) {
		kprintf("virtio%u: blk: capacity unreadable\n", d->index);
		return -EIO;
	}
	if (cap >> 48) {
		kprintf("virtio%u: blk: capacity %lu sectors is past 2^48; device refused\n", d->index,
			(unsigned long)cap);
		return -EIO;
	}
	in->sectors = ALIGN_DOWN(cap, (u64)(in->block_size / VIRTIO_BLK_SECTOR));
	if (in->sectors != cap)
		kprintf("virtio%u: blk: capacity %lu sectors is not whole blocks; using %lu\n", d->index,
			(unsigned long)cap, (unsigned long)in->sectors);
	b->seg_size = VBLK_IO_MAX;
	if (virtio_has(d, VIRTIO_BLK_F_SIZE_MAX)) {
		if (vblk_cfg32(d, VBLK_CFG(size_max), &v, "size_max"))
			return -EIO;
		if (v < 512) {
			kprintf("virtio%u: blk: size_max %u below 512; device refused\n", d->index, v);
			return -EIO;
		}
		b->seg_size = MIN(v, VBLK_IO_MAX);
	}
	if (virtio_has(d, VIRTIO_BLK_F_SEG_MAX)) {
		if (vblk_cfg32(d, VBLK_CFG(seg_max), &v, "seg_max"))
			return -EIO;
		if (v == 0) {
			kprintf("virtio%u: blk: seg_max 0; taken as 1\n", d->index);
			v = 1;
		}
		segs = MIN(segs, v);
	}
	b->segs = segs;
	b->seg_size = ALIGN_DOWN(b->seg_size, VIRTIO_BLK_SECTOR);
	in->ro = virtio_has(d, VIRTIO_BLK_F_RO);
	/* No FLUSH: write-through by the spec. FLUSH without CONFIG_WCE: a
	 * writeback cache is assumed (as Linux does). With CONFIG_WCE the
	 * device says; a value other than 0 or 1 is read as writeback. */
	in->writeback = virtio_has(d, VIRTIO_BLK_F_FLUSH);
	if (in->writeback && virtio_has(d, VIRTIO_BLK_F_CONFIG_WCE)) {
		u8 wce;

		if (virtio_cfg_read(d, VBLK_CFG(writeback), &wce, 1) == 0) {
			if (wce > 1)
				kprintf("virtio%u: blk: writeback %u is neither 0 nor 1; taken as writeback\n",
					d->index, wce);
			in->writeback = wce != 0;
		}
	}
	in->discard = in->write_zeroes = false;
	in->max_discard = in->max_write_zeroes = 0;
	if (!in->ro && virtio_has(d, VIRTIO_BLK_F_DISCARD)) {
		in->max_discard = vblk_range_limit(d, VBLK_CFG(max_discard_sectors), VBLK_CFG(max_discard_seg),
						   in->block_size, "discard");
		in->discard = in->max_discard != 0;
	}
	if (!in->ro && virtio_has(d, VIRTIO_BLK_F_WRITE_ZEROES)) {
		in->max_write_zeroes = vblk_range_limit(d, VBLK_CFG(max_write_zeroes_sectors),
							VBLK_CFG(max_write_zeroes_seg), in->block_size,
							"write-zeroes");
		in->write_zeroes = in->max_write_zeroes != 0;
	}
	return 0;
}

__cold static struct vblk *vblk_for(struct virtio_dev *d, bool *again)
{
	unsigned i, slot = VBLK_MAX;
	struct vblk *b;

	for (i = 0; i < VBLK_MAX; i++) {
		if (vblks[i] && vblks[i]->key == d) {
			*again = true;
			return vblks[i];
		}
		if (!vblks[i] && slot == VBLK_MAX)
			slot = i;
	}
	*again = false;
	if (slot == VBLK_MAX) {
		kprintf("virtio%u: blk: more than %u devices; not driven\n", d->index, VBLK_MAX);
		return NULL;
	}
	b = kzalloc(sizeof *b);
	if (!b)
		return NULL;
	b->key = d;
	work_init(&b->poll_work, vblk_poll, b);
	work_init(&b->done_work, vblk_deliver, b);
	timer_init(&b->timer, vblk_timer, b);
	b->info.id_pending = true;
	vblks[slot] = b;
	return b;
}

__cold static void vblk_forget(struct vblk *b)
{
	for (unsigned i = 0; i < VBLK_MAX; i++)
		if (vblks[i] == b)
			vblks[i] = NULL;
}

/* Requests that wait fail: the device is not coming back (for now). */
static void vblk_fail_parked(struct vblk *b)
{
	while (b->park_head) {
		struct vblk_req *r = b->park_head;

		b->park_head = r->next;
		if (r == &b->id_req) {
			b->id_out = false;
			b->info.id_pending = false;	/* no serial: not coming back */
			continue;
		}
		vblk_complete(b, r, -EIO);
	}
	b->park_tail = NULL;
}

__cold static int vblk_probe(struct virtio_dev *d)
{
	bool again;
	struct vblk *b = vblk_for(d, &again);
	unsigned i;
	u32 segs;
	int err;

	if (!b)
		return -ENOMEM;
	if (b->gave_up) {
		kprintf("virtio%u: blk: given up after %u resets in a row with nothing completed\n", d->index,
			VBLK_RESETS_MAX);
		err = -EIO;
		goto fail;
	}
	err = vblk_read_config(b, d);
	if (err)
		goto fail;
	if (!b->pages)
		b->pages = vblk_buf_alloc(2 * PAGE_SIZE);
	b->q = b->pages ? virtio_setup_vq_transient(d, 0, 0, vblk_irq, b) : NULL;
	if (!b->q) {
		err = b->pages ? -EIO : -ENOMEM;
		goto fail;
	}
	/* A direct chain (no indirect table) must fit the ring. */
	segs = MIN(b->segs, b->q->num > 2 ? (u32)b->q->num - 2u : 0u);
	b->info.max_io = ALIGN_DOWN(MIN((u64)segs * b->seg_size, (u64)VBLK_IO_MAX), (u64)b->info.block_size);
	if (b->info.max_io < b->info.block_size) {
		kprintf("virtio%u: blk: %u segments of %u bytes cannot carry a block of %u; device refused\n",
			d->index, segs, b->seg_size, b->info.block_size);
		err = -EIO;
		goto fail;
	}
	/* The slots' pages live as long as the device: mapped once. */
	virtq_keep_mapped(&b->q->vq, b->pages, 2 * PAGE_SIZE);
	b->nslots = MIN((u32)VBLK_SLOTS, (u32)b->q->num);
	b->free_slots = NULL;
	for (i = b->nslots; i-- > 0;) {
		struct vblk_slot *s = &b->slot[i];

		s->req = NULL;
		s->hdr = (void *)(b->pages + i * VBLK_SLOT_RO);
		s->seg = (void *)(b->pages + i * VBLK_SLOT_RO + sizeof(struct virtio_blk_req_hdr));
		s->status = b->pages + PAGE_SIZE + i;
		s->next_free = b->free_slots;
		b->free_slots = s;
	}
	b->inflight = 0;
	b->legacy = !d->modern;
	b->violated = false;
	b->reset_pending = false;
	b->vd = d;
	d->priv = b;
	virtio_device_ready(d);
	kprintf("virtio%u: blk: %lu sectors (%lu MiB), block %u (physical %u), %s%s cache, "
		"max io %u B in %u B segments%s%s, %s ring %u%s\n",
		d->index, (unsigned long)b->info.sectors, (unsigned long)(b->info.sectors >> 11),
		b->info.block_size, b->info.phys_block_size, b->info.ro ? "read-only, " : "",
		b->info.writeback ? "writeback" : "write-through", b->info.max_io, b->seg_size,
		b->info.discard ? ", discard" : "", b->info.write_zeroes ? ", write-zeroes" : "",
		b->q->vq.is_packed ? "packed" : "split", b->q->num, b->q->vq.event_idx ? " event idx" : "");
	if (!b->id_known && !b->id_out) {
		b->id_req = (struct vblk_req){ .op = VBLK_GET_ID, .buf = b->pages + PAGE_SIZE + VBLK_ID_OFF,
					       .len = VIRTIO_BLK_ID_BYTES, .done = vblk_id_done, .priv = b };
		b->id_out = true;
		b->info.id_pending = true;
		vblk_park(b, &b->id_req, true);	/* first: the serial chooses the disk */
	}
	vblk_pump(b);
	return 0;

fail:
	virtio_quiesce(d);
	timer_stop(&b->timer);
	work_cancel(&b->poll_work);
	b->q = NULL;
	b->vd = NULL;
	d->priv = NULL;
	if (again) {
		/* The upper layer may hold b: it stays, without a device. */
		b->info.id_pending = false;
		vblk_fail_parked(b);
		return err;
	}
	work_cancel(&b->done_work);
	vblk_buf_free(b->pages, 2 * PAGE_SIZE);	/* nothing was posted: never mapped */
	vblk_forget(b);
	kfree(b);
	return err;
}

__cold static void vblk_remove(struct virtio_dev *d)
{
	struct vblk *b = d->priv;
	unsigned kept = 0;
	void *tok;

	if (!b)
		return;
	timer_stop(&b->timer);
	work_cancel(&b->poll_work);
	/* The device is reset: what it held comes back. A dead device (its
	 * reset never completed) may still write read buffers: those requests
	 * are never completed, their buffers stay the device's. */
	while ((tok = virtq_detach_unused(&b->q->vq))) {
		struct vblk_slot *s = tok;
		struct vblk_req *r;

		if (!vblk_slot_ok(b, tok))
			continue;
		r = s->req;
		s->req = NULL;
		if (r == &b->id_req) {
			b->id_out = false;	/* asked again after the probe */
			continue;
		}
		if (d->dead && r->op == VBLK_READ) {
			kept++;
			continue;
		}
		vblk_complete(b, r, -EIO);
	}
	if (kept)
		kprintf("virtio%u: blk: %u reads left with the dead device, never completed\n", d->index, kept);
	b->inflight = 0;
	b->q = NULL;
	b->vd = NULL;
	d->priv = NULL;
	if (d->dead) {
		virtio_keep_forever(b->pages, 2);	/* status bytes, the serial */
		b->pages = NULL;
		b->gave_up = true;
	}
	if (b->gave_up) {
		vblk_fail_parked(b);
		b->info.id_pending = false;
	}
}

static const struct virtio_device_id blk_ids[] = {
	{ VIRTIO_ID_BLOCK, VIRTIO_VENDOR_ANY },
	{ 0, 0 },
};

static const struct virtio_driver virtio_blk_driver = {
	.name = "virtio-blk",
	.ids = blk_ids,
	.features = VIRTIO_BIT(VIRTIO_BLK_F_SIZE_MAX) | VIRTIO_BIT(VIRTIO_BLK_F_SEG_MAX) |
		    VIRTIO_BIT(VIRTIO_BLK_F_RO) | VIRTIO_BIT(VIRTIO_BLK_F_BLK_SIZE) | VIRTIO_BIT(VIRTIO_BLK_F_FLUSH) |
		    VIRTIO_BIT(VIRTIO_BLK_F_TOPOLOGY) | VIRTIO_BIT(VIRTIO_BLK_F_CONFIG_WCE) |
		    VIRTIO_BIT(VIRTIO_BLK_F_DISCARD) | VIRTIO_BIT(VIRTIO_BLK_F_WRITE_ZEROES),
	.feature_names = blk_feature_names,
	.probe = vblk_probe,
	.remove = vblk_remove,
};
VIRTIO_DRIVER(virtio_blk_driver);
