/* The ACME state machine (acme_client.h). */
#include "net/acme/acme_client.h"

#include "lib/string.h"
#include "net/acme/acme_renew.h"

#define PROBLEM_BADNONCE "urn:ietf:params:acme:error:badNonce"

static const char *const step_names[ACME_STEPS] = {
	"idle", "directory", "account", "order", "authorization", "challenge", "authorization_poll",
	"finalize", "order_poll", "certificate", "valid", "failed",
};

const char *acme_step_name(enum acme_step s)
{
	return (unsigned)s < ACME_STEPS ? step_names[s] : "?";
}

/* ---- small text helpers ---- */

static void err_add(char *buf, size_t cap, const char *s, size_t n)
{
	size_t len = strlen(buf);

	/* Printable ASCII only, quotes and backslashes as '?': the text goes
	 * to the console and into a metrics label. */
	for (size_t i = 0; i < n && s[i] && len + 1 < cap; i++) {
		char c = s[i];

		buf[len++] = (c < 0x20 || c > 0x7e || c == '"' || c == '\\') ? '?' : c;
	}
	buf[len] = '\0';
}

static enum acme_action fail(struct acme_client *a, const char *why, const char *more)
{
	a->last_error[0] = '\0';
	err_add(a->last_error, sizeof a->last_error, acme_step_name(a->step), 32);
	err_add(a->last_error, sizeof a->last_error, ": ", 2);
	err_add(a->last_error, sizeof a->last_error, why, ACME_ERR_MAX);
	if (more) {
		err_add(a->last_error, sizeof a->last_error, " ", 1);
		err_add(a->last_error, sizeof a->last_error, more, ACME_ERR_MAX);
	}
	a->step = ACME_FAILED;
	return ACME_ACT_FAIL;
}

static bool b64url_chars(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_'))
			return false;
	}
	return n > 0;
}

