/* Host tests for drivers/virtio/virtq.c against tests/host/simdev/fake_dev.c, both ring
 * layouts. Built with ASan/UBSan; run build/host/test_virtq. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <arch.h>
#include "debug/virtq_fault.h"
#include "drivers/virtio/virtq.h"
#include "drivers/virtio/virtio_ring_reg.h"
#include "tests/host/simdev/fake_dev.h"

#define OPT_EVT		1u	/* VIRTIO_F_EVENT_IDX */
#define OPT_IND		2u	/* VIRTIO_F_INDIRECT_DESC */
#define OPT_INORD	4u	/* VIRTIO_F_IN_ORDER */
#define OPT_NDATA	8u	/* VIRTIO_F_NOTIFICATION_DATA */
#define OPT_WEAK	16u	/* weak (dma_*) barriers */
#define OPT_TRANS	32u	/* transient buffers: unmapped when reclaimed */

#define QINDEX 3

static const bool SPLIT = false;
static const bool PACKED = true;

/* One queue, its memory and the device on the other side. */
struct harness {
	struct virtq vq;
	struct virtq_config cfg;
	struct fake_dev dev;
	void *ring, *priv;
	size_t ring_bytes, priv_bytes;
	bool open;
};
static struct harness H;
static u16 next_direct_max;	/* the next h_open's cfg.direct_max, then 0 again */

/* Requests: up to 3 readable and 3 writable elements each. */
#define MAX_REQ 1024
struct req {
	u8 out[3][32];
	u8 in[3][48];
	struct virtq_sg sg_out[3], sg_in[3];
	unsigned n_out, n_in;
	u32 in_total;
	u32 out_hash;
};
static struct req REQ[MAX_REQ];

static bool layout(void **state)
{
	return *(const bool *)*state;
}

static void h_open_max(bool packed, u16 num, unsigned opts, u16 indirect_max)
{
	fake_dev_fini(&H.dev);	/* nothing left from an earlier test */
	memset(&H.dev, 0, sizeof(H.dev));
	memset(&H.vq, 0, sizeof(H.vq));
	memset(&H.cfg, 0, sizeof(H.cfg));
	H.cfg.num = num;
	H.cfg.index = QINDEX;
	H.cfg.packed = packed;
	H.cfg.event_idx = opts & OPT_EVT;
	H.cfg.indirect = opts & OPT_IND;
	H.cfg.in_order = opts & OPT_INORD;
	H.cfg.notification_data = opts & OPT_NDATA;
	H.cfg.weak_barriers = opts & OPT_WEAK;
	H.cfg.indirect_max = indirect_max;
	H.cfg.direct_max = next_direct_max;
	next_direct_max = 0;
	H.cfg.dma = fake_dev_domain(&H.dev);
	H.cfg.transient = opts & OPT_TRANS;
	H.cfg.notify = fake_dev_notify;
	H.cfg.ctx = &H.dev;
	assert_int_equal(virtq_mem_size(&H.cfg, &H.ring_bytes, &H.priv_bytes), 0);
	assert_int_equal(H.ring_bytes % VIRTQ_RING_ALIGN, 0);
	H.ring = aligned_alloc(VIRTQ_RING_ALIGN, H.ring_bytes);
	H.priv = malloc(H.priv_bytes);
	assert_non_null(H.ring);
	assert_non_null(H.priv);
	memset(H.ring, 0xa5, H.ring_bytes);	/* virtq_init must zero it */
	memset(H.priv, 0x5a, H.priv_bytes);
	H.open = true;
	assert_int_equal(virtq_init(&H.vq, &H.cfg, H.ring, H.priv), 0);
	fake_dev_init(&H.dev, &H.cfg, &H.vq);
	shim_klog_reset();
}

static void h_open(bool packed, u16 num, unsigned opts)
{
	h_open_max(packed, num, opts, 0);
}

static int teardown(void **state)
{
	(void)state;
	if (H.open) {
		fake_dev_fini(&H.dev);
		free(H.ring);
		free(H.priv);
		H.open = false;
	}
	return 0;
}

/* Fill request r (n_out readable, n_in writable elements) and add it. */
static int add_req(unsigned r, unsigned n_out, unsigned n_in)
{
	struct req *q = &REQ[r % MAX_REQ];
	unsigned i, j;

	q->n_out = n_out;
	q->n_in = n_in;
	q->in_total = 0;
	q->out_hash = FAKE_HASH_INIT;
	for (i = 0; i < n_out; i++) {
		u32 len = 8 + (r + i) % 24;

		for (j = 0; j < len; j++)
			q->out[i][j] = (u8)(r * 7 + i * 13 + j);
		q->sg_out[i].addr = q->out[i];
		q->sg_out[i].len = len;
		q->out_hash = fake_hash(q->out_hash, q->out[i], len);
	}
	for (i = 0; i < n_in; i++) {
		u32 len = 16 + (r * 3 + i) % 32;

		memset(q->in[i], 0, sizeof(q->in[i]));
		q->sg_in[i].addr = q->in[i];
		q->sg_in[i].len = len;
		q->in_total += len;
	}
	return virtq_add(&H.vq, q->sg_out, n_out, q->sg_in, n_in, q);
}

/* The first len writable bytes of r hold the device's pattern. */
static void check_in_data(unsigned r, u32 len)
{
	struct req *q = &REQ[r % MAX_REQ];
	u32 done = 0;
	unsigned i, j;

	for (i = 0; i < q->n_in && done < len; i++)
		for (j = 0; j < q->sg_in[i].len && done < len; j++, done++)
			assert_int_equal(q->in[i][j], (u8)(H.dev.fill + done));
	assert_int_equal(done, len);
}

static void expect_get(unsigned r, u32 len)
{
	u32 got = 0xdeadbeef;
	void *t = virtq_get(&H.vq, &got);

	assert_ptr_equal(t, &REQ[r % MAX_REQ]);
	assert_int_equal(got, len);
	check_in_data(r, len);
}

static void expect_clean(void)
{
	if (H.dev.errors)
		fail_msg("device saw a driver error: %s", H.dev.error);
	assert_int_equal(shim_klog_count(), 0);
	assert_false(virtq_is_broken(&H.vq));
}

static u32 in_total(unsigned r)
{
	return REQ[r % MAX_REQ].in_total;
}

/* ---- sizes, layout, init ------------------------------------------------------ */

static void test_mem_size_validation(void **state)
{
	struct virtq_config c = { .num = 256, .notify = fake_dev_notify };
	size_t rb, pb;
	struct virtq vq;
	void *ring;
	u64 priv[64];

	(void)state;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), 0);
	assert_int_equal(rb % 4096, 0);
	assert_true(pb > 0);
	c.num = 0;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);
	c.num = 3;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);
	c.num = 1025;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);
	c.num = 2048;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);
	c.num = 1024;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), 0);
	c.num = 1;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), 0);

	c.packed = true;
	c.num = 3;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), 0);
	c.num = 1000;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), 0);
	c.num = 1025;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);
	c.num = 0;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);

	c.num = 8;
	c.indirect = true;
	c.indirect_max = VIRTQ_INDIRECT_MAX + 1;
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), -EINVAL);
	c.indirect_max = 0;

	/* init: misaligned ring, missing notify */
	assert_int_equal(virtq_mem_size(&c, &rb, &pb), 0);
	assert_true(pb <= sizeof(priv));
	ring = aligned_alloc(4096, rb + 4096);
	assert_non_null(ring);
	assert_int_equal(virtq_init(&vq, &c, (u8 *)ring + 64, priv), -EINVAL);
	c.notify = NULL;
	assert_int_equal(virtq_init(&vq, &c, ring, priv), -EINVAL);
	c.notify = fake_dev_notify;
	assert_int_equal(virtq_init(&vq, &c, ring, priv), 0);
	free(ring);
}

static void test_layout_split(void **state)
{
	dma_addr_t desc, drv, dev;
	size_t i;

	(void)state;
	h_open(false, 256, OPT_EVT);
	virtq_ring_addrs(&H.vq, &desc, &drv, &dev);
	assert_ptr_equal(fake_dma_va(desc), H.ring);
	assert_int_equal(drv - desc, 16 * 256);
	/* legacy layout: used on the next 4096 after desc + avail (6 + 2*256) */
	assert_int_equal(dev - desc, 8192);
	for (i = 0; i < H.ring_bytes; i++)
		if (((u8 *)H.ring)[i])
			fail_msg("ring byte %zu not zeroed", i);
	expect_clean();
}

