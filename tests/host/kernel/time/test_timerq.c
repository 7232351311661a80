/* kernel/time/timerq.c: ordering, ties, cancel, callbacks that add and cancel
 * timers mid-run, next(), and a randomized run against a simple model. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/time/timerq.h"

static struct timerq q;
static struct timer tm[16];
static int order[64], norder;

static void record(struct timer *t, void *arg)
{
	assert_false(t->armed);
	assert_ptr_equal(arg, &tm[t - tm]);
	assert_true(norder < 64);
	order[norder++] = (int)(t - tm);
}

static int setup(void **state)
{
	timerq_init(&q);
	for (int i = 0; i < 16; i++)
		timer_init(&tm[i], record, &tm[i]);
	norder = 0;
	return 0;
}

#define assert_order(...)							\
	do {									\
		const int want_[] = { __VA_ARGS__ };				\
		assert_int_equal(norder, sizeof want_ / sizeof want_[0]);	\
		assert_memory_equal(order, want_, sizeof want_);		\
		norder = 0;							\
	} while (0)

static void test_empty(void **state)
{
	assert_true(timerq_next(&q) == UINT64_MAX);
	assert_int_equal(timerq_run(&q, UINT64_MAX), 0);
	assert_false(timerq_cancel(&q, &tm[0]));
	assert_false(tm[0].armed);
}

static void test_ordering_and_next(void **state)
{
	timerq_add(&q, &tm[0], 50);
	timerq_add(&q, &tm[1], 10);
	timerq_add(&q, &tm[2], 30);
	timerq_add(&q, &tm[3], 20);
	timerq_add(&q, &tm[4], UINT64_MAX);
	assert_true(timerq_next(&q) == 10);

	assert_int_equal(timerq_run(&q, 9), 0);	/* nothing due */
	assert_int_equal(norder, 0);
	assert_int_equal(timerq_run(&q, 30), 3);
	assert_order(1, 3, 2);
	assert_true(timerq_next(&q) == 50);
	assert_int_equal(timerq_run(&q, 49), 0);
	assert_int_equal(timerq_run(&q, 50), 1);
	assert_order(0);
	assert_int_equal(timerq_run(&q, UINT64_MAX - 1), 0);
	assert_int_equal(timerq_run(&q, UINT64_MAX), 1);
	assert_order(4);
	assert_true(timerq_next(&q) == UINT64_MAX);
	assert_int_equal(q.fired, 5);
	for (int i = 0; i < 5; i++)
		assert_false(tm[i].armed);
}

static void test_ties_in_insertion_order(void **state)
{
	timerq_add(&q, &tm[5], 100);
	timerq_add(&q, &tm[2], 100);
	timerq_add(&q, &tm[9], 99);
	timerq_add(&q, &tm[7], 100);
	timerq_add(&q, &tm[1], 101);
	timerq_add(&q, &tm[5], 100);	/* re-adding moves it behind its equals */
	assert_int_equal(timerq_run(&q, 1000), 5);
	assert_order(9, 2, 7, 5, 1);
}

static void test_cancel(void **state)
{
	timerq_add(&q, &tm[0], 10);
	timerq_add(&q, &tm[1], 20);
	timerq_add(&q, &tm[2], 30);
	assert_true(timerq_cancel(&q, &tm[1]));
	assert_false(tm[1].armed);
	assert_false(timerq_cancel(&q, &tm[1]));	/* already disarmed */
	assert_false(timerq_cancel(&q, &tm[3]));	/* never armed */
	assert_true(timerq_cancel(&q, &tm[0]));		/* the head */
	assert_true(timerq_next(&q) == 30);
	assert_int_equal(timerq_run(&q, 100), 1);
	assert_order(2);
	assert_false(timerq_cancel(&q, &tm[2]));	/* already fired */

	/* Re-arm after cancel; move an armed timer later and earlier. */
	timerq_add(&q, &tm[1], 5);
	timerq_add(&q, &tm[0], 7);
	timerq_add(&q, &tm[1], 9);
	timerq_add(&q, &tm[0], 3);
	assert_true(timerq_next(&q) == 3);
	assert_int_equal(timerq_run(&q, 9), 2);
	assert_order(0, 1);
}

