/* kernel/time/wallclock.c's civil dates and formats, and net/clients/sntp_msg.c's
 * request and reply checks (every refusal, the era, the delay). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/time/wallclock.h"
#include "net/clients/sntp_msg.h"
#include "tests/host/shim/hostk.h"

static void test_http_dates(void **state)
{
	static const struct {
		u64 s;
		const char *want;
	} t[] = {
		{ 0, "Thu, 01 Jan 1970 00:00:00 GMT" },
		{ 784111777, "Sun, 06 Nov 1994 08:49:37 GMT" },	/* RFC 9110's example */
		{ 951782400, "Tue, 29 Feb 2000 00:00:00 GMT" },	/* a leap day of a 400-year */
		{ 951868800, "Wed, 01 Mar 2000 00:00:00 GMT" },
		{ 1709164800, "Thu, 29 Feb 2024 00:00:00 GMT" },
		{ 1735689599, "Tue, 31 Dec 2024 23:59:59 GMT" },
		{ 2085978495, "Thu, 07 Feb 2036 06:28:15 GMT" },	/* NTP era 0's last second */
		{ 4107542400, "Mon, 01 Mar 2100 00:00:00 GMT" },	/* 2100 is not a leap year */
		{ 4291747199, "Thu, 31 Dec 2105 23:59:59 GMT" },
	};
	char buf[40];

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		assert_int_equal(wallclock_http_date(t[i].s, buf, sizeof buf), 29);
		assert_string_equal(buf, t[i].want);
	}
	assert_int_equal(wallclock_http_date(0, buf, 29), 0);	/* no room for the NUL */
	assert_int_equal(wallclock_http_date(0, buf, 30), 29);
}

/* If-Modified-Since's dates: IMF-fixdate only, every field checked. */
static void test_parse_http_date(void **state)
{
	static const char *const bad[] = {
		"", "Sun, 06 Nov 1994 08:49:37 GM", "Sun, 06 Nov 1994 08:49:37 GMTX", "Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994", "Sun, 6 Nov 1994 08:49:37 GMT ", "Xyz, 06 Nov 1994 08:49:37 GMT",
		"Sun, 06 Now 1994 08:49:37 GMT", "Sun, 31 Apr 2026 08:49:37 GMT", "Sun, 29 Feb 2026 08:49:37 GMT",
		"Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:60:37 GMT",
		"Sun, 06 Nov 1994 08:49:60 GMT", "Sun, 0x Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 00 Nov 1994 08:49:37 GMT", "Sun; 06 Nov 1994 08:49:37 GMT",
	};
	char buf[40];
	u64 t = 12345;

	assert_true(wallclock_parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT", &t));
	assert_int_equal(t, 784111777);
	assert_true(wallclock_parse_http_date("Thu, 29 Feb 2024 23:59:59 GMT", &t));
	assert_int_equal(t, 1709251199);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		t = 7;
		if (wallclock_parse_http_date(bad[i], &t) || t != 7)
			fail_msg("accepted '%s'", bad[i]);
	}
	/* what wallclock_http_date writes reads back */
	for (u64 s = 86400; s < 4102444800ULL; s += 86400 * 37 + 3671) {
		assert_int_equal(wallclock_http_date(s, buf, sizeof buf), 29);
		assert_true(wallclock_parse_http_date(buf, &t));
		assert_int_equal(t, s);
	}
	assert_int_equal(wallclock_from_civil(1970, 1, 1, 0, 0, 0), 0);	/* the epoch itself reads as "none" */
	assert_int_equal(wallclock_from_civil(2026, 13, 1, 0, 0, 0), 0);
	assert_int_equal(wallclock_from_civil(10000, 1, 1, 0, 0, 0), 0);
}