bool acme_url_ok(const char *url, size_t len)
{
	if (len < sizeof "https://x" - 1 || len > ACME_URL_MAX_C || strncmp(url, "https://", 8) != 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = url[i];

		if (c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>')
			return false;
	}
	return url[8] != '/';
}

/* The length of url's origin, "https://host[:port]". */
static size_t url_origin_len(const char *url)
{
	size_t i = 8;

	while (url[i] && url[i] != '/' && url[i] != '?' && url[i] != '#')
		i++;
	return i;
}

bool acme_url_split(const char *url, char *host, size_t hostcap, u16 *port, const char **path)
{
	size_t len = strlen(url), end, hs, he, i;
	u32 p = 443;

	if (!acme_url_ok(url, len))
		return false;
	end = url_origin_len(url);
	hs = 8;
	if (url[hs] == '[') {
		for (he = hs + 1; he < end && url[he] != ']'; he++)
			;
		if (he == end)
			return false;
		hs++;
		i = he + 1;
	} else {
		for (he = hs; he < end && url[he] != ':'; he++)
			if (url[he] == '@')
				return false;	/* no userinfo */
		i = he;
	}
	if (he == hs || he - hs >= hostcap)
		return false;
	if (i < end) {
		if (url[i] != ':' || i + 1 == end || end - i > 6)
			return false;
		p = 0;
		for (i++; i < end; i++) {
			if (url[i] < '0' || url[i] > '9')
				return false;
			p = p * 10 + (u32)(url[i] - '0');
		}
		if (p == 0 || p > 65535)
			return false;
	}
	memcpy(host, url + hs, he - hs);
	host[he - hs] = '\0';
	*port = (u16)p;
	*path = url[end] == '/' ? url + end : "/";
	return url[end] == '\0' || url[end] == '/';
}

/* ---- the request being built ---- */

/* The current step's POST to url (payload NULL: POST-as-GET), kept in
 * post_url/post_payload for a badNonce retry; a nonce first when none is
 * at hand. */
static enum acme_action post(struct acme_client *a, const char *url, const char *payload, size_t len, u32 delay)
{
	struct acme_req *q = &a->req;

	if (url != a->post_url)
		strlcpy(a->post_url, url, sizeof a->post_url);
	a->post_payload = payload;
	a->post_len = len;
	q->delay_s = delay;
	q->want_pem = a->step == ACME_CERT;
	q->use_jwk = a->step == ACME_ACCOUNT;
	q->payload = NULL;
	q->payload_len = 0;
	q->nonce[0] = '\0';
	if (!a->nonce[0]) {
		a->fetching_nonce = true;
		q->method = ACME_HEAD;
		strlcpy(q->url, a->new_nonce, sizeof q->url);
		return ACME_ACT_SEND;
	}
	a->fetching_nonce = false;
	q->method = ACME_POST;
	strlcpy(q->url, a->post_url, sizeof q->url);
	q->payload = payload;
	q->payload_len = len;
	strlcpy(q->nonce, a->nonce, sizeof q->nonce);
	a->nonce[0] = '\0';	/* one use each */
	return ACME_ACT_SEND;
}

static void payload_reset(struct acme_client *a, struct acme_jw *w)
{
	acme_jw_init(w, a->payload, sizeof a->payload);
}

static enum acme_action send_account(struct acme_client *a)
{
	struct acme_jw w;

	a->step = ACME_ACCOUNT;
	payload_reset(a, &w);
	acme_jw_raw(&w, "{", 1);
	acme_jw_key(&w, "termsOfServiceAgreed");
	acme_jw_raw(&w, "true", 4);
	if (a->contact[0]) {
		acme_jw_key(&w, "contact");
		acme_jw_raw(&w, "[", 1);
		acme_jw_str(&w, a->contact, strlen(a->contact));
		acme_jw_raw(&w, "]", 1);
	}
	if (a->eab) {
		size_t n = 0;

		acme_jw_key(&w, "externalAccountBinding");
		/* the JWS straight into the payload, its room checked by eab */
		if (!w.err && (w.cap - w.len < 2 ||
			       a->eab(a->eab_ctx, a->new_account, w.buf + w.len, w.cap - w.len - 1, &n) != 0))
			return fail(a, "the externalAccountBinding could not be made", NULL);
		w.len += n;
	}
	acme_jw_raw(&w, "}", 1);
	if (w.err)
		return fail(a, "newAccount payload too large", NULL);
	return post(a, a->new_account, a->payload, w.len, 0);
}

static enum acme_action send_order(struct acme_client *a)
{
	struct acme_jw w;

	a->step = ACME_ORDER;
	payload_reset(a, &w);
	acme_jw_raw(&w, "{", 1);
	acme_jw_key(&w, "identifiers");
	acme_jw_raw(&w, "[", 1);
	for (unsigned i = 0; i < a->n_names; i++) {
		if (i)
			acme_jw_raw(&w, ",", 1);
		acme_jw_raw(&w, "{\"type\":\"dns\",\"value\":", 22);
		acme_jw_str(&w, a->names[i], strlen(a->names[i]));
		acme_jw_raw(&w, "}", 1);
	}
	acme_jw_raw(&w, "]", 1);
	if (a->replaces[0] && a->renewal_info[0]) {
		acme_jw_key(&w, "replaces");
		acme_jw_str(&w, a->replaces, strlen(a->replaces));
	}
	if (a->profile[0]) {
		acme_jw_key(&w, "profile");
		acme_jw_str(&w, a->profile, strlen(a->profile));
	}
	acme_jw_raw(&w, "}", 1);
	if (w.err)
		return fail(a, "newOrder payload too large", NULL);
	return post(a, a->new_order, a->payload, w.len, 0);
}

static enum acme_action send_authz(struct acme_client *a, enum acme_step step, u32 delay)
{
	a->step = step;
	return post(a, a->authz[a->k], NULL, 0, delay);
}

static enum acme_action send_finalize(struct acme_client *a)
{
	struct acme_jw w;

	a->step = ACME_FINALIZE;
	payload_reset(a, &w);
	acme_jw_raw(&w, "{\"csr\":\"", 8);
	acme_jw_raw(&w, a->csr_b64, strlen(a->csr_b64));
	acme_jw_raw(&w, "\"}", 2);
	if (w.err)
		return fail(a, "finalize payload too large", NULL);
	return post(a, a->finalize, a->payload, w.len, 0);
}

/* The next authorization to read, or finalize once all are valid. */
static enum acme_action next_authz(struct acme_client *a)
{
	if (a->k >= a->n_authz) {
		a->polls = 0;	/* one count for the order's polls and finalizes */
		return send_finalize(a);
	}
	a->polls = 0;
	return send_authz(a, ACME_AUTHZ, 0);
}

/* ---- reading responses ---- */

struct doc {
	struct acme_json j;
	int root;
};

/* A JSON object body. false after fail(). */
static bool parse_obj(struct acme_client *a, const struct acme_resp *r, struct doc *d)
{
	int err;

	if (!r->body || r->len == 0) {
		fail(a, "empty response body", NULL);
		return false;
	}
	err = acme_json_parse(&d->j, r->body, r->len, a->t, ACME_TOKS);
	if (err) {
		fail(a, "response not JSON:", acme_json_strerror(err));
		return false;
	}
	d->root = 0;
	if (acme_json_type(&d->j, 0) != AJ_OBJECT) {
		fail(a, "response not a JSON object", NULL);
		return false;
	}
	return true;
}

/* The member name of obj as a URL on the directory's origin into out.
 * false after fail() (required) or when absent (optional). */
static bool get_url(struct acme_client *a, struct doc *d, int obj, const char *name, char *out, bool required)
{
	int tok = acme_json_get(&d->j, obj, name);
	size_t len;

	if (tok < 0 && !required)
		return false;
	if (acme_json_str(&d->j, tok, out, ACME_URL_MAX_C + 1, &len) != 0 || !acme_url_ok(out, len)) {
		out[0] = '\0';
		fail(a, name, "missing or not an https URL of at most 512 bytes");
		return false;
	}
	if (a->dir[0]) {
		size_t o = url_origin_len(a->dir);

		if (url_origin_len(out) != o || memcmp(out, a->dir, o) != 0) {
			out[0] = '\0';
			fail(a, name, "not on the directory's host");
			return false;
		}
	}
	return true;
}

/* The status member's index in set[], or -1 (after fail()). */
static int get_status(struct acme_client *a, struct doc *d, int obj, const char *const *set, unsigned n)
{
	int tok = acme_json_get(&d->j, obj, "status");

	for (unsigned i = 0; i < n; i++)
		if (acme_json_str_is(&d->j, tok, set[i]))
			return (int)i;
	fail(a, "status missing or unknown", NULL);
	return -1;
}

static bool is_type(const struct acme_resp *r, const char *type)
{
	size_t n = strlen(type);

	/* a media type, parameters after ';' allowed, case-insensitively */
	if (!r->content_type)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = r->content_type[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c + 32);
		if (c != type[i])
			return false;
	}
	return r->content_type[n] == '\0' || r->content_type[n] == ';' || r->content_type[n] == ' ';
}

