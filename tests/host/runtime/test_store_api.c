/* runtime/store_api.c, the app API of the data disk (include/vireo/store.h),
 * over the real store on the model disk (tests/host/storage/memdisk.c);
 * disk_store_open is the test's, opening a store on that disk:
 * - before the disk is asked for: -ENODEV; while it opens: -EAGAIN; keys that start with 0x00 (the
 *   record log's) are refused by put, delete and get and skipped by keys;
 * - vireo_store_next, a scan by prefix that reads values;
 * - docs/apps.md's record-log example (the outbox below, as written there):
 *   events kept across a reboot, handled once each, in order, and trimmed
 *   once handled; seqs go on after the reboot. */
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
#include "storage/disk.h"
#include "storage/store.h"
#include "vireo/store.h"
#include "runtime/store_rt.h"

static void rnd(void *buf, size_t len)
{
	memset(buf, 0x42, len);
}

static struct memdisk M;
static struct store S;
static void (*opened_fn)(struct store *s, int err, void *arg);

static void opened(struct store *s, int err, void *arg)
{
	opened_fn(s, err, arg);
}

/* storage/disk.c's, on the model disk: every call opens it (a boot). */
int disk_store_open(void (*done)(struct store *s, int err, void *arg), void *arg)
{
	static const struct st_cfg cfg = { .index_max = 1u << 20, .pending_max = 1u << 20, .format = true,
					   .label = "vireo-data", .random = rnd, .seg_size = 64 * 1024 };

	opened_fn = done;
	return st_open(&S, &M.dev, &cfg, opened, arg);
}

static int ready_err = 1;

static void append_cb(int err, u64 seq, void *arg)
{
}

static void ready(int err, void *arg)
{
	ready_err = err;
}

static void boot(void)
{
	ready_err = 1;
	assert_int_equal(vireo_store_open(ready, NULL), 0);
	assert_int_equal(vireo_log_append("x", 1, append_cb, NULL), -EAGAIN);	/* opening */
	hk_run(1000000);
	assert_int_equal(ready_err, 0);
}

static void power_cut(void)
{
	memdisk_crash(&M);
	st_close(&S);
	memdisk_reboot(&M, 1);
}

/* ---- the example in docs/apps.md ("The record log"), as written ---- */
static void outbox_handle(const void *ev, size_t len);	/* the app's */

/* An outbox: events kept on the data disk until they are handled, in
 * order, at least once: a reboot before the trim that follows them hands
 * them over again. */
static u64 outbox_done;	/* the newest seq handled (kept in memory: after
			 * a reboot, what was not trimmed is handled again) */
static bool outbox_reading;

static void outbox_kept(int err, u64 seq, void *arg)
{
	/* err 0: durable as record seq; else not kept (say so to the client). */
}

/* Keeps an event; 0, or the store's refusal (-EBUSY: retry later). */
static int outbox_add(const void *ev, size_t len)
{
	return vireo_log_append(ev, len, outbox_kept, NULL);
}

static void outbox_trimmed(int err, void *arg)
{
}

static void outbox_got(int err, u64 seq, const void *ev, size_t len, void *arg)
{
	if (!err)
		outbox_handle(ev, len);
	outbox_done = seq;	/* an unreadable record (err) is skipped */
	if (vireo_log_read(seq + 1, outbox_got, NULL) == 0)
		return;
	outbox_reading = false;	/* the end: drop what was handled */
	vireo_log_trim(outbox_done, outbox_trimmed, NULL);
}

/* Handles every event kept and not handled yet (call it from a timer). */
static void outbox_drain(void)
{
	if (outbox_reading)
		return;
	if (vireo_log_read(outbox_done + 1, outbox_got, NULL) == 0)
		outbox_reading = true;
	else	/* nothing new: a trim still due (-EALREADY if none) */
		vireo_log_trim(outbox_done, outbox_trimmed, NULL);
}
/* ---- end of the example ---- */

