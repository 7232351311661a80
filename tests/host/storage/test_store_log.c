/* storage/store_log.c, the record log, over the store on the model disk
 * (memdisk.c):
 * - basics: seqs in order from 1, reads in order, the bounds (record
 *   size, appends on their way, trims), a trim durable then swept, seqs
 *   that go on across a reopen, even with every record trimmed;
 * - crash trials: appenders and trims cut by a crash at every device
 *   request of the workload, 4 tearing seeds each. After every reboot:
 *   the trim point is one a trim asked for, at least the last
 *   acknowledged; every acknowledged record above it is there and exact;
 *   every record read is exact (never torn, never another's); the next
 *   append's seq is above every seq acknowledged or found; and the sweep
 *   leaves no record at or below the trim. Again on 6 segments that the
 *   workload wraps, with compaction running (about 210 trials). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/storage/memdisk.h"
#include "storage/store.h"
#include "storage/store_log.h"

#define SEQ_MAX 400
#define REC_CAP 3000

static void rnd(void *buf, size_t len)
{
	static u8 x = 3;

	for (size_t i = 0; i < len; i++)
		((u8 *)buf)[i] = x += 41;
}

static int open_err;
static bool opened;

static void open_cb(struct store *s, int err, void *arg)
{
	open_err = err;
	opened = true;
}

static const struct st_cfg cfg = { .index_max = 1u << 20, .pending_max = 1u << 20, .format = true,
				   .label = "vireo-data", .random = rnd, .seg_size = 64 * 1024 };

static int open_store(struct store *s, struct memdisk *m)
{
	opened = false;
	assert_int_equal(st_open(s, &m->dev, &cfg, open_cb, NULL), 0);
	hk_run(1000000);
	assert_true(opened);
	return open_err;
}

/* A record's bytes follow from its seq: a torn record, or another's, never
 * matches. */
static size_t rec_max = 300;	/* records are shorter than this */

static size_t rec_len(u64 seq)
{
	return (size_t)(seq * 37 % rec_max);
}

static void rec_of(u64 seq, u8 *out)
{
	for (size_t i = 0; i < rec_len(seq); i++)
		out[i] = (u8)(seq * 13 + i * 7 + (i >> 8));
}

/* ---- callbacks ---- */

static struct st_log L;
static struct store *S;
static bool acked[SEQ_MAX];
static u64 ack_max, done_count, trim_acked, trims[64];
static unsigned ntrims, appends_left;
static int last_err;

static void workload_next(void);

static void appended(int err, u64 seq, void *arg)
{
	last_err = err;
	done_count++;
	if (!err) {
		assert_true(seq > 0 && seq < SEQ_MAX);
		assert_false(acked[seq]);
		acked[seq] = true;
		ack_max = MAX(ack_max, seq);
	}
	if (arg)
		workload_next();
}

static void trimmed(int err, void *arg)
{
	last_err = err;
	if (!err)
		trim_acked = MAX(trim_acked, (u64)(uintptr_t)arg);
}

static u64 got_seq;
static int got_err;

static void got(int err, u64 seq, const void *data, size_t len, void *arg)
{
	u8 want[REC_CAP];

	got_err = err;
	got_seq = seq;
	assert_int_equal(err, 0);
	assert_int_equal(len, rec_len(seq));
	rec_of(seq, want);
	assert_memory_equal(data, want, len);
}

/* Reads the whole log in order: the seqs found, ascending, into out. */
static unsigned read_all(u64 *out, unsigned max)
{
	unsigned n = 0;
	u64 from = 0;

	for (;;) {
		int err = st_log_read(&L, from, got, NULL);

		if (err == -ENOENT)
			return n;
		assert_int_equal(err, 0);
		got_err = 1;
		hk_run(100000);
		assert_int_equal(got_err, 0);
		assert_true(got_seq >= from && n < max);
		out[n++] = got_seq;
		from = got_seq + 1;
	}
}

static unsigned swept_left;

