/* drivers/virtio/console/virtio_console.c, unchanged, against the simulated
 * device (tests/host/simdev/simdev.h) played raw (queues 0-3: the console's
 * port 0 and control queues) and the real virtio core. The control path never
 * busy-waits: a device that floods the control queue and never completes
 * the driver's replies costs the event loop no waiting (the clock moves
 * with every time_ns() call), replies queue in a bounded FIFO, the rest
 * are dropped and counted, and completions drain the FIFO in order. The
 * data queues keep their wakeup rules under every interleaving of two
 * device actions with the driver's steps (issue 37's audit). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/console/virtio_console_reg.h"
#include "kernel/console.h"
#include "kernel/time/time.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/simdev/simdev.h"
#include <arch.h>

#define F(b) VIRTIO_BIT(b)

/* The console's queues: port 0's receive and transmit queues, then the
 * control receive (device to driver) and transmit queues. */
enum { CQ_PORT0_IN, CQ_PORT0_OUT, CQ_CTRL_IN, CQ_CTRL_OUT };

static struct simdev dev;
static unsigned sinks;
static struct console_sink *last_sink;

/* kernel/console.c's sink registry and input, as far as the driver uses them. */
void console_add_sink(struct console_sink *s)
{
	sinks++;
	last_sink = s;
}

void console_remove_sink(struct console_sink *s)
{
	sinks--;
}

void console_input(const char *buf, size_t len)
{
}

static void put_msg(u8 *m, u32 id, u16 event, u16 value)
{
	m[0] = (u8)id;
	m[1] = (u8)(id >> 8);
	m[2] = (u8)(id >> 16);
	m[3] = (u8)(id >> 24);
	m[4] = (u8)event;
	m[5] = (u8)(event >> 8);
	m[6] = (u8)value;
	m[7] = (u8)(value >> 8);
}

static int teardown(void **state)
{
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	hk_run(100000);
	hk_loop_reset();
	hk_clock_autostep(0);
	hk_on_clock(NULL, NULL);
	assert_int_equal(sd_errors(&dev), 0);
	sd_fini(&dev);
	hk_free_kept();
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	assert_int_equal(sinks, 0);
	return 0;
}

/* Multiport, 4 ports offered, queues for port 0 only (port 1's queue 4
 * does not exist): DEVICE_ADD for ports 1-3 is answered PORT_READY 0. */
static void bring_up(void)
{
	sd_init(&dev, VIRTIO_ID_CONSOLE, F(VIRTIO_F_VERSION_1) | F(VIRTIO_CONSOLE_F_MULTIPORT),
		sizeof(struct virtio_console_config));
	dev.raw = true;
	for (unsigned q = CQ_PORT0_IN; q <= CQ_CTRL_OUT; q++)
		dev.qmax[q] = 32;
	dev.cfg[offsetof(struct virtio_console_config, max_nr_ports)] = 4;
	hk_clock_autostep(1000);	/* the probe's settle loop waits for quiet */
	assert_int_equal(hk_probe(&dev.vd), 0);
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	assert_int_equal(sd_raw_pending(&dev, CQ_CTRL_OUT), 1);	/* DEVICE_READY */
}

static void test_ctrl_flood_never_waits(void **state)
{
	u8 m[8];
	u64 t0;
	unsigned sent = 0, rounds = 0;

	bring_up();
	/* 48 DEVICE_ADDs for ports the driver has no queues for, 16 (the
	 * posted control buffers) at a time; no reply is ever completed. */
	t0 = hk_now();
	while (sent < 48) {
		unsigned k;

		for (k = 0; k < 16 && sent < 48; k++, sent++) {
			put_msg(m, 1 + sent % 3, VIRTIO_CONSOLE_DEVICE_ADD, 0);
			assert_true(sd_raw_write(&dev, CQ_CTRL_IN, m, sizeof m) >= 0);
		}
		sd_irq(&dev, CQ_CTRL_IN, true);
		assert_true(hk_run(100000) < 100000);
	}
	/* No waiting: a handful of time_ns() calls (1 us each) at most. */
	assert_true(hk_now() - t0 < NSEC_PER_MSEC);
	/* 8 slots in flight (DEVICE_READY + 7 replies), 32 queued, 9 dropped. */
	assert_int_equal(sd_raw_pending(&dev, CQ_CTRL_OUT), 8);
	assert_true(hk_log_contains("control queue backed up"));

	/* Completions drain the FIFO, each through the transmit queue's
	 * interrupt that the driver armed (not forced here). */
	while (dev.raw_done[CQ_CTRL_OUT] < 40 && rounds++ < 10) {
		assert_int_equal(sd_raw_complete(&dev, CQ_CTRL_OUT, ~0u), 8);
		if (dev.raw_done[CQ_CTRL_OUT] < 40)
			assert_true(sd_irq(&dev, CQ_CTRL_OUT, false));
		assert_true(hk_run(100000) < 100000);
	}
	assert_int_equal(dev.raw_done[CQ_CTRL_OUT], 40);
	assert_int_equal(sd_raw_pending(&dev, CQ_CTRL_OUT), 0);
	/* The last one delivered is the 39th reply: PORT_READY 0 for its port. */
	put_msg(m, 1 + 38 % 3, VIRTIO_CONSOLE_PORT_READY, 0);
	assert_memory_equal(dev.raw_last[CQ_CTRL_OUT], m, sizeof m);
	assert_int_equal(sd_errors(&dev), 0);
}

