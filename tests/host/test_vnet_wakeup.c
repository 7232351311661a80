/* The wakeup rules of drivers/virtio_net.c (unchanged, built for the host
 * as in test_vnetdev), against the simulated device of tests/host/vnetdev,
 * with the real frame reflector (drivers/vnet_echo.c, vnet.echo) as the
 * upper layer. The reflector sends each frame back from its own receive
 * buffer and lets the buffer go when the transmit completes, so a transmit
 * completion the driver never hears of keeps a receive buffer off the ring;
 * with every buffer held no frame can arrive to make the driver look again,
 * and it is wedged for good (issue 37).
 *
 * After every step, with the loop idle, the rules (docs/architecture.md,
 * "The wakeup rules"):
 *   transmit: a frame in flight => a transmit interrupt the device decided
 *     on and has not delivered yet, or one armed for the frames outstanding
 *     (the device raises it by the time it completed them all:
 *     vd_wakeup_due), or work queued;
 *   receive: no buffer free and not posted; a used buffer the driver has
 *     not taken => an interrupt pending, work queued or a timer armed (the
 *     coalescing hold).
 * And at the end, once the offered load stops and the device completes
 * everything it holds, raising only the interrupts it decides on: every
 * transmit reclaimed, every receive buffer posted, and probe frames sent
 * one at a time each come back.
 *
 * The device is driven two ways:
 * - every interleaving of up to two device actions (complete one transmit,
 *   complete every transmit, deliver the transmit interrupt it decided on)
 *   with a short script of receive bursts and partial completions, at every
 *   step boundary and at every full barrier the driver executes
 *   (shim_mb_hook): between the driver's store of the event index and its
 *   re-read of the used index, the race the virtio specification's driver
 *   requirements describe, and after it, where an interrupt decided for an
 *   earlier threshold arrives once the driver re-armed for a later one;
 * - a random overload: bursts of frames up to and past the ring, transmit
 *   completions in bursts, late, or at a barrier, interrupts delivered late
 *   or at a barrier, over thousands of steps.
 * Both over split and packed rings, with and without the event index. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio_net.h"
#include "drivers/vnet_echo.h"
#include "kernel/time.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/vnetdev/hostbus.h"
#include <arch.h>
#include "tests/host/vnetdev/vnet_host.h"
#include "tests/host/vnetdev/vnetdev.h"

#define F(b)		VIRTIO_BIT(b)
#define MODERN		(F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MAC) | F(VIRTIO_NET_F_STATUS))
#define EVIDX		F(VIRTIO_F_EVENT_IDX)
#define MRG		F(VIRTIO_NET_F_MRG_RXBUF)
#define INDIRECT	F(VIRTIO_F_INDIRECT_DESC)
#define PACKED		F(VIRTIO_F_RING_PACKED)
#define QEMU_LIKE	(MODERN | EVIDX | MRG | INDIRECT)

static const u64 configs[] = {
	QEMU_LIKE,
	MODERN | MRG | INDIRECT,		/* no event index: flags */
	MODERN | PACKED | EVIDX | MRG,		/* packed, descriptor events */
	MODERN | PACKED | MRG | INDIRECT,	/* packed, enable/disable */
	MODERN | EVIDX | F(VIRTIO_F_IN_ORDER),
};

static struct vnetdev dev;
static struct vnet *vn;
static u8 frame[2048];
static unsigned probes_sent;

/* ---- helpers ---- */

static void make_frame(u8 *f, u32 len, u8 seed)
{
	for (u32 i = 0; i < len; i++)
		f[i] = (u8)(seed + i * 7 + (i >> 8));
	memcpy(f, "\x52\x54\x00\x12\x34\x56", 6);	/* to the guest */
	memcpy(f + 6, "\x02\x00\x00\x00\x00\x01", 6);	/* from a peer */
	f[12] = 0x88;
	f[13] = 0xb5;
}

static void run(void)
{
	assert_true(hk_run(100000) < 100000);	/* no livelock */
}

static struct virtq *txq(void)
{
	return &dev.vd.vqs[VD_TX]->vq;
}

static struct virtq *rxq(void)
{
	return &dev.vd.vqs[VD_RX]->vq;
}

static void bring_up(u64 features, u16 qsize)
{
	vnet_set_echo(true);
	vd_init(&dev, features, qsize);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_non_null(vn);
	run();
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	assert_true(hk_log_contains("net: echo attached"));
	probes_sent = 0;
}

static void take_down(void)
{
	shim_mb_hook = NULL;
	hk_cpu_busy(false);
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	run();
	vnet_set_echo(false);
	assert_int_equal(vnet_host_forget_all(), 0);
	hk_loop_reset();
	vd_fini(&dev);
	hk_free_kept();
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	vn = NULL;
}

