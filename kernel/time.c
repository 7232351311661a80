/* TSC and LAPIC timer calibration, monotonic time, and the tickless
 * one-shot timer. References, first that works: the ACPI PM timer; PIT
 * channel 2 through its port-0x61 gate; PIT channel 0 read by latching
 * (QEMU microvm has a PIT but no port 0x61); CPUID leaf 0x15 (crystal
 * ratio) or 0x16 (base MHz), with the LAPIC timer then timed against the
 * TSC; else a guess. time_reference() names the one used. */
#include <arch.h>

#include "kernel/io.h"
#include "kernel/irq.h"
#include "kernel/time.h"

#define PIT_HZ 1193182ULL
#define PM_TIMER_HZ 3579545ULL
#define CAL_MS 3	/* calibration window: TSC error well under 0.1% */
/* Windows taken; the median of each rate is kept. Under emulation a host
 * preemption between a reference read and the TSC/LAPIC reads next to it
 * skews one window by up to the length of the preemption (seen: a 3 ms
 * window read as 881 MHz for a 2445 MHz TSC, about 1 in 7 boots on a loaded
 * 2-core host, and up to 3% off more often); the median of 5 survives two
 * such windows. 5 * 3 ms = 15 ms of boot. */
#define CAL_WINDOWS 5

static u64 tsc0, tsc_hz, lapic_hz;
static u16 pm_port;
static u8 pm_bits;
static const char *reference = "pit";
static u64 tsc_mult;	/* ns = ticks * tsc_mult >> 32 */
static u64 lapic_mult;	/* lapic ticks = ns * lapic_mult >> 32 */

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
static u64 time_cpuid_tsc_hz(const char **which)
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

void time_init(u64 tsc_start)
{
	u64 ticks = 0;
	u32 lticks = 0;
	bool ok;

	tsc0 = tsc_start;
	ok = time_calibrate(&ticks, &lticks);
	if (!ok && pm_port) {
		pm_port = 0;	/* the PM timer did not count: try the PIT */
		ok = time_calibrate(&ticks, &lticks);
	}
	if (!ok || ticks == 0) {
		const char *which = NULL;
		u64 hz = time_cpuid_tsc_hz(&which);

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
	tsc_hz = ticks * 1000 / CAL_MS;
	lapic_hz = (u64)lticks * 1000 / CAL_MS;
	if (lapic_hz == 0)
		lapic_hz = 1;
	tsc_mult = (NSEC_PER_SEC << 32) / tsc_hz;
	lapic_mult = (lapic_hz << 32) / NSEC_PER_SEC;
}

u64 time_tsc_to_ns(u64 ticks)
{
	return time_mul_shr32(ticks, tsc_mult);
}

u64 time_ns(void)
{
	return time_tsc_to_ns(rdtsc() - tsc0);
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
	/* Nothing to do here: waking the halted loop is the point. */
}

void time_udelay(u64 us)
{
	u64 end = time_ns() + us * NSEC_PER_USEC;

	while (time_ns() < end)
		pause();
}
