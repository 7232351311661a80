/* The ACME protocol (RFC 8555) as a state machine (issue 33): given the
 * CA's last response, it decides the next request. No I/O, no keys, no
 * clock: runtime/acme.c sends what it asks for (signing POSTs with
 * acme_jws()), feeds the response back, and serves HTTP-01's token; the
 * host test drives it with scripted CA responses.
 *
 * The flow: GET directory -> HEAD newNonce -> POST newAccount (jwk;
 * termsOfServiceAgreed, contact, externalAccountBinding when configured;
 * the account URL from Location is the kid
 * of every later request) -> POST newOrder (every name) -> for each
 * authorization: POST-as-GET it; pending: the chosen challenge's token
 * is published (ACME_ACT_SERVE: token, and ident, the authorization's
 * name, which must be one of the order's), POST {} to the challenge, then poll the
 * authorization until valid -> POST finalize {"csr"} -> poll the order
 * until valid -> POST-as-GET the certificate (a PEM chain: ACME_DONE).
 *
 * The CA is untrusted input. Every response is checked: JSON at most
 * ACME_JSON_SIZE_MAX (the caller's fetch cap) parsed strictly into
 * ACME_TOKS tokens; URLs https://, printable, at most ACME_URL_MAX bytes,
 * and on the directory's origin (scheme, host and port: the client talks
 * to one CA host, never where a response points it); statuses from the
 * RFC's sets; tokens base64url of 1..ACME_TOKEN_MAX; nonces base64url of
 * 1..ACME_NONCE_MAX; at most ACME_NAMES_MAX authorizations; polls at most
 * ACME_POLLS_MAX per wait. Anything else fails the attempt with a reason
 * in last_error, as does a problem document (RFC 7807: its type and
 * detail, sanitised). badNonce (RFC 8555 section 6.5) is retried with the
 * nonce of its own response, at most ACME_BADNONCE_MAX times in a row.
 * A failed attempt says so (ACME_FAIL, retry_after_s from the CA's
 * Retry-After when it gave one); the caller backs off
 * (acme_backoff_s()) and starts again with acme_client_start(). */
#ifndef VIREO_ACME_CLIENT_H
#define VIREO_ACME_CLIENT_H

#include "lib/types.h"
#include "net/acme/acme_json.h"

#define ACME_URL_MAX_C		512	/* = acme_sign.h's ACME_URL_MAX */
#define ACME_NONCE_MAX_C	128	/* = ACME_NONCE_MAX */
#define ACME_TOKEN_MAX_C	128	/* = ACME_TOKEN_MAX */
#define ACME_NAMES_MAX		8	/* = TLS_NAMES_MAX: names per order, so authorizations */
#define ACME_NAME_MAX		253
#define ACME_CONTACT_MAX	128
#define ACME_CSR_B64_MAX	4096	/* base64url of ACME_CSR_DER_MAX (3072 B) */
#define ACME_ERR_MAX		160
#define ACME_BADNONCE_MAX	8
/* A poll's wait: the CA's Retry-After within [1, ACME_POLL_MAX_S], else
 * ACME_POLL_S; at most ACME_POLLS_MAX polls for one authorization or the
 * order (60 x up to 10 s: the attempt gives up after 1-10 minutes). */
#define ACME_POLL_S		1
#define ACME_POLL_MAX_S		10
#define ACME_POLLS_MAX		60
/* A request's JSON payload: newOrder for 8 names of 253 bytes is
 * 8 x (253 + 30) + 20 < 2,300; finalize is the CSR. */
#define ACME_PAYLOAD_MAX	(ACME_CSR_B64_MAX + 16)
#define ACME_TOKS		256
/* RFC 9773's certificate identifier (acme_ari_cert_id()): base64url of a
 * key identifier and a serial; 20-byte ones (the usual SHA-1 key
 * identifier, RFC 5280's longest serial) make 27 + 1 + 28 characters, and
 * 128 leaves room for 48-byte key identifiers. */
#define ACME_ARI_ID_MAX		128
#define ACME_PROFILE_MAX	64	/* a certificate profile's name */

