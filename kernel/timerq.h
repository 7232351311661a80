/* Deadline timer queue: an intrusive singly linked list sorted by deadline.
 * Pure: no clock and no interrupts; the caller supplies "now". */
#ifndef VIREO_TIMERQ_H
#define VIREO_TIMERQ_H

#include "kernel/types.h"

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

#endif
