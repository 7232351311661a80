/* When to renew a certificate and when to try again after a failure
 * (issue 33; RFC 9773 for the CA's renewal information). Pure functions of
 * their arguments: the caller passes the time and a random value. */
#ifndef VIREO_ACME_RENEW_H
#define VIREO_ACME_RENEW_H

#include "lib/types.h"

/* Certificates of at most ACME_SHORT_S (10 days) renew when half their
 * lifetime is left, longer ones when a third is; the moment is moved
 * earlier by a random part of at most lifetime / ACME_JITTER_DIV (a
 * 90-day certificate: up to 5.6 days before its 30 days left; 6-day: up
 * to 9 h before its 3 days left), so that appliances started together do
 * not renew together. */
#define ACME_SHORT_S	(10u * 86400)
#define ACME_JITTER_DIV	16

struct acme_renew_in {
	u64 not_before, not_after;	/* the certificate's validity, Unix s */
	u64 now;
	bool ari;			/* the CA's suggested window, RFC 9773 */
	u64 ari_start, ari_end;
	u64 rnd;			/* uniform random */
};

/* The Unix time to renew at, never before now. An ARI window with start
 * before end, starting before the certificate ends, wins (a uniform point
 * in it, RFC 9773 section 4.2; a window in the past means now); otherwise
 * the rule above. A certificate whose
 * validity is empty or over means now. */
u64 acme_renew_at(const struct acme_renew_in *in);

/* After `failures` failures in a row (1 or more): ACME_BACKOFF_BASE_S
 * doubled per failure up to ACME_BACKOFF_CAP_S, the wait a uniform point
 * in its upper half; a CA's Retry-After (seconds, 0 none) is waited at
 * least, up to ACME_RETRY_AFTER_MAX_S (a CA asking for longer is
 * bounded so a certificate of a few days is still tried before it ends).
 * Seconds to wait. */
#define ACME_BACKOFF_BASE_S	60u
#define ACME_BACKOFF_CAP_S	(6u * 3600)
#define ACME_RETRY_AFTER_MAX_S	(24u * 3600)
u64 acme_backoff_s(unsigned failures, u64 retry_after_s, u64 rnd);

/* A Retry-After header's value (RFC 9110 section 10.2.3; s NUL-terminated,
 * surrounding white space already cut) as seconds from now into *secs:
 * delta-seconds (digits only, more than ACME_RETRY_AFTER_MAX_S taken as
 * that) or an IMF-fixdate (a date already past is 0). false, *secs
 * untouched, for anything else: the caller backs off as without one. */
bool acme_retry_after(const char *s, u64 now, u64 *secs);

/* An RFC 3339 date-time (s[n], no NUL needed), as RFC 9773's
 * suggestedWindow writes it: YYYY-MM-DDTHH:MM:SS, an optional fraction of
 * 1-9 digits (dropped), then Z or +HH:MM / -HH:MM ('t' and 'z' accepted
 * too, section 5.6). Into *unix_s (UTC, years 1970-9999, the offset
 * applied); false, *unix_s untouched, for anything else, a time before
 * 1970 after its offset included. */
bool acme_rfc3339(const char *s, size_t n, u64 *unix_s);

#endif
