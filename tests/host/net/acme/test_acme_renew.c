/* net/acme/acme_renew.c: when to renew, table-driven, for 90-, 47-, 10-
 * and 6-day certificates (a third left, half left for 10 days or less),
 * the jitter's bounds at both ends of the random value, RFC 9773 windows
 * (in the future, straddling now, past, empty or reversed), expired and
 * empty validities; the backoff's doubling, cap, jitter and Retry-After.
 * Expected values are written from the rule, not from the code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/acme/acme_renew.h"

#define D 86400ull
#define T0 1800000000ull	/* 2027-01-15 */

static void test_renew_table(void **state)
{
	static const struct {
		const char *what;
		struct acme_renew_in in;
		u64 want;
	} tab[] = {
		/* 90 days: renew with 30 left, i.e. at day 60; the jitter
		 * moves it earlier by at most 90 d / 16 = 5.625 d. */
		{ "90d rnd 0", { T0, T0 + 90 * D, T0, false, 0, 0, 0 }, T0 + 60 * D },
		{ "90d rnd max", { T0, T0 + 90 * D, T0, false, 0, 0, 90 * D / 16 }, T0 + 60 * D - 90 * D / 16 },
		{ "90d rnd wraps", { T0, T0 + 90 * D, T0, false, 0, 0, 90 * D / 16 + 1 }, T0 + 60 * D },
		/* 47 days: a third is 15.67 d left: day 31.33. */
		{ "47d", { T0, T0 + 47 * D, T0 + D, false, 0, 0, 0 }, T0 + 47 * D - 47 * D / 3 },
		{ "47d jitter", { T0, T0 + 47 * D, T0 + D, false, 0, 0, 1000 }, T0 + 47 * D - 47 * D / 3 - 1000 },
		/* 10 days is short: half. 11 days is not: a third. */
		{ "10d", { T0, T0 + 10 * D, T0, false, 0, 0, 0 }, T0 + 5 * D },
		{ "11d", { T0, T0 + 11 * D, T0, false, 0, 0, 0 }, T0 + 11 * D - 11 * D / 3 },
		/* 6 days: at day 3, up to 9 h earlier. */
		{ "6d", { T0, T0 + 6 * D, T0, false, 0, 0, 0 }, T0 + 3 * D },
		{ "6d rnd max", { T0, T0 + 6 * D, T0, false, 0, 0, 6 * D / 16 }, T0 + 3 * D - 9 * 3600 },
		/* Past the point (a reboot late in the lifetime): now. */
		{ "6d late", { T0, T0 + 6 * D, T0 + 4 * D, false, 0, 0, 0 }, T0 + 4 * D },
		{ "expired", { T0, T0 + 6 * D, T0 + 7 * D, false, 0, 0, 0 }, T0 + 7 * D },
		{ "empty validity", { T0, T0, T0 - 5, false, 0, 0, 0 }, T0 - 5 },
		{ "reversed validity", { T0 + 1, T0, T0 - 5, false, 0, 0, 0 }, T0 - 5 },
		/* ARI: a point in [start, end) by the random value. */
		{ "ari start", { T0, T0 + 90 * D, T0, true, T0 + 10 * D, T0 + 12 * D, 0 }, T0 + 10 * D },
		{ "ari mid", { T0, T0 + 90 * D, T0, true, T0 + 10 * D, T0 + 12 * D, D }, T0 + 11 * D },
		{ "ari last", { T0, T0 + 90 * D, T0, true, T0 + 10 * D, T0 + 12 * D, 4 * D - 1 }, T0 + 12 * D - 1 },
		{ "ari straddles now", { T0, T0 + 90 * D, T0 + 11 * D, true, T0 + 10 * D, T0 + 12 * D, 0 },
		  T0 + 11 * D },
		{ "ari past", { T0, T0 + 90 * D, T0 + 20 * D, true, T0 + 10 * D, T0 + 12 * D, 5 }, T0 + 20 * D },
		/* ARI earlier than the rule (a revocation coming) wins. */
		{ "ari early 6d", { T0, T0 + 6 * D, T0, true, T0 + 3600, T0 + 7200, 0 }, T0 + 3600 },
		/* An empty or reversed window is ignored: the rule. */
		{ "ari empty", { T0, T0 + 90 * D, T0, true, T0 + 5 * D, T0 + 5 * D, 0 }, T0 + 60 * D },
		{ "ari reversed", { T0, T0 + 90 * D, T0, true, T0 + 6 * D, T0 + 5 * D, 0 }, T0 + 60 * D },
		/* a window that starts once the certificate has ended: none */
		{ "ari after expiry", { T0, T0 + 90 * D, T0, true, T0 + 90 * D, T0 + 91 * D, 0 }, T0 + 60 * D },
		{ "ari off", { T0, T0 + 90 * D, T0, false, T0 + 5 * D, T0 + 6 * D, 0 }, T0 + 60 * D },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		u64 got = acme_renew_at(&tab[i].in);

		if (got != tab[i].want)
			fail_msg("%s: %llu, want %llu (%+lld s)", tab[i].what, (unsigned long long)got,
				 (unsigned long long)tab[i].want, (long long)(got - tab[i].want));
	}
}

