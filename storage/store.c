/*
 * The store (store.h): admission, the commit pipeline (group commit),
 * reads, format and recovery.
 *
 * Why a record can be trusted where it lies: batches reach the disk one at
 * a time, the next written only after the previous one's FLUSH completed,
 * so the log on disk is always a prefix of what was written plus at most
 * one torn batch. Records sit in the log in the order their operations
 * were made (lsn order), so replaying the log in order rebuilds the index.
 * Segments form a ring (tail .. head); a segment compaction reclaimed
 * keeps its old batches until it is written again, and those have a lower
 * seq than anything after the end of the log: a valid batch past the end
 * with a higher seq means a batch before it was lost after its FLUSH
 * (damage, not a tear). The superblock names the seq of the log's first
 * batch, so a reclaimed segment is never taken for part of the log.
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

struct st_op {
	struct st_op *next;
	st_done_fn cb;
	void *arg;
	u8 *rec;		/* waiting: the encoded record (kmalloc), else NULL */
	u32 off;		/* in a batch: the record's offset in it */
	u32 space;
	bool put;
	bool copy;		/* compaction's copy of a live record */
};

static u64 st_sector(const struct store *s, u32 seg, u32 off)
{
	return (s->data_off + (u64)seg * s->seg_size + off) / 512;
}

static u32 st_batch_cap(const struct store *s)
{
	return MIN(ST_BATCH_MAX, s->max_record + ST_BATCH_HDR);
}

u32 st_value_max(const struct store *s)
{
	return s->max_record - ST_REC_HDR - ST_KEY_MAX;
}

static bool st_ghost(const struct st_ent *e)
{
	return e->seg == ST_NO_SEG;
}

/* The index entry e names its record (or stops naming it): the segments'
 * live bytes follow. */
static void st_live(struct store *s, const struct st_ent *e, bool add)
{
	u32 sp = st_rec_space(e->klen, e->vlen);

	if (st_ghost(e))
		return;
	if (add) {
		s->segs[e->seg].live += sp;
		s->live_bytes += sp;
	} else {
		s->segs[e->seg].live -= sp;
		s->live_bytes -= sp;
	}
}

u64 st_capacity(const struct store *s)
{
	return s->nseg > ST_RESERVE + 1 ? (u64)(s->nseg - ST_RESERVE - 1) * s->seg_size / 4 * 3 : 0;
}

enum { CP_SCAN, CP_WAIT, CP_SB };

struct st_compact {
	struct blk_io io;
	u32 seg;
	u32 pos;		/* the batch being looked at, in seg */
	u32 rec;		/* the next record's offset in its payload */
	bool in_batch, reading;
	u8 phase;
	struct st_batch b;
	u8 *win;
	u32 win_size, win_start, win_len;
	u32 copies;		/* copies not yet durable */
	u32 skipped;		/* records left this pass (their key was in a batch) */
	u8 *sbbuf;		/* ST_SB_SIZE */
};

static void st_cp_maybe(struct store *s);
static void st_cp_step(void *arg);
static void st_cp_free(struct store *s);

/* ---- admission ---- */

static void st_cycle(struct store *s);

/* Whether a record of space bytes may join the open batch: it must fit the
 * batch, and the batch the head segment or the next free one. The last
 * ST_RESERVE free segments are compaction's (copy): a user's record takes
 * the head only while that many are free, a new segment only while more
 * are. */
static bool st_room(const struct store *s, u32 space, bool copy)
{
	u32 end = ALIGN_UP(s->cur_off + space, s->unit);
	u32 keep = copy ? 0 : ST_RESERVE;

	if (s->cur_off + space > st_batch_cap(s))
		return false;
	if (s->head != ST_NO_SEG && s->segs[s->head].used + end <= s->seg_size)
		return s->nfree >= keep;
	return s->nfree > keep;
}

/* Whether the store takes a record of space bytes more: the live records,
 * those admitted and this one stay within st_capacity(). Whether it fits
 * now or only once compaction reclaimed a segment is st_room's. */
static bool st_disk_has(const struct store *s, u32 space)
{
	return s->live_bytes + s->pending_bytes - s->cp_bytes + space <= st_capacity(s);
}

static void st_cur_append(struct store *s, struct st_op *op)
{
	op->off = s->cur_off;
	op->next = NULL;
	*s->cur_tail = op;
	s->cur_tail = &op->next;
	s->cur_off += op->space;
	s->cur_nrec++;
}

/* Moves waiting records into the open batch while they fit. */
static void st_fill(struct store *s)
{
	while (s->over_head && st_room(s, s->over_head->space, false)) {
		struct st_op *op = s->over_head;

		s->over_head = op->next;
		if (!s->over_head)
			s->over_tail = &s->over_head;
		memcpy(s->buf[s->cur] + s->cur_off, op->rec, op->space);
		kfree(op->rec);
		op->rec = NULL;
		s->over_bytes -= op->space;
		st_cur_append(s, op);
	}
}

static void st_fail_ops(struct store *s, struct st_op *op, const u8 *b, int err);

static void st_kick_fn(void *arg)
{
	struct store *s = arg;

	if (s->busy || s->state != ST_READY)
		return;
	st_fill(s);
	if (s->cur_nrec) {
		st_cycle(s);
		return;
	}
	if (s->over_head) {
		/* Not even an empty batch takes the next record: it waits for
		 * compaction to reclaim a segment, or, where compaction cannot,
		 * the disk is full after all (admission's count leaves out the
		 * padding of batches and the segment tails they skip): they fail
		 * now rather than wait for ever. */
		struct st_op *over = s->over_head;

		st_cp_maybe(s);
		if (s->cp)
			return;

		s->over_head = NULL;
		s->over_tail = &s->over_head;
		s->over_bytes = 0;
		s->stats.refused_full++;
		st_fail_ops(s, over, NULL, -ENOSPC);
	}
}

