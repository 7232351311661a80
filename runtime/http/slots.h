/*
 * A budget of interchangeable slots with a FIFO of waiters (pure: no
 * allocation, no lwIP; tests/host/runtime/http/test_slots.c). The HTTP
 * server keeps two (net/port/netmem.h sizes both from RAM):
 *   the buffer sets: a connection holds one (receive buffer, head parser,
 *     response head) only while a request is in progress;
 *   the send slots: a plain connection holds one only while it has
 *     response bytes queued in lwIP or about to be.
 * A taker that finds none free queues (once) and is handed the next slot
 * given back: slots_give() passes it to the oldest waiter, who is then
 * "granted" (the slot counts as used), and its next slots_take() succeeds
 * without counting again. So a waiter is never overtaken by a newcomer,
 * and used never passes max.
 */
#ifndef VIREO_RUNTIME_HTTP_SLOTS_H
#define VIREO_RUNTIME_HTTP_SLOTS_H

#include "lib/list.h"
#include "lib/types.h"

struct slot_waiter {
	struct list_node link;	/* on the FIFO while queued */
	bool queued;		/* on the FIFO */
	bool granted;		/* handed a slot by slots_give(): take it */
	bool held;		/* holds a slot (taken) */
};

struct slots {
	u32 max, used;
	u32 waiting;		/* on the FIFO now */
	u64 waits_total;	/* takers that had to queue */
	struct list_node fifo;	/* the waiters, oldest first */
};

/* An empty budget of max slots, nobody waiting. */
void slots_init(struct slots *s, u32 max);

/* Whether anyone waits for a slot (waiting: the FIFO's length). */
static inline bool slots_waited_for(const struct slots *s)
{
	return s->waiting != 0;
}

/* A slot for w: true when w holds one (newly taken, handed to it while
 * it waited, or already held); false when none is free, w then queued
 * (once) to be handed the next one given back. */
bool slots_take(struct slots *s, struct slot_waiter *w);
/* w gives its slot back (nothing if it holds none): to the oldest waiter,
 * returned so the caller can wake it, or to the pool (NULL). */
struct slot_waiter *slots_give(struct slots *s, struct slot_waiter *w);
/* w is going away: off the FIFO, and a slot it holds or was handed is
 * given back as slots_give() does. */
struct slot_waiter *slots_forget(struct slots *s, struct slot_waiter *w);

#endif
