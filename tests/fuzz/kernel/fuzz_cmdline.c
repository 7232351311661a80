/* libFuzzer target for kernel/cmdline.c: arbitrary bytes as a command line,
 * and the same bytes as a configuration file (cmdline_parse_file).
 * Checks: no crash or over-read (ASan/UBSan), STR destinations always hold a
 * NUL within dst_size and never spill into the guard bytes behind them,
 * warnings are short printable lines, and the return value counts them. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/cmdline.h"

#define GUARD 0xa5

static struct {
	char small[4];
	u8 guard1[16];
	char name[16];
	u8 guard2[16];
	char one[1];		/* room for "" only */
	u8 guard3[16];
} s;
static bool b1, b2;
static u64 n1, n2, h1, h2, custom;
static int e1;

static const char *const modes[] = { "halt", "reboot", "poweroff", "", NULL };

static int parse_pair(const char *val, void *dst, char *why, size_t why_len)
{
	/* Writes exactly why_len bytes of reason, unterminated, to check the
	 * parser terminates it. */
	if (val[0] && val[0] == val[1]) {
		*(u64 *)dst = (u64)(u8)val[0];
		return 0;
	}
	memset(why, 'r', why_len);
	return -EINVAL;
}

static const struct cmdline_opt opts[] = {
	{ .key = "quiet", .type = CMDLINE_BOOL, .dst = &b1 },
	{ .key = "debug", .type = CMDLINE_BOOL, .dst = &b2 },
	{ .key = "mem", .type = CMDLINE_UINT, .dst = &n1, .min = 1, .max = 1 << 20 },
	{ .key = "n", .type = CMDLINE_UINT, .dst = &n2 },
	{ .key = "addr", .type = CMDLINE_HEX, .dst = &h1 },
	{ .key = "mask", .type = CMDLINE_HEX, .dst = &h2, .min = 0x10, .max = 0xfff },
	{ .key = "panic", .type = CMDLINE_ENUM, .dst = &e1, .choices = modes },
	{ .key = "s", .type = CMDLINE_STR, .dst = s.small, .dst_size = sizeof s.small },
	{ .key = "name", .type = CMDLINE_STR, .dst = s.name, .dst_size = sizeof s.name },
	{ .key = "one", .type = CMDLINE_STR, .dst = s.one, .dst_size = sizeof s.one },
	{ .key = "pair", .type = CMDLINE_CUSTOM, .dst = &custom, .parse = parse_pair },
	{ .key = "", .type = CMDLINE_BOOL, .dst = &b2 },	/* an odd but legal entry */
};

static int nwarn;

static void on_warn(void *ctx, const char *msg)
{
	size_t n = strnlen(msg, 256);

	if (n == 0 || n >= 224)	/* cl_vwarn's buffer */
		abort();
	for (size_t i = 0; i < n; i++)
		if ((u8)msg[i] < 0x20 || (u8)msg[i] >= 0x7f)
			abort();
	if (strncmp(msg, "cmdline: ", 9) != 0 && strncmp(msg, "cmdline line ", 13) != 0)
		abort();
	nwarn++;
}

static void check_dst(const char *str, size_t size, const u8 *guard)
{
	if (!memchr(str, '\0', size))
		abort();
	for (size_t i = 0; i < 16; i++)
		if (guard[i] != GUARD)
			abort();
}

static void run(const char *line)
{
	int ret;

	memset(&s, GUARD, sizeof s);
	strcpy(s.small, "abc");
	strcpy(s.name, "default");
	s.one[0] = '\0';
	nwarn = 0;
	ret = cmdline_parse(line, opts, sizeof opts / sizeof opts[0], on_warn, NULL);
	if (ret != nwarn)
		abort();
	check_dst(s.small, sizeof s.small, s.guard1);
	check_dst(s.name, sizeof s.name, s.guard2);
	check_dst(s.one, sizeof s.one, s.guard3);
	if (e1 < 0 || e1 > 3)
		abort();
	if (n1 != 0 && (n1 < 1 || n1 > 1 << 20))
		abort();
	if (h2 != 0 && (h2 < 0x10 || h2 > 0xfff))
		abort();
}

/* The file's set hook: the value is a printable string that fits a line. */
static void on_set(void *ctx, const char *where, const struct cmdline_opt *o, const char *val)
{
	size_t n = strnlen(val, CMDLINE_MAX);

	(void)ctx;
	if (n >= CMDLINE_MAX || strncmp(where, "cmdline line ", 13) != 0 || !o->key)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((u8)val[i] < 0x20 || (u8)val[i] >= 0x7f)
			abort();
}

static void run_file(const uint8_t *data, size_t size)
{
	static const struct cmdline_opt *set[sizeof opts / sizeof opts[0]];
	struct cmdline_source src = { .name = "cmdline", .warn = on_warn, .set = on_set, .max_warn = 0 };
	char *buf = malloc(size ? size : 1);	/* exactly sized, no NUL behind */
	int ret;

	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
		set[i] = &opts[i];
	memcpy(buf, data, size);
	memset(&s, GUARD, sizeof s);
	strcpy(s.small, "abc");
	strcpy(s.name, "default");
	s.one[0] = '\0';
	nwarn = 0;
	ret = cmdline_parse_file(buf, size, set, sizeof opts / sizeof opts[0], &src);
	if (ret != nwarn)
		abort();
	check_dst(s.small, sizeof s.small, s.guard1);
	check_dst(s.name, sizeof s.name, s.guard2);
	check_dst(s.one, sizeof s.one, s.guard3);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run_file(data, size);

	char *line = malloc(size + 1);

	memcpy(line, data, size);
	line[size] = '\0';
	run(line);
	free(line);

	/* At least CMDLINE_MAX bytes: also hand over an unterminated buffer of
	 * exactly CMDLINE_MAX, which the parser must not read past. */
	if (size >= CMDLINE_MAX) {
		line = malloc(CMDLINE_MAX);
		memcpy(line, data, CMDLINE_MAX);
		for (size_t i = 0; i < CMDLINE_MAX; i++)
			if (!line[i])
				line[i] = ' ';
		run(line);
		free(line);
	}
	return 0;
}