/* Every day from 1970 to 2106 against a day-by-day count. */
static void test_civil_walk(void **state)
{
	static const u32 mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	u32 y = 1970, m = 1, d = 1, wday = 4;

	for (u64 day = 0; day < 50000; day++) {
		struct civil_time c;
		u32 len = mdays[m - 1] + (m == 2 && (y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)));

		wallclock_civil(day * 86400 + 3661, &c);
		/* and back: from_civil inverts civil on every day */
		if (wallclock_from_civil(y, m, d, 1, 1, 1) != day * 86400 + 3661)
			fail_msg("day %llu: from_civil(%u-%u-%u) is %llu", (unsigned long long)day, y, m, d,
				 (unsigned long long)wallclock_from_civil(y, m, d, 1, 1, 1));
		if (c.year != y || c.month != m || c.day != d || c.wday != wday || c.hour != 1 || c.min != 1 ||
		    c.sec != 1)
			fail_msg("day %llu: %u-%u-%u want %u-%u-%u", (unsigned long long)day, c.year, c.month, c.day, y,
				 m, d);
		wday = (wday + 1) % 7;
		if (++d > len) {
			d = 1;
			if (++m > 12) {
				m = 1;
				y++;
			}
		}
	}
}

static void test_iso_and_clock(void **state)
{
	char buf[40];
	u64 now;

	assert_int_equal(wallclock_iso(1733344691123456789ULL, buf, sizeof buf), 24);
	assert_string_equal(buf, "2024-12-04T20:38:11.123Z");
	wallclock_reset();
	assert_false(wallclock_now(&now));
	assert_int_equal(wallclock_stamp(buf, sizeof buf), 0);
	assert_int_equal(wallclock_http_now(buf, sizeof buf), 0);
	assert_int_equal(wallclock_set(1000000000ULL * 1000000000ULL, hk_now()), -ERANGE);	/* 2001 */
	assert_int_equal(wallclock_set((WALLCLOCK_MAX_S + 1) * 1000000000ULL, hk_now()), -ERANGE);
	assert_int_equal(wallclock_set(1733344691000000000ULL, hk_now()), 0);
	assert_true(wallclock_now(&now));
	assert_int_equal(now, 1733344691000000000ULL);
	hk_clock_advance_ms(1500);
	assert_true(wallclock_now(&now));
	assert_int_equal(now, 1733344692500000000ULL);
	assert_int_equal(wallclock_stamp(buf, sizeof buf), 27);
	assert_string_equal(buf, "[2024-12-04T20:38:12.500Z] ");
	assert_int_equal(wallclock_http_now(buf, sizeof buf), 29);
	assert_string_equal(buf, "Wed, 04 Dec 2024 20:38:12 GMT");
	assert_int_equal(wallclock_http_now(buf, 29), 0);
	wallclock_reset();
}

/* ---- SNTP ---- */

#define NONCE 0x0123456789abcdefULL
#define NTP(unix_s) (((u64)(unix_s) + SNTP_UNIX_OFFSET) << 32)

static void put64(u8 *p, u64 v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (u8)(v >> (56 - 8 * i));
}

static void reply(u8 *m, u64 rx, u64 tx)
{
	memset(m, 0, SNTP_MSG_LEN);
	m[0] = 0 << 6 | 4 << 3 | 4;
	m[1] = 2;
	put64(m + 24, NONCE);
	put64(m + 32, rx);
	put64(m + 40, tx);
}

static void test_request(void **state)
{
	u8 m[SNTP_MSG_LEN];

	memset(m, 0xee, sizeof m);
	sntp_msg_request(m, NONCE);
	assert_int_equal(m[0], 0x23);	/* LI 0, VN 4, mode 3 */
	for (int i = 1; i < 40; i++)
		assert_int_equal(m[i], 0);
	assert_int_equal(m[40], 0x01);
	assert_int_equal(m[47], 0xef);
}

static void test_era(void **state)
{
	assert_int_equal(sntp_msg_to_unix_ns(NTP(1733344691)), 1733344691000000000ULL);
	assert_int_equal(sntp_msg_to_unix_ns(NTP(1733344691) | 0x80000000ULL), 1733344691500000000ULL);
	/* 2036-02-07T06:28:16Z is NTP second 2^32, i.e. 0 of era 1 */
	assert_int_equal(sntp_msg_to_unix_ns(0x0000000100000000ULL), (2085978496ULL + 1) * 1000000000ULL);
	assert_int_equal(sntp_msg_to_unix_ns(0), 2085978496ULL * 1000000000ULL);
}

