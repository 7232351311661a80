/*
 * The store (store.h): admission, the commit pipeline (group commit) and
 * reads; compaction is storage/store_compact.c, format and recovery
 * storage/store_open.c (storage/store_int.h joins them).
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
#include "storage/store_int.h"

static u32 st_batch_cap(const struct store *s)
{
	return MIN(ST_BATCH_MAX, s->max_record + ST_BATCH_HDR);
}

u32 st_value_max(const struct store *s)
{
	return s->max_record - ST_REC_HDR - ST_KEY_MAX;
}


/* The index entry e names its record (or stops naming it): the segments'
 * live bytes follow. */
void st_live(struct store *s, const struct st_ent *e, bool add)
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


/* ---- admission ---- */

static void st_cycle(struct store *s);

/* Whether a record of space bytes may join the open batch: it must fit the
 * batch, and the batch the head segment or the next free one. The last
 * ST_RESERVE free segments are compaction's (copy): a user's record takes
 * the head only while that many are free, a new segment only while more
 * are. */
bool st_room(const struct store *s, u32 space, bool copy)
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

void st_cur_append(struct store *s, struct st_op *op)
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

void st_kick_fn(void *arg)
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
void st_fail(struct store *s, int err, const char *what)
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
	metrics_family(b, "vireo_store_recovery_seconds", METRICS_GAUGE,
		       "Time the store's open took (superblocks, format, replaying the log)");
	metrics_sample_fixed(b, "vireo_store_recovery_seconds", NULL, s->report.open_ns / 1000, 6);
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