static void test_layout_packed(void **state)
{
	dma_addr_t desc, drv, dev;
	size_t i;

	(void)state;
	h_open(true, 100, OPT_IND);
	virtq_ring_addrs(&H.vq, &desc, &drv, &dev);
	assert_ptr_equal(fake_dma_va(desc), H.ring);
	assert_int_equal(drv - desc, 16 * 100);
	assert_int_equal(dev - drv, 4);
	/* indirect tables after: 100 tables of min(16, 100) entries */
	assert_true(H.ring_bytes >= 16 * 100 + 8 + 100 * 16 * 16);
	for (i = 0; i < H.ring_bytes; i++)
		if (((u8 *)H.ring)[i])
			fail_msg("ring byte %zu not zeroed", i);
	expect_clean();
}

/* ---- steady state across index wrap ------------------------------------------------ */

/* Many add/complete cycles, up to 'depth' in flight, chains of 1..4. */
static void run_cycles(unsigned ops, unsigned depth)
{
	unsigned fifo[64], head = 0, tail = 0, r = 0, done = 0;

	assert_true(depth < 64);
	while (done < ops) {
		while (tail - head < depth && r < ops) {
			unsigned n_out = 1 + r % 2, n_in = r % 3;

			if (add_req(r, n_out, n_in) == -ENOSPC)
				break;
			fifo[tail++ % 64] = r++;
			if (virtq_kick(&H.vq) && H.cfg.notification_data) {
				u32 data = H.dev.last_notify;

				fake_dev_fetch(&H.dev);
				if (H.cfg.packed) {
					assert_int_equal((data >> 16) & 0x7fff, H.dev.avail_pos);
					assert_int_equal(data >> 31, H.dev.avail_wrap);
				} else {
					assert_int_equal(data >> 16, H.dev.last_avail);
				}
			}
		}
		fake_dev_fetch(&H.dev);
		assert_true(H.dev.npending > 0);
		{
			unsigned q = fifo[head++ % 64];
			u32 len = (q % 5 == 0) ? REQ[q % MAX_REQ].in_total / 2 : FAKE_LEN_ALL;

			if (len == FAKE_LEN_ALL)
				len = REQ[q % MAX_REQ].in_total;
			assert_int_equal(H.dev.pending[0].out_hash, REQ[q % MAX_REQ].out_hash);
			fake_dev_complete(&H.dev, 0, len);
			expect_get(q, len);
			done++;
		}
	}
	assert_null(virtq_get(&H.vq, NULL));
	assert_int_equal(virtq_num_free(&H.vq), H.cfg.num);
	expect_clean();
}

static void test_wraparound(void **state)
{
	bool packed = layout(state);

	/* > 65536 buffers: split avail/used idx wrap; packed wraps many laps */
	h_open(packed, packed ? 7 : 8, OPT_NDATA);
	H.dev.eager = true;	/* the device polls while buffers are being added */
	run_cycles(70000, 5);
	assert_int_equal(H.vq.stats.adds, 70000);
	assert_int_equal(H.vq.stats.completions, 70000);
	if (packed)
		assert_true(H.dev.used_wrap_flips > 10000);
	else
		assert_int_equal(H.vq.split.avail_idx, (u16)70000);
}

static void test_wraparound_event_indirect(void **state)
{
	h_open(layout(state), layout(state) ? 13 : 16, OPT_EVT | OPT_IND | OPT_WEAK | OPT_NDATA);
	H.dev.eager = true;
	run_cycles(70000, 9);
	assert_true(H.dev.indirect_seen > 0);
}

/* ---- completion order --------------------------------------------------------------- */

static void test_out_of_order(void **state)
{
	bool packed = layout(state);
	unsigned round, i, map[16], n, rng = 12345;
	unsigned order[16], norder;
	u32 lens[16];

	h_open(packed, packed ? 15 : 16, 0);
	for (round = 0; round < 3000; round++) {
		unsigned base = round * 8;

		/* 8 requests, chains of 1..3: 15 descriptors */
		n = 0;
		for (i = 0; i < 8; i++) {
			assert_int_equal(add_req(base + i, 1 + (i % 3 == 0), i % 2), 0);
			map[n++] = base + i;
		}
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 8);
		/* complete in a pseudo-random order, getting only now and then */
		norder = 0;
		while (H.dev.npending) {
			unsigned pick, r;

			rng = rng * 1103515245u + 12345u;
			pick = (rng >> 16) % H.dev.npending;
			r = map[pick];
			memmove(&map[pick], &map[pick + 1], (H.dev.npending - pick - 1) * sizeof(map[0]));
			lens[norder] = REQ[r % MAX_REQ].in_total;
			order[norder++] = r;
			fake_dev_complete(&H.dev, pick, FAKE_LEN_ALL);
		}
		for (i = 0; i < norder; i++)
			expect_get(order[i], lens[i]);
		assert_null(virtq_get(&H.vq, NULL));
		assert_int_equal(virtq_num_free(&H.vq), H.cfg.num);
	}
	expect_clean();
}

static void in_order(bool packed, unsigned opts)
{
	unsigned round, r = 0;

	h_open(packed, packed ? 11 : 8, OPT_INORD | opts);
	for (round = 0; round < 5000; round++) {
		/* one used entry per buffer */
		assert_int_equal(add_req(r, 1, 1), 0);
		assert_int_equal(add_req(r + 1, 2, 0), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 2);
		fake_dev_complete(&H.dev, 0, 5);
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		expect_get(r, 5);
		expect_get(r + 1, 0);
		r += 2;

		/* a batch of 3 announced by one entry for the last buffer */
		assert_int_equal(add_req(r, 1, 1), 0);
		assert_int_equal(add_req(r + 1, 1, 2), 0);
		assert_int_equal(add_req(r + 2, 1, 1), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 3);
		fake_dev_complete_batch(&H.dev, 3, 7);
		assert_true(virtq_more_used(&H.vq));
		expect_get(r, in_total(r));
		assert_true(virtq_more_used(&H.vq));	/* rest of the batch */
		expect_get(r + 1, in_total(r + 1));
		expect_get(r + 2, 7);
		assert_false(virtq_more_used(&H.vq));
		assert_null(virtq_get(&H.vq, NULL));
		r += 3;
		assert_int_equal(virtq_num_free(&H.vq), H.cfg.num);
	}
	assert_int_equal(H.vq.stats.batched, 2 * 5000);
	if (opts & OPT_IND)
		assert_int_equal(H.dev.indirect_seen, 5 * 5000);	/* every request has 2+ elements */
	expect_clean();
	teardown(NULL);
}

static void test_in_order(void **state)
{
	in_order(layout(state), 0);
	in_order(layout(state), OPT_IND | OPT_EVT);
}

/* ---- indirect descriptors ---------------------------------------------------------- */

