/* storage/store.c over the model disk (memdisk.c), whose write cache a
 * crash loses or tears sector by sector:
 * - crash trials: a workload of puts and deletes from several clients (each
 *   issuing its next operation from the previous one's callback, so
 *   batches group many writers) is cut by a crash at every device request
 *   it makes, with several tearing seeds each; after every reboot the
 *   store opens without damage and holds exactly the state after some
 *   prefix of the operations in the order they were made, a prefix that
 *   contains every acknowledged one. Then a second workload and a second
 *   crash on the recovered store (writes over a dropped tear). 8 tearing
 *   seeds per crash point (about 340 trials, ~10 s CPU under ASan);
 *   ST_CRASH_SEEDS=N in the environment runs N.
 * - group commit: 64 writers, a handful of FLUSHes.
 * - a write or flush that fails: -EIO to the batch's writers, -EROFS to
 *   the rest, read-only, reads still served.
 * - damage: a record rotted in the middle of the log, a lost batch before
 *   the end: reported, read-only, what came before kept.
 * - superblocks: one copy bad (reported, the other used), both bad
 *   (refused, never formatted), blank and not to be formatted (-ENOENT).
 * - bounds: the disk (-ENOSPC), the index (-ENOMEM), the queue (-EBUSY).
 * - a read error at each read of an open (probe, windows, read-ahead):
 *   -EIO, nothing left behind, the next open whole. */
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
#include "lib/metrics.h"
#include "storage/store.h"

#define NKEYS 12
#define VMAX 1500

static void rnd(void *buf, size_t len)
{
	static u8 x = 1;

	for (size_t i = 0; i < len; i++)
		((u8 *)buf)[i] = x += 37;
}

static int open_err;
static bool opened;

static void open_cb(struct store *s, int err, void *arg)
{
	open_err = err;
	opened = true;
}

static struct st_cfg cfg_default(void)
{
	return (struct st_cfg){ .index_max = 1u << 20, .pending_max = 1u << 20, .format = true,
				.label = "vireo-data", .random = rnd, .seg_size = 64 * 1024 };
}

static int open_store(struct store *s, struct memdisk *m, const struct st_cfg *cfg)
{
	opened = false;
	assert_int_equal(st_open(s, &m->dev, cfg, open_cb, NULL), 0);
	hk_run(1000000);
	assert_true(opened);
	return open_err;
}

/* ---- the state model ---- */

struct kv {
	bool present;
	u32 vlen;
	u8 val[VMAX];
};

struct opr {
	u8 key;
	bool put;
	u32 vlen;
	u32 tag;		/* the value is made from (key, tag, vlen) */
	int err;		/* 1: not completed */
};

#define OPS_MAX 1200

static struct opr ops[OPS_MAX];
static unsigned nops;		/* admitted, in admission order */

static void key_of(unsigned k, u8 *out, u32 *klen)
{
	*klen = (u32)sprintf((char *)out, "key-%02u", k) + (k % 3) * 20;
	memset(out + 6, 'x', *klen - 6);
	out[6] = (u8)('a' + k);
}

static void val_of(const struct opr *o, u8 *out)
{
	for (u32 i = 0; i < o->vlen; i++)
		out[i] = (u8)(o->tag * 31 + i * 7 + o->key);
}

static void apply(struct kv *st, const struct opr *o)
{
	st[o->key].present = o->put;
	if (o->put) {
		st[o->key].vlen = o->vlen;
		val_of(o, st[o->key].val);
	}
}

/* ---- clients ---- */

struct client {
	struct store *s;
	unsigned left;		/* operations still to issue */
	u64 rng;
	unsigned id;
};

static u32 next_rand(u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (u32)(*x >> 11);
}

static void client_next(struct client *c);

static void op_done(int err, void *arg)
{
	struct opr *o = arg;
	struct client *c = (struct client *)(uintptr_t)o->err;	/* stashed below */

	(void)c;
	o->err = err;
}

static struct client *op_client[OPS_MAX];
static u32 vsmall = 200;	/* most values are shorter than this */

static void op_done_c(int err, void *arg)
{
	struct opr *o = arg;

	o->err = err;
	client_next(op_client[o - ops]);
}

static void client_next(struct client *c)
{
	while (c->left && nops < OPS_MAX) {
		struct opr *o = &ops[nops];
		u8 key[64], val[VMAX];
		u32 klen, r = next_rand(&c->rng);
		int err;

		c->left--;
		o->key = (u8)((c->id * 5 + r) % NKEYS);
		o->put = r % 5 != 0;
		o->vlen = o->put ? (r >> 8) % (r % 7 == 0 ? VMAX : vsmall) : 0;
		o->tag = nops * 7 + c->id;
		o->err = 1;
		key_of(o->key, key, &klen);
		val_of(o, val);
		op_client[nops] = c;
		err = o->put ? st_put(c->s, key, klen, val, o->vlen, op_done_c, o)
			     : st_del(c->s, key, klen, op_done_c, o);
		if (err == 0) {
			nops++;
			return;	/* the callback issues the next one */
		}
		/* Refused at once (a delete of an absent key, read-only): try another. */
		if (err != -ENOENT)
			return;
	}
}

