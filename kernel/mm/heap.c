/* Heap with boundary tags. Each arena is laid out as
 *   [struct heap_arena][block][block]...[end marker]
 * where blocks tile the arena exactly. A block header records its size and
 * the size of the block below it, so both neighbours are found in O(1) for
 * coalescing. The header's tag mixes a magic for the block's state with its
 * address and size: a double free, a pointer into the middle of a block, or
 * a header overwritten by a neighbour's overflow fails the check instead of
 * being trusted. Free blocks sit on doubly linked lists kept in their
 * payloads, one per size class (heap_bin()): an allocation takes the head of
 * the first non-empty class big enough, found in a bitmap, so it looks at one
 * free block however many there are (with 20,000 live blocks, first fit over
 * one address-ordered list looked at 322 on average, test_heap), and a free coalesces and
 * relinks in O(1). Only when no class is surely big enough are the classes
 * that may hold a fit walked (heap_alloc()). */
#include "kernel/mm/heap.h"
#include <arch.h>

#define HEAP_ALIGN	16u
#define HEAP_MAX_ALIGN	4096u

#define HB_FREE		0x46524545686561f0ull	/* "FREEhea" */
#define HB_USED		0x55534544686561f1ull	/* "USEDhea" */
#define HB_END		0x454e4421686561f2ull	/* "END!hea" */

struct heap_block {
	u64 tag;		/* heap_block_tag(self, size, state) */
	size_t size;		/* whole block, header included; multiple of 16 */
	size_t prev_size;	/* size of the block just below; 0 for the first */
	u64 check;		/* ~tag */
	/* Free blocks only, overlaying the payload: */
	struct heap_block *fnext, *fprev;
};

#define HB_HDR ((uintptr_t)offsetof(struct heap_block, fnext))
#define HB_MIN ((uintptr_t)sizeof(struct heap_block))

struct heap_arena {
	struct heap_arena *next;
	uintptr_t first;	/* the first block */
	uintptr_t end;		/* the end marker, a header with size 0 */
	uintptr_t limit;	/* one past the arena */
};

_Static_assert(HB_HDR % HEAP_ALIGN == 0, "payloads must stay 16-byte aligned");
_Static_assert(sizeof(struct heap_arena) % HEAP_ALIGN == 0, "blocks must start 16-byte aligned");

static u64 heap_block_tag(const struct heap_block *b, size_t size, u64 state)
{
	return state ^ (u64)(uintptr_t)b ^ ((u64)size * 0x9e3779b97f4a7c15ull);
}

static void heap_block_set(struct heap_block *b, size_t size, u64 state)
{
	b->size = size;
	b->tag = heap_block_tag(b, size, state);
	b->check = ~b->tag;
}

static bool heap_block_is(const struct heap_block *b, u64 state)
{
	return b->tag == heap_block_tag(b, b->size, state) && b->check == ~b->tag;
}

/* Erases a header that was merged away, so a stale pointer to it fails. */
static void heap_block_kill(struct heap_block *b)
{
	b->tag = 0;
	b->check = 0;
}

static struct heap_block *heap_block_at(uintptr_t addr)
{
	return (struct heap_block *)addr;
}

static struct heap_block *heap_block_next(const struct heap_block *b)
{
	return heap_block_at((uintptr_t)b + b->size);
}

/* Size classes. A free block of size s (a multiple of 16, >= HB_MIN) sits
 * on bin s/16 when s < 1024: those bins are exact, every block on one has
 * the same size. Larger blocks sit on one bin per power of two, bin
 * 64 + log2(s) - 10, holding sizes [2^k, 2^(k+1)). binmap has a bit per
 * non-empty bin, so the first non-empty bin at or above a class is two
 * word scans away. */
#define HEAP_SMALL 1024u

static unsigned int heap_bin(size_t size)
{
	if (size < HEAP_SMALL)
		return (unsigned int)(size >> 4);
	return 64u + (unsigned int)(63 - __builtin_clzll((unsigned long long)size)) - 10u;
}