static void test_indirect_on(void **state)
{
	bool packed = layout(state);
	u8 big[20][8];
	struct virtq_sg sg[20];
	unsigned i;
	u32 len;

	h_open(packed, 32, OPT_IND);	/* indirect_max defaults to 16 */
	assert_int_equal(H.vq.indirect_max, 16);

	/* 3 elements: one ring slot, device sees INDIRECT, data arrives */
	assert_int_equal(add_req(1, 2, 1), 0);
	assert_int_equal(virtq_num_free(&H.vq), 31);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 1);
	assert_int_equal(H.dev.indirect_seen, 1);
	assert_true(H.dev.pending[0].indirect);
	assert_int_equal(H.dev.pending[0].nseg, 3);
	assert_int_equal(H.dev.pending[0].out_hash, REQ[1].out_hash);
	fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	expect_get(1, REQ[1].in_total);
	assert_int_equal(virtq_num_free(&H.vq), 32);

	/* 1 element: direct */
	assert_int_equal(add_req(2, 0, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	assert_int_equal(H.dev.indirect_seen, 1);
	assert_false(H.dev.pending[0].indirect);
	fake_dev_complete(&H.dev, 0, 3);
	expect_get(2, 3);

	/* 20 elements > indirect_max: a direct chain of 20 */
	for (i = 0; i < 20; i++) {
		memset(big[i], (int)i, sizeof(big[i]));
		sg[i].addr = big[i];
		sg[i].len = sizeof(big[i]);
	}
	assert_int_equal(virtq_add(&H.vq, sg, 10, sg + 10, 10, big), 0);
	assert_int_equal(virtq_num_free(&H.vq), 12);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	assert_int_equal(H.dev.indirect_seen, 1);
	assert_int_equal(H.dev.pending[0].ndesc, 20);
	assert_int_equal(H.dev.pending[0].in_len, 80);
	assert_int_equal(H.dev.pending[0].out_hash, fake_hash(FAKE_HASH_INIT, big, 80));
	fake_dev_complete(&H.dev, 0, 80);
	assert_ptr_equal(virtq_get(&H.vq, &len), big);
	assert_int_equal(len, 80);
	for (i = 10; i < 20; i++)
		assert_int_equal(big[i][0], (u8)(H.dev.fill + (i - 10) * 8));

	/* ring full of 3-element requests: num of them fit */
	for (i = 0; i < 32; i++)
		assert_int_equal(add_req(100 + i, 1, 2), 0);
	assert_int_equal(add_req(200, 1, 2), -ENOSPC);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 32);
	assert_int_equal(H.dev.indirect_seen, 33);
	for (i = 0; i < 32; i++)
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	for (i = 0; i < 32; i++)
		expect_get(100 + i, REQ[100 + i].in_total);
	assert_int_equal(H.vq.stats.indirect_adds, 33);
	expect_clean();
}

static void test_indirect_off(void **state)
{
	bool packed = layout(state);

	h_open(packed, 16, 0);
	assert_int_equal(add_req(1, 2, 1), 0);
	assert_int_equal(virtq_num_free(&H.vq), 13);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	assert_int_equal(H.dev.indirect_seen, 0);
	assert_int_equal(H.dev.pending[0].ndesc, 3);
	assert_int_equal(H.dev.pending[0].out_hash, REQ[1].out_hash);
	fake_dev_complete(&H.dev, 0, 10);
	expect_get(1, 10);
	assert_int_equal(H.vq.stats.indirect_adds, 0);
	expect_clean();
}

static void test_indirect_small_max(void **state)
{
	bool packed = layout(state);

	/* indirect_max 2: 2 elements go indirect, 3 go direct */
	h_open_max(packed, 8, OPT_IND, 2);
	assert_int_equal(add_req(1, 1, 1), 0);
	assert_int_equal(virtq_num_free(&H.vq), 7);
	assert_int_equal(add_req(2, 2, 1), 0);
	assert_int_equal(virtq_num_free(&H.vq), 4);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 2);
	assert_int_equal(H.dev.indirect_seen, 1);
	fake_dev_complete(&H.dev, 1, FAKE_LEN_ALL);
	fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	expect_get(2, REQ[2].in_total);
	expect_get(1, REQ[1].in_total);
	expect_clean();
}

/* ---- available-buffer notifications (kicks) ----------------------------------------- */

static void test_kick_split_flags(void **state)
{
	(void)state;
	h_open(false, 8, 0);
	assert_false(virtq_kick_prepare(&H.vq));	/* nothing added */
	assert_int_equal(add_req(0, 1, 0), 0);
	assert_true(virtq_kick_prepare(&H.vq));
	assert_false(virtq_kick_prepare(&H.vq));	/* already counted */

	fake_dev_set_no_notify(&H.dev, true);
	assert_int_equal(add_req(1, 1, 0), 0);
	assert_false(virtq_kick(&H.vq));
	assert_int_equal(H.dev.notifies, 0);
	assert_int_equal(H.vq.stats.kicks_suppressed, 1);

	fake_dev_set_no_notify(&H.dev, false);
	assert_int_equal(add_req(2, 1, 0), 0);
	assert_true(virtq_kick(&H.vq));
	assert_int_equal(H.dev.notifies, 1);
	assert_int_equal(H.dev.last_notify, QINDEX);	/* no notification data */
	assert_int_equal(H.vq.stats.kicks, 1);
	expect_clean();
}

static void test_kick_split_event_idx(void **state)
{
	unsigned i, r = 0;

	(void)state;
	h_open(false, 16, OPT_EVT);
	/* device wants a kick when the entry at avail index 2 is made available */
	fake_dev_set_avail_event(&H.dev, 2);
	assert_int_equal(add_req(r++, 1, 0), 0);	/* idx 0 -> 1 */
	assert_false(virtq_kick_prepare(&H.vq));
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 1 -> 2 */
	assert_false(virtq_kick_prepare(&H.vq));
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 2 -> 3: crosses */
	assert_true(virtq_kick_prepare(&H.vq));
	/* several adds at once crossing the event */
	fake_dev_set_avail_event(&H.dev, 3);
	assert_int_equal(add_req(r++, 1, 0), 0);
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 3 -> 5 */
	assert_true(virtq_kick_prepare(&H.vq));
	/* the device has not moved avail_event: 3 is now behind us */
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 5 -> 6 */
	assert_false(virtq_kick_prepare(&H.vq));
	fake_dev_set_avail_event(&H.dev, 6);
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 6 -> 7: crosses */
	assert_true(virtq_kick_prepare(&H.vq));
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 7 -> 8: event 6 = old - 1 */
	assert_false(virtq_kick_prepare(&H.vq));
	fake_dev_set_avail_event(&H.dev, 20);
	assert_int_equal(add_req(r++, 1, 0), 0);	/* 8 -> 9 */
	assert_false(virtq_kick_prepare(&H.vq));
	fake_dev_fetch(&H.dev);
	while (H.dev.npending)
		fake_dev_complete(&H.dev, 0, 0);
	while (virtq_get(&H.vq, NULL))
		;

	/* across the 16-bit wrap: device asks for the next entry each time,
	 * or only for every other one */
	for (i = 0; i < 70000; i++) {
		bool every_other = i & 1;
		u16 idx = H.vq.split.avail_idx;

		fake_dev_set_avail_event(&H.dev, every_other ? (u16)(idx + 1) : idx);
		assert_int_equal(add_req(r, 1, 0), 0);
		if (every_other) {
			assert_false(virtq_kick(&H.vq));
			assert_int_equal(add_req(r + 1, 1, 0), 0);
		}
		assert_true(virtq_kick(&H.vq));
		fake_dev_fetch(&H.dev);
		while (H.dev.npending)
			fake_dev_complete(&H.dev, 0, 0);
		while (virtq_get(&H.vq, NULL))
			;
		r += 2;
	}
	assert_int_equal(H.dev.notifies, 70000);
	assert_int_equal(H.vq.stats.kicks_suppressed, 5 + 35000);
	expect_clean();
}

static void test_kick_packed(void **state)
{
	unsigned i, r = 0;

	(void)state;
	h_open(true, 5, OPT_EVT);
	fake_dev_set_event(&H.dev, VIRTQ_EVENT_FLAGS_DISABLE, 0, 0);
	assert_int_equal(add_req(r++, 1, 0), 0);
	assert_false(virtq_kick_prepare(&H.vq));
	fake_dev_set_event(&H.dev, VIRTQ_EVENT_FLAGS_ENABLE, 0, 0);
	assert_int_equal(add_req(r++, 1, 0), 0);
	assert_true(virtq_kick_prepare(&H.vq));
	assert_false(virtq_kick_prepare(&H.vq));
	fake_dev_fetch(&H.dev);
	while (H.dev.npending)
		fake_dev_complete(&H.dev, 0, 0);
	while (virtq_get(&H.vq, NULL))
		;

	/* DESC: notify when the descriptor at off/wrap is made available,
	 * many laps of a 5-entry ring, 2-descriptor chains */
	for (i = 0; i < 20000; i++) {
		u16 pos = H.dev.avail_pos;
		bool w = H.dev.avail_wrap;

		if (i & 1) {	/* event on the second chain's head */
			u16 p2 = (u16)(pos + 2);
			bool w2 = w;

			if (p2 >= 5) {
				p2 -= 5;
				w2 = !w2;
			}
			fake_dev_set_event(&H.dev, VIRTQ_EVENT_FLAGS_DESC, p2, w2);
			assert_int_equal(add_req(r, 2, 0), 0);
			assert_false(virtq_kick(&H.vq));
			assert_int_equal(add_req(r + 1, 1, 1), 0);
			assert_true(virtq_kick(&H.vq));
		} else {	/* event on the last descriptor of one chain */
			u16 p1 = (u16)(pos + 1);
			bool w1 = w;

			if (p1 >= 5) {
				p1 -= 5;
				w1 = !w1;
			}
			fake_dev_set_event(&H.dev, VIRTQ_EVENT_FLAGS_DESC, p1, w1);
			assert_int_equal(add_req(r, 2, 0), 0);
			assert_true(virtq_kick(&H.vq));
		}
		fake_dev_fetch(&H.dev);
		while (H.dev.npending)
			fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		while (virtq_get(&H.vq, NULL))
			;
		r += 2;
	}
	assert_int_equal(H.dev.notifies, 20000);
	assert_int_equal(H.vq.stats.kicks_suppressed, 1 + 10000);
	expect_clean();
}

