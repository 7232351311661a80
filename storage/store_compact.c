/*
 * The store's compaction (storage/store.c has the rest of the store): the
 * tail segment's live records copied to the head, then the segment freed.
 */
#include "kernel/console.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/byteorder.h"
#include "lib/crc32c.h"
#include "lib/fmt.h"
#include "lib/metrics.h"
#include "lib/string.h"
#include "storage/store.h"
#include "storage/store_int.h"

/* ---- compaction ----
 *
 * The log is a ring of segments, tail .. head. When fewer than
 * ST_COMPACT_LOW segments are free, compaction reclaims the tail:
 *  1. scan: it reads the tail's batches (a window of at most ST_WIN bytes
 *     at a time) and looks at ST_COMPACT_STEP records per step, from the
 *     loop. A put the index still names is copied into the open batch
 *     (flag ST_REC_COPY, its own lsn), unless a write of its key is in the
 *     open batch or the one in flight: a copy must never land after a
 *     newer record of its key, so that key is left for a later pass (its
 *     write makes the record dead anyway). A write of the key still
 *     waiting for room comes after the copy, as it should. Deletes and
 *     dead puts are dropped: everything older than the tail is gone.
 *  2. wait: until every copy is durable and the segment's live bytes are
 *     0 (another pass over it while keys were left), and no read is in
 *     flight from it.
 *  3. a superblock copy (the older one, gen + 1) names the next segment's
 *     first batch as the log's start; FLUSH.
 *  4. only then the segment is free: the ring's next head may take it.
 * A crash before 4 leaves the segment in the log (recovery replays it and
 * the copies: the same lsn in the same place twice is harmless); after
 * it, recovery ignores the segment (its first batch is older than the
 * start). Compaction may use the ST_RESERVE segments users may not. */
void st_cp_free(struct store *s)
{
	struct st_compact *cp = s->cp;

	if (!cp)
		return;
	blk_buf_free(s->dev, cp->win, cp->win_size);
	blk_buf_free(s->dev, cp->sbbuf, ST_SB_SIZE);
	kfree(cp);
	s->cp = NULL;
}


/* The bytes of the log's segments that hold no live record (dead records,
 * batch headers, padding, unused segment tails): what compaction can win.
 * Below two segments' worth, a round over the ring would win nothing
 * and compaction does not start (it would only move live data around). */
static u64 st_dead(const struct store *s)
{
	u64 used = (u64)(s->nseg - s->nfree) * s->seg_size;

	return used > s->live_bytes ? used - s->live_bytes : 0;
}

void st_cp_maybe(struct store *s)
{
	struct st_compact *cp;

	if (s->cp || s->cp_broken || s->state != ST_READY || s->head == ST_NO_SEG || s->tail == s->head ||
	    s->nfree >= ST_COMPACT_LOW || st_dead(s) < 2ull * s->seg_size)
		return;
	cp = kzalloc(sizeof *cp);
	if (!cp)
		return;
	s->cp = cp;
	cp->seg = s->tail;
	cp->win_size = MIN(ST_WIN, s->seg_size);
	cp->win = blk_buf_alloc(s->dev, cp->win_size);
	cp->sbbuf = blk_buf_alloc(s->dev, ST_SB_SIZE);
	if (!cp->win || !cp->sbbuf) {
		st_cp_free(s);
		return;
	}
	/* A segment with nothing live needs no reading. */
	cp->phase = s->segs[cp->seg].live ? CP_SCAN : CP_WAIT;
	work_queue(&s->cwork);
}

static void st_cp_broken(struct store *s, const char *why)
{
	s->cp_broken = true;
	s->stats.compact_errors++;
	kprintf("store: compaction of segment %u stopped: %s (at %u); space is no longer reclaimed\n",
		s->cp->seg, why, s->cp->pos);
	st_cp_free(s);
	work_queue(&s->kick);	/* writers waiting for room fail now */
}