/* Periodic timer: re-arms itself from its callback. */
static u64 period;
static void periodic(struct timer *t, void *arg)
{
	record(t, &tm[t - tm]);
	timerq_add(&q, t, t->deadline + period);
}

static void test_rearm_from_callback_no_loop(void **state)
{
	tm[0].fn = periodic;
	period = 0;	/* deadline <= now again: must not fire twice in one run */
	timerq_add(&q, &tm[0], 10);
	timerq_add(&q, &tm[1], 10);
	assert_int_equal(timerq_run(&q, 10), 2);
	assert_order(0, 1);
	assert_true(tm[0].armed);
	assert_true(timerq_next(&q) == 10);
	assert_int_equal(timerq_run(&q, 10), 1);
	assert_order(0);

	/* Fell behind: a 5-tick period at now=100 still fires once per run. */
	period = 5;
	assert_int_equal(timerq_run(&q, 100), 1);
	assert_true(timerq_next(&q) == 15);
	assert_int_equal(timerq_run(&q, 100), 1);
	assert_true(timerq_next(&q) == 20);
	assert_order(0, 0);

	/* Cancelling the re-armed timer stops it. */
	assert_true(timerq_cancel(&q, &tm[0]));
	assert_true(timerq_next(&q) == UINT64_MAX);
}

static bool cancel_result;
static void cancel_other(struct timer *t, void *arg)
{
	record(t, &tm[t - tm]);
	cancel_result = timerq_cancel(&q, arg);
}

static void test_cancel_other_from_callback(void **state)
{
	/* tm[0] cancels tm[2], which is due in the same run. */
	timer_init(&tm[0], cancel_other, &tm[2]);
	timerq_add(&q, &tm[0], 1);
	timerq_add(&q, &tm[1], 2);
	timerq_add(&q, &tm[2], 3);
	timerq_add(&q, &tm[3], 4);
	assert_int_equal(timerq_run(&q, 10), 3);
	assert_true(cancel_result);
	assert_order(0, 1, 3);
	assert_false(tm[2].armed);

	/* Cancel a timer that is not due yet. */
	timerq_add(&q, &tm[0], 20);
	timerq_add(&q, &tm[2], 50);
	assert_int_equal(timerq_run(&q, 20), 1);
	assert_true(cancel_result);
	assert_true(timerq_next(&q) == UINT64_MAX);

	/* Cancel itself (already disarmed) and an unarmed one. */
	timer_init(&tm[0], cancel_other, &tm[0]);
	timerq_add(&q, &tm[0], 1);
	assert_int_equal(timerq_run(&q, 1), 1);
	assert_false(cancel_result);
	norder = 0;
}

static u64 now_in_cb, next_in_cb;
static void add_others(struct timer *t, void *arg)
{
	record(t, &tm[t - tm]);
	timerq_add(&q, &tm[5], now_in_cb - 5);	/* new, already due */
	timerq_add(&q, &tm[2], now_in_cb);	/* moves a due timer that has not fired */
	timerq_add(&q, &tm[6], now_in_cb + 1);	/* future */
	next_in_cb = timerq_next(&q);
	assert_int_equal(timerq_run(&q, now_in_cb), 0);	/* no nesting */
}

static void test_add_from_callback(void **state)
{
	now_in_cb = 100;
	timer_init(&tm[0], add_others, NULL);
	timerq_add(&q, &tm[0], 10);
	timerq_add(&q, &tm[1], 20);
	timerq_add(&q, &tm[2], 30);
	timerq_add(&q, &tm[3], 101);
	assert_int_equal(timerq_run(&q, 100), 2);
	assert_order(0, 1);	/* tm[2] moved, tm[5] added: both wait */
	assert_true(next_in_cb == 20);	/* tm[1] still due then */
	assert_true(timerq_next(&q) == 95);
	assert_int_equal(timerq_run(&q, 100), 2);
	assert_order(5, 2);
	assert_int_equal(timerq_run(&q, 101), 2);
	assert_order(3, 6);
	assert_int_equal(q.fired, 6);
}

/* Model: deadline + sequence number per armed timer. */
struct mt {
	bool armed;
	u64 deadline, seq;
};

