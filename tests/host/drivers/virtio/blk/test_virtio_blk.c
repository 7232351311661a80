/* drivers/virtio/blk/virtio_blk.c, unchanged, against the simulated
 * virtio-blk device (tests/host/simdev/blkdev.h) and the real virtio core:
 * config checks (block size, segment limits, capacity, cache mode,
 * discard limits), reads and writes split by SIZE_MAX/SEG_MAX, FLUSH only
 * where there is a cache, GET_ID, DISCARD and WRITE_ZEROES, read-only
 * devices, every kind of completion the device may lie in (status byte,
 * used length, ids), stalls (a reset and a new probe after blk.timeout=,
 * what was in flight failing with -EIO, a device given up after 4), lost
 * interrupts and kicks, and a random load over every ring layout checked
 * against a shadow disk. No page or heap block is left after each case. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/blk/virtio_blk.h"
#include "drivers/virtio/blk/virtio_blk_reg.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/blkdev.h"
#include "tests/host/simdev/hostbus.h"
#include <arch.h>

void vblk_host_forget(void);

#define MODERN VIRTIO_BIT(VIRTIO_F_VERSION_1)
#define F(x) VIRTIO_BIT(VIRTIO_BLK_F_##x)
#define STD (MODERN | F(FLUSH) | F(CONFIG_WCE) | F(BLK_SIZE) | F(SEG_MAX))
#define CFG(f) ((u32)offsetof(struct virtio_blk_config, f))
#define DISK_SECTORS 8192u	/* 4 MiB */

static struct blkdev dev;
static struct vblk *blk;

struct res {
	int err;
	unsigned calls;
};

static void on_done(struct vblk_req *r, int err)
{
	struct res *res = r->priv;

	res->err = err;
	res->calls++;
}

static void prepare(u64 features, u32 bs, u16 qsize)
{
	bd_init(&dev, features, DISK_SECTORS, bs, qsize);
	sd_cfg_write32(&dev.sd, CFG(seg_max), 126);
	dev.cfg[CFG(writeback)] = 1;
}

static int probe(void)
{
	int err = hk_probe(&dev.vd);

	hk_run(100000);
	blk = vblk_get(0);
	return err;
}

static void up(u64 features, u32 bs, u16 qsize)
{
	prepare(features, bs, qsize);
	assert_int_equal(probe(), 0);
	assert_non_null(blk);
}

static int teardown(void **state)
{
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	hk_run(100000);
	vblk_host_forget();
	hk_loop_reset();
	if (bd_errors(&dev))
		fail_msg("device saw %u errors: %s", bd_errors(&dev), bd_error(&dev));
	bd_fini(&dev);
	hk_free_kept();
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	blk = NULL;
	return 0;
}

/* Runs the loop and its timers until *calls is set, at most 60 s of the
 * fake clock (fails the test after). */
static void wait_done(const unsigned *calls)
{
	u64 start = hk_now();

	while (!*calls) {
		assert_true(hk_now() - start < 60 * NSEC_PER_SEC);
		hk_run_timers_until(5 * NSEC_PER_MSEC);
	}
}

/* Submits and runs the loop; the completion's error, or 1 if none came. */
static int io(u8 op, u64 sector, void *buf, u32 len)
{
	struct res res = { 0, 0 };
	struct vblk_req r = { .op = op, .sector = sector, .buf = buf, .len = len, .done = on_done, .priv = &res };
	int err = vblk_submit(blk, &r);

	if (err)
		return err;
	hk_run(100000);
	assert_true(res.calls <= 1);
	return res.calls ? res.err : 1;
}

static void info(struct vblk_info *in)
{
	vblk_get_info(blk, in);
}

static void test_probe_and_info(void **state)
{
	struct vblk_info in;

	up(STD | F(TOPOLOGY), 4096, 128);
	dev.cfg[CFG(physical_block_exp)] = 0;
	info(&in);
	assert_true(in.present);
	assert_int_equal(in.sectors, DISK_SECTORS);
	assert_int_equal(in.block_size, 4096);
	assert_true(in.writeback);
	assert_false(in.ro);
	assert_false(in.id_pending);
	assert_string_equal(in.serial, "simdev-blk");
	assert_int_equal(in.max_io, 1u << 20);
	assert_int_equal(dev.get_ids, 1);
	assert_true(hk_log_contains("blk: 8192 sectors (4 MiB), block 4096"));
	assert_true(hk_log_contains("serial \"simdev-blk\""));
}

