/* Timer queue. While timerq_run is firing, q->head is a sentinel on the
 * runner's stack: the timers still due hang off a list the sentinel points
 * to, and everything after the sentinel is the live, sorted queue. So a
 * timer armed from a callback lands behind the sentinel and cannot fire in
 * the same run, and a cancel from a callback finds due timers too. */
#include "kernel/time/timerq.h"

static void timerq_sentinel_fn(struct timer *t, void *arg)
{
}

static bool timerq_running(const struct timerq *q)
{
	return q->head && q->head->fn == timerq_sentinel_fn;
}

/* Unlinks t from the list at *pp: true if it was there. */
static bool timerq_unlink(struct timer **pp, struct timer *t)
{
	for (; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			t->next = NULL;
			return true;
		}
	}
	return false;
}

void timerq_init(struct timerq *q)
{
	q->head = NULL;
	q->fired = 0;
}

void timer_init(struct timer *t, timer_fn fn, void *arg)
{
	t->deadline = 0;
	t->fn = fn;
	t->arg = arg;
	t->next = NULL;
	t->armed = false;
}

void timerq_add(struct timerq *q, struct timer *t, u64 deadline)
{
	struct timer **pp = &q->head;

	if (t->armed)
		timerq_cancel(q, t);
	if (timerq_running(q))
		pp = &q->head->next;
	/* After every timer due no later: equal deadlines keep insertion order. */
	while (*pp && (*pp)->deadline <= deadline)
		pp = &(*pp)->next;
	t->deadline = deadline;
	t->next = *pp;
	t->armed = true;
	*pp = t;
}

bool timerq_cancel(struct timerq *q, struct timer *t)
{
	if (!t->armed)
		return false;
	if (!timerq_unlink(&q->head, t) &&
	    !(timerq_running(q) && timerq_unlink((struct timer **)q->head->arg, t)))
		return false;	/* armed, but not in q: not ours to touch */
	t->armed = false;
	return true;
}

u64 timerq_next(const struct timerq *q)
{
	const struct timer *t = q->head;
	u64 next = UINT64_MAX;

	if (timerq_running(q)) {
		const struct timer *due = *(struct timer **)t->arg;

		if (due)
			next = due->deadline;
		t = t->next;
	}
	if (t && t->deadline < next)
		next = t->deadline;
	return next;
}

unsigned timerq_run(struct timerq *q, u64 now)
{
	struct timer sentinel, *due, *last;
	unsigned fired = 0;

	if (!q->head || timerq_running(q) || q->head->deadline > now)
		return 0;

	/* Detach the due prefix; the sentinel takes its place at the head. */
	due = q->head;
	for (last = due; last->next && last->next->deadline <= now; last = last->next)
		;
	timer_init(&sentinel, timerq_sentinel_fn, &due);
	sentinel.deadline = now;
	sentinel.next = last->next;
	sentinel.armed = true;
	last->next = NULL;
	q->head = &sentinel;

	/* Callbacks may unlink entries of `due` through sentinel.arg. */
	while (due) {
		struct timer *t = due;

		due = t->next;
		t->next = NULL;
		t->armed = false;
		fired++;
		q->fired++;
		if (t->fn)
			t->fn(t, t->arg);
	}

	q->head = sentinel.next;
	return fired;
}
