/* kernel/cmdline.c: every option type, the warning texts, quoting, and the
 * CMDLINE_MAX bound (checked by ASan on exactly-sized heap copies). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/cmdline.h"

struct warns {
	int n;
	char msg[16][200];
};

static void collect(void *ctx, const char *msg)
{
	struct warns *w = ctx;

	if (w->n < 16)
		snprintf(w->msg[w->n], sizeof w->msg[0], "%s", msg);
	w->n++;
}

static bool quiet, nomsi;
static u64 mem, port, addr, mask;
static int panic_mode, level;
static char name[8], path[32];
static u64 custom_even;

static const char *const panic_choices[] = { "halt", "reboot", NULL };
static const char *const level_choices[] = { "error", "warn", "info", "debug", NULL };

static int parse_even(const char *val, void *dst, char *why, size_t why_len)
{
	u64 v = 0;

	if (!*val)
		return -EINVAL;	/* no reason given */
	for (; *val; val++) {
		if (*val < '0' || *val > '9') {
			snprintf(why, why_len, "not a number");
			return -EINVAL;
		}
		v = v * 10 + (u64)(*val - '0');
	}
	if (v & 1) {
		snprintf(why, why_len, "%llu is odd", (unsigned long long)v);
		return -EINVAL;
	}
	*(u64 *)dst = v;
	return 0;
}

static const struct cmdline_opt opts[] = {
	{ .key = "quiet", .type = CMDLINE_BOOL, .dst = &quiet, .help = "less logging" },
	{ .key = "nomsi", .type = CMDLINE_BOOL, .dst = &nomsi },
	{ .key = "mem", .type = CMDLINE_UINT, .dst = &mem, .min = 16, .max = 4096 },
	{ .key = "port", .type = CMDLINE_UINT, .dst = &port },	/* no range */
	{ .key = "addr", .type = CMDLINE_HEX, .dst = &addr },
	{ .key = "mask", .type = CMDLINE_HEX, .dst = &mask, .min = 1, .max = 0xff },
	{ .key = "panic", .type = CMDLINE_ENUM, .dst = &panic_mode, .choices = panic_choices },
	{ .key = "log", .type = CMDLINE_ENUM, .dst = &level, .choices = level_choices },
	{ .key = "name", .type = CMDLINE_STR, .dst = name, .dst_size = sizeof name },
	{ .key = "path", .type = CMDLINE_STR, .dst = path, .dst_size = sizeof path },
	{ .key = "even", .type = CMDLINE_CUSTOM, .dst = &custom_even, .parse = parse_even },
};

static struct warns w;

static int reset(void **state)
{
	quiet = nomsi = false;
	mem = 64;
	port = 80;
	addr = 0x1000;
	mask = 0xf;
	panic_mode = 0;
	level = 1;
	strcpy(name, "dflt");
	strcpy(path, "/");
	custom_even = 2;
	memset(&w, 0, sizeof w);
	return 0;
}

/* Parses from an exactly-sized heap copy so ASan sees any over-read.
 * Returns this call's warning count; w.msg[] keeps accumulating. */
static int parse(const char *line)
{
	size_t n = strlen(line) + 1;
	char *copy = malloc(n);
	int before = w.n, ret;

	memcpy(copy, line, n);
	ret = cmdline_parse(copy, opts, sizeof opts / sizeof opts[0], collect, &w);
	free(copy);
	assert_int_equal(ret, w.n - before);
	return ret;
}

static void test_empty_and_spaces(void **state)
{
	assert_int_equal(cmdline_parse(NULL, opts, 3, collect, &w), 0);
	assert_int_equal(parse(""), 0);
	assert_int_equal(parse("  \t\n\r  "), 0);
	assert_int_equal(parse("\tquiet\n\nmem=128   port=8080\r\n"), 0);
	assert_true(quiet);
	assert_int_equal(mem, 128);
	assert_int_equal(port, 8080);
}

static void test_bool_forms(void **state)
{
	static const char *const on[] = { "quiet", "quiet=1", "quiet=on", "quiet=yes", "quiet=true" };
	static const char *const off[] = { "quiet=0", "quiet=off", "quiet=no", "quiet=false" };

	for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
		quiet = false;
		assert_int_equal(parse(on[i]), 0);
		assert_true(quiet);
	}
	for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
		quiet = true;
		assert_int_equal(parse(off[i]), 0);
		assert_false(quiet);
	}
	quiet = true;
	assert_int_equal(parse("quiet=maybe"), 1);
	assert_true(quiet);
	assert_string_equal(w.msg[0], "cmdline: quiet=maybe: expected 1|0|on|off|yes|no|true|false, keeping default");
	assert_int_equal(parse("quiet= quiet=ON quiet=1x"), 3);
	assert_true(quiet);
}