static void test_notification_data(void **state)
{
	bool packed = layout(state);
	unsigned i;

	h_open(packed, 4, OPT_NDATA);
	for (i = 0; i < 40; i++) {
		assert_int_equal(add_req(i, 1 + i % 2, 0), 0);
		assert_true(virtq_kick(&H.vq));
		if (packed)
			assert_int_equal(H.dev.last_notify,
					 QINDEX | (u32)H.vq.packed.next_avail << 16 |
					 (u32)H.vq.packed.avail_wrap << 31);
		else
			assert_int_equal(H.dev.last_notify, QINDEX | (u32)(i + 1) << 16);
		fake_dev_fetch(&H.dev);
		fake_dev_complete(&H.dev, 0, 0);
		expect_get(i, 0);
	}
	if (packed) {
		/* 40 buffers of 1 or 2 descriptors = 60 slots: 15 laps of 4 */
		assert_int_equal(H.vq.packed.next_avail, 0);
		assert_int_equal(H.vq.packed.avail_wrap, 0);
		assert_int_equal(H.dev.last_notify, QINDEX);
	}
	expect_clean();
}

/* ---- used-buffer notifications (interrupts) -------------------------------------- */

static void test_interrupts_no_event_idx(void **state)
{
	bool packed = layout(state);

	h_open(packed, 8, 0);
	assert_int_equal(add_req(0, 0, 1), 0);
	assert_int_equal(add_req(1, 0, 1), 0);
	assert_int_equal(add_req(2, 0, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_complete(&H.dev, 0, 4);
	assert_int_equal(H.dev.interrupts, 1);	/* enabled by default */
	virtq_disable_cb(&H.vq);
	fake_dev_complete(&H.dev, 0, 4);
	assert_int_equal(H.dev.interrupts, 1);
	expect_get(0, 4);
	expect_get(1, 4);
	assert_true(virtq_enable_cb(&H.vq));
	fake_dev_complete(&H.dev, 0, 4);
	assert_int_equal(H.dev.interrupts, 2);
	expect_get(2, 4);
	expect_clean();
}

static void test_interrupts_event_idx(void **state)
{
	bool packed = layout(state);
	unsigned r;

	h_open(packed, 8, OPT_EVT);
	for (r = 0; r < 7; r++)
		assert_int_equal(add_req(r, 0, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);

	fake_dev_complete(&H.dev, 0, 1);
	assert_int_equal(H.dev.interrupts, 1);	/* used_event 0 / ENABLE */
	fake_dev_complete(&H.dev, 0, 1);
	/* split: used_event still 0 until the driver consumes; packed ENABLE */
	assert_int_equal(H.dev.interrupts, packed ? 2 : 1);
	expect_get(0, 1);
	expect_get(1, 1);	/* callbacks on: used_event follows last_used */
	fake_dev_complete(&H.dev, 0, 1);
	assert_int_equal(H.dev.interrupts, packed ? 3 : 2);

	virtq_disable_cb(&H.vq);
	fake_dev_complete(&H.dev, 0, 1);
	fake_dev_complete(&H.dev, 0, 1);
	assert_int_equal(H.dev.interrupts, packed ? 3 : 2);
	expect_get(2, 1);
	expect_get(3, 1);
	expect_get(4, 1);	/* disabled: used_event stays parked */
	fake_dev_complete(&H.dev, 0, 1);
	assert_int_equal(H.dev.interrupts, packed ? 3 : 2);
	expect_get(5, 1);
	assert_true(virtq_enable_cb(&H.vq));
	fake_dev_complete(&H.dev, 0, 1);
	assert_int_equal(H.dev.interrupts, packed ? 4 : 3);
	expect_get(6, 1);
	expect_clean();
}

static void enable_cb_race(bool packed, unsigned opts)
{
	h_open(packed, 8, opts);
	assert_int_equal(add_req(0, 1, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	virtq_disable_cb(&H.vq);
	/* the completion lands between disable and enable: no interrupt */
	fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	assert_int_equal(H.dev.interrupts, 0);
	assert_true(virtq_more_used(&H.vq));
	assert_false(virtq_enable_cb(&H.vq));	/* caller must poll again */
	virtq_disable_cb(&H.vq);
	expect_get(0, REQ[0].in_total);
	assert_true(virtq_enable_cb(&H.vq));
	assert_false(virtq_more_used(&H.vq));
	expect_clean();
	teardown(NULL);
}

static void test_enable_cb_race(void **state)
{
	enable_cb_race(layout(state), 0);
	enable_cb_race(layout(state), OPT_EVT);
	enable_cb_race(layout(state), OPT_EVT | OPT_INORD);
}

static void test_enable_cb_delayed(void **state)
{
	bool packed = layout(state);
	unsigned r;

	h_open(packed, 16, OPT_EVT);
	for (r = 0; r < 8; r++)
		assert_int_equal(add_req(r, 0, 1), 0);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 8);
	virtq_disable_cb(&H.vq);
	assert_true(virtq_enable_cb_delayed(&H.vq, 4));
	fake_dev_complete(&H.dev, 0, 2);
	fake_dev_complete(&H.dev, 0, 2);
	fake_dev_complete(&H.dev, 0, 2);
	assert_int_equal(H.dev.interrupts, 0);
	fake_dev_complete(&H.dev, 0, 2);
	assert_int_equal(H.dev.interrupts, 1);	/* exactly at the 4th */
	fake_dev_complete(&H.dev, 0, 2);
	assert_int_equal(H.dev.interrupts, 1);
	/* 5 pending: asking for 2 more is already satisfied */
	assert_false(virtq_enable_cb_delayed(&H.vq, 2));
	assert_false(virtq_enable_cb_delayed(&H.vq, 5));
	assert_true(virtq_enable_cb_delayed(&H.vq, 6));
	fake_dev_complete(&H.dev, 0, 2);	/* the 6th */
	assert_int_equal(H.dev.interrupts, 2);
	for (r = 0; r < 6; r++)
		expect_get(r, 2);
	/* n beyond what is in flight is clamped: 2 left, interrupt after 2 */
	assert_true(virtq_enable_cb_delayed(&H.vq, 100));
	fake_dev_complete(&H.dev, 0, 2);
	assert_int_equal(H.dev.interrupts, 2);
	fake_dev_complete(&H.dev, 0, 2);
	assert_int_equal(H.dev.interrupts, 3);
	expect_get(6, 2);
	expect_get(7, 2);
	expect_clean();
}

static void test_enable_cb_delayed_no_event_idx(void **state)
{
	bool packed = layout(state);
	unsigned r;

	h_open(packed, 8, 0);
	for (r = 0; r < 4; r++)
		assert_int_equal(add_req(r, 0, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	virtq_disable_cb(&H.vq);
	assert_true(virtq_enable_cb_delayed(&H.vq, 3));	/* falls back to enable */
	fake_dev_complete(&H.dev, 0, 2);
	assert_int_equal(H.dev.interrupts, 1);
	assert_false(virtq_enable_cb_delayed(&H.vq, 3));	/* one pending */
	for (r = 0; r < 1; r++)
		expect_get(r, 2);
	expect_clean();
}

/* ---- full ring, arguments, shutdown ----------------------------------------------- */

static void test_full_ring(void **state)
{
	bool packed = layout(state);
	u16 num = packed ? 5 : 8;
	unsigned i;

	h_open(packed, num, 0);
	for (i = 0; i < num; i++)
		assert_int_equal(add_req(i, 1, 0), 0);
	assert_int_equal(virtq_num_free(&H.vq), 0);
	assert_int_equal(add_req(50, 1, 0), -ENOSPC);
	assert_int_equal(H.vq.stats.enospc, 1);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), num);

	/* one back: room for one descriptor, not for a chain of 3 */
	fake_dev_complete(&H.dev, 0, 0);
	expect_get(0, 0);
	assert_int_equal(add_req(51, 1, 2), -ENOSPC);
	assert_int_equal(add_req(51, 1, 0), 0);
	assert_int_equal(add_req(52, 1, 0), -ENOSPC);
	fake_dev_complete(&H.dev, 2, 0);
	fake_dev_complete(&H.dev, 0, 0);
	fake_dev_complete(&H.dev, 0, 0);
	expect_get(3, 0);
	expect_get(1, 0);
	expect_get(2, 0);
	assert_int_equal(virtq_num_free(&H.vq), 3);
	assert_int_equal(add_req(53, 1, 2), 0);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 2);
	while (H.dev.npending)
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	while (virtq_get(&H.vq, NULL))
		;
	assert_int_equal(virtq_num_free(&H.vq), num);
	expect_clean();
}

static void test_bad_args(void **state)
{
	bool packed = layout(state);
	u8 buf[8];
	struct virtq_sg ok = { buf, sizeof buf }, zero = { buf, 0 }, null = { NULL, 8 };
	struct virtq_sg many[9];
	unsigned i;

	h_open(packed, 8, OPT_IND);
	for (i = 0; i < 9; i++)
		many[i] = ok;
	assert_int_equal(virtq_add(&H.vq, &ok, 1, NULL, 0, NULL), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, NULL, 0, NULL, 0, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, NULL, 1, NULL, 0, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, NULL, 0, NULL, 1, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, &zero, 1, NULL, 0, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, &ok, 1, &null, 1, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, many, 9, NULL, 0, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, many, 5, many, 4, buf), -EINVAL);
	assert_int_equal(virtq_add(&H.vq, many, 0xffffffffu, many, 2, buf), -EINVAL);
	assert_int_equal(virtq_num_free(&H.vq), 8);
	assert_false(virtq_kick_prepare(&H.vq));
	assert_int_equal(fake_dev_fetch(&H.dev), 0);
	assert_int_equal(H.vq.stats.adds, 0);
	expect_clean();
}

static void test_detach_and_reset(void **state)
{
	bool packed = layout(state);
	bool seen[6] = { false };
	unsigned i, n = 0;
	void *t;

	h_open(packed, 8, OPT_IND);
	for (i = 0; i < 6; i++)
		assert_int_equal(add_req(i, 1, i % 3), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_complete(&H.dev, 2, FAKE_LEN_ALL);	/* req 2 */
	fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);	/* req 0 */
	expect_get(2, REQ[2].in_total);
	/* req 0 completed but not collected; 1, 3, 4, 5 never used */
	while ((t = virtq_detach_unused(&H.vq))) {
		ptrdiff_t k = (struct req *)t - REQ;

		assert_true(k >= 0 && k < 6 && k != 2);
		assert_false(seen[k]);
		seen[k] = true;
		n++;
	}
	assert_int_equal(n, 5);
	assert_null(virtq_detach_unused(&H.vq));
	assert_int_equal(virtq_num_free(&H.vq), 8);
	assert_int_equal(H.vq.stats.detached, 5);
	assert_int_equal(add_req(9, 1, 0), -EIO);	/* stopped until reset */
	assert_null(virtq_get(&H.vq, NULL));

	/* device-side queue reset, then the same memory again */
	virtq_reset_state(&H.vq);
	fake_dev_reset(&H.dev);
	for (i = 0; i < H.ring_bytes; i++)
		if (((u8 *)H.ring)[i])
			fail_msg("ring byte %zu not zeroed by reset", i);
	for (i = 0; i < 40; i++) {
		assert_int_equal(add_req(10 + i, 1, 2), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 1);
		fake_dev_complete(&H.dev, 0, 9);
		expect_get(10 + i, 9);
	}
	assert_int_equal(virtq_num_free(&H.vq), 8);
	expect_clean();
}

/* direct_max: chains of up to direct_max elements go direct while at
 * least half the ring is free, through a table once it is fuller; longer
 * chains always through a table; the device sees the same data either way,
 * and a transient queue unmaps both kinds. */
static void test_direct_max(void **state)
{
	bool packed = layout(state);
	unsigned trans, i, seen;
	u32 len;

	for (trans = 0; trans < 2; trans++) {
		next_direct_max = 3;
		h_open(packed, 16, OPT_IND | (trans ? OPT_TRANS : 0));
		assert_int_equal(add_req(0, 2, 1), 0);		/* 3 elements: direct */
		assert_int_equal(H.vq.num_free, 13);
		assert_int_equal(H.vq.stats.indirect_adds, 0);
		assert_int_equal(add_req(1, 3, 1), 0);		/* 4: a table */
		assert_int_equal(H.vq.num_free, 12);
		assert_int_equal(H.vq.stats.indirect_adds, 1);
		/* 12 free of 16: direct until fewer than 8 are free */
		assert_int_equal(add_req(2, 3, 0), 0);
		assert_int_equal(add_req(3, 3, 0), 0);
		assert_int_equal(H.vq.num_free, 6);
		assert_int_equal(H.vq.stats.indirect_adds, 1);
		assert_int_equal(add_req(4, 2, 0), 0);		/* 6 free: a table */
		assert_int_equal(H.vq.num_free, 5);
		assert_int_equal(H.vq.stats.indirect_adds, 2);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 5);
		seen = H.dev.indirect_seen;
		for (i = 0; i < 5; i++) {
			fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
			assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[i]);
			assert_int_equal(len, REQ[i].in_total);
			check_in_data(i, len);
			assert_int_equal(H.dev.last_out_hash, REQ[i].out_hash);
		}
		assert_int_equal(seen, 2);
		assert_int_equal(H.vq.num_free, 16);
		if (trans) {
			assert_int_equal(H.dev.ntpage, 0);	/* everything given back */
			assert_int_equal(H.vq.stats.unmaps, H.dev.tmaps);
		}
		expect_clean();
		teardown(NULL);
	}
	/* 0 (the default): a table whenever it fits */
	h_open(packed, 16, OPT_IND);
	assert_int_equal(add_req(0, 2, 1), 0);
	assert_int_equal(H.vq.stats.indirect_adds, 1);
	assert_int_equal(H.vq.num_free, 15);
	expect_clean();
	teardown(NULL);
}

