/* What mbedTLS needs of <time.h> (MBEDTLS_HAVE_TIME_DATE, mbedtls_config.h):
 * time_t and struct tm, as glibc's on x86-64 (the host tests build the same
 * sources against glibc's header). The functions are vireo's
 * (net/tls/tls_time.c, net/tls/tls_port.c). */
#ifndef VIREO_TLS_TIME_H
#define VIREO_TLS_TIME_H

typedef long time_t;

struct tm {
	int tm_sec, tm_min, tm_hour;	/* 0-60 (a leap second), 0-59, 0-23 */
	int tm_mday, tm_mon, tm_year;	/* 1-31, 0-11, years since 1900 */
	int tm_wday, tm_yday, tm_isdst;	/* 0-6 (Sunday 0), 0-365, 0 */
	long tm_gmtoff;
	const char *tm_zone;
};

#endif