static void test_read_write(void **state)
{
	u8 *w = vblk_buf_alloc(65536), *r = vblk_buf_alloc(65536);

	up(STD, 512, 128);
	for (u32 i = 0; i < 65536; i++)
		w[i] = (u8)(i * 7 + 3);
	assert_int_equal(io(VBLK_WRITE, 100, w, 65536), 0);
	assert_memory_equal(dev.disk + 100 * 512, w, 65536);
	assert_int_equal(io(VBLK_READ, 100, r, 65536), 0);
	assert_memory_equal(r, w, 65536);
	assert_int_equal(io(VBLK_FLUSH, 0, NULL, 0), 0);
	assert_int_equal(dev.flushes, 1);
	assert_int_equal(dev.flushed_writes, 1);
	vblk_buf_free(w, 65536);
	vblk_buf_free(r, 65536);
}

/* SIZE_MAX 4096 and SEG_MAX 4: 16 KiB per request, in 4 elements. */
static void test_segment_limits(void **state)
{
	u8 *w = vblk_buf_alloc(32768), *r = vblk_buf_alloc(32768);
	struct vblk_info in;

	prepare(STD | F(SIZE_MAX), 512, 128);
	sd_cfg_write32(&dev.sd, CFG(size_max), 4096);
	sd_cfg_write32(&dev.sd, CFG(seg_max), 4);
	assert_int_equal(probe(), 0);
	info(&in);
	assert_int_equal(in.max_io, 16384);
	memset(w, 0xa5, 16384);
	assert_int_equal(io(VBLK_WRITE, 8, w, 16384), 0);
	assert_int_equal(dev.max_segs, 4);
	assert_int_equal(io(VBLK_READ, 8, r, 16384), 0);
	assert_memory_equal(r, w, 16384);
	assert_int_equal(io(VBLK_WRITE, 8, w, 16384 + 512), -EINVAL);	/* the caller splits */
	vblk_buf_free(w, 32768);
	vblk_buf_free(r, 32768);
}

/* A ring of 4 without indirect descriptors: 2 data elements at most. */
static void test_small_ring(void **state)
{
	u8 *w = vblk_buf_alloc(8192);
	struct vblk_info in;

	prepare(STD | F(SIZE_MAX), 512, 4);
	sd_cfg_write32(&dev.sd, CFG(size_max), 1024);
	assert_int_equal(probe(), 0);
	info(&in);
	assert_int_equal(in.max_io, 2048);
	assert_int_equal(io(VBLK_WRITE, 0, w, 2048), 0);
	vblk_buf_free(w, 8192);
}

static void test_misaligned_refused(void **state)
{
	u8 *w = vblk_buf_alloc(8192);

	up(STD, 4096, 128);
	assert_int_equal(io(VBLK_WRITE, 1, w, 4096), -EINVAL);		/* sector not on a block */
	assert_int_equal(io(VBLK_WRITE, 8, w, 512), -EINVAL);		/* not a whole block */
	assert_int_equal(io(VBLK_WRITE, DISK_SECTORS - 8, w, 8192), -EINVAL);	/* past the end */
	assert_int_equal(io(VBLK_WRITE, DISK_SECTORS, w, 4096), -EINVAL);
	assert_int_equal(io(VBLK_READ, 0, NULL, 4096), -EINVAL);
	assert_int_equal(io(VBLK_DISCARD, 0, NULL, 4096), -ENOTSUP);
	assert_int_equal(io(VBLK_WRITE, DISK_SECTORS - 8, w, 4096), 0);	/* the last block */
	assert_int_equal(dev.writes, 1);
	vblk_buf_free(w, 8192);
}

