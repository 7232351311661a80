/* The store's memory index: every live key, where its newest record is on
 * disk, kept in key order (an AVL tree threaded through the entries, no
 * other memory), so prefix scans walk it in order.
 *
 * Memory, exactly: an entry is one kmalloc block of ST_ENT_HDR (40) bytes
 * plus the key, which the kernel heap carves as a 32-byte block header
 * plus the payload in 16-byte steps (kernel/mm/heap.c), so each key costs
 *
 *     st_ent_charge(klen) = 32 + ALIGN_UP(40 + klen, 16)
 *
 * 80 bytes for keys up to 8 bytes, 336 for the longest (255). `bytes` is
 * the sum over the entries, and the store refuses a new key that would
 * take it past its bound (storage/store.h). The tree's height is at most
 * 1.44 log2(n + 2), 45 for any n below 2^32: the recursion is bounded. */
#ifndef VIREO_STORAGE_INDEX_H
#define VIREO_STORAGE_INDEX_H

#include "lib/types.h"

struct st_ent {
	struct st_ent *left, *right;
	u64 lsn;		/* of the record */
	u32 seg, off;		/* where the record is: segment, byte offset in it */
	u32 vlen;
	u16 pending;		/* writes of this key submitted, not yet durable */
	u8 height;
	u8 klen;
	u8 key[];
};
#define ST_ENT_HDR 40u
_Static_assert(sizeof(struct st_ent) == ST_ENT_HDR, "ST_ENT_HDR is the entry's header");

struct st_index {
	struct st_ent *root;
	u64 count;
	u64 bytes;		/* sum of st_ent_charge() */
};

static inline u64 st_ent_charge(u32 klen)
{
	return 32u + ALIGN_UP(ST_ENT_HDR + klen, 16u);
}

/* The entry for key, or NULL. */
struct st_ent *st_index_find(const struct st_index *x, const u8 *key, u32 klen);
/* Adds e (its key set; the tree fields are the index's). Returns 0, or
 * -EEXIST (the key is there: nothing changed). */
int st_index_insert(struct st_index *x, struct st_ent *e);
/* Takes the entry for key out of the tree and returns it (the caller frees
 * it), or NULL. */
struct st_ent *st_index_remove(struct st_index *x, const u8 *key, u32 klen);
/* Calls fn for each entry whose key starts with prefix[0..plen), in key
 * order, starting after the key after[0..alen) (alen 0: from the start),
 * until fn returns false. Returns the number of calls. */
unsigned st_index_walk(const struct st_index *x, const u8 *prefix, u32 plen, const u8 *after, u32 alen,
		       bool (*fn)(const struct st_ent *e, void *arg), void *arg);
/* Calls fn for every entry (any order) and forgets them all; fn frees. */
void st_index_clear(struct st_index *x, void (*fn)(struct st_ent *e, void *arg), void *arg);
/* 0 if the keys are in order, heights and balance right and count/bytes
 * match; -EBADMSG otherwise. O(n), for tests. */
int st_index_check(const struct st_index *x);

#endif
