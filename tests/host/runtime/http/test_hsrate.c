/* runtime/http/hsrate.c: the buckets' arithmetic (bursts, the long-run rate
 * to the handshake, no overflow near the end of time_ns()'s range),
 * prefixes (IPv4 /24, IPv6 /56), the global bucket's interplay with the
 * prefix's, and the table's bound against a spray of prefixes: a busy
 * prefix keeps its bucket, and the buckets in use stay within what the
 * global rate allows. And the fair turns of the handshake steps put off
 * (hsfair): round robin across prefixes, checked against a plain model. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/http/hsrate.h"

#define SEC 1000000000ULL
#define MS 1000000ULL

static struct hsrate rt;
static const u8 key[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static void v4(u8 a[4], u32 x)
{
	a[0] = (u8)(x >> 24);
	a[1] = (u8)(x >> 16);
	a[2] = (u8)(x >> 8);
	a[3] = (u8)x;
}

static enum hsrate_verdict take4(u32 x, u64 now)
{
	u8 a[4];

	v4(a, x);
	return hsrate_take(&rt, a, 4, now);
}

/* Every bucket's tat within [.., now + span]: the invariant the overflow
 * argument rests on. */
static void check_tats(u64 now)
{
	for (unsigned i = 0; i < HSRATE_BUCKETS; i++)
		if (rt.b[i].tag && rt.b[i].tat > now)
			assert_true(rt.b[i].tat - now <= rt.prefix.span_ns);
	if (rt.global.interval_ns && rt.global_tat > now)
		assert_true(rt.global_tat - now <= rt.global.span_ns);
}

