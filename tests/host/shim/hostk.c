/* hostk: the host stand-in for the kernel, linked into every host test and
 * fuzzer; see hostk.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arch.h>
#include "kernel/loop.h"
#include "kernel/console.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "tests/host/shim/hostk.h"

/* ---- clock ---- */

static u64 clock_ns = 5 * NSEC_PER_SEC;	/* not 0: catches "0 means unset" */
static u64 clock_step;
static void (*clock_hook)(void *arg);
static void *clock_hook_arg;
static bool clock_hook_running;

u64 time_ns(void)
{
	clock_ns += clock_step;
	if (clock_hook && !clock_hook_running) {
		clock_hook_running = true;
		clock_hook(clock_hook_arg);
		clock_hook_running = false;
	}
	return clock_ns;
}

void hk_on_clock(void (*fn)(void *arg), void *arg)
{
	clock_hook = fn;
	clock_hook_arg = arg;
}

u64 hk_now(void)
{
	return clock_ns;
}

void hk_clock_advance(u64 ns)
{
	clock_ns += ns;
}

void hk_clock_autostep(u64 step)
{
	clock_step = step;
}

static bool cpu_busy;

void hk_cpu_busy(bool busy)
{
	cpu_busy = busy;
}

/* Busy: all of the clock's time; idle: none of it. */
u64 loop_busy_ns(void)
{
	return cpu_busy ? clock_ns : 0;
}

/* ---- memory ---- */

static long pages_live, kmem_live;
static unsigned pages_skip, pages_fail, kmem_skip, kmem_fail;

static bool inject(unsigned *skip, unsigned *fail)
{
	if (*skip) {
		(*skip)--;
		return false;
	}
	if (*fail) {
		(*fail)--;
		return true;
	}
	return false;
}

void hk_fail_pages(unsigned skip, unsigned n)
{
	pages_skip = skip;
	pages_fail = n;
}

void hk_fail_kmem(unsigned skip, unsigned n)
{
	kmem_skip = skip;
	kmem_fail = n;
}

long hk_pages_live(void)
{
	return pages_live;
}

long hk_kmem_live(void)
{
	return kmem_live;
}

/* Page-aligned like the frame allocator's pages, sized exactly, so ASan
 * reports any access past the last page. */
void *page_alloc_raw(size_t npages)
{
	void *p;

	if (npages == 0 || inject(&pages_skip, &pages_fail))
		return NULL;
	p = aligned_alloc(PAGE_SIZE, npages * PAGE_SIZE);
	if (!p)
		return NULL;
	memset(p, 0xa5, npages * PAGE_SIZE);	/* "not zeroed": stale garbage */
	pages_live += (long)npages;
	return p;
}

void *page_alloc(size_t npages)
{
	void *p = page_alloc_raw(npages);

	if (p)
		memset(p, 0, npages * PAGE_SIZE);
	return p;
}

static void hk_dma_forget(const void *p);

void page_free(void *p, size_t npages)
{
	if (!p)
		return;
	hk_dma_forget(p);	/* kept DMA pages come back this way (hostbus.c) */
	pages_live -= (long)npages;
	free(p);
}

/* DMA-only pages (kernel/mm/dma.h): page_alloc'ed runs kept in a table so
 * dma_page_only() can answer; "phys" is the host address here. */
#define HK_DMA_RUNS 4096
static struct { u64 lo, hi; } dma_runs[HK_DMA_RUNS];

void *dma_pages_alloc(size_t npages)
{
	unsigned i;
	void *p;

	for (i = 0; i < HK_DMA_RUNS && dma_runs[i].hi; i++)
		;
	if (i == HK_DMA_RUNS)
		panic("hostk: more than %u DMA-only runs", HK_DMA_RUNS);
	p = page_alloc(npages);
	if (p) {
		dma_runs[i].lo = (u64)(uintptr_t)p;
		dma_runs[i].hi = dma_runs[i].lo + npages * PAGE_SIZE;
	}
	return p;
}

void dma_pages_free(void *p, size_t npages)
{
	unsigned i;

	if (!p)
		return;
	for (i = 0; i < HK_DMA_RUNS; i++)
		if (dma_runs[i].lo == (u64)(uintptr_t)p && dma_runs[i].hi) {
			if (dma_runs[i].hi != dma_runs[i].lo + npages * PAGE_SIZE)
				panic("hostk: dma_pages_free(%p, %zu): not the run's size", p, npages);
			dma_runs[i].lo = dma_runs[i].hi = 0;
			page_free(p, npages);
			return;
		}
	panic("hostk: dma_pages_free(%p) of pages not from dma_pages_alloc", p);
}

