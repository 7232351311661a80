/* storage/blk.c over the model disk (memdisk.c): requests cut to max_io
 * and sent in order, reads retried on -EIO at most BLK_READ_TRIES times,
 * writes and flushes never retried, FLUSH skipped on a write-through disk,
 * geometry checks (-EINVAL), -EROFS, -ENOTSUP; every completion from the
 * loop, exactly once, never from inside blk_submit(); the counters. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/storage/memdisk.h"

static int calls, last_err;

static void done(struct blk_io *io, int err)
{
	calls++;
	last_err = err;
}

static int run_io(struct memdisk *m, struct blk_io *io)
{
	calls = 0;
	last_err = 1;
	io->done = done;
	assert_int_equal(blk_submit(&m->dev, io), 0);
	assert_int_equal(calls, 0);	/* never from inside the call */
	hk_run(100000);
	assert_int_equal(calls, 1);
	return last_err;
}

static void test_cut_and_roundtrip(void **state)
{
	struct memdisk m;
	u8 *w = malloc(1u << 20), *r = malloc(1u << 20);
	struct blk_io io;

	memdisk_init(&m, 8192, 512, 64 * 1024, true);
	for (u32 i = 0; i < (1u << 20); i++)
		w[i] = (u8)(i * 13 + (i >> 9));
	io = (struct blk_io){ .op = BLK_WRITE, .sector = 2048, .buf = w, .len = 1u << 20 };
	assert_int_equal(run_io(&m, &io), 0);
	assert_int_equal(m.dev_reqs[BLK_WRITE], 16);
	assert_memory_equal(m.cur + 2048 * 512, w, 1u << 20);
	/* Not durable until a FLUSH. */
	assert_false(memcmp(m.durable + 2048 * 512, w, 512) == 0);
	io = (struct blk_io){ .op = BLK_FLUSH };
	assert_int_equal(run_io(&m, &io), 0);
	assert_memory_equal(m.durable + 2048 * 512, w, 1u << 20);
	io = (struct blk_io){ .op = BLK_READ, .sector = 2048, .buf = r, .len = (1u << 20) - 512 };
	assert_int_equal(run_io(&m, &io), 0);
	assert_int_equal(m.dev_reqs[BLK_READ], 16);
	assert_memory_equal(r, w, (1u << 20) - 512);
	assert_int_equal(m.dev.stats.writes, 1);
	assert_int_equal(m.dev.stats.reads, 1);
	assert_int_equal(m.dev.stats.flushes, 1);
	assert_int_equal(m.dev.stats.write_bytes, 1u << 20);
	assert_int_equal(m.dev.stats.errors, 0);
	memdisk_free(&m);
	free(w);
	free(r);
}

static void test_read_retries(void **state)
{
	struct memdisk m;
	u8 buf[4096];
	struct blk_io io;

	memdisk_init(&m, 64, 512, 1024, true);
	memset(m.cur + 512, 0x5a, 4096);
	/* The second device read fails once: retried, the request succeeds. */
	memdisk_fail(&m, BLK_READ, 2, 1);
	io = (struct blk_io){ .op = BLK_READ, .sector = 1, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), 0);
	assert_int_equal(m.dev.stats.read_retries, 1);
	assert_int_equal(m.dev_reqs[BLK_READ], 5);
	for (unsigned i = 0; i < sizeof buf; i++)
		assert_int_equal(buf[i], 0x5a);
	/* Three failures in a row: -EIO after exactly BLK_READ_TRIES sends. */
	m.dev_reqs[BLK_READ] = 0;
	memdisk_fail(&m, BLK_READ, 1, BLK_READ_TRIES);
	io = (struct blk_io){ .op = BLK_READ, .sector = 1, .buf = buf, .len = 1024 };
	assert_int_equal(run_io(&m, &io), -EIO);
	assert_int_equal(m.dev_reqs[BLK_READ], BLK_READ_TRIES);
	assert_int_equal(m.dev.stats.errors, 1);
	/* Two: the third try succeeds. */
	m.dev_reqs[BLK_READ] = 0;
	memdisk_fail(&m, BLK_READ, 1, BLK_READ_TRIES - 1);
	assert_int_equal(run_io(&m, &io), 0);
	assert_int_equal(m.dev_reqs[BLK_READ], BLK_READ_TRIES);
	memdisk_free(&m);
}