static void test_write_through_needs_no_flush(void **state)
{
	struct vblk_info in;

	up(MODERN | F(BLK_SIZE), 512, 128);	/* no FLUSH: write-through */
	info(&in);
	assert_false(in.writeback);
	assert_int_equal(io(VBLK_FLUSH, 0, NULL, 0), 0);
	assert_int_equal(dev.flushes, 0);
}

static void test_wce_write_through(void **state)
{
	struct vblk_info in;

	prepare(STD, 512, 128);
	dev.cfg[CFG(writeback)] = 0;
	assert_int_equal(probe(), 0);
	info(&in);
	assert_false(in.writeback);
	assert_int_equal(io(VBLK_FLUSH, 0, NULL, 0), 0);
	assert_int_equal(dev.flushes, 0);
}

/* A writeback byte neither 0 nor 1 is read as writeback: flushes go out. */
static void test_wce_garbage_is_writeback(void **state)
{
	struct vblk_info in;

	prepare(STD, 512, 128);
	dev.cfg[CFG(writeback)] = 7;
	assert_int_equal(probe(), 0);
	info(&in);
	assert_true(in.writeback);
	assert_true(hk_log_contains("writeback 7 is neither 0 nor 1"));
	assert_int_equal(io(VBLK_FLUSH, 0, NULL, 0), 0);
	assert_int_equal(dev.flushes, 1);
}

/* FLUSH without CONFIG_WCE: a cache is assumed. */
static void test_flush_without_wce(void **state)
{
	struct vblk_info in;

	up(MODERN | F(FLUSH), 512, 128);
	info(&in);
	assert_true(in.writeback);
	assert_int_equal(io(VBLK_FLUSH, 0, NULL, 0), 0);
	assert_int_equal(dev.flushes, 1);
}

static void test_discard_write_zeroes(void **state)
{
	struct vblk_info in;

	prepare(STD | F(DISCARD) | F(WRITE_ZEROES), 512, 128);
	sd_cfg_write32(&dev.sd, CFG(max_discard_sectors), 2048);
	sd_cfg_write32(&dev.sd, CFG(max_discard_seg), 1);
	sd_cfg_write32(&dev.sd, CFG(max_write_zeroes_sectors), 4096);
	sd_cfg_write32(&dev.sd, CFG(max_write_zeroes_seg), 1);
	assert_int_equal(probe(), 0);
	info(&in);
	assert_true(in.discard && in.write_zeroes);
	assert_int_equal(in.max_discard, 2048 * 512);
	memset(dev.disk, 0x77, 65536);
	assert_int_equal(io(VBLK_WRITE_ZEROES, 8, NULL, 8192), 0);
	assert_int_equal(dev.disk[8 * 512], 0);
	assert_int_equal(dev.disk[8 * 512 + 8191], 0);
	assert_int_equal(dev.disk[7 * 512], 0x77);
	assert_int_equal(dev.disk[24 * 512], 0x77);
	assert_int_equal(io(VBLK_DISCARD, 0, NULL, 4096), 0);
	assert_int_equal(dev.discards, 1);
	assert_int_equal(io(VBLK_DISCARD, 0, NULL, 2049 * 512), -EINVAL);	/* over the limit */
}

/* Zero limits turn the feature off (logged); a probe still succeeds. */
static void test_discard_zero_limits(void **state)
{
	struct vblk_info in;

	up(STD | F(DISCARD), 512, 128);
	info(&in);
	assert_false(in.discard);
	assert_true(hk_log_contains("discard limits 0 sectors x 0 segments; discard off"));
	assert_int_equal(io(VBLK_DISCARD, 0, NULL, 4096), -ENOTSUP);
}

static void test_read_only(void **state)
{
	u8 *w = vblk_buf_alloc(4096);
	struct vblk_info in;

	up(STD | F(RO), 512, 128);
	info(&in);
	assert_true(in.ro);
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), -EROFS);
	assert_int_equal(io(VBLK_READ, 0, w, 4096), 0);
	assert_int_equal(dev.writes, 0);
	vblk_buf_free(w, 4096);
}

