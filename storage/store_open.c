/*
 * The store's open (storage/store.c has the rest of the store): the
 * superblocks, format, recovery by replaying the log, and close.
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
	u64 t0;			/* time_ns() at st_open */
	u64 step_t0;		/* ... at the start of the step running (st_rc_timed) */
	/* Read-ahead: while one segment is checked and replayed, the next
	 * live one's first window is read into awin (ST_WIN). */
	struct blk_io aio;
	u8 *awin;
	u32 ak, apos, alen;	/* the k-th live segment, from apos, alen bytes */
	u8 ahead;		/* AH_NONE, AH_BUSY, AH_DONE */
	int aerr;
	bool await;		/* the scan waits for it */
	bool ending;		/* the open is over, once it is back (end_err) */
	int end_err;
	struct work take;	/* the scan goes on with a read-ahead already done */
	/* The probe: the first unit of ST_PROBE_INFLIGHT segments at a time,
	 * into win (at most 32 x 4 KiB). */
	struct blk_io *pio;
	u32 pn, pdone;
	int perr;
	u64 perr_sector;
};

#define ST_PROBE_INFLIGHT 32u

enum { AH_NONE, AH_BUSY, AH_DONE };

static void st_rc_io(struct store *s);

/* The recovery state and its buffers, if any. */
static void st_rc_free(struct store *s)
{
	struct st_rec_state *rc = s->rec;

	if (!rc)
		return;
	blk_buf_free(s->dev, rc->sbbuf, 2 * ST_SB_SIZE);
	blk_buf_free(s->dev, rc->win, ST_WIN);
	blk_buf_free(s->dev, rc->awin, ST_WIN);
	work_cancel(&rc->take);
	blk_buf_free(s->dev, rc->zero, rc->torn.total);
	kfree(rc->firsts);
	kfree(rc->live);
	kfree(rc->pio);
	kfree(rc);
	s->rec = NULL;
}

