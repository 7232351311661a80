/* mbedTLS's gmtime (MBEDTLS_PLATFORM_GMTIME_R_ALT, mbedtls_config.h): Unix
 * seconds into a UTC civil date for X.509's validity checks. Pure, and
 * archived with the library (net/tls/mbedtls.mk's MBEDTLS_ALT_SRCS), so the
 * host tests verify certificates through the same code.
 *
 * Fail closed: a time before 2024-01-01 (kernel/time/wallclock.h's
 * WALLCLOCK_MIN_S: no clock gives -1, see vireo_tls_time()) or after 9999
 * gives NULL, which mbedTLS turns into "expired" and "not yet valid" for
 * every certificate. */
#include "mbedtls/build_info.h"
#include "mbedtls/platform_util.h"

#define TLS_TIME_MIN_S 1704067200L	/* WALLCLOCK_MIN_S: net/ does not see kernel/time here */
#define TLS_TIME_MAX_S 253402300799L	/* 9999-12-31T23:59:59Z */

struct tm *mbedtls_platform_gmtime_r(const mbedtls_time_t *tt, struct tm *tm)
{
	/* Unsigned and, past the first split, 32 bits: every value below is
	 * >= 0 and the day count < 2^22 in the accepted range, and a 32-bit
	 * division by a constant is a shorter multiply than a 64-bit one
	 * with or without a sign fix-up (smaller code, the same results). */
	unsigned long t;
	unsigned int days, secs, era, doe, yoe, doy, mp, y, m, d;

	if (!tt || !tm || *tt < TLS_TIME_MIN_S || *tt > TLS_TIME_MAX_S)
		return NULL;
	t = (unsigned long)*tt;
	days = (unsigned int)(t / 86400);
	secs = (unsigned int)(t % 86400);
	/* Days since 1970-01-01 into a proleptic Gregorian date: years of
	 * 400 (146097 days) counted from 0000-03-01, so the leap day ends
	 * each year. */
	days += 719468;
	era = days / 146097;
	doe = days - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y = yoe + era * 400 + (m <= 2);
	*tm = (struct tm){ 0 };
	tm->tm_year = (int)(y - 1900);
	tm->tm_mon = (int)(m - 1);
	tm->tm_mday = (int)d;
	tm->tm_hour = (int)(secs / 3600);
	tm->tm_min = (int)(secs / 60 % 60);
	tm->tm_sec = (int)(secs % 60);
	tm->tm_wday = (int)((days - 719468 + 4) % 7);	/* 1970-01-01 was a Thursday */
	tm->tm_yday = (int)(m <= 2 ? doy - 306 : doy + 59 + ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
	return tm;
}