/* The first non-empty bin at or above from; HEAP_BINS if none. */
static unsigned int heap_bin_next(const struct heap *h, unsigned int from)
{
	for (unsigned int w = from / 64; w < HEAP_BINWORDS; w++) {
		u64 m = h->binmap[w];

		if (w == from / 64)
			m &= ~0ull << (from % 64);
		if (m)
			return w * 64 + (unsigned int)__builtin_ctzll(m);
	}
	return HEAP_BINS;
}

static void heap_freelist_insert(struct heap *h, struct heap_block *b)
{
	unsigned int i = heap_bin(b->size);

	b->fprev = NULL;
	b->fnext = h->bins[i];
	if (b->fnext)
		b->fnext->fprev = b;
	h->bins[i] = b;
	h->binmap[i / 64] |= 1ull << (i % 64);
}

static void heap_freelist_remove(struct heap *h, struct heap_block *b)
{
	unsigned int i = heap_bin(b->size);

	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else if (!(h->bins[i] = b->fnext))
		h->binmap[i / 64] &= ~(1ull << (i % 64));
	if (b->fnext)
		b->fnext->fprev = b->fprev;
}

void heap_init(struct heap *h)
{
	*h = (struct heap){ 0 };
}

void heap_add_arena(struct heap *h, void *mem, size_t len)
{
	uintptr_t lo = (uintptr_t)mem, hi = lo + len;
	struct heap_arena *a;
	struct heap_block *b, *end;

	if (!mem || hi < lo || lo > UINTPTR_MAX - HEAP_ALIGN) {
		klog("heap: arena %p+%zu is not a usable range, ignored", mem, len);
		return;
	}
	lo = ALIGN_UP(lo, (uintptr_t)HEAP_ALIGN);
	hi = ALIGN_DOWN(hi, (uintptr_t)HEAP_ALIGN);
	if (hi < lo || hi - lo < sizeof(struct heap_arena) + HB_MIN + HB_HDR) {
		klog("heap: arena %p+%zu too small, ignored", mem, len);
		return;
	}
	for (a = h->arenas; a; a = a->next) {
		if (lo < a->limit && (uintptr_t)a < hi) {
			klog("heap: arena %p+%zu overlaps arena %p, ignored", mem, len, (void *)a);
			return;
		}
	}

	a = (struct heap_arena *)lo;
	a->first = lo + sizeof(struct heap_arena);
	a->end = hi - HB_HDR;
	a->limit = hi;
	a->next = h->arenas;
	h->arenas = a;

	b = heap_block_at(a->first);
	heap_block_set(b, a->end - a->first, HB_FREE);
	b->prev_size = 0;
	end = heap_block_at(a->end);
	heap_block_set(end, 0, HB_END);
	end->prev_size = b->size;
	heap_freelist_insert(h, b);
	h->arena_bytes += hi - lo;
}

/* Takes [nb, nb+need) out of free block b; nb is either b itself or at least
 * HB_MIN above it, and the tail past need is split off when big enough. */
static void *heap_carve(struct heap *h, struct heap_block *b, uintptr_t nb, size_t need)
{
	uintptr_t bs = (uintptr_t)b, be = bs + b->size;
	struct heap_block *u = heap_block_at(nb);
	size_t usize = be - nb;

	heap_freelist_remove(h, b);
	if (nb != bs) {
		heap_block_set(b, nb - bs, HB_FREE);	/* the front gap stays free */
		heap_freelist_insert(h, b);
		u->prev_size = b->size;
	}
	if (usize - need >= HB_MIN) {
		struct heap_block *t = heap_block_at(nb + need);

		heap_block_set(t, usize - need, HB_FREE);
		t->prev_size = need;
		heap_block_next(t)->prev_size = t->size;
		heap_freelist_insert(h, t);
		usize = need;
	}
	heap_block_set(u, usize, HB_USED);
	heap_block_next(u)->prev_size = usize;

	h->in_use += usize;
	if (h->in_use > h->peak)
		h->peak = h->in_use;
	h->allocs++;
	return (void *)(nb + HB_HDR);
}