static void st_open_end(struct store *s, int err)
{
	if (s->rec && s->rec->ahead == AH_BUSY) {
		s->rec->ending = true;	/* its buffer is the device's until it is back */
		s->rec->end_err = err;
		return;
	}
	if (s->rec) {
		u64 now = time_ns();

		s->report.open_ns = now - s->rec->t0;
		if (s->rec->step_t0)
			s->report.cpu_ns += now - s->rec->step_t0;
	}
	st_rc_free(s);
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
	s->report.read_bytes += len;
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

static void st_probe_one(struct blk_io *io, int err);

/* The first unit of the next ST_PROBE_INFLIGHT segments, all at once. */
static void st_probe_group(struct store *s)
{
	struct st_rec_state *rc = s->rec;

	rc->pn = MIN(ST_PROBE_INFLIGHT, s->nseg - rc->i);
	rc->pdone = 0;
	for (u32 j = 0; j < rc->pn; j++) {
		rc->pio[j] = (struct blk_io){ .op = BLK_READ, .sector = st_sector(s, rc->i + j, 0),
					      .buf = rc->win + j * s->unit, .len = s->unit, .done = st_probe_one,
					      .priv = s };
		s->report.read_bytes += s->unit;
		blk_submit(s->dev, &rc->pio[j]);
	}
}

static void st_scan_read(struct store *s);
static void st_recovered(struct store *s);
static void st_sort_live(struct st_rec_state *rc);
static void st_rc_timed(struct store *s, void (*fn)(struct store *s, struct blk_io *io, int err),
			struct blk_io *io, int err);

/* A group of the probe is back: the segments whose first batch is of this
 * log are live; the others are free. */
static void st_probe_back(struct store *s, struct blk_io *io, int err)
{
	struct st_rec_state *rc = s->rec;

	if (rc->perr) {
		ksnprintf(s->why, sizeof s->why, "I/O error (%d) at sector %lu while opening", rc->perr,
			  (unsigned long)rc->perr_sector);
		st_open_end(s, -EIO);
		return;
	}
	for (u32 j = 0; j < rc->pn; j++, rc->i++) {
		struct st_batch b;
		const char *why;

		/* A segment whose first batch is older than the log's start was
		 * reclaimed: it is free. */
		if (st_batch_decode(rc->win + j * s->unit, s->unit, s->seed, rc->i, s->unit, s->seg_size, &b, &why) ==
			    0 &&
		    (b.flags & ST_BATCH_FIRST) && b.seq >= s->sb.start) {
			rc->firsts[rc->i] = b.seq;
			rc->live[rc->nlive++] = rc->i;
		}
	}
	if (rc->i < s->nseg) {
		st_probe_group(s);
		return;
	}
	if (rc->nlive)
		st_sort_live(rc);
	if (s->sb.start && (!rc->nlive || rc->firsts[rc->live[0]] != s->sb.start)) {
		s->report.damaged = true;
		ksnprintf(s->report.damage, sizeof s->report.damage, "the log's first batch (%lu) is missing",
			  (unsigned long)s->sb.start);
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
}

static void st_probe_one(struct blk_io *io, int err)
{
	struct store *s = io->priv;
	struct st_rec_state *rc = s->rec;

	if (err && !rc->perr) {
		rc->perr = err;
		rc->perr_sector = io->sector;
	}
	if (++rc->pdone == rc->pn)
		st_rc_timed(s, st_probe_back, io, 0);
}

/* After the superblocks: the segments' first batches, ST_PROBE_INFLIGHT at
 * a time. */
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
	rc->awin = blk_buf_alloc(s->dev, ST_WIN);
	rc->pio = kzalloc(sizeof *rc->pio * ST_PROBE_INFLIGHT);
	if (!s->segs || !rc->firsts || !rc->live || !rc->win || !rc->awin || !rc->pio)
		return -ENOMEM;
	rc->phase = RC_PROBE;
	rc->i = 0;
	st_probe_group(s);
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
		struct st_ent *e;

		st_rec_fields(payload + off, &r);	/* st_batch_check passed, on these bytes */
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

static void st_ahead_done(struct blk_io *io, int err);

/* Reads the next live segment's first window into awin, if none is being
 * read and the scan has one after this segment. */
static void st_ahead_start(struct store *s)
{
	struct st_rec_state *rc = s->rec;

	if (rc->ahead != AH_NONE || rc->phase != RC_SCAN || rc->k + 1 >= rc->nlive)
		return;
	rc->ahead = AH_BUSY;
	rc->ak = rc->k + 1;
	rc->apos = 0;
	rc->alen = MIN(ST_WIN, s->seg_size);
	rc->aio = (struct blk_io){ .op = BLK_READ, .sector = st_sector(s, rc->live[rc->ak], 0), .buf = rc->awin,
				   .len = rc->alen, .done = st_ahead_done, .priv = s };
	s->report.read_bytes += rc->alen;
	blk_submit(s->dev, &rc->aio);
}

static void st_scan_read(struct store *s)
{
	struct st_rec_state *rc = s->rec;
	u32 seg = rc->live[rc->k];

	rc->win_start = rc->pos;
	rc->win_len = MIN(ST_WIN, s->seg_size - rc->pos);
	if (rc->ahead != AH_NONE && rc->ak == rc->k && rc->apos == rc->pos && rc->alen == rc->win_len) {
		if (rc->ahead == AH_BUSY)
			rc->await = true;	/* st_ahead_done goes on */
		else
			work_queue(&rc->take);	/* from the loop: no recursion segment after segment */
		return;
	}
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

static void st_rc_step(struct blk_io *io, int err);

/* Every step of the open between two requests runs through here: its time
 * is the open's CPU time (checking and replaying), the rest is waiting
 * for the disk. */
static void st_rc_timed(struct store *s, void (*fn)(struct store *s, struct blk_io *io, int err),
			struct blk_io *io, int err)
{
	struct st_rec_state *rc = s->rec;

	rc->step_t0 = time_ns();
	fn(s, io, err);
	if (s->rec == rc)	/* still opening (st_open_end counts the last step) */
		s->report.cpu_ns += time_ns() - rc->step_t0;
}

static void st_rc_main(struct store *s, struct blk_io *io, int err)
{
	st_rc_step(io, err);
}

static void st_rc_done(struct blk_io *io, int err)
{
	st_rc_timed(io->priv, st_rc_main, io, err);
}

/* The scan takes the read-ahead as its window and goes on. */
static void st_ahead_use(struct store *s, struct blk_io *io, int err)
{
	struct st_rec_state *rc = s->rec;
	u8 *w = rc->win;

	rc->ahead = AH_NONE;
	if (rc->aerr) {
		ksnprintf(s->why, sizeof s->why, "I/O error (%d) at sector %lu while opening", rc->aerr,
			  (unsigned long)rc->aio.sector);
		st_open_end(s, -EIO);
		return;
	}
	rc->win = rc->awin;
	rc->awin = w;
	st_ahead_start(s);
	st_scan_step(s);
}

static void st_ahead_take(void *arg)
{
	st_rc_timed(arg, st_ahead_use, NULL, 0);
}

static void st_ahead_back(struct store *s, struct blk_io *io, int err)
{
	struct st_rec_state *rc = s->rec;

	rc->ahead = AH_DONE;
	rc->aerr = err;
	if (rc->ending) {
		rc->ahead = AH_NONE;
		st_open_end(s, rc->end_err);
	} else if (rc->await) {
		rc->await = false;
		st_ahead_use(s, io, err);
	}
}

static void st_ahead_done(struct blk_io *io, int err)
{
	st_rc_timed(io->priv, st_ahead_back, io, err);
}

static void st_rc_step(struct blk_io *io, int err)
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
	case RC_SCAN:
		st_ahead_start(s);
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
	if (rc) {
		rc->t0 = time_ns();
		work_init(&rc->take, st_ahead_take, s);
	}
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
	work_cancel(&s->kick);
	work_cancel(&s->cwork);
	st_cp_free(s);
	st_rc_free(s);
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