static int st_admit(struct store *s, u8 type, const u8 *key, u32 klen, const void *val, u32 vlen, st_done_fn cb,
		    void *arg)
{
	u32 space, charge;
	struct st_ent *e;
	struct st_op *op;
	bool fresh;

	if (s->state == ST_OPENING || s->state == ST_CLOSED)
		return -EAGAIN;
	if (s->state != ST_READY)
		return -EROFS;
	if (!key || klen == 0 || klen > ST_KEY_MAX || vlen > st_value_max(s) || (vlen && !val))
		return -EINVAL;
	space = st_rec_space(klen, vlen);
	e = st_index_find(&s->index, key, klen);
	if (type == ST_REC_DEL && (!e || (st_ghost(e) && !e->pending)))
		return -ENOENT;
	/* A put over a durable record (or a delete of one) with nothing of
	 * its key pending frees that record's bytes at its commit: it is
	 * charged the difference, so a full store still takes overwrites and
	 * deletes. */
	charge = space;
	if (e && !st_ghost(e) && !e->pending)
		charge = type == ST_REC_DEL ? 0 : space - MIN(space, st_rec_space(e->klen, e->vlen));
	if (!st_disk_has(s, charge)) {
		s->stats.refused_full++;
		return -ENOSPC;
	}
	if (!e && s->index.bytes + st_ent_charge(klen) > s->cfg.index_max) {
		s->stats.refused_index++;
		return -ENOMEM;
	}
	fresh = !s->over_head && st_room(s, space, false);
	if ((!fresh && s->over_bytes + space > s->cfg.pending_max) || (e && e->pending == 0xffff)) {
		s->stats.refused_busy++;
		return -EBUSY;
	}
	op = kzalloc(sizeof *op);
	if (!op)
		return -ENOMEM;
	if (!fresh && !(op->rec = kmalloc(space))) {
		kfree(op);
		return -ENOMEM;
	}
	if (!e) {
		e = kmalloc(ST_ENT_HDR + klen);
		if (!e) {
			kfree(op->rec);
			kfree(op);
			return -ENOMEM;
		}
		memset(e, 0, ST_ENT_HDR);
		e->seg = ST_NO_SEG;	/* a ghost: no durable record yet */
		e->klen = (u8)klen;
		memcpy(e->key, key, klen);
		st_index_insert(&s->index, e);
	}
	e->pending++;
	op->put = type == ST_REC_PUT;
	op->cb = cb;
	op->arg = arg;
	op->space = space;
	st_rec_encode(fresh ? s->buf[s->cur] + s->cur_off : op->rec, type, 0, s->next_lsn++, key, klen, val, vlen,
		      s->seed);
	s->pending_bytes += space;
	if (fresh) {
		st_cur_append(s, op);
	} else {
		op->next = NULL;
		*s->over_tail = op;
		s->over_tail = &op->next;
		s->over_bytes += space;
	}
	work_queue(&s->kick);
	return 0;
}

int st_put(struct store *s, const u8 *key, u32 klen, const void *val, u32 vlen, st_done_fn cb, void *arg)
{
	return st_admit(s, ST_REC_PUT, key, klen, val, vlen, cb, arg);
}

int st_del(struct store *s, const u8 *key, u32 klen, st_done_fn cb, void *arg)
{
	return st_admit(s, ST_REC_DEL, key, klen, NULL, 0, cb, arg);
}

const struct st_ent *st_lookup(const struct store *s, const u8 *key, u32 klen)
{
	const struct st_ent *e = st_index_find(&s->index, key, klen);

	return e && !st_ghost(e) ? e : NULL;
}

bool st_idle(const struct store *s)
{
	return !s->busy && !s->cur_nrec && !s->over_head;
}

/* ---- the commit pipeline ---- */

/* A pending write of the key of rec is over (committed or failed). */
static void st_unpend(struct store *s, const u8 *rec)
{
	struct st_ent *e = st_index_find(&s->index, rec + ST_REC_HDR, rec[9]);

	if (!e)
		return;
	if (e->pending)
		e->pending--;
	if (e->pending == 0 && st_ghost(e)) {
		st_index_remove(&s->index, e->key, e->klen);
		kfree(e);
	}
}

static void st_fail_ops(struct store *s, struct st_op *op, const u8 *b, int err)
{
	while (op) {
		struct st_op *next = op->next;

		if (op->copy)
			s->cp_bytes -= op->space;
		else
			st_unpend(s, op->rec ? op->rec : b + op->off);
		s->pending_bytes -= op->space;
		if (op->cb)
			op->cb(err, op->arg);
		kfree(op->rec);
		kfree(op);
		op = next;
	}
}

/* A write or a flush failed: read-only from now on; nothing waiting is
 * written. The batch in flight may or may not be on the disk (-EIO); what
 * never went out fails with -EROFS. */
static void st_fail(struct store *s, int err, const char *what)
{
	struct st_op *fly = s->fly_ops, *cur = s->cur_ops, *over = s->over_head;
	u8 c = s->cur;

	s->state = ST_READONLY;
	ksnprintf(s->why, sizeof s->why, "%s failed (%d) for batch %lu at segment %u offset %u; read-only", what,
		  err, (unsigned long)s->fly_seq, s->fly_seg, s->fly_off);
	kprintf("store: %s\n", s->why);
	s->fly_ops = s->cur_ops = s->over_head = NULL;
	s->cur_tail = &s->cur_ops;
	s->over_tail = &s->over_head;
	s->cur_off = ST_BATCH_HDR;
	s->cur_nrec = 0;
	s->over_bytes = 0;
	s->busy = false;
	st_fail_ops(s, fly, s->buf[c ^ 1], -EIO);
	st_fail_ops(s, cur, s->buf[c], -EROFS);
	st_fail_ops(s, over, NULL, -EROFS);
}

