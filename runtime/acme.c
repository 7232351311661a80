/*
 * The ACME client's runtime side (runtime/acme.h, docs/https.md "ACME"),
 * make TLS=1 only: the default image has neither the code nor the keys.
 *
 * One order at a time. The account key (ECDSA P-256) is made once and kept
 * in memory, and on the store when the image has one (make STORAGE=1:
 * runtime/acme_state.c, with the issued certificate and the backoff; the
 * hooks here are marked [acme_state]). Each attempt makes a fresh certificate key
 * from the CSPRNG, its CSR, and runs net/acme/acme_client.c's machine:
 * every request goes through one HTTP client pool over TLS to the
 * directory's host (the machine refuses URLs elsewhere), verified against
 * the TLS clients' CA bundle like any other TLS client. A failed attempt
 * backs off (acme_backoff_s(): 60 s doubling to 6 h, at least the CA's
 * Retry-After) while the certificate served keeps serving.
 *
 * Memory, all from the kernel heap while ACME is configured: the machine's
 * state (22,064 B: 19 URLs of up to 512 bytes, the names, the request
 * payload, 256 JSON tokens), the response buffer
 * ACME_BODY_MAX + 1 (64 KiB: the largest JSON the reader takes and the
 * largest chain tls_keys_load() takes), the JWS buffer ACME_JWS_MAX
 * (12 KiB, under VIREO_HTTP_REQ_MAX with the head), the CSR's base64url
 * (4 KiB). The keys live in the TLS heap (mbedTLS's allocations).
 */
#ifdef VIREO_TLS
#include "runtime/acme.h"
#include "runtime/acme_state.h"
#ifdef VIREO_ACME_KEEP
#include "runtime/acme_ari.h"
#endif

#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lib/fmt.h"
#include "lib/linkset.h"
#include "lib/metrics.h"
#include "lib/string.h"
#include "lwip/ip_addr.h"
#include "mbedtls/pk.h"
#include "net/acme/acme_client.h"
#include "net/acme/acme_renew.h"
#include "net/acme/acme_sign.h"
#include "net/acme/b64url.h"
#include "net/tls/tls.h"
#include "net/tls/tls_cert.h"
#include "net/tls/tls_keys.h"
#include "runtime/api.h"
#include "runtime/http/https.h"
#include "vireo/app.h"
#include "vireo/http.h"
#include "vireo/http_client.h"

static char acme_directory_opt[ACME_URL_MAX_C + 1];
CMDLINE_PARAM(acme_directory, .key = "acme.directory", .type = CMDLINE_STR, .dst = acme_directory_opt,
	      .dst_size = sizeof(acme_directory_opt), .def = "", .values = "an https URL (at most 512 bytes)",
	      .help = "the ACME CA's directory (make TLS=1): when set, the appliance orders its certificate "
		      "there by HTTP-01 and serves it; empty: no ACME");
static char acme_names_opt[CMDLINE_MAX];
CMDLINE_PARAM(acme_names, .key = "acme.names", .type = CMDLINE_STR, .dst = acme_names_opt,
	      .dst_size = sizeof(acme_names_opt), .def = "tls.names=", .def_prose = true,
	      .values = "comma-separated DNS names (at most 8)",
	      .help = "the names ACME orders the certificate for (make TLS=1)");
static char acme_contact_opt[ACME_CONTACT_MAX + 1];
CMDLINE_PARAM(acme_contact, .key = "acme.contact", .type = CMDLINE_STR, .dst = acme_contact_opt,
	      .dst_size = sizeof(acme_contact_opt), .def = "", .values = "mailto:address",
	      .help = "the ACME account's contact (make TLS=1); empty: none");

/* External Account Binding (RFC 8555 section 7.3.4): the key identifier
 * and the MAC key a CA that requires it hands out with the account. The
 * MAC key is a secret: hidden in the configuration's origin log, decoded
 * here at parse time and never refused there (a refusal's warning would
 * quote it); a bad one is remembered, and acme_start() says so by rule. */
static char acme_eab_kid_opt[ACME_EAB_KID_MAX + 1];
CMDLINE_PARAM(acme_eab_kid, .key = "acme.eab_kid", .type = CMDLINE_STR, .dst = acme_eab_kid_opt,
	      .dst_size = sizeof(acme_eab_kid_opt), .def = "", .values = "the CA's key identifier (at most 128 bytes)",
	      .help = "External Account Binding's key identifier (make TLS=1), with acme.eab_hmac=; empty: none");
static u8 acme_eab_key[ACME_EAB_KEY_MAX];
static size_t acme_eab_key_len;
static bool acme_eab_key_bad;
static int acme_eab_hmac_parse(const char *val, void *dst, char *why, size_t why_len)
{
	size_t n = strlen(val);

	(void)dst, (void)why, (void)why_len;
	memset(acme_eab_key, 0, sizeof acme_eab_key);
	acme_eab_key_len = 0;
	acme_eab_key_bad = n > 0 && (b64url_decode(val, n, acme_eab_key, sizeof acme_eab_key, &acme_eab_key_len) != 0 ||
				     acme_eab_key_len == 0);
	if (acme_eab_key_bad) {
		memset(acme_eab_key, 0, sizeof acme_eab_key);
		acme_eab_key_len = 0;
	}
	return 0;
}
CMDLINE_PARAM(acme_eab_hmac, .key = "acme.eab_hmac", .type = CMDLINE_CUSTOM, .parse = acme_eab_hmac_parse,
	      .def = "none", .secret = true, .values = "base64url of 1-128 bytes (empty: none)",
	      .help = "External Account Binding's MAC key (make TLS=1), as the CA gives it; never logged");

static char acme_profile_opt[ACME_PROFILE_MAX + 1];
CMDLINE_PARAM(acme_profile, .key = "acme.profile", .type = CMDLINE_STR, .dst = acme_profile_opt,
	      .dst_size = sizeof(acme_profile_opt), .def = "", .values = "a profile the CA's directory names",
	      .help = "the certificate profile ACME orders (make TLS=1), e.g. shortlived; empty: the CA's default");

static const char *const acme_challenge_choices[] = { "http-01", "tls-alpn-01", NULL };
static int acme_challenge_opt;	/* enum acme_challenge_type */
CMDLINE_PARAM(acme_challenge, .key = "acme.challenge", .type = CMDLINE_ENUM, .dst = &acme_challenge_opt,
	      .choices = acme_challenge_choices, .def = "http-01",
	      .help = "how ACME proves the names (make TLS=1): http-01 on the HTTP port, tls-alpn-01 on the HTTPS "
		      "port (acme-tls/1, RFC 8737)");