static int teardown(void **state)
{
	if (vn)
		take_down();
	return 0;
}

/* A device that, acting inside the driver's code (random_hook: at a full
 * barrier, or just before or after the driver re-enables a callback),
 * sends none of the interrupts that action decided on (lossy_irqs): what
 * QEMU 7.2 under TCG with one vCPU amounts to, where the driver's store of
 * the event and its re-read of the index can pass each other, and the
 * device reads the old event (drivers/virtio_net.c, vnet_recheck()). Then
 * a timer armed (the driver's late re-check) also counts as a wakeup
 * coming. */
static bool lossy_irqs;

/* The rules, with the loop idle (after run()). what: the step, for the
 * message. */
static void check_rules(const char *what)
{
	struct vnet_stats st;
	u32 free_n = vnet_host_free_count(vn);
	bool work = hk_work_pending() != 0 || (lossy_irqs && hk_next_deadline() != UINT64_MAX);

	if (vd_errors(&dev))
		fail_msg("%s: device: %s", what, vd_error(&dev));
	if (txq()->inflight && !work && !vd_wakeup_due(&dev, VD_TX)) {
		vnet_get_stats(vn, &st);
		fail_msg("%s: %u frames in flight on the transmit queue (%s), no interrupt pending or armed for "
			 "them and no work queued; receive buffers: %u posted, %u held of %u", what, txq()->inflight,
			 virtq_more_used(txq()) ? "the device completed some" : "none completed yet",
			 st.rx_posted, st.rx_held, st.rx_total);
	}
	if (free_n && !work)
		fail_msg("%s: %u receive buffers free, not posted, no refill queued", what, free_n);
	if (virtq_more_used(rxq()) && !work && hk_next_deadline() == UINT64_MAX &&
	    dev.q[VD_RX].interrupts == dev.irqs_seen[VD_RX])
		fail_msg("%s: received frames waiting, no interrupt pending, no timer, no work", what);
}

/* The load has stopped: the device completes every transmit it holds and
 * raises only the interrupts it decides on; timers run (the coalescing
 * hold, at most COAL_USECS_MAX; the late re-check). Then everything must
 * be back, and probe frames sent one at a time come back. */
static void drain_and_probe(const char *what)
{
	struct vnet_stats st;
	const struct vd_txframe *f;

	for (unsigned r = 0; r < 8; r++) {
		vd_tx_complete(&dev, ~0u, false);
		vd_irq(&dev, VD_TX, false);
		vd_irq(&dev, VD_RX, false);
		run();
		hk_run_timers_until(r < 4 ? 2 * NSEC_PER_MSEC : 12 * NSEC_PER_MSEC);
	}
	vnet_get_stats(vn, &st);
	if (txq()->inflight || st.rx_held || st.rx_posted != st.rx_total)
		fail_msg("%s: load over, device idle: %u frames still in flight on the transmit queue, receive buffers "
			 "%u posted, %u held of %u (wedged)", what, txq()->inflight, st.rx_posted, st.rx_held,
			 st.rx_total);
	for (unsigned p = 0; p < 4; p++) {
		u32 len = 60 + 37 * p;
		u8 seed = (u8)(0xa0 + probes_sent++);
		unsigned before = dev.ntx;

		make_frame(frame, len, seed);
		if (vd_rx_frame(&dev, NULL, frame, len) < 0)
			fail_msg("%s: probe %u: no receive buffer posted", what, p);
		for (unsigned r = 0; r < 4 && dev.ntx == before; r++) {
			vd_irq(&dev, VD_RX, false);
			run();
			hk_run_timers_until(12 * NSEC_PER_MSEC);
			vd_tx_complete(&dev, ~0u, false);
		}
		if (dev.ntx != before + 1)
			fail_msg("%s: probe %u did not come back (%u frames sent)", what, p, dev.ntx - before);
		f = vd_tx_last(&dev);
		assert_int_equal(f->len, len);
		assert_memory_equal(f->data, frame + 6, 6);
		assert_memory_equal(f->data + 12, frame + 12, len - 12);
		vd_irq(&dev, VD_TX, false);
		run();
	}
	check_rules(what);
}

/* ---- device actions, at step boundaries and full barriers ---- */

enum act { ACT_DONE1, ACT_DONE_ALL, ACT_TX_IRQ, ACT_N };
static const char *const act_names[ACT_N] = { "complete one", "complete all", "transmit interrupt" };

struct plan {
	unsigned n;
	unsigned at[2];		/* point index, non-decreasing */
	enum act act[2];
};