/* The batch in flight is durable: the index follows, callbacks run. */
static void st_commit(struct store *s)
{
	const u8 *b = s->buf[s->cur ^ 1];
	struct st_op *op = s->fly_ops;
	u64 dt = time_ns() - s->fly_t0;

	s->fly_ops = NULL;
	s->busy = false;
	s->durable_seq = s->fly_seq;
	s->stats.commits++;
	s->stats.log_bytes += s->fly_len;
	s->stats.batch_records_max = MAX(s->stats.batch_records_max, (u64)s->fly_nrec);
	s->stats.commit_ns_max = MAX(s->stats.commit_ns_max, dt);
	while (op) {
		struct st_op *next = op->next;
		const u8 *rec = b + op->off;
		struct st_ent *e = st_index_find(&s->index, rec + ST_REC_HDR, rec[9]);

		s->pending_bytes -= op->space;
		if (op->copy) {
			s->cp_bytes -= op->space;
			/* Nothing of its key was in this batch or before it when the
			 * copy was made, and what came after follows it: the entry
			 * still names the original. */
			if (e && !st_ghost(e) && e->lsn == get_le64(rec + 16)) {
				st_live(s, e, false);
				e->seg = s->fly_seg;
				e->off = s->fly_off + op->off;
				st_live(s, e, true);
				s->stats.compact_bytes += op->space;
				s->stats.compact_records++;
			}
			if (s->cp)
				s->cp->copies--;
		} else if (op->put) {
			s->stats.puts++;
			s->stats.user_bytes += op->space;
			if (e) {
				st_live(s, e, false);
				e->lsn = get_le64(rec + 16);
				e->seg = s->fly_seg;
				e->off = s->fly_off + op->off;
				e->vlen = get_le32(rec + 12);
				st_live(s, e, true);
			}
		} else {
			s->stats.dels++;
			s->stats.user_bytes += op->space;
			if (e) {
				st_live(s, e, false);
				e->seg = ST_NO_SEG;	/* a ghost until its other writes are in */
			}
		}
		if (!op->copy)
			st_unpend(s, rec);
		if (op->cb)
			op->cb(0, op->arg);
		kfree(op);
		op = next;
	}
	if (s->cur_nrec || s->over_head)
		work_queue(&s->kick);
	if (s->cp)
		work_queue(&s->cwork);
	else
		st_cp_maybe(s);
}

static void st_flush_done(struct blk_io *io, int err)
{
	struct store *s = io->priv;

	if (s->state != ST_READY || !s->busy)
		return;
	if (err) {
		s->stats.flush_errors++;
		st_fail(s, err, "flush");
	}
	else
		st_commit(s);
}

static void st_write_done(struct blk_io *io, int err)
{
	struct store *s = io->priv;

	if (s->state != ST_READY || !s->busy)
		return;
	if (err) {
		s->stats.write_errors++;
		st_fail(s, err, "write");
		return;
	}
	/* The FLUSH goes out only after the write completed: it covers it. */
	s->f_io = (struct blk_io){ .op = BLK_FLUSH, .done = st_flush_done, .priv = s };
	s->stats.flushes++;
	blk_submit(s->dev, &s->f_io);
}

/* Starts a cycle: the open batch goes out, then one FLUSH. */
static void st_cycle(struct store *s)
{
	u8 *b = s->buf[s->cur];
	u32 need = ALIGN_UP(s->cur_off, s->unit);
	struct st_batch h = { .seq = s->next_seq, .durable = s->durable_seq, .nrec = s->cur_nrec,
			      .bytes = s->cur_off - ST_BATCH_HDR, .prev_seg = ST_NO_SEG };

	if (s->head == ST_NO_SEG || s->segs[s->head].used + need > s->seg_size) {
		u32 prev = s->head;

		if (prev != ST_NO_SEG) {
			h.prev_seg = prev;
			h.prev_first = s->segs[prev].first;
		}
		/* st_room made sure of a free one: the ring's next. */
		s->head = prev == ST_NO_SEG ? s->tail : (prev + 1) % s->nseg;
		s->nfree--;
		s->segs[s->head].used = 0;
	}
	if (s->segs[s->head].used == 0) {
		h.flags = ST_BATCH_FIRST;
		s->segs[s->head].first = h.seq;
	}
	h.seg = s->head;
	h.pcrc = crc32c(s->seed, b + ST_BATCH_HDR, h.bytes);
	st_batch_encode(&h, s->seed, b);
	memset(b + s->cur_off, 0, need - s->cur_off);
	s->fly_seq = h.seq;
	s->fly_seg = s->head;
	s->fly_off = s->segs[s->head].used;
	s->fly_len = need;
	s->fly_nrec = s->cur_nrec;
	s->fly_t0 = time_ns();
	s->segs[s->head].used += need;
	s->segs[s->head].last = h.seq;
	s->next_seq++;
	s->fly_ops = s->cur_ops;
	s->cur_ops = NULL;
	s->cur_tail = &s->cur_ops;
	s->cur ^= 1;
	s->cur_off = ST_BATCH_HDR;
	s->cur_nrec = 0;
	s->busy = true;
	s->w_io = (struct blk_io){ .op = BLK_WRITE, .sector = st_sector(s, s->fly_seg, s->fly_off), .buf = b,
				   .len = need, .done = st_write_done, .priv = s };
	blk_submit(s->dev, &s->w_io);
	/* The next batch fills while this one is out. */
	st_fill(s);
}

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
static void st_cp_free(struct store *s)
{
	struct st_compact *cp = s->cp;

	if (!cp)
		return;
	blk_buf_free(s->dev, cp->win, cp->win_size);
	blk_buf_free(s->dev, cp->sbbuf, ST_SB_SIZE);
	kfree(cp);
	s->cp = NULL;
}

static void st_cp_step(void *arg);

/* The bytes of the log's segments that hold no live record (dead records,
 * batch headers, padding, unused segment tails): what compaction can win.
 * Below two segments' worth, a round over the ring would win nothing
 * and compaction does not start (it would only move live data around). */
static u64 st_dead(const struct store *s)
{
	u64 used = (u64)(s->nseg - s->nfree) * s->seg_size;

	return used > s->live_bytes ? used - s->live_bytes : 0;
}

static void st_cp_maybe(struct store *s)
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

static void st_cp_step(void *arg)
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
		st_rec_decode(p, cp->b.bytes - cp->rec, s->seed, &r, &why);	/* st_batch_check passed */
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

