/* The store: a log-structured key-value store on one block device
 * (storage/blk.h), format in storage/logfmt.h, index in storage/index.h.
 *
 * Writes are records appended to the log in batches: every put or delete
 * made while a batch is being written and flushed goes into the next one
 * (group commit: many writers, one FLUSH), and each completes, by its
 * callback, only once the FLUSH after its batch has completed. The index
 * changes at that moment too: reads see durable data only. Batches are
 * written one at a time (the next only after the previous batch's FLUSH
 * completed), so after a crash at most the last one is torn, and a torn
 * batch is dropped whole.
 *
 * Recovery (st_open) reads both superblock copies, the first batch of
 * every segment, then replays the live segments in log order, each up to
 * its first invalid batch. Where that is the end of the log (the newest
 * segment, nothing valid written after it), it is the crash's tear:
 * dropped, reported, and its blocks zeroed before anything new is written
 * there. Where it is not (an older segment that ends before the next one
 * begins, or a valid batch later in the newest segment), the log is
 * damaged: reported, and the store opens read-only with what came before.
 *
 * Compaction (store.c, "compaction") keeps the log a ring of segments,
 * tail .. head, and reclaims the tail: it copies the tail's live records
 * to the head (in the ordinary batches, each copy keeping its lsn), waits
 * until no record there is live, then rewrites a superblock copy naming
 * the next segment's first batch as the log's start, and only after that
 * copy's FLUSH may the tail be written again. It runs in steps from the
 * loop (ST_COMPACT_STEP records each) and starts when fewer than
 * ST_COMPACT_LOW segments are free.

 * Not yet: repairing a bad superblock copy
 * other than by the next rewrite.
 *
 * Bounds: the index's memory (st_cfg.index_max; index.h has the per-key
 * charge), the bytes of records queued beyond the open batch (pending_max),
 * the disk (live record bytes plus those admitted at most st_capacity()),
 * reads in flight (ST_GETS_MAX). Past each: -ENOMEM, -EBUSY, -ENOSPC,
 * -EBUSY. */
#ifndef VIREO_STORAGE_STORE_H
#define VIREO_STORAGE_STORE_H

#include "kernel/loop.h"
#include "lib/types.h"
#include "storage/blk.h"
#include "storage/index.h"
#include "storage/logfmt.h"

#define ST_BATCH_MAX (1u << 20)	/* bytes of a batch, header included (at most) */
#define ST_WIN (1u << 20)	/* the segment reader's window */
#define ST_GETS_MAX 16u		/* reads from disk in flight */
#define ST_RESERVE 3u		/* free segments only compaction may take */
#define ST_COMPACT_LOW (ST_RESERVE + 2u)	/* compaction runs while fewer are free */
#define ST_COMPACT_STEP 64u	/* records looked at per compaction step */

enum st_state {
	ST_CLOSED,
	ST_OPENING,
	ST_READY,
	ST_READONLY,		/* a write or flush failed, or the log is damaged: reads only */
	ST_FAILED,		/* could not open */
};

struct st_cfg {
	u64 index_max;		/* bytes of index (st_ent_charge sum) */
	u64 pending_max;	/* bytes of records waiting beyond the open batch */
	bool format;		/* both superblock areas blank: format */
	bool readonly;		/* open, never write */
	const char *label;	/* recorded at format (the disk's serial) */
	u64 now_unix;		/* the format's creation time (0: unknown) */
	void (*random)(void *buf, size_t len);	/* the format's id and secret */
	u32 seg_size;		/* format: bytes per segment (0: 1 MiB) */
};

/* What recovery found; logged by the caller. */
struct st_report {
	bool formatted;
	u64 keys, records, batches, segments, log_bytes;
	bool torn;		/* the newest batch was torn and dropped ... */
	u64 torn_seq;		/* ... this one (0: its header was lost too), */
	u32 torn_records, torn_bytes;	/* ... with its records and bytes */
	bool damaged;		/* the log is damaged before its end (read-only) */
	char damage[160];
	char sb_note[96];	/* a superblock copy found bad, or "" */
	u64 read_bytes;		/* read from the disk by the open */
	u64 open_ns;		/* st_open to its callback: superblocks, format, recovery */
	u64 cpu_ns;		/* ... of it spent checking and replaying, not waiting for the disk */
};

struct st_stats {
	u64 puts, dels;		/* completed (durable) */
	u64 commits;		/* batches made durable */
	u64 batch_records_max;
	u64 log_bytes;		/* bytes of batches written */
	u64 refused_full, refused_index, refused_busy;
	u64 gets, get_errors;
	u64 commit_ns_max;
	u64 user_bytes;		/* record bytes of the puts and deletes made durable */
	u64 compactions;	/* segments reclaimed */
	u64 compact_bytes;	/* record bytes copied by compaction (durable) */
	u64 compact_records;
	u64 sb_writes;		/* superblock copies rewritten */
	u64 flushes;		/* FLUSHes sent (batches and superblocks) */
	u64 write_errors, flush_errors, compact_errors;
};

struct st_seg {
	u64 first, last;	/* seq of its first and last batch; first 0: free */
	u32 used;		/* bytes written from its start */
	u32 live;		/* bytes of the records in it the index names */
	u32 readers;		/* reads in flight from it */
};