enum acme_step {
	ACME_IDLE,		/* not started */
	ACME_DIRECTORY,
	ACME_ACCOUNT,
	ACME_ORDER,
	ACME_AUTHZ,		/* reading authorization k */
	ACME_CHALLENGE,		/* the challenge answered */
	ACME_AUTHZ_POLL,
	ACME_FINALIZE,
	ACME_ORDER_POLL,
	ACME_CERT,
	ACME_VALID,		/* the chain is in the last response */
	ACME_FAILED,
	ACME_STEPS
};
const char *acme_step_name(enum acme_step s);

enum acme_challenge_type { ACME_HTTP01, ACME_TLSALPN01 };

enum acme_method { ACME_GET, ACME_HEAD, ACME_POST };

/* What to send next. A POST is a JWS the caller signs: with the account's
 * jwk when use_jwk (newAccount), else with kid = account; payload NULL is
 * POST-as-GET. nonce is the one to sign with (consumed). */
struct acme_req {
	enum acme_method method;
	char url[ACME_URL_MAX_C + 1];
	const char *payload;	/* into the client's buffer, or NULL */
	size_t payload_len;
	bool use_jwk;
	bool want_pem;		/* Accept: application/pem-certificate-chain */
	u32 delay_s;		/* wait this long before sending it */
	char nonce[ACME_NONCE_MAX_C + 1];
};

/* The response, as the caller got it. err: a transport failure (not 0:
 * no status, no body). Header values NUL-terminated and trimmed, NULL when
 * absent. */
struct acme_resp {
	int err;
	int status;
	const char *content_type, *location, *nonce, *retry_after;
	const char *body;
	size_t len;
	u64 now;		/* Unix seconds, for a Retry-After date (0: none) */
};

/* What acme_client_next() asks of the caller. */
enum acme_action {
	ACME_ACT_SEND,		/* send req (after its delay) */
	ACME_ACT_SERVE,		/* publish the challenge of token, then send req */
	ACME_ACT_DONE,		/* the last response's body is the chain */
	ACME_ACT_FAIL,		/* see last_error, retry_after_s */
};

struct acme_cfg {
	const char *directory;	/* https URL */
	const char *names[ACME_NAMES_MAX];
	unsigned n_names;
	const char *contact;	/* "mailto:..." or NULL */
	const char *csr_b64;	/* the finalize CSR, base64url DER */
	enum acme_challenge_type challenge;
	/* External Account Binding (RFC 8555 section 7.3.4), or NULL: writes
	 * the newAccount payload's externalAccountBinding value (a JWS,
	 * acme_eab_jws()) for the newAccount URL into out[cap], *len without
	 * the NUL; 0 or -1 (the attempt fails). The client holds no keys, so
	 * the caller signs. */
	int (*eab)(void *ctx, const char *url, char *out, size_t cap, size_t *len);
	void *eab_ctx;
	/* RFC 9773 section 5: the certificate this order replaces (its ARI
	 * identifier), or NULL/"": sent as newOrder's "replaces" only when
	 * the directory has renewalInfo; a newOrder refused with it is sent
	 * once more without it (the CA may not know the certificate: another
	 * account, a CA restarted, alreadyReplaced). */
	const char *replaces;
	/* A certificate profile (Let's Encrypt's and pebble's "shortlived"),
	 * or NULL/"": sent as newOrder's "profile"; the attempt fails when
	 * the directory's meta.profiles does not name it. */
	const char *profile;
	/* An order an earlier boot created and a restart cut short (its
	 * URL, on the directory's host), or NULL/"": after newAccount, the
	 * order is read (POST-as-GET) instead of a newOrder, and taken up
	 * where the CA has it: valid, the certificate is downloaded; ready,
	 * finalized (with csr_b64: the caller's CSR for the key the order
	 * was made with); processing, polled; pending, its authorizations
	 * answered again. One the CA refuses (an error status: gone,
	 * expired) or that is invalid is replaced by a newOrder in the same
	 * attempt; no answer fails the attempt as any request does. */
	const char *order;
};

