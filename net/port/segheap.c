/* Segregated-fit heap: see segheap.h. */
#include "net/port/segheap.h"

#define KIND_FREE	0xffffu	/* page in the pool */
#define KIND_RUN	0xfffeu	/* first page of a multi-page block */
#define KIND_TAIL	0xfffdu	/* later page of one; run = the head's index */

/* Slot sizes, multiples of 8. Up to 128 in steps of 16 (so a request above
 * 16 bytes wastes at most 15); above, each step is at most 1.26x the one
 * below, and from 512 on the sizes are SEGHEAP_PAGE / k rounded down to 8,
 * so a page of them wastes less than 8 x k bytes. 320 is a tcp_pcb with
 * lwIP's 8-byte size header (296 + 8, rounded), 48 a tcp_seg (32 + 8). */
static const u16 class_size[SEGHEAP_NCLASS] = {
	16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 288, 320, 384, 448,
	512, 584, 680, 816, 1024, 1168, 1360, 1632, 2048,
};

u32 segheap_class_size(u32 c)
{
	return c < SEGHEAP_NCLASS ? class_size[c] : 0;
}

static u32 segheap_class_for(size_t n)
{
	u32 c = 0;

	while (class_size[c] < n)
		c++;
	return c;
}

size_t segheap_block_bytes(size_t n)
{
	if (n == 0)
		n = 1;
	if (n <= SEGHEAP_SMALL_MAX)
		return class_size[segheap_class_for(n)];
	return ALIGN_UP(n, (size_t)SEGHEAP_PAGE);
}

static size_t segheap_meta_bytes(u32 npages)
{
	size_t d = ALIGN_UP((size_t)npages * sizeof(struct segheap_page), (size_t)SEGHEAP_ALIGN);

	return d + ALIGN_UP((size_t)npages, (size_t)64) / 8;
}

size_t segheap_region_bytes(u32 npages)
{
	return segheap_meta_bytes(npages) + (size_t)npages * SEGHEAP_PAGE;
}

u32 segheap_init(struct segheap *h, void *mem, size_t len)
{
	u32 n, i;
	u8 *m = mem;

	*h = (struct segheap){0};
	n = (u32)(len / SEGHEAP_PAGE);
	while (n && segheap_region_bytes(n) > len)
		n--;
	h->npages = n;
	for (i = 0; i < SEGHEAP_NCLASS; i++)
		h->partial[i] = SEGHEAP_NONE;
	for (i = 0; i <= SEGHEAP_SMALL_MAX / SEGHEAP_ALIGN; i++)
		h->class_of[i] = (u8)segheap_class_for(i ? (size_t)i * SEGHEAP_ALIGN : 1);
	if (!n)
		return 0;
	h->pg = (struct segheap_page *)m;
	h->freemap = (u64 *)(m + ALIGN_UP((size_t)n * sizeof(struct segheap_page), (size_t)SEGHEAP_ALIGN));
	h->base = m + segheap_meta_bytes(n);
	for (i = 0; i < n; i++) {
		h->pg[i] = (struct segheap_page){.kind = KIND_FREE, .next = SEGHEAP_NONE,
						 .prev = SEGHEAP_NONE};
	}
	for (i = 0; i < ALIGN_UP(n, 64u) / 64; i++)
		h->freemap[i] = ~0ull;
	if (n % 64)
		h->freemap[n / 64] = (1ull << (n % 64)) - 1;
	return n;
}

static void segheap_map_set(struct segheap *h, u32 i, bool free)
{
	if (free)
		h->freemap[i / 64] |= 1ull << (i % 64);
	else
		h->freemap[i / 64] &= ~(1ull << (i % 64));
}

static bool segheap_map_free(const struct segheap *h, u32 i)
{
	return (h->freemap[i / 64] >> (i % 64)) & 1;
}

static void segheap_pages_taken(struct segheap *h, u32 n)
{
	h->pages_used += n;
	if (h->pages_used > h->pages_peak)
		h->pages_peak = h->pages_used;
}

/* Lowest free page, or NONE: at most npages / 64 words looked at. */
static u32 segheap_page_take(struct segheap *h)
{
	u32 w, words = ALIGN_UP(h->npages, 64u) / 64;

	for (w = 0; w < words; w++) {
		if (h->freemap[w]) {
			u32 i = w * 64 + (u32)__builtin_ctzll(h->freemap[w]);

			segheap_map_set(h, i, false);
			segheap_pages_taken(h, 1);
			return i;
		}
	}
	return SEGHEAP_NONE;
}

/* Lowest run of n free pages, or NONE (first fit over the bitmap). */
static u32 segheap_run_take(struct segheap *h, u32 n)
{
	u32 i = 0, start = 0, len = 0, j;

	while (i < h->npages) {
		if (i % 64 == 0 && len == 0 && h->freemap[i / 64] == 0) {
			i += 64;
			continue;
		}
		if (segheap_map_free(h, i)) {
			if (len++ == 0)
				start = i;
			if (len == n)
				break;
		} else {
			len = 0;
		}
		i++;
	}
	if (len < n)
		return SEGHEAP_NONE;
	for (j = start; j < start + n; j++) {
		segheap_map_set(h, j, false);
		h->pg[j].kind = KIND_TAIL;
		h->pg[j].run = start;
	}
	h->pg[start].kind = KIND_RUN;
	h->pg[start].run = n;
	segheap_pages_taken(h, n);
	return start;
}