/* virtq_keep_mapped: on a transient queue an element wholly inside the
 * kept range (virtio-net's header slots) is mapped long-lived and never
 * unmapped: still reachable after its buffer came back, through a device
 * reset too; the other elements of the same chain keep the per-buffer
 * rules (unmapped on return, then the device faults on them); an element
 * reaching past either end of the range is transient. Direct, indirect and
 * in-order chains. */
static void test_keep_mapped(void **state)
{
	static const unsigned opts[] = { 0, OPT_IND, OPT_INORD, OPT_IND | OPT_INORD };
	bool packed = layout(state);
	u8 *mem = aligned_alloc(4096, 4 * 4096);
	u8 *keep = mem + 4096;	/* the kept range: page 1 and the first half of page 2 */
	unsigned o;

	assert_non_null(mem);
	for (o = 0; o < sizeof opts / sizeof opts[0]; o++) {
		struct virtq_sg hdr = { keep + 32, 12 };		/* inside */
		struct virtq_sg data = { mem + 3 * 4096, 200 };		/* outside: page 3 */
		struct virtq_sg chain[2] = { hdr, data };
		struct virtq_sg before = { keep - 8, 16 };		/* page 0 into the range */
		struct virtq_sg after = { keep + 6144 - 8, 16 };	/* past its end, page 2 */
		unsigned kmaps, tmaps;
		u32 len;

		h_open(packed, 8, opts[o] | OPT_TRANS);
		virtq_keep_mapped(&H.vq, keep, 6144);
		kmaps = H.dev.kmaps;
		assert_int_equal(virtq_add(&H.vq, chain, 2, NULL, 0, &REQ[0]), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 1);
		assert_int_equal(H.dev.kmaps, kmaps + 1);	/* the header: long-lived */
		assert_int_equal(H.dev.tmaps, 1);		/* the data: transient */
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[0]);
		assert_int_equal(H.dev.unmaps, 1);		/* the data only */
		assert_int_equal(H.vq.stats.unmaps, 1);
		assert_true(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)hdr.addr ^ FAKE_DMA_XOR, 12));
		assert_false(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)data.addr ^ FAKE_DMA_XOR, 200));
		assert_int_equal(H.dev.faults, 1);

		/* straddling either end: transient like any other element */
		tmaps = H.dev.tmaps;
		assert_int_equal(virtq_add(&H.vq, &before, 1, NULL, 0, &REQ[1]), 0);
		assert_int_equal(virtq_add(&H.vq, &after, 1, NULL, 0, &REQ[2]), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 2);
		assert_int_equal(H.dev.tmaps, tmaps + 2);
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[1]);
		assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[2]);
		assert_int_equal(H.dev.unmaps, 3);
		assert_false(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)before.addr ^ FAKE_DMA_XOR, 8));

		/* detached after a device reset, and after virtq_reset_state: the
		 * header is still not unmapped and the range still holds */
		assert_int_equal(virtq_add(&H.vq, chain, 2, NULL, 0, &REQ[3]), 0);
		virtq_kick(&H.vq);
		fake_dev_fetch(&H.dev);
		fake_dev_reset(&H.dev);
		assert_ptr_equal(virtq_detach_unused(&H.vq), &REQ[3]);
		assert_null(virtq_detach_unused(&H.vq));
		assert_int_equal(H.dev.unmaps, 4);
		virtq_reset_state(&H.vq);
		assert_int_equal(H.dev.unmaps, 4);
		kmaps = H.dev.kmaps;
		assert_int_equal(virtq_add(&H.vq, chain, 2, NULL, 0, &REQ[4]), 0);
		assert_int_equal(H.dev.kmaps, kmaps + 1);
		assert_ptr_equal(virtq_detach_unused(&H.vq), &REQ[4]);
		assert_int_equal(H.dev.unmaps, 5);
		assert_int_equal(H.dev.ntpage, 0);

		/* len 0 removes the range: the header is transient again */
		virtq_keep_mapped(&H.vq, keep, 0);
		virtq_reset_state(&H.vq);
		tmaps = H.dev.tmaps;
		assert_int_equal(virtq_add(&H.vq, &hdr, 1, NULL, 0, &REQ[5]), 0);
		assert_int_equal(H.dev.tmaps, tmaps + 1);
		assert_ptr_equal(virtq_detach_unused(&H.vq), &REQ[5]);
		assert_int_equal(H.dev.unmaps, 6);
		virtq_reset_state(&H.vq);
		expect_clean();
		teardown(NULL);
	}
	/* not transient: the range changes nothing (every map long-lived) */
	h_open(packed, 8, 0);
	virtq_keep_mapped(&H.vq, keep, 6144);
	{
		struct virtq_sg chain[2] = { { keep + 32, 12 }, { mem + 3 * 4096, 200 } };
		u32 len;

		assert_int_equal(virtq_add(&H.vq, chain, 2, NULL, 0, &REQ[0]), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 1);
		assert_int_equal(H.dev.tmaps, 0);
		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[0]);
		assert_int_equal(H.dev.unmaps, 0);
	}
	expect_clean();
	teardown(NULL);
	free(mem);
}

