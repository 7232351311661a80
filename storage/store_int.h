/* What storage/store.c, store_compact.c and store_open.c share: the
 * store's private types and the functions one calls in another. Not for
 * use outside storage/store*.c (store.h is the interface). */
#ifndef VIREO_STORAGE_STORE_INT_H
#define VIREO_STORAGE_STORE_INT_H

#include "storage/store.h"

/* A put or delete on its way: waiting for room, in the open batch, or in
 * the batch in flight. */
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

/* Compaction's state (store_compact.c), s->cp while a segment is being
 * reclaimed. */
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

/* The sector of byte off of segment seg. */
static inline u64 st_sector(const struct store *s, u32 seg, u32 off)
{
	return (s->data_off + (u64)seg * s->seg_size + off) / 512;
}

/* A ghost: a key the index keeps with no durable record yet. */
static inline bool st_ghost(const struct st_ent *e)
{
	return e->seg == ST_NO_SEG;
}

/* store.c */
void st_live(struct store *s, const struct st_ent *e, bool add);
bool st_room(const struct store *s, u32 space, bool copy);
void st_cur_append(struct store *s, struct st_op *op);
void st_fail(struct store *s, int err, const char *what);
void st_kick_fn(void *arg);	/* s->kick's work: the next batch */

/* store_compact.c */
void st_cp_maybe(struct store *s);
void st_cp_step(void *arg);
void st_cp_free(struct store *s);

#endif