/* A problem document (RFC 7807) into last_error; true for badNonce. */
static bool problem(struct acme_client *a, const struct acme_resp *r)
{
	char type[96], detail[ACME_ERR_MAX], code[] = "HTTP 000";
	struct doc d;
	size_t len;
	int st = r->status;

	code[5] = (char)('0' + st / 100 % 10), code[6] = (char)('0' + st / 10 % 10), code[7] = (char)('0' + st % 10);
	type[0] = detail[0] = '\0';
	if (is_type(r, "application/problem+json") && r->body &&
	    acme_json_parse(&d.j, r->body, r->len, a->t, ACME_TOKS) == 0 && acme_json_type(&d.j, 0) == AJ_OBJECT) {
		if (acme_json_str(&d.j, acme_json_get(&d.j, 0, "type"), type, sizeof type, &len) != 0)
			type[0] = '\0';
		if (acme_json_str(&d.j, acme_json_get(&d.j, 0, "detail"), detail, sizeof detail, &len) != 0)
			detail[0] = '\0';
	}
	if (strcmp(type, PROBLEM_BADNONCE) == 0)
		return true;
	a->last_error[0] = '\0';
	err_add(a->last_error, sizeof a->last_error, acme_step_name(a->step), 32);
	err_add(a->last_error, sizeof a->last_error, ": ", 2);
	err_add(a->last_error, sizeof a->last_error, code, 8);
	if (type[0]) {
		const char *t = type;

		if (strncmp(t, "urn:ietf:params:acme:error:", 27) == 0)
			t += 27;
		err_add(a->last_error, sizeof a->last_error, " ", 1);
		err_add(a->last_error, sizeof a->last_error, t, sizeof type);
	}
	if (detail[0]) {
		err_add(a->last_error, sizeof a->last_error, ": ", 2);
		err_add(a->last_error, sizeof a->last_error, detail, sizeof detail);
	}
	return false;
}

