/* lib/list.h: the circular list's invariants (every node's neighbours point
 * back at it, the head's included), push and unlink anywhere, FIFO order,
 * empty again after the last node leaves, list_entry's offset. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/list.h"

struct item {
	u32 id;
	struct list_node link;	/* not first: list_entry must subtract */
};

/* The list h holds exactly the ids want[0..n), front to back, both ways. */
static void check_list(struct list_node *h, const u32 *want, size_t n)
{
	struct list_node *p;
	size_t i = 0;

	assert_ptr_equal(h->next->prev, h);
	assert_ptr_equal(h->prev->next, h);
	list_for_each(p, h) {
		assert_true(i < n);
		assert_ptr_equal(p->next->prev, p);
		assert_ptr_equal(p->prev->next, p);
		assert_int_equal(list_entry(p, struct item, link)->id, want[i]);
		i++;
	}
	assert_int_equal(i, n);
	for (p = h->prev; p != h; p = p->prev)	/* and back to front */
		assert_int_equal(list_entry(p, struct item, link)->id, want[--i]);
	assert_int_equal(i, 0);
	assert_int_equal(list_empty(h), n == 0);
	if (n)
		assert_ptr_equal(list_first(h), h->next);
	else
		assert_null(list_first(h));
}

static u32 pop_id(struct list_node *h)
{
	struct list_node *p = list_pop_front(h);

	assert_non_null(p);
	return list_entry(p, struct item, link)->id;
}

static void test_empty(void **state)
{
	struct list_node h = LIST_INIT(h), g;

	list_init(&g);
	check_list(&h, NULL, 0);
	check_list(&g, NULL, 0);
	assert_null(list_pop_front(&h));
	check_list(&h, NULL, 0);	/* popping nothing changes nothing */
}

static void test_fifo_and_front(void **state)
{
	struct item it[4] = { { .id = 0 }, { .id = 1 }, { .id = 2 }, { .id = 3 } };
	struct list_node h;

	list_init(&h);
	list_push_back(&h, &it[1].link);
	list_push_back(&h, &it[2].link);
	list_push_front(&h, &it[0].link);
	list_push_back(&h, &it[3].link);
	check_list(&h, (const u32[]){ 0, 1, 2, 3 }, 4);
	assert_ptr_equal(list_entry(list_first(&h), struct item, link), &it[0]);
	for (u32 i = 0; i < 4; i++)
		assert_int_equal(pop_id(&h), i);
	check_list(&h, NULL, 0);
	assert_null(list_pop_front(&h));
}

static void test_unlink_anywhere(void **state)
{
	struct item it[5];
	struct list_node h;

	list_init(&h);
	for (u32 i = 0; i < 5; i++) {
		it[i].id = i;
		list_push_back(&h, &it[i].link);
	}
	list_unlink(&it[2].link);	/* the middle */
	check_list(&h, (const u32[]){ 0, 1, 3, 4 }, 4);
	list_unlink(&it[0].link);	/* the front */
	check_list(&h, (const u32[]){ 1, 3, 4 }, 3);
	list_unlink(&it[4].link);	/* the back */
	check_list(&h, (const u32[]){ 1, 3 }, 2);
	list_push_back(&h, &it[2].link);	/* an unlinked node goes back in */
	list_push_front(&h, &it[4].link);
	check_list(&h, (const u32[]){ 4, 1, 3, 2 }, 4);
	list_unlink(&it[1].link);
	list_unlink(&it[3].link);
	list_unlink(&it[4].link);
	check_list(&h, (const u32[]){ 2 }, 1);
	list_unlink(&it[2].link);	/* the last: empty again */
	check_list(&h, NULL, 0);
}

/* A queue worked as the HTTP server's are: waiters join at the back, some
 * leave from the middle, the front is served; the order of the rest holds. */
static void test_queue_churn(void **state)
{
	enum { N = 64 };
	struct item it[N];
	bool on[N] = { false };
	struct list_node h;
	u32 want[N], next_pop = 0, x = 1;

	list_init(&h);
	for (u32 round = 0; round < 4000; round++) {
		u32 i, n = 0;

		x = x * 1103515245u + 12345u;
		i = (x >> 16) % N;
		if (!on[i]) {
			it[i].id = round;
			list_push_back(&h, &it[i].link);
			on[i] = true;
		} else if (x & 1) {
			list_unlink(&it[i].link);
			on[i] = false;
		} else {
			struct item *f = list_entry(list_pop_front(&h), struct item, link);

			assert_true(on[f - it]);
			assert_true(f->id >= next_pop);	/* oldest first */
			next_pop = f->id;
			on[f - it] = false;
		}
		/* the ones on: in the order they joined (ids rise with it) */
		for (u32 j = 0; j < N; j++) {
			u32 k = n++;

			if (!on[j]) {
				n--;
				continue;
			}
			for (; k && want[k - 1] > it[j].id; k--)
				want[k] = want[k - 1];
			want[k] = it[j].id;
		}
		check_list(&h, want, n);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_fifo_and_front),
		cmocka_unit_test(test_unlink_anywhere),
		cmocka_unit_test(test_queue_churn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
