/* TSC and LAPIC timer calibration, monotonic time, and the tickless
 * one-shot timer. References, first that works: the ACPI PM timer; PIT
 * channel 2 through its port-0x61 gate; PIT channel 0 read by latching
 * (QEMU microvm has a PIT but no port 0x61); CPUID leaf 0x15 (crystal
 * ratio) or 0x16 (base MHz), with the LAPIC timer then timed against the
 * TSC; else a guess. time_reference() names the one used.
 *
 * Boot cost: CPUID leaf 0x15 with a crystal frequency is exact and taken
 * first (the LAPIC timer is then timed against the TSC for 1 ms). Against
 * a reference counter, three 1 ms windows and their median (3 ms of boot,
 * not the 15 ms of five 3 ms windows): a window is off by at most two
 * reference ticks (PIT 0.84 us, PM timer 0.28 us) plus the read skew at its
 * ends, about 0.2-0.3% under emulation, and the median survives one window
 * a host preemption stretched. That is ample for the boot (timeouts, TCP
 * timers); the TSC rate is then refined in the background against the same
 * reference over 500 ms (time_refine_fn), where the read skew is bounded
 * per sample (50 us) and so weighs 0.01% at most. The LAPIC rate is not
 * refined: it only arms wake-ups, and an early one re-arms. */
#include <arch.h>

#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/loop.h"
#include "lib/metrics.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/timerq.h"

#define PIT_HZ 1193182ULL
#define PM_TIMER_HZ 3579545ULL
#define CAL_MS 1	/* calibration window (see above) */
/* Windows taken; the median of each rate is kept. Under emulation a host
 * preemption between a reference read and the TSC/LAPIC reads next to it
 * skews one window by up to the length of the preemption (seen: a 3 ms
 * window read as 881 MHz for a 2445 MHz TSC, about 1 in 7 boots on a loaded
 * 2-core host); the median of 3 survives one such window, and the
 * background refinement mends the rate if two were hit. */
#define CAL_WINDOWS 3

/* Background refinement: a sample every 10 ms (PIT channel 0 wraps every
 * 54.9 ms: a gap over 40 ms starts the span again), 500 ms of reference
 * counted, given up after 10 s (a loop too busy to sample in time). */
#define REFINE_PERIOD_NS (10 * NSEC_PER_MSEC)
#define REFINE_SPAN_MS 500
#define REFINE_GAP_NS (40 * NSEC_PER_MSEC)
#define REFINE_SKEW_NS (50 * NSEC_PER_USEC)
#define REFINE_GIVE_UP_NS (10 * NSEC_PER_SEC)

static u64 tsc_hz, lapic_hz;
static u64 base_tsc, base_ns;	/* time_ns() = base_ns + ticks since base_tsc */
static u16 pm_port;
static u8 pm_bits;
static const char *reference = "pit";
static u64 tsc_mult;	/* ns = ticks * tsc_mult >> 32 */
static u64 lapic_mult;	/* lapic ticks = ns * lapic_mult >> 32 */
/* What the LAPIC timer is programmed for: the loop arms it before every
 * halt, mostly for the deadline it already waits for (kernel/time/timerq.h). */
static struct oneshot lapic_arm;

static void time_refine_start(void);

static u64 time_mul_shr32(u64 a, u64 b)
{
	return (u64)(((unsigned __int128)a * b) >> 32);
}

/* One PIT channel-2 countdown of `ms`, timing the TSC and LAPIC timer
 * against it. Returns false if the PIT never finishes (no PIT). */
static bool time_pit_window(u32 ms, u64 *tsc_ticks, u32 *lapic_ticks)
{
	u32 count = (u32)(PIT_HZ * ms / 1000);
	u64 t0, t1, spins = 0;
	u32 l0, l1;
	u8 v;

	v = inb(0x61);
	outb(0x61, (v & ~0x02) | 0x01);	/* speaker off, gate on */
	outb(0x43, 0xb0);		/* ch2, lo/hi byte, mode 0 */
	outb(0x42, count & 0xff);
	outb(0x42, count >> 8);
	v = inb(0x61) & ~0x01;
	outb(0x61, v);			/* gate low-high restarts the count */
	/* Mode 0 holds OUT2 (bit 5) low until the count ends, and the gate
	 * bit reads back as written. Neither holds where nothing decodes
	 * port 0x61 (it reads 0xff): no usable channel 2. */
	if ((inb(0x61) & 0x21) != 0)
		return false;
	lapic_timer_start_calibration();
	l0 = lapic_timer_current();
	t0 = rdtsc();
	outb(0x61, v | 0x01);
	while (!(inb(0x61) & 0x20)) {
		if (++spins > 100000000ULL)
			return false;
	}
	t1 = rdtsc();
	l1 = lapic_timer_current();
	*tsc_ticks = t1 - t0;
	*lapic_ticks = l0 - l1;
	return true;
}