static void test_uint(void **state)
{
	assert_int_equal(parse("mem=16"), 0);
	assert_int_equal(mem, 16);
	assert_int_equal(parse("mem=4096"), 0);
	assert_int_equal(mem, 4096);
	assert_int_equal(parse("mem=0004000"), 0);
	assert_int_equal(mem, 4000);

	assert_int_equal(parse("mem= mem=+5 mem=-5 mem=12abc mem=0x10 mem=1.5"), 6);
	assert_int_equal(mem, 4000);
	assert_string_equal(w.msg[0], "cmdline: mem=: expected a decimal number, keeping default");
	assert_string_equal(w.msg[3], "cmdline: mem=12abc: expected a decimal number, keeping default");

	memset(&w, 0, sizeof w);
	assert_int_equal(parse("mem=15 mem=4097"), 2);
	assert_int_equal(mem, 4000);
	assert_string_equal(w.msg[0], "cmdline: mem=15: expected 16..4096, keeping default");

	memset(&w, 0, sizeof w);
	assert_int_equal(parse("port=18446744073709551615"), 0);
	assert_true(port == UINT64_MAX);
	assert_int_equal(parse("port=18446744073709551616"), 1);
	assert_true(port == UINT64_MAX);
	assert_string_equal(w.msg[0],
			    "cmdline: port=18446744073709551616: expected a decimal number that fits in 64 bits, keeping default");
	assert_int_equal(parse("port=99999999999999999999999x"), 1);	/* junk beats overflow */
	assert_string_equal(w.msg[1], "cmdline: port=99999999999999999999999x: expected a decimal number, keeping default");
	assert_int_equal(parse("port=0"), 0);
	assert_int_equal(port, 0);
}

static void test_hex(void **state)
{
	assert_int_equal(parse("addr=0xfee00000"), 0);
	assert_true(addr == 0xfee00000);
	assert_int_equal(parse("addr=DEADbeef"), 0);
	assert_true(addr == 0xdeadbeef);
	assert_int_equal(parse("addr=0XFFFFFFFFFFFFFFFF"), 0);
	assert_true(addr == UINT64_MAX);
	assert_int_equal(parse("addr=000000000000000000000001"), 0);	/* leading zeros are fine */
	assert_true(addr == 1);

	assert_int_equal(parse("addr=0x addr= addr=0xg addr=-1 addr=0x0x1 addr=12 34"), 6);
	assert_true(addr == 0x12);	/* "addr=12" is valid; "34" is a bare token */
	assert_string_equal(w.msg[0], "cmdline: addr=0x: expected a hex number, keeping default");
	assert_string_equal(w.msg[5], "cmdline: '34' is not key=value");

	memset(&w, 0, sizeof w);
	assert_int_equal(parse("addr=0x10000000000000000"), 1);
	assert_true(addr == 0x12);
	assert_string_equal(w.msg[0],
			    "cmdline: addr=0x10000000000000000: expected a hex number that fits in 64 bits, keeping default");

	memset(&w, 0, sizeof w);
	assert_int_equal(parse("mask=0 mask=0x100 mask=ff"), 2);
	assert_int_equal(mask, 0xff);
	assert_string_equal(w.msg[0], "cmdline: mask=0: expected 0x1..0xff, keeping default");
}

static void test_enum(void **state)
{
	assert_int_equal(parse("panic=reboot"), 0);
	assert_int_equal(panic_mode, 1);
	assert_int_equal(parse("panic=halt log=debug"), 0);
	assert_int_equal(panic_mode, 0);
	assert_int_equal(level, 3);

	assert_int_equal(parse("panic=sideways"), 1);
	assert_int_equal(panic_mode, 0);
	assert_string_equal(w.msg[0], "cmdline: panic=sideways: expected halt|reboot, keeping default");
	assert_int_equal(parse("panic=HALT panic=hal panic=halts panic="), 4);
	assert_int_equal(panic_mode, 0);
	assert_string_equal(w.msg[4], "cmdline: panic=: expected halt|reboot, keeping default");
}

static void test_str(void **state)
{
	assert_int_equal(parse("name=abc"), 0);
	assert_string_equal(name, "abc");
	assert_int_equal(parse("name=1234567"), 0);	/* exactly dst_size - 1 */
	assert_string_equal(name, "1234567");
	assert_int_equal(parse("name=12345678"), 1);
	assert_string_equal(name, "1234567");
	assert_string_equal(w.msg[0], "cmdline: name=12345678: expected at most 7 characters, keeping default");
	assert_int_equal(parse("name="), 0);
	assert_string_equal(name, "");

	assert_int_equal(parse("path=\"/boot/my file\" quiet"), 0);
	assert_string_equal(path, "/boot/my file");
	assert_true(quiet);
	assert_int_equal(parse("\"path=/a b\""), 0);	/* quotes may wrap the whole token */
	assert_string_equal(path, "/a b");
	assert_int_equal(parse("path=\"\""), 0);
	assert_string_equal(path, "");
	assert_int_equal(parse("path=x\"y z\"w=v"), 0);	/* first '=' splits */
	assert_string_equal(path, "xy zw=v");
}