static void segheap_page_give(struct segheap *h, u32 i, u32 n)
{
	u32 j;

	for (j = i; j < i + n; j++) {
		h->pg[j] = (struct segheap_page){.kind = KIND_FREE, .next = SEGHEAP_NONE,
						 .prev = SEGHEAP_NONE};
		segheap_map_set(h, j, true);
	}
	h->pages_used -= n;
}

static void segheap_list_push(struct segheap *h, u32 c, u32 i)
{
	struct segheap_page *d = &h->pg[i];

	d->prev = SEGHEAP_NONE;
	d->next = h->partial[c];
	if (d->next != SEGHEAP_NONE)
		h->pg[d->next].prev = i;
	h->partial[c] = i;
}

static void segheap_list_unlink(struct segheap *h, u32 c, u32 i)
{
	struct segheap_page *d = &h->pg[i];

	if (d->prev != SEGHEAP_NONE)
		h->pg[d->prev].next = d->next;
	else
		h->partial[c] = d->next;
	if (d->next != SEGHEAP_NONE)
		h->pg[d->next].prev = d->prev;
	d->next = d->prev = SEGHEAP_NONE;
}

static void segheap_account(struct segheap *h, size_t bytes)
{
	h->allocs++;
	h->bytes += bytes;
	if (h->bytes > h->bytes_peak)
		h->bytes_peak = h->bytes;
}

void *segheap_alloc(struct segheap *h, size_t n)
{
	struct segheap_page *d;
	u32 c, i, slot, size;
	u8 *p;

	if (n == 0)
		n = 1;
	if (n > SEGHEAP_SMALL_MAX) {
		u32 pages;

		if (n > (size_t)h->npages * SEGHEAP_PAGE)
			goto fail;
		pages = (u32)((n + SEGHEAP_PAGE - 1) / SEGHEAP_PAGE);
		i = segheap_run_take(h, pages);
		if (i == SEGHEAP_NONE)
			goto fail;
		segheap_account(h, (size_t)pages * SEGHEAP_PAGE);
		return h->base + (size_t)i * SEGHEAP_PAGE;
	}
	c = h->class_of[(n + SEGHEAP_ALIGN - 1) / SEGHEAP_ALIGN];
	size = class_size[c];
	i = h->partial[c];
	if (i == SEGHEAP_NONE) {
		i = segheap_page_take(h);
		if (i == SEGHEAP_NONE)
			goto fail;
		d = &h->pg[i];
		d->kind = (u16)c;
		d->slots = (u16)(SEGHEAP_PAGE / size);
		segheap_list_push(h, c, i);
	}
	d = &h->pg[i];
	if (d->free) {
		p = d->free;
		d->free = *(u8 **)p;
	} else {
		p = h->base + (size_t)i * SEGHEAP_PAGE + (size_t)d->bump * size;
		d->bump++;
	}
	slot = (u32)((size_t)(p - (h->base + (size_t)i * SEGHEAP_PAGE)) / size);
	d->live[slot / 64] |= 1ull << (slot % 64);
	if (++d->used == d->slots)
		segheap_list_unlink(h, c, i);
	h->class_live[c]++;
	segheap_account(h, size);
	return p;
fail:
	h->fails++;
	return NULL;
}

size_t segheap_free(struct segheap *h, void *ptr)
{
	struct segheap_page *d;
	size_t off;
	u32 i, slot, size;
	u8 *p = ptr;

	if (p == NULL)
		return 0;
	if (h->npages == 0 || p < h->base || p >= h->base + (size_t)h->npages * SEGHEAP_PAGE)
		goto bad;
	off = (size_t)(p - h->base);
	i = (u32)(off / SEGHEAP_PAGE);
	off %= SEGHEAP_PAGE;
	d = &h->pg[i];
	if (d->kind == KIND_RUN) {
		size_t bytes = (size_t)d->run * SEGHEAP_PAGE;

		if (off != 0)
			goto bad;
		h->bytes -= bytes;
		h->frees++;
		segheap_page_give(h, i, d->run);
		return bytes;
	}
	if (d->kind >= SEGHEAP_NCLASS)	/* free page or inside a run */
		goto bad;
	size = class_size[d->kind];
	slot = (u32)(off / size);
	if (off % size || slot >= d->bump || !((d->live[slot / 64] >> (slot % 64)) & 1))
		goto bad;
	d->live[slot / 64] &= ~(1ull << (slot % 64));
	*(u8 **)p = d->free;
	d->free = p;
	h->class_live[d->kind]--;
	h->bytes -= size;
	h->frees++;
	if (d->used-- == d->slots)
		segheap_list_push(h, d->kind, i);
	if (d->used == 0) {
		segheap_list_unlink(h, d->kind, i);
		segheap_page_give(h, i, 1);
	}
	return size;
bad:
	h->bad_frees++;
	return 0;
}