/* The wait before a poll: Retry-After within [1, ACME_POLL_MAX_S]. */
static u32 poll_delay(const struct acme_resp *r)
{
	u64 s;

	if (r->retry_after && acme_retry_after(r->retry_after, r->now, &s))
		return s < 1 ? 1 : s > ACME_POLL_MAX_S ? ACME_POLL_MAX_S : (u32)s;
	return ACME_POLL_S;
}

static const char *const order_states[] = { "pending", "ready", "processing", "valid", "invalid" };
enum { O_PENDING, O_READY, O_PROCESSING, O_VALID, O_INVALID };
static const char *const authz_states[] = { "pending", "valid", "invalid", "deactivated", "expired", "revoked" };
enum { A_PENDING, A_VALID };
static const char *const chall_states[] = { "pending", "processing", "valid", "invalid" };
static const char *const account_states[] = { "valid", "deactivated", "revoked" };

static enum acme_action on_directory(struct acme_client *a, const struct acme_resp *r)
{
	struct doc d;

	if (!parse_obj(a, r, &d) || !get_url(a, &d, 0, "newNonce", a->new_nonce, true) ||
	    !get_url(a, &d, 0, "newAccount", a->new_account, true) ||
	    !get_url(a, &d, 0, "newOrder", a->new_order, true))
		return ACME_ACT_FAIL;
	/* optional: one that is absent or would be refused is none */
	if (!get_url(a, &d, 0, "renewalInfo", a->renewal_info, false) && a->step == ACME_FAILED) {
		a->step = ACME_DIRECTORY;
		a->last_error[0] = '\0';
	}
	if (a->profile[0] &&
	    acme_json_get(&d.j, acme_json_get(&d.j, acme_json_get(&d.j, 0, "meta"), "profiles"), a->profile) < 0)
		return fail(a, "the CA offers no certificate profile", a->profile);
	return send_account(a);
}

static enum acme_action on_account(struct acme_client *a, const struct acme_resp *r)
{
	struct doc d;
	size_t len;

	if (r->status != 200 && r->status != 201)
		return fail(a, "unexpected HTTP status", NULL);
	if (!parse_obj(a, r, &d))
		return ACME_ACT_FAIL;
	if (get_status(a, &d, 0, account_states, ARRAY_SIZE(account_states)) != 0)
		return a->step == ACME_FAILED ? ACME_ACT_FAIL : fail(a, "account not valid", NULL);
	len = r->location ? strlen(r->location) : 0;
	if (!acme_url_ok(r->location ? r->location : "", len) ||
	    memcmp(r->location, a->dir, url_origin_len(a->dir)) != 0 ||
	    url_origin_len(r->location) != url_origin_len(a->dir))
		return fail(a, "Location (the account URL) missing or bad", NULL);
	memcpy(a->account, r->location, len + 1);
#ifdef VIREO_ACME_KEEP
	if (a->resumed) {	/* the kept order, as the CA has it now */
		a->step = ACME_ORDER;
		return post(a, a->order, NULL, 0, 0);
	}
#endif
	return send_order(a);
}

/* An order object: its finalize URL and, the first time, its
 * authorizations. The status index, or -1 after fail(). */