static void run_clients(struct store *s, unsigned nclients, unsigned per_client, u64 seed)
{
	static struct client cl[16];

	for (unsigned i = 0; i < nclients; i++) {
		cl[i] = (struct client){ .s = s, .left = per_client, .rng = seed * 1000 + i + 1, .id = i };
		client_next(&cl[i]);
	}
	hk_run(10000000);
}

/* ---- reading the whole store back ---- */

static struct kv *got_kv;
static int got_err;

static void get_cb(int err, const void *val, u32 vlen, void *arg)
{
	struct kv *k = arg;

	got_err = err;
	if (!err) {
		k->present = true;
		k->vlen = vlen;
		memcpy(k->val, val, vlen);
	}
}

static u32 got_vlen;
static u8 got_first;
static u8 got_buf[20000];

static void get_first_cb(int err, const void *val, u32 vlen, void *arg)
{
	got_err = err;
	got_vlen = vlen;
	got_first = vlen ? *(const u8 *)val : 0;
	if (!err)
		memcpy(got_buf, val, MIN(vlen, (u32)sizeof got_buf));
}

static void read_all(struct store *s, struct kv *st)
{
	memset(st, 0, sizeof(struct kv) * NKEYS);
	got_kv = st;
	for (unsigned k = 0; k < NKEYS; k++) {
		u8 key[64];
		u32 klen;
		int err;

		key_of(k, key, &klen);
		got_err = 1;
		err = st_get(s, key, klen, get_cb, &st[k]);
		if (err == -ENOENT)
			continue;
		assert_int_equal(err, 0);
		hk_run(100000);
		assert_int_equal(got_err, 0);
	}
	assert_true(s->index.count <= NKEYS);
}

static bool same(const struct kv *a, const struct kv *b)
{
	for (unsigned k = 0; k < NKEYS; k++) {
		if (a[k].present != b[k].present)
			return false;
		if (a[k].present && (a[k].vlen != b[k].vlen || memcmp(a[k].val, b[k].val, a[k].vlen)))
			return false;
	}
	return true;
}

/* The recovered state must be base + ops[0..n) for some n that covers
 * every acknowledged op. Returns n (the smallest), fails otherwise. */
static unsigned check_prefix(const struct kv *base, const struct kv *got)
{
	static struct kv model[NKEYS];
	unsigned lo = 0;

	for (unsigned i = 0; i < nops; i++)
		if (ops[i].err == 0)
			lo = i + 1;
	memcpy(model, base, sizeof model);
	for (unsigned n = 0; n <= nops; n++) {
		if (n >= lo && same(model, got))
			return n;
		if (n < nops)
			apply(model, &ops[n]);
	}
	fail_msg("recovered state is no prefix of the operations covering the %u acknowledged", lo);
	return 0;
}

/* ---- the crash trials ---- */

static unsigned trials, torn_seen, in_compaction;

struct shape {
	u32 bs;
	unsigned nclients, per;
	u32 nseg;		/* 64 KiB segments */
	u32 vsmall;
};