/* ---- reads ---- */

struct st_get {
	struct store *s;
	struct blk_io io;
	u8 *buf;
	u32 len, skip, klen, seg;
	u64 lsn;
	u8 key[ST_KEY_MAX];
	void (*cb)(int err, const void *val, u32 vlen, void *arg);
	void *arg;
};

static void st_get_done(struct blk_io *io, int err)
{
	struct st_get *g = io->priv;
	struct store *s = g->s;
	struct st_rec r;
	const char *why = "read failed";

	if (!err && st_rec_decode(g->buf + g->skip, g->len - g->skip, s->seed, &r, &why) == 0)
		why = r.type != ST_REC_PUT || r.klen != g->klen || memcmp(r.key, g->key, g->klen) || r.lsn != g->lsn
			      ? "not the record the index names"
			      : NULL;
	s->gets--;
	s->segs[g->seg].readers--;
	if (s->cp)
		work_queue(&s->cwork);
	if (why) {
		s->stats.get_errors++;
		kprintf("store: reading a record at sector %lu: %s\n", (unsigned long)io->sector, why);
		g->cb(err ? -EIO : -EBADMSG, NULL, 0, g->arg);
	} else {
		g->cb(0, r.val, r.vlen, g->arg);
	}
	blk_buf_free(s->dev, g->buf, g->len);
	kfree(g);
}

int st_get(struct store *s, const u8 *key, u32 klen, void (*cb)(int err, const void *val, u32 vlen, void *arg),
	   void *arg)
{
	const struct st_ent *e;
	struct st_get *g;
	u64 at;

	if (s->state != ST_READY && s->state != ST_READONLY)
		return -EAGAIN;
	if (s->gets >= ST_GETS_MAX)
		return -EBUSY;
	if (!key || klen == 0 || klen > ST_KEY_MAX)
		return -EINVAL;
	e = st_lookup(s, key, klen);
	if (!e)
		return -ENOENT;
	g = kzalloc(sizeof *g);
	if (!g)
		return -ENOMEM;
	g->s = s;
	g->cb = cb;
	g->arg = arg;
	s->gets++;
	s->stats.gets++;
	at = s->data_off + (u64)e->seg * s->seg_size + e->off;
	g->skip = (u32)(at % s->unit);
	g->len = ALIGN_UP(g->skip + st_rec_space(e->klen, e->vlen), s->unit);
	g->klen = e->klen;
	g->lsn = e->lsn;
	g->seg = e->seg;
	memcpy(g->key, e->key, e->klen);
	g->buf = blk_buf_alloc(s->dev, g->len);
	if (!g->buf) {
		s->gets--;
		kfree(g);
		return -ENOMEM;
	}
	s->segs[g->seg].readers++;
	g->io = (struct blk_io){ .op = BLK_READ, .sector = (at - g->skip) / 512, .buf = g->buf, .len = g->len,
				 .done = st_get_done, .priv = g };
	blk_submit(s->dev, &g->io);
	return 0;
}

/* ---- open: superblocks, format, recovery ---- */

enum { RC_SB, RC_FORMAT, RC_FORMAT_FLUSH, RC_PROBE, RC_SCAN, RC_TAIL, RC_ZERO, RC_ZERO_FLUSH, RC_FORMAT_A,
       RC_FORMAT_A_FLUSH };

struct st_rec_state {
	struct blk_io io;
	u8 phase;
	u8 *sbbuf;		/* both copies (8 KiB) */
	u8 *win;		/* ST_WIN bytes */
	u64 *firsts;		/* per segment: the seq of its first batch, 0: none */
	u32 *live;		/* the live segments in log order */
	u32 nlive, k, i;
	u32 pos, win_start, win_len;	/* the segment being read: k-th live */
	u64 expect;		/* seq of the next batch */
	u64 max_lsn;
	u32 tail_pos;		/* the end of the log in the newest segment */
	struct st_batch torn;
	bool torn_hdr;
	u8 *zero;
};

static void st_rc_io(struct store *s);

static void st_open_end(struct store *s, int err)
{
	struct st_rec_state *rc = s->rec;

	if (rc) {
		blk_buf_free(s->dev, rc->sbbuf, 2 * ST_SB_SIZE);
		blk_buf_free(s->dev, rc->win, ST_WIN);
		blk_buf_free(s->dev, rc->zero, rc->torn.total);
		kfree(rc->firsts);
		kfree(rc->live);
		kfree(rc);
		s->rec = NULL;
	}
	if (err) {
		s->state = ST_FAILED;
		if (!s->why[0])
			ksnprintf(s->why, sizeof s->why, "open failed (%d)", err);
	} else if (s->report.damaged || s->cfg.readonly) {
		s->state = ST_READONLY;
		if (s->report.damaged)
			ksnprintf(s->why, sizeof s->why, "log damaged: %s; read-only", s->report.damage);
		else
			strlcpy(s->why, "opened read-only", sizeof s->why);
	} else {
		s->state = ST_READY;
	}
	s->report.keys = s->index.count;
	s->open_done(s, err, s->open_arg);
	if (s->state == ST_READY)
		st_cp_maybe(s);
}

static void st_rc_read(struct store *s, u64 sector, void *buf, u32 len)
{
	struct st_rec_state *rc = s->rec;

	rc->io = (struct blk_io){ .op = BLK_READ, .sector = sector, .buf = buf, .len = len,
				  .done = (void (*)(struct blk_io *, int))0, .priv = s };
	st_rc_io(s);
}

static void st_rc_done(struct blk_io *io, int err);

static void st_rc_io(struct store *s)
{
	struct st_rec_state *rc = s->rec;

	rc->io.done = st_rc_done;
	rc->io.priv = s;
	blk_submit(s->dev, &rc->io);
}

static void st_set_geometry(struct store *s)
{
	s->seed = st_seed(s->sb.secret);
	s->unit = s->sb.unit;
	s->seg_size = s->sb.seg_size;
	s->nseg = s->sb.nseg;
	s->max_record = s->sb.max_record;
	s->data_off = s->sb.data_off;
}