static int read_order(struct acme_client *a, struct doc *d, bool authz)
{
	int st = get_status(a, d, 0, order_states, ARRAY_SIZE(order_states));
	int arr, tok;

	if (st < 0 || !get_url(a, d, 0, "finalize", a->finalize, true))
		return -1;
	if (authz) {
		arr = acme_json_get(&d->j, 0, "authorizations");
		if (acme_json_type(&d->j, arr) != AJ_ARRAY || d->j.t[arr].n == 0 || d->j.t[arr].n > a->n_names) {
			fail(a, "authorizations missing, empty or more than the names", NULL);
			return -1;
		}
		a->n_authz = d->j.t[arr].n;
		tok = acme_json_at(&d->j, arr, 0);
		for (unsigned i = 0; i < a->n_authz; i++, tok = acme_json_sibling(&d->j, tok)) {
			size_t len;

			if (acme_json_str(&d->j, tok, a->authz[i], sizeof a->authz[i], &len) != 0 ||
			    !acme_url_ok(a->authz[i], len) ||
			    url_origin_len(a->authz[i]) != url_origin_len(a->dir) ||
			    memcmp(a->authz[i], a->dir, url_origin_len(a->dir)) != 0) {
				fail(a, "an authorization URL is bad", NULL);
				return -1;
			}
		}
	}
	if (st == O_VALID && !get_url(a, d, 0, "certificate", a->cert, true))
		return -1;
	if (st == O_INVALID) {
		fail(a, "the order is invalid", NULL);
		return -1;
	}
	return st;
}

#ifdef VIREO_ACME_KEEP
/* The kept order is gone, expired or invalid: a new one now, in this
 * attempt (the order's URL forgotten: the caller keeps the new one). */
static enum acme_action resume_refused(struct acme_client *a)
{
	a->resumed = false;
	a->order[0] = '\0';
	a->last_error[0] = '\0';
	return send_order(a);
}
#endif

static enum acme_action on_order(struct acme_client *a, const struct acme_resp *r)
{
	struct doc d;
	size_t len;
	int st;

	if (r->status != 201 && r->status != 200)
		return fail(a, "unexpected HTTP status", NULL);
	len = r->location ? strlen(r->location) : 0;
	if (!parse_obj(a, r, &d))
		return ACME_ACT_FAIL;
#ifdef VIREO_ACME_KEEP
	if (a->resumed) {
		/* POST-as-GET of the kept order: no Location */
		st = read_order(a, &d, true);
		if (st == O_VALID || st == O_PROCESSING) {
			a->polls = 0;
			a->step = st == O_VALID ? ACME_CERT : ACME_ORDER_POLL;
			return post(a, st == O_VALID ? a->cert : a->order, NULL, 0, st == O_VALID ? 0 : poll_delay(r));
		}
		if (st < 0)
			return resume_refused(a);
	} else
#endif
	{
		if (!acme_url_ok(r->location ? r->location : "", len) ||
		    url_origin_len(r->location) != url_origin_len(a->dir) ||
		    memcmp(r->location, a->dir, url_origin_len(a->dir)) != 0)
			return fail(a, "Location (the order URL) missing or bad", NULL);
		memcpy(a->order, r->location, len + 1);
		st = read_order(a, &d, true);
		if (st < 0)
			return ACME_ACT_FAIL;
	}
	a->k = 0;
	return next_authz(a);
}

/* An authorization: valid moves on; pending answers its challenge. */
/* An authorization's document (the first fetch and every poll): its
 * status while it is not valid; else -2 with *act the next action (a
 * failure, or the next authorization once this one is valid). */
static int authz_doc(struct acme_client *a, const struct acme_resp *r, struct doc *d, enum acme_action *act)
{
	int st;

	if (r->status != 200) {
		*act = fail(a, "unexpected HTTP status", NULL);
		return -2;
	}
	*act = ACME_ACT_FAIL;
	if (!parse_obj(a, r, d))
		return -2;
	st = get_status(a, d, 0, authz_states, ARRAY_SIZE(authz_states));
	if (st < 0)
		return -2;
	if (st == A_VALID) {
		a->k++;
		*act = next_authz(a);
		return -2;
	}
	return st;
}

static enum acme_action on_authz(struct acme_client *a, const struct acme_resp *r)
{
	const char *want = a->challenge == ACME_TLSALPN01 ? "tls-alpn-01" : "http-01";
	enum acme_action act;
	struct doc d;
	int st, arr, tok;
	size_t len;

