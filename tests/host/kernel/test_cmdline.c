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

/* ---- the file form (cmdline_parse_file) ---- */

static const struct cmdline_opt *opt_set[sizeof opts / sizeof opts[0]];

struct setlog {
	int n;
	char where[8][64];
	char key[8][16];
	char val[8][64];
};
static struct setlog sl;

static void on_set(void *ctx, const char *where, const struct cmdline_opt *o, const char *val)
{
	struct setlog *l = ctx == &w ? &sl : ctx;

	if (l->n < 8) {
		snprintf(l->where[l->n], sizeof l->where[0], "%s", where);
		snprintf(l->key[l->n], sizeof l->key[0], "%s", o->key);
		snprintf(l->val[l->n], sizeof l->val[0], "%s", val);
	}
	l->n++;
}

static int file_warn_max;
static int (*file_kept)(void *ctx, const struct cmdline_opt *o, char *buf, size_t size);

/* Parses buf[0..len) from an exactly-sized heap copy (no NUL behind it, so
 * ASan sees any read past len). Returns this call's warning count. */
static int parse_file(const char *buf, size_t len)
{
	char *copy = malloc(len ? len : 1);
	struct cmdline_source src = { .name = "f.cfg", .warn = collect, .set = on_set, .kept = file_kept,
				      .ctx = &w, .max_warn = file_warn_max };
	int before = w.n, ret;

	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
		opt_set[i] = &opts[i];
	memcpy(copy, buf, len);
	ret = cmdline_parse_file(copy, len, opt_set, sizeof opts / sizeof opts[0], &src);
	free(copy);
	if (!file_warn_max)
		assert_int_equal(ret, w.n - before);
	return ret;
}

#define PARSE_FILE(lit) parse_file(lit, sizeof(lit) - 1)

static int reset_file(void **state)
{
	memset(&sl, 0, sizeof sl);
	file_warn_max = 0;
	file_kept = NULL;
	return reset(state);
}

/* Comments, blank lines, blanks around '=', CRLF, quotes, a bare switch
 * and a last line without '\n'. */
static void test_file_forms(void **state)
{
	assert_int_equal(PARSE_FILE("# a comment\n\n   \t\n  mem = 128 \r\nname=\"a b\"\n"
				    "quiet\n#port=1\nlog=debug\t\nport=8080"), 0);
	assert_int_equal(mem, 128);
	assert_string_equal(name, "a b");
	assert_true(quiet);
	assert_int_equal(level, 3);
	assert_int_equal(port, 8080);
	assert_int_equal(sl.n, 5);
	assert_string_equal(sl.where[0], "f.cfg line 4");
	assert_string_equal(sl.key[0], "mem");
	assert_string_equal(sl.val[0], "128");
	assert_string_equal(sl.val[1], "a b");
	assert_string_equal(sl.where[4], "f.cfg line 9");
	assert_string_equal(sl.val[4], "8080");
}

static void test_file_empty(void **state)
{
	assert_int_equal(parse_file("", 0), 0);
	assert_int_equal(PARSE_FILE("\n\n\n"), 0);
	assert_int_equal(cmdline_parse_file(NULL, 5, opt_set, 0, &(struct cmdline_source){ .name = "x" }), 0);
	assert_int_equal(mem, 64);
	assert_int_equal(sl.n, 0);
}

/* The bad lines name the file and the line; the good ones still apply. */
static void test_file_bad_lines(void **state)
{
	assert_int_equal(PARSE_FILE("bogus=1\nmem=12\n=5\nnomsi=2\nname\nport=81\n"), 5);
	assert_string_equal(w.msg[0], "f.cfg line 1: unknown key 'bogus' ignored");
	assert_string_equal(w.msg[1], "f.cfg line 2: mem=12: expected 16..4096, keeping default");
	assert_string_equal(w.msg[2], "f.cfg line 3: '=5' has no key, ignored");
	assert_string_equal(w.msg[3], "f.cfg line 4: nomsi=2: expected 1|0|on|off|yes|no|true|false, keeping default");
	assert_string_equal(w.msg[4], "f.cfg line 5: 'name' is not key=value");
	assert_int_equal(mem, 64);
	assert_int_equal(port, 81);
}

