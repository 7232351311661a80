/* The command-line table: every CMDLINE_PARAM in the image, collected by the
 * linker into the cmdline linker set (include/vireo/linkset.h; the linker
 * provides its bounds, in the image and on the host), checked, parsed, and
 * printed.
 *
 * Every source goes through the one parser (kernel/cmdline.c), in order,
 * later wins: the built-in defaults, EFI/vireo/vireo.cfg on the ESP (read by
 * boot/efi_main.c), the command line. Each key remembers which source set it
 * last, so the log names the source of every non-default value and a bad
 * value says what the key keeps. */
#include "kernel/boot_info.h"
#include "kernel/cmdline.h"
#include "kernel/config.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "lib/linkset.h"
#include "kernel/shell.h"
#include "lib/string.h"

LINKSET_DECLARE(cmdline, const struct cmdline_opt);

size_t config_params(const struct cmdline_opt *const **set)
{
	*set = LINKSET_BEGIN(cmdline);
	return LINKSET_COUNT(cmdline);
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

/* ---- layered sources ---- */

/* Keys whose source is remembered: the table has a few dozen; a key past
 * this bound still parses, it is only missing from the origin log. */
#define CONFIG_MAX_KEYS 128
#define CONFIG_TEXT 48		/* how much of a value the origin log keeps */
#define CONFIG_FILE_WARN 16	/* warnings shown per file, then a count */

struct config_origin {
	const char *src;	/* the source that set the key last; NULL: default */
	char text[CONFIG_TEXT];	/* the value as that source gave it, maybe cut with "..." */
};

static struct config_origin config_origins[CONFIG_MAX_KEYS];

struct config_apply {
	const char *label;	/* the origin the log shows, e.g. "vireo.cfg" */
	bool file;		/* a repeated key is worth a warning */
};

static size_t config_index(const struct cmdline_opt *o)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);

	for (size_t i = 0; i < n && i < CONFIG_MAX_KEYS; i++)
		if (set[i] == o)
			return i;
	return CONFIG_MAX_KEYS;
}

static void config_set(void *ctx, const char *where, const struct cmdline_opt *o, const char *val)
{
	const struct config_apply *a = ctx;
	size_t i = config_index(o), len = strlen(val);
	struct config_origin *org;

	if (i == CONFIG_MAX_KEYS)
		return;
	org = &config_origins[i];
	if (a->file && org->src == a->label)
		kprintf("config: %.64s: %.48s was set on an earlier line; the later value wins\n", where, o->key);
	org->src = a->label;
	if (len < sizeof org->text) {
		memcpy(org->text, val, len + 1);
	} else {
		memcpy(org->text, val, sizeof org->text - 4);
		memcpy(org->text + sizeof org->text - 4, "...", 4);
	}
}

static int config_kept(void *ctx, const struct cmdline_opt *o, char *buf, size_t size)
{
	size_t i = config_index(o);

	(void)ctx;
	if (i == CONFIG_MAX_KEYS || !config_origins[i].src)
		return 0;
	return ksnprintf(buf, size, "%s from %s (default %s)", config_origins[i].text, config_origins[i].src,
			 o->def ? o->def : "none");
}

static int config_apply_source(const char *label, const char *name, bool file, const char *buf, size_t len)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);
	struct config_apply a = { .label = label, .file = file };
	struct cmdline_source src = {
		.name = name, .warn = config_warn, .set = config_set, .kept = config_kept, .ctx = &a,
		.max_warn = file ? CONFIG_FILE_WARN : 0,
	};

	return file ? cmdline_parse_file(buf, len, set, n, &src) : cmdline_parse_src(buf, set, n, &src);
}

int config_apply_file(const char *label, const char *buf, size_t len)
{
	return config_apply_source(label, label, true, buf, len);
}

int config_apply_cmdline(const char *label, const char *line)
{
	return config_apply_source(label, "cmdline", false, line, 0);
}

const char *config_origin(const struct cmdline_opt *o)
{
	size_t i = config_index(o);

	return i == CONFIG_MAX_KEYS ? NULL : config_origins[i].src;
}

void config_print_origins(void)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);

	for (size_t i = 0; i < n && i < CONFIG_MAX_KEYS; i++)
		if (config_origins[i].src)
			kprintf("config: %s=%s (from %s)\n", set[i]->key, config_origins[i].text, config_origins[i].src);
}

void config_print_origins_from(const char *label)
{
	const struct cmdline_opt *const *set;
	size_t n = config_params(&set);

	for (size_t i = 0; i < n && i < CONFIG_MAX_KEYS; i++)
		if (config_origins[i].src && !strcmp(config_origins[i].src, label))
			kprintf("config: %s=%s (from %s)\n", set[i]->key, config_origins[i].text, label);
}

void config_reset_origins(void)
{
	memset(config_origins, 0, sizeof config_origins);
}

int config_boot(const struct boot_info *bi)
{
	/* The label outlives the call: origins point at it. */
	static char cmdline_label[40];
	int problems = config_check(config_warn, NULL);

	const struct boot_file *cfg = &bi->files[BOOT_FILE_CFG], *f;

	/* Whatever boot/ refused for its size (BOOT_FILES): name, size, cap. */
	for (f = bi->files; f < bi->files + BOOT_NFILES; f++)
		if (f->state == BOOT_FILE_TOO_BIG)
			kprintf("boot: %.48s refused: %lu bytes or more, cap %lu\n", f->path, (unsigned long)f->len,
				(unsigned long)f->cap);
	switch (cfg->state) {
	case BOOT_FILE_OK:
		kprintf("config: " BOOT_CFG_PATH ": %lu bytes\n", (unsigned long)cfg->len);
		problems += config_apply_file("vireo.cfg", (const char *)(uintptr_t)cfg->base,
					      MIN(cfg->len, (u64)BOOT_CFG_MAX));
		break;
	case BOOT_FILE_TOO_BIG:
		kprintf("warning: vireo.cfg: " BOOT_CFG_PATH " is larger than %u bytes, ignored (the built-in "
			"defaults and the command line apply)\n", (unsigned)BOOT_CFG_MAX);
		problems++;
		break;
	case BOOT_FILE_ABSENT:
		kprintf("config: no " BOOT_CFG_PATH "\n");
		break;
	case BOOT_FILE_NONE:	/* not looked for (PVH has no ESP) */
		break;
	default:
		kprintf("warning: vireo.cfg: reading " BOOT_CFG_PATH " failed (EFI status %#lx), ignored\n",
			(unsigned long)cfg->status);
		problems++;
		break;
	}
	kprintf("cmdline (%s): %s\n", bi->cmdline_src, bi->cmdline[0] ? bi->cmdline : "(empty)");
	ksnprintf(cmdline_label, sizeof cmdline_label, "cmdline (%.16s)", bi->cmdline_src);
	problems += config_apply_cmdline(cmdline_label, bi->cmdline);
	config_print_origins();
	if (problems)
		kprintf("config: %d warning%s, those keys keep their earlier values\n", problems,
			problems == 1 ? "" : "s");
	return problems;
}