/* After the superblocks: the segments' first batches, one by one. */
static int st_probe_start(struct store *s)
{
	struct st_rec_state *rc = s->rec;

	if (s->unit < s->dev->block_size) {
		ksnprintf(s->why, sizeof s->why, "the store's unit (%u) is smaller than the disk's block (%u)", s->unit,
			  s->dev->block_size);
		return -EINVAL;
	}
	s->segs = kzalloc(sizeof *s->segs * s->nseg);
	rc->firsts = kzalloc(sizeof *rc->firsts * s->nseg);
	rc->live = kzalloc(sizeof *rc->live * s->nseg);
	rc->win = blk_buf_alloc(s->dev, ST_WIN);
	if (!s->segs || !rc->firsts || !rc->live || !rc->win)
		return -ENOMEM;
	rc->phase = RC_PROBE;
	rc->i = 0;
	st_rc_read(s, st_sector(s, 0, 0), rc->win, s->unit);
	return 0;
}

static void st_format(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	struct blk_dev *d = s->dev;
	struct st_super *sb = &s->sb;
	u64 bytes = d->sectors * 512;

	memset(sb, 0, sizeof *sb);
	sb->version = ST_VERSION;
	sb->gen = 1;
	s->cfg.random(sb->id, ST_ID_LEN);
	s->cfg.random(sb->secret, ST_ID_LEN);
	sb->created = s->cfg.now_unix;
	sb->sectors = d->sectors;
	sb->unit = MAX(d->block_size, 512u);
	sb->seg_size = s->cfg.seg_size ? s->cfg.seg_size : (1u << 20);
	sb->data_off = ALIGN_UP((u64)ST_SB_COPIES * ST_SB_SIZE, sb->unit);
	sb->nseg = bytes > sb->data_off ? (u32)MIN((bytes - sb->data_off) / sb->seg_size, (u64)ST_NSEG_MAX) : 0;
	sb->max_record = MIN(sb->seg_size / 2, ST_BATCH_MAX) - ST_BATCH_HDR;
	if (s->cfg.label)
		strlcpy(sb->label, s->cfg.label, ST_LABEL_LEN);
	st_super_encode(sb, rc->sbbuf);
	st_super_encode(sb, rc->sbbuf + ST_SB_SIZE);
	{
		const char *why;
		struct st_super check;

		if (st_super_decode(rc->sbbuf, d->sectors, &check, &why)) {
			ksnprintf(s->why, sizeof s->why, "cannot format this disk: %s", why);
			st_open_end(s, -EINVAL);
			return;
		}
	}
	st_set_geometry(s);
	s->report.formatted = true;
	/* Copy B, FLUSH, then copy A, FLUSH: a crash leaves B torn over a
	 * blank A (st_format_cut: blank again), or a whole B. */
	rc->phase = RC_FORMAT;
	rc->io = (struct blk_io){ .op = BLK_WRITE, .sector = ST_SB_SIZE / 512, .buf = rc->sbbuf + ST_SB_SIZE,
				  .len = ST_SB_SIZE };
	st_rc_io(s);
}

/* Whether the superblock area is what a format cut short leaves: copy A
 * blank, and copy B blank but for some of the sectors of a superblock
 * (magic and fields in bytes 0..135, the checksum in 4092..4095; a
 * superblock has nothing else). No other disk looks like that. */
static bool st_format_cut(const u8 *area)
{
	const u8 *b = area + ST_SB_SIZE;

	return st_all_zero(area, ST_SB_SIZE) && st_all_zero(b + 136, ST_SB_SIZE - 4 - 136) &&
	       (st_all_zero(b, 136) || !memcmp(b, "VIREO-ST", 8));
}

static void st_superblocks(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	struct st_super a, b;
	const char *wa, *wb;
	bool ok_a = st_super_decode(rc->sbbuf, s->dev->sectors, &a, &wa) == 0;
	bool ok_b = st_super_decode(rc->sbbuf + ST_SB_SIZE, s->dev->sectors, &b, &wb) == 0;
	int err;

	if (!ok_a && !ok_b) {
		if (st_format_cut(rc->sbbuf)) {
			if (!st_all_zero(rc->sbbuf, 2 * ST_SB_SIZE))
				strlcpy(s->report.sb_note, "a format was cut short", sizeof s->report.sb_note);
			if (s->cfg.format && !s->cfg.readonly && s->cfg.random) {
				st_format(s);
				return;
			}
			strlcpy(s->why, "no store on this disk (blank)", sizeof s->why);
			st_open_end(s, -ENOENT);
			return;
		}
		ksnprintf(s->why, sizeof s->why, "no valid superblock (copy A: %s, copy B: %s); not formatted", wa, wb);
		st_open_end(s, -EBADMSG);
		return;
	}
	/* The copies are rewritten in turn: their gens differ by one. */
	if (ok_a && ok_b && (a.gen + 1 < b.gen || b.gen + 1 < a.gen || memcmp(a.id, b.id, ST_ID_LEN)))
		ksnprintf(s->report.sb_note, sizeof s->report.sb_note, "the copies differ (gen %lu, %lu)",
			  (unsigned long)a.gen, (unsigned long)b.gen);
	else if (!ok_a || !ok_b)
		ksnprintf(s->report.sb_note, sizeof s->report.sb_note, "superblock copy %s is bad (%s)",
			  ok_a ? "B" : "A", ok_a ? wb : wa);
	s->sb = ok_a && (!ok_b || a.gen >= b.gen) ? a : b;
	s->sb_next = ok_a && (!ok_b || a.gen >= b.gen) ? 1 : 0;	/* the other copy */
	st_set_geometry(s);
	err = st_probe_start(s);
	if (err)
		st_open_end(s, err);
}

/* Shell sort of the live segments by the seq of their first batch. */
static void st_sort_live(struct st_rec_state *rc)
{
	for (u32 gap = rc->nlive / 2; gap; gap /= 2)
		for (u32 i = gap; i < rc->nlive; i++)
			for (u32 j = i; j >= gap && rc->firsts[rc->live[j - gap]] > rc->firsts[rc->live[j]]; j -= gap) {
				u32 t = rc->live[j];

				rc->live[j] = rc->live[j - gap];
				rc->live[j - gap] = t;
			}
}