static void hk_dma_forget(const void *p)
{
	unsigned i;

	for (i = 0; i < HK_DMA_RUNS; i++)
		if (dma_runs[i].hi && dma_runs[i].lo == (u64)(uintptr_t)p)
			dma_runs[i].lo = dma_runs[i].hi = 0;
}

bool dma_page_only(u64 phys)
{
	unsigned i;

	for (i = 0; i < HK_DMA_RUNS; i++)
		if (phys >= dma_runs[i].lo && phys < dma_runs[i].hi)
			return true;
	return false;
}

void *kmalloc(size_t size)
{
	void *p;

	if (inject(&kmem_skip, &kmem_fail))
		return NULL;
	p = malloc(size ? size : 1);
	if (p)
		kmem_live++;
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
	if (!p)
		return;
	kmem_live--;
	free(p);
}

/* Fixed figures, with the heap in use following the live kmalloc blocks. */
void mm_get_stats(struct mm_stats *s)
{
	memset(s, 0, sizeof *s);
	s->usable_bytes = 48u << 20;
	s->total_frames = 12288;
	s->free_frames = 10000;
	s->heap_in_use = (u64)kmem_live * 64;
	s->heap_arena = 1u << 20;
}

/* ---- console, panic and entropy ---- */

#define LOG_LINES 64
static char log_ring[LOG_LINES][256];
static unsigned log_count;

int kprintf(const char *fmt, ...)
{
	va_list ap;
	char *line = log_ring[log_count++ % LOG_LINES];
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof log_ring[0], fmt, ap);
	va_end(ap);
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "kprintf: %s", line);
	return n;
}

unsigned hk_kprintf_count(void)
{
	return log_count;
}

const char *hk_kprintf_last(void)
{
	return log_count ? log_ring[(log_count - 1) % LOG_LINES] : "";
}

void hk_log_reset(void)
{
	log_count = 0;
	memset(log_ring, 0, sizeof log_ring);
}

const char *hk_log_line(unsigned i)
{
	return i < log_count && log_count - i <= LOG_LINES ? log_ring[i % LOG_LINES] : "";
}

bool hk_log_contains(const char *needle)
{
	unsigned i;

	for (i = 0; i < LOG_LINES && i < log_count; i++)
		if (strstr(log_ring[i], needle))
			return true;
	return false;
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

/* klog(): keeps the last line and a count (shim_klog_*, arch.h), so tests
 * can check "logs once" contracts. */
static unsigned klog_count;
static char klog_last[512];

void klog(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(klog_last, sizeof klog_last, fmt, ap);
	va_end(ap);
	klog_count++;
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "klog: %s\n", klog_last);
}

unsigned shim_klog_count(void)
{
	return klog_count;
}

const char *shim_klog_last(void)
{
	return klog_last;
}

void shim_klog_reset(void)
{
	klog_count = 0;
	klog_last[0] = '\0';
}

/* Deterministic: runs repeat exactly. */
static u64 rng = 0x9e3779b97f4a7c15ull;

u64 random_u64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static u64 entropy_bytes;

void random_add_entropy(const void *buf, size_t len)
{
	(void)buf;
	entropy_bytes += len;
}

u64 hk_entropy_bytes(void)
{
	return entropy_bytes;
}

u32 random_u32(void)
{
	return (u32)random_u64();
}

void random_bytes(void *buf, size_t len)
{
	u8 *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (u8)random_u64();
}

/* ---- event loop: kernel/loop.c's queues, run without halting ---- */

unsigned hk_work_pending(void)
{
	return loop_work_count();
}

unsigned hk_run(unsigned limit)
{
	unsigned runs = 0;

	for (;;) {
		runs += loop_run_work(limit - runs);
		if (runs >= limit || !loop_run_timers(clock_ns))
			return runs;
	}
}

u64 hk_next_deadline(void)
{
	return loop_next_deadline();
}

bool hk_run_timers_until(u64 max_ns)
{
	u64 dl = loop_next_deadline(), end = clock_ns + max_ns;

	if (dl == UINT64_MAX || dl > end) {
		clock_ns = end;
		hk_run(100000);
		return false;
	}
	if (dl > clock_ns)
		clock_ns = dl;
	hk_run(100000);
	return true;
}

void hk_loop_reset(void)
{
	loop_reset();
}

size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);

	if (size) {
		size_t k = n < size - 1 ? n : size - 1;

		memcpy(dst, src, k);
		dst[k] = '\0';
	}
	return n;
}