	st = authz_doc(a, r, &d, &act);
	if (st < 0)
		return act;
	if (st != A_PENDING)
		return fail(a, "authorization", authz_states[st]);
	/* the name this authorization is for: one of ours (the runtime
	 * answers TLS-ALPN-01 for it) */
	tok = acme_json_get(&d.j, 0, "identifier");
	if (!acme_json_str_is(&d.j, acme_json_get(&d.j, tok, "type"), "dns") ||
	    acme_json_str(&d.j, acme_json_get(&d.j, tok, "value"), a->ident, sizeof a->ident, &len) != 0)
		return fail(a, "identifier missing or not dns", NULL);
	for (st = 0; st < (int)a->n_names && strcmp(a->ident, a->names[st]) != 0; st++)
		;
	if (st == (int)a->n_names)
		return fail(a, "identifier not one of the names ordered", NULL);
	arr = acme_json_get(&d.j, 0, "challenges");
	if (acme_json_type(&d.j, arr) != AJ_ARRAY)
		return fail(a, "challenges missing", NULL);
	tok = acme_json_at(&d.j, arr, 0);
	for (unsigned i = 0; i < d.j.t[arr].n; i++, tok = acme_json_sibling(&d.j, tok)) {
		if (acme_json_type(&d.j, tok) != AJ_OBJECT ||
		    !acme_json_str_is(&d.j, acme_json_get(&d.j, tok, "type"), want))
			continue;
		if (get_status(a, &d, tok, chall_states, ARRAY_SIZE(chall_states)) < 0 ||
		    !get_url(a, &d, tok, "url", a->chall_url, true))
			return ACME_ACT_FAIL;
		if (acme_json_str(&d.j, acme_json_get(&d.j, tok, "token"), a->token, sizeof a->token, &len) != 0 ||
		    !b64url_chars(a->token, len)) {
			a->token[0] = '\0';
			return fail(a, "token missing or not base64url of at most 128 characters", NULL);
		}
		a->step = ACME_CHALLENGE;
		a->payload[0] = '{', a->payload[1] = '}', a->payload[2] = '\0';
		post(a, a->chall_url, a->payload, 2, 0);
		return ACME_ACT_SERVE;
	}
	return fail(a, "no challenge of type", want);
}

static enum acme_action on_challenge(struct acme_client *a, const struct acme_resp *r)
{
	struct doc d;

	if (r->status != 200)
		return fail(a, "unexpected HTTP status", NULL);
	if (!parse_obj(a, r, &d) || get_status(a, &d, 0, chall_states, ARRAY_SIZE(chall_states)) < 0)
		return ACME_ACT_FAIL;
	a->polls = 0;
	return send_authz(a, ACME_AUTHZ_POLL, poll_delay(r));
}

/* The challenge's error in the authorization, for last_error. */
static void authz_error(struct acme_client *a, struct doc *d)
{
	int arr = acme_json_get(&d->j, 0, "challenges"), tok;
	char detail[ACME_ERR_MAX];
	size_t len;

	if (acme_json_type(&d->j, arr) != AJ_ARRAY)
		return;
	tok = acme_json_at(&d->j, arr, 0);
	for (unsigned i = 0; i < d->j.t[arr].n; i++, tok = acme_json_sibling(&d->j, tok)) {
		int e = acme_json_get(&d->j, tok, "error");

		if (acme_json_type(&d->j, e) == AJ_OBJECT &&
		    acme_json_str(&d->j, acme_json_get(&d->j, e, "detail"), detail, sizeof detail, &len) == 0) {
			err_add(a->last_error, sizeof a->last_error, ": ", 2);
			err_add(a->last_error, sizeof a->last_error, detail, len);
			return;
		}
	}
}

static enum acme_action on_authz_poll(struct acme_client *a, const struct acme_resp *r)
{
	enum acme_action act;
	struct doc d;
	int st;

	st = authz_doc(a, r, &d, &act);
	if (st < 0)
		return act;
	if (st != A_PENDING) {
		fail(a, "authorization", authz_states[st]);
		authz_error(a, &d);
		return ACME_ACT_FAIL;
	}
	if (++a->polls > ACME_POLLS_MAX)
		return fail(a, "still pending after 60 polls", NULL);
	return send_authz(a, ACME_AUTHZ_POLL, poll_delay(r));
}

static enum acme_action on_order_state(struct acme_client *a, const struct acme_resp *r)
{
	struct doc d;
	int st;

