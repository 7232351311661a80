/* The kernel's event loop: queued work (kernel/loop.c), then expired
 * timers, then sti;hlt until the next interrupt or the LAPIC one-shot armed
 * for the nearest deadline. */
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/time/time.h"

u64 loop_busy_ns(void)
{
	u64 now = time_ns(), idle = time_tsc_to_ns(loop_stats.idle_tsc);

	return now > idle ? now - idle : 0;
}

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