/* Config values outside what is sane refuse the device, logged once. */
static void test_bad_config_refused(void **state)
{
	static const struct {
		u32 bs;
		u64 cap;
		u32 size_max;
		const char *log;
	} cases[] = {
		{ 3000, DISK_SECTORS, 0, "blk_size 3000 is not a power of two in 512..4096" },
		{ 8192, DISK_SECTORS, 0, "blk_size 8192 is not a power of two" },
		{ 256, DISK_SECTORS, 0, "blk_size 256 is not a power of two" },
		{ 0, DISK_SECTORS, 0, "blk_size 0 is not a power of two" },
		{ 512, 1ull << 50, 0, "is past 2^48; device refused" },
		{ 512, DISK_SECTORS, 100, "size_max 100 below 512; device refused" },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		prepare(STD | (cases[i].size_max ? F(SIZE_MAX) : 0), 512, 128);
		sd_cfg_write32(&dev.sd, CFG(blk_size), cases[i].bs);
		sd_cfg_write32(&dev.sd, 0, (u32)cases[i].cap);
		sd_cfg_write32(&dev.sd, 4, (u32)(cases[i].cap >> 32));
		sd_cfg_write32(&dev.sd, CFG(size_max), cases[i].size_max);
		hk_log_reset();
		assert_int_not_equal(hk_probe(&dev.vd), 0);
		hk_run(100000);
		assert_true(hk_log_contains(cases[i].log));
		assert_null(vblk_get(0));	/* nothing kept */
		assert_true(dev.status & VIRTIO_S_FAILED);
		assert_int_equal(bd_errors(&dev), 0);
		bd_fini(&dev);
		assert_int_equal(hk_pages_live(), 0);
		assert_int_equal(hk_kmem_live(), 0);
	}
	prepare(STD, 512, 128);	/* for the teardown */
}

/* Tolerated oddities: seg_max 0 is 1, a capacity of part blocks is cut,
 * a topology exponent over 3 is ignored. */
static void test_odd_config_tolerated(void **state)
{
	struct vblk_info in;

	prepare(STD | F(TOPOLOGY) | F(SIZE_MAX), 4096, 128);
	sd_cfg_write32(&dev.sd, CFG(seg_max), 0);
	sd_cfg_write32(&dev.sd, CFG(size_max), 8192);
	sd_cfg_write32(&dev.sd, 0, DISK_SECTORS - 3);
	dev.cfg[CFG(physical_block_exp)] = 9;
	assert_int_equal(probe(), 0);
	info(&in);
	assert_int_equal(in.max_io, 8192);
	assert_int_equal(in.sectors, DISK_SECTORS - 8);
	assert_int_equal(in.phys_block_size, 4096);
	assert_true(hk_log_contains("seg_max 0; taken as 1"));
	assert_true(hk_log_contains("physical_block_exp 9 over 3; ignored"));
	assert_true(hk_log_contains("is not whole blocks; using 8184"));
}

/* GET_ID: non-printable bytes shown as '?', a full 20 bytes without NUL;
 * a device that refuses it has no serial and is still used. */
static void test_serial(void **state)
{
	struct vblk_info in;

	prepare(STD, 512, 128);
	memcpy(dev.serial, "abc\x01\x7f" "defghijklmnopqrst", 20);
	assert_int_equal(probe(), 0);
	info(&in);
	assert_string_equal(in.serial, "abc??defghijklmnopqr");
	hk_remove(&dev.vd);
	hk_run(100000);
	vblk_host_forget();
	bd_fini(&dev);

	prepare(STD, 512, 128);
	dev.fault = BD_UNSUPP;	/* the first request is GET_ID */
	assert_int_equal(probe(), 0);
	info(&in);
	assert_string_equal(in.serial, "");
	assert_false(in.id_pending);
	assert_true(hk_log_contains("no serial (GET_ID not supported)"));
}

static void test_device_error_is_eio(void **state)
{
	u8 *w = vblk_buf_alloc(4096);

	up(STD, 512, 128);
	dev.fault = BD_IOERR;
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), -EIO);
	assert_int_equal(hk_broken_count(), 0);	/* an answer, not a violation */
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), 0);
	dev.fault = BD_UNSUPP;
	assert_int_equal(io(VBLK_FLUSH, 0, NULL, 0), -ENOTSUP);
	vblk_buf_free(w, 4096);
}