static struct {
	bool on;		/* counting points */
	bool in_hook;
	unsigned points;	/* so far in this run */
	const struct plan *plan;
	unsigned next;		/* next planned action */
} sched;

static void act(enum act a)
{
	switch (a) {
	case ACT_DONE1:
		vd_tx_complete(&dev, 1, false);
		break;
	case ACT_DONE_ALL:
		vd_tx_complete(&dev, ~0u, false);
		break;
	case ACT_TX_IRQ:
		vd_irq(&dev, VD_TX, false);	/* only one the device decided on */
		break;
	default:
		break;
	}
}

/* One point: step boundary or barrier. The planned actions due here run. */
static void point(void)
{
	if (!sched.on || sched.in_hook)
		return;
	sched.in_hook = true;
	while (sched.plan && sched.next < sched.plan->n && sched.plan->at[sched.next] == sched.points)
		act(sched.plan->act[sched.next++]);
	sched.points++;
	sched.in_hook = false;
}

static unsigned offered, refused;	/* frames offered to the device, refused for lack of buffers */

static void rx_burst(unsigned n, u8 seed)
{
	for (unsigned k = 0; k < n; k++) {
		offered++;
		make_frame(frame, 60 + k, (u8)(seed + k));
		if (vd_rx_frame(&dev, NULL, frame, 60 + k) < 0) {
			refused += n - k;
			offered += n - k - 1;
			break;
		}
	}
}

/* The script: receive bursts the reflector answers, transmits completing
 * partly and late, the transmit interrupt delivered only when the device
 * decided on one, two steps after. 8 entries: 8 frames in flight hold every
 * receive buffer. Returns the points the run had. */
static unsigned script(u64 features, const struct plan *plan, const char *label)
{
	char what[160];
	static const struct {
		unsigned rx;		/* frames received (interrupt forced) */
		unsigned done;		/* transmits completed first */
		bool tx_irq;		/* deliver a decided transmit interrupt */
	} steps[] = {
		{ 3, 0, false }, { 0, 1, false }, { 3, 0, false }, { 0, 0, true },
		{ 0, 2, true }, { 2, 0, false }, { 0, 0, true }, { 1, 1, false },
	};
	unsigned points;

	bring_up(features, 8);
	sched.plan = plan;
	sched.next = 0;
	sched.points = 0;
	sched.on = true;
	shim_mb_hook = point;
	for (unsigned s = 0; s < ARRAY_SIZE(steps); s++) {
		point();
		if (steps[s].done)
			vd_tx_complete(&dev, steps[s].done, false);
		if (steps[s].rx) {
			rx_burst(steps[s].rx, (u8)(s * 16));
			vd_irq(&dev, VD_RX, true);
		}
		if (steps[s].tx_irq)
			vd_irq(&dev, VD_TX, false);
		run();
		snprintf(what, sizeof what, "%s, after step %u", label, s + 1);
		check_rules(what);
	}
	point();
	sched.on = false;
	shim_mb_hook = NULL;
	points = sched.points;
	snprintf(what, sizeof what, "%s, end", label);
	drain_and_probe(what);
	take_down();
	return points;
}

static void plan_label(char *buf, size_t n, u64 features, const struct plan *p)
{
	int k = snprintf(buf, n, "features %#llx", (unsigned long long)features);

	if (!p || !p->n)
		snprintf(buf + k, n - (size_t)k, ", no device action");
	for (unsigned i = 0; p && i < p->n && (size_t)k < n; i++)
		k += snprintf(buf + k, n - (size_t)k, ", %s at point %u", act_names[p->act[i]], p->at[i]);
}

/* Every plan of up to `depth` actions; returns the runs. */
static unsigned explore(u64 features, unsigned depth)
{
	char label[200];
	struct plan p = { 0 };
	unsigned runs = 1, n0, n1;

	plan_label(label, sizeof label, features, &p);
	n0 = script(features, &p, label);
	for (unsigned a1 = 0; a1 < n0; a1++) {
		for (unsigned k1 = 0; k1 < ACT_N; k1++) {
			p = (struct plan){ 1, { a1, 0 }, { k1, 0 } };
			plan_label(label, sizeof label, features, &p);
			n1 = script(features, &p, label);
			runs++;
			if (depth < 2)
				continue;
			/* The run with a second action is the same up to it:
			 * point a2 exists if a2 < n1. */
			for (unsigned a2 = a1; a2 < n1; a2++) {
				for (unsigned k2 = 0; k2 < ACT_N; k2++) {
					p = (struct plan){ 2, { a1, a2 }, { k1, k2 } };
					plan_label(label, sizeof label, features, &p);
					script(features, &p, label);
					runs++;
				}
			}
		}
	}
	print_message("features %#llx: %u points without actions, %u interleavings\n",
		      (unsigned long long)features, n0, runs);
	return runs;
}

