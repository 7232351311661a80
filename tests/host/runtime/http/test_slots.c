/* runtime/http/slots.c: the budget never passes max, waiters are handed
 * slots oldest first and never overtaken, a waiter that goes away (queued,
 * granted or holding) gives back what it had, and a random run of 200,000
 * operations on 1,000 takers keeps every invariant (used = holders +
 * granted, the FIFO's length = waiting). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/http/slots.h"

static void test_fifo(void **state)
{
	struct slots s;
	struct slot_waiter w[5];

	(void)state;
	slots_init(&s, 2);
	memset(w, 0, sizeof w);
	assert_true(slots_take(&s, &w[0]));
	assert_true(slots_take(&s, &w[0]));	/* held: no second slot */
	assert_true(slots_take(&s, &w[1]));
	assert_int_equal(s.used, 2);
	assert_false(slots_take(&s, &w[2]));
	assert_false(slots_take(&s, &w[3]));
	assert_false(slots_take(&s, &w[2]));	/* queued once */
	assert_int_equal(s.waiting, 2);
	assert_int_equal(s.waits_total, 2);
	/* w[1] gives back: w[2], the oldest, is handed it */
	assert_ptr_equal(slots_give(&s, &w[1]), &w[2]);
	assert_int_equal(s.used, 2);
	/* a newcomer does not overtake w[3], still waiting */
	assert_false(slots_take(&s, &w[4]));
	assert_true(slots_take(&s, &w[2]));
	assert_int_equal(s.used, 2);
	/* w[3] goes away while queued; w[0] gives back to w[4] */
	assert_null(slots_forget(&s, &w[3]));
	assert_ptr_equal(slots_give(&s, &w[0]), &w[4]);
	/* w[4] goes away before taking what it was handed: passed on, none waits */
	assert_null(slots_forget(&s, &w[4]));
	assert_int_equal(s.used, 1);
	assert_null(slots_give(&s, &w[0]));	/* holds none */
	assert_null(slots_forget(&s, &w[2]));
	assert_int_equal(s.used, 0);
	assert_int_equal(s.waiting, 0);
	assert_false(slots_waited_for(&s));
	assert_ptr_equal(s.fifo.next, &s.fifo);
	assert_ptr_equal(s.fifo.prev, &s.fifo);
}

static void check(const struct slots *s, const struct slot_waiter *w, size_t n)
{
	u32 held = 0, granted = 0, queued = 0, fifo = 0;
	const struct list_node *p;

	for (size_t i = 0; i < n; i++) {
		held += w[i].held;
		granted += w[i].granted;
		queued += w[i].queued;
		assert_false(w[i].held && (w[i].granted || w[i].queued));
		assert_false(w[i].granted && w[i].queued);
	}
	list_for_each(p, &s->fifo) {
		assert_true(list_entry(p, const struct slot_waiter, link)->queued);
		fifo++;
	}
	assert_int_equal(s->used, held + granted);
	assert_true(s->used <= s->max);
	assert_int_equal(fifo, queued);
	assert_int_equal(s->waiting, queued);
	/* nobody waits while a slot is free */
	assert_true(!queued || s->used == s->max);
}

static void test_random(void **state)
{
	enum { N = 1000 };
	static struct slot_waiter w[N];
	struct slots s;
	unsigned seed = 29;

	(void)state;
	slots_init(&s, 37);
	memset(w, 0, sizeof w);
	for (int i = 0; i < 200000; i++) {
		struct slot_waiter *x = &w[rand_r(&seed) % N], *woke = NULL;
		int op = rand_r(&seed) % 3;

		if (op == 0)
			(void)slots_take(&s, x);
		else if (op == 1)
			woke = slots_give(&s, x);
		else
			woke = slots_forget(&s, x);
		if (woke)
			assert_true(woke->granted);
		if (i % 97 == 0)
			check(&s, w, N);
	}
	check(&s, w, N);
	for (size_t i = 0; i < N; i++)
		(void)slots_forget(&s, &w[i]);
	assert_int_equal(s.used, 0);
	assert_int_equal(s.waiting, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
