/* Power-button handling: drain, report, then the off method (see power.h).
 * Runs from the event loop: power_button() only queues work. The drains are
 * checked every POWER_POLL_MS until all are done() or the grace period
 * ends; then the rest is cut, and the drains that settle are checked the
 * same way for up to POWER_SETTLE_MS more. So the time from the press to the
 * off method is at most grace + POWER_SETTLE_MS + 2 * POWER_POLL_MS plus
 * one loop iteration. */
#include <arch.h>

#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/power.h"
#include "kernel/time/time.h"

#define POWER_POLL_MS 50
#define POWER_UART_FLUSH_MS 20	/* 16-byte FIFO at 115200 baud: under 2 ms */

static const struct power_drain_ops *drains[POWER_DRAINS];
static unsigned ndrains;
static void (*off_fn)(void);
static void power_on_press(void *arg);
static struct work press_work = { .fn = power_on_press };
static struct timer poll_timer;
static struct power_drain_counts counts;
static u64 t_press, deadline;
static bool started, settling;
static u32 cut_total;
static u64 shutdown_grace = 10;
CMDLINE_PARAM(grace, .key = "shutdown.grace", .type = CMDLINE_UINT, .dst = &shutdown_grace, .min = 0, .max = 3600,
	      .def = "10", .help = "seconds a power-button press lets in-flight responses finish before the rest are cut");
static u32 presses;

int power_register_drain(const struct power_drain_ops *ops)
{
	for (unsigned i = 0; i < ndrains; i++)
		if (drains[i] == ops)
			return 0;
	if (ndrains == POWER_DRAINS)
		return -ENOSPC;
	drains[ndrains++] = ops;
	return 0;
}

/* Whether every drain (only those that settle, once settling) is done. */
static bool power_all_done(void)
{
	for (unsigned i = 0; i < ndrains; i++)
		if ((!settling || drains[i]->settle) && !drains[i]->done(drains[i]->ctx))
			return false;
	return true;
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
	u32 drained = counts.busy > cut_total ? counts.busy - cut_total : 0;

	for (unsigned i = 0; i < ndrains; i++)
		if (drains[i]->settle && drains[i]->settled)
			drains[i]->settled(drains[i]->ctx, drains[i]->done(drains[i]->ctx));
	kprintf("vireo: power off: %u drained, %u idle closed, %u cut after %lu ms\n", drained, counts.idle,
		cut_total, (time_ns() - t_press) / NSEC_PER_MSEC);
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
	if (!power_all_done() && now < deadline) {
		timer_start(t, MIN(now + POWER_POLL_MS * NSEC_PER_MSEC, deadline));
		return;
	}
	if (!settling) {
		bool any = false;

		settling = true;
		for (unsigned i = 0; i < ndrains; i++) {
			cut_total += drains[i]->cut(drains[i]->ctx);
			any |= drains[i]->settle;
		}
		if (any && !power_all_done()) {
			deadline = now + POWER_SETTLE_MS * NSEC_PER_MSEC;
			timer_start(t, now + POWER_POLL_MS * NSEC_PER_MSEC);
			return;
		}
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
	for (unsigned i = 0; i < ndrains; i++)
		drains[i]->begin(drains[i]->ctx, &counts);
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