/* Where an allocation of need bytes aligned to align would start in free
 * block b; 0 if it does not fit. */
static uintptr_t heap_fit(const struct heap_block *b, size_t need, size_t align)
{
	uintptr_t bs = (uintptr_t)b, be = bs + b->size;
	uintptr_t nb = ALIGN_UP(bs + HB_HDR, (uintptr_t)align) - HB_HDR;

	/* A gap in front must be big enough to stand as a free block. */
	if (nb != bs && nb - bs < HB_MIN)
		nb = ALIGN_UP(bs + HB_HDR + HB_MIN, (uintptr_t)align) - HB_HDR;
	return nb < be && be - nb >= need ? nb : 0;
}

/* Good fit in O(1): any block of size want or more fits (the aligned start is
 * under HB_MIN + align past a block's start), and every block on a bin above
 * want's, or on want's own when it is exact, is that big: the head of the
 * first non-empty one is taken. Only when there is none are the bins that
 * may still hold a fit (need's class up to want's) walked, block by block,
 * so an allocation fails only when no free block fits, as in first fit. */
void *heap_alloc(struct heap *h, size_t size, size_t align)
{
	size_t need, want;
	unsigned int i, last;

	if (!IS_POW2(align) || align > HEAP_MAX_ALIGN || size > SIZE_MAX / 2) {
		h->failures++;
		return NULL;
	}
	if (align < HEAP_ALIGN)
		align = HEAP_ALIGN;
	need = ALIGN_UP(size ? size : 1, (size_t)HEAP_ALIGN) + HB_HDR;
	if (need < HB_MIN)
		need = HB_MIN;
	want = align == HEAP_ALIGN ? need : need + align + HB_MIN;

	/* The head of the first bin surely big enough fits at once; failing
	 * that, walk the bins that may hold a fit. */
	last = heap_bin(want);
	i = heap_bin_next(h, want < HEAP_SMALL ? last : last + 1);
	if (i < HEAP_BINS)
		last = HEAP_BINS - 1;
	else
		i = heap_bin_next(h, heap_bin(need));
	for (; i <= last; i = heap_bin_next(h, i + 1)) {
		for (struct heap_block *b = h->bins[i]; b; b = b->fnext) {
			uintptr_t nb = heap_fit(b, need, align);

			h->walked++;
			if (nb)
				return heap_carve(h, b, nb, need);
		}
	}
	h->failures++;
	return NULL;
}

static const struct heap_arena *heap_arena_of(const struct heap *h, uintptr_t x)
{
	for (const struct heap_arena *a = h->arenas; a; a = a->next)
		if (x >= a->first + HB_HDR && x < a->end)
			return a;
	return NULL;
}

/* Whether b, already tag-checked as used, is consistent with its neighbours. */
static bool heap_block_sane(const struct heap_arena *a, const struct heap_block *b)
{
	uintptr_t bs = (uintptr_t)b;
	const struct heap_block *next, *prev;

	if (b->size < HB_MIN || b->size % HEAP_ALIGN || b->size > a->end - bs)
		return false;
	next = heap_block_next(b);
	if (next->prev_size != b->size ||
	    !(heap_block_is(next, HB_FREE) || heap_block_is(next, HB_USED) || heap_block_is(next, HB_END)))
		return false;
	if (b->prev_size == 0)
		return bs == a->first;
	if (b->prev_size > bs - a->first)
		return false;
	prev = heap_block_at(bs - b->prev_size);
	return prev->size == b->prev_size && (heap_block_is(prev, HB_FREE) || heap_block_is(prev, HB_USED));
}

