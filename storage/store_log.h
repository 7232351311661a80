/* The record log (include/vireo/store.h's vireo_log_*) on the store: each
 * record is one key, 0x00 'L' and its seq big-endian (so keys sort in seq
 * order), the record its value; a trim is one key, 0x00 'T' and the seq
 * trimmed to, written before any record it drops is deleted. So a record
 * is as durable as any put, recovery and compaction keep the log as they
 * keep keys, and after a crash a trim happened whole or not at all: the
 * store's state is always the one after some prefix of its operations, and
 * the trim key comes first.
 *
 * Seqs: the next append takes max(the newest record, the newest trim
 * key) + 1, so a seq an acknowledged append was given is never given
 * again, even with every record trimmed. An append that failed leaves a
 * gap; seqs only grow.
 *
 * Bounds: SL_APPENDS appends on their way (-EBUSY past it), one trim at a
 * time, SL_SWEEP deletes of trimmed records out at once, reads the store's
 * ST_GETS_MAX. A record is at most st_value_max() bytes; records held are
 * keys of the store: st_ent_charge(10) = 96 bytes of index each (index_max,
 * -ENOMEM) and st_rec_space(10, len) = 8-aligned 34 + len bytes of disk
 * (st_capacity(), -ENOSPC). The log's own memory is struct st_log (about
 * 2.5 KiB), static. */
#ifndef VIREO_STORAGE_STORE_LOG_H
#define VIREO_STORAGE_STORE_LOG_H

#include "storage/store.h"

#define SL_KLEN 10u		/* 0x00, 'L' or 'T', the seq big-endian */
#define SL_APPENDS 64u		/* appends on their way */
#define SL_SWEEP 32u		/* deletes of trimmed keys out at once */

struct st_log;

struct sl_append {
	struct st_log *l;
	u64 seq;
	void (*done)(int err, u64 seq, void *arg);	/* NULL: free */
	void *arg;
};

struct sl_read {
	struct st_log *l;
	u64 seq;
	void (*got)(int err, u64 seq, const void *data, size_t len, void *arg);	/* NULL: free */
	void *arg;
};

struct st_log {
	struct store *s;	/* NULL: not set up */
	u64 last;		/* the newest durable record's seq (0: none yet) */
	u64 next;		/* the seq the next append takes */
	u64 trimmed;		/* durable trim: records up to it are gone */
	u64 trim_to;		/* the trim on its way (0: none) */
	void (*trim_done)(int err, void *arg);
	void *trim_arg;
	unsigned sweeping;	/* deletes out */
	bool sweep_again;	/* a trim became durable while they were out */
	struct sl_append ap[SL_APPENDS];
	struct sl_read rd[ST_GETS_MAX];
};

/* Sets l up on an open store (ST_READY or ST_READONLY): finds the newest
 * record and trim in the index (one walk over the log's keys) and starts
 * deleting what a trim cut short left. */
void st_log_init(struct st_log *l, struct store *s);

/* Appends data[0..len); done(0, seq, arg) once durable, or done(err, 0,
 * arg) as st_put's cb (-EIO, -EROFS, -ENOSPC). Returns 0, or without
 * calling done: -EINVAL (len over st_value_max), -EBUSY (SL_APPENDS out,
 * or st_put's), st_put's -ENOSPC, -ENOMEM, -EROFS, -EAGAIN. */
int st_log_append(struct st_log *l, const void *data, size_t len, void (*done)(int err, u64 seq, void *arg),
		  void *arg);

/* Reads the first record with seq >= from that is not trimmed:
 * got(0, seq, data, len, arg) (data valid during the call) or got(-EIO or
 * -EBADMSG, seq, NULL, 0, arg), from the loop. Returns 0, or -ENOENT (no
 * such record yet), -EBUSY (ST_GETS_MAX reads out), -EAGAIN, -ENOMEM. */
int st_log_read(struct st_log *l, u64 from, void (*got)(int err, u64 seq, const void *data, size_t len, void *arg),
		void *arg);

/* Drops every record with seq <= upto: done(0, arg) once that is durable
 * (the records are deleted after, in the background), or done(err, arg).
 * Returns 0, or -EINVAL (upto past the newest durable record),
 * -EALREADY (trimmed that far already), -EBUSY (a trim on its way), or
 * st_put's refusals, without calling done. */
int st_log_trim(struct st_log *l, u64 upto, void (*done)(int err, void *arg), void *arg);

/* The oldest record's seq (0: none) and the newest durable one's (0: none
 * yet). */
u64 st_log_first(const struct st_log *l);
u64 st_log_last(const struct st_log *l);

#endif
