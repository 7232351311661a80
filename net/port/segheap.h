/* A segregated-fit heap with a hard size: lwIP's heap (mem_malloc/mem_free,
 * and through MEMP_MEM_MALLOC every pool object) in the kernel.
 *
 * The region is cut into SEGHEAP_PAGE-byte pages. A request of at most
 * SEGHEAP_SMALL_MAX bytes is rounded up to one of a fixed ladder of size
 * classes; each class owns whole pages, carved into equal slots, and keeps
 * the pages that have a free slot on a list: allocating pops a slot from the
 * first such page, freeing pushes it back (a pointer's page is its offset
 * divided by SEGHEAP_PAGE). Neither depends on how many blocks are live,
 * which is what lwIP's own first-fit heap did (its walk grew with
 * connections x queued segments). A page whose last slot is freed goes back
 * to the page pool at once, so any class can reuse it.
 * A larger request takes a run of whole pages: the only search, over a
 * bitmap of npages bits (64 at a time), and rare (lwIP asks for more than
 * 2 KiB only for a reassembled datagram or an oversized ICMP reply).
 *
 * Bounds: the heap never hands out more than npages x SEGHEAP_PAGE bytes.
 * Rounding: a block is at most 1.26 x the request once the request exceeds
 * 128 bytes (the ladder's largest step ratio), and at most 16 bytes more
 * below that; segheap_block_bytes() gives the exact figure.
 * Fragmentation: a class keeps a page while one of its slots is live, so
 * after a burst a class may hold more pages than its live blocks fill; a
 * page empty again goes back to the pool at once, and any free page serves
 * any class.
 *
 * Frees are checked: a pointer outside the region, not at a slot boundary,
 * in a free page, or to a slot already free (one live bit per slot) is
 * counted in bad_frees and otherwise ignored. Pure C, no locking: lwIP runs
 * in one context (net/port/lwipopts.h). */
#ifndef VIREO_SEGHEAP_H
#define VIREO_SEGHEAP_H

#include "lib/types.h"

#define SEGHEAP_PAGE		8192u
#define SEGHEAP_ALIGN		8u	/* every block's address and size */
#define SEGHEAP_SMALL_MAX	2048u
#define SEGHEAP_NCLASS		25
#define SEGHEAP_NONE		0xffffffffu
#define SEGHEAP_MIN_SLOT	16u
#define SEGHEAP_LIVE_WORDS	(SEGHEAP_PAGE / SEGHEAP_MIN_SLOT / 64)

struct segheap_page {
	u8 *free;		/* free-slot list (small class page) */
	u32 next, prev;		/* the class's list of pages with a free slot */
	u16 kind;		/* class index, or SEGHEAP_FREE/RUN/TAIL */
	u16 used;		/* live slots */
	u16 bump;		/* slots carved so far (never-used slots follow) */
	u16 slots;		/* slots per page */
	u32 run;		/* RUN head: pages in the run */
	u64 live[SEGHEAP_LIVE_WORDS];	/* one bit per slot in use */
};

struct segheap {
	u8 *base;		/* first page */
	u32 npages;
	struct segheap_page *pg;	/* npages descriptors */
	u64 *freemap;		/* bit set: page free */
	u32 partial[SEGHEAP_NCLASS];	/* first page with a free slot, or NONE */
	u8 class_of[SEGHEAP_SMALL_MAX / SEGHEAP_ALIGN + 1];

	/* statistics */
	size_t bytes;		/* in blocks handed out (class or run size) */
	size_t bytes_peak;
	u32 pages_used, pages_peak;
	u32 class_live[SEGHEAP_NCLASS];
	u64 allocs, frees, fails, bad_frees;
};

/* Bytes of descriptors and bitmap a heap of npages pages keeps in front of
 * its pages: segheap_init() on a region of segheap_region_bytes(n) bytes
 * gives exactly n pages. */
size_t segheap_region_bytes(u32 npages);

/* Sets up h over len bytes at mem (aligned to SEGHEAP_ALIGN): descriptors
 * first, then as many whole pages as fit. Returns the page count (0 if the
 * region holds none). */
u32 segheap_init(struct segheap *h, void *mem, size_t len);

/* A block of at least n bytes (n 0 counts as 1), aligned to SEGHEAP_ALIGN,
 * or NULL when no slot or run is free (counted in fails). */
void *segheap_alloc(struct segheap *h, size_t n);

/* Returns p's block and its size in bytes (segheap_block_bytes() of the
 * request). NULL is a no-op; a bad pointer is counted, not followed. Both
 * return 0. */
size_t segheap_free(struct segheap *h, void *p);

/* The bytes a request of n takes from the heap: its class's slot size, or
 * its run of whole pages. */
size_t segheap_block_bytes(size_t n);

/* Size of one class (index < SEGHEAP_NCLASS), for reports. */
u32 segheap_class_size(u32 c);

#endif