/* PIT channel 0 in mode 2 (rate generator, 65536 counts), its count read
 * by latching: no port-0x61 gate needed. Its IRQ stays masked (apic_init).
 * Returns false if the count never moves (no PIT). */
static u16 time_pit0_read(void)
{
	u8 lo, hi;

	outb(0x43, 0x00);	/* latch channel 0 */
	lo = inb(0x40);
	hi = inb(0x40);
	return (u16)(lo | hi << 8);
}

static bool time_pit0_window(u32 ms, u64 *tsc_ticks, u32 *lapic_ticks)
{
	u32 want = (u32)(PIT_HZ * ms / 1000), done = 0, l0, l1;
	u64 t0, t1, spins = 0;
	u16 prev, now;

	outb(0x43, 0x34);	/* ch0, lo/hi byte, mode 2 */
	outb(0x40, 0);
	outb(0x40, 0);
	prev = time_pit0_read();
	while ((now = time_pit0_read()) == prev)	/* a counter that moves, and an edge to start on */
		if (++spins > 1000000ULL)
			return false;
	prev = now;
	lapic_timer_start_calibration();
	l0 = lapic_timer_current();
	t0 = rdtsc();
	spins = 0;
	while (done < want) {
		now = time_pit0_read();
		done += (u16)(prev - now);	/* counts down; mod 2^16 across the reload */
		prev = now;
		if (++spins > 100000000ULL)
			return false;
	}
	t1 = rdtsc();
	l1 = lapic_timer_current();
	*tsc_ticks = (t1 - t0) * want / done;
	*lapic_ticks = (u32)((u64)(l0 - l1) * want / done);
	return true;
}

/* CPUID 0x15: TSC = crystal * ebx / eax; 0x16: base frequency in MHz.
 * Either may be absent or zero (QEMU under TCG gives neither). */
static u64 time_cpuid_tsc_hz(const char **which, bool crystal_only)
{
	u32 max, a, b, c, d;

	cpuid(0, 0, &max, &b, &c, &d);
	if (max >= 0x15) {
		cpuid(0x15, 0, &a, &b, &c, &d);
		if (a && b && c) {
			*which = "cpuid-0x15";
			return (u64)c * b / a;
		}
	}
	if (crystal_only)
		return 0;
	if (max >= 0x16) {
		cpuid(0x16, 0, &a, &b, &c, &d);
		if (a & 0xffff) {
			*which = "cpuid-0x16";
			return (u64)(a & 0xffff) * 1000000ULL;
		}
	}
	return 0;
}

/* The LAPIC timer against the TSC once its rate is known. */
static u32 time_lapic_vs_tsc(u64 hz, u32 ms)
{
	u64 end;
	u32 l0;

	lapic_timer_start_calibration();
	l0 = lapic_timer_current();
	end = rdtsc() + hz * ms / 1000;
	while (rdtsc() < end)
		pause();
	return l0 - lapic_timer_current();
}

void time_set_pm_timer(u16 port, u8 bits)
{
	pm_port = port;
	pm_bits = bits == 32 ? 32 : 24;
}

/* The same window against the ACPI PM timer, a free-running counter. */
static bool time_pm_window(u32 ms, u64 *tsc_ticks, u32 *lapic_ticks)
{
	u32 mask = pm_bits == 32 ? 0xffffffffu : 0xffffffu;
	u32 want = (u32)(PM_TIMER_HZ * ms / 1000), start, now, l0, l1;
	u64 t0, t1, spins = 0;

	lapic_timer_start_calibration();
	start = inl(pm_port) & mask;
	l0 = lapic_timer_current();
	t0 = rdtsc();
	do {
		now = inl(pm_port) & mask;
		if (++spins > 100000000ULL)
			return false;
	} while (((now - start) & mask) < want);
	t1 = rdtsc();
	l1 = lapic_timer_current();
	/* Scale to exactly `ms`: the loop may overshoot by one read. */
	*tsc_ticks = (t1 - t0) * want / ((now - start) & mask);
	*lapic_ticks = (u32)((u64)(l0 - l1) * want / ((now - start) & mask));
	return true;
}

const char *time_reference(void)
{
	return reference;
}

