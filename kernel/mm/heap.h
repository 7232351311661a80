/* Small heap, size classes over arenas the caller hands in. Pure: it touches only
 * arena memory and logs bad frees through klog. */
#ifndef VIREO_HEAP_H
#define VIREO_HEAP_H

#include "lib/types.h"

struct heap_arena;

/* Size classes: 64 exact ones of 16 bytes below 1 KiB, one per power of two
 * from 1 KiB up to 2^63. */
#define HEAP_BINS	118u
#define HEAP_BINWORDS	2u
struct heap_block;

/* in_use/peak count whole blocks (header and alignment padding included), so
 * in_use is 0 again once everything is freed. arena_bytes: usable bytes
 * handed in. failures: allocations that returned NULL. bad_frees: frees
 * that were detected as invalid and ignored. */
struct heap {
	struct heap_arena *arenas;	/* newest first */
	struct heap_block *bins[HEAP_BINS];	/* free blocks by size class (heap.c) */
	u64 binmap[HEAP_BINWORDS];		/* a bit per non-empty bin */
	u64 bad_frees;
	u64 walked;	/* free blocks heap_alloc looked at, for tests and metrics */
	size_t in_use; size_t peak; size_t arena_bytes; u64 allocs, frees, failures;
};

/* An empty heap: every allocation fails until an arena is added. */
void heap_init(struct heap *h);

/* Gives [mem, mem+len) to the heap for good; mem should be 16-byte aligned
 * (the range is trimmed inward to 16 bytes otherwise). An arena too small to
 * hold a block, or overlapping one already added, is logged and ignored. */
void heap_add_arena(struct heap *h, void *mem, size_t len);

/* size bytes (0 counts as 1) aligned to align, a power of two <= 4096
 * (smaller than 16 means 16). NULL when no free block fits or align is
 * invalid; the caller may add an arena and retry. */
void *heap_alloc(struct heap *h, size_t size, size_t align);

/* Returns p from heap_alloc; NULL is ignored. A double free, a pointer this
 * heap did not hand out, or a block whose header was overwritten is logged
 * once (klog) and ignored: the heap is left as it was. */
void heap_free(struct heap *h, void *p);

/* The largest size heap_alloc(h, size, 16) would satisfy now; 0 if none. */
size_t heap_largest_free(const struct heap *h);

/* Walks every arena and the free list: 0 if all headers check, blocks tile
 * each arena, no two free blocks touch, the free list is exactly the free
 * blocks in address order and in_use matches; -EBADMSG otherwise. O(blocks),
 * for tests and debug paths. */
int heap_check(const struct heap *h);

#endif