static void st_cp_read_done(struct blk_io *io, int err)
{
	struct store *s = io->priv;
	struct st_compact *cp = s->cp;

	if (!cp)
		return;
	cp->reading = false;
	if (s->state != ST_READY)
		return;
	if (err) {
		st_cp_broken(s, "a read failed");
		return;
	}
	cp->win_start = cp->pos;
	cp->win_len = io->len;
	st_cp_step(s);
}

static void st_cp_read(struct store *s)
{
	struct st_compact *cp = s->cp;
	u32 len = MIN(cp->win_size, s->segs[cp->seg].used - cp->pos);

	len = ALIGN_UP(len, s->unit);
	cp->reading = true;
	cp->io = (struct blk_io){ .op = BLK_READ, .sector = st_sector(s, cp->seg, cp->pos), .buf = cp->win,
				  .len = len, .done = st_cp_read_done, .priv = s };
	blk_submit(s->dev, &cp->io);
}

/* Whether a write of key is in the open batch or the one in flight. */
static bool st_in_batches(const struct store *s, const u8 *key, u32 klen)
{
	const struct st_op *lists[2] = { s->cur_ops, s->fly_ops };
	const u8 *bufs[2] = { s->buf[s->cur], s->buf[s->cur ^ 1] };

	for (unsigned i = 0; i < 2; i++)
		for (const struct st_op *op = lists[i]; op; op = op->next) {
			const u8 *rec = bufs[i] + op->off;

			if (rec[9] == klen && !memcmp(rec + ST_REC_HDR, key, klen))
				return true;
		}
	return false;
}

/* Copies the record r (live, at seg:off) into the open batch. */
static int st_cp_copy(struct store *s, struct st_ent *e, const struct st_rec *r)
{
	u32 space = st_rec_space(r->klen, r->vlen);
	struct st_op *op;

	if (!st_room(s, space, true))
		return -ENOSPC;
	op = kzalloc(sizeof *op);
	if (!op)
		return -ENOMEM;
	op->put = op->copy = true;
	op->space = space;
	st_rec_encode(s->buf[s->cur] + s->cur_off, ST_REC_PUT, ST_REC_COPY, r->lsn, r->key, r->klen, r->val, r->vlen,
		      s->seed);
	s->pending_bytes += space;	/* a copy is not one of its key's pending writes */
	s->cp_bytes += space;
	st_cur_append(s, op);
	s->cp->copies++;
	work_queue(&s->kick);
	return 0;
}

static void st_cp_sb_done(struct blk_io *io, int err);

/* Step 3: the superblock names the next segment's first batch. */
static void st_cp_superblock(struct store *s)
{
	struct st_compact *cp = s->cp;
	u32 next = (cp->seg + 1) % s->nseg;

	cp->phase = CP_SB;
	s->sb.gen++;
	s->sb.start = s->segs[next].first;
	st_super_encode(&s->sb, cp->sbbuf);
	cp->reading = true;
	cp->io = (struct blk_io){ .op = BLK_WRITE, .sector = (u64)s->sb_next * (ST_SB_SIZE / 512),
				  .buf = cp->sbbuf, .len = ST_SB_SIZE, .done = st_cp_sb_done, .priv = s };
	blk_submit(s->dev, &cp->io);
}

static void st_cp_sb_done(struct blk_io *io, int err)
{
	struct store *s = io->priv;
	struct st_compact *cp = s->cp;
	u32 seg;

	if (!cp || s->state != ST_READY)
		return;
	if (err) {
		if (io->op == BLK_WRITE)
			s->stats.write_errors++;
		else
			s->stats.flush_errors++;
		st_fail(s, err, io->op == BLK_WRITE ? "superblock write" : "superblock flush");
		return;
	}
	if (io->op == BLK_WRITE) {
		cp->io = (struct blk_io){ .op = BLK_FLUSH, .done = st_cp_sb_done, .priv = s };
		s->stats.flushes++;
		blk_submit(s->dev, &cp->io);
		return;
	}
	/* Step 4: durable; the segment is free. */
	seg = cp->seg;
	s->stats.sb_writes++;
	s->stats.compactions++;
	s->sb_next ^= 1;
	s->segs[seg] = (struct st_seg){ 0 };
	s->tail = (seg + 1) % s->nseg;
	s->nfree++;
	st_cp_free(s);
	work_queue(&s->kick);
	st_cp_maybe(s);
}

