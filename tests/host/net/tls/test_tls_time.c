/* net/tls/tls_time.c, mbedTLS's gmtime for certificate dates, and what it
 * makes of X.509 verification (mbedtls_config.h's MBEDTLS_HAVE_TIME_DATE):
 * dates against glibc's gmtime_r over the whole accepted range; a time
 * before 2024 (the kernel's "no clock" is -1) refused, so that every
 * certificate fails verification, closed; and a chain judged at times
 * inside, after and before its validity, for the names asked and against
 * a CA that did not issue it, with the words tls_verify_why() gives
 * (runtime/tcp_out.c's on_fail reasons). Fixtures: host.mk's openssl ones. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "mbedtls/platform_util.h"
#include "mbedtls/x509_crt.h"
#include "net/tls/tls_keys.h"
#include "tests/host/net/tls/tls_host.h"

#define MIN_S 1704067200L	/* 2024-01-01T00:00:00Z */
#define MAX_S 253402300799L	/* 9999-12-31T23:59:59Z */

static void same_as_glibc(time_t t)
{
	struct tm want, got;
	mbedtls_time_t tt = t;

	assert_non_null(gmtime_r(&t, &want));
	memset(&got, 0x55, sizeof got);
	assert_ptr_equal(mbedtls_platform_gmtime_r(&tt, &got), &got);
	if (got.tm_year != want.tm_year || got.tm_mon != want.tm_mon || got.tm_mday != want.tm_mday ||
	    got.tm_hour != want.tm_hour || got.tm_min != want.tm_min || got.tm_sec != want.tm_sec ||
	    got.tm_wday != want.tm_wday || got.tm_yday != want.tm_yday)
		fail_msg("%ld: %d-%d-%d %d:%d:%d w%d y%d, glibc %d-%d-%d %d:%d:%d w%d y%d", (long)t, got.tm_year,
			 got.tm_mon, got.tm_mday, got.tm_hour, got.tm_min, got.tm_sec, got.tm_wday, got.tm_yday,
			 want.tm_year, want.tm_mon, want.tm_mday, want.tm_hour, want.tm_min, want.tm_sec,
			 want.tm_wday, want.tm_yday);
}

static void test_gmtime_matches_glibc(void **state)
{
	(void)state;
	same_as_glibc(MIN_S);
	same_as_glibc(MAX_S);
	same_as_glibc(MIN_S + 59 * 86400);		/* 2024-02-29 */
	same_as_glibc(4107542399L);			/* 2100-02-28T23:59:59Z: not a leap year */
	same_as_glibc(4107542400L);			/* 2100-03-01 */
	same_as_glibc(951868800L + 400L * 31556952L);	/* around 2400-03-01: a leap year */
	srand(32);
	for (int i = 0; i < 200000; i++)
		same_as_glibc(MIN_S + (time_t)(((unsigned long)rand() << 31 | (unsigned long)rand()) %
					       (unsigned long)(MAX_S - MIN_S)));
	for (time_t t = MIN_S; t < MIN_S + 3 * 366 * 86400L; t += 86399)
		same_as_glibc(t);
}

static void test_gmtime_refuses_outside(void **state)
{
	static const long bad[] = { -1, 0, 86400, MIN_S - 1, MAX_S + 1, -MIN_S };
	struct tm tm;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		mbedtls_time_t t = bad[i];

		assert_null(mbedtls_platform_gmtime_r(&t, &tm));
	}
	assert_null(mbedtls_platform_gmtime_r(NULL, &tm));
}

struct chain {
	mbedtls_x509_crt leaf, ca, other;
};

static void chain_load(struct chain *c)
{
	struct tls_blob l = tls_host_fixture("issued-cert.pem"), a = tls_host_fixture("ec-cert.pem"),
			o = tls_host_fixture("rsa-cert.pem");
	char err[96];

	mbedtls_x509_crt_init(&c->leaf);
	assert_int_equal(tls_ca_load(&c->leaf, l.p, l.n, err, sizeof err), 1);	/* one PEM certificate */
	assert_int_equal(tls_ca_load(&c->ca, a.p, a.n, err, sizeof err), 1);
	assert_int_equal(tls_ca_load(&c->other, o.p, o.n, err, sizeof err), 1);
	free(l.p);
	free(a.p);
	free(o.p);
}

