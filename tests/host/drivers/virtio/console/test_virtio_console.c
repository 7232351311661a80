/* drivers/virtio/console/virtio_console.c, unchanged, against the simulated
 * device (tests/host/simdev/simdev.h) played raw (queues 0-3: the console's
 * port 0 and control queues) and the real virtio core. The control path never
 * busy-waits: a device that floods the control queue and never completes
 * the driver's replies costs the event loop no waiting (the clock moves
 * with every time_ns() call), replies queue in a bounded FIFO, the rest
 * are dropped and counted, and completions drain the FIFO in order. */
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

#define F(b) VIRTIO_BIT(b)

/* The console's queues: port 0's receive and transmit queues, then the
 * control receive (device to driver) and transmit queues. */
enum { CQ_PORT0_IN, CQ_PORT0_OUT, CQ_CTRL_IN, CQ_CTRL_OUT };

static struct simdev dev;
static unsigned sinks;

/* kernel/console.c's sink registry and input, as far as the driver uses them. */
void console_add_sink(struct console_sink *s)
{
	sinks++;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_ctrl_flood_never_waits, teardown),
		cmocka_unit_test_teardown(test_ctrl_replies_in_order, teardown),
		cmocka_unit_test_teardown(test_late_device_port_live_after_probe, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
