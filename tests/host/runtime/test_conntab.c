/* runtime/conntab.c: the per-source index checked against a plain count of
 * the table after every step of a random workload, the fair-share verdicts,
 * and a table of 20,000 connections from 20,000 sources whose every admit
 * touches a bounded number of entries. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/conntab.h"

void *calloc(size_t n, size_t size);
void free(void *p);
int rand(void);
void srand(unsigned seed);

struct tconn {
	struct conntab_conn link;	/* first */
	bool idle;
	unsigned id;
};

static unsigned idle_calls;

static bool tconn_idle(const struct conntab_conn *l)
{
	idle_calls++;
	return ((const struct tconn *)l)->idle;
}

static struct conntab_src src_v4(u32 a)
{
	return (struct conntab_src){ .w = { a, 0 }, .v6 = false };
}

static struct conntab_src src_v6(u32 hi, u32 lo)
{
	return (struct conntab_src){ .w = { hi, lo }, .v6 = true };
}

static struct tconn *add(struct conntab *t, struct conntab_src s, unsigned id)
{
	struct tconn *c = calloc(1, sizeof *c);

	assert_non_null(c);
	c->link.src = s;
	c->id = id;
	assert_true(conntab_insert(t, &c->link));
	return c;
}

static void drop(struct conntab *t, struct tconn *c)
{
	conntab_remove(t, &c->link);
	free(c);
}

/* The reference: everything recounted from the table's list. */
static void check_against_list(const struct conntab *t)
{
	const struct conntab_conn *c, *d;
	u32 count = 0, sources = 0, heavy = 0;

	for (c = t->head; c; c = c->next) {
		u32 n = 0;

		count++;
		for (d = t->head; d; d = d->next)
			n += conntab_src_equal(&c->src, &d->src);
		assert_int_equal(conntab_src_count(t, &c->src), n);
		assert_ptr_equal(c->node, conntab_node_find(t, &c->src));
		assert_int_equal(c->node->n, n);
		if (n > heavy)
			heavy = n;
	}
	for (c = t->head; c; c = c->next) {
		for (d = t->head; d != c; d = d->next)
			if (conntab_src_equal(&c->src, &d->src))
				break;
		sources += d == c;
	}
	assert_int_equal(t->count, count);
	assert_int_equal(t->sources, sources);
	assert_int_equal(t->heavy_n, heavy);
	if (heavy)
		assert_int_equal(t->by_n[heavy].head->n, heavy);
}

/* A random workload over 12 sources: the index agrees with the list after
 * every insert and remove. */
static void test_index_matches_list(void **state)
{
	struct conntab t = { .max_conns = 48, .max_per_src = 48 };
	struct tconn *live[48];
	unsigned n = 0;

	(void)state;
	srand(7);
	for (unsigned step = 0; step < 4000; step++) {
		if (n < 48 && (n == 0 || rand() % 3)) {
			u32 s = (u32)rand() % 12;

			live[n] = add(&t, s < 6 ? src_v4(s) : src_v6(s, 0), step);
			n++;
		} else {
			unsigned i = (unsigned)rand() % n;

			drop(&t, live[i]);
			live[i] = live[--n];
		}
		check_against_list(&t);
	}
	while (n)
		drop(&t, live[--n]);
	check_against_list(&t);
	assert_int_equal(t.sources, 0);
	conntab_release(&t);
	assert_null(t.hash);
}

/* The fair share: the newcomer below its share takes the heaviest
 * source's oldest idle connection, else its oldest; at its share, or when
 * nobody is above theirs, it is refused; a source at max_per_src is
 * refused while there is room. */