#define ACME_BODY_MAX	65536	/* = ACME_JSON_SIZE_MAX = TLS_KEYS_MAX_INPUT */
#define ACME_JWS_MAX	12288
#define ACME_HDR_MAX	128	/* Content-Type, Retry-After kept; longer: absent */
#define ACME_FIRST_MS	500	/* the first attempt, after HTTPS is up */

static const char *const acme_state_names[] = { "off", "ordering", "backoff", "valid", "error" };
enum acme_state { AS_OFF, AS_ORDERING, AS_BACKOFF, AS_VALID, AS_ERROR };

static struct {
	enum acme_state state;
	struct acme_client *m;
	struct acme_cfg cfg;
	struct tls_names names;
	mbedtls_pk_context account, cert_key;
	bool have_account, have_cert_key;
	char thumb[ACME_THUMB_LEN + 1];
	char *csr;		/* base64url, ACME_CSR_B64_MAX + 1 */
	char *jws;		/* ACME_JWS_MAX */
	char *body;		/* ACME_BODY_MAX + 1 */
	size_t body_len;
	char host[ACME_URL_MAX_C + 1];
	u16 port;
	vireo_http_pool pool;
	struct vireo_timer timer;
	/* the response head's fields */
	int status;
	char ctype[ACME_HDR_MAX], retry[ACME_HDR_MAX], nonce[ACME_NONCE_MAX_C + 2], location[ACME_URL_MAX_C + 2];
	/* HTTP-01: the token served and its key authorization */
	char token[ACME_TOKEN_MAX_C + 1];
	char keyauthz[ACME_KEYAUTHZ_MAX];
	/* what operators see */
	unsigned failures;	/* in a row */
	u64 orders, issued, failed, bad_nonces, challenges_served;
	u64 next_s;		/* seconds until the next attempt, when backing off */
	u64 not_before, not_after;	/* the certificate issued last, Unix s */
	u64 renew_at;		/* Unix s: when to order again (valid) */
	char last_error[ACME_ERR_MAX];
	bool account_kept;	/* the account key came from the store */
	/* RFC 9773: the served certificate's identifier ("" none: no AKI),
	 * the CA's window (0 none yet), the next poll (Unix s) */
	char ari_id[ACME_ARI_ID_MAX + 1];
	u64 ari_start, ari_end, ari_next;
	bool ari_busy;
	unsigned ari_failures;	/* in a row */
	u64 ari_ok, ari_failed;
#ifdef VIREO_ACME_KEEP
	char *resume_order;	/* [acme_state] an order to take up (kmalloc), or NULL */
	enum acme_action held;	/* the step after a newOrder, until the order is kept */
	/* [acme_state] RFC 9773's plan (runtime/acme_ari.h): its url is
	 * m->renewal_info[0], its next and failures ari_next and
	 * ari_failures (copied in and out around each call) */
	struct acme_ari_poll ari;
#endif
} acme;

static void acme_keep_state(u64 wait_s);	/* [acme_state] */
static void acme_keep_issued(void);
#ifdef VIREO_ACME_KEEP
static void acme_keep_ari(void);
#else
#define acme_keep_ari() ((void)0)
#endif
static bool acme_resume(void);

static const char *acme_names(void)
{
	return acme_names_opt[0] ? acme_names_opt : https_tls_names();
}

/* The best wall clock, the TLS clients' too (the firmware's until SNTP
 * sets it): Unix seconds, false while there is none. */
static bool acme_now(u64 *secs)
{
	u64 ns;

	if (wallclock_best(&ns) == WALLCLOCK_NONE)
		return false;
	*secs = ns / NSEC_PER_SEC;
	return true;
}

static int acme_rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	random_bytes(out, len);
	return 0;
}

/* acme_cfg's eab: the externalAccountBinding JWS over the account's JWK. */
static int acme_eab(void *ctx, const char *url, char *out, size_t cap, size_t *len)
{
	char jwk[ACME_JWK_MAX];
	size_t n;

	(void)ctx;
	if (acme_jwk(&acme.account, jwk, sizeof jwk, &n) != 0)
		return -1;
	return acme_eab_jws(acme_eab_kid_opt, acme_eab_key, acme_eab_key_len, url, jwk, n, out, cap, len);
}

static void acme_cert_lines(const char *args);

/* ---- HTTP-01: /.well-known/acme-challenge/<token> ---- */

static void acme_http01(vireo_req r, void *arg)
{
	const char *tok = vireo_req_subpath(r);

	(void)arg;
	if (!acme.token[0] || !tok || strcmp(tok, acme.token) != 0) {
		vireo_resp_error(r, 404);
		return;
	}
	acme.challenges_served++;
	vireo_resp_send(r, 200, "application/octet-stream", acme.keyauthz, strlen(acme.keyauthz));
}

int acme_route_add(void)
{
	static const struct vireo_route route = { .path = "/.well-known/acme-challenge/", .prefix = true,
						  .methods = VIREO_GET, .handler = acme_http01 };
	tls_cert_cmd_more = acme_cert_lines;

	return api_route_add(&route, API_ROUTE_RUNTIME | API_ROUTE_PLAIN);
}

/* ---- the transport ---- */

static void acme_step(enum acme_action act);

/* The order is over (issued or failed): no challenge is answered any more,
 * and the key authorization is wiped. */
static void acme_challenge_forget(void)
{
	acme.token[0] = '\0';
	memset(acme.keyauthz, 0, sizeof acme.keyauthz);
	https_alpn01_clear(NULL);
}

static void acme_copy_hdr(vireo_http_call h, const char *name, char *out, size_t cap)
{
	const char *v = vireo_http_header(h, name);
	size_t n = v ? strlen(v) : 0;

	/* longer than the machine would take (a URL over ACME_URL_MAX_C, a
	 * nonce over ACME_NONCE_MAX_C): as absent, which it refuses or works
	 * around (no Location fails the step; no nonce fetches one) */
	if (n >= cap)
		n = 0;
	memcpy(out, v ? v : "", n);
	out[n] = '\0';
}

static void acme_on_head(vireo_http_call h, const struct vireo_http_response *r, void *ctx)
{
	(void)ctx;
	acme.status = r->status;
	acme_copy_hdr(h, "Content-Type", acme.ctype, sizeof acme.ctype);
	acme_copy_hdr(h, "Retry-After", acme.retry, sizeof acme.retry);
	acme_copy_hdr(h, "Replay-Nonce", acme.nonce, sizeof acme.nonce);
	acme_copy_hdr(h, "Location", acme.location, sizeof acme.location);
}

static size_t acme_on_body(vireo_http_call h, const void *data, size_t len, void *ctx)
{
	size_t room = ACME_BODY_MAX - acme.body_len;

	(void)h, (void)ctx;
	/* the request's max_body makes the client stop at ACME_BODY_MAX */
	if (len > room)
		len = room;
	memcpy(acme.body + acme.body_len, data, len);
	acme.body_len += len;
	return len;
}