static bool count_le(const struct st_ent *e, void *arg)
{
	u64 seq = 0;

	for (int i = 0; i < 8; i++)
		seq = seq << 8 | e->key[2 + i];
	if (seq <= *(u64 *)arg)
		swept_left++;
	return true;
}

/* Records at or below the trim still in the index. */
static unsigned unswept(void)
{
	static const u8 pre[2] = { 0, 'L' };

	swept_left = 0;
	st_index_walk(&S->index, pre, 2, NULL, 0, count_le, &L.trimmed);
	return swept_left;
}

static void reset_model(void)
{
	memset(acked, 0, sizeof acked);
	ack_max = done_count = trim_acked = 0;
	ntrims = 0;
}

/* ---- basics ---- */

static void test_log_basics(void **state)
{
	struct memdisk m;
	struct store s;
	u8 buf[REC_CAP], big[1];
	u64 seqs[SEQ_MAX], last;
	unsigned n;

	memdisk_init(&m, 16 + 16 * 128, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m), 0);
	S = &s;
	reset_model();
	st_log_init(&L, &s);
	assert_int_equal(st_log_first(&L), 0);
	assert_int_equal(st_log_last(&L), 0);
	assert_int_equal(st_log_read(&L, 0, got, NULL), -ENOENT);
	for (u64 seq = 1; seq <= 20; seq++) {
		rec_of(seq, buf);
		assert_int_equal(st_log_append(&L, buf, rec_len(seq), appended, NULL), 0);
	}
	assert_int_equal(st_log_last(&L), 0);	/* nothing durable yet */
	assert_int_equal(st_log_read(&L, 0, got, NULL), -ENOENT);
	hk_run(1000000);
	assert_int_equal(ack_max, 20);
	assert_int_equal(st_log_first(&L), 1);
	assert_int_equal(st_log_last(&L), 20);
	n = read_all(seqs, SEQ_MAX);
	assert_int_equal(n, 20);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(seqs[i], i + 1);
	/* Bounds: the record size, the appends on their way. */
	assert_int_equal(st_log_append(&L, big, st_value_max(&s) + 1, appended, NULL), -EINVAL);
	for (unsigned i = 0; i < SL_APPENDS; i++) {
		rec_of(21 + i, buf);
		assert_int_equal(st_log_append(&L, buf, rec_len(21 + i), appended, NULL), 0);
	}
	assert_int_equal(st_log_append(&L, buf, 1, appended, NULL), -EBUSY);
	hk_run(1000000);
	last = 20 + SL_APPENDS;
	assert_int_equal(st_log_last(&L), last);
	/* Trims: past the end, one at a time, then durable and swept. */
	assert_int_equal(st_log_trim(&L, last + 1, trimmed, NULL), -EINVAL);
	assert_int_equal(st_log_trim(&L, 5, trimmed, (void *)5), 0);
	assert_int_equal(st_log_trim(&L, 6, trimmed, (void *)6), -EBUSY);
	assert_int_equal(st_log_first(&L), 1);	/* not durable yet */
	hk_run(1000000);
	assert_int_equal(trim_acked, 5);
	assert_int_equal(st_log_first(&L), 6);
	assert_int_equal(st_log_trim(&L, 5, trimmed, NULL), -EALREADY);
	assert_int_equal(unswept(), 0);
	n = read_all(seqs, SEQ_MAX);
	assert_int_equal(n, last - 5);
	assert_int_equal(seqs[0], 6);
	/* A trim of more than a sweep round takes. */
	assert_int_equal(st_log_trim(&L, 60, trimmed, (void *)60), 0);
	hk_run(1000000);
	assert_int_equal(unswept(), 0);
	assert_int_equal(st_log_first(&L), 61);
	/* A reopen: the same log, and seqs go on. */
	assert_true(st_idle(&s));
	st_close(&s);
	assert_int_equal(open_store(&s, &m), 0);
	st_log_init(&L, &s);
	assert_int_equal(st_log_first(&L), 61);
	assert_int_equal(st_log_last(&L), last);
	assert_int_equal(read_all(seqs, SEQ_MAX), last - 60);
	/* Everything trimmed, reopened: the next seq is still new. */
	assert_int_equal(st_log_trim(&L, last, trimmed, (void *)(uintptr_t)last), 0);
	hk_run(1000000);
	assert_int_equal(st_log_first(&L), 0);
	assert_int_equal(unswept(), 0);
	st_close(&s);
	assert_int_equal(open_store(&s, &m), 0);
	st_log_init(&L, &s);
	assert_int_equal(st_log_first(&L), 0);
	assert_int_equal(s.index.count, 1);	/* the trim key alone */
	rec_of(last + 1, buf);
	assert_int_equal(st_log_append(&L, buf, rec_len(last + 1), appended, NULL), 0);
	hk_run(1000000);
	assert_int_equal(ack_max, last + 1);
	assert_int_equal(st_log_first(&L), last + 1);
	st_close(&s);
	memdisk_free(&m);
}

