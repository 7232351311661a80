/* Serial console commands, run from the event loop one line at a time. */
#include "drivers/virtio_console.h"
#include "drivers/virtio.h"
#include "drivers/virtio_selftest.h"
#include "kernel/config.h"
#include "kernel/console.h"
#include "kernel/irq.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/panic.h"
#include "kernel/string.h"
#include "kernel/time.h"
#include "kernel/timeline.h"

static void cmd_help(void);

static void cmd_mem(void)
{
	mm_print_summary();
}

static void cmd_stats(void)
{
	u64 now = time_ns(), busy_pct;
	u64 idle = tsc_to_ns(loop_stats.idle_tsc);

	busy_pct = now ? 100 - MIN(idle * 100 / now, (u64)100) : 0;
	kprintf("uptime %lu ms, busy %lu%%, loop %lu iterations, %lu halts, %lu work, %lu timers\n",
		now / NSEC_PER_MSEC, busy_pct, loop_stats.iterations, loop_stats.halts, loop_stats.work_runs,
		loop_stats.timers_fired);
	kprintf("irq: timer %lu, spurious %lu, unhandled %lu; console rx %lu bytes (%lu dropped)\n",
		irq_stats.count[VEC_TIMER], irq_stats.spurious, irq_stats.unhandled, console_stats.rx_bytes,
		console_stats.rx_dropped);
}

/* `fault <what>`: inject a fault at run time, for tests. */
static void cmd_fault(const char *what)
{
	int idx;

	if (!kconfig.debug) {
		kprintf("fault: needs debug on the command line\n");
		return;
	}
	if (strcmp(what, "net-needs-reset")) {
		kprintf("fault: unknown fault '%s' (known: net-needs-reset)\n", what);
		return;
	}
	idx = virtio_fault_corrupt_next(VIRTIO_ID_NET, 0);	/* 0: receive */
	if (idx < 0)
		kprintf("fault: net-needs-reset: no live virtio-net device\n");
	else
		kprintf("fault: net-needs-reset: virtio%d: the next receive buffer gets a malformed descriptor\n",
			idx);
}

static const struct {
	const char *name;
	void (*fn)(void);
	const char *help;
} cmds[] = {
	{ "help", cmd_help, "this list" },
	{ "mem", cmd_mem, "memory summary" },
	{ "stats", cmd_stats, "uptime, idle time, interrupt counts" },
	{ "timeline", timeline_print, "boot timeline" },
	{ "vcons", vcons_print_stats, "virtio-console ports and byte counters" },
	{ "reboot", machine_reboot, "reset the machine" },
};

static void cmd_help(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		kprintf("  %-10s %s\n", cmds[i].name, cmds[i].help);
	kprintf("  %-10s %s\n", "fault", "fault net-needs-reset: malformed virtio-net rx buffer (tests; needs debug)");
}

void shell_line(const char *line)
{
	size_t i;

	while (*line == ' ')
		line++;
	if (!*line)
		return;
	if (!strncmp(line, "fault ", 6)) {
		cmd_fault(line + 6);
		return;
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		if (!strcmp(line, cmds[i].name)) {
			cmds[i].fn();
			return;
		}
	}
	kprintf("unknown command '%s' (try help)\n", line);
}
