/* kernel/time/wallclock.c: the provisional clock (the firmware's, at boot)
 * kept apart from the synchronised one, and UEFI's EFI_TIME fields into Unix
 * seconds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/time/wallclock.h"
#include "tests/host/shim/hostk.h"

#define NS 1000000000ULL
#define T2026 1796569800ULL	/* 2026-12-06T15:10:00Z */

static void test_from_efi(void **state)
{
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 15, 10, 0, 2047), T2026);	/* unspecified: UTC */
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 15, 10, 0, 0), T2026);
	/* Localtime = UTC - TimeZone: 16:10 local at TimeZone -60 is 15:10 UTC. */
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 16, 10, 0, -60), T2026);
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 14, 10, 0, 60), T2026);
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 15, 10, 0, 1440), T2026 + 86400);
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 15, 10, 0, 1441), 0);
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 15, 10, 0, -1441), 0);
	assert_int_equal(wallclock_from_efi(2026, 13, 6, 15, 10, 0, 0), 0);
	assert_int_equal(wallclock_from_efi(2026, 2, 29, 0, 0, 0, 0), 0);
	assert_int_equal(wallclock_from_efi(2026, 12, 6, 24, 0, 0, 0), 0);
	assert_int_equal(wallclock_from_efi(1970, 1, 1, 0, 0, 0, -1), 0);	/* before the epoch */
}

static void test_provisional_apart(void **state)
{
	u64 ns = 0, now = hk_now();
	char date[40];

	wallclock_reset();
	assert_int_equal(wallclock_best(&ns), WALLCLOCK_NONE);
	assert_int_equal(ns, 0);
	assert_int_equal(wallclock_http_now(date, sizeof date), 0);	/* no clock: no Date */
	/* Implausible firmware times are refused. */
	assert_int_equal(wallclock_set_provisional(1000 * NS, now), -ERANGE);
	assert_int_equal(wallclock_best(&ns), WALLCLOCK_NONE);
	assert_int_equal(wallclock_set_provisional(T2026 * NS, now), 0);
	/* Known, and the HTTP Date's (as nginx dates with whatever clock the
	 * system has), but not a synchronised time for stamps and the apps. */
	assert_int_equal(wallclock_http_now(date, sizeof date), 29);
	assert_string_equal(date, "Sun, 06 Dec 2026 15:10:00 GMT");
	assert_false(wallclock_now(&ns));
	assert_int_equal(wallclock_best(&ns), WALLCLOCK_PROVISIONAL);
	assert_int_equal(ns, T2026 * NS);
	hk_clock_advance(3 * NS);
	assert_int_equal(wallclock_best(&ns), WALLCLOCK_PROVISIONAL);
	assert_int_equal(ns, (T2026 + 3) * NS);
	assert_int_equal(wallclock_set_provisional((T2026 + 99) * NS, hk_now()), -EALREADY);
	/* SNTP refines it: the synchronised clock wins. */
	assert_int_equal(wallclock_set((T2026 + 10) * NS, hk_now()), 0);
	assert_true(wallclock_now(&ns));
	assert_int_equal(ns, (T2026 + 10) * NS);
	assert_int_equal(wallclock_best(&ns), WALLCLOCK_SYNCED);
	assert_int_equal(ns, (T2026 + 10) * NS);
	/* Once synchronised, no provisional clock is taken. */
	wallclock_reset();
	assert_int_equal(wallclock_set(T2026 * NS, hk_now()), 0);
	assert_int_equal(wallclock_set_provisional(T2026 * NS, hk_now()), -EALREADY);
	wallclock_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_from_efi),
		cmocka_unit_test(test_provisional_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