static void st_damage(struct store *s, const char *fmt, u32 seg, u32 pos, const char *why)
{
	s->report.damaged = true;
	ksnprintf(s->report.damage, sizeof s->report.damage, fmt, seg, pos, why);
}

/* Replays one valid batch into the index. 0, or -ENOMEM (the index bound). */
static int st_replay(struct store *s, u32 seg, u32 pos, const struct st_batch *b, const u8 *payload)
{
	struct st_rec_state *rc = s->rec;
	u32 off = 0;

	while (off < b->bytes) {
		struct st_rec r;
		const char *why;
		struct st_ent *e;

		st_rec_decode(payload + off, b->bytes - off, s->seed, &r, &why);	/* st_batch_check passed */
		e = st_index_find(&s->index, r.key, r.klen);
		if (r.type == ST_REC_DEL) {
			if (e) {
				st_live(s, e, false);
				st_index_remove(&s->index, r.key, r.klen);
				kfree(e);
			}
		} else {
			if (!e) {
				if (s->index.bytes + st_ent_charge(r.klen) > s->cfg.index_max)
					return -ENOMEM;
				e = kzalloc(ST_ENT_HDR + r.klen);
				if (!e)
					return -ENOMEM;
				e->klen = r.klen;
				e->seg = ST_NO_SEG;
				memcpy(e->key, r.key, r.klen);
				st_index_insert(&s->index, e);
			}
			st_live(s, e, false);
			e->lsn = r.lsn;
			e->seg = seg;
			e->off = pos + ST_BATCH_HDR + off;
			e->vlen = r.vlen;
			st_live(s, e, true);
		}
		rc->max_lsn = MAX(rc->max_lsn, r.lsn);
		s->report.records++;
		off += ALIGN_UP(r.len, 8u);
	}
	s->report.batches++;
	s->report.log_bytes += b->total;
	return 0;
}

static void st_scan_read(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	u32 seg = rc->live[rc->k];

	rc->win_start = rc->pos;
	rc->win_len = MIN(ST_WIN, s->seg_size - rc->pos);
	st_rc_read(s, st_sector(s, seg, rc->pos), rc->win, rc->win_len);
}

static void st_recovered(struct store *s);
static void st_tail_step(struct store *s);

/* The k-th live segment ended at rc->pos (why: the reason, NULL at its end). */
static void st_seg_end(struct store *s, const char *why, const struct st_batch *hdr)
{
	struct st_rec_state *rc = s->rec;
	u32 seg = rc->live[rc->k];

	s->segs[seg].first = rc->firsts[seg];
	s->segs[seg].used = rc->pos;
	s->segs[seg].last = rc->expect - 1;
	s->report.segments++;
	if (rc->k + 1 < rc->nlive) {
		u32 next = rc->live[rc->k + 1];

		if (rc->firsts[next] != rc->expect) {
			st_damage(s, "segment %u ends at %u (%s) before the log does", seg, rc->pos,
				  why ? why : "its end");
			st_recovered(s);
			return;
		}
		rc->k++;
		rc->pos = 0;
		rc->win_start = rc->win_len = 0;
		st_scan_read(s);
		return;
	}
	/* The newest segment: a tear, or a clean end; then nothing valid may follow. */
	rc->tail_pos = rc->pos;
	if (hdr && hdr->seq == rc->expect) {
		rc->torn = *hdr;
		rc->torn_hdr = true;
		s->report.torn = true;
		s->report.torn_seq = hdr->seq;
		s->report.torn_records = hdr->nrec;
		s->report.torn_bytes = hdr->bytes;
	}
	rc->phase = RC_TAIL;
	rc->pos += s->unit;
	rc->win_start = rc->win_len = 0;
	st_tail_step(s);
}

static void st_scan_step(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	u32 seg = rc->live[rc->k];

	for (;;) {
		u32 room = s->seg_size - rc->pos, avail;
		const u8 *p;
		const char *why;
		struct st_batch b;
		int err;

		if (room < ST_BATCH_HDR) {
			st_seg_end(s, NULL, NULL);
			return;
		}
		if (rc->pos < rc->win_start || rc->pos + ST_BATCH_HDR > rc->win_start + rc->win_len) {
			st_scan_read(s);
			return;
		}
		avail = rc->win_start + rc->win_len - rc->pos;
		p = rc->win + (rc->pos - rc->win_start);
		if (st_batch_decode(p, avail, s->seed, seg, s->unit, room, &b, &why)) {
			st_seg_end(s, why, NULL);
			return;
		}
		if (b.seq != rc->expect) {
			st_seg_end(s, b.seq < rc->expect ? "an older batch" : "a sequence gap", NULL);
			return;
		}
		if (b.total > avail) {
			if (rc->pos != rc->win_start) {
				st_scan_read(s);	/* from here: ST_WIN holds any batch */
				return;
			}
			st_seg_end(s, "length past what was read", &b);
			return;
		}
		if (st_batch_check(p + ST_BATCH_HDR, &b, s->seed, &why)) {
			st_seg_end(s, why, &b);
			return;
		}
		err = st_replay(s, seg, rc->pos, &b, p + ST_BATCH_HDR);
		if (err) {
			ksnprintf(s->why, sizeof s->why, "the index bound (%lu bytes) is below the keys on the disk",
				  (unsigned long)s->cfg.index_max);
			st_open_end(s, err);
			return;
		}
		rc->pos += b.total;
		rc->expect = b.seq + 1;
	}
}

/* After the end of the log: no valid batch of this log may lie further in
 * the newest segment (one would prove a lost durable batch). */