/* A failed flush: the append's done gets -EIO, the store is read-only,
 * appends and trims are refused, reads go on. */
static void test_log_flush_fails(void **state)
{
	struct memdisk m;
	struct store s;
	u8 buf[REC_CAP];
	u64 seqs[8];

	memdisk_init(&m, 16 + 16 * 128, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m), 0);
	S = &s;
	reset_model();
	st_log_init(&L, &s);
	rec_of(1, buf);
	assert_int_equal(st_log_append(&L, buf, rec_len(1), appended, NULL), 0);
	hk_run(1000000);
	memdisk_fail(&m, BLK_FLUSH, 1, 1);
	rec_of(2, buf);
	assert_int_equal(st_log_append(&L, buf, rec_len(2), appended, NULL), 0);
	hk_run(1000000);
	assert_int_equal(last_err, -EIO);
	assert_int_equal(st_log_last(&L), 1);
	assert_int_equal(st_log_append(&L, buf, 1, appended, NULL), -EROFS);
	assert_int_equal(st_log_trim(&L, 1, trimmed, NULL), -EROFS);
	assert_int_equal(read_all(seqs, 8), 1);
	st_close(&s);
	memdisk_free(&m);
}

/* ---- crash trials ---- */

#define APPENDERS 3

static void workload_next(void)
{
	u8 buf[REC_CAP];
	u64 seq = L.next;

	/* A trim now and then: to 5 below the newest acknowledged. */
	if (!L.trim_to && ack_max > L.trimmed + 12 && ntrims < 64) {
		u64 upto = ack_max - 5;

		if (st_log_trim(&L, upto, trimmed, (void *)(uintptr_t)upto) == 0)
			trims[ntrims++] = upto;
	}
	if (!appends_left || seq >= SEQ_MAX)
		return;
	rec_of(seq, buf);
	if (st_log_append(&L, buf, rec_len(seq), appended, (void *)1) == 0)
		appends_left--;
}

static void run_workload(unsigned appends)
{
	appends_left = appends;
	for (unsigned i = 0; i < APPENDERS; i++)
		workload_next();
	hk_run(10000000);
}

static unsigned trials_run, cut_in_compaction;