#ifdef VIREO_ACME_KEEP
static void acme_order_kept(void)
{
	acme_step(acme.held);
}
#endif

static void acme_on_done(vireo_http_call h, int err, void *ctx)
{
	struct acme_resp r = { .err = err, .status = acme.status, .body = acme.body, .len = acme.body_len };

	(void)h, (void)ctx;
	if (err)
		kprintf("acme: %s: the CA did not answer (%s)\n", acme_step_name(acme.m->step), vireo_http_err_str(err));
	acme.body[acme.body_len] = '\0';
	r.content_type = acme.ctype[0] ? acme.ctype : NULL;
	r.retry_after = acme.retry[0] ? acme.retry : NULL;
	r.nonce = acme.nonce[0] ? acme.nonce : NULL;
	r.location = acme.location[0] ? acme.location : NULL;
	if (!acme_now(&r.now))
		r.now = 0;
#ifdef VIREO_ACME_KEEP
	{
		/* [acme_state] a newOrder's answer: the order kept, with the
		 * key its CSR is for, before anything is answered, so a
		 * restart takes it up rather than ordering again */
		bool new_order = acme.m->step == ACME_ORDER && !acme.m->resumed && !acme.m->fetching_nonce;
		enum acme_action act = acme_client_next(acme.m, &r);

		if (new_order && acme.m->step > ACME_ORDER && acme.m->step < ACME_FAILED && acme_keep()) {
			acme.held = act;
			acme_keep()->order(acme_directory_opt, acme_names(), acme.m->order, &acme.cert_key,
					   acme_order_kept);
			return;
		}
		acme_step(act);
	}
#else
	acme_step(acme_client_next(acme.m, &r));
#endif
}

/* Sends the machine's request now. */
static void acme_send(void)
{
	const struct acme_req *q = &acme.m->req;
	char host[ACME_URL_MAX_C + 1], headers[160];
	const char *path;
	size_t len = 0;
	u16 port;
	int err;

	if (!acme_url_split(q->url, host, sizeof host, &port, &path)) {
		/* the machine checked it: cannot happen */
		strlcpy(acme.m->last_error, "a request URL that does not split", sizeof acme.m->last_error);
		acme.m->step = ACME_FAILED;
		acme_step(ACME_ACT_FAIL);
		return;
	}
	if (q->method == ACME_POST) {
		struct acme_jws_in in = { .key = &acme.account, .kid = q->use_jwk ? NULL : acme.m->account,
					  .nonce = q->nonce, .url = q->url, .payload = q->payload,
					  .payload_len = q->payload_len };

		if (acme_jws(&in, acme_rng, NULL, acme.jws, ACME_JWS_MAX, &len) != 0) {
			strlcpy(acme.m->last_error, "the request could not be signed", sizeof acme.m->last_error);
			acme.m->step = ACME_FAILED;
			acme_step(ACME_ACT_FAIL);
			return;
		}
	}
	ksnprintf(headers, sizeof headers, "User-Agent: vireo-acme\r\n%s%s",
		  q->method == ACME_POST ? "Content-Type: application/jose+json\r\n" : "",
		  q->want_pem ? "Accept: application/pem-certificate-chain\r\n" : "");
	acme.status = 0;
	acme.body_len = 0;
	acme.ctype[0] = acme.retry[0] = acme.nonce[0] = acme.location[0] = '\0';
	err = vireo_http_request(acme.pool,
				 &(struct vireo_http_request){ .method = q->method == ACME_POST ? "POST" :
									 q->method == ACME_HEAD ? "HEAD" : "GET",
							       .target = path, .headers = headers,
							       .body = q->method == ACME_POST ? acme.jws : NULL,
							       .body_len = q->method == ACME_POST ? len : 0,
							       .max_body = ACME_BODY_MAX, .on_head = acme_on_head,
							       .on_body = acme_on_body, .on_done = acme_on_done },
				 &(vireo_http_call){ 0 });
	if (err) {
		acme_on_done((vireo_http_call){ 0 }, -VIREO_HTTP_ECONNECT, NULL);
		return;
	}
}

static void acme_attempt(struct vireo_timer *t, void *arg);

static void acme_delayed(struct vireo_timer *t, void *arg)
{
	(void)t, (void)arg;
	acme_send();
}

/* ---- installing the certificate ---- */

static bool acme_install(void)
{
	unsigned char *der = kmalloc(512);
	char id[ACME_ARI_ID_MAX + 1];
	struct tls_keys k;
	char err[128];
	int n, ret;

	if (!der)
		return false;
	/* the key to DER (written at the end of the buffer) for
	 * tls_keys_load(), which checks the pair; wiped after */
	n = mbedtls_pk_write_key_der(&acme.cert_key, der, 512);
	if (n <= 0) {
		kfree(der);
		strlcpy(acme.last_error, "the certificate key could not be written", sizeof acme.last_error);
		return false;
	}
	ret = tls_keys_load(&k, (const unsigned char *)acme.body, acme.body_len, der + 512 - n, (size_t)n, acme_rng,
			    NULL, err, sizeof err);
	/* [acme_state] the chain and key kept on the store (before the wipe) */
	if (ret == 0 && acme_keep())
		acme_keep()->issued(acme_directory_opt, acme_names(), acme.body, acme.body_len, der + 512 - n,
				    (size_t)n);
	memset(der, 0, 512);
	__asm__ volatile("" : : "r"(der) : "memory");	/* the wipe is not optimised away */
	kfree(der);
	if (ret != 0) {
		ksnprintf(acme.last_error, sizeof acme.last_error, "the issued chain was refused: %s", err);
		return false;
	}
	{
		struct tls_cert_info info;

		tls_cert_describe(&k.chain, &info);
		acme.not_before = info.not_before;
		acme.not_after = info.not_after;
		if (acme_ari_cert_id(&k.chain, id, sizeof id) != 0)
			id[0] = '\0';
	}
	if (https_cert_install(&k, "acme") != 0) {
		tls_keys_free(&k);
		strlcpy(acme.last_error, "the server refused the issued certificate", sizeof acme.last_error);
		return false;
	}
	/* a new certificate: its own renewal information */
	memcpy(acme.ari_id, id, sizeof id);
	acme.ari_start = acme.ari_end = 0;
	acme.ari_failures = 0;
#ifdef VIREO_ACME_KEEP
	/* the order's machine read the directory just now */
	acme.ari = (struct acme_ari_poll){ .url = acme.m->renewal_info[0] != '\0', .fresh = true,
					   .off = !acme.m->renewal_info[0] };
#endif
	return true;
}

/* ---- the attempts ---- */


static void acme_ari_fetch(void);
#ifdef VIREO_ACME_KEEP
static void acme_dir_fetch(void);