static void crash_trial(const struct shape *sh, unsigned crash_at, unsigned seed)
{
	u32 bs = sh->bs;
	unsigned nclients = sh->nclients, per = sh->per;
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	static struct kv base[NKEYS], got[NKEYS];
	unsigned n;

	vsmall = sh->vsmall;
	memdisk_init(&m, 16 + sh->nseg * 128, bs, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_true(s.report.formatted);
	/* Phase 1. */
	nops = 0;
	memset(base, 0, sizeof base);
	m.crash_at = m.reqs + crash_at;
	run_clients(&s, nclients, per, seed);
	in_compaction += s.cp != NULL;
	memdisk_crash(&m);
	st_close(&s);
	memdisk_reboot(&m, seed * 7919 + crash_at);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_false(s.report.damaged);
	assert_int_equal(s.state, ST_READY);
	assert_int_equal(st_index_check(&s.index), 0);
	torn_seen += s.report.torn;
	read_all(&s, got);
	n = check_prefix(base, got);
	(void)n;
	/* Phase 2: more writes over what recovery left, another crash. */
	memcpy(base, got, sizeof base);
	nops = 0;
	m.crash_at = m.reqs + 1 + (crash_at * 13 + seed) % (sh->nseg < 16 ? 200 : 40);
	run_clients(&s, nclients, per, seed + 100);
	in_compaction += s.cp != NULL;
	memdisk_crash(&m);
	st_close(&s);
	memdisk_reboot(&m, seed * 31 + crash_at + 5);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_false(s.report.damaged);
	read_all(&s, got);
	check_prefix(base, got);
	st_close(&s);
	memdisk_free(&m);
	trials++;
}

/* How many device requests the workload makes when nothing crashes. */
static unsigned workload_reqs(const struct shape *sh, unsigned seed, u64 *compactions)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	unsigned r0, acked = 0, nclients = sh->nclients, per = sh->per;

	vsmall = sh->vsmall;
	memdisk_init(&m, 16 + sh->nseg * 128, sh->bs, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	nops = 0;
	r0 = m.reqs;
	run_clients(&s, nclients, per, seed);
	for (unsigned i = 0; i < nops; i++) {
		assert_int_equal(ops[i].err, 0);
		acked++;
	}
	assert_true(acked >= nclients * per / 2);
	assert_true(st_idle(&s));
	r0 = m.reqs - r0;
	*compactions = s.stats.compactions;
	st_close(&s);
	memdisk_free(&m);
	return r0;
}

static void crash_shapes(const struct shape *shapes, unsigned n, unsigned seeds, bool compacting)
{
	trials = torn_seen = in_compaction = 0;
	for (unsigned sh = 0; sh < n; sh++) {
		u64 compactions;
		unsigned reqs = workload_reqs(&shapes[sh], 1, &compactions);

		assert_true(reqs > 10);
		if (compacting)
			assert_true(compactions >= 2);	/* the log wraps within the workload */
		for (unsigned k = 1; k <= reqs + 1; k++)
			for (unsigned seed = 1; seed <= seeds; seed++)
				crash_trial(&shapes[sh], k, seed);
	}
	print_message("%u crash trials, %u with a torn batch dropped, %u cut during a compaction\n", trials,
		      torn_seen, in_compaction);
	assert_true(torn_seen > 0);	/* the tearing model reaches recovery's tear path */
	if (compacting)
		assert_true(in_compaction > trials / 8);	/* the cuts reach compaction */
	vsmall = 200;
}

static void test_crash_every_request(void **state)
{
	static const struct shape shapes[] = { { 512, 4, 12, 16, 200 }, { 4096, 6, 8, 16, 200 } };
	const char *env = getenv("ST_CRASH_SEEDS");

	crash_shapes(shapes, 2, env ? (unsigned)atoi(env) : 8, false);
}

/* The same over a disk of 6 segments that the workload wraps: power is cut
 * at every request, compaction's reads, superblock writes and FLUSHes
 * included, and the second workload runs on from what recovery left. */
static void test_crash_compaction(void **state)
{
	static const struct shape shapes[] = { { 512, 4, 110, 6, VMAX }, { 4096, 3, 140, 6, VMAX } };
	const char *env = getenv("ST_CRASH_SEEDS");

	crash_shapes(shapes, 2, env ? (unsigned)atoi(env) / 4 + 1 : 2, true);
}

/* ---- group commit ---- */

static void test_group_commit(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	static struct kv got[NKEYS];

	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	nops = 0;
	m.dev_reqs[BLK_FLUSH] = 0;
	for (unsigned i = 0; i < 64; i++) {
		u8 key[64];
		u32 klen;

		ops[i] = (struct opr){ .key = (u8)(i % NKEYS), .put = true, .vlen = 100, .tag = i, .err = 1 };
		key_of(ops[i].key, key, &klen);
		{
			u8 val[VMAX];

			val_of(&ops[i], val);
			assert_int_equal(st_put(&s, key, klen, val, 100, op_done, &ops[i]), 0);
		}
		nops++;
	}
	/* Nothing is acknowledged before its FLUSH. */
	for (unsigned i = 0; i < 64; i++)
		assert_int_equal(ops[i].err, 1);
	hk_run(1000000);
	for (unsigned i = 0; i < 64; i++)
		assert_int_equal(ops[i].err, 0);
	assert_true(m.dev_reqs[BLK_FLUSH] <= 2);
	assert_int_equal(s.stats.puts, 64);
	assert_true(s.stats.batch_records_max >= 32);
	read_all(&s, got);
	{
		static struct kv want[NKEYS];

		memset(want, 0, sizeof want);
		for (unsigned i = 0; i < 64; i++)
			apply(want, &ops[i]);
		assert_true(same(want, got));
	}
	/* And after a clean reboot. */
	st_close(&s);
	memdisk_crash(&m);
	memdisk_reboot(&m, 1);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_false(s.report.formatted);
	assert_int_equal(s.report.keys, NKEYS);
	assert_false(s.report.torn);
	st_close(&s);
	memdisk_free(&m);
}

/* ---- failures ---- */

static void test_write_and_flush_fail(void **state)
{
	for (int which = 0; which < 2; which++) {
		struct memdisk m;
		struct store s;
		struct st_cfg cfg = cfg_default();
		static struct kv got[NKEYS];
		u8 key[64];
		u32 klen;

		memdisk_init(&m, 8192, 512, 64 * 1024, true);
		assert_int_equal(open_store(&s, &m, &cfg), 0);
		nops = 0;
		key_of(0, key, &klen);
		ops[0] = (struct opr){ .key = 0, .put = true, .vlen = 10, .tag = 1, .err = 1 };
		assert_int_equal(st_put(&s, key, klen, "0123456789", 10, op_done, &ops[0]), 0);
		hk_run(100000);
		assert_int_equal(ops[0].err, 0);
		memdisk_fail(&m, which ? BLK_FLUSH : BLK_WRITE, 1, 1);
		ops[1] = (struct opr){ .err = 1 };
		ops[2] = (struct opr){ .err = 1 };
		key_of(1, key, &klen);
		assert_int_equal(st_put(&s, key, klen, "a", 1, op_done, &ops[1]), 0);
		hk_run(1);	/* the kick: the batch goes out */
		assert_int_equal(st_put(&s, key, klen, "b", 1, op_done, &ops[2]), 0);	/* the next batch */
		hk_run(100000);
		assert_int_equal(ops[1].err, -EIO);
		assert_int_equal(ops[2].err, -EROFS);
		assert_int_equal(s.state, ST_READONLY);
		assert_non_null(strstr(s.why, which ? "flush failed" : "write failed"));
		assert_int_equal(st_put(&s, key, klen, "c", 1, op_done, &ops[3]), -EROFS);
		/* Reads go on: key 0 is there, key 1 never became durable in memory. */
		memset(got, 0, sizeof got);
		key_of(0, key, &klen);
		assert_int_equal(st_get(&s, key, klen, get_cb, &got[0]), 0);
		hk_run(1000);
		assert_int_equal(got_err, 0);
		assert_memory_equal(got[0].val, "0123456789", 10);
		key_of(1, key, &klen);
		assert_null(st_lookup(&s, key, klen));
		assert_int_equal(s.pending_bytes, 0);
		st_close(&s);
		memdisk_free(&m);
	}
}

/* Writes n single-key batches; returns the store open. */
static void fill_batches(struct store *s, unsigned n)
{
	nops = 0;
	for (unsigned i = 0; i < n; i++) {
		u8 key[64], val[VMAX];
		u32 klen;

		ops[i] = (struct opr){ .key = (u8)(i % NKEYS), .put = true, .vlen = 300, .tag = i, .err = 1 };
		key_of(ops[i].key, key, &klen);
		val_of(&ops[i], val);
		assert_int_equal(st_put(s, key, klen, val, 300, op_done, &ops[i]), 0);
		nops++;
		hk_run(100000);
		assert_int_equal(ops[i].err, 0);
	}
}

static void test_damage(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	u64 at;
	u32 seg, off;
	const struct st_ent *e;
	u8 key[64];
	u32 klen;

	/* A record rotted in an old batch of the newest segment. */
	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	fill_batches(&s, 20);
	key_of(3, key, &klen);
	e = st_lookup(&s, key, klen);
	seg = e->seg;
	off = e->off;
	at = s.data_off + (u64)seg * s.seg_size + off;
	st_close(&s);
	m.durable[at + 40] ^= 0x10;
	memdisk_crash(&m);
	memdisk_reboot(&m, 1);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_true(s.report.damaged);
	assert_int_equal(s.state, ST_READONLY);
	assert_non_null(strstr(s.report.damage, "lies past it"));
	assert_int_equal(st_put(&s, key, klen, "x", 1, op_done, &ops[0]), -EROFS);
	/* What came before the damage is there. */
	key_of(0, key, &klen);
	assert_non_null(st_lookup(&s, key, klen));
	st_close(&s);
	memdisk_free(&m);

	/* A lost batch at the end of an older segment (60 batches: 2 segments). */
	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	fill_batches(&s, 150);
	assert_true(s.head >= 1);
	seg = 0;
	off = s.segs[0].used - 512;	/* the last batch of segment 0 (one unit) */
	st_close(&s);
	memset(m.durable + s.data_off + off, 0, 512);
	memdisk_crash(&m);
	memdisk_reboot(&m, 1);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_true(s.report.damaged);
	assert_non_null(strstr(s.report.damage, "before the log does"));
	assert_int_equal(s.state, ST_READONLY);
	st_close(&s);
	memdisk_free(&m);
}

static void test_superblocks(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();

	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	cfg.format = false;
	assert_int_equal(open_store(&s, &m, &cfg), -ENOENT);
	assert_int_equal(s.state, ST_FAILED);
	st_close(&s);
	cfg.format = true;
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	fill_batches(&s, 3);
	st_close(&s);
	/* Copy A rots: B is used, the note says so. */
	m.cur[100] ^= 1;
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_false(s.report.formatted);
	assert_non_null(strstr(s.report.sb_note, "copy A is bad"));
	assert_int_equal(s.report.keys, 3);
	st_close(&s);
	/* Both rot: refused, and never formatted over. */
	m.cur[4096 + 100] ^= 1;
	assert_int_equal(open_store(&s, &m, &cfg), -EBADMSG);
	assert_non_null(strstr(s.why, "not formatted"));
	st_close(&s);
	assert_int_equal(m.cur[100] & 1, (m.durable[100] & 1) ^ 1);	/* nothing was written */
	/* Any non-zero byte in the superblock area stops a format. */
	memset(m.cur, 0, 8192);
	m.cur[5000] = 1;
	assert_int_equal(open_store(&s, &m, &cfg), -EBADMSG);
	st_close(&s);
	memdisk_free(&m);
}

/* ---- bounds ---- */

static void test_bounds(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	static u8 val[16384];
	u8 key[64];
	u32 klen;
	int err = 0;
	unsigned i;

	/* The disk: 8 segments of 64 KiB. The store takes 3/4 of the segments
	 * beyond the head and the reserve (st_capacity): 4 * 48 KiB; 16 KiB
	 * values of new keys fill it, overwrites of one key never do (compaction
	 * reclaims what they leave dead). */
	memdisk_init(&m, 16 + 8 * 128, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_int_equal(s.nseg, 8);
	assert_int_equal(st_capacity(&s), 4 * 48 * 1024);
	{
		u64 taken = 0;
		unsigned fit = 0;

		for (i = 0; i < NKEYS; i++) {
			key_of(i, key, &klen);
			if (taken + st_rec_space(klen, sizeof val) > st_capacity(&s))
				break;
			taken += st_rec_space(klen, sizeof val);
			fit++;
		}
		for (i = 0; i < NKEYS; i++) {
			key_of(i, key, &klen);
			ops[0].err = 1;
			err = st_put(&s, key, klen, val, sizeof val, op_done, &ops[0]);
			if (err)
				break;
			hk_run(100000);
			assert_int_equal(ops[0].err, 0);
		}
		assert_int_equal(err, -ENOSPC);
		assert_int_equal(i, fit);
		assert_int_equal(s.stats.refused_full, 1);
		assert_int_equal(s.live_bytes, taken);
	}
	/* Overwrites: 100 of them take 25 segments' worth on an 8-segment disk. */
	key_of(0, key, &klen);
	for (i = 0; i < 100; i++) {
		ops[0].err = 1;
		val[0] = (u8)i;
		assert_int_equal(st_put(&s, key, klen, val, sizeof val, op_done, &ops[0]), 0);
		hk_run(100000);
		assert_int_equal(ops[0].err, 0);
	}
	assert_true(s.stats.compactions >= 8);
	st_close(&s);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_int_equal(s.state, ST_READY);
	got_err = 1;
	assert_int_equal(st_get(&s, key, klen, get_first_cb, NULL), 0);
	hk_run(100000);
	assert_int_equal(got_err, 0);
	assert_int_equal(got_vlen, sizeof val);
	assert_int_equal(got_first, 99);
	st_close(&s);
	memdisk_free(&m);

	/* Many writers at once near a full disk: every admitted write gets its
	 * callback (durable, or -ENOSPC when no batch can take it), none hangs. */
	memdisk_init(&m, 16 + 8 * 128, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	{
		static struct opr many[400];
		unsigned admitted = 0, called = 0, nospc = 0;
		u32 x = 7;

		for (i = 0; i < 400; i++) {
			x = x * 1103515245u + 12345u;
			many[i] = (struct opr){ .err = 1 };
			key_of(i % NKEYS, key, &klen);
			err = st_put(&s, key, klen, val, 1000 + (x >> 8) % 15000, op_done, &many[i]);
			if (err == 0)
				admitted++;
			else
				assert_int_equal(err, -ENOSPC);
			if (i % 50 == 49)
				hk_run(1);	/* a batch goes out now and then */
		}
		hk_run(1000000);
		for (i = 0; i < 400; i++) {
			called += many[i].err != 1;
			nospc += many[i].err == -ENOSPC;
			assert_true(many[i].err == 1 || many[i].err == 0 || many[i].err == -ENOSPC);
		}
		assert_int_equal(called, admitted);
		assert_true(st_idle(&s));
		assert_int_equal(s.pending_bytes, 0);
		print_message("near-full disk: %u admitted, %u failed -ENOSPC after admission\n", admitted, nospc);
	}
	st_close(&s);
	memdisk_free(&m);

	/* The index: 10 keys of charge 80 and nothing more. */
	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	cfg.index_max = 10 * st_ent_charge(4);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	for (i = 0; i < 11; i++) {
		char k[5];

		snprintf(k, sizeof k, "k%03u", i);
		err = st_put(&s, (const u8 *)k, 4, "v", 1, NULL, NULL);
		if (i < 10)
			assert_int_equal(err, 0);
	}
	assert_int_equal(err, -ENOMEM);
	assert_int_equal(st_put(&s, (const u8 *)"k000", 4, "w", 1, NULL, NULL), 0);	/* an existing key */
	hk_run(100000);
	assert_int_equal(s.index.count, 10);
	/* A reopen with a smaller bound refuses the disk's keys. */
	st_close(&s);
	cfg.index_max = 5 * st_ent_charge(4);
	assert_int_equal(open_store(&s, &m, &cfg), -ENOMEM);
	st_close(&s);
	memdisk_free(&m);

	/* The queue beyond the open batch: pending_max. */
	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	cfg = cfg_default();
	cfg.pending_max = 40000;
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	key_of(1, key, &klen);
	for (i = 0; i < 20; i++) {
		err = st_put(&s, key, klen, val, 10000, NULL, NULL);
		if (err)
			break;
	}
	assert_int_equal(err, -EBUSY);
	/* One open batch (32 KiB - header: 3) plus 3 waiting (40000 B). */
	assert_int_equal(i, 6);
	hk_run(1000000);
	assert_true(st_idle(&s));
	assert_int_equal(s.stats.puts, 6);
	st_close(&s);
	memdisk_free(&m);
	/* Values past st_value_max and bad keys. */
	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	cfg = cfg_default();
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_int_equal(st_put(&s, key, klen, val, st_value_max(&s) + 1, NULL, NULL), -EINVAL);
	assert_int_equal(st_put(&s, key, 0, val, 1, NULL, NULL), -EINVAL);
	assert_int_equal(st_put(&s, key, 256, val, 1, NULL, NULL), -EINVAL);
	assert_int_equal(st_del(&s, key, klen, NULL, NULL), -ENOENT);
	st_close(&s);
	memdisk_free(&m);
}

/* A record read back wrong (rotted since it was written) or not at all. */
static void test_get_errors(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	static struct kv got[1];
	const struct st_ent *e;
	u8 key[64];
	u32 klen;

	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	fill_batches(&s, 4);
	key_of(2, key, &klen);
	e = st_lookup(&s, key, klen);
	assert_non_null(e);
	m.cur[s.data_off + (u64)e->seg * s.seg_size + e->off + ST_REC_HDR + klen + 5] ^= 1;
	got_err = 1;
	assert_int_equal(st_get(&s, key, klen, get_cb, got), 0);
	hk_run(1000);
	assert_int_equal(got_err, -EBADMSG);
	assert_int_equal(s.stats.get_errors, 1);
	key_of(1, key, &klen);
	memdisk_fail(&m, BLK_READ, 1, BLK_READ_TRIES);
	got_err = 1;
	assert_int_equal(st_get(&s, key, klen, get_cb, got), 0);
	hk_run(1000);
	assert_int_equal(got_err, -EIO);
	got_err = 1;
	assert_int_equal(st_get(&s, key, klen, get_cb, got), 0);	/* the disk is back */
	hk_run(1000);
	assert_int_equal(got_err, 0);
	key_of(7, key, &klen);
	assert_int_equal(st_get(&s, key, klen, get_cb, got), -ENOENT);
	assert_int_equal(s.gets, 0);
	st_close(&s);
	memdisk_free(&m);
}

/* The open meets a read error at each of its reads in turn (the
 * superblocks, the probe's groups of 32, a window, the read-ahead of the
 * next segment) and every read after it fails too: the open fails with
 * -EIO and says so, only once every read it sent is back (ASan), and frees
 * what it took; the disk back, the next open finds every key. */
static void test_open_read_errors(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	unsigned reads, n, fails = 0;
	u64 keys;
	long kmem;

	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	fill_batches(&s, 150);
	assert_true(s.head >= 1);
	keys = s.index.count;
	st_close(&s);
	reads = m.dev_reqs[BLK_READ];
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	reads = m.dev_reqs[BLK_READ] - reads;
	assert_int_equal(s.index.count, keys);
	assert_true(s.report.segments >= 2);
	st_close(&s);
	assert_true(reads > 1 + 32 + 2);	/* superblocks, two probe groups, windows */
	kmem = hk_kmem_live();
	for (n = 1; n <= reads; n++) {
		memdisk_fail(&m, BLK_READ, (int)n, 100000);
		assert_int_equal(open_store(&s, &m, &cfg), -EIO);
		assert_non_null(strstr(s.why, "I/O error"));
		st_close(&s);
		memdisk_fail(&m, BLK_READ, 0, 0);
		assert_int_equal(hk_kmem_live(), kmem);
	}
	/* The n-th read and the next two fail: one request's every try (a
	 * window, the read-ahead), or a few of the probe's, retried. Either
	 * the open fails, or it finds the whole log: never less. */
	for (n = 1; n <= reads; n++) {
		int err;

		memdisk_fail(&m, BLK_READ, (int)n, BLK_READ_TRIES);
		err = open_store(&s, &m, &cfg);
		if (err) {
			assert_int_equal(err, -EIO);
			fails++;
		} else {
			assert_int_equal(s.state, ST_READY);
			assert_false(s.report.damaged);
			assert_int_equal(s.index.count, keys);
		}
		st_close(&s);
		memdisk_fail(&m, BLK_READ, 0, 0);
		assert_int_equal(hk_kmem_live(), kmem);
	}
	assert_true(fails >= 3);	/* the superblocks, a window, the read-ahead at least */
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_int_equal(s.index.count, keys);
	st_close(&s);
	memdisk_free(&m);
}

/* ---- write amplification ----
 * 64 segments of 64 KiB (4 MiB), keys whose records fill half of it, 32
 * writers overwriting random keys until the log has wrapped 4 times. WA
 * is the store's own count: bytes of batches written (the users' and the
 * copies', headers and padding included) over the bytes of the users'
 * records. FIFO cleaning under uniform overwrites at 50% live leaves a
 * tail about 20% live (u = e^-2(1-u)): WA near 1.25 plus the batches'
 * overhead; the bound is 3. */
#define WA_KEYS 1032		/* 1032 * 2032 B = 50% of 4 MiB */
#define WA_VLEN 2000

struct wa_client {
	struct store *s;
	u64 rng;
	u64 left;
	int err;
};

static u32 wa_ver[WA_KEYS];
static u32 wa_pending_ver[64];
static unsigned wa_pending_key[64];

static void wa_val(unsigned k, u32 ver, u8 *out)
{
	for (u32 i = 0; i < WA_VLEN; i++)
		out[i] = (u8)(k * 13 + ver * 7 + i);
}

static void wa_next(struct wa_client *c);

static struct wa_client wa_cl[32];

static void wa_done_i(int err, void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;

	if (!err)
		wa_ver[wa_pending_key[i]] = MAX(wa_ver[wa_pending_key[i]], wa_pending_ver[i]);
	else
		wa_cl[i].err = err;
	wa_next(&wa_cl[i]);
}

static void wa_next(struct wa_client *c)
{
	static u32 ver;
	unsigned i = (unsigned)(c - wa_cl);
	u8 key[8], val[WA_VLEN];
	unsigned k;
	int err;

	if (!c->left || c->err)
		return;
	c->left--;
	k = next_rand(&c->rng) % WA_KEYS;
	/* Versions grow in admission order, which is the log's: a key ends
	 * with the highest version acknowledged for it. */
	snprintf((char *)key, sizeof key, "w%04u", k);
	wa_pending_key[i] = k;
	wa_pending_ver[i] = ++ver;
	wa_val(k, ver, val);
	err = st_put(c->s, key, 5, val, WA_VLEN, wa_done_i, (void *)(uintptr_t)i);
	if (err)
		c->err = err;
}

/* The sample "name value" is in text. */
static void metric_is(const char *text, const char *name, u64 v)
{
	char line[160];

	snprintf(line, sizeof line, "\n%s %lu\n", name, (unsigned long)v);
	if (!strstr(text, line))
		fail_msg("no \"%s %lu\" in:\n%s", name, (unsigned long)v, text);
}

static void test_write_amplification(void **state)
{
	struct memdisk m;
	struct store s;
	struct st_cfg cfg = cfg_default();
	u64 log0, user0, disk = 64ull * 64 * 1024;
	double wa;

	memdisk_init(&m, 16 + 64 * 128, 512, 64 * 1024, true);
	assert_int_equal(open_store(&s, &m, &cfg), 0);
	assert_int_equal(s.nseg, 64);
	memset(wa_ver, 0, sizeof wa_ver);
	memset(wa_pending_ver, 0, sizeof wa_pending_ver);
	/* Every key once. */
	for (unsigned k = 0; k < WA_KEYS; k++) {
		u8 key[8], val[WA_VLEN];

		snprintf((char *)key, sizeof key, "w%04u", k);
		wa_val(k, 0, val);
		assert_int_equal(st_put(&s, key, 5, val, WA_VLEN, NULL, NULL), 0);
		if (k % 32 == 31)
			hk_run(100000);
	}
	hk_run(1000000);
	assert_int_equal(s.index.count, WA_KEYS);
	assert_int_equal(s.live_bytes, (u64)WA_KEYS * st_rec_space(5, WA_VLEN));
	/* Overwrites until the log has wrapped 4 times. */
	log0 = s.stats.log_bytes;
	user0 = s.stats.user_bytes;
	for (unsigned round = 0; s.stats.log_bytes - log0 < 4 * disk; round++) {
		assert_true(round < 100);
		for (unsigned i = 0; i < 32; i++) {
			wa_cl[i] = (struct wa_client){ .s = &s, .rng = round * 977 + i + 1, .left = 64 };
			wa_pending_ver[i] = 0;
		}
		for (unsigned i = 0; i < 32; i++)
			wa_next(&wa_cl[i]);
		hk_run(100000000);
		for (unsigned i = 0; i < 32; i++) {
			assert_int_equal(wa_cl[i].err, 0);
			assert_int_equal(wa_cl[i].left, 0);
		}
	}
	assert_true(st_idle(&s));
	wa = (double)(s.stats.log_bytes - log0) / (double)(s.stats.user_bytes - user0);
	print_message("write amplification at 50%% live: %.3f (%lu B of batches for %lu B of records; "
		      "%lu compactions, %lu B copied)\n",
		      wa, (unsigned long)(s.stats.log_bytes - log0), (unsigned long)(s.stats.user_bytes - user0),
		      (unsigned long)s.stats.compactions, (unsigned long)s.stats.compact_bytes);
	assert_true(s.stats.compactions > 3 * 64);
	assert_true(wa <= 3.0);
	/* /metrics says the same as the counters. */
	{
		static char text[8192];
		struct metrics_buf mb;

		metrics_buf_init(&mb, text, sizeof text);
		st_write_metrics(&mb, &s);
		assert_false(mb.overflow);
		metric_is(text, "vireo_store_keys", WA_KEYS);
		metric_is(text, "vireo_store_live_bytes", (u64)WA_KEYS * st_rec_space(5, WA_VLEN));
		metric_is(text, "vireo_store_compactions_total", s.stats.compactions);
		metric_is(text, "vireo_store_compaction_copied_bytes_total", s.stats.compact_bytes);
		metric_is(text, "vireo_store_written_bytes_total", s.stats.log_bytes);
		metric_is(text, "vireo_store_record_bytes_total", s.stats.user_bytes);
		metric_is(text, "vireo_store_puts_total", s.stats.puts);
		metric_is(text, "vireo_store_flushes_total", s.stats.commits + s.stats.sb_writes);
		metric_is(text, "vireo_store_segments_free", s.nfree);
		metric_is(text, "vireo_store_errors_total{op=\"write\"}", 0);
		metric_is(text, "vireo_store_read_only", 0);
		assert_non_null(strstr(text, "# TYPE vireo_store_compactions_total counter\n"));
	}
	/* Every key holds its newest version, before and after a reopen. */
	for (unsigned pass = 0; pass < 2; pass++) {
		for (unsigned k = 0; k < WA_KEYS; k++) {
			u8 key[8];
			static u8 want[WA_VLEN];

			snprintf((char *)key, sizeof key, "w%04u", k);
			wa_val(k, wa_ver[k], want);
			got_err = 1;
			assert_int_equal(st_get(&s, key, 5, get_first_cb, NULL), 0);
			hk_run(1000);
			assert_int_equal(got_err, 0);
			assert_int_equal(got_vlen, WA_VLEN);
			assert_memory_equal(got_buf, want, WA_VLEN);
		}
		st_close(&s);
		if (pass == 0) {
			assert_int_equal(open_store(&s, &m, &cfg), 0);
			assert_int_equal(s.state, ST_READY);
			assert_int_equal(s.index.count, WA_KEYS);
		}
	}
	memdisk_free(&m);
}

/* ---- a crash during format ----
 * Power cut at every request of a format, with tearing seeds: the next
 * open finds either a store (formatted) or a disk it takes for blank
 * (-ENOENT without format, formatted with it), never one it refuses. */
static void test_format_crash(void **state)
{
	unsigned stores = 0, blanks = 0, cut = 0;

	for (u32 bs = 512; bs <= 4096; bs *= 8)
		for (unsigned k = 1; k <= 6; k++)
			for (unsigned seed = 1; seed <= 16; seed++) {
				struct memdisk m;
				struct store s;
				struct st_cfg cfg = cfg_default();
				int err;

				memdisk_init(&m, 8192, bs, 64 * 1024, true);
				m.crash_at = k;
				opened = false;
				assert_int_equal(st_open(&s, &m.dev, &cfg, open_cb, NULL), 0);
				hk_run(1000000);
				memdisk_crash(&m);
				st_close(&s);
				memdisk_reboot(&m, seed * 131 + k);
				cfg.format = false;
				err = open_store(&s, &m, &cfg);
				assert_true(err == 0 || err == -ENOENT);
				if (err == 0) {
					stores++;
					assert_int_equal(s.state, ST_READY);
					assert_int_equal(s.report.keys, 0);
					st_close(&s);
				} else {
					blanks++;
					cut += !st_all_zero(m.cur, 2 * ST_SB_SIZE);
					st_close(&s);
					cfg.format = true;
					assert_int_equal(open_store(&s, &m, &cfg), 0);
					assert_true(s.report.formatted);
					assert_int_equal(st_put(&s, (const u8 *)"k", 1, "v", 1, NULL, NULL), 0);
					hk_run(100000);
					st_close(&s);
					assert_int_equal(open_store(&s, &m, &cfg), 0);
					assert_int_equal(s.report.keys, 1);
					st_close(&s);
				}
				memdisk_free(&m);
			}
	print_message("format cut: %u stores, %u blank (%u with a torn copy B)\n", stores, blanks, cut);
	assert_true(stores > 0 && blanks > 0 && cut > 0);
}

static int teardown(void **state)
{
	hk_loop_reset();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_group_commit, teardown),
		cmocka_unit_test_teardown(test_write_and_flush_fail, teardown),
		cmocka_unit_test_teardown(test_damage, teardown),
		cmocka_unit_test_teardown(test_superblocks, teardown),
		cmocka_unit_test_teardown(test_bounds, teardown),
		cmocka_unit_test_teardown(test_get_errors, teardown),
		cmocka_unit_test_teardown(test_open_read_errors, teardown),
		cmocka_unit_test_teardown(test_crash_every_request, teardown),
		cmocka_unit_test_teardown(test_format_crash, teardown),
		cmocka_unit_test_teardown(test_write_amplification, teardown),
		cmocka_unit_test_teardown(test_crash_compaction, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