/* Over many random values the time stays inside [point - life/16, point]
 * and after now. */
static void test_renew_range(void **state)
{
	static const u64 lives[] = { 6 * D, 10 * D, 47 * D, 90 * D };

	for (size_t l = 0; l < 4; l++) {
		u64 life = lives[l], point = T0 + life - (life <= 10 * D ? life / 2 : life / 3);

		for (u64 r = 0; r < 100000; r++) {
			struct acme_renew_in in = { T0, T0 + life, T0, false, 0, 0, r * 2654435761ull };
			u64 at = acme_renew_at(&in);

			assert_true(at <= point && at >= point - life / 16 && at >= in.now);
		}
	}
}

static void test_backoff(void **state)
{
	/* The upper end (rnd = b/2) doubles 60 s per failure to the 6 h cap. */
	static const struct { unsigned f; u64 want_max; } up[] = {
		{ 0, 60 }, { 1, 60 }, { 2, 120 }, { 3, 240 }, { 8, 7680 }, { 9, 15360 }, { 10, 21600 },
		{ 30, 21600 }, { 64, 21600 }, { 4000000000u, 21600 },
	};

	for (size_t i = 0; i < sizeof(up) / sizeof(up[0]); i++) {
		u64 b = up[i].want_max;

		assert_int_equal(acme_backoff_s(up[i].f, 0, b / 2), b);
		assert_int_equal(acme_backoff_s(up[i].f, 0, 0), b - b / 2);
		for (u64 r = 0; r < 5000; r++) {
			u64 w = acme_backoff_s(up[i].f, 0, r * 7919);

			assert_true(w >= b - b / 2 && w <= b);
		}
	}
	/* Retry-After: waited at least, to its bound. */
	assert_int_equal(acme_backoff_s(1, 3600, 0), 3600);
	assert_int_equal(acme_backoff_s(1, 10, 30), 60);
	assert_int_equal(acme_backoff_s(1, 7 * D, 0), ACME_RETRY_AFTER_MAX_S);
	assert_int_equal(acme_backoff_s(12, ACME_BACKOFF_CAP_S + 1, 0), ACME_BACKOFF_CAP_S + 1);
}

