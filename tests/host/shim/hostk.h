/* hostk: the one host stand-in for the kernel, linked into every host test
 * and fuzzer (with kernel/loop.c and kernel/time/timerq.c) by the Makefile's rules: a fake clock,
 * malloc-backed pages and heap with live counters and failure injection
 * (so ASan tracks every buffer), memory statistics, kprintf kept in a ring
 * and klog counted (shim_klog_*, arch.h), panic, deterministic randomness,
 * the event loop (the real kernel/loop.c's queues, run without halting) and strlcpy
 * (the host's libc has none). Printed to stderr with VIREO_TEST_LOG=1. */
#ifndef VIREO_HOSTK_H
#define VIREO_HOSTK_H

#include "kernel/time/time.h"
#include "lib/types.h"

/* ---- clock: time_ns() returns this; it moves only when told to ---- */
u64 hk_now(void);
void hk_clock_advance(u64 ns);
#define hk_clock_advance_ms(ms) hk_clock_advance((u64)(ms) * NSEC_PER_MSEC)
/* Every time_ns() call also advances the clock by step ns (0: off), so
 * a driver busy-waiting on a silent device reaches its deadline. */
void hk_clock_autostep(u64 step);
/* fn(arg) runs at every time_ns() call (not from within itself) until
 * hk_on_clock(NULL, NULL): a device that acts while the driver busy-waits. */
void hk_on_clock(void (*fn)(void *arg), void *arg);
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
void hk_log_reset(void);			/* forget every line */
const char *hk_log_line(unsigned i);		/* i-th since the reset ("" if gone) */

#endif
