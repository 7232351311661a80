/* Physical range checks for MMIO mappings (see mm_range.h). */
#include <arch.h>

#include "kernel/mm/mm_range.h"

static bool mm_range_overlaps(u64 lo, u64 hi, struct mm_range r)
{
	return lo < r.hi && r.lo < hi;
}

int mm_range_check_mmio(const struct mm_range *ram, unsigned nram, struct mm_range image, u64 phys,
			u64 len, u64 max_len)
{
	u64 lo, hi;
	unsigned i;

	if (len == 0 || phys + len < phys)
		return -EINVAL;
	if (max_len && len > max_len)
		return -E2BIG;
	if (phys + len > MM_PHYS_LIMIT)
		return -ERANGE;
	lo = ALIGN_DOWN(phys, (u64)PAGE_SIZE);
	hi = ALIGN_UP(phys + len, (u64)PAGE_SIZE);
	if (mm_range_overlaps(lo, hi, image))
		return -EFAULT;
	for (i = 0; i < nram; i++)
		if (mm_range_overlaps(lo, hi, ram[i]))
			return -EFAULT;
	return 0;
}