struct acme_client {
	enum acme_step step;
	enum acme_challenge_type challenge;
	struct acme_req req;
	/* from the directory */
	char dir[ACME_URL_MAX_C + 1], new_nonce[ACME_URL_MAX_C + 1], new_account[ACME_URL_MAX_C + 1],
		new_order[ACME_URL_MAX_C + 1];
	/* RFC 9773's renewalInfo, "" when the directory has none (or a URL
	 * the client would refuse: renewal information is optional) */
	char renewal_info[ACME_URL_MAX_C + 1];
	char replaces[ACME_ARI_ID_MAX + 1];	/* "" once refused */
	char profile[ACME_PROFILE_MAX + 1];
	char account[ACME_URL_MAX_C + 1];	/* the kid; kept across attempts */
	char order[ACME_URL_MAX_C + 1], finalize[ACME_URL_MAX_C + 1], cert[ACME_URL_MAX_C + 1];
	bool resumed;		/* order is cfg's, read rather than created */
	char authz[ACME_NAMES_MAX][ACME_URL_MAX_C + 1];
	unsigned n_authz, k;
	char chall_url[ACME_URL_MAX_C + 1];
	char token[ACME_TOKEN_MAX_C + 1];	/* the challenge being answered */
	char ident[ACME_NAME_MAX + 1];		/* its authorization's name: one of names */
	char nonce[ACME_NONCE_MAX_C + 1];	/* the freshest unused one, or "" */
	bool fetching_nonce;	/* req is HEAD newNonce for the POST of step */
	unsigned bad_nonces, polls;
	u64 bad_nonces_total;	/* badNonce retries, all attempts */
	/* the step's POST, for the badNonce retry and after newNonce */
	char post_url[ACME_URL_MAX_C + 1];
	const char *post_payload;
	size_t post_len;
	char names[ACME_NAMES_MAX][ACME_NAME_MAX + 1];
	unsigned n_names;
	char contact[ACME_CONTACT_MAX + 1];
	int (*eab)(void *ctx, const char *url, char *out, size_t cap, size_t *len);
	void *eab_ctx;
	const char *csr_b64;
	char payload[ACME_PAYLOAD_MAX];
	/* the outcome of a failed attempt */
	char last_error[ACME_ERR_MAX];
	u64 retry_after_s;	/* the CA's, 0 none */
	struct acme_json_tok t[ACME_TOKS];
};

/* Checks cfg (copied but csr_b64, which must outlive the attempt) and
 * asks for the directory. The account URL from an earlier attempt is
 * kept (newAccount with the same key answers it again). ACME_ACT_SEND, or
 * ACME_ACT_FAIL with last_error for a bad cfg. */
enum acme_action acme_client_start(struct acme_client *a, const struct acme_cfg *cfg);

/* The response to req: the next action. */
enum acme_action acme_client_next(struct acme_client *a, const struct acme_resp *r);

/* A renewalInfo response's body (RFC 9773 section 4.2: JSON with
 * "suggestedWindow": {"start": RFC 3339, "end": RFC 3339}, an optional
 * "explanationURL" ignored) into *start and *end, Unix seconds, parsed
 * into t[cap]. 0, or -1 (not that JSON, a date that does not parse, or an
 * end not after its start: RFC 9773 says to treat such a window as none).
 * The caller picks its moment with acme_renew_at() (ari). */
int acme_ari_window(const char *body, size_t len, struct acme_json_tok *t, unsigned cap, u64 *start, u64 *end);

/* An https URL's parts, for the transport: host (a name or an IPv4
 * literal; an IPv6 literal's brackets dropped) into host[hostcap], the
 * port (443 when absent) and the path with its query (at least "/").
 * false for anything that is not https://host[:port][/path]. */
bool acme_url_split(const char *url, char *host, size_t hostcap, u16 *port, const char **path);
/* A URL the client accepts from a CA: https, printable ASCII without
 * space, quote, backslash, < > or control, 9..ACME_URL_MAX_C bytes. */
bool acme_url_ok(const char *url, size_t len);

#endif
