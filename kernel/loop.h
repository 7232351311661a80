/* The event loop: single-core, run-to-completion work items and timers,
 * halting with interrupts enabled when there is nothing to do. */
#ifndef VIREO_LOOP_H
#define VIREO_LOOP_H

#include "kernel/time/timerq.h"
#include "lib/types.h"
#include <arch.h>

struct work {
	void (*fn)(void *arg);
	void *arg;
	struct work *next;
	bool queued;
};

void work_init(struct work *w, void (*fn)(void *), void *arg);
/* Queues w to run once from the loop; safe from interrupt handlers;
 * a no-op while w is already queued. */
void work_queue(struct work *w);
/* Takes w off the queue if it is queued, so that its memory may be freed;
 * returns true if it was queued. Safe from interrupt handlers too. */
bool work_cancel(struct work *w);

/* Timers run from the loop (never from interrupt context); deadline in
 * time_ns() nanoseconds. Call from loop context only. */
void timer_start(struct timer *t, u64 deadline_ns);
bool timer_stop(struct timer *t);

/* The kernel's loop (kernel/loop_run.c): forever, up to 64 work items, the
 * due timers, then halt until an interrupt or the next deadline. */
void loop_run(void) __attribute__((noreturn));

/* The steps it is made of (kernel/loop.c, which the host tests run too).
 * Runs queued work items, at most budget; returns how many ran. */
unsigned loop_run_work(unsigned budget);
/* Runs the timers due at now; returns how many fired. */
unsigned loop_run_timers(u64 now);
bool loop_work_queued(void);
unsigned loop_work_count(void);		/* work items queued */
u64 loop_next_deadline(void);		/* the earliest timer's, UINT64_MAX if none */
/* Forgets every queued work item and timer (host tests, between cases). */
void loop_reset(void);

struct loop_stats {
	u64 iterations, halts, work_runs, timers_fired;
	u64 idle_tsc;	/* TSC ticks spent halted */
	u64 timer_writes;	/* LAPIC timer programmings by time_arm() */
};
extern struct loop_stats loop_stats;

/* Nanoseconds of time_ns() not spent halted in the loop: the CPU's busy time
 * (interrupt handlers that wake a halt count as idle; they are short). */
u64 loop_busy_ns(void);

#endif
