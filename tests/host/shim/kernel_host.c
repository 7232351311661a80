/* Host kernel services for code that links against lwIP (see kernel_host.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/mm.h"
#include "kernel/time.h"
#include "kernel_host.h"

static u64 clock_ns = 1000 * NSEC_PER_MSEC;	/* not 0: catches "0 means unset" bugs */
static long kmalloc_live;
static unsigned kmalloc_fail;
static u32 rng = 0x9e3779b9u;

void shim_clock_advance_ms(u64 ms)
{
	clock_ns += ms * NSEC_PER_MSEC;
}

u64 time_ns(void)
{
	return clock_ns;
}

long shim_kmalloc_live(void)
{
	return kmalloc_live;
}

void shim_kmalloc_fail_next(unsigned n)
{
	kmalloc_fail = n;
}

void *kmalloc(size_t size)
{
	void *p;

	if (kmalloc_fail) {
		kmalloc_fail--;
		return NULL;
	}
	p = malloc(size ? size : 1);
	if (p)
		kmalloc_live++;
	return p;
}

void *kzalloc(size_t size)
{
	void *p = kmalloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

void kfree(void *p)
{
	if (p) {
		kmalloc_live--;
		free(p);
	}
}

void *page_alloc(size_t npages)
{
	return calloc(npages, PAGE_SIZE);
}

void page_free(void *p, size_t npages)
{
	free(p);
}

void mm_get_stats(struct mm_stats *s)
{
	memset(s, 0, sizeof *s);
	s->usable_bytes = 48u << 20;
	s->total_frames = 12288;
	s->free_frames = 10000;
	s->heap_in_use = (u64)kmalloc_live * 64;
	s->heap_arena = 1u << 20;
}

int kprintf(const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!getenv("VIREO_TEST_LOG"))
		return 0;
	va_start(ap, fmt);
	n = vfprintf(stderr, fmt, ap);
	va_end(ap);
	return n;
}

void panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "panic: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

/* xorshift32: deterministic ISNs and ports, so runs repeat exactly. */
u32 random_u32(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}