static void st_tail_step(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	u32 seg = rc->live[rc->k];

	while (rc->pos + ST_BATCH_HDR <= s->seg_size) {
		const u8 *p;
		struct st_batch b;
		const char *why;

		if (rc->pos < rc->win_start || rc->pos + ST_BATCH_HDR > rc->win_start + rc->win_len) {
			st_scan_read(s);
			return;
		}
		p = rc->win + (rc->pos - rc->win_start);
		if (st_batch_decode(p, rc->win_start + rc->win_len - rc->pos, s->seed, seg, s->unit,
				    s->seg_size - rc->pos, &b, &why) == 0 && b.seq >= rc->expect) {
			char w[48];

			ksnprintf(w, sizeof w, "batch %lu lies past it", (unsigned long)b.seq);
			st_damage(s, "the log ends in segment %u at %u, but %s", seg, rc->tail_pos, w);
			s->report.torn = false;
			rc->torn_hdr = false;
			break;
		}
		rc->pos += s->unit;
	}
	st_recovered(s);
}

/* Replay done: the store's state follows; a torn batch's blocks are
 * zeroed (and flushed) before anything new is written there. */
static void st_recovered(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	u32 last = rc->nlive ? rc->live[rc->k] : ST_NO_SEG;

	s->head = last;
	s->tail = rc->nlive ? rc->live[0] : 0;
	s->nfree = last == ST_NO_SEG ? s->nseg : s->nseg - ((last + s->nseg - s->tail) % s->nseg + 1);
	s->next_seq = rc->nlive ? rc->expect : 1;
	s->durable_seq = s->next_seq - 1;
	s->next_lsn = rc->max_lsn + 1;
	if (last != ST_NO_SEG && !s->report.damaged)
		s->segs[last].used = rc->tail_pos;
	if (rc->torn_hdr && !s->report.damaged && !s->cfg.readonly) {
		rc->zero = blk_buf_alloc(s->dev, rc->torn.total);
		if (!rc->zero) {
			st_open_end(s, -ENOMEM);
			return;
		}
		rc->phase = RC_ZERO;
		rc->io = (struct blk_io){ .op = BLK_WRITE, .sector = st_sector(s, last, rc->tail_pos), .buf = rc->zero,
					  .len = rc->torn.total };
		st_rc_io(s);
		return;
	}
	st_open_end(s, 0);
}

static void st_rc_done(struct blk_io *io, int err)
{
	struct store *s = io->priv;
	struct st_rec_state *rc = s->rec;

	if (err) {
		ksnprintf(s->why, sizeof s->why, "I/O error (%d) at sector %lu while opening", err,
			  (unsigned long)io->sector);
		st_open_end(s, -EIO);
		return;
	}
	switch (rc->phase) {
	case RC_SB:
		st_superblocks(s);
		return;
	case RC_FORMAT:
	case RC_ZERO:
		rc->phase = rc->phase == RC_FORMAT ? RC_FORMAT_FLUSH : RC_ZERO_FLUSH;
		rc->io = (struct blk_io){ .op = BLK_FLUSH };
		st_rc_io(s);
		return;
	case RC_FORMAT_FLUSH:
		rc->phase = RC_FORMAT_A;
		rc->io = (struct blk_io){ .op = BLK_WRITE, .sector = 0, .buf = rc->sbbuf, .len = ST_SB_SIZE };
		st_rc_io(s);
		return;
	case RC_FORMAT_A:
		rc->phase = RC_FORMAT_A_FLUSH;
		rc->io = (struct blk_io){ .op = BLK_FLUSH };
		st_rc_io(s);
		return;
	case RC_FORMAT_A_FLUSH:
		err = st_probe_start(s);
		if (err)
			st_open_end(s, err);
		return;
	case RC_ZERO_FLUSH:
		st_open_end(s, 0);
		return;
	case RC_PROBE: {
		struct st_batch b;
		const char *why;

		/* A segment whose first batch is older than the log's start was
		 * reclaimed: it is free. */
		if (st_batch_decode(rc->win, s->unit, s->seed, rc->i, s->unit, s->seg_size, &b, &why) == 0 &&
		    (b.flags & ST_BATCH_FIRST) && b.seq >= s->sb.start) {
			rc->firsts[rc->i] = b.seq;
			rc->live[rc->nlive++] = rc->i;
		}
		if (++rc->i < s->nseg) {
			st_rc_read(s, st_sector(s, rc->i, 0), rc->win, s->unit);
			return;
		}
		if (rc->nlive)
			st_sort_live(rc);
		if (s->sb.start && (!rc->nlive || rc->firsts[rc->live[0]] != s->sb.start)) {
			s->report.damaged = true;
			ksnprintf(s->report.damage, sizeof s->report.damage,
				  "the log's first batch (%lu) is missing", (unsigned long)s->sb.start);
			rc->nlive = 0;
			st_recovered(s);
			return;
		}
		if (!rc->nlive) {
			st_recovered(s);
			return;
		}
		rc->phase = RC_SCAN;
		rc->k = 0;
		rc->pos = 0;
		rc->expect = rc->firsts[rc->live[0]];
		st_scan_read(s);
		return;
	}
	case RC_SCAN:
		st_scan_step(s);
		return;
	case RC_TAIL:
		st_tail_step(s);
		return;
	}
}

int st_open(struct store *s, struct blk_dev *d, const struct st_cfg *cfg,
	    void (*done)(struct store *s, int err, void *arg), void *arg)
{
	struct st_rec_state *rc;

	memset(s, 0, sizeof *s);
	if (!d || d->sectors < 64)
		return -EINVAL;
	s->dev = d;
	s->cfg = *cfg;
	s->cfg.label = NULL;
	s->state = ST_OPENING;
	s->head = ST_NO_SEG;
	s->open_done = done;
	s->open_arg = arg;
	s->cur_off = ST_BATCH_HDR;
	s->cur_tail = &s->cur_ops;
	s->over_tail = &s->over_head;
	work_init(&s->kick, st_kick_fn, s);
	work_init(&s->cwork, st_cp_step, s);
	rc = kzalloc(sizeof *rc);
	s->buf[0] = blk_buf_alloc(d, ST_BATCH_MAX);
	s->buf[1] = blk_buf_alloc(d, ST_BATCH_MAX);
	if (rc)
		rc->sbbuf = blk_buf_alloc(d, 2 * ST_SB_SIZE);
	s->rec = rc;
	if (!rc || !rc->sbbuf || !s->buf[0] || !s->buf[1]) {
		st_close(s);
		return -ENOMEM;
	}
	s->cfg.label = cfg->label;	/* used at format only, during the open */
	rc->phase = RC_SB;
	st_rc_read(s, 0, rc->sbbuf, 2 * ST_SB_SIZE);
	return 0;
}