/* Transient queues: every element is unmapped when its chain comes back,
 * never while the device holds it; a page two in-flight buffers share stays
 * until both are back; once it is gone the device faults on it; one flush
 * per reclaim pass. Direct, indirect and in-order chains. */
static void test_transient_unmap(void **state)
{
	static const unsigned opts[] = { 0, OPT_IND, OPT_INORD, OPT_IND | OPT_INORD };
	bool packed = layout(state);
	u8 *mem = aligned_alloc(4096, 8 * 4096);
	unsigned o, i;

	assert_non_null(mem);
	for (o = 0; o < sizeof opts / sizeof opts[0]; o++) {
		struct virtq_sg a = { mem + 16, 100 };			/* page 0 */
		struct virtq_sg bc[2] = { { mem + 300, 100 },		/* page 0, shared with a */
					  { mem + 4096 - 50, 100 } };	/* pages 0 and 1 */
		struct virtq_sg d = { mem + 2 * 4096, 64 };		/* page 2, device writes */
		unsigned flushes;
		u32 len;

		h_open(packed, 8, opts[o] | OPT_TRANS);
		assert_int_equal(virtq_add(&H.vq, &a, 1, NULL, 0, &REQ[0]), 0);
		assert_int_equal(virtq_add(&H.vq, bc, 2, &d, 1, &REQ[1]), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 2);
		assert_int_equal(H.dev.tmaps, 4);
		assert_int_equal(H.dev.ntpage, 3);
		/* in flight: nothing unmapped, every page reachable */
		assert_null(virtq_get(&H.vq, &len));
		assert_int_equal(H.dev.unmaps, 0);
		assert_true(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)a.addr ^ FAKE_DMA_XOR, 100));

		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[0]);
		assert_int_equal(H.dev.unmaps, 1);
		/* a's page is still b's and c's: the device may still read it */
		assert_true(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)a.addr ^ FAKE_DMA_XOR, 100));
		assert_int_equal(H.dev.ntpage, 3);

		fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[1]);
		assert_int_equal(len, 64);
		assert_int_equal(H.dev.unmaps, 4);
		assert_int_equal(H.dev.ntpage, 0);
		/* a completed transmit buffer read again through its IOVA: fault */
		assert_false(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)a.addr ^ FAKE_DMA_XOR, 100));
		assert_false(fake_dev_dma_read(&H.dev, (dma_addr_t)(uintptr_t)d.addr ^ FAKE_DMA_XOR, 64));
		assert_int_equal(H.dev.faults, 2);
		assert_int_equal(H.vq.stats.unmaps, 4);

		/* four buffers back in one pass: one flush */
		for (i = 0; i < 4; i++) {
			struct virtq_sg e = { mem + (3 + i) * 4096, 32 };

			assert_int_equal(virtq_add(&H.vq, &e, 1, NULL, 0, &REQ[2 + i]), 0);
		}
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 4);
		if (opts[o] & OPT_INORD) {
			fake_dev_complete_batch(&H.dev, 4, 0);	/* one used entry for all four */
		} else {
			for (i = 0; i < 4; i++)
				fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
		}
		flushes = H.dev.unmap_flushes;
		for (i = 0; i < 4; i++)
			assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[2 + i]);
		assert_null(virtq_get(&H.vq, &len));
		assert_int_equal(H.dev.unmap_flushes, flushes + 1);
		assert_int_equal(H.dev.unmaps, 8);
		assert_int_equal(H.dev.ntpage, 0);

		/* detached after a device reset: unmapped too */
		assert_int_equal(virtq_add(&H.vq, &a, 1, NULL, 0, &REQ[0]), 0);
		assert_int_equal(virtq_add(&H.vq, bc, 2, &d, 1, &REQ[1]), 0);
		virtq_kick(&H.vq);
		fake_dev_fetch(&H.dev);
		fake_dev_reset(&H.dev);
		flushes = H.dev.unmap_flushes;
		assert_non_null(virtq_detach_unused(&H.vq));
		assert_non_null(virtq_detach_unused(&H.vq));
		assert_null(virtq_detach_unused(&H.vq));
		assert_int_equal(H.dev.unmaps, 12);
		assert_int_equal(H.dev.ntpage, 0);
		assert_int_equal(H.dev.unmap_flushes, flushes + 1);
		virtq_reset_state(&H.vq);
		expect_clean();
		teardown(NULL);
	}
	/* a refused map holds nothing, so nothing is given back for it */
	h_open(packed, 8, OPT_TRANS);
	H.dev.refuse = true;
	assert_int_equal(add_req(0, 1, 1), 0);
	H.dev.refuse = false;
	assert_int_equal(add_req(1, 1, 0), 0);
	assert_non_null(virtq_detach_unused(&H.vq));
	assert_non_null(virtq_detach_unused(&H.vq));
	assert_null(virtq_detach_unused(&H.vq));
	assert_int_equal(H.dev.tmaps, 1);
	assert_int_equal(H.dev.unmaps, 1);
	expect_clean();
	teardown(NULL);
	/* reset with buffers never detached: their mappings go with them */
	h_open(packed, 8, OPT_IND | OPT_TRANS);
	assert_int_equal(add_req(0, 2, 1), 0);
	assert_int_equal(H.dev.tmaps, 3);
	virtq_reset_state(&H.vq);
	assert_int_equal(H.dev.unmaps, 3);
	assert_int_equal(H.dev.ntpage, 0);
	teardown(NULL);
	/* long-lived queues map as before and never unmap */
	h_open(packed, 8, OPT_IND);
	assert_int_equal(add_req(0, 2, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	assert_non_null(virtq_get(&H.vq, NULL));
	assert_int_equal(H.dev.tmaps, 0);
	assert_int_equal(H.dev.unmaps, 0);
	assert_int_equal(H.dev.unmap_flushes, 0);
	expect_clean();
	free(mem);
}

static void test_reset_drops_and_logs(void **state)
{
	h_open(layout(state), 4, 0);
	assert_int_equal(add_req(0, 1, 0), 0);
	virtq_reset_state(&H.vq);	/* without detaching: logged */
	assert_int_equal(shim_klog_count(), 1);
	assert_int_equal(virtq_num_free(&H.vq), 4);
	assert_null(virtq_detach_unused(&H.vq));
}

/* The self-test hook: exactly the next add publishes a malformed head that a
 * checking device rejects; driver state stays consistent, and a queue reset
 * (detach, reset_state) brings back a clean ring with the hook disarmed. */
static void test_debug_corrupt_next(void **state)
{
	bool packed = layout(state);
	unsigned i;

	h_open(packed, 8, OPT_IND);
	assert_int_equal(add_req(0, 1, 0), 0);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 1);
	fake_dev_complete(&H.dev, 0, FAKE_LEN_ALL);
	expect_get(0, 0);
	expect_clean();

	virtq_debug_corrupt_next(&H.vq);
	assert_int_equal(shim_klog_count(), 1);	/* arming is logged */
	assert_int_equal(add_req(1, 1, 0), 0);
	if (packed) {
		const struct pvirtq_desc *d = &H.vq.packed.desc[1];

		assert_true(d->flags & VIRTQ_DESC_F_INDIRECT);
		assert_true(d->len & 1);	/* so never a whole number of descriptors */
	} else {
		u16 head = H.vq.split.avail->ring[1];

		assert_true(H.vq.split.desc[head].flags & VIRTQ_DESC_F_NEXT);
		assert_int_equal(H.vq.split.desc[head].next, 8);
	}
	assert_int_equal(add_req(2, 1, 0), 0);	/* one shot: this one is clean */
	if (packed) {
		assert_false(H.vq.packed.desc[2].flags & VIRTQ_DESC_F_INDIRECT);
	} else {
		u16 head = H.vq.split.avail->ring[2];

		assert_false(H.vq.split.desc[head].flags & VIRTQ_DESC_F_NEXT);
	}
	assert_int_equal(virtq_num_free(&H.vq), 6);	/* accounted as a normal add */
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	assert_true(H.dev.errors >= 1);	/* the checking device saw it */
	assert_non_null(strstr(H.dev.error, packed ? "indirect table length" : "out of range"));
	assert_false(virtq_is_broken(&H.vq));	/* driver side did nothing wrong */

	/* Recovery as after RING_RESET: detach both, forget the ring. Arming
	 * again and resetting must disarm. */
	assert_non_null(virtq_detach_unused(&H.vq));
	assert_non_null(virtq_detach_unused(&H.vq));
	assert_null(virtq_detach_unused(&H.vq));
	virtq_debug_corrupt_next(&H.vq);
	virtq_reset_state(&H.vq);
	fake_dev_reset(&H.dev);
	H.dev.errors = 0;
	shim_klog_reset();
	for (i = 0; i < 12; i++) {
		assert_int_equal(add_req(10 + i, 1, 1), 0);
		virtq_kick(&H.vq);
		assert_int_equal(fake_dev_fetch(&H.dev), 1);
		fake_dev_complete(&H.dev, 0, 5);
		expect_get(10 + i, 5);
	}
	assert_int_equal(virtq_num_free(&H.vq), 8);
	expect_clean();
}

