/* runtime/acme_ari.c, RFC 9773's polling plan: a certificate served with
 * no renewalInfo URL (its acme.ari lost) reads the directory first and
 * polls at once; a directory without renewalInfo turns polling off; a
 * stale URL (404, a body that is no window) is dropped for the
 * directory's, at once the first time and after the backoff when the
 * directory names one that fails again (never polled forever); other
 * failures keep the URL and back off; Retry-After is clamped both ways. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/acme_ari.h"
#include "net/acme/acme_renew.h"

#define NOW 1800000000ull

static void test_no_url_reads_directory(void **state)
{
	struct acme_ari_poll p = { .next = NOW };	/* a kept certificate, no acme.ari */

	(void)state;
	assert_int_equal(acme_ari_due(&p, NOW - 1), ACME_ARI_WAIT);
	assert_int_equal(acme_ari_due(&p, NOW), ACME_ARI_DIR);
	acme_ari_dir_read(&p, true, true, NOW, 0);
	assert_true(p.url && p.fresh && !p.off);
	assert_int_equal(acme_ari_due(&p, NOW), ACME_ARI_POLL);	/* at once */
}

static void test_directory_without_renewal_info(void **state)
{
	struct acme_ari_poll p = { .next = NOW };

	(void)state;
	acme_ari_dir_read(&p, true, false, NOW, 0);
	assert_int_equal(acme_ari_due(&p, NOW + 365 * 86400ull), ACME_ARI_OFF);
}

static void test_directory_unread_backs_off(void **state)
{
	struct acme_ari_poll p = { .next = NOW };

	(void)state;
	acme_ari_dir_read(&p, false, false, NOW, 0);
	assert_int_equal(p.failures, 1);
	assert_true(p.next >= NOW + ACME_BACKOFF_BASE_S / 2 && p.next <= NOW + ACME_BACKOFF_BASE_S);
	assert_int_equal(acme_ari_due(&p, p.next), ACME_ARI_DIR);
}

static void test_stale_kept_url_rereads_at_once(void **state)
{
	/* a URL from the store (not fresh) answered 404 */
	struct acme_ari_poll p = { .url = true, .next = NOW };

	(void)state;
	assert_false(acme_ari_polled(&p, 404, false, 0, NOW, 0));
	assert_false(p.url);
	assert_int_equal(acme_ari_due(&p, NOW), ACME_ARI_DIR);
	/* the directory names one that fails again: the backoff first */
	acme_ari_dir_read(&p, true, true, NOW, 0);
	assert_false(acme_ari_polled(&p, 404, false, 0, NOW, 0));
	assert_false(p.url);
	assert_int_equal(acme_ari_due(&p, NOW), ACME_ARI_WAIT);
	assert_int_equal(p.failures, 2);
	assert_true(p.next >= NOW + 60 && p.next <= NOW + 120);
	assert_int_equal(acme_ari_due(&p, p.next), ACME_ARI_DIR);	/* and read again */
}

static void test_stale_url_bounded(void **state)
{
	/* a CA whose directory always names a URL that fails: per backoff
	 * period one directory read and one poll, the period doubling to
	 * its cap: over 30 days a bounded number of requests */
	struct acme_ari_poll p = { .url = true, .next = NOW };
	u64 now = NOW, end = NOW + 30 * 86400ull;
	unsigned dirs = 0, polls = 0;

	(void)state;
	while (now < end) {
		switch (acme_ari_due(&p, now)) {
		case ACME_ARI_DIR:
			dirs++;
			acme_ari_dir_read(&p, true, true, now, 0);
			break;
		case ACME_ARI_POLL:
			polls++;
			acme_ari_polled(&p, 404, false, 0, now, 0);
			break;
		case ACME_ARI_WAIT:
			now = p.next;
			break;
		case ACME_ARI_OFF:
			fail();
		}
	}
	/* 30 days at the 6 h cap (3-6 h with jitter 0: 3 h) is 240 periods */
	assert_true(polls <= 260 && dirs <= polls);
	assert_true(polls >= 100);
}

static void test_body_not_a_window_is_stale(void **state)
{
	struct acme_ari_poll p = { .url = true, .next = NOW };

	(void)state;
	acme_ari_polled(&p, 200, false, 0, NOW, 0);
	assert_false(p.url);
	assert_int_equal(acme_ari_due(&p, NOW), ACME_ARI_DIR);
}

static void test_other_failures_keep_url(void **state)
{
	static const int st[] = { 0, 429, 500, 503 };

	(void)state;
	for (unsigned i = 0; i < sizeof st / sizeof st[0]; i++) {
		struct acme_ari_poll p = { .url = true, .next = NOW };

		acme_ari_polled(&p, st[i], false, 0, NOW, 0);
		assert_true(p.url);
		assert_int_equal(acme_ari_due(&p, NOW), ACME_ARI_WAIT);
		assert_int_equal(acme_ari_due(&p, p.next), ACME_ARI_POLL);
	}
}

static void test_retry_after_clamped(void **state)
{
	struct acme_ari_poll p = { .url = true, .fresh = true, .next = NOW };

	(void)state;
	assert_true(acme_ari_polled(&p, 200, true, 1, NOW, 0));
	assert_int_equal(p.next, NOW + ACME_ARI_POLL_MIN_S);
	assert_false(p.fresh);
	assert_true(acme_ari_polled(&p, 200, true, 90 * 86400ull, NOW, 0));
	assert_int_equal(p.next, NOW + ACME_ARI_POLL_MAX_S);
	assert_true(acme_ari_polled(&p, 200, true, 0, NOW, 0));
	assert_int_equal(p.next, NOW + ACME_ARI_POLL_S);
	assert_true(acme_ari_polled(&p, 200, true, 7200, NOW, 0));
	assert_int_equal(p.next, NOW + 7200);
	/* a failure's Retry-After: waited at least, at most a day */
	acme_ari_polled(&p, 503, false, 3 * 3600, NOW, 0);
	assert_int_equal(p.next, NOW + 3 * 3600);
	acme_ari_polled(&p, 503, false, 90 * 86400ull, NOW, 0);
	assert_int_equal(p.next, NOW + ACME_RETRY_AFTER_MAX_S);
	assert_int_equal(p.failures, 2);
	acme_ari_polled(&p, 200, true, 0, NOW, 0);
	assert_int_equal(p.failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_url_reads_directory),
		cmocka_unit_test(test_directory_without_renewal_info),
		cmocka_unit_test(test_directory_unread_backs_off),
		cmocka_unit_test(test_stale_kept_url_rereads_at_once),
		cmocka_unit_test(test_stale_url_bounded),
		cmocka_unit_test(test_body_not_a_window_is_stale),
		cmocka_unit_test(test_other_failures_keep_url),
		cmocka_unit_test(test_retry_after_clamped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