/* [acme_state] RFC 9773's plan at now: what is due (runtime/acme_ari.h). */
static enum acme_ari_do acme_ari_plan(u64 now)
{
	acme.ari.url = acme.m->renewal_info[0] != '\0';
	acme.ari.next = acme.ari_next;
	acme.ari.failures = acme.ari_failures;
	return acme.ari_id[0] ? acme_ari_due(&acme.ari, now) : ACME_ARI_OFF;
}

/* After acme_ari_dir_read() or acme_ari_polled(). */
static void acme_ari_plan_out(void)
{
	if (!acme.ari.url)
		acme.m->renewal_info[0] = '\0';
	acme.ari_next = acme.ari.next;
	acme.ari_failures = acme.ari.failures;
}
#endif

/* Renewal information is asked for when the directory has renewalInfo
 * and the served certificate an identifier (RFC 9773). */
static bool acme_ari_on(void)
{
	return acme.m->renewal_info[0] && acme.ari_id[0];
}

/* The renewal timer: wakes at most a day apart (a timer's milliseconds
 * fit 49 days), orders once the wall clock reaches renew_at and asks for
 * renewal information once it reaches ari_next. */
static void acme_renew_tick(struct vireo_timer *t, void *arg)
{
	u64 now, wait = 86400, at;

	(void)arg;
	if (acme_now(&now)) {
		if (now >= acme.renew_at) {
			kprintf("acme: renewing the certificate (not after %lu)\n", (unsigned long)acme.not_after);
			acme_attempt(t, NULL);
			return;
		}
#ifdef VIREO_ACME_KEEP
		/* [acme_state] with no renewalInfo URL (a certificate kept
		 * without its acme.ari, or a URL gone stale), the directory
		 * is read for it first */
		switch (acme_ari_plan(now)) {
		case ACME_ARI_POLL:
			acme_ari_fetch();
			return;
		case ACME_ARI_DIR:
			acme_dir_fetch();
			return;
		case ACME_ARI_WAIT:
			at = acme.ari_next < acme.renew_at ? acme.ari_next : acme.renew_at;
			break;
		default:
			at = acme.renew_at;
		}
#else
		if (acme_ari_on() && now >= acme.ari_next) {
			acme_ari_fetch();
			return;
		}
		at = acme_ari_on() && acme.ari_next < acme.renew_at ? acme.ari_next : acme.renew_at;
#endif
		wait = at - now;
	}
	vireo_timer_init(&acme.timer, acme_renew_tick, NULL);
	vireo_timer_start(&acme.timer, (u32)((wait > 86400 ? 86400 : wait) * 1000));
}

/* ---- renewal information (RFC 9773) ----
 *
 * An unauthenticated GET of renewalInfo/<identifier> on the CA's pool
 * (only while the certificate is valid: no order runs, so the response
 * buffer and the machine's JSON tokens are free). A window moves
 * renew_at to a uniform point in it (kept while the CA answers the same
 * window; a new window draws again); the next poll is the CA's
 * Retry-After within [ACME_ARI_POLL_MIN_S, ACME_ARI_POLL_MAX_S], 6 h
 * without one. A failure (no answer, not 200, not a window) keeps the
 * last window the CA gave for this certificate, else the lifetime rule,
 * and polls again after acme_backoff_s() (60 s doubling to 6 h): the
 * served certificate never depends on it. */
#ifndef VIREO_ACME_KEEP	/* (runtime/acme_ari.h's) */
#define ACME_ARI_POLL_MIN_S	60u
#define ACME_ARI_POLL_S		(6u * 3600)
#define ACME_ARI_POLL_MAX_S	(24u * 3600)
#endif