/* A NUL inside a line drops that line only, and the NUL never ends the file. */
static void test_file_nul(void **state)
{
	assert_int_equal(PARSE_FILE("mem=100\0junk\nport=81\n\0\nname=x"), 2);
	assert_string_equal(w.msg[0], "f.cfg line 1: a NUL byte in the line, ignored");
	assert_string_equal(w.msg[1], "f.cfg line 3: a NUL byte in the line, ignored");
	assert_int_equal(mem, 64);
	assert_int_equal(port, 81);
	assert_string_equal(name, "x");
}

static void test_file_not_ascii(void **state)
{
	assert_int_equal(PARSE_FILE("name=\xc3\xa9t\xc3\xa9\npath=/a\x1b[2J\nport=82\x7f\nmem=100\nname=a\tb\n"
				    "name=a\rb\nlog = \t error\t\r\n"), 5);
	assert_string_equal(w.msg[0], "f.cfg line 1: byte 0xc3 is not printable ASCII, line ignored");
	assert_string_equal(w.msg[1], "f.cfg line 2: byte 0x1b is not printable ASCII, line ignored");
	assert_string_equal(w.msg[2], "f.cfg line 3: byte 0x7f is not printable ASCII, line ignored");
	assert_string_equal(w.msg[3], "f.cfg line 5: byte 0x09 is not printable ASCII, line ignored");
	assert_string_equal(w.msg[4], "f.cfg line 6: byte 0x0d is not printable ASCII, line ignored");
	assert_int_equal(level, 0);	/* tabs and a CR around the setting are blanks */
	assert_string_equal(name, "dflt");
	assert_string_equal(path, "/");
	assert_int_equal(port, 80);
	assert_int_equal(mem, 100);
}

/* CMDLINE_MAX - 1 characters is a line; one more is refused whole, and
 * the next line still parses. */
static void test_file_long_lines(void **state)
{
	size_t len = 3 * CMDLINE_MAX + 64;
	char *buf = malloc(len);
	size_t o = 0;

	/* a comment of exactly CMDLINE_MAX - 1 characters: fine */
	buf[o++] = '#';
	memset(buf + o, 'c', CMDLINE_MAX - 2);
	o += CMDLINE_MAX - 2;
	buf[o++] = '\n';
	/* a setting of CMDLINE_MAX characters: refused */
	memcpy(buf + o, "path=", 5);
	memset(buf + o + 5, 'p', CMDLINE_MAX - 5);
	o += CMDLINE_MAX;
	buf[o++] = '\n';
	memcpy(buf + o, "mem=256\n", 8);
	o += 8;
	/* a last line far over, without '\n' */
	memset(buf + o, 'z', len - o);
	assert_int_equal(parse_file(buf, len), 2);
	assert_string_equal(w.msg[0], "f.cfg line 2: longer than 1023 characters, ignored");
	assert_string_equal(w.msg[1], "f.cfg line 4: longer than 1023 characters, ignored");
	assert_string_equal(path, "/");
	assert_int_equal(mem, 256);
	free(buf);
}

/* A key repeated: each valid line applies in turn, the last one wins; the
 * set hook hears every one (kernel/config.c warns about the repeat). */
static void test_file_duplicates(void **state)
{
	assert_int_equal(PARSE_FILE("port=1\nport=2\nport=x\n"), 1);
	assert_int_equal(port, 2);
	assert_int_equal(sl.n, 2);
	assert_string_equal(sl.where[1], "f.cfg line 2");
}

/* A flood of bad lines: max_warn reach the log, then one count. */
static void test_file_warning_bound(void **state)
{
	char buf[40 * 8];
	size_t o = 0;

	for (int i = 0; i < 40; i++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "x%d=1\n", i % 10);
	file_warn_max = 5;
	assert_int_equal(parse_file(buf, o), 40);
	assert_int_equal(w.n, 6);
	assert_string_equal(w.msg[4], "f.cfg line 5: unknown key 'x4' ignored");
	assert_string_equal(w.msg[5], "f.cfg: 35 more warnings not shown");
}

