/* A budget of slots with a FIFO of waiters: see slots.h. */
#include "runtime/http/slots.h"

static void slots_unlink(struct slots *s, struct slot_waiter *w)
{
	if (w->prev)
		w->prev->next = w->next;
	else
		s->head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	else
		s->tail = w->prev;
	w->prev = w->next = NULL;
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
	if (!w->queued && !s->head && s->used < s->max) {
		s->used++;
		w->held = true;
		return true;
	}
	if (!w->queued) {
		w->queued = true;
		w->next = NULL;
		w->prev = s->tail;
		if (s->tail)
			s->tail->next = w;
		else
			s->head = w;
		s->tail = w;
		s->waiting++;
		s->waits_total++;
	}
	return false;
}

/* One slot counted in used comes free: to the oldest waiter, or the pool. */
static struct slot_waiter *slots_pass(struct slots *s)
{
	struct slot_waiter *n = s->head;

	if (!n) {
		s->used--;
		return NULL;
	}
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
