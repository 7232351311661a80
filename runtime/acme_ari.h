/* When and what to ask the CA for the served certificate's renewal
 * information (RFC 9773), make STORAGE=1 (pure: host-tested by
 * tests/host/runtime/test_acme_ari.c; runtime/acme.c does the I/O;
 * docs/https.md "Kept on the store").
 *
 * The renewalInfo URL comes from the CA's directory: read at each issue
 * (the order's machine reads it), kept on the store with the window
 * (acme.ari). It may be missing (a certificate kept from an earlier boot
 * whose acme.ari was lost, refused or never written) or stale (the CA
 * moved it: the directory is the only authority). So:
 *
 *   - no URL: the directory is read first (an unauthenticated GET), then
 *     polled at once; a directory without renewalInfo turns polling off
 *     for this certificate (the lifetime rule alone; the next issue reads
 *     the directory again);
 *   - a poll answered 404, or 200 with no window in it, or another 4xx
 *     but 429 (the CA does not serve that URL, or not as RFC 9773
 *     says): the URL is
 *     dropped and the directory read again: at once, unless the URL is
 *     one the directory named since the last answered poll (read again
 *     and failing again: after the backoff), so a CA
 *     whose directory keeps naming a URL that fails costs one directory
 *     read and one poll per backoff period (acme_backoff_s(): 60 s
 *     doubling to 6 h), never a stale URL polled forever;
 *   - any other failure (no answer, 429, 5xx): the same URL after the
 *     backoff;
 *   - the CA's Retry-After is clamped (RFC 9773 section 4.3: clients bound it):
 *     after an answer, within [ACME_ARI_POLL_MIN_S, ACME_ARI_POLL_MAX_S]
 *     (ACME_ARI_POLL_S without one); after a failure, the backoff waits it
 *     at least, at most ACME_RETRY_AFTER_MAX_S (a day).
 */
#ifndef VIREO_RUNTIME_ACME_ARI_H
#define VIREO_RUNTIME_ACME_ARI_H

#include "lib/types.h"

#define ACME_ARI_POLL_MIN_S	60u
#define ACME_ARI_POLL_S		(6u * 3600)
#define ACME_ARI_POLL_MAX_S	(24u * 3600)

struct acme_ari_poll {
	bool url;		/* a renewalInfo URL to poll */
	bool fresh;		/* read from the directory since the last answered poll */
	bool off;		/* the directory has no renewalInfo: no polls */
	unsigned failures;	/* polls and directory reads failed in a row */
	u64 next;		/* Unix s: the next step */
};

enum acme_ari_do { ACME_ARI_WAIT, ACME_ARI_DIR, ACME_ARI_POLL, ACME_ARI_OFF };

/* What is due at now. */
enum acme_ari_do acme_ari_due(const struct acme_ari_poll *p, u64 now);

/* A directory read: ok false (no answer, not 200, not JSON), else
 * has_url whether it names a renewalInfo URL the client takes. */
void acme_ari_dir_read(struct acme_ari_poll *p, bool ok, bool has_url, u64 now, u64 rnd);

/* A poll's outcome: status (0: no answer), window whether the body was
 * a window, retry_s the CA's Retry-After in seconds (0: none). True when
 * it was a window. */
bool acme_ari_polled(struct acme_ari_poll *p, int status, bool window, u64 retry_s, u64 now, u64 rnd);

#endif