static int kept_from_earlier(void *ctx, const struct cmdline_opt *o, char *buf, size_t size)
{
	(void)ctx;
	if (strcmp(o->key, "mem"))
		return 0;
	return snprintf(buf, size, "%s from an earlier source", "512");
}

/* A bad value keeps what the key holds: the kept hook says what. */
static void test_file_kept(void **state)
{
	file_kept = kept_from_earlier;
	assert_int_equal(PARSE_FILE("mem=1\nport=x\n"), 2);
	assert_string_equal(w.msg[0], "f.cfg line 1: mem=1: expected 16..4096, keeping 512 from an earlier source");
	assert_string_equal(w.msg[1], "f.cfg line 2: port=x: expected a decimal number, keeping default");
}

/* cmdline_parse_src: the source's name leads its warnings. */
static void test_src_name(void **state)
{
	struct cmdline_source src = { .name = "cmdline", .warn = collect, .set = on_set, .ctx = &w, .max_warn = 1 };

	for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
		opt_set[i] = &opts[i];
	assert_int_equal(cmdline_parse_src("mem=1 port=2 a=1 b=2", opt_set, sizeof opts / sizeof opts[0], &src), 3);
	assert_int_equal(port, 2);
	assert_int_equal(w.n, 2);
	assert_string_equal(w.msg[0], "cmdline: mem=1: expected 16..4096, keeping default");
	assert_string_equal(w.msg[1], "cmdline: 2 more warnings not shown");
	assert_int_equal(sl.n, 1);
	assert_string_equal(sl.where[0], "cmdline");
}

/* cmdline_redact: a secret key's value never reaches the log, in any of the
 * forms the parser accepts (plain, quoted value, quoted token, repeated), the
 * rest of the line is copied byte for byte, and the output is bounded. */
static void test_redact(void **state)
{
	static char token[24];
	static const struct cmdline_opt ropts[] = {
		{ .key = "port", .type = CMDLINE_UINT, .dst = &port },
		{ .key = "kv.token", .type = CMDLINE_STR, .dst = token, .dst_size = sizeof token, .secret = true },
	};
	const struct cmdline_opt *set[] = { &ropts[0], &ropts[1] };
	char out[64];

	(void)state;
	assert_int_equal(cmdline_redact("port=81  kv.token=s3cret\tquiet", set, 2, out, sizeof out), 27);
	assert_string_equal(out, "port=81  kv.token=...\tquiet");
	cmdline_redact("kv.token=\"a b\" kv.token=x \"kv.token=y z\" kv.tokenx=1", set, 2, out, sizeof out);
	assert_string_equal(out, "kv.token=... kv.token=... kv.token=... kv.tokenx=1");
	cmdline_redact("kv.to\"ken=q\"", set, 2, out, sizeof out);	/* quotes inside the key */
	assert_string_equal(out, "kv.token=...");
	cmdline_redact("kv.token", set, 2, out, sizeof out);	/* no value: nothing to hide */
	assert_string_equal(out, "kv.token");
	cmdline_redact("", set, 2, out, sizeof out);
	assert_string_equal(out, "");
	/* Cut to the buffer, NUL-terminated, never a secret's prefix. */
	assert_int_equal(cmdline_redact("port=1 kv.token=abcdefgh", set, 2, out, 12), 19);
	assert_string_equal(out, "port=1 kv.t");
	assert_int_equal(cmdline_redact("port=1", NULL, 0, out, sizeof out), 6);
	assert_string_equal(out, "port=1");
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
		cmocka_unit_test_setup(test_file_forms, reset_file),
		cmocka_unit_test_setup(test_file_empty, reset_file),
		cmocka_unit_test_setup(test_file_bad_lines, reset_file),
		cmocka_unit_test_setup(test_file_nul, reset_file),
		cmocka_unit_test_setup(test_file_not_ascii, reset_file),
		cmocka_unit_test_setup(test_file_long_lines, reset_file),
		cmocka_unit_test_setup(test_file_duplicates, reset_file),
		cmocka_unit_test_setup(test_file_warning_bound, reset_file),
		cmocka_unit_test_setup(test_file_kept, reset_file),
		cmocka_unit_test_setup(test_src_name, reset_file),
		cmocka_unit_test_setup(test_redact, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