static void test_interleavings_depth2(void **state)
{
	explore(QEMU_LIKE, 2);
}

static void test_interleavings_other_rings(void **state)
{
	for (unsigned c = 1; c < ARRAY_SIZE(configs); c++)
		explore(configs[c], 1);
}

/* ---- random overload ---- */

static u64 rng;

static u32 rnd(u32 n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (u32)((rng >> 33) % n);
}

/* Device actions of the random run inside the driver's code: one, at the
 * k-th point (full barrier, or before or after a callback is re-enabled)
 * of a step. */
static struct {
	int countdown;		/* < 0: none planned */
	unsigned what;
} rb;

static void random_hook(void)
{
	if (rb.countdown < 0 || rb.countdown-- > 0 || sched.in_hook)
		return;
	sched.in_hook = true;
	switch (rb.what) {
	case 0:
		vd_tx_complete(&dev, 1 + rnd(16), false);
		break;
	case 1:
		vd_tx_complete(&dev, ~0u, false);
		break;
	case 2:
		vd_irq(&dev, VD_TX, false);
		break;
	case 3:
		vd_irq(&dev, VD_RX, false);
		break;
	default:
		rx_burst(1 + rnd(4), 0x77);
		break;
	}
	if (lossy_irqs) {	/* what it decided on never comes */
		dev.irqs_seen[VD_TX] = dev.q[VD_TX].interrupts;
		dev.irqs_seen[VD_RX] = dev.q[VD_RX].interrupts;
	}
	sched.in_hook = false;
}

static void overload(u64 features, u64 seed, unsigned steps)
{
	char what[160];
	struct vnet_stats st;

	rng = seed;
	offered = refused = 0;
	bring_up(features, 64);
	rb.countdown = -1;
	shim_mb_hook = random_hook;
	for (unsigned step = 0; step < steps; step++) {
		unsigned r = rnd(100), burst = 0;

		if (step % 500 == 0)
			hk_cpu_busy(rnd(3) != 0);
		/* offered load: mostly far more than the ring holds */
		if (r < 50)
			burst = 1 + rnd(r < 25 ? 100 : 8);
		rx_burst(burst, (u8)step);
		if (rnd(4))
			vd_irq(&dev, VD_RX, false);
		/* the device's transmit side: bursts, late, or all at once */
		r = rnd(100);
		if (r < 30)
			vd_tx_complete(&dev, 1 + rnd(24), false);
		else if (r < 35)
			vd_tx_complete(&dev, ~0u, false);
		/* sometimes the device acts inside the driver's next run */
		rb.countdown = rnd(3) ? -1 : (int)rnd(12);
		rb.what = rnd(5);
		if (rnd(2))
			vd_irq(&dev, VD_TX, false);	/* else later: the device's interrupt is late */
		run();
		hk_run_timers_until(rnd(4) ? 20 * NSEC_PER_USEC : 500 * NSEC_PER_USEC);
		rb.countdown = -1;
		snprintf(what, sizeof what, "features %#llx seed %llu, step %u", (unsigned long long)features,
			 (unsigned long long)seed, step);
		check_rules(what);
	}
	shim_mb_hook = NULL;
	vnet_get_stats(vn, &st);
	print_message("overload %#llx: %u steps, %u frames offered, %u refused by the device (no buffer posted), "
		      "%llu in, %llu out, %llu transmit refusals (ring full)\n",
		      (unsigned long long)features, steps, offered, refused, (unsigned long long)st.q[0].frames,
		      (unsigned long long)st.q[1].frames, (unsigned long long)st.q[1].no_room);
	assert_true(refused > offered / 10);	/* the load did exceed what the driver could take */
	snprintf(what, sizeof what, "features %#llx seed %llu, after the load", (unsigned long long)features,
		 (unsigned long long)seed);
	drain_and_probe(what);
	take_down();
}

static void test_overload(void **state)
{
	for (unsigned c = 0; c < ARRAY_SIZE(configs); c++)
		overload(configs[c], 37 + c, 3000);
}

/* The same overload against a device that now and then loses the
 * interrupts it decided on (lossy_irqs): the late re-check recovers. */
static void test_overload_lost_interrupts(void **state)
{
	lossy_irqs = true;
	overload(QEMU_LIKE, 91, 3000);
	overload(MODERN | MRG | INDIRECT, 92, 3000);
	lossy_irqs = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_interleavings_depth2, teardown),
		cmocka_unit_test_teardown(test_interleavings_other_rings, teardown),
		cmocka_unit_test_teardown(test_overload, teardown),
		cmocka_unit_test_teardown(test_overload_lost_interrupts, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
