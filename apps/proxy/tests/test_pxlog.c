/* apps/proxy/pxlog.c: the access log line. The combined format with the
 * upstream; absent fields as "-"; the time from known dates (leap days,
 * centuries); every client-chosen byte that could end a field or a line
 * ('"', '\', CR, LF, other controls, DEL, high bytes) escaped, so a
 * request cannot forge a line or a field; caps cut before an escape, never
 * inside; the longest line fits PX_LOG_LINE. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apps/proxy/pxlog.h"

static void test_time(void **state)
{
	char t[27];

	(void)state;
	px_log_time(0, t);
	assert_string_equal(t, "01/Jan/1970:00:00:00 +0000");
	px_log_time(951868799, t);
	assert_string_equal(t, "29/Feb/2000:23:59:59 +0000");
	px_log_time(946684799, t);
	assert_string_equal(t, "31/Dec/1999:23:59:59 +0000");
	px_log_time(1796620190, t);
	assert_string_equal(t, "07/Dec/2026:05:09:50 +0000");
	px_log_time(4107585600, t);
	assert_string_equal(t, "01/Mar/2100:12:00:00 +0000");	/* 2100 is not a leap year */
	assert_int_equal(strlen(t), 26);
}

static void test_line(void **state)
{
	char out[PX_LOG_LINE];
	struct px_log_entry e = {
		.addr = "192.0.2.7", .have_time = true, .unix_s = 1796620190, .method = "GET", .target = "/a/b?c=1",
		.version = "HTTP/1.1", .status = 200, .bytes = 612, .referer = "http://x/", .agent = "curl/7.88.1",
		.upstream = "10.77.0.1:8081", .upstream_ms = 3,
	};
	size_t n;

	(void)state;
	n = px_log_format(&e, out);
	assert_int_equal(n, strlen(out));
	assert_string_equal(out, "192.0.2.7 - - [07/Dec/2026:05:09:50 +0000] \"GET /a/b?c=1 HTTP/1.1\" 200 612 "
				 "\"http://x/\" \"curl/7.88.1\" upstream=10.77.0.1:8081 upstream_ms=3");
	/* absent parts */
	e = (struct px_log_entry){ .method = "POST", .target = "/", .status = 503, .upstream_ms = -1 };
	px_log_format(&e, out);
	assert_string_equal(out, "- - - [-] \"POST /\" 503 0 \"-\" \"-\" upstream=- upstream_ms=-");
	e.addr = "2001:db8::1";
	e.bytes = UINT64_MAX;
	e.status = 42;	/* never: shown as 0 */
	px_log_format(&e, out);
	assert_string_equal(out, "2001:db8::1 - - [-] \"POST /\" 0 18446744073709551615 \"-\" \"-\" upstream=- upstream_ms=-");
}

static void test_escape(void **state)
{
	char out[PX_LOG_LINE], small[8];
	struct px_log_entry e = {
		.addr = "192.0.2.7", .method = "GET", .target = "/x\" 200 1 \"-\" \"-\"\r\nforged",
		.version = "HTTP/1.1", .status = 200, .referer = "a\\\"b", .agent = "\x01\x1f\x7f\xff\xc3\xa9\t",
		.upstream_ms = -1,
	};

	(void)state;
	px_log_format(&e, out);
	assert_string_equal(out, "192.0.2.7 - - [-] \"GET /x\\\" 200 1 \\\"-\\\" \\\"-\\\"\\x0d\\x0aforged HTTP/1.1\" 200 0 "
				 "\"a\\\\\\\"b\" \"\\x01\\x1f\\x7f\\xff\\xc3\\xa9\\x09\" upstream=- upstream_ms=-");
	/* no byte below 0x20 or over 0x7e; quotes only the format's own six */
	{
		unsigned quotes = 0;

		for (const char *p = out; *p; p++) {
			assert_true(*p >= 0x20 && *p < 0x7f);
			quotes += *p == '"' && p[-1] != '\\';
		}
		assert_int_equal(quotes, 6);
	}
	/* caps cut before an escape, never inside one */
	assert_int_equal(px_log_escape("abcdef\"", small, sizeof small), 6);
	assert_string_equal(small, "abcdef");
	assert_int_equal(px_log_escape("abcd\n", small, sizeof small), 4);
	assert_string_equal(small, "abcd");
	assert_int_equal(px_log_escape("abc\n", small, sizeof small), 7);
	assert_string_equal(small, "abc\\x0a");
	assert_int_equal(px_log_escape("abc", small, 0), 0);
	assert_int_equal(px_log_escape("abc", small, 1), 0);
	assert_string_equal(small, "");
}

static void test_longest(void **state)
{
	static char big[4096];
	char out[PX_LOG_LINE + 16];
	struct px_log_entry e;
	size_t n;

	(void)state;
	memset(big, '\n', sizeof big - 1);	/* every byte escaped: 4 each */
	memset(out, 'Z', sizeof out);
	e = (struct px_log_entry){ .addr = "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", .have_time = true,
				   .unix_s = 253402300799ull, .method = big, .target = big, .version = big,
				   .status = 999, .bytes = UINT64_MAX, .referer = big, .agent = big, .upstream = big,
				   .upstream_ms = INT64_MAX };
	n = px_log_format(&e, out);
	assert_int_equal(n, strlen(out));
	assert_true(n < PX_LOG_LINE);
	assert_int_equal(out[PX_LOG_LINE], 'Z');
	assert_non_null(strstr(out, "[31/Dec/9999:23:59:59 +0000]"));
	assert_non_null(strstr(out, " upstream_ms=9223372036854775807"));
	assert_null(strchr(out, '\n'));
	/* each field at its cap: whole escapes only */
	assert_non_null(strstr(out, "\" 999 18446744073709551615 \""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_line),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_longest),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
