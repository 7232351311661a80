/* storage/index.c: the AVL index against a sorted array under seeded
 * random inserts and removals (short keys, so prefixes collide), with the
 * tree's own check (order, heights, balance, count, bytes) after every
 * change; prefix walks with and without a start key against the array;
 * an early stop; clear frees everything. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "storage/index.h"

#define NREF 600

struct ref {
	u8 key[8];
	u32 klen;
};

static struct ref ref[NREF];
static unsigned nref;

static int ref_cmp(const void *a, const void *b)
{
	const struct ref *x = a, *y = b;
	int c = memcmp(x->key, y->key, MIN(x->klen, y->klen));

	return c ? c : (int)x->klen - (int)y->klen;
}

static int ref_find(const u8 *k, u32 klen)
{
	for (unsigned i = 0; i < nref; i++)
		if (ref[i].klen == klen && !memcmp(ref[i].key, k, klen))
			return (int)i;
	return -1;
}

static struct st_ent *ent_new(const u8 *k, u32 klen)
{
	struct st_ent *e = calloc(1, ST_ENT_HDR + klen);

	e->klen = (u8)klen;
	memcpy(e->key, k, klen);
	e->lsn = klen;
	return e;
}

struct collect {
	struct ref got[NREF];
	unsigned n, stop_at;
};

static bool collect_fn(const struct st_ent *e, void *arg)
{
	struct collect *c = arg;

	memcpy(c->got[c->n].key, e->key, e->klen);
	c->got[c->n].klen = e->klen;
	c->n++;
	return c->n != c->stop_at;
}

/* The reference's answer to a walk: sorted keys with the prefix, after `after`. */
static unsigned ref_walk(const u8 *p, u32 plen, const struct ref *after, struct ref *out)
{
	struct ref sorted[NREF];
	unsigned n = 0;

	memcpy(sorted, ref, nref * sizeof ref[0]);
	qsort(sorted, nref, sizeof sorted[0], ref_cmp);
	for (unsigned i = 0; i < nref; i++) {
		if (sorted[i].klen < plen || memcmp(sorted[i].key, p, plen))
			continue;
		if (after && ref_cmp(&sorted[i], after) <= 0)
			continue;
		out[n++] = sorted[i];
	}
	return n;
}

static void check_walks(struct st_index *x)
{
	static const char *prefixes[] = { "", "a", "b", "ab", "ba", "abc", "z", "cc" };
	struct ref want[NREF];

	for (unsigned i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
		const u8 *p = (const u8 *)prefixes[i];
		u32 plen = (u32)strlen(prefixes[i]);
		struct collect c = { .n = 0 };
		unsigned n = ref_walk(p, plen, NULL, want), calls;

		calls = st_index_walk(x, p, plen, NULL, 0, collect_fn, &c);
		assert_int_equal(calls, n);
		assert_int_equal(c.n, n);
		for (unsigned k = 0; k < n; k++)
			assert_int_equal(ref_cmp(&c.got[k], &want[k]), 0);
		/* Resume after the middle one, the way a paged scan does. */
		if (n >= 2) {
			struct ref mid = want[n / 2], want2[NREF];
			unsigned n2 = ref_walk(p, plen, &mid, want2);

			c.n = 0;
			assert_int_equal(st_index_walk(x, p, plen, mid.key, mid.klen, collect_fn, &c), n2);
			for (unsigned k = 0; k < n2; k++)
				assert_int_equal(ref_cmp(&c.got[k], &want2[k]), 0);
			assert_int_equal(n2, n - n / 2 - 1);
			/* An early stop: exactly stop_at calls. */
			c.n = 0;
			c.stop_at = 2;
			assert_int_equal(st_index_walk(x, p, plen, NULL, 0, collect_fn, &c), 2);
		}
	}
}

static void free_fn(struct st_ent *e, void *arg)
{
	(*(unsigned *)arg)++;
	free(e);
}

static void test_random_ops(void **state)
{
	struct st_index x = { 0 };
	unsigned freed = 0;

	srand(31);
	nref = 0;
	for (unsigned step = 0; step < 6000; step++) {
		u8 k[8];
		u32 klen = 1 + (u32)rand() % 4;
		int at;

		for (u32 i = 0; i < klen; i++)
			k[i] = (u8)('a' + rand() % 3);
		at = ref_find(k, klen);
		if (rand() % 3 && nref < NREF) {
			struct st_ent *e = ent_new(k, klen);
			int r = st_index_insert(&x, e);

			if (at >= 0) {
				assert_int_equal(r, -EEXIST);
				free(e);
			} else {
				assert_int_equal(r, 0);
				memcpy(ref[nref].key, k, klen);
				ref[nref++].klen = klen;
			}
		} else {
			struct st_ent *e = st_index_remove(&x, k, klen);

			if (at < 0) {
				assert_null(e);
			} else {
				assert_non_null(e);
				assert_memory_equal(e->key, k, klen);
				free(e);
				ref[at] = ref[--nref];
			}
		}
		assert_int_equal(st_index_check(&x), 0);
		assert_int_equal(x.count, nref);
		for (unsigned i = 0; i < nref; i += 17) {
			struct st_ent *e = st_index_find(&x, ref[i].key, ref[i].klen);

			assert_non_null(e);
			assert_int_equal(e->lsn, ref[i].klen);
		}
		if (step % 500 == 0)
			check_walks(&x);
	}
	check_walks(&x);
	st_index_clear(&x, free_fn, &freed);
	assert_int_equal(freed, nref);
	assert_null(x.root);
	assert_int_equal(x.bytes, 0);
}

static void test_charge_and_height(void **state)
{
	struct st_index x = { 0 };
	unsigned freed = 0;
	u64 bytes = 0;

	assert_int_equal(st_ent_charge(1), 80);
	assert_int_equal(st_ent_charge(8), 80);
	assert_int_equal(st_ent_charge(9), 96);
	assert_int_equal(st_ent_charge(255), 336);
	/* Sorted inserts (the worst case for an unbalanced tree). */
	for (u32 i = 0; i < 4096; i++) {
		u8 k[4] = { (u8)(i >> 24), (u8)(i >> 16), (u8)(i >> 8), (u8)i };

		assert_int_equal(st_index_insert(&x, ent_new(k, 4)), 0);
		bytes += st_ent_charge(4);
	}
	assert_int_equal(x.bytes, bytes);
	assert_int_equal(st_index_check(&x), 0);
	assert_true(x.root->height <= 13);	/* 1.44 log2(4098) = 17.3; AVL on a sorted run: 13 */
	/* A corrupted height is caught by the check. */
	x.root->height++;
	assert_int_equal(st_index_check(&x), -EBADMSG);
	x.root->height--;
	st_index_clear(&x, free_fn, &freed);
	assert_int_equal(freed, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_ops),
		cmocka_unit_test(test_charge_and_height),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
