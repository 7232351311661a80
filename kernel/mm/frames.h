/* Physical frame allocator: one bit per 4 KiB page, set = in use. Pure: it
 * keeps only the bitmap and never touches the frames themselves. */
#ifndef VIREO_FRAMES_H
#define VIREO_FRAMES_H

#include "lib/types.h"

/* base: physical address of bit 0 (page-aligned). nfree: pages free now.
 * ntotal: pages handed to frames_add_free and not taken back by
 * frames_reserve, i.e. nfree plus the pages allocated. hint: page index
 * where the next single-page search starts. */
struct frames { u64 base; u64 npages; u64 *bitmap; u64 nfree; u64 ntotal; u64 hint; };

/* Bytes of bitmap frames_init needs for physical range [lo, hi), with lo
 * rounded down and hi up to pages; a multiple of 8. 0 if hi <= lo. */
size_t frames_bitmap_bytes(u64 lo, u64 hi);

/* Covers [lo, hi) with every page in use. bitmap (caller-owned, at least
 * frames_bitmap_bytes(lo, hi) bytes, 8-byte aligned) must outlive f. */
void frames_init(struct frames *f, u64 lo, u64 hi, u64 *bitmap);

/* Marks [base, base+len) free: rounds inward to whole pages and clips to the
 * range; physical page 0 is never freed. Pages already free are not counted
 * twice. The caller must not add pages it has allocated. */
void frames_add_free(struct frames *f, u64 base, u64 len);

/* Marks [base, base+len) in use: rounds outward to whole pages and clips to
 * the range. Free pages leave both nfree and ntotal. */
void frames_reserve(struct frames *f, u64 base, u64 len);

/* One page: its physical address, or 0 when none is free. */
u64 frames_alloc(struct frames *f);

/* npages contiguous pages starting at a multiple of align (a power of two,
 * at least PAGE_SIZE), lowest such run first: the physical address, or 0
 * when no run fits or the arguments are invalid. */
u64 frames_alloc_contig(struct frames *f, u64 npages, u64 align);

/* Returns [phys, phys + npages pages) to the pool: 0, or -EINVAL when phys is
 * unaligned, the run is empty or leaves the range, or any page in it is
 * already free (nothing is changed then). Cannot tell a reserved page from
 * an allocated one: freeing reserved pages is the caller's bug. */
int frames_free(struct frames *f, u64 phys, u64 npages);

#endif