/* Each lie fails the request (and whatever was in flight) with -EIO, logs
 * once, resets the device through the bus and probes it again; the device
 * then serves the next request. */
static void test_hostile_completions(void **state)
{
	static const struct {
		enum bd_fault f;
		const char *why;
	} cases[] = {
		{ BD_STATUS_BAD, "write completed with status 0x7" },
		{ BD_STATUS_UNSET, "write completed with status 0xff (never written)" },
		{ BD_LEN_SHORT, "write completed with used length 0, posted 1" },
		{ BD_LEN_ZERO, "write completed with used length 0, posted 1" },
		{ BD_ID_RANGE, "request queue broken" },
		{ BD_ID_NONHEAD, "request queue broken" },
	};
	u8 *w = vblk_buf_alloc(4096);

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned broken = hk_broken_count(), resets = dev.resets;
		struct vblk_stats st;

		if (i == 0)
			up(STD, 512, 128);
		hk_log_reset();
		dev.fault = cases[i].f;
		assert_int_equal(io(VBLK_WRITE, 8, w, 4096), -EIO);
		assert_int_equal(hk_broken_count(), broken + 1);
		assert_true(hk_log_contains(cases[i].why));
		assert_true(hk_log_contains("driver asked for a reset; resetting and probing again"));
		assert_true(dev.resets > resets);
		assert_true(dev.status & VIRTIO_S_DRIVER_OK);
		vblk_get_stats(blk, &st);
		assert_int_equal(st.inflight, 0);
		/* Serving again. */
		assert_int_equal(io(VBLK_WRITE, 16, w, 4096), 0);
	}
	vblk_buf_free(w, 4096);
}

/* A violation with several requests in flight: every one completes once,
 * with -EIO, none lost; those parked are sent after the new probe. */
static void test_violation_fails_inflight(void **state)
{
	enum { N = 40 };
	struct res res[N] = { 0 };
	struct vblk_req req[N];
	u8 *w = vblk_buf_alloc(4096);
	unsigned ok = 0, eio = 0, ring;

	up(STD, 512, 16);	/* 16 descriptors, 3 a request: the rest park */
	dev.hold = true;
	for (unsigned i = 0; i < N; i++) {
		req[i] = (struct vblk_req){ .op = VBLK_WRITE, .sector = 8 * i, .buf = w, .len = 4096,
					    .done = on_done, .priv = &res[i] };
		assert_int_equal(vblk_submit(blk, &req[i]), 0);
	}
	hk_run(100000);
	ring = bd_pending(&dev);
	assert_int_equal(ring, 5);
	dev.fault = BD_STATUS_BAD;
	dev.hold = false;
	bd_complete(&dev, 1);
	hk_run(100000);
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(res[i].calls, 1);
		if (res[i].err == 0)
			ok++;
		else if (res[i].err == -EIO)
			eio++;
	}
	assert_int_equal(eio, ring);	/* those on the ring */
	assert_int_equal(ok, N - ring);	/* sent after the new probe */
	vblk_buf_free(w, 4096);
}

/* A stalled device: after blk.timeout= (30 s) the device is reset and
 * probed again, what it held fails with -EIO, then it serves again. */
static void test_stall_timeout_resets(void **state)
{
	struct res res = { 0 }, res2 = { 0 };
	u8 *w = vblk_buf_alloc(4096);
	struct vblk_req r = { .op = VBLK_WRITE, .sector = 0, .buf = w, .len = 4096, .done = on_done, .priv = &res };
	struct vblk_req f = { .op = VBLK_FLUSH, .done = on_done, .priv = &res2 };
	struct vblk_stats st;
	u64 start;

	up(STD, 512, 128);
	dev.hold = true;
	assert_int_equal(vblk_submit(blk, &r), 0);
	assert_int_equal(vblk_submit(blk, &f), 0);
	hk_run(100000);
	start = hk_now();
	while (!res.calls && hk_now() - start < 40 * NSEC_PER_SEC)
		hk_run_timers_until(100 * NSEC_PER_MSEC);
	assert_int_equal(res.calls, 1);
	assert_int_equal(res.err, -EIO);
	assert_int_equal(res2.calls, 1);
	assert_int_equal(res2.err, -EIO);
	assert_true(hk_now() - start >= 30 * NSEC_PER_SEC);
	assert_true(hk_now() - start < 31 * NSEC_PER_SEC);
	assert_true(hk_log_contains("write of 4096 bytes at sector 0 not completed within 30000 ms"));
	vblk_get_stats(blk, &st);
	assert_int_equal(st.timeouts, 1);
	assert_int_equal(st.resets, 1);
	assert_int_equal(dev.resets, 3);	/* the first probe's, then remove's and probe's */
	dev.hold = false;
	assert_int_equal(io(VBLK_WRITE, 8, w, 4096), 0);
	vblk_buf_free(w, 4096);
}

