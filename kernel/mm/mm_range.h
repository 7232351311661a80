/* Physical ranges: the checks an MMIO mapping must pass before page
 * tables change. Pure (no paging, no globals): built for the host too. */
#ifndef VIREO_MM_RANGE_H
#define VIREO_MM_RANGE_H

#include "lib/types.h"

struct mm_range {
	u64 lo, hi;	/* [lo, hi) */
};

/* Identity mapping: a physical address is also a virtual one, so it must
 * stay in the lower canonical half (47 bits). */
#define MM_PHYS_LIMIT (1ULL << 47)
/* The largest one mmio_map() call maps: a whole ECAM segment (256 buses x
 * 1 MiB). With 2 MiB pages that is 128 PD entries, with 4 KiB pages at the
 * unaligned ends 2 page tables, plus a PD and a PDPT: <= 4 page-table pages
 * per call, never a panic for lack of frames. */
#define MM_MMIO_MAX (256ULL << 20)

/* Whether [phys, phys+len), widened to whole 4 KiB pages (what a mapping
 * changes), may be mapped uncached: 0, -EINVAL (empty or wraps), -E2BIG
 * (longer than max_len; 0: no limit), -ERANGE (ends past MM_PHYS_LIMIT) or
 * -EFAULT (overlaps one of the nram RAM ranges or the kernel image). */
int mm_range_check_mmio(const struct mm_range *ram, unsigned nram, struct mm_range image, u64 phys,
			u64 len, u64 max_len);

#endif
