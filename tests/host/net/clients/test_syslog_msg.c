/* net/clients/syslog_msg.c: RFC 5424 framing of console lines, severities, the
 * console's stamp removed, control bytes and the size bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/clients/syslog_msg.h"

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

static unsigned sum16(const unsigned char *p, size_t len)
{
	unsigned long s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (unsigned)p[i] << 8 | p[i + 1];
	if (len & 1)
		s += (unsigned)p[len - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (unsigned)s;
}

static void test_frame(void **state)
{
	static const struct syslog_msg_link l = {
		.src_mac = { 0x52, 0x54, 0, 0x12, 0x34, 0x56 }, .dst_mac = { 2, 0, 0, 0, 0, 1 },
		.src_ip = 0x0a4d0002, .dst_ip = 0x0a4d0001, .src_port = 514, .dst_port = 5514,
	};
	unsigned char out[1600], pseudo[12 + 8 + 1500];
	const char *msg = "<10>1 - 10.77.0.2 vireo - - - vireo: panic: x";	/* odd length */
	size_t len = strlen(msg), n;

	memset(out, 0x55, sizeof out);
	n = syslog_msg_frame(out, sizeof out, &l, 0x1234, msg, len);
	assert_int_equal(n, 42 + len);
	assert_int_equal(out[n], 0x55);				/* nothing past the frame */
	assert_memory_equal(out, l.dst_mac, 6);
	assert_memory_equal(out + 6, l.src_mac, 6);
	assert_int_equal(out[12] << 8 | out[13], 0x0800);
	assert_int_equal(out[14], 0x45);
	assert_int_equal(out[16] << 8 | out[17], 28 + len);	/* IP total length */
	assert_int_equal(out[18] << 8 | out[19], 0x1234);
	assert_int_equal(out[23], 17);
	assert_memory_equal(out + 26, "\x0a\x4d\x00\x02\x0a\x4d\x00\x01", 8);
	assert_int_equal(sum16(out + 14, 20), 0xffff);		/* IP header checksum */
	assert_int_equal(out[34] << 8 | out[35], 514);
	assert_int_equal(out[36] << 8 | out[37], 5514);
	assert_int_equal(out[38] << 8 | out[39], 8 + len);
	assert_memory_equal(out + 42, msg, len);
	/* UDP checksum over the pseudo header and the datagram */
	memcpy(pseudo, out + 26, 8);
	pseudo[8] = 0;
	pseudo[9] = 17;
	pseudo[10] = (unsigned char)((8 + len) >> 8);
	pseudo[11] = (unsigned char)(8 + len);
	memcpy(pseudo + 12, out + 34, 8 + len);
	assert_int_equal(sum16(pseudo, 12 + 8 + len), 0xffff);
	assert_int_not_equal(out[40] << 8 | out[41], 0);

	/* bounds: the buffer, then the 1500-byte IP packet */
	assert_int_equal(syslog_msg_frame(out, 42 + len - 1, &l, 1, msg, len), 0);
	assert_int_equal(syslog_msg_frame(out, 41, &l, 1, msg, 0), 0);
	assert_int_equal(syslog_msg_frame(out, 42, &l, 1, msg, 0), 42);
	memset(pseudo, 'x', sizeof pseudo);
	assert_int_equal(syslog_msg_frame(out, sizeof out, &l, 1, pseudo, 1472), 14 + 1500);
	assert_int_equal(syslog_msg_frame(out, sizeof out, &l, 1, pseudo, 1473), 0);
	assert_int_equal(syslog_msg_frame(out, sizeof out, &l, 1, pseudo, (size_t)-1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_severity_and_stamp),
		cmocka_unit_test(test_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