static void test_good_reply_and_delay(void **state)
{
	u8 m[SNTP_MSG_LEN + 20];
	struct sntp_reply r;
	char why[64];

	reply(m, NTP(1733344691), NTP(1733344691) + (1ULL << 31));	/* held 0.5 s */
	assert_int_equal(sntp_msg_check(m, SNTP_MSG_LEN, NONCE, &r, why, sizeof why), 0);
	assert_int_equal(r.stratum, 2);
	assert_int_equal(r.rx_ns, 1733344691000000000ULL);
	assert_int_equal(r.tx_ns, 1733344691500000000ULL);
	/* round trip 0.7 s, 0.5 s of it at the server: 0.1 s each way */
	assert_int_equal(sntp_msg_time_at(&r, 1000000000ULL, 1700000000ULL), 1733344691600000000ULL);
	/* a round trip shorter than the server says it held it: no delay */
	assert_int_equal(sntp_msg_time_at(&r, 1000000000ULL, 1100000000ULL), 1733344691500000000ULL);
	assert_int_equal(sntp_msg_time_at(&r, 5, 1), 1733344691500000000ULL);
	/* longer (extension fields, a MAC): only the header is read */
	assert_int_equal(sntp_msg_check(m, sizeof m, NONCE, &r, why, sizeof why), 0);
	m[0] = 0 << 6 | 3 << 3 | 4;	/* NTPv3 */
	assert_int_equal(sntp_msg_check(m, SNTP_MSG_LEN, NONCE, &r, why, sizeof why), 0);
}

static void expect_refused(const u8 *m, size_t len, const char *want)
{
	struct sntp_reply r;
	char why[64];

	if (sntp_msg_check(m, len, NONCE, &r, why, sizeof why) != -EINVAL)
		fail_msg("accepted, want refused: %s", want);
	assert_string_equal(why, want);
}

static void test_refusals(void **state)
{
	u8 m[SNTP_MSG_LEN];

	reply(m, NTP(1733344691), NTP(1733344691));
	expect_refused(m, SNTP_MSG_LEN - 1, "shorter than 48 bytes");
	m[0] = 0x23;	/* a client request reflected back */
	expect_refused(m, SNTP_MSG_LEN, "not a server reply (mode)");
	m[0] = 0 << 6 | 2 << 3 | 4;
	expect_refused(m, SNTP_MSG_LEN, "version not 3 or 4");
	m[0] = 3 << 6 | 4 << 3 | 4;
	expect_refused(m, SNTP_MSG_LEN, "server not synchronised (leap indicator 3)");
	m[0] = 0x24;
	put64(m + 24, NONCE + 1);
	expect_refused(m, SNTP_MSG_LEN, "not an answer to our request (originate)");
	put64(m + 24, NONCE);
	m[1] = 0;
	memcpy(m + 12, "RATE", 4);
	expect_refused(m, SNTP_MSG_LEN, "kiss-o'-death RATE");
	memcpy(m + 12, "\x01\xffZ\n", 4);
	expect_refused(m, SNTP_MSG_LEN, "kiss-o'-death ??Z?");
	m[1] = 16;
	expect_refused(m, SNTP_MSG_LEN, "stratum over 15");
	m[1] = 1;
	put64(m + 32, 0);
	expect_refused(m, SNTP_MSG_LEN, "no receive or transmit time");
	reply(m, NTP(1733344691) + (1ULL << 31), NTP(1733344691));
	expect_refused(m, SNTP_MSG_LEN, "transmit before receive");
	reply(m, NTP(1600000000), NTP(1600000000));	/* 2020 */
	expect_refused(m, SNTP_MSG_LEN, "time outside 2024..2105");
	reply(m, NTP(1704067199), NTP(1704067200));	/* receive in 2023 */
	expect_refused(m, SNTP_MSG_LEN, "time outside 2024..2105");
	reply(m, NTP(1704067200), 0x7fffffff00000000ULL);	/* era 1's last: 2104, fine */
	assert_int_equal(sntp_msg_check(m, SNTP_MSG_LEN, NONCE, &(struct sntp_reply){ 0 }, (char[64]){ 0 }, 64), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_dates),
		cmocka_unit_test(test_civil_walk),
		cmocka_unit_test(test_parse_http_date),
		cmocka_unit_test(test_iso_and_clock),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_era),
		cmocka_unit_test(test_good_reply_and_delay),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