/* The same flood, then the device completes replies as it goes: every
 * reply arrives, none dropped. */
static void test_ctrl_replies_in_order(void **state)
{
	u8 m[8];

	bring_up();
	assert_int_equal(sd_raw_complete(&dev, CQ_CTRL_OUT, ~0u), 1);
	for (unsigned i = 0; i < 30; i++) {
		put_msg(m, 1 + i % 3, VIRTIO_CONSOLE_DEVICE_ADD, 0);
		assert_true(sd_raw_write(&dev, CQ_CTRL_IN, m, sizeof m) >= 0);
		sd_irq(&dev, CQ_CTRL_IN, true);
		assert_true(hk_run(100000) < 100000);
		assert_int_equal(sd_raw_complete(&dev, CQ_CTRL_OUT, ~0u), 1);
		put_msg(m, 1 + i % 3, VIRTIO_CONSOLE_PORT_READY, 0);
		assert_memory_equal(dev.raw_last[CQ_CTRL_OUT], m, sizeof m);
	}
	assert_int_equal(dev.raw_done[CQ_CTRL_OUT], 31);	/* DEVICE_READY and 30 replies */
}

/* The device answers DEVICE_READY late, as a device model on a loaded
 * host whose thread is held back: LATE_NS after the probe sends it (four
 * times the probe's quiet window) it adds port 0 as a console and
 * completes DEVICE_READY, and from then on completes every control message
 * the driver sends. The probe waits for it: port 0 is live when the probe
 * returns, before any loop pass, so a panic at boot reaches it. */
#define LATE_NS (20 * NSEC_PER_MSEC)
static u64 late_at;
static bool late_sent;

static void late_device(void *arg)
{
	u8 m[8];

	if (hk_now() < late_at)
		return;
	if (!late_sent) {
		late_sent = true;
		put_msg(m, 0, VIRTIO_CONSOLE_DEVICE_ADD, 1);
		assert_true(sd_raw_write(&dev, CQ_CTRL_IN, m, sizeof m) >= 0);
		put_msg(m, 0, VIRTIO_CONSOLE_CONSOLE_PORT, 1);
		assert_true(sd_raw_write(&dev, CQ_CTRL_IN, m, sizeof m) >= 0);
	}
	sd_raw_complete(&dev, CQ_CTRL_OUT, ~0u);
}

static void test_late_device_port_live_after_probe(void **state)
{
	u64 t0;

	sd_init(&dev, VIRTIO_ID_CONSOLE, F(VIRTIO_F_VERSION_1) | F(VIRTIO_CONSOLE_F_MULTIPORT),
		sizeof(struct virtio_console_config));
	dev.raw = true;
	for (unsigned q = CQ_PORT0_IN; q <= CQ_CTRL_OUT; q++)
		dev.qmax[q] = 32;
	dev.cfg[offsetof(struct virtio_console_config, max_nr_ports)] = 1;
	hk_clock_autostep(1000);
	t0 = hk_now();
	late_at = t0 + LATE_NS;
	late_sent = false;
	hk_on_clock(late_device, NULL);
	assert_int_equal(hk_probe(&dev.vd), 0);
	hk_on_clock(NULL, NULL);
	assert_true(late_sent);
	assert_true(hk_log_contains("port 0 console"));
	assert_int_equal(sinks, 1);
	/* Done on quiet once all was completed, far from the 500 ms bound. */
	assert_int_equal(sd_raw_pending(&dev, CQ_CTRL_OUT), 0);
	assert_true(hk_now() - t0 < LATE_NS + 10 * NSEC_PER_MSEC);
}

