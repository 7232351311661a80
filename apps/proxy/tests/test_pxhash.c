/* apps/proxy/pxhash.c: rendezvous hashing. The same key always goes to the
 * same upstream; 10,000 keys spread within 10% of even over 2, 3 and 4
 * upstreams; an upstream down moves its own keys only, spread over the
 * others, and they come back when it does; one added to three takes about
 * a quarter of the keys, all from the others, none moved among them;
 * tried upstreams are skipped; every one down: the one back soonest; the
 * seed changes the ring. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apps/proxy/pxhash.h"

#define KEYS 10000

static const char *const labels[] = { "10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80", "[fd00::4]:8080" };

static void ring(struct siphash_key *k, u64 ids[4], const char *seed)
{
	px_hash_seed(k, seed);
	for (unsigned i = 0; i < 4; i++)
		ids[i] = px_hash_id(k, labels[i]);
}

static int pick(const struct siphash_key *k, const u64 *ids, const struct px_choice *up, unsigned n, unsigned key)
{
	char s[32];
	int len = snprintf(s, sizeof s, "client-%u", key);

	return px_hash_choose(k, ids, up, n, 1000, s, (size_t)len);
}

static void test_stable(void **state)
{
	struct siphash_key k, k2;
	u64 ids[4], ids2[4];
	struct px_choice up[4] = { 0 };

	(void)state;
	ring(&k, ids, "seed");
	ring(&k2, ids2, "seed");
	assert_memory_equal(&k, &k2, sizeof k);
	for (unsigned key = 0; key < 1000; key++) {
		int a = pick(&k, ids, up, 4, key);

		assert_true(a >= 0 && a < 4);
		assert_int_equal(pick(&k, ids, up, 4, key), a);
		assert_int_equal(pick(&k2, ids2, up, 4, key), a);
	}
	/* the upstreams' order in the list does not matter: the ring is by label */
	for (unsigned key = 0; key < 1000; key++) {
		u64 rev[4] = { ids[3], ids[2], ids[1], ids[0] };

		assert_int_equal(pick(&k, rev, up, 4, key), 3 - pick(&k, ids, up, 4, key));
	}
	/* another seed, another ring: some keys land elsewhere */
	{
		unsigned differ = 0;

		ring(&k2, ids2, "other seed");
		for (unsigned key = 0; key < 1000; key++)
			differ += pick(&k, ids, up, 4, key) != pick(&k2, ids2, up, 4, key);
		assert_true(differ > 500);	/* 750 expected: 3/4 land elsewhere */
	}
}

static void test_spread(void **state)
{
	struct siphash_key k;
	u64 ids[4];
	struct px_choice up[4] = { 0 };

	(void)state;
	ring(&k, ids, "spread");
	for (unsigned n = 2; n <= 4; n++) {
		unsigned count[4] = { 0 }, even = KEYS / n;

		for (unsigned key = 0; key < KEYS; key++)
			count[pick(&k, ids, up, n, key)]++;
		for (unsigned i = 0; i < n; i++) {
			/* within 10% of even: 250 of 2,500 is 5.8 standard deviations */
			assert_true(count[i] > even - even / 10);
			assert_true(count[i] < even + even / 10);
		}
	}
}

static void test_down_and_back(void **state)
{
	struct siphash_key k;
	u64 ids[4];
	struct px_choice up[4] = { 0 };
	static int before[KEYS];
	unsigned moved_to[4] = { 0 }, on2 = 0;

	(void)state;
	ring(&k, ids, "down");
	for (unsigned key = 0; key < KEYS; key++)
		before[key] = pick(&k, ids, up, 4, key);
	up[2].down_until = 5000;	/* down at 1000 */
	for (unsigned key = 0; key < KEYS; key++) {
		int now = pick(&k, ids, up, 4, key);

		assert_int_not_equal(now, 2);
		if (before[key] != 2)
			assert_int_equal(now, before[key]);	/* only its keys move */
		else
			moved_to[now]++, on2++;
	}
	/* about a quarter moved, spread over the three others (each about a third) */
	assert_true(on2 > KEYS / 4 - KEYS / 40 && on2 < KEYS / 4 + KEYS / 40);
	for (unsigned i = 0; i < 4; i++)
		if (i != 2)
			assert_true(moved_to[i] > on2 / 3 - on2 / 6 && moved_to[i] < on2 / 3 + on2 / 6);
	/* back up: every key where it was */
	up[2].down_until = 0;
	for (unsigned key = 0; key < KEYS; key++)
		assert_int_equal(pick(&k, ids, up, 4, key), before[key]);
}

static void test_added(void **state)
{
	struct siphash_key k;
	u64 ids[4];
	struct px_choice up[4] = { 0 };
	unsigned moved = 0;

	(void)state;
	ring(&k, ids, "added");
	for (unsigned key = 0; key < KEYS; key++) {
		int three = pick(&k, ids, up, 3, key), four = pick(&k, ids, up, 4, key);

		if (three != four) {
			assert_int_equal(four, 3);	/* a key moves only to the new one */
			moved++;
		}
	}
	assert_true(moved > KEYS / 4 - KEYS / 40 && moved < KEYS / 4 + KEYS / 40);
}

static void test_tried_and_all_down(void **state)
{
	struct siphash_key k;
	u64 ids[4];
	struct px_choice up[4] = { 0 };
	int first, second;

	(void)state;
	ring(&k, ids, "tried");
	first = px_hash_choose(&k, ids, up, 4, 1000, "key", 3);
	up[first].tried = true;
	second = px_hash_choose(&k, ids, up, 4, 1000, "key", 3);
	assert_true(second >= 0 && second != first);
	/* the second choice is the one a down first choice gives too */
	up[first].tried = false;
	up[first].down_until = 2000;
	assert_int_equal(px_hash_choose(&k, ids, up, 4, 1000, "key", 3), second);
	/* every one down: the one back soonest; all tried: -1 */
	for (unsigned i = 0; i < 4; i++)
		up[i].down_until = 9000 - i * 1000;
	assert_int_equal(px_hash_choose(&k, ids, up, 4, 1000, "key", 3), 3);
	up[3].tried = true;
	assert_int_equal(px_hash_choose(&k, ids, up, 4, 1000, "key", 3), 2);
	for (unsigned i = 0; i < 4; i++)
		up[i].tried = true;
	assert_int_equal(px_hash_choose(&k, ids, up, 4, 1000, "key", 3), -1);
	assert_int_equal(px_hash_choose(&k, ids, up, 0, 1000, "key", 3), -1);
	/* an empty key is a key */
	memset(up, 0, sizeof up);
	assert_true(px_hash_choose(&k, ids, up, 4, 1000, "", 0) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stable),
		cmocka_unit_test(test_spread),
		cmocka_unit_test(test_down_and_back),
		cmocka_unit_test(test_added),
		cmocka_unit_test(test_tried_and_all_down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
