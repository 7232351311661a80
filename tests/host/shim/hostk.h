/* hostk: the kernel and virtio-core services drivers/virtio_net.c needs,
 * for the host: a fake clock, malloc-backed pages and heap with live
 * counters and failure injection (so ASan tracks every buffer), a tiny
 * event loop (work items and the real kernel/timerq.c), and the driver
 * table the real virtio bus (drivers/virtio.c and drivers/virtio_core.c,
 * linked in) matches against. */
#ifndef VIREO_HOSTK_H
#define VIREO_HOSTK_H

#include "drivers/virtio.h"
#include "kernel/types.h"

/* ---- clock: time_ns() returns this; it moves only when told to ---- */
u64 hk_now(void);
void hk_clock_advance(u64 ns);
/* Every time_ns() call also advances the clock by step ns (0: off), so
 * a driver busy-waiting on a silent device reaches its deadline. */
void hk_clock_autostep(u64 step);
/* What loop_busy_ns() says, for the coalescing policy: the CPU busy all the
 * time (true) or never (false, the default). */
void hk_cpu_busy(bool busy);

/* ---- memory ---- */
long hk_pages_live(void);	/* pages allocated and not freed */
long hk_kmem_live(void);	/* kmalloc/kzalloc blocks not freed */
/* The next n page allocations (n kmalloc calls) fail, after skip more succeed. */
void hk_fail_pages(unsigned skip, unsigned n);
void hk_fail_kmem(unsigned skip, unsigned n);

/* random_add_entropy() only counts here. */
u64 hk_entropy_bytes(void);

/* ---- event loop ---- */
/* Runs queued work items until none is left (at most limit runs), then
 * the timers that are due. Returns the number of work items run. */
unsigned hk_run(unsigned limit);
/* Advances the clock to the next timer deadline, at most to now + max_ns,
 * running due timers and work on the way. Returns true if a timer fired. */
bool hk_run_timers_until(u64 max_ns);
u64 hk_next_deadline(void);	/* UINT64_MAX if no timer is armed */
unsigned hk_work_pending(void);
/* Drops everything queued (between fuzz inputs). */
void hk_loop_reset(void);

/* ---- log ---- */
unsigned hk_kprintf_count(void);
const char *hk_kprintf_last(void);
bool hk_log_contains(const char *needle);	/* in the last 64 lines */

/* ---- virtio bus: the real drivers/virtio.c and drivers/virtio_core.c ---- */
/* The driver under test, captured from its VIRTIO_DRIVER() line; the bus's
 * driver table (virtio_driver_table) holds it alone. */
extern const struct virtio_driver *const vnet_host_driver;
/* The first call for d is the transport's report, virtio_add_device()
 * (registry, driver match, virtio_core_probe); after hk_remove() it is
 * virtio_core_probe() again. Returns the probe's result. */
int hk_probe(struct virtio_dev *d);
/* virtio_core_remove(): quiesce, reset, drv->remove, free the queues. */
void hk_remove(struct virtio_dev *d);
/* virtio_del_device(): off the bus (vd_fini calls it). */
void hk_unplug(struct virtio_dev *d);
/* virtio_keep_forever() (wrapped: the real one counts, the wrapper also
 * records): pages and heap blocks the bus counted as kept since the last
 * hk_free_kept(), which frees what was recorded. */
long hk_kept_pages(void);
unsigned hk_kept_blocks(void);
void hk_free_kept(void);
/* A config interrupt: virtio_config_interrupt() queues the bus's config
 * work (NEEDS_RESET -> remove and probe again, else drv->config_changed). */
void hk_config_interrupt(struct virtio_dev *d);
/* The transport reports a used-buffer interrupt on q. */
void hk_vq_interrupt(struct virtio_vq *q);
/* virtio_set_broken calls that marked a device (wrapped), the last reason. */
unsigned hk_broken_count(void);
const char *hk_broken_why(void);

#endif
