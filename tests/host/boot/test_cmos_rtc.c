/* boot/cmos_rtc.c: the CMOS RTC's registers to Unix seconds, in each of
 * the clock's modes (BCD or binary, 24- or 12-hour), against glibc's
 * timegm() over random times 1970-2099, and every way a register can be
 * out of range. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "boot/cmos_rtc.h"

static u8 bcd(unsigned v)
{
	return (u8)((v / 10) << 4 | v % 10);
}

/* The registers for tm in the mode b (CMOS_B), with century register c
 * (0: none, i.e. left 0). */
static void regs(u8 r[CMOS_NREGS], const struct tm *tm, u8 b, bool century)
{
	bool bin = b & CMOS_B_BINARY;
	unsigned h = (unsigned)tm->tm_hour;
	u8 hour;

	memset(r, 0, CMOS_NREGS);
	r[CMOS_B] = b;
	r[CMOS_SEC] = bin ? (u8)tm->tm_sec : bcd((unsigned)tm->tm_sec);
	r[CMOS_MIN] = bin ? (u8)tm->tm_min : bcd((unsigned)tm->tm_min);
	if (b & CMOS_B_24H) {
		hour = bin ? (u8)h : bcd(h);
	} else {
		unsigned h12 = h % 12 ? h % 12 : 12;

		hour = (u8)((bin ? h12 : bcd(h12)) | (h >= 12 ? 0x80 : 0));
	}
	r[CMOS_HOUR] = hour;
	r[CMOS_MDAY] = bin ? (u8)tm->tm_mday : bcd((unsigned)tm->tm_mday);
	r[CMOS_MON] = bin ? (u8)(tm->tm_mon + 1) : bcd((unsigned)tm->tm_mon + 1);
	r[CMOS_YEAR] = bin ? (u8)((tm->tm_year + 1900) % 100) : bcd((unsigned)(tm->tm_year + 1900) % 100);
	if (century)
		r[CMOS_CENTURY] = bin ? (u8)((tm->tm_year + 1900) / 100) : bcd((unsigned)(tm->tm_year + 1900) / 100);
}

static void test_every_mode_against_timegm(void **state)
{
	static const u8 modes[] = { CMOS_B_24H, 0, CMOS_B_24H | CMOS_B_BINARY, CMOS_B_BINARY };
	u8 r[CMOS_NREGS];

	(void)state;
	srand(31);
	for (int i = 0; i < 200000; i++) {
		/* 1970..2099 with the century register, 2000..2099 without */
		time_t t = (time_t)((u64)rand() * 65536 + (u64)(rand() & 0xffff)) % (time_t)4102444800;
		struct tm tm;
		bool century = i & 1;

		if (!century && t < 946684800)
			t += 946684800;
		gmtime_r(&t, &tm);
		regs(r, &tm, modes[i % 4], century);
		assert_int_equal(cmos_rtc_decode(r), (u64)t);
	}
}

static void test_known_instants(void **state)
{
	/* 2026-12-07 05:10:59 UTC, BCD, 24-hour, QEMU's layout (century 0x20) */
	u8 r[CMOS_NREGS] = { 0 };

	(void)state;
	r[CMOS_SEC] = 0x59, r[CMOS_MIN] = 0x10, r[CMOS_HOUR] = 0x05, r[CMOS_MDAY] = 0x07;
	r[CMOS_MON] = 0x12, r[CMOS_YEAR] = 0x26, r[CMOS_B] = CMOS_B_24H, r[CMOS_CENTURY] = 0x20;
	assert_int_equal(cmos_rtc_decode(r), 1796620259);
	/* 12-hour: 12 AM is 00, 12 PM is 12 */
	r[CMOS_B] = 0;
	r[CMOS_HOUR] = 0x12;
	assert_int_equal(cmos_rtc_decode(r), 1796620259 - 5 * 3600);
	r[CMOS_HOUR] = 0x92;
	assert_int_equal(cmos_rtc_decode(r), 1796620259 + 7 * 3600);
	/* a century register that is no century: 2000 + year */
	r[CMOS_B] = CMOS_B_24H;
	r[CMOS_HOUR] = 0x05;
	r[CMOS_CENTURY] = 0x00;
	assert_int_equal(cmos_rtc_decode(r), 1796620259);
	r[CMOS_CENTURY] = 0x99;
	assert_int_equal(cmos_rtc_decode(r), 1796620259);
}

static void test_bad_registers_are_no_clock(void **state)
{
	u8 good[CMOS_NREGS] = { 0 }, r[CMOS_NREGS];
	static const struct { u8 reg, v, b; } bad[] = {
		{ CMOS_SEC, 0x60, CMOS_B_24H }, { CMOS_SEC, 0x0a, CMOS_B_24H }, { CMOS_SEC, 0xa0, CMOS_B_24H },
		{ CMOS_MIN, 0x60, CMOS_B_24H }, { CMOS_HOUR, 0x24, CMOS_B_24H }, { CMOS_HOUR, 0x00, 0 },
		{ CMOS_HOUR, 0x13, 0 }, { CMOS_HOUR, 0x80, 0 }, { CMOS_MDAY, 0x00, CMOS_B_24H },
		{ CMOS_MDAY, 0x32, CMOS_B_24H }, { CMOS_MON, 0x00, CMOS_B_24H }, { CMOS_MON, 0x13, CMOS_B_24H },
		{ CMOS_YEAR, 0x9a, CMOS_B_24H }, { CMOS_YEAR, 100, CMOS_B_24H | CMOS_B_BINARY },
		{ CMOS_SEC, 60, CMOS_B_24H | CMOS_B_BINARY }, { CMOS_HOUR, 24, CMOS_B_24H | CMOS_B_BINARY },
		{ CMOS_MDAY, 0x31, CMOS_B_24H },	/* November 31st */
	};

	(void)state;
	good[CMOS_SEC] = 0x00, good[CMOS_MIN] = 0x00, good[CMOS_HOUR] = 0x01, good[CMOS_MDAY] = 0x01;
	good[CMOS_MON] = 0x11, good[CMOS_YEAR] = 0x26, good[CMOS_CENTURY] = 0x20;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memcpy(r, good, sizeof r);
		r[CMOS_B] = bad[i].b;
		if (bad[i].b & CMOS_B_BINARY) {	/* the good fields in binary */
			r[CMOS_HOUR] = 1, r[CMOS_MDAY] = 1, r[CMOS_MON] = 11, r[CMOS_YEAR] = 26, r[CMOS_CENTURY] = 20;
		}
		r[bad[i].reg] = bad[i].v;
		assert_int_equal(cmos_rtc_decode(r), 0);
	}
	memcpy(r, good, sizeof r);
	r[CMOS_B] = CMOS_B_24H;
	assert_int_not_equal(cmos_rtc_decode(r), 0);
	/* 29 February only in a leap year; nothing answering at the ports */
	r[CMOS_MON] = 0x02, r[CMOS_MDAY] = 0x29, r[CMOS_YEAR] = 0x28;
	assert_int_not_equal(cmos_rtc_decode(r), 0);
	r[CMOS_YEAR] = 0x27;
	assert_int_equal(cmos_rtc_decode(r), 0);
	memset(r, 0xff, sizeof r);
	assert_int_equal(cmos_rtc_decode(r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_mode_against_timegm),
		cmocka_unit_test(test_known_instants),
		cmocka_unit_test(test_bad_registers_are_no_clock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