static void test_write_flush_not_retried(void **state)
{
	struct memdisk m;
	u8 buf[2048] = { 1 };
	struct blk_io io;

	memdisk_init(&m, 64, 512, 1024, true);
	memdisk_fail(&m, BLK_WRITE, 1, 1);
	io = (struct blk_io){ .op = BLK_WRITE, .sector = 0, .buf = buf, .len = 2048 };
	assert_int_equal(run_io(&m, &io), -EIO);
	assert_int_equal(m.dev_reqs[BLK_WRITE], 1);	/* stopped at the failed piece */
	memdisk_fail(&m, BLK_FLUSH, 1, 1);
	io = (struct blk_io){ .op = BLK_FLUSH };
	assert_int_equal(run_io(&m, &io), -EIO);
	assert_int_equal(m.dev_reqs[BLK_FLUSH], 1);
	assert_int_equal(m.dev.stats.errors, 2);
	memdisk_free(&m);
}

static void test_write_through_flush(void **state)
{
	struct memdisk m;
	struct blk_io io;

	memdisk_init(&m, 64, 512, 1024, false);
	io = (struct blk_io){ .op = BLK_FLUSH };
	assert_int_equal(run_io(&m, &io), 0);
	assert_int_equal(m.dev_reqs[BLK_FLUSH], 0);
	assert_int_equal(m.dev.stats.flushes, 1);
	memdisk_free(&m);
}

static void test_checks(void **state)
{
	struct memdisk m;
	u8 buf[8192];
	struct blk_io io;

	memdisk_init(&m, 64, 4096, 4096, true);
	io = (struct blk_io){ .op = BLK_READ, .sector = 0, .buf = buf, .len = 512 };
	assert_int_equal(run_io(&m, &io), -EINVAL);	/* not a whole block */
	io = (struct blk_io){ .op = BLK_READ, .sector = 1, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), -EINVAL);	/* sector not on a block */
	io = (struct blk_io){ .op = BLK_READ, .sector = 56, .buf = buf, .len = 8192 };
	assert_int_equal(run_io(&m, &io), -EINVAL);	/* past the end */
	io = (struct blk_io){ .op = BLK_READ, .sector = 56, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), 0);		/* the last block */
	io = (struct blk_io){ .op = BLK_READ, .sector = UINT64_MAX & ~7ull, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), -EINVAL);	/* no wrap */
	io = (struct blk_io){ .op = BLK_WRITE, .sector = 0, .buf = NULL, .len = 4096 };
	assert_int_equal(run_io(&m, &io), -EINVAL);
	io = (struct blk_io){ .op = BLK_READ, .sector = 0, .buf = buf, .len = 0 };
	assert_int_equal(run_io(&m, &io), -EINVAL);
	io = (struct blk_io){ .op = 9, .sector = 0, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), -EINVAL);
	io = (struct blk_io){ .op = BLK_DISCARD, .sector = 0, .len = 4096 };
	assert_int_equal(run_io(&m, &io), -ENOTSUP);
	io = (struct blk_io){ .op = BLK_WRITE_ZEROES, .sector = 8, .len = 8192 };
	memset(m.cur + 4096, 0xff, 8192);
	assert_int_equal(run_io(&m, &io), 0);
	assert_true(m.cur[4096] == 0 && m.cur[4096 + 8191] == 0);
	m.dev.ro = true;
	io = (struct blk_io){ .op = BLK_WRITE, .sector = 0, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), -EROFS);
	io = (struct blk_io){ .op = BLK_READ, .sector = 0, .buf = buf, .len = 4096 };
	assert_int_equal(run_io(&m, &io), 0);
	assert_int_equal(m.dev_reqs[BLK_WRITE], 0);
	memdisk_free(&m);
}

/* Completions come in submission order when the device keeps it, each once. */
static int order[8], norder;

static void done_order(struct blk_io *io, int err)
{
	order[norder++] = (int)(uintptr_t)io->priv;
}

static void test_many_in_flight(void **state)
{
	struct memdisk m;
	u8 buf[4][512];
	struct blk_io io[4];

	memdisk_init(&m, 64, 512, 512, true);
	norder = 0;
	for (int i = 0; i < 4; i++) {
		io[i] = (struct blk_io){ .op = BLK_WRITE, .sector = (u64)i, .buf = buf[i], .len = 512,
					 .done = done_order, .priv = (void *)(uintptr_t)i };
		memset(buf[i], i + 1, 512);
		blk_submit(&m.dev, &io[i]);
	}
	assert_int_equal(norder, 0);
	hk_run(1000);
	assert_int_equal(norder, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(order[i], i);
		assert_int_equal(m.cur[i * 512], i + 1);
	}
	memdisk_free(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_and_roundtrip), cmocka_unit_test(test_read_retries),
		cmocka_unit_test(test_write_flush_not_retried), cmocka_unit_test(test_write_through_flush),
		cmocka_unit_test(test_checks), cmocka_unit_test(test_many_in_flight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
