/* The command-line table: every CMDLINE_PARAM in the image, collected by the
 * linker into the vireo_cmdline section (linker/vireo.ld; the host's linker
 * names the same bounds by itself), checked, parsed, and printed. */
#include "kernel/cmdline.h"
#include "kernel/config.h"
#include "kernel/console.h"
#include "kernel/fmt.h"
#include "kernel/shell.h"
#include "kernel/string.h"

extern const struct cmdline_opt *const __start_vireo_cmdline[];
extern const struct cmdline_opt *const __stop_vireo_cmdline[];

size_t config_params(const struct cmdline_opt *const **set)
{
	*set = __start_vireo_cmdline;
	return (size_t)(__stop_vireo_cmdline - __start_vireo_cmdline);
}

__attribute__((format(printf, 3, 4)))
static void config_report(cmdline_warn_fn warn, void *ctx, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (warn)
		warn(ctx, msg);
}

int config_check(cmdline_warn_fn warn, void *ctx)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);
	int problems = 0;

	for (size_t i = 0; i < n; i++) {
		const struct cmdline_opt *o = set[i];

		if (!o->key || !o->key[0] || !o->help) {
			config_report(warn, ctx, "cmdline: table entry %zu has no key or no help", i);
			problems++;
			continue;
		}
		for (size_t j = 0; j < i; j++) {
			if (set[j]->key && !strcmp(set[j]->key, o->key)) {
				/* The parser takes the first: say which one is dead. */
				config_report(warn, ctx, "cmdline: key '%.48s' is registered twice; the second is ignored",
					   o->key);
				problems++;
				break;
			}
		}
		if (!cmdline_default_ok(o)) {
			config_report(warn, ctx, "cmdline: key '%.48s': its default '%.32s' is not what its variable holds",
				   o->key, o->def);
			problems++;
		}
	}
	return problems;
}

static void config_warn(void *ctx, const char *msg)
{
	(void)ctx;
	kprintf("warning: %s\n", msg);
}

int config_parse(const char *cmdline)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);
	int problems = config_check(config_warn, NULL);

	return problems + cmdline_parse_set(cmdline, set, n, config_warn, NULL);
}

void config_print_params(void)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);
	const char *last = "";

	/* In key order without a buffer: each round prints the least key
	 * above the last one printed (n is a few dozen at most). */
	for (size_t round = 0; round < n; round++) {
		const struct cmdline_opt *next = NULL;
		char values[128];

		for (size_t i = 0; i < n; i++) {
			const char *k = set[i]->key;
			int above = k ? strcmp(k, last) : -1;

			if (above > 0 && (!next || strcmp(k, next->key) < 0))
				next = set[i];
		}
		if (!next)
			break;
		cmdline_describe_values(next, ", ", values, sizeof values);
		/* Two writes: a long help must not share kprintf's line buffer. */
		kprintf("  %s=%s (default %s): ", next->key, values, next->def ? next->def : "none");
		kprintf("%s\n", next->help ? next->help : "");
		last = next->key;
	}
}

static void config_cmd_params(const char *args)
{
	(void)args;
	config_print_params();
}

SHELL_CMD(params, .name = "params", .fn = config_cmd_params, .help = "the command-line keys, their values and defaults");