void st_cp_step(void *arg)
{
	struct store *s = arg;
	struct st_compact *cp = s->cp;
	struct st_seg *sg;

	if (!cp || cp->reading || s->state != ST_READY)
		return;
	sg = &s->segs[cp->seg];
	if (cp->phase == CP_WAIT) {
		if (cp->copies)
			return;	/* st_commit steps again */
		if (sg->live == 0) {
			if (sg->readers == 0)
				st_cp_superblock(s);
			return;	/* st_get_done steps again */
		}
		if (!cp->skipped) {
			st_cp_broken(s, "records the index names are not in it");
			return;
		}
		/* Another pass for the keys that were being written. */
		cp->phase = CP_SCAN;
		cp->pos = cp->rec = 0;
		cp->in_batch = false;
		cp->skipped = 0;
		cp->win_len = 0;
	}
	for (u32 n = 0; n < ST_COMPACT_STEP; n++) {
		const u8 *p;
		const char *why;
		struct st_rec r;
		struct st_ent *e;
		u32 avail;

		if (!cp->in_batch) {
			if (cp->pos + ST_BATCH_HDR > sg->used) {
				cp->phase = CP_WAIT;
				work_queue(&s->cwork);
				return;
			}
			if (cp->pos < cp->win_start || cp->pos + ST_BATCH_HDR > cp->win_start + cp->win_len) {
				st_cp_read(s);
				return;
			}
			avail = cp->win_start + cp->win_len - cp->pos;
			p = cp->win + (cp->pos - cp->win_start);
			if (st_batch_decode(p, avail, s->seed, cp->seg, s->unit, s->seg_size - cp->pos, &cp->b, &why)) {
				st_cp_broken(s, why);
				return;
			}
			if (cp->b.total > avail) {
				if (cp->pos != cp->win_start) {
					st_cp_read(s);
					return;
				}
				st_cp_broken(s, "a batch longer than the window");
				return;
			}
			if (st_batch_check(p + ST_BATCH_HDR, &cp->b, s->seed, &why)) {
				st_cp_broken(s, why);
				return;
			}
			cp->in_batch = true;
			cp->rec = 0;
		}
		if (cp->rec >= cp->b.bytes) {
			cp->pos += cp->b.total;
			cp->in_batch = false;
			continue;
		}
		p = cp->win + (cp->pos - cp->win_start) + ST_BATCH_HDR + cp->rec;
		st_rec_fields(p, &r);	/* st_batch_check passed */
		e = r.type == ST_REC_PUT ? st_index_find(&s->index, r.key, r.klen) : NULL;
		if (e && !st_ghost(e) && e->seg == cp->seg && e->off == cp->pos + ST_BATCH_HDR + cp->rec &&
		    e->lsn == r.lsn) {
			/* No pending write: none in a batch (the walk only when one is). */
			int err = e->pending && st_in_batches(s, r.key, r.klen) ? -EAGAIN : st_cp_copy(s, e, &r);

			if (err == -EAGAIN) {
				cp->skipped++;
			} else if (err) {
				/* No room in the open batch: after its commit. With no
				 * batch out and an empty one open, none will come. */
				if (!s->busy && !s->cur_nrec)
					st_cp_broken(s, "no room for the copies");
				return;
			}
		}
		cp->rec += ALIGN_UP(r.len, 8u);
	}
	work_queue(&s->cwork);
}