/* A device that stalls after every probe is given up after 4 resets in a
 * row: then every request fails at once, and the timers stop. */
static void test_stall_given_up(void **state)
{
	u8 *w = vblk_buf_alloc(4096);
	struct vblk_info in;
	unsigned round;

	up(STD, 512, 128);
	dev.hold = true;
	for (round = 0; round < 6 && dev.vd.driver; round++) {
		struct res res = { 0 };
		struct vblk_req r = { .op = VBLK_WRITE, .sector = 0, .buf = w, .len = 4096, .done = on_done,
				      .priv = &res };

		assert_int_equal(vblk_submit(blk, &r), 0);
		wait_done(&res.calls);
		assert_int_equal(res.err, -EIO);
	}
	assert_int_equal(round, 5);
	assert_null(dev.vd.driver);	/* the last probe refused it */
	assert_true(hk_log_contains("given up after 4 resets in a row"));
	info(&in);
	assert_false(in.present);
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), -EIO);
	assert_int_equal(hk_next_deadline(), UINT64_MAX);
	vblk_buf_free(w, 4096);
}

/* Resets in a row are counted only while nothing completes. */
static void test_completion_clears_reset_count(void **state)
{
	u8 *w = vblk_buf_alloc(4096);

	up(STD, 512, 128);
	for (unsigned round = 0; round < 8; round++) {
		struct res res = { 0 };
		struct vblk_req r = { .op = VBLK_WRITE, .sector = 0, .buf = w, .len = 4096, .done = on_done,
				      .priv = &res };

		dev.hold = true;
		assert_int_equal(vblk_submit(blk, &r), 0);
		wait_done(&res.calls);
		assert_int_equal(res.err, -EIO);
		dev.hold = false;
		assert_int_equal(io(VBLK_WRITE, 8, w, 4096), 0);
	}
	assert_non_null(dev.vd.driver);
	vblk_buf_free(w, 4096);
}

/* Interrupts never delivered: the re-check completes every request within
 * two re-check periods all the same. */
static void test_lost_interrupts(void **state)
{
	u8 *w = vblk_buf_alloc(4096);
	struct res res = { 0 };
	struct vblk_req r = { .op = VBLK_WRITE, .sector = 0, .buf = w, .len = 4096, .done = on_done, .priv = &res };
	u64 start;

	up(STD, 512, 128);
	dev.no_irq = true;
	start = hk_now();
	assert_int_equal(vblk_submit(blk, &r), 0);
	hk_run(100000);
	assert_int_equal(res.calls, 0);	/* completed on the device, unseen */
	wait_done(&res.calls);
	assert_int_equal(res.err, 0);
	assert_true(hk_now() - start <= 40 * NSEC_PER_MSEC);
	vblk_buf_free(w, 4096);
}

/* Remove with requests in flight: each fails once with -EIO. */
static void test_remove_fails_inflight(void **state)
{
	struct res res[3] = { 0 };
	u8 *w = vblk_buf_alloc(4096);
	struct vblk_req r[3];

	up(STD, 512, 128);
	dev.hold = true;
	for (unsigned i = 0; i < 3; i++) {
		r[i] = (struct vblk_req){ .op = VBLK_WRITE, .sector = 8 * i, .buf = w, .len = 4096,
					  .done = on_done, .priv = &res[i] };
		assert_int_equal(vblk_submit(blk, &r[i]), 0);
	}
	hk_run(100000);
	hk_remove(&dev.vd);
	hk_run(100000);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(res[i].calls, 1);
		assert_int_equal(res[i].err, -EIO);
	}
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), -EIO);	/* no device now */
	vblk_buf_free(w, 4096);
}