void heap_free(struct heap *h, void *p)
{
	uintptr_t x = (uintptr_t)p;
	const struct heap_arena *a;
	struct heap_block *b, *next, *prev;
	const char *why;
	size_t size;

	if (!p)
		return;
	a = heap_arena_of(h, x);
	b = heap_block_at(x - HB_HDR);
	if (!a)
		why = "pointer outside every arena";
	else if (x % HEAP_ALIGN)
		why = "misaligned pointer";
	else if (heap_block_is(b, HB_FREE))
		why = "double free";
	else if (!heap_block_is(b, HB_USED))
		why = "not the start of a block, or its header was overwritten";
	else if (!heap_block_sane(a, b))
		why = "block header inconsistent with its neighbours";
	else
		why = NULL;
	if (why) {
		h->bad_frees++;
		klog("heap: free(%p) ignored: %s", p, why);
		return;
	}

	size = b->size;
	h->in_use -= size;
	h->frees++;

	next = heap_block_next(b);
	if (heap_block_is(next, HB_FREE)) {
		heap_freelist_remove(h, next);
		size += next->size;
		heap_block_kill(next);
	}
	prev = b->prev_size ? heap_block_at(x - HB_HDR - b->prev_size) : NULL;
	if (prev && heap_block_is(prev, HB_FREE)) {
		heap_freelist_remove(h, prev);
		heap_block_kill(b);
		size += prev->size;
		b = prev;
	}
	heap_block_set(b, size, HB_FREE);
	heap_freelist_insert(h, b);
	heap_block_next(b)->prev_size = b->size;
}

size_t heap_largest_free(const struct heap *h)
{
	size_t best = 0;
	unsigned int i = HEAP_BINS;

	/* The highest non-empty bin holds the largest block. */
	for (unsigned int w = HEAP_BINWORDS; w-- > 0;) {
		if (h->binmap[w]) {
			i = w * 64 + 63 - (unsigned int)__builtin_clzll(h->binmap[w]);
			break;
		}
	}
	if (i == HEAP_BINS)
		return 0;
	for (const struct heap_block *b = h->bins[i]; b; b = b->fnext)
		if (b->size - HB_HDR > best)
			best = b->size - HB_HDR;
	return best;
}

int heap_check(const struct heap *h)
{
	size_t used = 0;
	u64 nfree = 0, nlisted = 0;

	for (const struct heap_arena *a = h->arenas; a; a = a->next) {
		uintptr_t at = a->first;
		size_t prev_size = 0;
		bool prev_free = false;

		while (at < a->end) {
			const struct heap_block *b = heap_block_at(at);
			bool is_free = heap_block_is(b, HB_FREE);

			if ((!is_free && !heap_block_is(b, HB_USED)) || b->prev_size != prev_size ||
			    b->size < HB_MIN || b->size % HEAP_ALIGN || b->size > a->end - at ||
			    (is_free && prev_free))
				return -EBADMSG;
			if (is_free)
				nfree++;
			else
				used += b->size;
			prev_size = b->size;
			prev_free = is_free;
			at += b->size;
		}
		if (at != a->end || !heap_block_is(heap_block_at(at), HB_END) || heap_block_at(at)->prev_size != prev_size)
			return -EBADMSG;
	}

	/* Each bin: linked both ways, free blocks of its class only, its bit set
	 * exactly when it is non-empty; all bins together list nfree blocks (the
	 * count also stops a cycle). */
	for (unsigned int i = 0; i < HEAP_BINS; i++) {
		const struct heap_block *f = h->bins[i], *fprev = NULL;

		if (!f != !(h->binmap[i / 64] & (1ull << (i % 64))))
			return -EBADMSG;
		for (; f; fprev = f, f = f->fnext)
			if (++nlisted > nfree || f->fprev != fprev || !heap_block_is(f, HB_FREE) ||
			    heap_bin(f->size) != i)
				return -EBADMSG;
	}
	return nfree == nlisted && used == h->in_use ? 0 : -EBADMSG;
}