	if (r->status != 200)
		return fail(a, "unexpected HTTP status", NULL);
	if (!parse_obj(a, r, &d))
		return ACME_ACT_FAIL;
	st = read_order(a, &d, false);
	if (st < 0)
		return ACME_ACT_FAIL;
	if (st == O_VALID) {
		a->step = ACME_CERT;
		return post(a, a->cert, NULL, 0, 0);
	}
	if (st == O_PENDING)
		return fail(a, "order pending after its authorizations were valid", NULL);
	if (st == O_READY && a->step == ACME_ORDER_POLL)
		return send_finalize(a);
	if (++a->polls > ACME_POLLS_MAX)
		return fail(a, "still processing after 60 polls", NULL);
	a->step = ACME_ORDER_POLL;
	return post(a, a->order, NULL, 0, poll_delay(r));
}

static enum acme_action on_cert(struct acme_client *a, const struct acme_resp *r)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----";

	if (r->status != 200)
		return fail(a, "unexpected HTTP status", NULL);
	if (!is_type(r, "application/pem-certificate-chain"))
		return fail(a, "not application/pem-certificate-chain", NULL);
	if (!r->body || r->len < sizeof begin || memcmp(r->body, begin, sizeof begin - 1) != 0)
		return fail(a, "the chain is not PEM", NULL);
	a->step = ACME_VALID;
	return ACME_ACT_DONE;
}

enum acme_action acme_client_start(struct acme_client *a, const struct acme_cfg *cfg)
{
	char account[ACME_URL_MAX_C + 1];
	u64 bad_total;
	size_t len;

	memcpy(account, a->account, sizeof account);
	bad_total = a->bad_nonces_total;
	memset(a, 0, __builtin_offsetof(struct acme_client, t));
	a->bad_nonces_total = bad_total;
	a->step = ACME_DIRECTORY;
	len = cfg->directory ? strlen(cfg->directory) : 0;
	if (!acme_url_ok(cfg->directory ? cfg->directory : "", len))
		return fail(a, "acme.directory is not an https URL of at most 512 bytes", NULL);
	memcpy(a->dir, cfg->directory, len + 1);
	if (cfg->n_names == 0 || cfg->n_names > ACME_NAMES_MAX)
		return fail(a, "no names, or more than 8", NULL);
	for (unsigned i = 0; i < cfg->n_names; i++) {
		len = strlen(cfg->names[i]);
		if (len == 0 || len > ACME_NAME_MAX)
			return fail(a, "a name is empty or too long", NULL);
		memcpy(a->names[i], cfg->names[i], len + 1);
	}
	a->n_names = cfg->n_names;
	if (cfg->contact) {
		len = strlen(cfg->contact);
		if (len > ACME_CONTACT_MAX)
			return fail(a, "acme.contact too long", NULL);
		memcpy(a->contact, cfg->contact, len + 1);
	}
	if (!cfg->csr_b64 || !b64url_chars(cfg->csr_b64, strlen(cfg->csr_b64)) ||
	    strlen(cfg->csr_b64) > ACME_CSR_B64_MAX)
		return fail(a, "no CSR", NULL);
	a->csr_b64 = cfg->csr_b64;
	a->eab = cfg->eab;
	a->eab_ctx = cfg->eab_ctx;
	a->challenge = cfg->challenge;
	if (cfg->replaces && strlen(cfg->replaces) <= ACME_ARI_ID_MAX)
		strlcpy(a->replaces, cfg->replaces, sizeof a->replaces);
	if (cfg->profile && strlen(cfg->profile) > ACME_PROFILE_MAX)
		return fail(a, "acme.profile too long", NULL);
	if (cfg->profile)
		strlcpy(a->profile, cfg->profile, sizeof a->profile);
#ifdef VIREO_ACME_KEEP
	if (cfg->order && cfg->order[0]) {
		len = strlen(cfg->order);
		if (!acme_url_ok(cfg->order, len) || url_origin_len(cfg->order) != url_origin_len(a->dir) ||
		    memcmp(cfg->order, a->dir, url_origin_len(a->dir)) != 0)
			return fail(a, "the kept order's URL is not on the directory's host", NULL);
		memcpy(a->order, cfg->order, len + 1);
		a->resumed = true;
	}
#endif
	/* the account URL of an earlier attempt only if on this directory */
	if (url_origin_len(account) == url_origin_len(a->dir) && memcmp(account, a->dir, url_origin_len(a->dir)) == 0)
		memcpy(a->account, account, sizeof account);
	a->req.method = ACME_GET;
	memcpy(a->req.url, a->dir, strlen(a->dir) + 1);
	return ACME_ACT_SEND;
}