/* A burst of B at once, then one every T: at T - 1 ns nothing, at T one. */
static void test_burst_and_refill(void **state)
{
	u64 t = 5 * SEC;

	hsrate_init(&rt, key);
	hsrate_set(&rt, 10, 5, 0, 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(take4(0x0a000001, t), HSRATE_PASS);
	assert_int_equal(take4(0x0a000001, t), HSRATE_PREFIX);
	assert_int_equal(take4(0x0a0000fe, t), HSRATE_PREFIX);	/* same /24 */
	assert_int_equal(take4(0x0a000101, t), HSRATE_PASS);	/* next /24 */
	assert_int_equal(take4(0x0a000001, t + 100 * MS - 1), HSRATE_PREFIX);
	assert_int_equal(take4(0x0a000001, t + 100 * MS), HSRATE_PASS);
	assert_int_equal(take4(0x0a000001, t + 100 * MS), HSRATE_PREFIX);
	/* refusals cost nothing: a full burst again B x T after the last pass */
	for (u64 s = t + 100 * MS; s < t + 600 * MS; s += MS)
		assert_int_equal(take4(0x0a000001, s), s >= t + 200 * MS && (s - t) % (100 * MS) == 0 ?
			HSRATE_PASS : HSRATE_PREFIX);
	for (int i = 0; i < 5; i++)
		assert_int_equal(take4(0x0a000001, t + 1100 * MS), HSRATE_PASS);
	assert_int_equal(take4(0x0a000001, t + 1100 * MS), HSRATE_PREFIX);
	check_tats(t + 1100 * MS);
}

/* Over 1,000 s of one attempt every 100 us: exactly burst + rate x time
 * admitted, for rates that do and do not divide a second. */
static void test_long_run_rate(void **state)
{
	static const u32 rates[] = { 1, 7, 100, 333, 5000 };

	for (unsigned k = 0; k < sizeof rates / sizeof rates[0]; k++) {
		u64 t0 = 1000 * SEC, n = 0, T = SEC / rates[k];

		hsrate_init(&rt, key);
		hsrate_set(&rt, rates[k], 20, 0, 0);
		for (u64 t = t0; t <= t0 + 1000 * SEC; t += 100000)
			n += take4(0xc0000201, t) == HSRATE_PASS;
		/* the interval is 10^9 / rate rounded down: a hair faster */
		assert_int_equal(n, 20 + 1000 * SEC / T);
		assert_true(n >= 20 + 1000ULL * rates[k]);
	}
}

/* The global bucket: refuses past its rate whatever the prefix, and a
 * handshake it refuses takes nothing from the prefix or the table. */
static void test_global(void **state)
{
	u64 t = SEC, passed = 0;
	u8 a[4];

	hsrate_init(&rt, key);
	hsrate_set(&rt, 2, 2, 10, 10);
	for (u32 p = 0; p < 100; p++)
		passed += take4(0x0b000001 + (p << 8), t) == HSRATE_PASS;
	assert_int_equal(passed, 10);
	assert_int_equal(hsrate_in_use(&rt, t), 10);
	assert_int_equal(take4(0x0c000001, t), HSRATE_GLOBAL);
	assert_int_equal(hsrate_in_use(&rt, t), 10);
	/* 100 ms later one global token: 0x0c's prefix still has both */
	assert_int_equal(take4(0x0c000001, t + 100 * MS), HSRATE_PASS);
	assert_int_equal(take4(0x0c000001, t + 200 * MS), HSRATE_PASS);
	assert_int_equal(take4(0x0c000001, t + 300 * MS), HSRATE_PREFIX);
	/* prefix limit off, global on */
	hsrate_init(&rt, key);
	hsrate_set(&rt, 0, 0, 50, 1);
	v4(a, 1);
	assert_int_equal(hsrate_take(&rt, a, 4, t), HSRATE_PASS);
	assert_int_equal(hsrate_take(&rt, a, 4, t + 20 * MS - 1), HSRATE_GLOBAL);
	assert_int_equal(hsrate_take(&rt, a, 4, t + 20 * MS), HSRATE_PASS);
	assert_int_equal(hsrate_in_use(&rt, t), 0);
	/* both off: everything passes, nothing kept */
	hsrate_set(&rt, 0, 0, 0, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(hsrate_take(&rt, a, 4, t), HSRATE_PASS);
}

/* IPv6 by /56; IPv4 and IPv6 never share a bucket. */
static void test_v6_prefix(void **state)
{
	u8 a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0x01 };
	u8 v4a[4] = { 0x20, 0x01, 0x0d, 0xb8 };

	hsrate_init(&rt, key);
	hsrate_set(&rt, 1, 1, 0, 0);
	assert_int_equal(hsrate_take(&rt, a, 16, SEC), HSRATE_PASS);
	a[7] = 0xff;	/* another /64 of the same /56 */
	a[15] = 9;
	assert_int_equal(hsrate_take(&rt, a, 16, SEC), HSRATE_PREFIX);
	assert_int_equal(hsrate_take(&rt, v4a, 4, SEC), HSRATE_PASS);
	a[6] = 1;	/* another /56 */
	assert_int_equal(hsrate_take(&rt, a, 16, SEC), HSRATE_PASS);
}

/* Near the end of a u64 of nanoseconds (584 years), with the largest span
 * (rate 1, the largest burst) and the smallest interval: no wrap, the
 * invariant holds (UBSan does not flag unsigned wrap: checked here). */
static void test_no_overflow(void **state)
{
	u64 end = UINT64_MAX - HSRATE_SPAN_MAX - 1;
	u64 t = end - 10 * SEC;

	hsrate_init(&rt, key);
	hsrate_set(&rt, 1, 0xffffffffu, 0xffffffffu, 0xffffffffu);	/* clamped */
	assert_int_equal(rt.prefix.span_ns, HSRATE_SPAN_MAX);
	assert_int_equal(rt.global.interval_ns, SEC / HSRATE_RATE_MAX);
	for (int i = 0; i < HSRATE_BURST_MAX; i++)
		assert_int_equal(take4(0x0d000001, t), HSRATE_PASS);
	assert_int_equal(take4(0x0d000001, t), HSRATE_PREFIX);
	check_tats(t);
	for (u64 s = t; s <= end; s += SEC / 2)
		(void)take4(0x0d000001, s);
	check_tats(end);
	hsrate_init(&rt, key);
	hsrate_set(&rt, HSRATE_RATE_MAX, HSRATE_BURST_MAX, 1, 1);
	assert_int_equal(take4(0x0e000001, end), HSRATE_PASS);
	assert_int_equal(take4(0x0f000001, end), HSRATE_GLOBAL);
	assert_true(rt.global_tat > end && rt.global_tat - end == SEC);
}

/* A busy prefix, being limited, keeps its bucket through a spray of a
 * million one-handshake prefixes (no global limit, so nothing but the
 * eviction rule protects it); the table never grows. */
static void test_spray_keeps_busy(void **state)
{
	u64 t = 10 * SEC;

	hsrate_init(&rt, key);
	hsrate_set(&rt, 10, 10, 0, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(take4(0x0a000001, t), HSRATE_PASS);
	for (u32 p = 0; p < 1000000; p++) {
		u64 s = t + p;	/* 1 ns apart: all within the busy prefix's span */

		assert_int_equal(take4(0x40000000 + (p << 8), s), HSRATE_PASS);
		if (p % 4096 == 0)
			assert_int_equal(take4(0x0a000001, s), HSRATE_PREFIX);
	}
	assert_int_equal(take4(0x0a000001, t + 1000000), HSRATE_PREFIX);
	assert_true(rt.replaced > 900000);
	check_tats(t + 1000000);
}

/* What replacing a busy prefix's bucket costs: the other ways of its set
 * each further in debt than it, i.e. (HSRATE_WAYS - 1) x burst handshakes
 * from prefixes that land in that set. */
static void test_replace_cost(void **state)
{
	u32 coll[HSRATE_WAYS];
	unsigned n = 0;
	u64 t = 10 * SEC;
	u8 a[4];
	u64 target = HSRATE_BUCKETS;

	hsrate_init(&rt, key);
	hsrate_set(&rt, 10, 10, 0, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(take4(0x0a000001, t), HSRATE_PASS);
	for (unsigned i = 0; i < HSRATE_BUCKETS; i++)
		if (rt.b[i].tag)
			target = i / HSRATE_WAYS;
	/* prefixes that share its set (the test knows the key; a sender does not) */
	for (u32 p = 1; n < HSRATE_WAYS; p++) {
		struct hsrate probe;

		hsrate_init(&probe, key);
		hsrate_set(&probe, 1, 1, 0, 0);
		v4(a, 0x50000000 + (p << 8));
		(void)hsrate_take(&probe, a, 4, t);
		for (unsigned i = 0; i < HSRATE_BUCKETS; i++)
			if (probe.b[i].tag && i / HSRATE_WAYS == target)
				coll[n++] = 0x50000000 + (p << 8);
	}
	/* three colliders with one handshake each: the busy one stays */
	for (unsigned k = 0; k < HSRATE_WAYS - 1; k++)
		assert_int_equal(take4(coll[k], t + 1), HSRATE_PASS);
	assert_int_equal(take4(coll[HSRATE_WAYS - 1], t + 2), HSRATE_PASS);
	assert_int_equal(take4(0x0a000001, t + 3), HSRATE_PREFIX);
	/* three colliders each with a full burst, later than the busy one's:
	 * now the busy one is the set's earliest, and the next newcomer takes it */
	hsrate_init(&rt, key);
	hsrate_set(&rt, 10, 10, 0, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(take4(0x0a000001, t), HSRATE_PASS);
	for (unsigned k = 0; k < HSRATE_WAYS - 1; k++)
		for (int i = 0; i < 10; i++)
			assert_int_equal(take4(coll[k], t + 1), HSRATE_PASS);
	assert_int_equal(take4(coll[HSRATE_WAYS - 1], t + 2), HSRATE_PASS);
	assert_int_equal(take4(0x0a000001, t + 3), HSRATE_PASS);	/* a fresh bucket */
}

/* With the global bucket on, the buckets in use at once stay within
 * global burst + global rate x prefix span, however many prefixes come. */
static void test_in_use_bound(void **state)
{
	u64 t0 = SEC, bound, most = 0;
	u32 p = 0;

	hsrate_init(&rt, key);
	hsrate_set(&rt, 5, 10, 200, 200);	/* span 2 s: at most 200 + 200 x 2 */
	bound = 200 + 200 * 2;
	for (u64 t = t0; t < t0 + 20 * SEC; t += 50000) {	/* 20,000 a second */
		(void)take4(0x60000000 + (p++ << 8), t);
		if (p % 1000 == 0) {
			u32 n = hsrate_in_use(&rt, t);

			most = n > most ? n : most;
			assert_true(n <= bound);
		}
	}
	assert_true(most >= 200);	/* the global burst: one prefix each */
	assert_true(bound < HSRATE_BUCKETS);
}

/* The CPU share (hscpu): an event loop on a fake clock, each pass 0.1 ms of
 * other work (plain HTTP, the NIC) then the handshake steps the gate lets
 * start, each step 5 ms (TCG's are 10 ms). Returns the ns of steps in
 * duration; the most steps in one pass and the step starts in starts[]. */
#define SIM_STEPS_MAX 1000
static u64 starts[SIM_STEPS_MAX];
static unsigned nstarts;

static u64 sim(struct hscpu *c, u64 step, u64 other, u64 duration, unsigned *most)
{
	u64 t = SEC, end = SEC + duration, hs = 0;

	nstarts = 0;
	*most = 0;
	while (t < end) {
		unsigned n = 0;

		hscpu_new_pass(c);
		t += other;
		while (t < end && hscpu_may_start(c, t)) {
			if (nstarts < SIM_STEPS_MAX)
				starts[nstarts++] = t;
			t += step;
			hscpu_charge(c, t, step);
			hs += step;
			n++;
		}
		*most = MAX(*most, n);
	}
	return hs;
}

/* The pass bound alone (1 ms: the gate before the window bound) lets one
 * 5 ms step through every pass, 0.1 ms passes between: 98% of the CPU to
 * handshakes. The window bound (50% of 10 ms) holds it to half, each 10 ms
 * window to at most twice the share plus one step, and still serves them. */
static void test_cpu_share_bounded(void **state)
{
	struct hscpu c;
	unsigned most;
	u64 hs;

	hscpu_set(&c, 1 * MS, 100, 10 * MS, SEC);	/* no window: as before */
	hs = sim(&c, 5 * MS, MS / 10, SEC, &most);
	assert_int_equal(most, 1);
	assert_true(hs > 95 * SEC / 100);

	hscpu_set(&c, 1 * MS, 50, 10 * MS, SEC);
	hs = sim(&c, 5 * MS, MS / 10, SEC, &most);
	assert_int_equal(most, 1);
	assert_true(hs <= SEC / 2 + 5 * MS + 5 * MS);	/* share x (L + W) + one step */
	assert_true(hs >= 45 * SEC / 100);		/* still served */
	for (unsigned i = 0; i < nstarts; i++) {
		u64 in = 0;

		for (unsigned j = i; j < nstarts && starts[j] < starts[i] + 10 * MS; j++)
			in += 5 * MS;
		assert_true(in <= 10 * MS + 5 * MS);	/* 2 x 50% x W + a step */
	}
}

/* Other shares and step lengths: the long-run share within a step of it. */
static void test_cpu_share_long_run(void **state)
{
	static const u32 shares[] = { 10, 25, 50, 75 };
	static const u64 steps[] = { MS / 2, 5 * MS, 25 * MS };
	struct hscpu c;
	unsigned most;

	for (unsigned i = 0; i < ARRAY_SIZE(shares); i++)
		for (unsigned k = 0; k < ARRAY_SIZE(steps); k++) {
			u64 hs, want = 2 * SEC * shares[i] / 100;

			hscpu_set(&c, 0, shares[i], 10 * MS, SEC);
			hs = sim(&c, steps[k], MS / 10, 2 * SEC, &most);
			assert_true(hs <= want + shares[i] * 10 * MS / 100 + steps[k]);
			assert_true(hs + 2 * steps[k] + 10 * MS >= want);
		}
}

/* ready_at: the first instant a step may start again; idle time refills the
 * credit up to the cap only; a step counted at most HSCPU_STEP_MAX_NS;
 * share 0 or 100 or window 0: no window bound. */
static void test_cpu_ready_and_limits(void **state)
{
	struct hscpu c;
	u64 t = 3 * SEC, r;

	hscpu_set(&c, 0, 50, 10 * MS, t);
	assert_true(hscpu_may_start(&c, t));
	hscpu_charge(&c, t + 30 * MS, 30 * MS);	/* credit 5 ms + 15 earned - 30 */
	t += 30 * MS;
	assert_true(hscpu_share_out(&c, t));
	r = hscpu_ready_at(&c, t);
	assert_true(r > t + 19 * MS && r <= t + 20 * MS + 1);
	assert_false(hscpu_may_start(&c, r - 1));
	assert_true(hscpu_may_start(&c, r));
	assert_int_equal(hscpu_ready_at(&c, r), r);

	/* a long quiet spell: the cap, one window's share, no more */
	t = r + 1000 * SEC;
	assert_true(hscpu_may_start(&c, t));
	assert_int_equal(c.credit, 10 * MS * 50);
	/* a step of hours: counted as 10 s, the debt bounded */
	hscpu_charge(&c, t + 3600 * SEC, 3600 * SEC);
	assert_true(c.credit >= -(s64)(100 * HSCPU_STEP_MAX_NS));
	assert_false(hscpu_may_start(&c, t + 3600 * SEC + SEC));
	assert_true(hscpu_may_start(&c, t + 3600 * SEC + 2 * HSCPU_STEP_MAX_NS));
	/* near the end of time_ns()'s range */
	hscpu_set(&c, MS, 50, 10 * MS, UINT64_MAX - SEC);
	hscpu_charge(&c, UINT64_MAX - SEC + 20 * MS, 20 * MS);
	assert_false(hscpu_may_start(&c, UINT64_MAX - SEC + 20 * MS));
	assert_true(hscpu_ready_at(&c, UINT64_MAX - SEC + 20 * MS) < UINT64_MAX - SEC + 50 * MS);

	for (unsigned i = 0; i < 3; i++) {
		static const u32 sh[] = { 0, 100, 50 };
		static const u64 w[] = { 10 * MS, 10 * MS, 0 };

		hscpu_set(&c, 0, sh[i], w[i], SEC);
		hscpu_charge(&c, 2 * SEC, SEC);
		assert_true(hscpu_may_start(&c, 2 * SEC));
		assert_false(hscpu_share_out(&c, 2 * SEC));
	}
	/* the pass bound: spent reaches pass_ns, a new pass resets it */
	hscpu_set(&c, MS, 100, 10 * MS, SEC);
	hscpu_charge(&c, SEC + MS, MS);
	assert_false(hscpu_may_start(&c, SEC + MS));
	hscpu_new_pass(&c);
	assert_true(hscpu_may_start(&c, SEC + MS));
}

/* Fair turns (hsfair): the steps put off, round robin across prefixes. */
static struct hsfair fq;
static struct hsfair_node fnode[512];

static u16 slot4(u32 x)
{
	u8 a[4];

	v4(a, x);
	return hsrate_slot(&rt, a, 4);
}

/* A flood's 100 steps from one /24 queue, then one client's from another:
 * the client's step is served second (one flood step had the turn), not
 * 101st as in one FIFO; the flood's steps keep their order. */
static void test_fair_newcomer(void **state)
{
	u16 a = slot4(0x0a4d0102), b = slot4(0xc0a80107);
	int pos = -1, k = 0, last = -1;
	struct hsfair_node *n;

	hsrate_init(&rt, key);
	assert_int_not_equal(a, b);	/* this key: the two prefixes in two slots */
	assert_int_equal(slot4(0x0a4d01fe), a);	/* same /24, same queue */
	hsfair_init(&fq);
	for (int i = 0; i < 100; i++)
		hsfair_push(&fq, &fnode[i], slot4(0x0a4d0100 + 2 + (u32)i % 8));
	hsfair_push(&fq, &fnode[100], b);
	assert_int_equal(fq.queued, 101);
	while ((n = hsfair_pop(&fq))) {
		if (n == &fnode[100])
			pos = k;
		else {
			assert_true(n - fnode > last);	/* the flood's in order */
			last = (int)(n - fnode);
		}
		k++;
	}
	assert_int_equal(k, 101);
	assert_int_equal(pos, 1);
	assert_int_equal(fq.queued, 0);
	assert_int_equal(fq.cur, HSFAIR_NONE);
}

/* Three prefixes with 5, 3 and 1 steps: one each a turn while they last. */
static void test_fair_round_robin(void **state)
{
	static const int want[] = { 0, 5, 8, 1, 6, 2, 7, 3, 4 };
	struct hsfair_node *n;

	hsfair_init(&fq);
	for (int i = 0; i < 9; i++)
		hsfair_push(&fq, &fnode[i], (u16)(i < 5 ? 3 : i < 8 ? 200 : 17));
	for (unsigned i = 0; i < sizeof want / sizeof want[0]; i++) {
		n = hsfair_pop(&fq);
		assert_non_null(n);
		assert_int_equal(n - fnode, want[i]);
	}
	assert_null(hsfair_pop(&fq));
	/* empty, then one again */
	hsfair_push(&fq, &fnode[0], 9);
	assert_ptr_equal(hsfair_pop(&fq), &fnode[0]);
	assert_null(hsfair_pop(&fq));
}

/* Random pushes, pops and removals (a connection closed while waiting)
 * against a plain model: per slot a FIFO, the ring an ordered list of
 * non-empty slots, a new slot last before the turn, the turn moving on
 * after each pop. */
static void test_fair_model(void **state)
{
	enum { N = 64, S = 6 };
	int q[S][N], qn[S] = { 0 }, ring[S], rn = 0, cur = 0, slotof[N];
	bool in[N] = { false };
	u32 seed = 12345;

	hsfair_init(&fq);
	for (int step = 0; step < 20000; step++) {
		seed = seed * 1103515245 + 12345;
		unsigned op = (seed >> 16) % 3, x = (seed >> 8) % N;
		int s = (int)((seed >> 4) % S), j, r;

		if (op == 0 && !in[x]) {	/* a node in any slot */
			hsfair_push(&fq, &fnode[x], (u16)(s * 40));
			slotof[x] = s;
			in[x] = true;
			q[s][qn[s]++] = (int)x;
			if (qn[s] == 1) {	/* joins the ring before the turn */
				for (j = rn; j > cur; j--)
					ring[j] = ring[j - 1];
				ring[cur] = s;
				rn++;
				cur = (cur + 1) % rn;
				if (rn == 1)
					cur = 0;
			}
		} else if (op == 1 && in[x]) {
			s = slotof[x];
			hsfair_remove(&fq, &fnode[x], (u16)(s * 40));
			in[x] = false;
			for (j = 0; q[s][j] != (int)x; j++)
				;
			memmove(&q[s][j], &q[s][j + 1], (size_t)(qn[s] - j - 1) * sizeof(int));
			if (--qn[s] == 0) {
				for (r = 0; ring[r] != s; r++)
					;
				memmove(&ring[r], &ring[r + 1], (size_t)(rn - r - 1) * sizeof(int));
				rn--;
				if (r < cur)
					cur--;
				if (cur >= rn)
					cur = 0;
			}
		} else if (op == 2) {
			struct hsfair_node *n = hsfair_pop(&fq);

			if (!rn) {
				assert_null(n);
				continue;
			}
			s = ring[cur];
			assert_non_null(n);
			assert_int_equal(n - fnode, q[s][0]);
			in[q[s][0]] = false;
			memmove(&q[s][0], &q[s][1], (size_t)(qn[s] - 1) * sizeof(int));
			if (--qn[s] == 0) {
				memmove(&ring[cur], &ring[cur + 1], (size_t)(rn - cur - 1) * sizeof(int));
				rn--;
			} else
				cur++;
			if (cur >= rn)
				cur = 0;
		}
		j = 0;
		for (s = 0; s < S; s++)
			j += qn[s];
		assert_int_equal(fq.queued, j);
		assert_int_equal(fq.cur, rn ? ring[cur] * 40 : HSFAIR_NONE);
	}
}

/* Prefixes spread over the slots: 1024 /24s fill most of 256 (a fixed
 * mapping would put them in few). */
static void test_fair_slots_spread(void **state)
{
	static bool used[HSFAIR_SLOTS];
	int n = 0;
	u8 a6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1 };
	u16 s6;

	hsrate_init(&rt, key);
	for (u32 i = 0; i < 1024; i++)
		used[slot4(0x0a000000 + (i << 8))] = true;
	for (int i = 0; i < HSFAIR_SLOTS; i++)
		n += used[i];
	assert_true(n >= 240);
	s6 = hsrate_slot(&rt, a6, 16);
	a6[7] = 0xff;		/* inside the /56 */
	a6[15] = 9;
	assert_int_equal(hsrate_slot(&rt, a6, 16), s6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_and_refill),
		cmocka_unit_test(test_long_run_rate),
		cmocka_unit_test(test_global),
		cmocka_unit_test(test_v6_prefix),
		cmocka_unit_test(test_no_overflow),
		cmocka_unit_test(test_spray_keeps_busy),
		cmocka_unit_test(test_replace_cost),
		cmocka_unit_test(test_in_use_bound),
		cmocka_unit_test(test_cpu_share_bounded),
		cmocka_unit_test(test_cpu_share_long_run),
		cmocka_unit_test(test_cpu_ready_and_limits),
		cmocka_unit_test(test_fair_newcomer),
		cmocka_unit_test(test_fair_round_robin),
		cmocka_unit_test(test_fair_model),
		cmocka_unit_test(test_fair_slots_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