static void crash_trial(unsigned crash_at, unsigned seed, unsigned appends, u32 nseg)
{
	struct memdisk m;
	struct store s;
	static u64 seqs[SEQ_MAX];
	bool trim_ok = false;
	u64 found_max = 0;
	unsigned n;
	u8 buf[REC_CAP];

	memdisk_init(&m, 16 + nseg * 128, seed % 2 ? 512 : 4096, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m), 0);
	S = &s;
	reset_model();
	st_log_init(&L, &s);
	m.crash_at = m.reqs + crash_at;
	run_workload(appends);
	cut_in_compaction += s.cp != NULL;
	memdisk_crash(&m);
	st_close(&s);
	memdisk_reboot(&m, seed * 7919 + crash_at);
	assert_int_equal(open_store(&s, &m), 0);
	assert_false(s.report.damaged);
	st_log_init(&L, &s);
	/* The trim point: none, or one a trim asked for; never below an
	 * acknowledged one. */
	trim_ok = L.trimmed == 0;
	for (unsigned i = 0; i < ntrims; i++)
		trim_ok |= L.trimmed == trims[i];
	assert_true(trim_ok);
	assert_true(L.trimmed >= trim_acked);
	n = read_all(seqs, SEQ_MAX);	/* got() checks every byte */
	for (unsigned i = 0; i < n; i++) {
		assert_true(seqs[i] > L.trimmed);
		found_max = MAX(found_max, seqs[i]);
	}
	for (u64 seq = L.trimmed + 1, i = 0; seq < SEQ_MAX; seq++) {
		while (i < n && seqs[i] < seq)
			i++;
		if (acked[seq])
			assert_true(i < n && seqs[i] == seq);
	}
	/* The next seq is new; the sweep finishes what the trim began. */
	ack_max = MAX(ack_max, found_max);
	{
		u64 before = ack_max;

		rec_of(L.next, buf);
		assert_true(L.next > before && L.next > L.trimmed);
		assert_int_equal(st_log_append(&L, buf, rec_len(L.next), appended, NULL), 0);
		hk_run(1000000);
		assert_int_equal(last_err, 0);
		assert_true(ack_max > before);
	}
	assert_int_equal(unswept(), 0);
	st_close(&s);
	memdisk_free(&m);
	trials_run++;
}

/* The workload's device requests when nothing crashes; *compactions: the
 * segments compaction reclaimed meanwhile. */
static unsigned workload_reqs(unsigned appends, u32 nseg, u64 *compactions)
{
	struct memdisk m;
	struct store s;
	unsigned reqs;

	memdisk_init(&m, 16 + nseg * 128, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m), 0);
	S = &s;
	reset_model();
	st_log_init(&L, &s);
	reqs = m.reqs;
	run_workload(appends);
	reqs = m.reqs - reqs;
	assert_true(ntrims >= 5);
	assert_int_equal(done_count, appends);
	*compactions = s.stats.compactions;
	st_close(&s);
	memdisk_free(&m);
	return reqs;
}

static void crash_every_request(unsigned appends, u32 nseg, unsigned seeds, bool compacting)
{
	u64 compactions;
	unsigned reqs = workload_reqs(appends, nseg, &compactions);

	if (compacting)
		assert_true(compactions >= 2);	/* the log wraps within the workload */
	trials_run = cut_in_compaction = 0;
	for (unsigned k = 1; k <= reqs + 1; k++)
		for (unsigned seed = 1; seed <= seeds; seed++)
			crash_trial(k, seed, appends, nseg);
	print_message("%u crash trials over %u device requests (%lu compactions without a crash), %u cut during "
		      "a compaction\n", trials_run, reqs, (unsigned long)compactions, cut_in_compaction);
	if (compacting)
		assert_true(cut_in_compaction > trials_run / 16);	/* 24 of 213 today */
}

static void test_log_crash_every_request(void **state)
{
	const char *env = getenv("ST_CRASH_SEEDS");

	crash_every_request(120, 8, env ? (unsigned)atoi(env) / 2 + 1 : 4, false);
}

/* The same on 6 segments with records up to 3000 bytes: the log wraps,
 * and compaction copies records (and trim keys) while trims drop them. */
static void test_log_crash_compaction(void **state)
{
	const char *env = getenv("ST_CRASH_SEEDS");

	rec_max = REC_CAP;
	crash_every_request(300, 6, env ? (unsigned)atoi(env) / 4 + 1 : 1, true);
	rec_max = 300;
}

static int teardown(void **state)
{
	hk_loop_reset();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_log_basics, teardown),
		cmocka_unit_test_teardown(test_log_flush_fails, teardown),
		cmocka_unit_test_teardown(test_log_crash_every_request, teardown),
		cmocka_unit_test_teardown(test_log_crash_compaction, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