/* ---- the wakeup rules (issue 37's audit) ----
 *
 * Whenever output is in flight on a port's transmit queue, an interrupt is
 * pending or armed for it (the device raises one by the time it completed
 * it all: sd_wakeup_due) or the poll is queued, so the output's buffers
 * come back without waiting for the next write; and input the device wrote
 * has an interrupt pending or the poll queued. Checked after every step of
 * a short script of writes, partial completions and input, with up to two
 * device actions at every step boundary, every full barrier of the driver
 * and just before it re-enables a callback (shim_mb_hook): on the transmit
 * queue (complete one, complete all, deliver the interrupt it decided on),
 * then on the receive queue (write input, deliver the interrupt), split and
 * packed, with and without the event index. At the end the device completes
 * everything, raising only the interrupts it decides on: nothing may be
 * left in flight, all input taken. */
enum { C_DONE1, C_DONE_ALL, C_TX_IRQ, C_INPUT, C_RX_IRQ };

static struct {
	bool on, in_hook;
	unsigned points, next, n, at[2], act[2];
	unsigned inputs, taken;		/* input completions written, and seen by the driver */
} cs;

static void c_input(void)
{
	static const u8 in[8] = "ls -l\r\n";

	if (sd_raw_write(&dev, CQ_PORT0_IN, in, sizeof in) >= 0)
		cs.inputs++;
}

static void c_point(void)
{
	if (!cs.on || cs.in_hook)
		return;
	cs.in_hook = true;
	while (cs.next < cs.n && cs.at[cs.next] == cs.points) {
		switch (cs.act[cs.next++]) {
		case C_DONE1:
			sd_raw_complete(&dev, CQ_PORT0_OUT, 1);
			break;
		case C_DONE_ALL:
			sd_raw_complete(&dev, CQ_PORT0_OUT, ~0u);
			break;
		case C_TX_IRQ:
			sd_irq(&dev, CQ_PORT0_OUT, false);
			break;
		case C_INPUT:
			c_input();
			break;
		default:
			sd_irq(&dev, CQ_PORT0_IN, false);
			break;
		}
	}
	cs.points++;
	cs.in_hook = false;
}

static void c_check(const char *what)
{
	const struct virtq *tq = &dev.vd.vqs[CQ_PORT0_OUT]->vq, *rq = &dev.vd.vqs[CQ_PORT0_IN]->vq;
	bool work = hk_work_pending() != 0;

	if (sd_errors(&dev))
		fail_msg("%s: device: %s", what, sd_error(&dev));
	if (tq->inflight && !work && !sd_wakeup_due(&dev, CQ_PORT0_OUT))
		fail_msg("%s: %u output buffers in flight, no interrupt pending or armed, no poll queued", what,
			 tq->inflight);
	if (virtq_more_used(rq) && !work && dev.q[CQ_PORT0_IN].interrupts == dev.irqs_seen[CQ_PORT0_IN])
		fail_msg("%s: input waiting, no interrupt pending, no poll queued", what);
}

static void c_write(unsigned n)
{
	static const char line[] = "0123456789 abcdefghijklmnopqrstuvwxyz 0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ\n";

	for (unsigned i = 0; i < n; i++)
		last_sink->write(last_sink, line, sizeof line - 1);	/* one buffer each */
}