static char handled[64][16];
static unsigned nhandled;

static void outbox_handle(const void *ev, size_t len)
{
	assert_true(nhandled < 64 && len < 16);
	memcpy(handled[nhandled], ev, len);
	handled[nhandled++][len] = 0;
}

static bool keys_fn(const void *key, size_t klen, size_t vlen, void *arg)
{
	(*(unsigned *)arg)++;
	assert_true(klen && *(const u8 *)key);	/* never the log's */
	return true;
}

static void done_cb(int err, void *arg)
{
	*(int *)arg = err;
}

static void got_cb(int err, const void *val, size_t vlen, void *arg)
{
}

static char scanned[256];
static int scan_err;

/* A scan of prefix "p/": each key and value appended to scanned, then the
 * next one from here. */
static void scan_got(int err, const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	size_t n = strlen(scanned);

	assert_int_equal(err, 0);
	snprintf(scanned + n, sizeof scanned - n, "%.*s=%.*s;", (int)klen, (const char *)key, (int)vlen,
		 (const char *)val);
	scan_err = vireo_store_next("p/", 2, key, klen, scan_got, NULL);
}

static char rt_val[16];

static void rt_got(int err, const void *val, size_t vlen, void *arg)
{
	assert_int_equal(err, 0);
	assert_true(vlen < sizeof rt_val);
	memcpy(rt_val, val, vlen);
	rt_val[vlen] = '\0';
}

/* The runtime's key goes again, so the counts below are the app's. */
static int store_rt_del_all(void)
{
	return st_del(&S, (const u8 *)"\0Ktls.gen", 9, NULL, NULL);
}

