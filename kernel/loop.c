/* The event loop's queues: work items, run once each in the order queued,
 * and timers (kernel/time/timerq.c). Portable: the host tests run this file as
 * it is; the loop that runs the queues and halts is kernel/loop_run.c. */
#include <arch.h>

#include "kernel/loop.h"

static struct work *work_head, **work_tail = &work_head;
static struct timerq timers;	/* zero is empty: timers may start before loop_run */
struct loop_stats loop_stats;

void work_init(struct work *w, void (*fn)(void *), void *arg)
{
	w->fn = fn;
	w->arg = arg;
	w->next = NULL;
	w->queued = false;
}

void work_queue(struct work *w)
{
	u64 flags = irq_save();

	if (!w->queued) {
		w->queued = true;
		w->next = NULL;
		*work_tail = w;
		work_tail = &w->next;
	}
	irq_restore(flags);
}

bool work_cancel(struct work *w)
{
	u64 flags = irq_save();
	struct work **pp;
	bool found = false;

	for (pp = &work_head; *pp; pp = &(*pp)->next) {
		if (*pp != w)
			continue;
		*pp = w->next;
		if (!*pp)
			work_tail = pp;
		w->queued = false;
		found = true;
		break;
	}
	irq_restore(flags);
	return found;
}

static struct work *loop_work_pop(void)
{
	u64 flags = irq_save();
	struct work *w = work_head;

	if (w) {
		work_head = w->next;
		if (!work_head)
			work_tail = &work_head;
		w->queued = false;
	}
	irq_restore(flags);
	return w;
}

void timer_start(struct timer *t, u64 deadline_ns)
{
	timerq_add(&timers, t, deadline_ns);
}

bool timer_stop(struct timer *t)
{
	return timerq_cancel(&timers, t);
}

unsigned loop_run_work(unsigned budget)
{
	unsigned runs = 0;
	struct work *w;

	while (runs < budget && (w = loop_work_pop())) {
		runs++;
		loop_stats.work_runs++;
		w->fn(w->arg);
	}
	return runs;
}

unsigned loop_run_timers(u64 now)
{
	unsigned fired = timerq_run(&timers, now);

	loop_stats.timers_fired += fired;
	return fired;
}

bool loop_work_queued(void)
{
	return READ_ONCE(work_head) != NULL;
}

unsigned loop_work_count(void)
{
	u64 flags = irq_save();
	unsigned n = 0;

	for (struct work *w = work_head; w; w = w->next)
		n++;
	irq_restore(flags);
	return n;
}

u64 loop_next_deadline(void)
{
	return timerq_next(&timers);
}

void loop_reset(void)
{
	while (work_head)
		work_cancel(work_head);
	timerq_init(&timers);
}