static void test_custom(void **state)
{
	assert_int_equal(parse("even=42"), 0);
	assert_int_equal(custom_even, 42);
	assert_int_equal(parse("even=7"), 1);
	assert_int_equal(custom_even, 42);
	assert_string_equal(w.msg[0], "cmdline: even=7: 7 is odd, keeping default");
	assert_int_equal(parse("even=x"), 1);
	assert_string_equal(w.msg[1], "cmdline: even=x: not a number, keeping default");
	assert_int_equal(parse("even="), 1);
	assert_string_equal(w.msg[2], "cmdline: even=: invalid value, keeping default");
}

static void test_unknown_and_bare(void **state)
{
	assert_int_equal(parse("foo=1"), 1);
	assert_string_equal(w.msg[0], "cmdline: unknown key 'foo' ignored");
	assert_int_equal(parse("noequals"), 1);
	assert_string_equal(w.msg[1], "cmdline: 'noequals' is not key=value");
	assert_int_equal(parse("mem"), 1);	/* a known key, but not a BOOL */
	assert_string_equal(w.msg[2], "cmdline: 'mem' is not key=value");
	assert_int_equal(parse("=5"), 1);
	assert_string_equal(w.msg[3], "cmdline: '=5' has no key, ignored");
	assert_int_equal(parse("Quiet"), 1);	/* keys are case-sensitive */
	assert_false(quiet);
	assert_int_equal(mem, 64);
}

static void test_repeated_last_valid_wins(void **state)
{
	assert_int_equal(parse("mem=100 mem=200 mem=bad mem=9999"), 2);
	assert_int_equal(mem, 200);
	assert_int_equal(parse("name=a name=b name=waytoolong"), 1);
	assert_string_equal(name, "b");
	assert_int_equal(parse("quiet quiet=off"), 0);
	assert_false(quiet);
}

static void test_unterminated_quote(void **state)
{
	assert_int_equal(parse("quiet path=\"/a b c   mem=100"), 1);
	assert_string_equal(w.msg[0], "cmdline: unterminated quote in 'path=/a b c   mem=100', taking the rest");
	assert_string_equal(path, "/a b c   mem=100");
	assert_int_equal(mem, 64);
}

static void test_control_bytes_not_logged(void **state)
{
	assert_int_equal(parse("k\x1b[31m=1 \x7f\x80"), 2);
	assert_string_equal(w.msg[0], "cmdline: unknown key 'k?[31m' ignored");
	assert_string_equal(w.msg[1], "cmdline: '?" "?' is not key=value");
}

static void test_long_values_quoted_briefly(void **state)
{
	char line[300];

	memset(line, 'z', sizeof line);
	memcpy(line, "mem=", 4);
	line[sizeof line - 1] = '\0';
	assert_int_equal(parse(line), 1);
	assert_true(strlen(w.msg[0]) < 150);
	assert_non_null(strstr(w.msg[0], "cmdline: mem=zzz"));
}

static void test_no_warn_callback(void **state)
{
	assert_int_equal(cmdline_parse("foo bar=1 mem=5 quiet", opts, sizeof opts / sizeof opts[0], NULL, NULL), 3);
	assert_true(quiet);
}

/* A 1024-byte buffer with no NUL anywhere: the parser must stop at
 * CMDLINE_MAX - 1 characters, warn once, and drop the token it cut. */
static void test_over_long_unterminated(void **state)
{
	char *buf = malloc(CMDLINE_MAX);
	size_t i;
	int ret;

	/* "mem=100 " repeated, then "port=12345..." straddling the limit. */
	for (i = 0; i + 8 <= CMDLINE_MAX - 16; i += 8)
		memcpy(buf + i, "mem=100 ", 8);
	memcpy(buf + i - 8, "mem=200 ", 8);
	memset(buf + i, ' ', CMDLINE_MAX - i);
	memcpy(buf + CMDLINE_MAX - 10, "port=123456", 10);	/* no room for the last digit */
	ret = cmdline_parse(buf, opts, sizeof opts / sizeof opts[0], collect, &w);
	assert_int_equal(ret, 1);
	assert_string_equal(w.msg[0], "cmdline: longer than 1023 characters, ignoring the rest");
	assert_int_equal(mem, 200);
	assert_int_equal(port, 80);	/* "port=12345" was cut, not applied */
	free(buf);
}

