/* Power-button handling: drain, report, then the off method (see power.h).
 * Runs from the event loop: power_button() only queues work. The drain is
 * checked every POWER_POLL_MS until done() or the grace period ends, so the
 * time from the press to the off method is at most grace + POWER_POLL_MS
 * plus one loop iteration. */
#include <arch.h>

#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/power.h"
#include "kernel/time/time.h"

#define POWER_POLL_MS 50
#define POWER_UART_FLUSH_MS 20	/* 16-byte FIFO at 115200 baud: under 2 ms */

static const struct power_drain_ops *drain;
static void (*off_fn)(void);
static void power_on_press(void *arg);
static struct work press_work = { .fn = power_on_press };
static struct timer poll_timer;
static struct power_drain_counts counts;
static u64 t_press, deadline;
static bool started;
static u64 shutdown_grace = 10;
CMDLINE_PARAM(grace, .key = "shutdown.grace", .type = CMDLINE_UINT, .dst = &shutdown_grace, .min = 0, .max = 3600,
	      .def = "10", .help = "seconds a power-button press lets in-flight responses finish before the rest are cut");
static u32 presses;

void power_register_drain(const struct power_drain_ops *ops)
{
	drain = ops;
}

void power_register_off(void (*off)(void))
{
	off_fn = off;
}

static void power_spin_ms(u64 ms)
{
	u64 end = time_ns() + ms * NSEC_PER_MSEC;

	while (time_ns() < end)
		pause();
}

static void __attribute__((noreturn)) power_finish(void)
{
	u32 cut = drain ? drain->cut(drain->ctx) : 0;
	u32 drained = counts.busy > cut ? counts.busy - cut : 0;

	kprintf("vireo: power off: %u drained, %u idle closed, %u cut after %lu ms\n", drained, counts.idle,
		cut, (time_ns() - t_press) / NSEC_PER_MSEC);
	power_spin_ms(POWER_UART_FLUSH_MS);
	cli();
	if (off_fn)
		off_fn();
	kprintf("power: the platform did not power off; halting\n");
	for (;;)
		__asm__ __volatile__("hlt");
}

static void power_poll(struct timer *t, void *arg)
{
	u64 now = time_ns();

	(void)arg;
	if ((drain && !drain->done(drain->ctx)) && now < deadline) {
		timer_start(t, MIN(now + POWER_POLL_MS * NSEC_PER_MSEC, deadline));
		return;
	}
	power_finish();
}

static void power_on_press(void *arg)
{
	(void)arg;
	if (started) {
		kprintf("power: button pressed again (%u), still draining\n", presses);
		return;
	}
	started = true;
	t_press = time_ns();
	deadline = t_press + shutdown_grace * NSEC_PER_SEC;
	if (drain)
		drain->begin(drain->ctx, &counts);
	kprintf("power: button pressed: %u busy, %u idle closed; grace %lu s\n", counts.busy, counts.idle,
		shutdown_grace);
	timer_init(&poll_timer, power_poll, NULL);
	timer_start(&poll_timer, time_ns());
}

void power_button(void)
{
	presses++;
	work_queue(&press_work);
}
