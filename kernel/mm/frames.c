/* Bitmap frame allocator. Bits past npages in the last word stay set forever,
 * so word-at-a-time scans never need a bounds mask. */
#include "kernel/mm/frames.h"

#define FR_BITS 64

static bool frames_test(const struct frames *f, u64 i)
{
	return (f->bitmap[i / FR_BITS] >> (i % FR_BITS)) & 1;
}

static void frames_set(struct frames *f, u64 i)
{
	f->bitmap[i / FR_BITS] |= 1ull << (i % FR_BITS);
}

static void frames_clear(struct frames *f, u64 i)
{
	f->bitmap[i / FR_BITS] &= ~(1ull << (i % FR_BITS));
}

/* [base, base+len) as page indexes [*first, *end) within the range, rounded
 * outward or inward; false if nothing is left. Works in offsets from
 * f->base (page-aligned), so nothing overflows near the top of memory. */
static bool frames_span(const struct frames *f, u64 base, u64 len, bool outward, u64 *first, u64 *end)
{
	u64 top = base + len, lo, hi, s, e;

	if (len == 0)
		return false;
	if (top < base)
		top = UINT64_MAX;	/* wrapped: clip at the top of the address space */
	if (top <= f->base)
		return false;
	lo = base > f->base ? base - f->base : 0;
	hi = top - f->base;
	if (outward) {
		s = lo / PAGE_SIZE;
		e = hi / PAGE_SIZE + (hi % PAGE_SIZE != 0);
	} else {
		s = lo / PAGE_SIZE + (lo % PAGE_SIZE != 0);
		e = hi / PAGE_SIZE;
	}
	e = MIN(e, f->npages);
	if (s >= e)
		return false;
	*first = s;
	*end = e;
	return true;
}

size_t frames_bitmap_bytes(u64 lo, u64 hi)
{
	u64 pages;

	lo = ALIGN_DOWN(lo, (u64)PAGE_SIZE);
	if (hi <= lo)
		return 0;
	pages = (hi - lo) / PAGE_SIZE + ((hi - lo) % PAGE_SIZE != 0);
	return (size_t)((pages + FR_BITS - 1) / FR_BITS * sizeof(u64));
}

void frames_init(struct frames *f, u64 lo, u64 hi, u64 *bitmap)
{
	size_t words = frames_bitmap_bytes(lo, hi) / sizeof(u64);

	f->base = ALIGN_DOWN(lo, (u64)PAGE_SIZE);
	f->npages = hi > f->base ? (hi - f->base) / PAGE_SIZE + ((hi - f->base) % PAGE_SIZE != 0) : 0;
	f->bitmap = bitmap;
	f->nfree = 0;
	f->ntotal = 0;
	f->hint = 0;
	for (size_t i = 0; i < words; i++)
		bitmap[i] = ~0ull;
}

void frames_add_free(struct frames *f, u64 base, u64 len)
{
	u64 i, end;

	if (!frames_span(f, base, len, false, &i, &end))
		return;
	if (f->base == 0 && i == 0)
		i = 1;		/* physical page 0 stays in use: 0 means failure */
	for (; i < end; i++) {
		if (frames_test(f, i)) {
			frames_clear(f, i);
			f->nfree++;
			f->ntotal++;
		}
	}
	f->hint = 0;
}

void frames_reserve(struct frames *f, u64 base, u64 len)
{
	u64 i, end;

	if (!frames_span(f, base, len, true, &i, &end))
		return;
	for (; i < end; i++) {
		if (!frames_test(f, i)) {
			frames_set(f, i);
			f->nfree--;
			f->ntotal--;
		}
	}
}

u64 frames_alloc(struct frames *f)
{
	u64 words = (f->npages + FR_BITS - 1) / FR_BITS;
	u64 start, w;

	if (f->nfree == 0)
		return 0;
	start = f->hint / FR_BITS < words ? f->hint / FR_BITS : 0;
	for (u64 k = 0; k < words; k++) {
		w = start + k < words ? start + k : start + k - words;
		if (f->bitmap[w] != ~0ull) {
			u64 i = w * FR_BITS + (u64)__builtin_ctzll(~f->bitmap[w]);

			frames_set(f, i);
			f->nfree--;
			f->hint = i + 1;
			return f->base + i * PAGE_SIZE;
		}
	}
	return 0;	/* nfree disagreed with the bitmap; cannot happen */
}

/* First page index >= i whose address is a multiple of align, or false. */
static bool frames_next_aligned(const struct frames *f, u64 i, u64 align, u64 *out)
{
	u64 phys = f->base + i * PAGE_SIZE;
	u64 up = ALIGN_UP(phys, align);

	if (up < phys)
		return false;	/* wrapped */
	*out = (up - f->base) / PAGE_SIZE;
	return *out < f->npages;
}

u64 frames_alloc_contig(struct frames *f, u64 npages, u64 align)
{
	u64 i;

	if (npages == 0 || npages > f->nfree || !IS_POW2(align) || align < PAGE_SIZE)
		return 0;
	if (!frames_next_aligned(f, 0, align, &i))
		return 0;
	while (npages <= f->npages - i) {
		u64 k;

		for (k = 0; k < npages && !frames_test(f, i + k); k++)
			;
		if (k == npages) {
			for (k = 0; k < npages; k++)
				frames_set(f, i + k);
			f->nfree -= npages;
			return f->base + i * PAGE_SIZE;
		}
		/* Page i + k is in use: no run that contains it can work. */
		if (!frames_next_aligned(f, i + k + 1, align, &i))
			return 0;
	}
	return 0;
}

int frames_free(struct frames *f, u64 phys, u64 npages)
{
	u64 i;

	if (npages == 0 || phys % PAGE_SIZE || phys < f->base || phys == 0)
		return -EINVAL;
	i = (phys - f->base) / PAGE_SIZE;
	if (i >= f->npages || npages > f->npages - i)
		return -EINVAL;
	for (u64 k = 0; k < npages; k++)
		if (!frames_test(f, i + k))
			return -EINVAL;		/* double free: change nothing */
	for (u64 k = 0; k < npages; k++)
		frames_clear(f, i + k);
	f->nfree += npages;
	if (i < f->hint)
		f->hint = i;
	return 0;
}