static void test_fair_share_verdicts(void **state)
{
	struct conntab t = { .max_conns = 6, .max_per_src = 4 };
	struct tconn *a[4];
	struct conntab_conn *victim;
	struct conntab_src A = src_v4(1), B = src_v4(2), C = src_v6(3, 4), D = src_v4(9);

	(void)state;
	for (int i = 0; i < 4; i++)
		a[i] = add(&t, A, (unsigned)i);
	assert_int_equal(conntab_admit(&t, &A, tconn_idle, &victim), CONNTAB_REFUSE_SOURCE);
	add(&t, B, 10);
	add(&t, B, 11);
	/* Full: A 4, B 2; C's share is 6 / 3 = 2, A is above it. */
	a[0]->idle = false;
	a[1]->idle = true;
	a[2]->idle = true;
	assert_int_equal(conntab_admit(&t, &C, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &a[1]->link);	/* the oldest idle one */
	a[1]->idle = a[2]->idle = false;
	assert_int_equal(conntab_admit(&t, &C, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &a[0]->link);	/* none idle: the oldest */
	/* B holds its share (6 / 2 = 3 > 2, but A is the heaviest at 4 and B
	 * is below 3: it may take one). */
	assert_int_equal(conntab_admit(&t, &B, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &a[0]->link);
	drop(&t, a[0]);
	add(&t, C, 20);
	drop(&t, a[1]);
	add(&t, C, 21);
	/* A 2, B 2, C 2: each at its share, refused; a fourth source's share
	 * is 6 / 4 = 1, so it takes a slot of the source at 2 the longest (B). */
	assert_int_equal(conntab_admit(&t, &C, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	assert_null(victim);
	assert_int_equal(conntab_admit(&t, &A, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	assert_int_equal(conntab_admit(&t, &D, tconn_idle, &victim), CONNTAB_EVICT);
	assert_true(conntab_src_equal(&victim->src, &B));
	check_against_list(&t);
	while (t.head) {
		struct tconn *c = (struct tconn *)t.head;

		drop(&t, c);
	}
	conntab_release(&t);
}

/* 20,000 connections from 20,000 IPv6 /64s (a source picks its own
 * address: the hash is keyed, so no chain grows long), then 20,000
 * newcomers against the full table: each admit looks at no more than the
 * heaviest source's connections, and the index stays exact. */
static void test_twenty_thousand(void **state)
{
	enum { N = 20000 };
	struct conntab t = { .max_conns = N, .max_per_src = 64 };
	static struct tconn *c[N];
	struct conntab_conn *victim;
	u32 longest = 0, evicted = 0;

	(void)state;
	for (u32 i = 0; i < N; i++)
		c[i] = add(&t, src_v6(0x20010db8, i << 8), i);	/* one /56, 20,000 /64s */
	assert_int_equal(t.count, N);
	assert_int_equal(t.sources, N);
	assert_int_equal(t.heavy_n, 1);
	for (u32 h = 0; h <= t.hash_mask; h++) {
		u32 len = 0;

		for (const struct conntab_node *n = t.hash[h]; n; n = n->hnext)
			len++;
		longest = len > longest ? len : longest;
	}
	assert_true(longest <= 16);	/* expected about 7 at load 0.61 */
	/* Everyone holds its share: refused, without a walk. */
	idle_calls = 0;
	for (u32 i = 0; i < N; i++)
		assert_int_equal(conntab_admit(&t, &(struct conntab_src){ .w = { i, 1 } }, tconn_idle, &victim),
				 CONNTAB_REFUSE_FULL);
	assert_int_equal(idle_calls, 0);
	/* One source piles up 64 (evicting others is not the table's call:
	 * the test makes room by hand), then newcomers take its slots one by
	 * one, each look bounded by its 64. */
	for (u32 i = 0; i < 64; i++) {
		drop(&t, c[N - 1 - i]);
		c[N - 1 - i] = add(&t, src_v4(0x0a000001), N + i);
	}
	assert_int_equal(t.heavy_n, 64);
	idle_calls = 0;
	for (u32 i = 0; i < 62; i++) {
		struct conntab_src s = src_v4(0x0b000000 + i);

		assert_int_equal(conntab_admit(&t, &s, tconn_idle, &victim), CONNTAB_EVICT);
		assert_int_equal(victim->node->src.w[0], 0x0a000001);
		for (u32 j = N - 64; j < N; j++)
			if (&c[j]->link == victim) {
				drop(&t, c[j]);
				c[j] = add(&t, s, 2 * N + i);
				evicted++;
				break;
			}
	}
	assert_int_equal(evicted, 62);
	assert_true(idle_calls <= 62 * 64);
	assert_int_equal(t.heavy_n, 2);
	assert_int_equal(t.count, N);
	for (u32 i = 0; i < N; i++)
		drop(&t, c[i]);
	assert_int_equal(t.count, 0);
	assert_int_equal(t.sources, 0);
	assert_int_equal(t.heavy_n, 0);
	conntab_release(&t);
}

/* A restarted service with other limits gets an index of their size. */
static void test_resize_when_empty(void **state)
{
	struct conntab t = { .max_conns = 4, .max_per_src = 2 };
	struct tconn *x;

	(void)state;
	x = add(&t, src_v4(1), 0);
	assert_int_equal(t.hash_mask + 1, 4);
	drop(&t, x);
	t.max_conns = 100;
	t.max_per_src = 50;
	x = add(&t, src_v4(1), 1);
	assert_int_equal(t.hash_mask + 1, 128);
	assert_int_equal(t.by_n_max, 50);
	drop(&t, x);
	conntab_release(&t);
}

/* A connection re-keyed to the client a PROXY header names: it leaves its
 * proxy's count (the proxy's node goes with its last one) and joins the
 * client's, the index exact throughout. */
static void test_rekey(void **state)
{
	struct conntab t = { .max_conns = 8, .max_per_src = 8 };
	struct conntab_src P = src_v4(0x0a000001), X = src_v4(0xc0000207), Y = src_v6(0x20010db8, 7);
	struct tconn *c[3];

	(void)state;
	for (int i = 0; i < 3; i++)
		c[i] = add(&t, P, (unsigned)i);
	assert_true(conntab_rekey(&t, &c[0]->link, &X));
	check_against_list(&t);
	assert_int_equal(conntab_src_count(&t, &P), 2);
	assert_int_equal(conntab_src_count(&t, &X), 1);
	assert_true(conntab_rekey(&t, &c[1]->link, &X));
	assert_true(conntab_rekey(&t, &c[2]->link, &Y));
	check_against_list(&t);
	assert_null(conntab_node_find(&t, &P));
	assert_int_equal(t.sources, 2);
	assert_int_equal(t.heavy_n, 2);
	assert_true(conntab_rekey(&t, &c[2]->link, &Y));	/* the same: nothing */
	check_against_list(&t);
	for (int i = 0; i < 3; i++)
		drop(&t, c[i]);
	check_against_list(&t);
	conntab_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index_matches_list),
		cmocka_unit_test(test_fair_share_verdicts),
		cmocka_unit_test(test_twenty_thousand),
		cmocka_unit_test(test_resize_when_empty),
		cmocka_unit_test(test_rekey),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