static void test_retry_after(void **state)
{
	/* 1994-11-06T08:49:37Z is 784111777. */
	const u64 now = 784111777;
	u64 s = 12345;

	assert_true(acme_retry_after("0", now, &s));
	assert_int_equal(s, 0);
	assert_true(acme_retry_after("120", now, &s));
	assert_int_equal(s, 120);
	assert_true(acme_retry_after("86400", now, &s));
	assert_int_equal(s, 86400);
	/* Over the bound (and over 64 bits): the bound. */
	assert_true(acme_retry_after("86401", now, &s));
	assert_int_equal(s, ACME_RETRY_AFTER_MAX_S);
	assert_true(acme_retry_after("99999999999999999999999999", now, &s));
	assert_int_equal(s, ACME_RETRY_AFTER_MAX_S);
	/* Dates: ahead, past, far ahead. */
	assert_true(acme_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now, &s));
	assert_int_equal(s, 120);
	assert_true(acme_retry_after("Sun, 06 Nov 1994 08:49:36 GMT", now, &s));
	assert_int_equal(s, 0);
	assert_true(acme_retry_after("Fri, 31 Dec 1999 23:59:59 GMT", now, &s));
	assert_int_equal(s, ACME_RETRY_AFTER_MAX_S);
	/* Refused, *secs untouched. */
	static const char *bad[] = { "", "-1", "1.5", "12 ", " 12", "12a", "0x10", "tomorrow",
				     "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = 777;
		if (acme_retry_after(bad[i], now, &s) || s != 777)
			fail_msg("\"%s\" accepted", bad[i]);
	}
}

/* RFC 3339 date-times as RFC 9773's suggestedWindow writes them; the
 * expected values are python3's datetime.fromisoformat(...).timestamp(). */
static void test_rfc3339(void **state)
{
	static const struct {
		const char *s;
		u64 want;	/* 0: refused */
	} c[] = {
		{ "2025-01-02T04:00:00Z", 1735790400 },
		{ "2025-01-02t04:00:00z", 1735790400 },
		{ "2025-01-03T04:00:00.123456789Z", 1735876800 },
		{ "2025-01-02T05:30:00+01:30", 1735790400 },
		{ "2025-01-01T23:00:00-05:00", 1735790400 },
		{ "1970-01-01T00:00:00Z", 0 },	/* valid, the epoch: checked below */
		{ "2016-12-31T23:59:60Z", 1483228800 },	/* a leap second */
		{ "2025-01-02T04:00:00", 0 },	/* no offset */
		{ "2025-01-02 04:00:00Z", 0 },
		{ "2025-13-02T04:00:00Z", 0 },
		{ "2025-02-30T04:00:00Z", 0 },
		{ "2025-01-02T24:00:00Z", 0 },
		{ "2025-01-02T04:00:00.Z", 0 },
		{ "2025-01-02T04:00:00.1234567890Z", 0 },
		{ "2025-01-02T04:00:00+24:00", 0 },
		{ "2025-01-02T04:00:00+01:60", 0 },
		{ "2025-01-02T04:00:00+0100", 0 },
		{ "2025-01-02T04:00:00Zx", 0 },
		{ "1970-01-01T00:30:00+01:00", 0 },	/* before 1970 in UTC */
		{ "+025-01-02T04:00:00Z", 0 },
		{ "", 0 },
	};
	u64 t;

	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		bool ok = acme_rfc3339(c[i].s, strlen(c[i].s), &t);

		if (strcmp(c[i].s, "1970-01-01T00:00:00Z") == 0) {
			assert_true(ok);
			assert_int_equal(t, 0);
			continue;
		}
		if (c[i].want) {
			if (!ok || t != c[i].want)
				fail_msg("%s: %d %llu, want %llu", c[i].s, ok, (unsigned long long)t,
					 (unsigned long long)c[i].want);
		} else {
			t = 7;
			if (ok || t != 7)
				fail_msg("%s: accepted", c[i].s);
		}
	}
	/* the length is what counts, not a NUL */
	assert_true(acme_rfc3339("2025-01-02T04:00:00Zjunk", 20, &t));
	assert_int_equal(t, 1735790400);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_renew_table),
		cmocka_unit_test(test_renew_range),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_rfc3339),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