static void chain_free(struct chain *c)
{
	mbedtls_x509_crt_free(&c->leaf);
	mbedtls_x509_crt_free(&c->ca);
	mbedtls_x509_crt_free(&c->other);
	tls_host_real_time();
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* Verifies the leaf for name against trust at time now: mbedTLS's flags
 * (0 when it verified), and whether it returned an error consistently. */
static uint32_t verify(struct chain *c, mbedtls_x509_crt *trust, const char *name, long now)
{
	uint32_t flags = 0;
	int ret;

	tls_host_set_time(now);
	ret = mbedtls_x509_crt_verify(&c->leaf, trust, NULL, name, &flags, NULL, NULL);
	assert_true((ret == 0) == (flags == 0));
	return flags;
}

static void test_verify_fails_closed_without_clock(void **state)
{
	struct chain c;
	uint32_t flags;

	(void)state;
	chain_load(&c);
	/* the chain verifies with the host's clock... */
	assert_int_equal(verify(&c, &c.ca, "leaf", (long)time(NULL)), 0);
	/* ...and with no clock (the kernel's -1) it is both expired and
	 * not yet valid, and the word is noclock */
	flags = verify(&c, &c.ca, "leaf", -1);
	assert_true(flags & MBEDTLS_X509_BADCERT_EXPIRED);
	assert_true(flags & MBEDTLS_X509_BADCERT_FUTURE);
	assert_int_equal(tls_verify_why(flags, 0), TLS_VERIFY_NOCLOCK);
	/* a time before WALLCLOCK_MIN_S is no clock either */
	flags = verify(&c, &c.ca, "leaf", MIN_S - 1);
	assert_true(flags & MBEDTLS_X509_BADCERT_EXPIRED);
	chain_free(&c);
}

static void test_verify_reasons(void **state)
{
	long now = (long)time(NULL);
	struct chain c;
	uint32_t flags;

	(void)state;
	chain_load(&c);
	/* the fixtures are valid for 30 days from when host.mk made them */
	flags = verify(&c, &c.ca, "leaf", now + 400L * 86400);
	assert_int_equal(flags, MBEDTLS_X509_BADCERT_EXPIRED);
	assert_int_equal(tls_verify_why(flags, 1), TLS_VERIFY_EXPIRED);
	flags = verify(&c, &c.ca, "leaf", MIN_S + 86400);
	assert_true(flags & MBEDTLS_X509_BADCERT_FUTURE);
	assert_int_equal(tls_verify_why(flags, 1), TLS_VERIFY_EXPIRED);
	flags = verify(&c, &c.ca, "other.example", now);
	assert_int_equal(flags, MBEDTLS_X509_BADCERT_CN_MISMATCH);
	assert_int_equal(tls_verify_why(flags, 1), TLS_VERIFY_NAME);
	flags = verify(&c, &c.other, "leaf", now);
	assert_true(flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED);
	assert_int_equal(tls_verify_why(flags, 1), TLS_VERIFY_UNTRUSTED);
	/* several at once: an unknown CA is said before the name */
	flags = verify(&c, &c.other, "other.example", now);
	assert_int_equal(tls_verify_why(flags, 1), TLS_VERIFY_UNTRUSTED);
	/* anything else is "cert" */
	assert_int_equal(tls_verify_why(MBEDTLS_X509_BADCERT_KEY_USAGE, 1), TLS_VERIFY_OTHER);
	assert_int_equal(tls_verify_why(MBEDTLS_X509_BADCERT_KEY_USAGE, 0), TLS_VERIFY_NOCLOCK);
	chain_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gmtime_matches_glibc),
		cmocka_unit_test(test_gmtime_refuses_outside),
		cmocka_unit_test(test_verify_fails_closed_without_clock),
		cmocka_unit_test(test_verify_reasons),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
