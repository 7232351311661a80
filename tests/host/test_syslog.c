/* net/syslog_msg.c: RFC 5424 framing of console lines, severities, the
 * console's stamp removed, control bytes and the size bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/syslog_msg.h"

static size_t fmt(char *out, size_t size, int sev, const char *ts, const char *host, const char *msg)
{
	size_t n = syslog_msg_format(out, size, sev, ts, host, msg, strlen(msg));

	if (n < size)
		out[n] = '\0';
	return n;
}

static void test_format(void **state)
{
	char out[128];
	size_t n = fmt(out, sizeof out, SYSLOG_SEV_INFO, "2026-12-04T20:40:58.195Z", "10.77.0.2",
		       "vireo: ready ip=10.77.0.2 http=80");

	assert_int_equal(n, strlen(out));
	assert_string_equal(out, "<14>1 2026-12-04T20:40:58.195Z 10.77.0.2 vireo - - - vireo: ready ip=10.77.0.2 http=80");
	fmt(out, sizeof out, SYSLOG_SEV_WARNING, NULL, "", "warning: x");
	assert_string_equal(out, "<12>1 - - vireo - - - warning: x");
	fmt(out, sizeof out, SYSLOG_SEV_CRIT, "", NULL, "a\tb\x1b[2J\xff");
	assert_string_equal(out, "<10>1 - - vireo - - - a?b?[2J?");
}

static void test_bounds(void **state)
{
	char out[40];
	char msg[100];

	memset(msg, 'm', sizeof msg);
	memset(out, 0x55, sizeof out);
	/* cut to fit, nothing written past size */
	assert_int_equal(syslog_msg_format(out, 32, SYSLOG_SEV_INFO, NULL, NULL, msg, sizeof msg), 32);
	assert_memory_equal(out, "<14>1 - - vireo - - - mmmmmmmmmm", 32);
	assert_int_equal((unsigned char)out[32], 0x55);
	/* a header that does not fit: nothing */
	assert_int_equal(syslog_msg_format(out, 10, SYSLOG_SEV_INFO, NULL, NULL, msg, 1), 0);
	assert_int_equal(syslog_msg_format(out, 22, SYSLOG_SEV_INFO, NULL, NULL, msg, 1), 0);
	assert_int_equal(syslog_msg_format(out, 23, SYSLOG_SEV_INFO, NULL, NULL, msg, 1), 23);
}

static void test_severity_and_stamp(void **state)
{
	static const char stamped[] = "[2026-12-04T20:40:58.195Z] warning: ntp: x";

	assert_int_equal(syslog_msg_severity("vireo: panic: boom", 18), SYSLOG_SEV_CRIT);
	assert_int_equal(syslog_msg_severity("warning: cmdline: x", 19), SYSLOG_SEV_WARNING);
	assert_int_equal(syslog_msg_severity("warning", 7), SYSLOG_SEV_INFO);	/* no colon */
	assert_int_equal(syslog_msg_severity("net: up", 7), SYSLOG_SEV_INFO);
	assert_int_equal(syslog_msg_severity("", 0), SYSLOG_SEV_INFO);
	assert_int_equal(syslog_msg_unstamp(stamped, strlen(stamped)), 27);
	assert_int_equal(syslog_msg_severity(stamped + 27, strlen(stamped) - 27), SYSLOG_SEV_WARNING);
	assert_int_equal(syslog_msg_unstamp(stamped, 26), 0);
	assert_int_equal(syslog_msg_unstamp("[not a stamp at all, really] x", 30), 0);
	assert_int_equal(syslog_msg_unstamp("net: up", 7), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_severity_and_stamp),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
