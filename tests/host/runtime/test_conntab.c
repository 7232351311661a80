/* runtime/conntab.c: the per-prefix index checked against a plain count of
 * the table after every step of a random workload, the admission verdicts
 * (caps per level, the global idle victim, the heaviest prefix), and a
 * table of 20,000 connections from 20,000 sources whose every admit
 * touches a bounded number of entries. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lwip/def.h"
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

/* Addresses in host order, kept as lwIP keeps them (network order). */
static struct conntab_src src_v4(u32 a)
{
	return (struct conntab_src){ .w = { lwip_htonl(a), 0 }, .v6 = false };
}

static struct conntab_src src_v6(u32 hi, u32 lo)
{
	return (struct conntab_src){ .w = { lwip_htonl(hi), lwip_htonl(lo) }, .v6 = true };
}

static bool same_prefix(const struct conntab_src *a, const struct conntab_src *b, u32 level)
{
	struct conntab_src pa, pb;

	conntab_prefix(a, level, &pa);
	conntab_prefix(b, level, &pb);
	return conntab_src_equal(&pa, &pb);
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

/* The reference: everything recounted from the table's list, at every
 * level, and the idle list against the idle flags. */
static unsigned kids_check;

static void check_against_list(const struct conntab *t)
{
	const struct conntab_conn *c, *d;
	const struct list_node *p;
	u32 count = 0, idle = 0;

	if (t->conns.next)	/* set up (the first insert does) */
		list_for_each(p, &t->conns) {
			assert_ptr_equal(p->next->prev, p);
			count++;
		}
	assert_int_equal(t->count, count);
	for (u32 l = 0; l < CONNTAB_LEVELS; l++) {
		u32 sources = 0, heavy = 0;

		for (c = conntab_newest(t); c; c = conntab_older(t, c)) {
			u32 n = 0, on = 0;

			for (d = conntab_newest(t); d; d = conntab_older(t, d))
				n += same_prefix(&c->src, &d->src, l);
			assert_ptr_equal(c->nodes[l], conntab_level_find(t, &c->src, l));
			list_for_each(p, &c->nodes[l]->conns)	/* the node's own list: its n */
				on++;
			assert_int_equal(on, n);
			assert_int_equal(c->nodes[l]->n, n);
			assert_int_equal(c->nodes[l]->level, l);
			if (n > heavy)
				heavy = n;
			if (l && kids_check % 64 == 0) {	/* kids (O(n^3)): c's prefix's distinct prefixes one down */
				const struct conntab_conn *e;
				u32 kids = 0;

				for (d = conntab_newest(t); d; d = conntab_older(t, d)) {
					if (!same_prefix(&c->src, &d->src, l))
						continue;
					for (e = conntab_newest(t); e != d; e = conntab_older(t, e))
						if (same_prefix(&d->src, &e->src, l - 1))
							break;
					kids += e == d;
				}
				assert_int_equal(c->nodes[l]->kids, kids);
			}
			for (d = conntab_newest(t); d != c; d = conntab_older(t, d))
				if (same_prefix(&c->src, &d->src, l))
					break;
			sources += d == c;
		}
		assert_int_equal(t->sources[l], sources);
		assert_int_equal(t->heavy_n[l], heavy);
		if (heavy)
			assert_int_equal(t->by_n[l][heavy]->n, heavy);
	}
	kids_check++;
	for (c = conntab_newest(t); c; c = conntab_older(t, c))
		idle += c->idle;
	if (t->idle.next)
		list_for_each(p, &t->idle) {
			assert_true(list_entry(p, const struct conntab_conn, in_idle)->idle);
			idle--;
		}
	assert_int_equal(idle, 0);
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

			/* Sources sharing /24s, /56s and /48s. */
			live[n] = add(&t, s < 6 ? src_v4(0x0a000000 + (s % 3) * 0x80 + s) :
						  src_v6(0x20010db8, (s % 2) << 16 | (s % 4) << 8 | s), step);
			if (rand() % 2)
				conntab_idle(&t, &live[n]->link, true);
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
	assert_int_equal(t.sources[0], 0);
	assert_int_equal(t.sources[2], 0);
	conntab_release(&t);
	assert_null(t.hash);
}

static void drop_all(struct conntab *t)
{
	while (t->count)
		drop(t, (struct tconn *)conntab_newest(t));
	conntab_release(t);
}

/* While there is room one source may hold the whole table (a NAT gateway);
 * full, a newcomer from elsewhere takes the connection idle longest, and
 * the gateway, over its share now, is refused. */
static void test_nat_gateway(void **state)
{
	struct conntab t = { .max_conns = 8, .max_per_src = 8 };
	struct conntab_src X = src_v4(0xc6336401), Y = src_v4(0xcb007101);
	struct conntab_conn *victim;
	struct tconn *x[8];

	(void)state;
	for (unsigned i = 0; i < 8; i++) {
		assert_int_equal(conntab_admit(&t, &X, tconn_idle, &victim), CONNTAB_ADMIT);
		x[i] = add(&t, X, i);
	}
	assert_int_equal(conntab_admit(&t, &X, tconn_idle, &victim), CONNTAB_REFUSE_SOURCE);
	/* Busy: the heaviest prefix's oldest. */
	assert_int_equal(conntab_admit(&t, &Y, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &x[0]->link);
	/* x[3] went idle first, then x[1]: x[3] is the victim. */
	x[3]->idle = x[1]->idle = true;
	conntab_idle(&t, &x[3]->link, true);
	conntab_idle(&t, &x[1]->link, true);
	check_against_list(&t);
	assert_int_equal(conntab_admit(&t, &Y, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &x[3]->link);
	drop(&t, x[3]);
	add(&t, Y, 100);
	/* X holds 7 of 8, its share is 8 / 2 = 4: refused, even though x[1]
	 * is idle (it may only displace its own prefix's, not itself). */
	assert_int_equal(conntab_admit(&t, &X, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	assert_null(victim);
	/* Y holds 1 < 4: the idle one again. */
	assert_int_equal(conntab_admit(&t, &Y, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &x[1]->link);
	check_against_list(&t);
	drop_all(&t);
}

/* A hog and its neighbour in one /24 that fills the table: the neighbour,
 * at the /24's share, displaces the hog's oldest (within the /24 it is
 * below its share); the hog may not displace the neighbour. */
static void test_neighbour_in_prefix(void **state)
{
	struct conntab t = { .max_conns = 8, .max_per_src = 8 };
	struct conntab_src A = src_v4(0x0a000001), B = src_v4(0x0a000002);
	struct conntab_conn *victim;
	struct tconn *a[7], *b;

	(void)state;
	for (unsigned i = 0; i < 7; i++)
		a[i] = add(&t, A, i);
	b = add(&t, B, 7);
	b->idle = true;
	conntab_idle(&t, &b->link, true);
	a[2]->idle = true;
	assert_int_equal(conntab_admit(&t, &B, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &a[2]->link);	/* the hog's first idle one */
	a[2]->idle = false;
	assert_int_equal(conntab_admit(&t, &B, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &a[0]->link);	/* none idle: its oldest */
	assert_int_equal(conntab_admit(&t, &A, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	/* B at 3, A at 5: one more evens them out; then neither may. */
	drop(&t, a[0]);
	add(&t, B, 8);
	drop(&t, a[1]);
	add(&t, B, 9);
	assert_int_equal(conntab_admit(&t, &B, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &a[2]->link);
	drop(&t, a[2]);
	add(&t, B, 10);
	assert_int_equal(conntab_admit(&t, &B, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	assert_int_equal(conntab_admit(&t, &A, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	check_against_list(&t);
	drop_all(&t);
}

/* The shutout: 64 sources of one IPv6 /58 (each a /64 with one
 * silent connection) fill a table of 64. A newcomer from another /48
 * takes the one idle longest; the /58's next /64 is refused (its /48
 * holds 63, over its share of 32); the newcomer's second connection too
 * is admitted (its /48's share is 32, its /64's as well). */
static void test_many_sources_one_prefix(void **state)
{
	enum { N = 64 };
	struct conntab t = { .max_conns = N, .max_per_src = N };
	struct conntab_src V = src_v6(0x20010db8, 0x00010000), W = src_v6(0x20010db8, 0x00010001);
	struct conntab_conn *victim;
	struct tconn *c[N];

	(void)state;
	for (u32 i = 0; i < N; i++) {
		c[i] = add(&t, src_v6(0x20010db8, 0x40 + i), i);	/* 2001:db8:0:40::/58 */
		c[i]->idle = true;
		conntab_idle(&t, &c[i]->link, true);
	}
	assert_int_equal(t.sources[0], N);
	assert_int_equal(t.sources[1], 1);
	assert_int_equal(t.sources[2], 1);
	idle_calls = 0;
	assert_int_equal(conntab_admit(&t, &V, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &c[0]->link);
	assert_true(idle_calls <= 1);
	drop(&t, c[0]);
	add(&t, V, 100);
	/* The attacker's next /64, or the one it lost: refused. */
	assert_int_equal(conntab_admit(&t, &c[1]->link.src, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	struct conntab_src again = src_v6(0x20010db8, 0x40);
	assert_int_equal(conntab_admit(&t, &again, tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	/* The newcomer's /48 again, another /64 of it: the idle one next. */
	assert_int_equal(conntab_admit(&t, &V, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &c[1]->link);
	assert_int_equal(conntab_admit(&t, &W, tconn_idle, &victim), CONNTAB_EVICT);
	/* Nobody idle: the heaviest /48 (the attacker's 63) gives its oldest. */
	for (u32 i = 1; i < N; i++)
		c[i]->idle = false;
	assert_int_equal(conntab_admit(&t, &V, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &c[1]->link);
	check_against_list(&t);
	drop_all(&t);
}

/* 20,000 connections from 20,000 /48s (a source picks its own address:
 * the hash is keyed, so no chain grows long), then newcomers against the
 * full table: each admit looks at no more than CONNTAB_SCAN connections,
 * and the index stays exact. */
static void test_twenty_thousand(void **state)
{
	enum { N = 20000 };
	struct conntab t = { .max_conns = N, .max_per_src = 64 };
	static struct tconn *c[N];
	struct conntab_conn *victim;
	u32 longest = 0, evicted = 0;

	(void)state;
	for (u32 i = 0; i < N; i++)
		c[i] = add(&t, src_v6(0x20010db8, i << 16), i);
	assert_int_equal(t.count, N);
	for (u32 l = 0; l < CONNTAB_LEVELS; l++) {
		assert_int_equal(t.sources[l], N);
		assert_int_equal(t.heavy_n[l], 1);
	}
	for (u32 h = 0; h <= t.hash_mask; h++) {
		u32 len = 0;

		for (const struct conntab_node *n = t.hash[h]; n; n = n->hnext)
			len++;
		longest = len > longest ? len : longest;
	}
	assert_true(longest <= 24);	/* 60,000 nodes in 32,768 chains: expected about 9 */
	/* Nobody idle, nobody above the newcomer's + 1: refused, no walk. */
	idle_calls = 0;
	for (u32 i = 0; i < N; i++)
		assert_int_equal(conntab_admit(&t, &(struct conntab_src){ .w = { i, 1 } }, tconn_idle, &victim),
				 CONNTAB_REFUSE_FULL);
	assert_int_equal(idle_calls, 0);
	/* A source of an existing /48 is at its /48's share (1): refused
	 * after one look at that /48's connection. */
	assert_int_equal(conntab_admit(&t, &(struct conntab_src){ .w = { lwip_htonl(0x20010db8), lwip_htonl(5u << 16 | 1) }, .v6 = true },
				       tconn_idle, &victim), CONNTAB_REFUSE_FULL);
	/* One source piles up 64 (evicting others is not the table's call:
	 * the test makes room by hand), then newcomers take its slots one by
	 * one, each look bounded by CONNTAB_SCAN. */
	for (u32 i = 0; i < 64; i++) {
		drop(&t, c[N - 1 - i]);
		c[N - 1 - i] = add(&t, src_v4(0x0a000001), N + i);
	}
	assert_int_equal(t.heavy_n[0], 64);
	idle_calls = 0;
	for (u32 i = 0; i < 62; i++) {
		struct conntab_src s = src_v4(0x0b000000 + (i << 8));

		assert_int_equal(conntab_admit(&t, &s, tconn_idle, &victim), CONNTAB_EVICT);
		assert_int_equal(victim->node->src.w[0], lwip_htonl(0x0a000001));
		for (u32 j = N - 64; j < N; j++)
			if (&c[j]->link == victim) {
				drop(&t, c[j]);
				c[j] = add(&t, s, 2 * N + i);
				evicted++;
				break;
			}
	}
	assert_int_equal(evicted, 62);
	assert_true(idle_calls <= 62 * CONNTAB_SCAN);
	assert_int_equal(t.heavy_n[0], 2);
	/* Then all idle, oldest first: a newcomer takes the first, in one look. */
	for (u32 i = 0; i < N; i++) {
		c[i]->idle = true;
		conntab_idle(&t, &c[i]->link, true);
	}
	idle_calls = 0;
	struct conntab_src z = src_v4(0x0c000001);
	assert_int_equal(conntab_admit(&t, &z, tconn_idle, &victim), CONNTAB_EVICT);
	assert_ptr_equal(victim, &c[0]->link);
	assert_int_equal(idle_calls, 1);
	assert_int_equal(t.count, N);
	for (u32 i = 0; i < N; i++)
		drop(&t, c[i]);
	assert_int_equal(t.count, 0);
	for (u32 l = 0; l < CONNTAB_LEVELS; l++) {
		assert_int_equal(t.sources[l], 0);
		assert_int_equal(t.heavy_n[l], 0);
	}
	assert_true(list_empty(&t.idle));
	assert_true(list_empty(&t.conns));
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
	assert_int_equal(t.sources[0], 2);
	assert_int_equal(t.heavy_n[0], 2);
	assert_true(conntab_rekey(&t, &c[2]->link, &Y));	/* the same: nothing */
	check_against_list(&t);
	/* Within the prefixes it is alone in: its /56 and /48 stay. */
	struct conntab_node *n48 = c[2]->link.nodes[2];
	struct conntab_src Y2 = src_v6(0x20010db8, 8);
	assert_true(conntab_rekey(&t, &c[2]->link, &Y2));
	assert_ptr_equal(c[2]->link.nodes[2], n48);
	assert_int_equal(n48->n, 1);
	assert_int_equal(c[2]->link.nodes[1]->kids, 1);
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
		cmocka_unit_test(test_nat_gateway),
		cmocka_unit_test(test_neighbour_in_prefix),
		cmocka_unit_test(test_many_sources_one_prefix),
		cmocka_unit_test(test_twenty_thousand),
		cmocka_unit_test(test_resize_when_empty),
		cmocka_unit_test(test_rekey),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