/* A legacy device: used lengths are ignored (the spec's advice), the
 * status byte still decides. */
static void test_legacy_ignores_used_len(void **state)
{
	u8 *w = vblk_buf_alloc(4096);
	unsigned broken = hk_broken_count();

	prepare(F(FLUSH) | F(BLK_SIZE) | F(SEG_MAX), 512, 128);
	assert_int_equal(probe(), 0);
	dev.fault = BD_LEN_ZERO;
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), 0);
	dev.fault = BD_LEN_SHORT;
	assert_int_equal(io(VBLK_READ, 0, w, 4096), 0);
	assert_int_equal(hk_broken_count(), broken);
	dev.fault = BD_STATUS_BAD;
	assert_int_equal(io(VBLK_WRITE, 0, w, 4096), -EIO);
	assert_int_equal(hk_broken_count(), broken + 1);
	vblk_buf_free(w, 4096);
}

/* ---- a random load over every ring layout, against a shadow disk ---- */

#define R_REGIONS 24
#define R_REGION (64u * 1024)

struct rreq {
	struct vblk_req r;
	struct res res;
	u8 *buf;
	bool busy;
	u8 op;
	u32 len;
	u8 fill;
};

static u64 rnd_state;

static u32 rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (u32)(rnd_state >> 33);
}

static void random_load(u64 features, u16 qsize, u64 seed)
{
	static struct rreq rq[R_REGIONS];
	u8 *shadow = calloc(1, R_REGIONS * R_REGION);
	struct vblk_info in;
	unsigned done = 0, broken = hk_broken_count();

	rnd_state = seed;
	prepare(features, 512, qsize);
	sd_cfg_write32(&dev.sd, CFG(size_max), 8192);
	assert_int_equal(probe(), 0);
	info(&in);
	for (unsigned i = 0; i < R_REGIONS; i++)
		rq[i] = (struct rreq){ .buf = vblk_buf_alloc(R_REGION) };
	for (unsigned step = 0; step < 3000; step++) {
		unsigned k = rnd() % R_REGIONS;
		struct rreq *q = &rq[k];

		dev.hold = rnd() % 4 != 0;
		if (!q->busy && rnd() % 2) {
			u32 maxb = MIN(R_REGION, in.max_io) / 512;

			q->op = rnd() % 5 == 0 ? VBLK_FLUSH : rnd() % 2 ? VBLK_WRITE : VBLK_READ;
			q->len = (1 + rnd() % maxb) * 512;
			q->fill = (u8)rnd();
			if (q->op == VBLK_WRITE)
				memset(q->buf, q->fill, q->len);
			q->res = (struct res){ 0 };
			q->r = (struct vblk_req){ .op = q->op, .sector = (u64)k * (R_REGION / 512), .buf = q->buf,
						  .len = q->op == VBLK_FLUSH ? 0 : q->len, .done = on_done,
						  .priv = &q->res };
			if (q->op == VBLK_FLUSH)
				q->r.buf = NULL;
			assert_int_equal(vblk_submit(blk, &q->r), 0);
			q->busy = true;
		}
		switch (rnd() % 4) {
		case 0:
			bd_complete(&dev, 1 + rnd() % 4);
			break;
		case 1:
			bd_irq(&dev);
			break;
		case 2:
			hk_run(1 + rnd() % 3);
			break;
		default:
			hk_run_timers_until(rnd() % 25 * NSEC_PER_MSEC);
			break;
		}
		for (unsigned i = 0; i < R_REGIONS; i++) {
			struct rreq *x = &rq[i];

			if (!x->busy || !x->res.calls)
				continue;
			assert_int_equal(x->res.calls, 1);
			assert_int_equal(x->res.err, 0);
			if (x->op == VBLK_WRITE)
				memset(shadow + (size_t)i * R_REGION, x->fill, x->len);
			else if (x->op == VBLK_READ)
				assert_memory_equal(x->buf, shadow + (size_t)i * R_REGION, x->len);
			x->busy = false;
			done++;
		}
		assert_int_equal(bd_errors(&dev), 0);
	}
	dev.hold = false;
	while (bd_complete(&dev, ~0u) || hk_run(100000))
		;
	for (unsigned i = 0; i < R_REGIONS; i++) {
		struct rreq *x = &rq[i];

		if (x->busy) {
			wait_done(&x->res.calls);
			assert_int_equal(x->res.err, 0);
			if (x->op == VBLK_WRITE)
				memset(shadow + (size_t)i * R_REGION, x->fill, x->len);
			else if (x->op == VBLK_READ)
				assert_memory_equal(x->buf, shadow + (size_t)i * R_REGION, x->len);
			done++;
		}
		vblk_buf_free(x->buf, R_REGION);
	}
	assert_true(done > 500);
	assert_memory_equal(dev.disk, shadow, R_REGIONS * R_REGION);	/* the flushes and writes landed */
	assert_int_equal(hk_broken_count(), broken);
	free(shadow);
	hk_remove(&dev.vd);
	hk_run(100000);
	vblk_host_forget();
	bd_fini(&dev);
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
}