/* The limit falling right after a complete token keeps that token. */
static void test_over_long_boundary_on_space(void **state)
{
	char *buf = malloc(CMDLINE_MAX + 8);

	memset(buf, ' ', CMDLINE_MAX + 8);
	memcpy(buf + CMDLINE_MAX - 1 - 8, "port=123", 8);	/* ends at index 1022 */
	buf[CMDLINE_MAX + 4] = 'x';
	buf[CMDLINE_MAX + 7] = '\0';
	assert_int_equal(cmdline_parse(buf, opts, sizeof opts / sizeof opts[0], collect, &w), 1);
	assert_int_equal(port, 123);

	/* Same, but a quote is open at the limit: the token was cut. */
	reset(NULL);
	memset(buf, ' ', CMDLINE_MAX + 8);
	memcpy(buf + CMDLINE_MAX - 1 - 9, "path=\"a b", 9);
	buf[CMDLINE_MAX + 7] = '\0';
	assert_int_equal(cmdline_parse(buf, opts, sizeof opts / sizeof opts[0], collect, &w), 1);
	assert_string_equal(path, "/");
	free(buf);
}

static void test_exactly_max_minus_one(void **state)
{
	char *buf = malloc(CMDLINE_MAX);

	memset(buf, ' ', CMDLINE_MAX - 1);
	memcpy(buf + CMDLINE_MAX - 1 - 6, "mem=99", 6);
	buf[CMDLINE_MAX - 1] = '\0';
	assert_int_equal(cmdline_parse(buf, opts, sizeof opts / sizeof opts[0], collect, &w), 0);
	assert_int_equal(mem, 99);
	free(buf);
}

static void test_parse_ipv4(void **state)
{
	u32 a = 7;
	int pfx = 9;

	(void)state;
	assert_int_equal(cmdline_parse_ipv4("10.0.2.15/24", &a, &pfx), 0);
	assert_int_equal(a, 0x0a00020f);
	assert_int_equal(pfx, 24);
	assert_int_equal(cmdline_parse_ipv4("192.168.1.254", &a, &pfx), 0);
	assert_int_equal(a, 0xc0a801fe);
	assert_int_equal(pfx, -1);
	assert_int_equal(cmdline_parse_ipv4("0.0.0.0/0", &a, &pfx), 0);
	assert_int_equal(a, 0);
	assert_int_equal(pfx, 0);
	assert_int_equal(cmdline_parse_ipv4("255.255.255.255/32", &a, NULL), -EINVAL);	/* no prefix wanted */
	assert_int_equal(cmdline_parse_ipv4("255.255.255.255", &a, NULL), 0);
	assert_int_equal(a, 0xffffffff);
	a = 7;
	pfx = 9;
	static const char *const bad[] = {
		"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "1.2.3.4/33", "1.2.3.4/", "01.2.3.4",
		"1..2.3", "1.2.3.4 ", "a.b.c.d", "1.2.3.-4", "1.2.3.4/024", "1234.1.1.1", ".1.2.3",
		"1.2.3.4/8/8", "1.2.3.0x4",
	};
	for (unsigned i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(cmdline_parse_ipv4(bad[i], &a, &pfx), -EINVAL);
		assert_int_equal(a, 7);
		assert_int_equal(pfx, 9);
	}
	assert_int_equal(cmdline_parse_ipv4(NULL, &a, &pfx), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_empty_and_spaces, reset),
		cmocka_unit_test_setup(test_bool_forms, reset),
		cmocka_unit_test_setup(test_uint, reset),
		cmocka_unit_test_setup(test_hex, reset),
		cmocka_unit_test_setup(test_enum, reset),
		cmocka_unit_test_setup(test_str, reset),
		cmocka_unit_test_setup(test_custom, reset),
		cmocka_unit_test_setup(test_unknown_and_bare, reset),
		cmocka_unit_test_setup(test_repeated_last_valid_wins, reset),
		cmocka_unit_test_setup(test_unterminated_quote, reset),
		cmocka_unit_test_setup(test_control_bytes_not_logged, reset),
		cmocka_unit_test_setup(test_long_values_quoted_briefly, reset),
		cmocka_unit_test_setup(test_no_warn_callback, reset),
		cmocka_unit_test_setup(test_over_long_unterminated, reset),
		cmocka_unit_test_setup(test_over_long_boundary_on_space, reset),
		cmocka_unit_test_setup(test_exactly_max_minus_one, reset),
		cmocka_unit_test(test_parse_ipv4),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
