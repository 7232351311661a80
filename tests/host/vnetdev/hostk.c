/* hostk: host stand-ins for the kernel and the virtio core; see hostk.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio.h"
#include "drivers/virtio_core.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/random.h"
#include "kernel/time.h"
#include "tests/host/fake_dev.h"
#include "tests/host/vnetdev/hostk.h"

/* ---- clock ---- */

static u64 clock_ns = 5 * NSEC_PER_SEC;	/* not 0: catches "0 means unset" */
static u64 clock_step;

u64 time_ns(void)
{
	clock_ns += clock_step;
	return clock_ns;
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

void page_free(void *p, size_t npages)
{
	if (!p)
		return;
	pages_live -= (long)npages;
	free(p);
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

/* The kernel's device addresses are identity; here they are XORed as
 * fake_dev expects, so a VA handed to the device unmapped is caught. */
dma_addr_t dma_map(const void *va, size_t len)
{
	return fake_dma_map(NULL, va, len);
}

/* ---- console and entropy ---- */

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

bool hk_log_contains(const char *needle)
{
	unsigned i;

	for (i = 0; i < LOG_LINES && i < log_count; i++)
		if (strstr(log_ring[i], needle))
			return true;
	return false;
}

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

/* The kernel's device registry is drivers/virtio.c's; the host has none. */
struct virtio_dev *virtio_devices(void)
{
	return NULL;
}

u32 random_u32(void)
{
	return (u32)random_u64();
}

/* ---- event loop (kernel/loop.c without the halting) ---- */

static struct work *work_head, **work_tail = &work_head;
static struct timerq timers;

void work_init(struct work *w, void (*fn)(void *), void *arg)
{
	w->fn = fn;
	w->arg = arg;
	w->next = NULL;
	w->queued = false;
}

void work_queue(struct work *w)
{
	if (w->queued)
		return;
	w->queued = true;
	w->next = NULL;
	*work_tail = w;
	work_tail = &w->next;
}

bool work_cancel(struct work *w)
{
	struct work **pp;

	for (pp = &work_head; *pp; pp = &(*pp)->next) {
		if (*pp != w)
			continue;
		*pp = w->next;
		if (!*pp)
			work_tail = pp;
		w->queued = false;
		return true;
	}
	return false;
}

void timer_start(struct timer *t, u64 deadline_ns)
{
	timerq_add(&timers, t, deadline_ns);
}

bool timer_stop(struct timer *t)
{
	return timerq_cancel(&timers, t);
}

unsigned hk_work_pending(void)
{
	unsigned n = 0;

	for (struct work *w = work_head; w; w = w->next)
		n++;
	return n;
}

unsigned hk_run(unsigned limit)
{
	unsigned runs = 0;

	for (;;) {
		while (runs < limit && work_head) {
			struct work *w = work_head;

			work_head = w->next;
			if (!work_head)
				work_tail = &work_head;
			w->queued = false;
			runs++;
			w->fn(w->arg);
		}
		if (runs >= limit || !timerq_run(&timers, clock_ns))
			return runs;
	}
}

u64 hk_next_deadline(void)
{
	return timerq_next(&timers);
}

bool hk_run_timers_until(u64 max_ns)
{
	u64 dl = timerq_next(&timers), end = clock_ns + max_ns;

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
	while (work_head)
		work_cancel(work_head);
	timerq_init(&timers);
}

/* ---- virtio core (drivers/virtio.c, minus PCI and the driver table) ---- */

static unsigned broken_count;
static char broken_why[128];
static struct virtio_dev *config_dev;
static struct work config_work;

unsigned hk_broken_count(void)
{
	return broken_count;
}

const char *hk_broken_why(void)
{
	return broken_why;
}

void virtio_set_broken(struct virtio_dev *d, const char *why)
{
	if (d->broken)
		return;
	d->broken = true;
	broken_count++;
	snprintf(broken_why, sizeof broken_why, "%s", why);
	kprintf("virtio%u: device broken: %s\n", d->index, why);
}

void hk_vq_interrupt(struct virtio_vq *q)
{
	virtio_vq_interrupt(q);
}

int hk_probe(struct virtio_dev *d)
{
	return virtio_core_probe(d, vnet_host_driver);
}

void hk_remove(struct virtio_dev *d)
{
	virtio_core_remove(d);
}

/* Kept memory is recorded so a test can check what was kept and free it
 * once the simulated device is gone. */
#define KEPT_MAX 1024
static struct {
	void *p;
	size_t pages;
} kept[KEPT_MAX];
static unsigned nkept;
static long kept_pages;

void virtio_keep_forever(void *p, size_t npages)
{
	if (!p)
		return;
	if (nkept == KEPT_MAX) {
		fprintf(stderr, "hostk: more than %u kept blocks\n", KEPT_MAX);
		abort();
	}
	kept[nkept].p = p;
	kept[nkept].pages = npages;
	nkept++;
	kept_pages += (long)npages;
}

long hk_kept_pages(void)
{
	return kept_pages;
}

unsigned hk_kept_blocks(void)
{
	return nkept;
}

void hk_free_kept(void)
{
	while (nkept) {
		nkept--;
		if (kept[nkept].pages)
			page_free(kept[nkept].p, kept[nkept].pages);
		else
			kfree(kept[nkept].p);
	}
	kept_pages = 0;
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

static void config_changed(void *arg)
{
	struct virtio_dev *d = config_dev;

	(void)arg;
	if (!d || !d->driver)
		return;
	if (d->ops->get_status(d) & VIRTIO_S_NEEDS_RESET) {
		d->resets++;
		hk_remove(d);
		if (!d->dead)	/* as drivers/virtio.c: a dead device stays FAILED */
			hk_probe(d);
		return;
	}
	if (d->driver->config_changed)
		d->driver->config_changed(d);
}

void hk_config_interrupt(struct virtio_dev *d)
{
	if (!config_work.fn)
		work_init(&config_work, config_changed, NULL);
	config_dev = d;
	work_queue(&config_work);
}
