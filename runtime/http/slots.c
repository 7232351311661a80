/* A budget of slots with a FIFO of waiters: see slots.h. */
#include "runtime/http/slots.h"

void slots_init(struct slots *s, u32 max)
{
	s->max = max;
	s->used = s->waiting = 0;
	s->waits_total = 0;
	list_init(&s->fifo);
}

static void slots_unlink(struct slots *s, struct slot_waiter *w)
{
	list_unlink(&w->link);
	w->queued = false;
	s->waiting--;
}

bool slots_take(struct slots *s, struct slot_waiter *w)
{
	if (w->held)
		return true;
	if (w->granted) {
		w->granted = false;
		w->held = true;
		return true;
	}
	if (!w->queued && !slots_waited_for(s) && s->used < s->max) {
		s->used++;
		w->held = true;
		return true;
	}
	if (!w->queued) {
		w->queued = true;
		list_push_back(&s->fifo, &w->link);
		s->waiting++;
		s->waits_total++;
	}
	return false;
}

/* One slot counted in used comes free: to the oldest waiter, or the pool. */
static struct slot_waiter *slots_pass(struct slots *s)
{
	struct slot_waiter *n;

	if (!slots_waited_for(s)) {
		s->used--;
		return NULL;
	}
	n = list_entry(s->fifo.next, struct slot_waiter, link);
	slots_unlink(s, n);
	n->granted = true;
	return n;
}

struct slot_waiter *slots_give(struct slots *s, struct slot_waiter *w)
{
	if (!w->held)
		return NULL;
	w->held = false;
	return slots_pass(s);
}

struct slot_waiter *slots_forget(struct slots *s, struct slot_waiter *w)
{
	if (w->queued)
		slots_unlink(s, w);
	if (w->granted) {
		w->granted = false;
		return slots_pass(s);
	}
	return slots_give(s, w);
}