static void st_free_ent(struct st_ent *e, void *arg)
{
	kfree(e);
}

void st_close(struct store *s)
{
	struct st_rec_state *rc = s->rec;

	work_cancel(&s->kick);
	work_cancel(&s->cwork);
	st_cp_free(s);
	if (rc) {
		blk_buf_free(s->dev, rc->sbbuf, 2 * ST_SB_SIZE);
		blk_buf_free(s->dev, rc->win, ST_WIN);
		blk_buf_free(s->dev, rc->zero, rc->torn.total);
		kfree(rc->firsts);
		kfree(rc->live);
		kfree(rc);
		s->rec = NULL;
	}
	while (s->over_head) {
		struct st_op *op = s->over_head;

		s->over_head = op->next;
		kfree(op->rec);
		kfree(op);
	}
	for (struct st_op *l[2] = { s->cur_ops, s->fly_ops }, **p = l; p < l + 2; p++)
		while (*p) {
			struct st_op *op = *p;

			*p = op->next;
			kfree(op);
		}
	s->cur_ops = s->fly_ops = NULL;
	st_index_clear(&s->index, st_free_ent, NULL);
	if (s->dev) {
		blk_buf_free(s->dev, s->buf[0], ST_BATCH_MAX);
		blk_buf_free(s->dev, s->buf[1], ST_BATCH_MAX);
	}
	s->buf[0] = s->buf[1] = NULL;
	kfree(s->segs);
	s->segs = NULL;
	s->state = ST_CLOSED;
}

/* ---- metrics ---- */

void st_write_metrics(struct metrics_buf *b, const struct store *s)
{
	const struct st_stats *t = &s->stats;
	u64 log = 0;

	if (s->head != ST_NO_SEG)
		for (u32 i = s->tail;; i = (i + 1) % s->nseg) {
			log += s->segs[i].used;
			if (i == s->head)
				break;
		}
	metrics_simple(b, "vireo_store_read_only", METRICS_GAUGE,
		       "1 when the store takes no writes (a write or flush failed, or the log is damaged)",
		       s->state == ST_READONLY);
	metrics_simple(b, "vireo_store_keys", METRICS_GAUGE, "Keys in the store (one live record each)",
		       s->index.count);
	metrics_simple(b, "vireo_store_index_bytes", METRICS_GAUGE, "Memory the index charges for its keys",
		       s->index.bytes);
	metrics_simple(b, "vireo_store_live_bytes", METRICS_GAUGE, "Bytes of the records the index names",
		       s->live_bytes);
	metrics_simple(b, "vireo_store_log_bytes", METRICS_GAUGE,
		       "Bytes of batches in the log's segments, live or dead", log);
	metrics_simple(b, "vireo_store_capacity_bytes", METRICS_GAUGE,
		       "Record bytes the store takes (3/4 of the segments beyond the head and the reserve)",
		       st_capacity(s));
	metrics_simple(b, "vireo_store_disk_bytes", METRICS_GAUGE, "Bytes of the store's segments",
		       (u64)s->nseg * s->seg_size);
	metrics_simple(b, "vireo_store_segments_free", METRICS_GAUGE, "Segments outside the log", s->nfree);
	metrics_simple(b, "vireo_store_puts_total", METRICS_COUNTER, "Puts made durable", t->puts);
	metrics_simple(b, "vireo_store_deletes_total", METRICS_COUNTER, "Deletes made durable", t->dels);
	metrics_simple(b, "vireo_store_gets_total", METRICS_COUNTER, "Values read from the disk", t->gets);
	metrics_simple(b, "vireo_store_commits_total", METRICS_COUNTER, "Batches made durable", t->commits);
	metrics_simple(b, "vireo_store_flushes_total", METRICS_COUNTER,
		       "FLUSHes the store sent (one per batch, one per superblock rewrite)", t->flushes);
	metrics_simple(b, "vireo_store_written_bytes_total", METRICS_COUNTER,
		       "Bytes of batches made durable (users' records, copies, headers, padding)", t->log_bytes);
	metrics_simple(b, "vireo_store_record_bytes_total", METRICS_COUNTER,
		       "Bytes of the users' records made durable", t->user_bytes);
	metrics_simple(b, "vireo_store_compactions_total", METRICS_COUNTER, "Segments compaction reclaimed",
		       t->compactions);
	metrics_simple(b, "vireo_store_compaction_copied_bytes_total", METRICS_COUNTER,
		       "Bytes of live records compaction copied", t->compact_bytes);
	metrics_simple(b, "vireo_store_compaction_copied_records_total", METRICS_COUNTER,
		       "Live records compaction copied", t->compact_records);
	metrics_family(b, "vireo_store_errors_total", METRICS_COUNTER,
		       "Failed writes and flushes (the store turns read-only), reads and compactions");
	metrics_sample(b, "vireo_store_errors_total", "op=\"write\"", t->write_errors);
	metrics_sample(b, "vireo_store_errors_total", "op=\"flush\"", t->flush_errors);
	metrics_sample(b, "vireo_store_errors_total", "op=\"read\"", t->get_errors);
	metrics_sample(b, "vireo_store_errors_total", "op=\"compaction\"", t->compact_errors);
	metrics_family(b, "vireo_store_refused_total", METRICS_COUNTER, "Writes refused at once, by reason");
	metrics_sample(b, "vireo_store_refused_total", "reason=\"full\"", t->refused_full);
	metrics_sample(b, "vireo_store_refused_total", "reason=\"index\"", t->refused_index);
	metrics_sample(b, "vireo_store_refused_total", "reason=\"busy\"", t->refused_busy);
}