enum acme_action acme_client_next(struct acme_client *a, const struct acme_resp *r)
{
	size_t len;

	if (a->step == ACME_IDLE || a->step == ACME_VALID || a->step == ACME_FAILED)
		return fail(a, "no request outstanding", NULL);
	a->retry_after_s = 0;
	if (r->err)
		return fail(a, "no response from the CA", NULL);
	/* Every response's nonce is the next one to sign with (section 7.2). */
	if (r->nonce) {
		len = strlen(r->nonce);
		if (len <= ACME_NONCE_MAX_C && b64url_chars(r->nonce, len))
			memcpy(a->nonce, r->nonce, len + 1);
	}
	if (r->status >= 400) {
		u64 s;

		if (r->retry_after && acme_retry_after(r->retry_after, r->now, &s))
			a->retry_after_s = s;
		if (problem(a, r)) {
			if (a->req.method != ACME_POST || ++a->bad_nonces > ACME_BADNONCE_MAX)
				return fail(a, "badNonce more than 8 times in a row", NULL);
			/* the same request again, with this response's nonce
			 * (or a fresh one from newNonce) */
			a->bad_nonces_total++;
			return post(a, a->post_url, a->post_payload, a->post_len, 0);
		}
#ifdef VIREO_ACME_KEEP
		/* the kept order refused (404, gone): a new one */
		if (a->step == ACME_ORDER && a->resumed)
			return resume_refused(a);
#endif
		/* a replacement the CA will not take: a plain order (once) */
		if (a->step == ACME_ORDER && a->replaces[0] && a->renewal_info[0]) {
			a->replaces[0] = '\0';
			return send_order(a);
		}
		a->step = ACME_FAILED;
		return ACME_ACT_FAIL;
	}
	if (a->req.method == ACME_POST)
		a->bad_nonces = 0;
	if (a->fetching_nonce) {
		if (r->status != 200 && r->status != 204)
			return fail(a, "newNonce: unexpected HTTP status", NULL);
		if (!a->nonce[0])
			return fail(a, "newNonce: no usable Replay-Nonce", NULL);
		return post(a, a->post_url, a->post_payload, a->post_len, 0);
	}
	switch (a->step) {
	case ACME_DIRECTORY:
		if (r->status != 200)
			return fail(a, "unexpected HTTP status", NULL);
		return on_directory(a, r);
	case ACME_ACCOUNT:
		return on_account(a, r);
	case ACME_ORDER:
		return on_order(a, r);
	case ACME_AUTHZ:
		return on_authz(a, r);
	case ACME_CHALLENGE:
		return on_challenge(a, r);
	case ACME_AUTHZ_POLL:
		return on_authz_poll(a, r);
	case ACME_FINALIZE:
	case ACME_ORDER_POLL:
		return on_order_state(a, r);
	case ACME_CERT:
		return on_cert(a, r);
	default:
		return fail(a, "no request outstanding", NULL);
	}
}

int acme_ari_window(const char *body, size_t len, struct acme_json_tok *t, unsigned cap, u64 *start, u64 *end)
{
	struct acme_json j;
	char v[40];
	size_t n;
	u64 s0, e0;
	int w;

	if (acme_json_parse(&j, body, len, t, cap) != AJ_OK)
		return -1;
	w = acme_json_get(&j, 0, "suggestedWindow");
	if (acme_json_str(&j, acme_json_get(&j, w, "start"), v, sizeof v, &n) != 0 || !acme_rfc3339(v, n, &s0) ||
	    acme_json_str(&j, acme_json_get(&j, w, "end"), v, sizeof v, &n) != 0 || !acme_rfc3339(v, n, &e0) ||
	    e0 <= s0)
		return -1;
	*start = s0;
	*end = e0;
	return 0;
}