static void test_api(void **state)
{
	static const u8 reserved[] = { 0, 'L', 0, 0, 0, 0, 0, 0, 0, 1 };
	char ev[16];
	unsigned n = 0;
	int err = 1;

	memdisk_init(&M, 16 + 16 * 128, 512, 64 * 1024, true);
	assert_int_equal(vireo_log_append("x", 1, outbox_kept, NULL), -ENODEV);	/* never opened */
	assert_int_equal(vireo_store_put("k", 1, "v", 1, done_cb, &err), -ENODEV);
	boot();
	/* The log's keys are the runtime's. */
	assert_int_equal(vireo_store_put(reserved, sizeof reserved, "v", 1, done_cb, &err), -EINVAL);
	assert_int_equal(vireo_store_del(reserved, sizeof reserved, done_cb, &err), -EINVAL);
	assert_int_equal(vireo_store_get(reserved, sizeof reserved, got_cb, NULL), -EINVAL);
	/* The runtime's own keys (0x00 'K': runtime/store_rt.h): written and
	 * read by store_rt_*, which take no other key; apps see none of them. */
	assert_int_equal(store_rt_put("\0Ktls.gen", 9, "secret", 6, done_cb, &err), 0);
	assert_int_equal(store_rt_put("k", 1, "v", 1, done_cb, &err), -EINVAL);
	assert_int_equal(store_rt_put("\0L", 2, "v", 1, done_cb, &err), -EINVAL);
	assert_int_equal(store_rt_get("\0Lx", 3, got_cb, NULL), -EINVAL);
	hk_run(1000000);
	assert_int_equal(err, 0);
	assert_int_equal(vireo_store_get("\0Ktls.gen", 9, got_cb, NULL), -EINVAL);
	assert_int_equal(vireo_store_put("\0Ktls.gen", 9, "mine", 4, done_cb, &err), -EINVAL);
	assert_int_equal(vireo_store_del("\0Ktls.gen", 9, done_cb, &err), -EINVAL);
	assert_int_equal(vireo_store_keys("", 0, NULL, 0, keys_fn, &n), 0);
	assert_int_equal(vireo_store_keys("\0K", 2, NULL, 0, keys_fn, &n), 0);
	assert_int_equal(vireo_store_next("", 0, NULL, 0, scan_got, NULL), -ENOENT);
	rt_val[0] = '\0';
	assert_int_equal(store_rt_get("\0Ktls.gen", 9, rt_got, NULL), 0);
	hk_run(1000000);
	assert_string_equal(rt_val, "secret");
	assert_int_equal(store_rt_open(ready, NULL), 0);	/* open already: told from the loop */
	ready_err = 1;
	hk_run(1000000);
	assert_int_equal(ready_err, 0);
	assert_int_equal(store_rt_open(ready, NULL), -EALREADY);
	assert_int_equal(store_rt_del_all(), 0);
	hk_run(1000000);
	assert_int_equal(vireo_store_put("k", 1, "v", 1, done_cb, &err), 0);
	hk_run(1000000);
	assert_int_equal(err, 0);

	/* A scan that reads values. */
	assert_int_equal(vireo_store_put("p/1", 3, "one", 3, done_cb, &err), 0);
	assert_int_equal(vireo_store_put("p/2", 3, "two", 3, done_cb, &err), 0);
	assert_int_equal(vireo_store_put("q", 1, "x", 1, done_cb, &err), 0);
	assert_int_equal(vireo_store_next("p/", 2, NULL, 0, scan_got, NULL), -ENOENT);	/* not durable yet */
	hk_run(1000000);
	assert_int_equal(vireo_store_next("p/", 2, NULL, 0, scan_got, NULL), 0);
	hk_run(1000000);
	assert_string_equal(scanned, "p/1=one;p/2=two;");
	assert_int_equal(scan_err, -ENOENT);
	assert_int_equal(vireo_store_next("\0", 1, NULL, 0, scan_got, NULL), -ENOENT);
	assert_int_equal(vireo_store_next("p/", 2, NULL, 0, NULL, NULL), -EINVAL);
	assert_int_equal(vireo_store_del("p/1", 3, done_cb, &err), 0);
	assert_int_equal(vireo_store_del("p/2", 3, done_cb, &err), 0);
	assert_int_equal(vireo_store_del("q", 1, done_cb, &err), 0);
	hk_run(1000000);

	/* The outbox: five events, two handled, a power cut, the rest. */
	for (unsigned i = 0; i < 5; i++) {
		snprintf(ev, sizeof ev, "event %u", i % 10);
		assert_int_equal(outbox_add(ev, strlen(ev)), 0);
	}
	hk_run(1000000);
	assert_int_equal(vireo_log_first(), 1);
	assert_int_equal(vireo_log_last(), 5);
	assert_int_equal(vireo_store_keys("", 0, NULL, 0, keys_fn, &n), 1);	/* "k" alone */
	assert_int_equal(vireo_store_keys("", 0, "\0", 1, keys_fn, &n), 1);
	assert_int_equal(vireo_store_keys("\0", 1, NULL, 0, keys_fn, &n), 0);
	assert_int_equal(vireo_store_keys("", 0, "k", 1, keys_fn, &n), 0);
	assert_int_equal(n, 2);
	outbox_drain();
	hk_run(1000000);
	assert_int_equal(nhandled, 5);
	assert_string_equal(handled[4], "event 4");
	assert_int_equal(vireo_log_first(), 0);	/* all trimmed */
	assert_int_equal(outbox_add("event 5", 7), 0);
	assert_int_equal(outbox_add("event 6", 7), 0);
	hk_run(1000000);
	power_cut();
	outbox_done = 0;	/* memory is gone */
	boot();
	assert_int_equal(vireo_log_first(), 6);
	assert_int_equal(vireo_log_last(), 7);
	outbox_drain();
	hk_run(1000000);
	assert_int_equal(nhandled, 7);
	assert_string_equal(handled[5], "event 5");
	assert_string_equal(handled[6], "event 6");
	assert_int_equal(outbox_add("event 7", 7), 0);
	hk_run(1000000);
	assert_int_equal(vireo_log_last(), 8);	/* never a seq given before */
	st_close(&S);
	memdisk_free(&M);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
