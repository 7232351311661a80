/* hostk: host stand-ins for the kernel and the virtio core; see hostk.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio.h"
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

static void add_status(struct virtio_dev *d, u8 bits)
{
	d->ops->set_status(d, d->ops->get_status(d) | bits);
}

static dma_addr_t vq_dma_map(void *ctx, const void *va, size_t len)
{
	return dma_map(va, len);
}

static void vq_notify(void *ctx, u32 data)
{
	struct virtio_vq *q = ctx;

	q->vdev->ops->notify(q, data);
}

struct virtio_vq *virtio_setup_vq(struct virtio_dev *d, u16 idx, u16 num_hint,
				  void (*callback)(struct virtio_vq *q), void *priv)
{
	struct virtq_config cfg = { 0 };
	struct virtio_vq *q;
	size_t ring_bytes, priv_bytes;
	u16 max, num;

	if (idx >= VIRTIO_MAX_VQS || d->vqs[idx])
		return NULL;
	max = d->ops->queue_max(d, idx);
	if (max == 0)
		return NULL;
	cfg.packed = virtio_has(d, VIRTIO_F_RING_PACKED);
	if (d->ops->queue_size_fixed(d)) {
		num = max;
	} else {
		num = MIN(max, (u16)VIRTQ_MAX_SIZE);
		if (num_hint)
			num = MIN(num, num_hint);
		if (!cfg.packed)
			while (num & (num - 1))
				num &= (u16)(num - 1);
	}
	cfg.num = num;
	cfg.index = idx;
	cfg.event_idx = virtio_has(d, VIRTIO_F_EVENT_IDX);
	cfg.indirect = virtio_has(d, VIRTIO_F_INDIRECT_DESC);
	cfg.in_order = virtio_has(d, VIRTIO_F_IN_ORDER);
	cfg.notification_data = virtio_has(d, VIRTIO_F_NOTIFICATION_DATA);
	cfg.weak_barriers = !virtio_has(d, VIRTIO_F_ORDER_PLATFORM);
	cfg.dma_map = vq_dma_map;
	cfg.notify = vq_notify;
	if (virtq_mem_size(&cfg, &ring_bytes, &priv_bytes) < 0)
		return NULL;
	q = kzalloc(sizeof(*q));
	if (!q)
		return NULL;
	cfg.ctx = q;
	q->vdev = d;
	q->index = idx;
	q->num = num;
	q->callback = callback;
	q->priv = priv;
	q->vector = -1;
	q->msix_entry = 0xffff;
	q->ring_pages = ALIGN_UP(ring_bytes, (size_t)PAGE_SIZE) / PAGE_SIZE;
	q->ring_mem = page_alloc(q->ring_pages);
	q->priv_mem = kzalloc(priv_bytes);
	d->vqs[idx] = q;
	d->nvqs = MAX(d->nvqs, (u16)(idx + 1));
	if (!q->ring_mem || !q->priv_mem || virtq_init(&q->vq, &cfg, q->ring_mem, q->priv_mem) < 0 ||
	    d->ops->queue_setup(d, q) < 0)
		return NULL;	/* freed with the other queues on unwind */
	q->live = true;
	return q;
}

static void free_vqs(struct virtio_dev *d)
{
	for (u16 i = 0; i < VIRTIO_MAX_VQS; i++) {
		struct virtio_vq *q = d->vqs[i];

		if (!q)
			continue;
		page_free(q->ring_mem, q->ring_pages);
		kfree(q->priv_mem);
		kfree(q);
		d->vqs[i] = NULL;
	}
	d->nvqs = 0;
}

int virtio_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 len)
{
	u8 *p = buf;
	u8 gen;
	int tries = 0, err = 0;
	u32 i;

	do {
		gen = d->ops->config_generation(d);
		for (i = 0; i < len && !err;) {
			u32 w = (len - i >= 4 && !((off + i) & 3)) ? 4 : (len - i >= 2 && !((off + i) & 1)) ? 2 : 1;

			err = d->ops->cfg_read(d, off + i, p + i, w);
			i += w;
		}
	} while (!err && gen != d->ops->config_generation(d) && ++tries < 16);
	return err ? err : tries == 16 ? -EBUSY : 0;
}

u8 virtio_cfg_read8(struct virtio_dev *d, u32 off)
{
	u8 v = 0;

	d->ops->cfg_read(d, off, &v, 1);
	return v;
}

u16 virtio_cfg_read16(struct virtio_dev *d, u32 off)
{
	u16 v = 0;

	virtio_cfg_read(d, off, &v, 2);
	return v;
}

u32 virtio_cfg_read32(struct virtio_dev *d, u32 off)
{
	u32 v = 0;

	virtio_cfg_read(d, off, &v, 4);
	return v;
}

void virtio_device_ready(struct virtio_dev *d)
{
	add_status(d, VIRTIO_S_DRIVER_OK);
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
	q->interrupts++;
	if (q->live && q->callback)
		q->callback(q);
}

static int negotiate(struct virtio_dev *d, const struct virtio_driver *drv)
{
	u64 want;

	d->offered = d->ops->get_features(d);
	want = (drv->features | VIRTIO_TRANSPORT_FEATURES) & d->offered;
	if (d->modern && !(want & VIRTIO_BIT(VIRTIO_F_VERSION_1)))
		return -ENOTSUP;
	if (!d->modern)
		want &= 0xffffffffULL;
	d->ops->set_features(d, want);
	d->features = want;
	if (!d->modern)
		return 0;
	add_status(d, VIRTIO_S_FEATURES_OK);
	if (!(d->ops->get_status(d) & VIRTIO_S_FEATURES_OK))
		return -ENODEV;
	return 0;
}

int hk_probe(struct virtio_dev *d)
{
	const struct virtio_driver *drv = vnet_host_driver;
	int err;

	d->driver = drv;
	d->broken = false;
	d->ops->set_status(d, 0);
	add_status(d, VIRTIO_S_ACKNOWLEDGE);
	add_status(d, VIRTIO_S_DRIVER);
	err = negotiate(d, drv);
	if (err)
		goto fail;
	err = drv->probe(d);
	if (err)
		goto fail_vqs;
	if (!(d->ops->get_status(d) & VIRTIO_S_DRIVER_OK))
		virtio_device_ready(d);
	return 0;

fail_vqs:
	d->ops->set_status(d, 0);
	free_vqs(d);
fail:
	add_status(d, VIRTIO_S_FAILED);
	d->driver = NULL;
	return err;
}

void hk_remove(struct virtio_dev *d)
{
	d->ops->set_status(d, 0);
	if (d->driver && d->driver->remove)
		d->driver->remove(d);
	free_vqs(d);
	d->driver = NULL;
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