static void test_randomized_against_model(void **state)
{
	struct mt m[16] = { 0 };
	u64 seq = 0, now = 0;

	srand(777);
	for (int step = 0; step < 20000; step++) {
		int op = rand() % 8, i = rand() % 16;

		if (op < 4) {
			u64 d = now + (u64)(rand() % 50);

			timerq_add(&q, &tm[i], d);
			m[i] = (struct mt){ true, d, seq++ };
		} else if (op < 6) {
			assert_int_equal(timerq_cancel(&q, &tm[i]), m[i].armed);
			m[i].armed = false;
		} else {
			int want[16], nwant = 0;

			now += (u64)(rand() % 30);
			/* Expected order: due timers by (deadline, seq). */
			for (;;) {
				int best = -1;

				for (int k = 0; k < 16; k++)
					if (m[k].armed && m[k].deadline <= now &&
					    (best < 0 || m[k].deadline < m[best].deadline ||
					     (m[k].deadline == m[best].deadline && m[k].seq < m[best].seq)))
						best = k;
				if (best < 0)
					break;
				m[best].armed = false;
				want[nwant++] = best;
			}
			norder = 0;
			assert_int_equal(timerq_run(&q, now), nwant);
			assert_int_equal(norder, nwant);
			assert_memory_equal(order, want, sizeof want[0] * (size_t)nwant);
		}
		{
			u64 next = UINT64_MAX;

			for (int k = 0; k < 16; k++) {
				assert_int_equal(tm[k].armed, m[k].armed);
				if (m[k].armed && m[k].deadline < next)
					next = m[k].deadline;
			}
			assert_true(timerq_next(&q) == next);
		}
	}
	norder = 0;
}

/* ---- oneshot: the LAPIC arm cache ---- */

static void test_oneshot_basic(void **state)
{
	struct oneshot o;

	(void)state;
	oneshot_init(&o);
	assert_true(oneshot_need(&o, 1000));
	assert_false(oneshot_need(&o, 1000));	/* same deadline, not fired */
	assert_true(oneshot_need(&o, 900));	/* a nearer one */
	assert_true(oneshot_need(&o, 1000));	/* and back */
	oneshot_fired(&o);
	assert_true(oneshot_need(&o, 1000));	/* fired early (a far deadline, rounding) */
	assert_true(oneshot_need(&o, UINT64_MAX));
	assert_false(oneshot_need(&o, UINT64_MAX));
	oneshot_init(&o);
	assert_true(oneshot_need(&o, 0));	/* nothing programmed yet, even for 0 */
}

/* Against a model of the device: after every arm the hardware is set to
 * fire at the deadline asked for (or stopped for UINT64_MAX), whatever
 * mix of fires, early fires and changing deadlines came before; and the
 * device is written only when that was not already so. */
static void test_oneshot_against_device(void **state)
{
	static const u64 dl[] = { 100, 200, 300, UINT64_MAX };
	struct oneshot o;
	u64 hw = UINT64_MAX;	/* what the device will fire at; MAX: nothing */
	unsigned writes = 0, arms = 0;

	(void)state;
	srand(7);
	oneshot_init(&o);
	for (int i = 0; i < 100000; i++) {
		int op = rand() % 4;

		if (op == 0 && hw != UINT64_MAX) {	/* the interrupt */
			hw = UINT64_MAX;
			oneshot_fired(&o);
		} else {
			u64 d = dl[rand() % 4];
			bool already = hw == d;

			arms++;
			if (oneshot_need(&o, d)) {
				hw = d;
				writes++;
			} else {
				assert_true(already);
			}
			assert_true(hw == d);
		}
	}
	assert_true(writes < arms);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_empty, setup),
		cmocka_unit_test_setup(test_ordering_and_next, setup),
		cmocka_unit_test_setup(test_ties_in_insertion_order, setup),
		cmocka_unit_test_setup(test_cancel, setup),
		cmocka_unit_test_setup(test_rearm_from_callback_no_loop, setup),
		cmocka_unit_test_setup(test_cancel_other_from_callback, setup),
		cmocka_unit_test_setup(test_add_from_callback, setup),
		cmocka_unit_test_setup(test_randomized_against_model, setup),
		cmocka_unit_test(test_oneshot_basic),
		cmocka_unit_test(test_oneshot_against_device),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