static u64 time_median(u64 *v, unsigned n)
{
	unsigned i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			u64 t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

/* CAL_WINDOWS windows against the PM timer (or, without one, the PIT);
 * false if the reference never completes a window. */
static bool no_pit2;

static bool time_calibrate(u64 *ticks, u32 *lticks)
{
	u64 t[CAL_WINDOWS], l[CAL_WINDOWS];
	int i;
	u32 lt;

	for (i = 0; i < CAL_WINDOWS; i++) {
		if (pm_port && time_pm_window(CAL_MS, &t[i], &lt))
			reference = "pm-timer";
		else if (!pm_port && !no_pit2 && time_pit_window(CAL_MS, &t[i], &lt))
			reference = "pit";
		else if (!pm_port && no_pit2 && time_pit0_window(CAL_MS, &t[i], &lt))
			reference = "pit-ch0";
		else if (!pm_port && i == 0 && !no_pit2) {
			no_pit2 = true;	/* no channel 2 gate: try channel 0 */
			i--;
			continue;
		} else
			return false;
		l[i] = lt;
	}
	*ticks = time_median(t, CAL_WINDOWS);
	*lticks = (u32)time_median(l, CAL_WINDOWS);
	return true;
}

__cold void time_init(u64 tsc_start)
{
	const char *which = NULL;
	u64 ticks = 0, hz;
	u32 lticks = 0;
	bool ok;

	base_tsc = tsc_start;
	base_ns = 0;
	/* Exact where the CPU states its crystal: no window against a
	 * reference at all. */
	hz = time_cpuid_tsc_hz(&which, true);
	if (hz) {
		reference = which;
		ticks = hz / 1000 * CAL_MS;
		lticks = time_lapic_vs_tsc(hz, CAL_MS);
		goto done;
	}
	ok = time_calibrate(&ticks, &lticks);
	if (!ok && pm_port) {
		pm_port = 0;	/* the PM timer did not count: try the PIT */
		ok = time_calibrate(&ticks, &lticks);
	}
	if (!ok || ticks == 0) {
		hz = time_cpuid_tsc_hz(&which, false);
		if (hz) {
			reference = which;
			ticks = hz / 1000 * CAL_MS;
			lticks = time_lapic_vs_tsc(hz, CAL_MS);
		} else {
			klog("time: no PM timer, PIT or CPUID frequency; assuming 2 GHz TSC and 62.5 MHz LAPIC timer");
			reference = "guess";
			ticks = 2000000ULL * CAL_MS;
			lticks = 62500 * CAL_MS;
		}
	}
done:
	tsc_hz = ticks * 1000 / CAL_MS;
	lapic_hz = (u64)lticks * 1000 / CAL_MS;
	if (lapic_hz == 0)
		lapic_hz = 1;
	tsc_mult = (NSEC_PER_SEC << 32) / tsc_hz;
	lapic_mult = (lapic_hz << 32) / NSEC_PER_SEC;
	oneshot_init(&lapic_arm);	/* calibration reprogrammed the timer */
	time_refine_start();
}

u64 time_tsc_to_ns(u64 ticks)
{
	return time_mul_shr32(ticks, tsc_mult);
}

u64 time_ns(void)
{
	return base_ns + time_tsc_to_ns(rdtsc() - base_tsc);
}

__cold static void time_write_metrics(struct metrics_buf *b)
{
	metrics_simple(b, "vireo_uptime_seconds", METRICS_GAUGE,
		       "Seconds since the kernel's clock started.", time_ns() / NSEC_PER_SEC);
}
METRICS_SOURCE(uptime, time_write_metrics);

/* ---- refining the TSC rate in the background ---- */

static struct timer refine_timer;
static u64 refine_ref_hz;	/* PIT_HZ or PM_TIMER_HZ; 0: nothing to refine */
static u64 refine_t0, refine_prev_tsc, refine_acc, refine_give_up;
static u32 refine_prev;
static bool refine_running;

/* One reference reading with the TSC beside it; false when the two TSC
 * reads around it are too far apart to place it (a preemption). */
static bool time_refine_sample(u64 *tsc, u32 *count)
{
	u64 a, b;
	u32 c;

	a = rdtsc();
	c = refine_ref_hz == PIT_HZ ? time_pit0_read() : inl(pm_port) & (pm_bits == 32 ? 0xffffffffu : 0xffffffu);
	b = rdtsc();
	if (time_tsc_to_ns(b - a) > REFINE_SKEW_NS)
		return false;
	*tsc = a + (b - a) / 2;
	*count = c;
	return true;
}

/* Reference ticks from prev to now: the PIT counts down mod 2^16, the PM
 * timer up mod 2^24 or 2^32. */
static u32 time_refine_delta(u32 prev, u32 now)
{
	if (refine_ref_hz == PIT_HZ)
		return (u16)(prev - now);
	return (now - prev) & (pm_bits == 32 ? 0xffffffffu : 0xffffffu);
}

/* The new rate takes over at this instant: time_ns() stays continuous and
 * monotonic, only its slope changes. */
static void time_refine_apply(u64 hz, u64 span_ms)
{
	u64 flags = irq_save(), now = rdtsc(), old = tsc_hz;
	s64 ppm;

	base_ns += time_tsc_to_ns(now - base_tsc);
	base_tsc = now;
	tsc_hz = hz;
	tsc_mult = (NSEC_PER_SEC << 32) / tsc_hz;
	irq_restore(flags);
	ppm = (s64)((hz > old ? hz - old : old - hz) * 1000000 / old);
	kprintf("time: tsc %lu.%03lu MHz after %lu ms against %s (the boot estimate was %s%ld ppm off)\n",
		hz / 1000000, hz / 1000 % 1000, span_ms, reference, hz > old ? "-" : "+", ppm);
}

static void time_refine_fn(struct timer *t, void *arg)
{
	u64 tsc;
	u32 c;

	(void)arg;
	if (time_ns() > refine_give_up) {
		kprintf("time: tsc rate not refined: no %u ms of samples %u ms apart within %lu s\n",
			REFINE_SPAN_MS, (unsigned)(REFINE_GAP_NS / NSEC_PER_MSEC), REFINE_GIVE_UP_NS / NSEC_PER_SEC);
		return;
	}
	if (time_refine_sample(&tsc, &c)) {
		if (!refine_running || time_tsc_to_ns(tsc - refine_prev_tsc) > REFINE_GAP_NS) {
			refine_running = true;	/* (re)start the span here */
			refine_t0 = tsc;
			refine_acc = 0;
		} else {
			refine_acc += time_refine_delta(refine_prev, c);
		}
		refine_prev = c;
		refine_prev_tsc = tsc;
		if (refine_acc >= refine_ref_hz * REFINE_SPAN_MS / 1000) {
			/* < 0.52 s of TSC ticks (1e10 at 20 GHz) times at most
			 * 3.6e6: under 2^64. */
			time_refine_apply((tsc - refine_t0) * refine_ref_hz / refine_acc,
				     refine_acc * 1000 / refine_ref_hz);
			return;
		}
	}
	timer_start(t, time_ns() + REFINE_PERIOD_NS);
}

/* Against the reference the boot used; the PIT through channel 0 either
 * way (channel 2's gate counts once, channel 0 runs free in mode 2). */
static void time_refine_start(void)
{
	if (!strcmp(reference, "pm-timer")) {
		refine_ref_hz = PM_TIMER_HZ;
	} else if (!strcmp(reference, "pit") || !strcmp(reference, "pit-ch0")) {
		refine_ref_hz = PIT_HZ;
		if (!strcmp(reference, "pit")) {
			outb(0x43, 0x34);	/* ch0, lo/hi byte, mode 2, full count */
			outb(0x40, 0);
			outb(0x40, 0);
		}
	} else {
		return;	/* exact (cpuid) or nothing to measure against */
	}
	timer_init(&refine_timer, time_refine_fn, NULL);
	refine_give_up = time_ns() + REFINE_GIVE_UP_NS;
	timer_start(&refine_timer, time_ns() + REFINE_PERIOD_NS);
}

u64 time_tsc_hz(void)
{
	return tsc_hz;
}

u64 time_lapic_hz(void)
{
	return lapic_hz;
}

void time_arm(u64 deadline_ns)
{
	u64 now, ticks;

	if (!oneshot_need(&lapic_arm, deadline_ns))
		return;	/* already set for it, and not fired yet */
	loop_stats.timer_writes++;
	if (deadline_ns == UINT64_MAX) {
		lapic_timer_oneshot(0);	/* stop: only interrupts wake us */
		return;
	}
	now = time_ns();
	ticks = deadline_ns > now ? time_mul_shr32(deadline_ns - now, lapic_mult) : 0;
	/* A far deadline wakes us early; the loop simply re-arms. */
	lapic_timer_oneshot((u32)MIN(MAX(ticks, 1), 0xffffffffULL));
}

void time_irq(void)
{
	/* Waking the halted loop is the point; the next time_arm() programs
	 * the timer again, even for the same deadline (it may have fired
	 * early: a far deadline is cut to 2^32 ticks). */
	oneshot_fired(&lapic_arm);
}

void time_udelay(u64 us)
{
	u64 end = time_ns() + us * NSEC_PER_USEC;

	while (time_ns() < end)
		pause();
}
