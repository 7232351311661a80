/* The kernel's event loop: queued work (kernel/loop.c), then expired
 * timers, then sti;hlt until the next interrupt or the LAPIC one-shot armed
 * for the nearest deadline. */
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/time/time.h"
#include "lib/metrics.h"

u64 loop_busy_ns(void)
{
	u64 now = time_ns(), idle = time_tsc_to_ns(loop_stats.idle_tsc);

	return now > idle ? now - idle : 0;
}

__cold static void loop_write_metrics(struct metrics_buf *b)
{
	metrics_simple(b, "vireo_loop_iterations_total", METRICS_COUNTER, "Event loop iterations",
		       loop_stats.iterations);
	metrics_simple(b, "vireo_loop_halts_total", METRICS_COUNTER, "Times the loop halted for an interrupt",
		       loop_stats.halts);
	metrics_simple(b, "vireo_loop_timer_writes_total", METRICS_COUNTER,
		       "LAPIC timer programmings (armed before a halt only when the deadline changed or it fired)",
		       loop_stats.timer_writes);
	metrics_simple(b, "vireo_loop_work_runs_total", METRICS_COUNTER, "Work items run", loop_stats.work_runs);
	metrics_simple(b, "vireo_loop_timers_fired_total", METRICS_COUNTER, "Timers fired", loop_stats.timers_fired);
	/* The guest's own idle time (halted in the loop), so a profile can tell
	 * a guest waiting for work from a vCPU thread waiting for a host CPU:
	 * QMP RIP samples cannot (a vCPU woken from its halt but not yet run by
	 * the host still shows the halt's RIP). */
	metrics_family(b, "vireo_loop_halted_seconds_total", METRICS_COUNTER,
		       "Time the loop spent halted, waiting for an interrupt (microsecond resolution)");
	metrics_sample_fixed(b, "vireo_loop_halted_seconds_total", NULL, time_tsc_to_ns(loop_stats.idle_tsc) / 1000, 6);
}
METRICS_SOURCE(loop, loop_write_metrics);

void loop_run(void)
{
	for (;;) {
		u64 t0;

		loop_stats.iterations++;
		loop_run_work(64);	/* then let timers run */
		loop_run_timers(time_ns());

		cli();
		if (loop_work_queued() || loop_next_deadline() <= time_ns()) {
			sti();
			continue;
		}
		time_arm(loop_next_deadline());
		t0 = rdtsc();
		sti_hlt();	/* the interrupt that wakes us runs before this returns */
		loop_stats.halts++;
		loop_stats.idle_tsc += rdtsc() - t0;
	}
}