static void acme_ari_done(vireo_http_call h, int err, void *ctx)
{
	u64 now, st, en, ra = 0;
	bool fresh;
#ifdef VIREO_ACME_KEEP
	bool failed;
#endif

	(void)h, (void)ctx;
	acme.ari_busy = false;
	if (!acme_now(&now))
		now = 0;
	if (acme.retry[0] && !acme_retry_after(acme.retry, now, &ra))
		ra = 0;
#ifdef VIREO_ACME_KEEP
	{
		/* [acme_state] the plan: a stale URL is dropped for the
		 * directory's, Retry-After clamped */
		bool window = !err && acme.status == 200 &&
			      acme_ari_window(acme.body, acme.body_len, acme.m->t, ACME_TOKS, &st, &en) == 0;

		acme_ari_plan(now);
		acme_ari_polled(&acme.ari, err ? 0 : acme.status, window, ra, now, random_u64());
		acme_ari_plan_out();
		failed = !window;
	}
	if (failed) {
		acme.ari_failed++;
		kprintf("acme: renewal information failed (%s, HTTP %d); %s in %lu s\n",
			err ? vireo_http_err_str(err) : "not a window", acme.status,
			acme.m->renewal_info[0] ? "next poll" : "the directory read again for its URL",
			(unsigned long)(acme.ari_next - now));
	} else {
		acme.ari_ok++;
#else
	if (err || acme.status != 200 ||
	    acme_ari_window(acme.body, acme.body_len, acme.m->t, ACME_TOKS, &st, &en) != 0) {
		acme.ari_failed++;
		acme.ari_failures++;
		acme.ari_next = now + acme_backoff_s(acme.ari_failures, ra, random_u64());
		kprintf("acme: renewal information failed (%s, HTTP %d); next poll in %lu s\n",
			err ? vireo_http_err_str(err) : "not a window", acme.status, (unsigned long)(acme.ari_next - now));
	} else {
		acme.ari_ok++;
		acme.ari_failures = 0;
#endif
		fresh = st != acme.ari_start || en != acme.ari_end;
		acme.ari_start = st, acme.ari_end = en;
		if (fresh)
			acme.renew_at = acme_renew_at(&(struct acme_renew_in){ .not_before = acme.not_before,
									      .not_after = acme.not_after,
									      .now = now, .ari = true,
									      .ari_start = st, .ari_end = en,
									      .rnd = random_u64() });
#ifndef VIREO_ACME_KEEP
		ra = ra ? ra : ACME_ARI_POLL_S;
		acme.ari_next = now + (ra < ACME_ARI_POLL_MIN_S ? ACME_ARI_POLL_MIN_S :
				       ra > ACME_ARI_POLL_MAX_S ? ACME_ARI_POLL_MAX_S : ra);
#endif
		kprintf("acme: renewal window %ld..%ld s from now; renewal in %lu s; next poll in %lu s\n",
			(long)(st - now), (long)(en - now),
			(unsigned long)(acme.renew_at > now ? acme.renew_at - now : 0),
			(unsigned long)(acme.ari_next - now));
	}
	acme_keep_ari();	/* [acme_state] */
	acme_renew_tick(&acme.timer, NULL);
}

/* An unauthenticated GET of target on the CA's pool for the renewal
 * information steps (a poll, a directory read): done gets the answer, or
 * a connect failure at once. */
static void acme_plain_get(const char *target, void (*done)(vireo_http_call, int, void *))
{
	acme.status = 0;
	acme.body_len = 0;
	acme.ctype[0] = acme.retry[0] = acme.nonce[0] = acme.location[0] = '\0';
	acme.ari_busy = true;
	if (vireo_http_request(acme.pool,
			       &(struct vireo_http_request){ .method = "GET", .target = target,
							     .headers = "User-Agent: vireo-acme\r\n",
							     .max_body = ACME_BODY_MAX, .on_head = acme_on_head,
							     .on_body = acme_on_body, .on_done = done },
			       &(vireo_http_call){ 0 }) != 0)
		done((vireo_http_call){ 0 }, -VIREO_HTTP_ECONNECT, NULL);
}

static void acme_ari_fetch(void)
{
	char host[ACME_URL_MAX_C + 1], target[ACME_URL_MAX_C + ACME_ARI_ID_MAX + 2];
	const char *path;
	u16 port;

	if (!acme_url_split(acme.m->renewal_info, host, sizeof host, &port, &path))
		return;	/* the machine checked it: cannot happen */
	ksnprintf(target, sizeof target, "%s/%s", path, acme.ari_id);
	acme_plain_get(target, acme_ari_done);
}

#ifdef VIREO_ACME_KEEP
/* [acme_state] The directory read for its renewalInfo URL (RFC 9773
 * section 3), while the certificate is valid as a poll is: an
 * unauthenticated GET on the CA's pool, the JSON parsed into the
 * machine's tokens (free: no order runs), the URL taken only on the
 * directory's origin and one the client takes (acme_url_ok()), as the
 * machine takes the directory's. */
static void acme_dir_done(vireo_http_call h, int err, void *ctx)
{
	struct acme_json j;
	char *url = acme.m->renewal_info;
	size_t o = 8, n = 0;
	bool ok, has = false;
	u64 now;

	(void)h, (void)ctx;
	acme.ari_busy = false;
	if (!acme_now(&now))
		now = 0;
	ok = !err && acme.status == 200 && acme_json_parse(&j, acme.body, acme.body_len, acme.m->t, ACME_TOKS) == 0;
	url[0] = '\0';
	if (ok && acme_json_type(&j, acme_json_get(&j, 0, "renewalInfo")) >= 0) {
		while (acme_directory_opt[o] && acme_directory_opt[o] != '/')
			o++;	/* the origin: https://host[:port] */
		has = acme_json_str(&j, acme_json_get(&j, 0, "renewalInfo"), url, ACME_URL_MAX_C + 1, &n) == 0 &&
		      acme_url_ok(url, n) && n > o && memcmp(url, acme_directory_opt, o) == 0 && url[o] == '/';
		if (!has)
			url[0] = '\0';
	}
	acme_ari_plan(now);
	acme_ari_dir_read(&acme.ari, ok, has, now, random_u64());
	acme_ari_plan_out();
	if (!ok)
		kprintf("acme: the directory could not be read for renewal information (%s, HTTP %d); again in %lu s\n",
			err ? vireo_http_err_str(err) : "not JSON", acme.status, (unsigned long)(acme.ari_next - now));
	else
		kprintf(has ? "acme: the directory names renewal information: asking it for %s\n" :
			      "acme: the directory names no renewal information (%s): renewal by the lifetime only\n",
			acme.ari_id);
	acme_renew_tick(&acme.timer, NULL);
}

static void acme_dir_fetch(void)
{
	char host[ACME_URL_MAX_C + 1];
	const char *path;
	u16 port;

	if (!acme_url_split(acme_directory_opt, host, sizeof host, &port, &path))
		return;	/* acme_start() checked it: cannot happen */
	acme_plain_get(path, acme_dir_done);
}
#endif

/* After an issue: when to renew (acme_renew_at(): a third of the
 * lifetime left, half for 10 days or less, earlier by a random part of
 * at most a 16th), by the wall clock. */
static void acme_schedule_renewal(void)
{
	struct acme_renew_in in = { .not_before = acme.not_before, .not_after = acme.not_after,
				    .rnd = random_u64() };
	if (!acme_now(&in.now)) {
		acme.renew_at = acme.not_after;	/* checked again daily, once there is a clock */
		kprintf("acme: no wall clock: renewal when the certificate ends\n");
	} else {
		acme.renew_at = acme_renew_at(&in);
		kprintf("acme: renewal in %lu s (lifetime %lu s)%s\n", (unsigned long)(acme.renew_at - in.now),
			(unsigned long)(acme.not_after - acme.not_before),
			acme_ari_on() ? "; asking the CA" : "");
		acme.ari_next = in.now;
	}
	acme_renew_tick(&acme.timer, NULL);
}

/* The next attempt in s seconds (the timer's period capped at a day). */
static void acme_wait(u64 s)
{
	acme.next_s = s;
	acme.state = AS_BACKOFF;
	vireo_timer_init(&acme.timer, acme_attempt, NULL);
	vireo_timer_start(&acme.timer, s > 86400 ? 86400u * 1000 : (u32)(s * 1000));
}

static void acme_backoff(void)
{
	u64 s;

	acme.failures++;
	acme.failed++;
	s = acme_backoff_s(acme.failures, acme.m->retry_after_s, random_u64());
	kprintf("acme: order failed: %s; the certificate served stays; next attempt in %lu s\n", acme.last_error,
		(unsigned long)s);
	acme_keep_state(s);	/* [acme_state] */
	acme_wait(s);
}

static void acme_step(enum acme_action act)
{
	struct acme_client *m = acme.m;
	bool ok;

	acme.bad_nonces = m->bad_nonces_total;
	switch (act) {
	case ACME_ACT_SERVE:
		if (acme_key_authz(m->token, acme.thumb, acme.keyauthz, sizeof acme.keyauthz) != 0) {
			strlcpy(m->last_error, "the key authorization could not be made", sizeof m->last_error);
			m->step = ACME_FAILED;
			acme_step(ACME_ACT_FAIL);
			return;
		}
		if (m->challenge == ACME_TLSALPN01) {
			u8 id[32];
			int err;

			acme_alpn_digest(acme.keyauthz, id);
			https_alpn01_clear(NULL);
			err = https_alpn01_set(m->ident, id);
			memset(id, 0, sizeof id);
			if (err) {
				ksnprintf(m->last_error, sizeof m->last_error,
					  "the tls-alpn-01 certificate for %s could not be made (%d)", m->ident, err);
				m->step = ACME_FAILED;
				acme_step(ACME_ACT_FAIL);
				return;
			}
		} else {
			memcpy(acme.token, m->token, sizeof acme.token);
		}
		kprintf("acme: authorization %u of %u (%s) pending: answering %s (token %s)\n", m->k + 1, m->n_authz,
			m->ident, acme_challenge_choices[m->challenge], m->token);
		__attribute__((fallthrough));	/* send the challenge's POST */
	case ACME_ACT_SEND:
		if (m->req.delay_s) {
			vireo_timer_init(&acme.timer, acme_delayed, NULL);
			vireo_timer_start(&acme.timer, m->req.delay_s * 1000);
		} else {
			acme_send();
		}
		return;
	case ACME_ACT_DONE:
		acme_challenge_forget();
		ok = acme_install();
		/* the served copy is the one tls_keys_load() made: this one goes */
		mbedtls_pk_free(&acme.cert_key);
		acme.have_cert_key = false;
		if (!ok) {
			acme_backoff();
			return;
		}
		acme.issued++;
		acme.failures = 0;
		acme.last_error[0] = '\0';
		acme.state = AS_VALID;
		acme_keep_issued();	/* [acme_state] */
		kprintf("acme: certificate issued for %u name%s by %s; serving it\n", acme.names.n,
			acme.names.n == 1 ? "" : "s", acme.host);
		acme_schedule_renewal();
		acme_keep_ari();	/* [acme_state] */
		return;
	case ACME_ACT_FAIL:
		acme_challenge_forget();
		memcpy(acme.last_error, m->last_error, sizeof acme.last_error);
		acme_backoff();
		return;
	}
}

static void acme_attempt(struct vireo_timer *t, void *arg)
{
#ifdef VIREO_ACME_KEEP
	enum acme_action act;
#endif
	unsigned char *der = NULL;
	const unsigned char *p;
	size_t len, b64len;
	int ret;

	(void)t, (void)arg;
	acme.state = AS_ORDERING;
	acme.orders++;
	/* [acme_state] kept first as if it will fail: a boot cut short
	 * mid-order waits as after a failure before ordering again */
	acme.failures++;
	acme_keep_state(acme_backoff_s(acme.failures, 0, random_u64()));
	acme.failures--;
#ifdef VIREO_ACME_KEEP
	/* [acme_state] an order taken up keeps its key (the one kept) */
	ret = 0;
	if (!acme.resume_order)
#endif
	{
		if (acme.have_cert_key)
			mbedtls_pk_free(&acme.cert_key);
		acme.have_cert_key = false;
		ret = acme_key_generate(&acme.cert_key, acme_rng, NULL);
	}
	if (ret == 0) {
		acme.have_cert_key = true;
		der = kmalloc(ACME_CSR_DER_MAX);
		ret = der ? acme_csr(&acme.cert_key, &acme.names, acme_rng, NULL, der, ACME_CSR_DER_MAX, &p, &len) : -1;
	}
	if (ret == 0)
		ret = b64url_encode(p, len, acme.csr, ACME_CSR_B64_MAX + 1, &b64len);
	kfree(der);
	if (ret != 0) {
		ksnprintf(acme.m->last_error, sizeof acme.m->last_error, "the key or CSR could not be made (%d)", ret);
		memcpy(acme.last_error, acme.m->last_error, sizeof acme.last_error);
		acme.m->retry_after_s = 0;
		acme_backoff();
		return;
	}
#ifdef VIREO_ACME_KEEP
	kprintf(acme.resume_order ? "acme: taking up the kept order for %s from %s\n" :
				    "acme: ordering a certificate for %s from %s\n", acme_names(), acme.host);
	acme.cfg.order = acme.resume_order;	/* copied by the start */
	act = acme_client_start(acme.m, &acme.cfg);
	kfree(acme.resume_order);
	acme.resume_order = NULL;
	acme.cfg.order = NULL;
	acme_step(act);
#else
	kprintf("acme: ordering a certificate for %s from %s\n", acme_names_opt[0] ? acme_names_opt : https_tls_names(),
		acme.host);
	acme_step(acme_client_start(acme.m, &acme.cfg));
#endif
}

/* ---- [acme_state] kept on the store (runtime/acme_state.c) ---- */

LINKSET_DECLARE(acme_keep, const struct acme_keep);

const struct acme_keep *acme_keep(void)
{
	return LINKSET_COUNT(acme_keep) ? *LINKSET_BEGIN(acme_keep) : NULL;
}

/* The state before an attempt or after a failure: failures in a row, the
 * next attempt after wait_s. */
static void acme_keep_state(u64 wait_s)
{
	struct acme_kept_state st = { .failures = acme.failures };
	u64 now;

	if (!acme_keep())
		return;
	if (acme_now(&now)) {
		st.next_at = now + wait_s;
		st.attempt_at = now;
	}
	acme_keep()->state(acme_directory_opt, &st);
}

/* Issued: no failure now, and the account's URL kept with its key. */
static void acme_keep_issued(void)
{
	if (!acme_keep())
		return;
	acme_keep_state(0);
	acme_keep()->account_keep(acme_directory_opt, &acme.account, acme.m->account);
#ifdef VIREO_ACME_KEEP
	acme_keep()->order(acme_directory_opt, acme_names(), "", NULL, NULL);	/* none left to take up */
#endif
}

#ifdef VIREO_ACME_KEEP
/* The served certificate's renewal information, as it stands. */
static void acme_keep_ari(void)
{
	if (acme_keep() && acme_ari_on())
		acme_keep()->ari(acme_directory_opt,
				 &(struct acme_kept_ari){ .id = acme.ari_id, .url = acme.m->renewal_info,
							  .start = acme.ari_start, .end = acme.ari_end,
							  .next = acme.ari_next, .renew_at = acme.renew_at });
}
#endif

/* At start: the certificate kept for these names from this directory is
 * served with no order, renewal as after its issue; a kept backoff (an
 * earlier boot's failures, or an attempt cut short) is waited out. True
 * when that scheduled the next step. */
static bool acme_resume(void)
{
	struct acme_resume *rp = kzalloc(sizeof *rp), r;
#ifdef VIREO_ACME_KEEP
	u64 now;
#endif

	if (!acme_keep() || !rp) {
		kfree(rp);
		return false;
	}
	*rp = (struct acme_resume){ .directory = acme_directory_opt, .names = acme_names(), .n_names = acme.names.n,
				    .order_key = &acme.cert_key };
	acme_keep()->resume(rp);
	r = *rp;
	kfree(rp);
	acme.failures = r.failures;
	if (r.have) {
		acme.not_before = r.not_before;
		acme.not_after = r.not_after;
		acme.state = AS_VALID;
		memcpy(acme.ari_id, r.ari_id, sizeof acme.ari_id);
	}
#ifdef VIREO_ACME_KEEP
	if (r.order[0] && (acme.resume_order = kmalloc(strlen(r.order) + 1)) != NULL) {
		/* an order cut short: taken up (reading it is no new order)
		 * at once the first time; cut short again in a row, after
		 * the backoff the cut attempt kept (wait_s) */
		strlcpy(acme.resume_order, r.order, strlen(r.order) + 1);
		acme.have_cert_key = true;
		if (r.wait_s) {
			acme_wait(r.wait_s);
			return true;
		}
		acme.state = AS_ORDERING;
		vireo_timer_init(&acme.timer, acme_attempt, NULL);
		vireo_timer_start(&acme.timer, ACME_FIRST_MS);
		return true;
	}
	if (r.order[0])
		mbedtls_pk_free(&acme.cert_key);	/* no memory: a new order */
#endif
	if (r.wait_s) {
		acme_wait(r.wait_s);
		return true;
	}
	if (!r.have)
		return false;
#ifdef VIREO_ACME_KEEP
	if (r.ari_kept && acme_now(&now)) {
		/* RFC 9773 polled on from where the last boot left it */
		strlcpy(acme.m->renewal_info, r.ari_url, sizeof acme.m->renewal_info);
		acme.ari_start = r.ari_start, acme.ari_end = r.ari_end;
		acme.ari_next = r.ari_next, acme.renew_at = r.renew_at;
		kprintf("acme: renewal information for %s kept on the store: window %ld..%ld s from now (0..0: none), "
			"renewal in %ld s, next poll in %ld s\n", acme.ari_id,
			(long)(r.ari_end ? r.ari_start - now : 0), (long)(r.ari_end ? r.ari_end - now : 0),
			(long)(r.renew_at - now), (long)(r.ari_next > now ? r.ari_next - now : 0));
		acme_renew_tick(&acme.timer, NULL);
		return true;
	}
#endif
	acme_schedule_renewal();
	return true;
}

static bool acme_contact_ok(const char *s)
{
	if (strncmp(s, "mailto:", 7) != 0 || !s[7])
		return false;
	for (; *s; s++)
		if (*s <= 0x20 || *s >= 0x7f || *s == '"' || *s == '\\' || *s == ',')
			return false;
	return true;
}

void acme_start(void)
{
	const char *names = acme_names_opt[0] ? acme_names_opt : https_tls_names();
	char err[96];
	const char *path;
	int ret;

	if (!acme_directory_opt[0])
		return;
	acme.state = AS_ERROR;
	if (!acme_url_split(acme_directory_opt, acme.host, sizeof acme.host, &acme.port, &path)) {
		strlcpy(acme.last_error, "acme.directory= is not an https URL", sizeof acme.last_error);
		kprintf("acme: acme.directory=%s: not an https://host[:port]/path URL of at most 512 bytes; ACME off\n",
			acme_directory_opt);
		return;
	}
	if (!names[0]) {
		strlcpy(acme.last_error, "no names: set acme.names= or tls.names=", sizeof acme.last_error);
		kprintf("acme: no names to order: set acme.names= (or tls.names=); ACME off\n");
		return;
	}
	if (tls_names_parse(names, &acme.names, err, sizeof err) != 0) {
		ksnprintf(acme.last_error, sizeof acme.last_error, "names refused: %s", err);
		kprintf("acme: %s=%s: %s; ACME off\n", acme_names_opt[0] ? "acme.names" : "tls.names", names, err);
		return;
	}
	if (acme_contact_opt[0] && !acme_contact_ok(acme_contact_opt)) {
		strlcpy(acme.last_error, "acme.contact= is not a mailto: address", sizeof acme.last_error);
		kprintf("acme: acme.contact=%s: not a mailto: address; ACME off\n", acme_contact_opt);
		return;
	}
	if (acme_eab_key_bad || !acme_eab_kid_opt[0] != !acme_eab_key_len) {
		strlcpy(acme.last_error, "acme.eab_kid= and acme.eab_hmac= refused", sizeof acme.last_error);
		kprintf("acme: %s; ACME off\n",
			acme_eab_key_bad ? "acme.eab_hmac= is not base64url of 1 to 128 bytes"
					 : "External Account Binding needs both acme.eab_kid= and acme.eab_hmac=");
		return;
	}
	for (const char *k = acme_eab_kid_opt; *k; k++)
		if (*k < 0x20 || *k > 0x7e || *k == '"' || *k == '\\') {
			strlcpy(acme.last_error, "acme.eab_kid= refused", sizeof acme.last_error);
			kprintf("acme: acme.eab_kid=: printable ASCII but quote and backslash only; ACME off\n");
			return;
		}
	acme.m = kzalloc(sizeof *acme.m);
	acme.csr = kmalloc(ACME_CSR_B64_MAX + 1);
	acme.jws = kmalloc(ACME_JWS_MAX);
	acme.body = kmalloc(ACME_BODY_MAX + 1);
	if (!acme.m || !acme.csr || !acme.jws || !acme.body) {
		strlcpy(acme.last_error, "no memory", sizeof acme.last_error);
		kprintf("acme: no memory for the client; ACME off\n");
		return;
	}
	/* [acme_state] the account key kept on the store, else a new one */
	acme.account_kept = acme_keep() &&
			    acme_keep()->account(acme_directory_opt, &acme.account, acme.m->account,
						 sizeof acme.m->account);
	ret = acme.account_kept ? 0 : acme_key_generate(&acme.account, acme_rng, NULL);
	if (ret == 0) {
		acme.have_account = true;
		ret = acme_thumbprint(&acme.account, acme.thumb);
	}
	if (ret == 0 && !acme.account_kept && acme_keep())
		acme_keep()->account_keep(acme_directory_opt, &acme.account, "");
	if (ret != 0) {
		strlcpy(acme.last_error, "the account key could not be made", sizeof acme.last_error);
		kprintf("acme: the account key could not be made (%d); ACME off\n", ret);
		return;
	}
	ret = vireo_http_pool_new(&(struct vireo_http_pool_cfg){ .name = "acme", .host = acme.host,
								 .port = acme.port, .max_conns = 1, .max_idle = 1,
								 .connect_timeout_ms = 10000, .head_timeout_ms = 30000,
								 .max_body = ACME_BODY_MAX, .tls = true },
				  &acme.pool);
	if (ret != 0) {
		strlcpy(acme.last_error, "no HTTP client pool", sizeof acme.last_error);
		kprintf("acme: no HTTP client for the CA (%d); ACME off\n", ret);
		return;
	}
	acme.cfg.directory = acme_directory_opt;
	for (unsigned i = 0; i < acme.names.n; i++)
		acme.cfg.names[i] = acme.names.name[i];
	acme.cfg.n_names = acme.names.n;
	acme.cfg.contact = acme_contact_opt[0] ? acme_contact_opt : NULL;
	acme.cfg.csr_b64 = acme.csr;
	acme.cfg.challenge = acme_challenge_opt == 1 ? ACME_TLSALPN01 : ACME_HTTP01;
	acme.cfg.replaces = acme.ari_id;	/* the served certificate's, once there is one */
	acme.cfg.profile = acme_profile_opt;
	if (acme_eab_key_len)
		acme.cfg.eab = acme_eab;
	acme.state = AS_ORDERING;
	kprintf("acme: account key %s; directory %s, names %s, %s%s%s\n",
		acme.account_kept ? "kept on the store (P-256)" :
		acme_keep() ? "made (P-256, kept on the store)" : "made (P-256, in memory only: no store)",
		acme_directory_opt, names, acme_challenge_choices[acme_challenge_opt],
		acme_eab_key_len ? ", External Account Binding as " : "", acme_eab_key_len ? acme_eab_kid_opt : "");
	if (acme_resume())	/* [acme_state] */
		return;
	vireo_timer_init(&acme.timer, acme_attempt, NULL);
	vireo_timer_start(&acme.timer, ACME_FIRST_MS);
}

/* ---- operators ---- */

static void acme_metrics(struct metrics_buf *b)
{
	u64 now;

	if (!acme_directory_opt[0])
		return;
	metrics_family(b, "vireo_acme_state", METRICS_GAUGE,
		       "1 for the ACME client's state: ordering, backoff, valid (a certificate issued), error (misconfigured)");
	metrics_sample1(b, "vireo_acme_state", "state", acme_state_names[acme.state], 1);
	metrics_simple(b, "vireo_acme_orders_total", METRICS_COUNTER, "ACME attempts started (one order each)",
		       acme.orders);
	metrics_simple(b, "vireo_acme_certificates_issued_total", METRICS_COUNTER,
		       "certificates issued by the CA and installed", acme.issued);
	metrics_simple(b, "vireo_acme_failures_total", METRICS_COUNTER, "ACME attempts that failed", acme.failed);
	metrics_simple(b, "vireo_acme_bad_nonces_total", METRICS_COUNTER, "requests sent again after badNonce",
		       acme.bad_nonces);
	if (acme.state == AS_VALID && acme_now(&now))
		metrics_simple(b, "vireo_acme_renewal_seconds", METRICS_GAUGE,
			       "seconds until the certificate is ordered again (0: due)",
			       acme.renew_at > now ? acme.renew_at - now : 0);
	if (acme.ari_ok + acme.ari_failed) {
		metrics_family(b, "vireo_acme_ari_polls_total", METRICS_COUNTER,
			       "renewal information (RFC 9773) asked for");
		metrics_sample1(b, "vireo_acme_ari_polls_total", "result", "ok", acme.ari_ok);
		metrics_sample1(b, "vireo_acme_ari_polls_total", "result", "failed", acme.ari_failed);
	}
	if (acme.ari_end) {
		metrics_simple(b, "vireo_acme_ari_window_start_seconds", METRICS_GAUGE,
			       "the CA's renewal window's start (Unix time)",
			       acme.ari_start);
		metrics_simple(b, "vireo_acme_ari_window_end_seconds", METRICS_GAUGE,
			       "its end", acme.ari_end);
	}
	metrics_simple(b, "vireo_acme_http01_served_total", METRICS_COUNTER,
		       "HTTP-01 key authorizations served", acme.challenges_served);
	if (acme.last_error[0]) {
		metrics_family(b, "vireo_acme_last_error_info", METRICS_GAUGE,
			       "the last ACME failure (cleared once a certificate is issued)");
		metrics_sample1(b, "vireo_acme_last_error_info", "error", acme.last_error, 1);
	}
}
METRICS_SOURCE(acme, acme_metrics);

/* `cert`'s ACME lines, and `cert renew` (net/tls/tls_port.c calls it). */
static void acme_cert_lines(const char *args)
{
	if (args[0]) {
		if (strcmp(args, "ari") == 0) {
#ifdef VIREO_ACME_KEEP
			/* [acme_state] with no URL (none kept, or dropped as
			 * stale): the directory read for it first */
			if (acme.state != AS_VALID || !acme.ari_id[0] || acme.ari.off || acme.ari_busy) {
				kprintf("cert: no renewal information to ask for now\n");
			} else {
				vireo_timer_stop(&acme.timer);
				if (acme.m->renewal_info[0])
					acme_ari_fetch();
				else
					acme_dir_fetch();
			}
#else
			if (acme.state != AS_VALID || !acme_ari_on() || acme.ari_busy) {
				kprintf("cert: no renewal information to ask for now\n");
			} else {
				vireo_timer_stop(&acme.timer);
				acme_ari_fetch();
			}
#endif
		} else if (strcmp(args, "renew") != 0) {
			kprintf("cert: usage: cert [regen|renew|ari]\n");
		} else if (acme.ari_busy) {
			kprintf("cert: renewal information is being asked for; again in a moment\n");
		} else if (acme.state != AS_VALID && acme.state != AS_BACKOFF) {
			kprintf("cert: ACME is %s: nothing to renew now\n", acme_state_names[acme.state]);
		} else {
			kprintf("cert: ordering a new certificate now\n");
			vireo_timer_stop(&acme.timer);
			acme.failures = 0;
			acme_attempt(&acme.timer, NULL);
		}
		return;
	}
	if (!acme_directory_opt[0]) {
		kprintf("acme:       off (no acme.directory=)\n");
		return;
	}
	kprintf("acme:       %s (%s; orders %lu, issued %lu, failures %lu)", acme_state_names[acme.state],
		acme_directory_opt, (unsigned long)acme.orders, (unsigned long)acme.issued, (unsigned long)acme.failed);
	if (acme.state == AS_BACKOFF)
		kprintf(", next attempt %lu s after the failure", (unsigned long)acme.next_s);
	if (acme.state == AS_VALID) {
		u64 now;

		if (acme_now(&now) && acme.renew_at > now)
			kprintf(", renewal in %lu s", (unsigned long)(acme.renew_at - now));
	}
	kprintf("\n");
	if (acme.state == AS_VALID && acme_ari_on()) {
		u64 now;

		if (!acme_now(&now))
			now = 0;
		kprintf("acme ari:   window %ld..%ld s from now (0..0: none), next poll in %ld s\n",
			(long)(acme.ari_end ? acme.ari_start - now : 0), (long)(acme.ari_end ? acme.ari_end - now : 0),
			(long)(acme.ari_next - now));
	}
	if (acme.last_error[0])
		kprintf("acme error: %s\n", acme.last_error);
}


#endif
