/* Serial console commands, run from the event loop one line at a time. The
 * commands live next to their code (SHELL_CMD, kernel/shell.h); this file
 * finds them in the shell linker set and runs them. */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/arch/irq.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"
#include "kernel/shell.h"
#include "lib/linkset.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/timeline.h"

LINKSET_DECLARE(shell, const struct shell_cmd);

static bool debug;
CMDLINE_PARAM(debug, .key = "debug", .type = CMDLINE_BOOL, .dst = &debug, .def = "off",
	      .help = "test-only hooks answer: the shell's fault (otherwise it says needs debug on the command line)");

static void shell_cmd_help(const char *args)
{
	const struct shell_cmd *const *set = LINKSET_BEGIN(shell);
	size_t n = LINKSET_COUNT(shell);
	const char *last = "";

	(void)args;
	/* In name order without a buffer, as config_print_params does. */
	for (size_t round = 0; round < n; round++) {
		const struct shell_cmd *next = NULL;

		for (size_t i = 0; i < n; i++)
			if (strcmp(set[i]->name, last) > 0 && (!next || strcmp(set[i]->name, next->name) < 0))
				next = set[i];
		if (!next)
			break;
		last = next->name;
		if (next->debug && !debug)
			continue;	/* test-only: listed only with debug=on */
		if (next->usage) {
			char head[40];

			ksnprintf(head, sizeof head, "%s %s", next->name, next->usage);
			kprintf("  %-10s %s%s\n", head, next->help, next->debug ? " (tests; needs debug)" : "");
		} else {
			kprintf("  %-10s %s%s\n", next->name, next->help, next->debug ? " (tests; needs debug)" : "");
		}
	}
}
SHELL_CMD(help, .name = "help", .fn = shell_cmd_help, .help = "this list");

static void shell_cmd_mem(const char *args)
{
	(void)args;
	mm_print_summary();
}
SHELL_CMD(mem, .name = "mem", .fn = shell_cmd_mem, .help = "memory summary");

static void shell_cmd_stats(const char *args)
{
	u64 now = time_ns(), busy_pct;
	u64 idle = time_tsc_to_ns(loop_stats.idle_tsc);

	(void)args;
	busy_pct = now ? 100 - MIN(idle * 100 / now, (u64)100) : 0;
	kprintf("uptime %lu ms, busy %lu%%, loop %lu iterations, %lu halts, %lu work, %lu timers\n",
		now / NSEC_PER_MSEC, busy_pct, loop_stats.iterations, loop_stats.halts, loop_stats.work_runs,
		loop_stats.timers_fired);
	kprintf("irq: timer %lu, spurious %lu, unhandled %lu; console rx %lu bytes (%lu dropped)\n",
		irq_stats.count[VEC_TIMER], irq_stats.spurious, irq_stats.unhandled, console_stats.rx_bytes,
		console_stats.rx_dropped);
}
SHELL_CMD(stats, .name = "stats", .fn = shell_cmd_stats, .help = "uptime, idle time, interrupt counts");

static void shell_cmd_timeline(const char *args)
{
	(void)args;
	timeline_print();
}
SHELL_CMD(timeline, .name = "timeline", .fn = shell_cmd_timeline, .help = "boot timeline");

static void shell_cmd_reboot(const char *args)
{
	(void)args;
	machine_reboot();
}
SHELL_CMD(reboot, .name = "reboot", .fn = shell_cmd_reboot, .help = "reset the machine");

void shell_line(const char *line)
{
	const struct shell_cmd *const *set = LINKSET_BEGIN(shell);
	size_t n = LINKSET_COUNT(shell);
	const char *args = "";
	size_t len = 0;

	while (*line == ' ')
		line++;
	if (!*line)
		return;
	while (line[len] && line[len] != ' ')
		len++;
	if (line[len] == ' ')
		args = line + len + 1;
	for (size_t i = 0; i < n; i++) {
		const struct shell_cmd *c = set[i];

		if (strlen(c->name) != len || strncmp(line, c->name, len))
			continue;
		if (c->debug && !debug) {
			kprintf("%s: needs debug on the command line\n", c->name);
			return;
		}
		if (!c->usage && *args) {
			kprintf("%s: takes no arguments\n", c->name);
			return;
		}
		c->fn(args);
		return;
	}
	kprintf("unknown command '%s' (try help)\n", line);
}