static void test_counters(void **state)
{
	bool packed = layout(state);

	h_open(packed, 8, 0);
	assert_int_equal(add_req(0, 1, 1), 0);
	assert_int_equal(add_req(1, 1, 1), 0);
	assert_true(virtq_kick(&H.vq));
	assert_false(virtq_more_used(&H.vq));
	fake_dev_fetch(&H.dev);
	fake_dev_complete(&H.dev, 1, 3);
	assert_true(virtq_more_used(&H.vq));
	expect_get(1, 3);
	assert_false(virtq_more_used(&H.vq));
	assert_int_equal(H.vq.stats.adds, 2);
	assert_int_equal(H.vq.stats.kicks, 1);
	assert_int_equal(H.vq.stats.completions, 1);
	assert_int_equal(H.vq.inflight, 1);
	assert_int_equal(H.dev.maps, 4);	/* 4 elements (the ring was mapped before attach) */
	assert_int_equal(H.dev.maps_writable, 2);	/* the one device-writable element of each */
	expect_clean();
}

/* ---- hostile device ------------------------------------------------------------ */

/* After a device error: everything refuses cleanly and the tokens can still
 * be detached, each exactly once. */
static void check_broken(const unsigned *outstanding, unsigned n, const char *why)
{
	bool seen[MAX_REQ] = { false };
	unsigned i, got = 0;
	void *t;

	assert_true(virtq_is_broken(&H.vq));
	assert_int_equal(shim_klog_count(), 1);
	if (!strstr(shim_klog_last(), why))
		fail_msg("logged \"%s\", expected a reason with \"%s\"", shim_klog_last(), why);
	if (!strstr(shim_klog_last(), "virtq 3:"))
		fail_msg("log line \"%s\" lacks the queue index", shim_klog_last());
	assert_null(virtq_get(&H.vq, NULL));
	assert_null(virtq_get(&H.vq, NULL));
	assert_int_equal(shim_klog_count(), 1);	/* logged once */
	assert_int_equal(add_req(500, 1, 0), -EIO);
	assert_false(virtq_kick(&H.vq));
	assert_true(virtq_enable_cb(&H.vq));
	assert_true(virtq_enable_cb_delayed(&H.vq, 2));
	assert_false(virtq_more_used(&H.vq));
	while ((t = virtq_detach_unused(&H.vq))) {
		ptrdiff_t k = (struct req *)t - REQ;

		assert_true(k >= 0 && k < MAX_REQ);
		assert_false(seen[k]);
		seen[k] = true;
		got++;
	}
	assert_int_equal(got, n);
	for (i = 0; i < n; i++)
		assert_true(seen[outstanding[i]]);
	assert_int_equal(virtq_num_free(&H.vq), H.cfg.num);
	assert_int_equal(shim_klog_count(), 1);
}

/* Three buffers (req 0 is a 2-descriptor chain), one honest completion of
 * req 1 collected, then a lie on the completion of req 0. */
