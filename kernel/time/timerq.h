/* Deadline timer queue: an intrusive singly linked list sorted by deadline.
 * Pure: no clock and no interrupts; the caller supplies "now". */
#ifndef VIREO_TIMERQ_H
#define VIREO_TIMERQ_H

#include "lib/types.h"

struct timer;
typedef void (*timer_fn)(struct timer *t, void *arg);
struct timer { u64 deadline; timer_fn fn; void *arg; struct timer *next; bool armed; };
struct timerq { struct timer *head; u64 fired; };

/* An empty queue. */
void timerq_init(struct timerq *q);

/* A disarmed timer that will call fn(t, arg). The caller owns t's memory and
 * must cancel t before freeing it. */
void timer_init(struct timer *t, timer_fn fn, void *arg);

/* Arms t to fire once `deadline` is reached; an armed t is moved (it must be
 * in q, not another queue). Timers with equal deadlines fire in the order
 * they were added. */
void timerq_add(struct timerq *q, struct timer *t, u64 deadline);

/* Disarms t: true if it was armed (and so had not fired yet). */
bool timerq_cancel(struct timerq *q, struct timer *t);

/* The earliest deadline armed, or UINT64_MAX if none. */
u64 timerq_next(const struct timerq *q);

/* Fires, earliest first, the timers whose deadline is <= now when the call
 * starts; each is disarmed before its callback. Callbacks may add or cancel
 * any timer, themselves included; one (re)armed during this call fires on a
 * later call at the soonest, even if its deadline is <= now. Calling
 * timerq_run on q from a callback returns 0. Returns the number fired. */
unsigned timerq_run(struct timerq *q, u64 now);

/* What a one-shot hardware timer (the LAPIC's) was last programmed for, so
 * that the loop, which arms it before every halt, writes the device only
 * when the deadline changed or the timer has fired since: each write is an
 * emulated register access (under TCG, a trip through QEMU's device model
 * and its lock), and most halts wait for the same nearest deadline as the
 * one before. */
struct oneshot { u64 deadline; bool armed; };

/* Nothing programmed yet: the next oneshot_need() says yes. */
static inline void oneshot_init(struct oneshot *o)
{
	o->deadline = 0;
	o->armed = false;
}

/* Whether the timer must be programmed to fire at `deadline` (UINT64_MAX:
 * stopped); records it as programmed when so. */
static inline bool oneshot_need(struct oneshot *o, u64 deadline)
{
	if (o->armed && o->deadline == deadline)
		return false;
	o->deadline = deadline;
	o->armed = true;
	return true;
}

/* The timer fired (its interrupt ran), or was programmed behind our back:
 * the next oneshot_need() says yes whatever the deadline. */
static inline void oneshot_fired(struct oneshot *o)
{
	o->armed = false;
}

#endif