/* Returns the points the run had. */
static unsigned c_script(u64 features, unsigned n, const unsigned *at, const unsigned *act)
{
	static const struct {
		unsigned writes, done;
		bool tx_irq, input, rx_irq;
	} steps[] = {
		{ 3, 0, false, true, false }, { 0, 1, false, false, true }, { 2, 0, false, true, false },
		{ 0, 0, true, false, false }, { 0, 2, true, true, true }, { 1, 0, false, false, false },
		{ 0, 0, true, false, true }, { 1, 1, false, true, false },
	};
	char what[160];
	unsigned points;

	sd_init(&dev, VIRTIO_ID_CONSOLE, features, sizeof(struct virtio_console_config));	/* config all 0 */
	dev.raw = true;
	dev.qmax[CQ_PORT0_IN] = dev.qmax[CQ_PORT0_OUT] = 32;	/* no MULTIPORT: port 0's queues only */
	last_sink = NULL;
	assert_int_equal(hk_probe(&dev.vd), 0);
	assert_non_null(last_sink);	/* port 0, single port: a console at once */
	cs = (typeof(cs)){ .on = true, .n = n };
	for (unsigned i = 0; i < n; i++) {
		cs.at[i] = at[i];
		cs.act[i] = act[i];
	}
	shim_mb_hook = c_point;
	for (unsigned k = 0; k < ARRAY_SIZE(steps); k++) {
		c_point();
		if (steps[k].done)
			sd_raw_complete(&dev, CQ_PORT0_OUT, steps[k].done);
		if (steps[k].input)
			c_input();
		c_write(steps[k].writes);
		if (steps[k].tx_irq)
			sd_irq(&dev, CQ_PORT0_OUT, false);
		if (steps[k].rx_irq)
			sd_irq(&dev, CQ_PORT0_IN, false);
		assert_true(hk_run(100000) < 100000);
		snprintf(what, sizeof what, "features %#llx, actions %u@%u %u@%u, after step %u",
			 (unsigned long long)features, n > 0 ? act[0] : 9, n > 0 ? at[0] : 0, n > 1 ? act[1] : 9,
			 n > 1 ? at[1] : 0, k + 1);
		c_check(what);
	}
	c_point();
	shim_mb_hook = NULL;
	points = cs.points;
	cs.on = false;
	for (unsigned r = 0; r < 4; r++) {
		sd_raw_complete(&dev, CQ_PORT0_OUT, ~0u);
		sd_irq(&dev, CQ_PORT0_OUT, false);
		sd_irq(&dev, CQ_PORT0_IN, false);
		assert_true(hk_run(100000) < 100000);
	}
	snprintf(what, sizeof what, "features %#llx, actions %u@%u %u@%u, device idle", (unsigned long long)features,
		 n > 0 ? act[0] : 9, n > 0 ? at[0] : 0, n > 1 ? act[1] : 9, n > 1 ? at[1] : 0);
	if (dev.vd.vqs[CQ_PORT0_OUT]->vq.inflight)
		fail_msg("%s: %u output buffers never reclaimed", what, dev.vd.vqs[CQ_PORT0_OUT]->vq.inflight);
	if (virtq_more_used(&dev.vd.vqs[CQ_PORT0_IN]->vq))
		fail_msg("%s: input never taken", what);
	teardown(NULL);
	return points;
}

/* Every plan of up to depth actions from acts[0..nacts); returns the runs. */
static unsigned c_explore(u64 features, const unsigned *acts, unsigned nacts, unsigned depth)
{
	unsigned runs = 1, n0 = c_script(features, 0, NULL, NULL);

	for (unsigned a1 = 0; a1 < n0; a1++) {
		for (unsigned k1 = 0; k1 < nacts; k1++) {
			unsigned at[2] = { a1, 0 }, act[2] = { acts[k1], 0 };
			unsigned n1 = c_script(features, 1, at, act);

			runs++;
			for (unsigned a2 = a1; depth > 1 && a2 < n1; a2++) {
				for (unsigned k2 = 0; k2 < nacts; k2++) {
					at[1] = a2;
					act[1] = acts[k2];
					c_script(features, 2, at, act);
					runs++;
				}
			}
		}
	}
	return runs;
}

static void test_wakeup_interleavings(void **state)
{
	static const u64 configs[] = {
		F(VIRTIO_F_VERSION_1),
		F(VIRTIO_F_VERSION_1) | F(VIRTIO_F_EVENT_IDX),
		F(VIRTIO_F_VERSION_1) | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_F_EVENT_IDX),
		F(VIRTIO_F_VERSION_1) | F(VIRTIO_F_RING_PACKED),
	};
	static const unsigned tx_acts[] = { C_DONE1, C_DONE_ALL, C_TX_IRQ }, rx_acts[] = { C_INPUT, C_RX_IRQ };
	unsigned tx = 0, rx = 0;

	for (unsigned c = 0; c < ARRAY_SIZE(configs); c++) {
		tx += c_explore(configs[c], tx_acts, ARRAY_SIZE(tx_acts), c < 2 ? 2 : 1);
		rx += c_explore(configs[c], rx_acts, ARRAY_SIZE(rx_acts), c < 2 ? 2 : 1);
	}
	print_message("console: %u transmit and %u receive interleavings\n", tx, rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ctrl_flood_never_waits, teardown),
		cmocka_unit_test_teardown(test_ctrl_replies_in_order, teardown),
		cmocka_unit_test_teardown(test_late_device_port_live_after_probe, teardown),
		cmocka_unit_test(test_wakeup_interleavings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