struct st_op;
struct st_rec_state;
struct st_compact;
typedef void (*st_done_fn)(int err, void *arg);

struct store {
	enum st_state state;
	struct blk_dev *dev;
	struct st_super sb;
	u32 seed;
	u32 unit, seg_size, nseg, max_record;
	u64 data_off;
	struct st_index index;
	struct st_seg *segs;
	u32 tail;		/* the log's oldest segment (when head is set) */
	u32 head;		/* the segment batches go to, or ST_NO_SEG */
	u32 nfree;		/* segments after head and before tail */
	u64 live_bytes;		/* sum of segs[].live */
	u8 sb_next;		/* the superblock copy the next rewrite goes to */
	struct st_compact *cp;	/* compaction in progress, or NULL */
	struct work cwork;
	bool cp_broken;		/* compaction met a bad segment: stopped, logged */
	u64 next_seq, durable_seq, next_lsn;
	struct st_cfg cfg;
	struct st_report report;
	struct st_stats stats;
	char why[128];		/* the reason of READONLY/FAILED */
	/* the commit pipeline */
	u8 *buf[2];		/* batch buffers (ST_BATCH_MAX each, DMA) */
	u8 cur;			/* buf[cur] is filling */
	u32 cur_off;		/* its end (ST_BATCH_HDR when empty) */
	u32 cur_nrec;
	struct st_op *cur_ops, **cur_tail;
	struct st_op *fly_ops;	/* the batch in flight */
	u32 fly_len, fly_nrec, fly_seg, fly_off;
	u64 fly_seq, fly_t0;
	bool busy;		/* a batch is being written or flushed */
	u64 pending_bytes;	/* record bytes admitted, not yet durable */
	u64 cp_bytes;		/* ... of them compaction's copies */
	struct blk_io w_io, f_io;
	struct st_op *over_head, **over_tail;	/* waiting for room in the batch */
	u64 over_bytes;
	struct work kick;
	unsigned gets;
	/* opening */
	void (*open_done)(struct store *s, int err, void *arg);
	void *open_arg;
	struct st_rec_state *rec;
};

/* Opens the store on d: reads and checks the superblocks, formats when
 * both are blank and cfg->format says so, recovers (asynchronously), then
 * calls done(s, err, arg) from the loop: 0 (ST_READY, or ST_READONLY with
 * s->report.damaged or cfg->readonly), -ENOENT (blank and not to be
 * formatted), -EBADMSG (no valid superblock copy on a disk that is not
 * blank: never formatted; s->why), -EIO (a read or write failed), -ENOMEM,
 * -EINVAL (a disk too small). Returns 0 (done will be called) or
 * -EINVAL/-ENOMEM at once. */
int st_open(struct store *s, struct blk_dev *d, const struct st_cfg *cfg,
	    void (*done)(struct store *s, int err, void *arg), void *arg);

/* The record bytes (live and admitted) the store takes: 3/4 of the
 * segments beyond the head and the reserve, so that compaction always
 * finds at least a quarter of a segment dead on average. */
u64 st_capacity(const struct store *s);

/* The largest value a put takes (any key). */
u32 st_value_max(const struct store *s);

/* A put (vlen 0 allowed) or delete; key and value are copied before the
 * call returns. cb(err, arg) from the loop once the record is durable (0)
 * or will never be: -EIO (the batch's write or flush failed: the store is
 * read-only now; whether the record is on the disk is not known), -EROFS
 * (read-only already when it was to be written), -ENOSPC (no room for
 * it, and compaction could not make any). Returns 0 (cb will be
 * called) or, with cb never called: -EINVAL (key 1..255 bytes, value over
 * st_value_max), -ENOENT (a delete of a key with no durable or pending
 * record), -EROFS, -EAGAIN (still opening), -ENOSPC (st_capacity() reached),
 * -ENOMEM (the index's bound or the heap), -EBUSY (pending_max). */
int st_put(struct store *s, const u8 *key, u32 klen, const void *val, u32 vlen, st_done_fn cb, void *arg);
int st_del(struct store *s, const u8 *key, u32 klen, st_done_fn cb, void *arg);

/* The durable entry for key, or NULL. */
const struct st_ent *st_lookup(const struct store *s, const u8 *key, u32 klen);

/* Reads key's durable value from disk: cb(0, val, vlen, arg) (val valid
 * during the call only), or cb(-EIO / -EBADMSG: the record read back is
 * not the one the index names, logged) from the loop. Returns 0, or
 * -ENOENT (no durable record), -EBUSY (ST_GETS_MAX reads in flight),
 * -EAGAIN (opening), -EINVAL, -ENOMEM, with cb never called. */
int st_get(struct store *s, const u8 *key, u32 klen, void (*cb)(int err, const void *val, u32 vlen, void *arg),
	   void *arg);

/* Frees everything (a failed open, the host tests). No callback is called
 * after it; nothing may be in flight on the device. */
void st_close(struct store *s);

/* Writes the vireo_store_* families (the data disk's source: disk.c). */
struct metrics_buf;
void st_write_metrics(struct metrics_buf *b, const struct store *s);

/* Whether nothing is being written (no batch, nothing queued). */
bool st_idle(const struct store *s);

#endif
