/* Event loop: work items, then expired timers, then sti;hlt until the next
 * interrupt or the LAPIC one-shot armed for the nearest deadline. */
#include "kernel/io.h"
#include "kernel/loop.h"
#include "kernel/time.h"

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

u64 loop_busy_ns(void)
{
	u64 now = time_ns(), idle = time_tsc_to_ns(loop_stats.idle_tsc);

	return now > idle ? now - idle : 0;
}

void loop_run(void)
{
	for (;;) {
		struct work *w;
		unsigned budget = 64;	/* then let timers run */
		u64 t0;

		loop_stats.iterations++;
		while (budget-- && (w = loop_work_pop())) {
			loop_stats.work_runs++;
			w->fn(w->arg);
		}
		loop_stats.timers_fired += timerq_run(&timers, time_ns());

		cli();
		if (READ_ONCE(work_head) || timerq_next(&timers) <= time_ns()) {
			sti();
			continue;
		}
		time_arm(timerq_next(&timers));
		t0 = rdtsc();
		sti_hlt();	/* the interrupt that wakes us runs before this returns */
		loop_stats.halts++;
		loop_stats.idle_tsc += rdtsc() - t0;
	}
}