static void hostile(bool packed, unsigned opts, enum fake_lie lie, const char *why)
{
	static const unsigned outstanding[] = { 0, 2 };
	/* id lies come with len 0, so only the id check can catch them */
	u32 len = (lie == FAKE_LIE_ID_RANGE || lie == FAKE_LIE_ID_REPEAT ||
		   lie == FAKE_LIE_ID_NONHEAD) ? 0 : 4;

	h_open(packed, 8, opts);
	assert_int_equal(add_req(0, 1, 1), 0);
	assert_int_equal(add_req(1, 1, 1), 0);
	assert_int_equal(add_req(2, 1, 1), 0);
	virtq_kick(&H.vq);
	assert_int_equal(fake_dev_fetch(&H.dev), 3);
	if (!(opts & OPT_INORD)) {
		fake_dev_complete(&H.dev, 1, 4);
		expect_get(1, 4);
		H.dev.lie = lie;
		fake_dev_complete(&H.dev, 0, len);
		assert_null(virtq_get(&H.vq, NULL));
		check_broken(outstanding, 2, why);
	} else {
		static const unsigned all[] = { 0, 1, 2 };

		H.dev.lie = lie;
		fake_dev_complete(&H.dev, 0, len);
		assert_null(virtq_get(&H.vq, NULL));
		check_broken(all, 3, why);
	}
	if (H.dev.errors)
		fail_msg("device saw a driver error: %s", H.dev.error);
	teardown(NULL);
}

#define ID_WHY(p) ((p) ? "id not in flight" : "not an in-flight head")

static void test_hostile_id_range(void **state)
{
	bool p = layout(state);

	hostile(p, 0, FAKE_LIE_ID_RANGE, ID_WHY(p));
	hostile(p, OPT_EVT | OPT_IND, FAKE_LIE_ID_RANGE, ID_WHY(p));
	hostile(p, OPT_INORD, FAKE_LIE_ID_RANGE, ID_WHY(p));
}

static void test_hostile_id_repeat(void **state)
{
	bool p = layout(state);

	hostile(p, 0, FAKE_LIE_ID_REPEAT, ID_WHY(p));
	hostile(p, OPT_EVT, FAKE_LIE_ID_REPEAT, ID_WHY(p));
}

static void test_hostile_id_nonhead(void **state)
{
	bool p = layout(state);

	hostile(p, 0, FAKE_LIE_ID_NONHEAD, ID_WHY(p));
	hostile(p, OPT_INORD, FAKE_LIE_ID_NONHEAD, ID_WHY(p));
}

static void test_hostile_len(void **state)
{
	bool p = layout(state);

	hostile(p, 0, FAKE_LIE_LEN, "len exceeds");
	hostile(p, OPT_IND, FAKE_LIE_LEN, "len exceeds");
	hostile(p, OPT_INORD, FAKE_LIE_LEN, "len exceeds");
}

static void test_hostile_split_idx(void **state)
{
	(void)state;
	hostile(false, 0, FAKE_LIE_IDX_JUMP, "ran ahead");
	hostile(false, 0, FAKE_LIE_IDX_AHEAD, "ran ahead");
	hostile(false, OPT_EVT, FAKE_LIE_IDX_BACK, "ran ahead");
	hostile(false, OPT_INORD, FAKE_LIE_IDX_JUMP, "ran ahead");
	hostile(false, OPT_INORD, FAKE_LIE_IDX_AHEAD, "ran ahead");
}

static void test_hostile_packed_flags(void **state)
{
	(void)state;
	hostile(true, 0, FAKE_LIE_WRAP, "neither wrap counter");
	hostile(true, 0, FAKE_LIE_FLAGS, "AVAIL != USED");
	hostile(true, OPT_INORD, FAKE_LIE_WRAP, "neither wrap counter");
}

/* Packed: len is reserved in a used descriptor without WRITE; for a buffer
 * with nothing writable it is ignored (reported as 0), not trusted. */
static void test_packed_reserved_len(void **state)
{
	u32 len = 99;

	(void)state;
	h_open(true, 4, 0);
	assert_int_equal(add_req(0, 1, 0), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_raw_packed(&H.dev, H.dev.pending[0].id, 1234, VIRTQ_DESC_F_AVAIL | VIRTQ_DESC_F_USED);
	assert_ptr_equal(virtq_get(&H.vq, &len), &REQ[0]);
	assert_int_equal(len, 0);
	expect_clean();
}

/* In-order split: one entry for the 3rd buffer, but used idx moved by 1. */
static void test_hostile_in_order_batch(void **state)
{
	static const unsigned all[] = { 0, 1, 2 };

	(void)state;
	h_open(false, 8, OPT_INORD);
	assert_int_equal(add_req(0, 1, 0), 0);
	assert_int_equal(add_req(1, 1, 0), 0);
	assert_int_equal(add_req(2, 1, 0), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_raw_used(&H.dev, H.dev.pending[2].id, 0, 1);
	assert_null(virtq_get(&H.vq, NULL));
	check_broken(all, 3, "batch runs past used idx");
}

/* Packed: a used descriptor appearing with nothing in flight is not read;
 * one with the right wrap but a stale id breaks the queue. */
static void test_hostile_packed_nothing_in_flight(void **state)
{
	static const unsigned one[] = { 1 };

	(void)state;
	h_open(true, 4, 0);
	fake_dev_raw_packed(&H.dev, 0, 0, VIRTQ_DESC_F_AVAIL | VIRTQ_DESC_F_USED);
	assert_null(virtq_get(&H.vq, NULL));
	assert_false(virtq_is_broken(&H.vq));
	assert_int_equal(add_req(0, 1, 0), 0);	/* overwrites slot 0 */
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_complete(&H.dev, 0, 0);
	expect_get(0, 0);
	assert_int_equal(add_req(1, 1, 0), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	/* slot 1 used (right wrap) but naming id 3, never added */
	fake_dev_raw_packed(&H.dev, 3, 0, VIRTQ_DESC_F_AVAIL | VIRTQ_DESC_F_USED);
	assert_null(virtq_get(&H.vq, NULL));
	check_broken(one, 1, "id not in flight");
}

/* A freshly broken queue (several outstanding, one completed but not yet
 * collected) still gives every token back. */
static void test_broken_then_detach(void **state)
{
	static const unsigned left[] = { 0, 1, 2, 4 };
	bool packed = layout(state);
	unsigned i;

	h_open(packed, 16, OPT_EVT);
	for (i = 0; i < 5; i++)
		assert_int_equal(add_req(i, 1, 1), 0);
	virtq_kick(&H.vq);
	fake_dev_fetch(&H.dev);
	fake_dev_complete(&H.dev, 3, 2);	/* honest, not collected */
	H.dev.lie = FAKE_LIE_ID_RANGE;
	fake_dev_complete(&H.dev, 0, 2);
	expect_get(3, 2);
	assert_null(virtq_get(&H.vq, NULL));	/* breaks here */
	check_broken(left, 4, ID_WHY(packed));
}

/* Each layout-generic test runs twice, named test_x/split and test_x/packed. */
#define BOTH(f) \
	{ #f "/split", f, NULL, teardown, (void *)&SPLIT }, \
	{ #f "/packed", f, NULL, teardown, (void *)&PACKED }
#define ONE(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ONE(test_mem_size_validation),
		ONE(test_layout_split),
		ONE(test_layout_packed),
		BOTH(test_wraparound),
		BOTH(test_wraparound_event_indirect),
		BOTH(test_out_of_order),
		BOTH(test_in_order),
		BOTH(test_indirect_on),
		BOTH(test_indirect_off),
		BOTH(test_indirect_small_max),
		ONE(test_kick_split_flags),
		ONE(test_kick_split_event_idx),
		ONE(test_kick_packed),
		BOTH(test_notification_data),
		BOTH(test_interrupts_no_event_idx),
		BOTH(test_interrupts_event_idx),
		BOTH(test_enable_cb_race),
		BOTH(test_enable_cb_delayed),
		BOTH(test_enable_cb_delayed_no_event_idx),
		BOTH(test_full_ring),
		BOTH(test_bad_args),
		BOTH(test_detach_and_reset),
		BOTH(test_reset_drops_and_logs),
		BOTH(test_transient_unmap),
		BOTH(test_keep_mapped),
		BOTH(test_direct_max),
		BOTH(test_debug_corrupt_next),
		BOTH(test_counters),
		BOTH(test_hostile_id_range),
		BOTH(test_hostile_id_repeat),
		BOTH(test_hostile_id_nonhead),
		BOTH(test_hostile_len),
		ONE(test_hostile_split_idx),
		ONE(test_hostile_packed_flags),
		ONE(test_packed_reserved_len),
		ONE(test_hostile_in_order_batch),
		ONE(test_hostile_packed_nothing_in_flight),
		BOTH(test_broken_then_detach),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