static void test_random_load_layouts(void **state)
{
	static const u64 layouts[] = {
		STD,
		STD | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC),
		STD | VIRTIO_BIT(VIRTIO_F_EVENT_IDX),
		STD | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) | VIRTIO_BIT(VIRTIO_F_EVENT_IDX),
		STD | VIRTIO_BIT(VIRTIO_F_RING_PACKED),
		STD | VIRTIO_BIT(VIRTIO_F_RING_PACKED) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) |
			VIRTIO_BIT(VIRTIO_F_EVENT_IDX),
		STD | VIRTIO_BIT(VIRTIO_F_IN_ORDER),
		(STD & ~MODERN) | VIRTIO_BIT(VIRTIO_F_INDIRECT_DESC) | VIRTIO_BIT(VIRTIO_F_EVENT_IDX),
	};

	for (unsigned i = 0; i < ARRAY_SIZE(layouts); i++) {
		random_load(layouts[i] | F(SIZE_MAX), 32, 1000 + i);
		random_load(layouts[i], 8, 2000 + i);
	}
	prepare(STD, 512, 128);	/* for the teardown */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_probe_and_info, teardown),
		cmocka_unit_test_teardown(test_read_write, teardown),
		cmocka_unit_test_teardown(test_segment_limits, teardown),
		cmocka_unit_test_teardown(test_small_ring, teardown),
		cmocka_unit_test_teardown(test_misaligned_refused, teardown),
		cmocka_unit_test_teardown(test_write_through_needs_no_flush, teardown),
		cmocka_unit_test_teardown(test_wce_write_through, teardown),
		cmocka_unit_test_teardown(test_wce_garbage_is_writeback, teardown),
		cmocka_unit_test_teardown(test_flush_without_wce, teardown),
		cmocka_unit_test_teardown(test_discard_write_zeroes, teardown),
		cmocka_unit_test_teardown(test_discard_zero_limits, teardown),
		cmocka_unit_test_teardown(test_read_only, teardown),
		cmocka_unit_test_teardown(test_bad_config_refused, teardown),
		cmocka_unit_test_teardown(test_odd_config_tolerated, teardown),
		cmocka_unit_test_teardown(test_serial, teardown),
		cmocka_unit_test_teardown(test_device_error_is_eio, teardown),
		cmocka_unit_test_teardown(test_hostile_completions, teardown),
		cmocka_unit_test_teardown(test_violation_fails_inflight, teardown),
		cmocka_unit_test_teardown(test_stall_timeout_resets, teardown),
		cmocka_unit_test_teardown(test_stall_given_up, teardown),
		cmocka_unit_test_teardown(test_completion_clears_reset_count, teardown),
		cmocka_unit_test_teardown(test_lost_interrupts, teardown),
		cmocka_unit_test_teardown(test_remove_fails_inflight, teardown),
		cmocka_unit_test_teardown(test_legacy_ignores_used_len, teardown),
		cmocka_unit_test_teardown(test_random_load_layouts, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
