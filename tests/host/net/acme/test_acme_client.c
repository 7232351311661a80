/* net/acme/acme_client.c: the ACME state machine driven by a scripted CA.
 * The good path for two names (one authorization already valid), checking
 * each request's method, URL, key (jwk or kid), nonce and payload; a
 * badNonce retried with its own response's nonce, and more than
 * ACME_BADNONCE_MAX in a row failing; problem documents into last_error;
 * Retry-After honoured (bounded) for polls and recorded on failures;
 * hostile responses: unknown statuses, http:// and foreign-host URLs,
 * oversize tokens and URLs, non-base64url tokens and nonces, garbage JSON,
 * too many authorizations, a certificate that is not PEM; the poll limit;
 * URL splitting. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/acme/acme_client.h"

#define CA "https://ca.test:14000"
#define DIR_JSON "{\"newNonce\":\"" CA "/nonce\",\"newAccount\":\"" CA "/acct\",\"newOrder\":\"" CA \
	"/order\",\"meta\":{\"termsOfService\":\"x\"}}"
#define ORDER_JSON(st, extra) "{\"status\":\"" st "\",\"identifiers\":[],\"authorizations\":[\"" CA \
	"/authz/1\",\"" CA "/authz/2\"],\"finalize\":\"" CA "/fin/1\"" extra "}"
#define AUTHZ_PENDING(tok) "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":\"a.test\"}," \
	"\"challenges\":[{\"type\":\"dns-01\",\"url\":\"" CA "/ch/9\",\"token\":\"zzz\",\"status\":\"pending\"}," \
	"{\"type\":\"http-01\",\"url\":\"" CA "/ch/1\",\"token\":\"" tok "\",\"status\":\"pending\"}]}"
#define PEM "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

static struct acme_client *a;
static const struct acme_cfg cfg = {
	.directory = CA "/dir",
	.names = { "a.test", "b.test" },
	.n_names = 2,
	.contact = "mailto:ops@a.test",
	.csr_b64 = "MIIBcsr",
};

static int setup(void **state)
{
	a = calloc(1, sizeof *a);
	return a ? 0 : -1;
}

static int teardown(void **state)
{
	free(a);
	return 0;
}

/* A response with a fresh nonce n<k>, for the request just made. */
static unsigned nonce_k;
static char nonce_buf[32];

static enum acme_action reply(int status, const char *type, const char *location, const char *body)
{
	struct acme_resp r = { .status = status, .content_type = type, .location = location, .body = body,
			       .len = body ? strlen(body) : 0, .now = 1800000000 };

	snprintf(nonce_buf, sizeof nonce_buf, "n%u", ++nonce_k);
	r.nonce = nonce_buf;
	return acme_client_next(a, &r);
}

static enum acme_action json(int status, const char *location, const char *body)
{
	return reply(status, "application/json", location, body);
}

static void want_req(enum acme_method m, const char *url, const char *payload)
{
	assert_int_equal(a->req.method, m);
	assert_string_equal(a->req.url, url);
	if (m == ACME_POST) {
		char n[32];

		snprintf(n, sizeof n, "n%u", nonce_k);
		assert_string_equal(a->req.nonce, n);	/* the last response's */
		if (payload) {
			assert_non_null(a->req.payload);
			assert_int_equal(a->req.payload_len, strlen(payload));
			assert_memory_equal(a->req.payload, payload, strlen(payload));
		} else {
			assert_null(a->req.payload);
		}
		assert_int_equal(a->req.use_jwk, strcmp(url, CA "/acct") == 0);
	}
}

/* Start, directory, nonce, account, order: up to authorization 1. */
static void to_order(void)
{
	assert_int_equal(acme_client_start(a, &cfg), ACME_ACT_SEND);
	want_req(ACME_GET, CA "/dir", NULL);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_SEND);
	/* the directory's nonce is used: no newNonce round trip */
	want_req(ACME_POST, CA "/acct", "{\"termsOfServiceAgreed\":true,\"contact\":[\"mailto:ops@a.test\"]}");
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	assert_string_equal(a->account, CA "/acct/7");
	want_req(ACME_POST, CA "/order",
		 "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"a.test\"},{\"type\":\"dns\",\"value\":\"b.test\"}]}");
	assert_int_equal(json(201, CA "/order/1", ORDER_JSON("pending", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/authz/1", NULL);
}

static void test_good_path(void **state)
{
	nonce_k = 0;
	to_order();
	/* authorization 1 pending: serve the token, answer the challenge */
	assert_int_equal(json(200, NULL, AUTHZ_PENDING("tok-1_A")), ACME_ACT_SERVE);
	assert_string_equal(a->token, "tok-1_A");
	assert_string_equal(a->ident, "a.test");
	want_req(ACME_POST, CA "/ch/1", "{}");
	assert_int_equal(json(200, NULL, "{\"type\":\"http-01\",\"status\":\"pending\",\"url\":\"" CA "/ch/1\"}"),
			 ACME_ACT_SEND);
	want_req(ACME_POST, CA "/authz/1", NULL);
	assert_int_equal(a->req.delay_s, ACME_POLL_S);
	/* still pending, Retry-After 3: polled again after 3 s */
	{
		struct acme_resp r = { .status = 200, .content_type = "application/json", .nonce = "n100",
				       .retry_after = "3", .body = AUTHZ_PENDING("tok-1_A"), .now = 1 };
		r.len = strlen(r.body);
		nonce_k = 99;
		assert_int_equal(acme_client_next(a, &r), ACME_ACT_SEND);
		nonce_k = 100;
		want_req(ACME_POST, CA "/authz/1", NULL);
		assert_int_equal(a->req.delay_s, 3);
	}
	assert_int_equal(json(200, NULL, "{\"status\":\"valid\",\"challenges\":[]}"), ACME_ACT_SEND);
	/* authorization 2 is valid already (an earlier order): no challenge */
	want_req(ACME_POST, CA "/authz/2", NULL);
	assert_int_equal(json(200, NULL, "{\"status\":\"valid\",\"challenges\":[]}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/fin/1", "{\"csr\":\"MIIBcsr\"}");
	assert_int_equal(json(200, NULL, ORDER_JSON("processing", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order/1", NULL);
	assert_int_equal(json(200, NULL, ORDER_JSON("valid", ",\"certificate\":\"" CA "/cert/1\"")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/cert/1", NULL);
	assert_true(a->req.want_pem);
	assert_int_equal(reply(200, "application/pem-certificate-chain", NULL, PEM), ACME_ACT_DONE);
	assert_int_equal(a->step, ACME_VALID);
	/* nothing more to answer */
	assert_int_equal(json(200, NULL, "{}"), ACME_ACT_FAIL);
}

/* No nonce in hand (a directory without Replay-Nonce): HEAD newNonce
 * first, then the POST it was for. */
static void test_new_nonce(void **state)
{
	struct acme_resp r = { .status = 200, .content_type = "application/json", .body = DIR_JSON,
			       .len = strlen(DIR_JSON) };

	assert_int_equal(acme_client_start(a, &cfg), ACME_ACT_SEND);
	assert_int_equal(acme_client_next(a, &r), ACME_ACT_SEND);
	assert_int_equal(a->req.method, ACME_HEAD);
	assert_string_equal(a->req.url, CA "/nonce");
	/* a newNonce answer without a usable nonce fails */
	struct acme_resp bad = { .status = 200, .nonce = "not a nonce!" };
	struct acme_client save = *a;

	assert_int_equal(acme_client_next(a, &bad), ACME_ACT_FAIL);
	assert_non_null(strstr(a->last_error, "Replay-Nonce"));
	*a = save;
	nonce_k = 10;
	assert_int_equal(reply(200, NULL, NULL, NULL), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/acct", "{\"termsOfServiceAgreed\":true,\"contact\":[\"mailto:ops@a.test\"]}");
	assert_true(a->req.use_jwk);
}

static const char bad_nonce[] = "{\"type\":\"urn:ietf:params:acme:error:badNonce\",\"detail\":\"stale\"}";

static void test_bad_nonce(void **state)
{
	nonce_k = 0;
	to_order();
	/* the authorization's POST-as-GET refused twice: sent again each time
	 * with the nonce of the refusal */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(reply(400, "application/problem+json", NULL, bad_nonce), ACME_ACT_SEND);
		want_req(ACME_POST, CA "/authz/1", NULL);
	}
	assert_int_equal(a->bad_nonces_total, 2);
	/* a success resets the run; then more than ACME_BADNONCE_MAX in a
	 * row fail the attempt */
	assert_int_equal(json(200, NULL, AUTHZ_PENDING("t")), ACME_ACT_SERVE);
	for (int i = 0; i < ACME_BADNONCE_MAX; i++) {
		assert_int_equal(reply(400, "application/problem+json", NULL, bad_nonce), ACME_ACT_SEND);
		want_req(ACME_POST, CA "/ch/1", "{}");
	}
	assert_int_equal(reply(400, "application/problem+json", NULL, bad_nonce), ACME_ACT_FAIL);
	assert_non_null(strstr(a->last_error, "badNonce"));
}

static void test_problem(void **state)
{
	struct acme_resp r = { .status = 429, .content_type = "application/problem+json; charset=utf-8",
			       .retry_after = "120", .now = 1 };

	nonce_k = 0;
	to_order();
	r.body = "{\"type\":\"urn:ietf:params:acme:error:rateLimited\",\"detail\":\"too \\\"many\\\"\\n orders\"}";
	r.len = strlen(r.body);
	assert_int_equal(acme_client_next(a, &r), ACME_ACT_FAIL);
	assert_string_equal(a->last_error, "authorization: HTTP 429 rateLimited: too ?many?? orders");
	assert_int_equal(a->retry_after_s, 120);
	/* not a problem document: the status alone */
	to_order();
	assert_int_equal(reply(503, "text/html", NULL, "<html>"), ACME_ACT_FAIL);
	assert_string_equal(a->last_error, "authorization: HTTP 503");
	assert_int_equal(a->retry_after_s, 0);
	/* a transport failure */
	to_order();
	assert_int_equal(acme_client_next(a, &(struct acme_resp){ .err = -2 }), ACME_ACT_FAIL);
	assert_non_null(strstr(a->last_error, "no response"));
	/* an invalid challenge: the authorization's error detail */
	to_order();
	assert_int_equal(json(200, NULL, AUTHZ_PENDING("t")), ACME_ACT_SERVE);
	assert_int_equal(json(200, NULL, "{\"status\":\"processing\"}"), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL,
			      "{\"status\":\"invalid\",\"challenges\":[{\"type\":\"http-01\",\"status\":\"invalid\","
			      "\"error\":{\"type\":\"x\",\"detail\":\"connection refused\"}}]}"),
			 ACME_ACT_FAIL);
	assert_string_equal(a->last_error, "authorization_poll: authorization invalid: connection refused");
}

/* Each hostile response fails the attempt, whatever step it answers. */
static void test_hostile(void **state)
{
	static const struct {
		const char *what, *body, *location;
		int step;	/* 0 directory, 1 account, 2 order, 3 authz */
	} tab[] = {
		{ "garbage", "{\"newNonce\":", NULL, 0 },
		{ "not an object", "[1,2]", NULL, 0 },
		{ "http URL", "{\"newNonce\":\"http://ca.test/n\",\"newAccount\":\"" CA "/a\",\"newOrder\":\"" CA "/o\"}",
		  NULL, 0 },
		{ "foreign host", "{\"newNonce\":\"https://evil.test/n\",\"newAccount\":\"" CA "/a\",\"newOrder\":\"" CA
		  "/o\"}", NULL, 0 },
		{ "port differs", "{\"newNonce\":\"https://ca.test:14001/n\",\"newAccount\":\"" CA "/a\",\"newOrder\":\""
		  CA "/o\"}", NULL, 0 },
		{ "newOrder missing", "{\"newNonce\":\"" CA "/n\",\"newAccount\":\"" CA "/a\"}", NULL, 0 },
		{ "number URL", "{\"newNonce\":\"" CA "/n\",\"newAccount\":7,\"newOrder\":\"" CA "/o\"}", NULL, 0 },
		{ "account status", "{\"status\":\"great\"}", CA "/acct/1", 1 },
		{ "account revoked", "{\"status\":\"revoked\"}", CA "/acct/1", 1 },
		{ "no Location", "{\"status\":\"valid\"}", NULL, 1 },
		{ "foreign Location", "{\"status\":\"valid\"}", "https://evil.test/acct/1", 1 },
		{ "order status", ORDER_JSON("VALID", ""), CA "/order/1", 2 },
		{ "three authorizations for two names", "{\"status\":\"pending\",\"authorizations\":[\"" CA "/a/1\",\"" CA
		  "/a/2\",\"" CA "/a/3\"],\"finalize\":\"" CA "/f\"}", CA "/order/1", 2 },
		{ "no authorizations", "{\"status\":\"pending\",\"authorizations\":[],\"finalize\":\"" CA "/f\"}",
		  CA "/order/1", 2 },
		{ "authorization not a string", "{\"status\":\"pending\",\"authorizations\":[{}],\"finalize\":\"" CA
		  "/f\"}", CA "/order/1", 2 },
		{ "invalid order", ORDER_JSON("invalid", ""), CA "/order/1", 2 },
		{ "valid without certificate", ORDER_JSON("valid", ""), CA "/order/1", 2 },
		{ "authz status", "{\"status\":\"\",\"challenges\":[]}", NULL, 3 },
		{ "authz expired", "{\"status\":\"expired\",\"challenges\":[]}", NULL, 3 },
		{ "no http-01", "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":\"a.test\"},"
		  "\"challenges\":[{\"type\":\"dns-01\",\"url\":\"" CA
		  "/c\",\"token\":\"t\",\"status\":\"pending\"}]}", NULL, 3 },
		{ "token with a slash", AUTHZ_PENDING("../../etc"), NULL, 3 },
		{ "token with a dot", AUTHZ_PENDING("a.b"), NULL, 3 },
		{ "empty token", AUTHZ_PENDING(""), NULL, 3 },
		{ "challenge status", "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":\"a.test\"},"
		  "\"challenges\":[{\"type\":\"http-01\",\"url\":\"" CA
		  "/c\",\"token\":\"t\",\"status\":\"weird\"}]}", NULL, 3 },
		{ "identifier of another name", "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":"
		  "\"evil.test\"},\"challenges\":[{\"type\":\"http-01\",\"url\":\"" CA "/c\",\"token\":\"t\",\"status\":"
		  "\"pending\"}]}", NULL, 3 },
		{ "identifier missing", "{\"status\":\"pending\",\"challenges\":[{\"type\":\"http-01\",\"url\":\"" CA
		  "/c\",\"token\":\"t\",\"status\":\"pending\"}]}", NULL, 3 },
		{ "identifier not dns", "{\"status\":\"pending\",\"identifier\":{\"type\":\"ip\",\"value\":\"a.test\"},"
		  "\"challenges\":[{\"type\":\"http-01\",\"url\":\"" CA "/c\",\"token\":\"t\",\"status\":\"pending\"}]}",
		  NULL, 3 },
		{ "duplicate member", "{\"status\":\"pending\",\"status\":\"valid\",\"challenges\":[]}", NULL, 3 },
	};
	char big[2048];

	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		enum acme_action act;

		nonce_k = 0;
		assert_int_equal(acme_client_start(a, &cfg), ACME_ACT_SEND);
		if (tab[i].step > 0) {
			assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_SEND);
			if (tab[i].step > 1)
				assert_int_equal(json(201, CA "/acct/1", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
			if (tab[i].step > 2)
				assert_int_equal(json(201, CA "/order/1", ORDER_JSON("pending", "")), ACME_ACT_SEND);
		}
		act = json(tab[i].step == 1 || tab[i].step == 2 ? 201 : 200, tab[i].location, tab[i].body);
		if (act != ACME_ACT_FAIL)
			fail_msg("%s: accepted (action %d, step %s)", tab[i].what, act, acme_step_name(a->step));
		assert_int_equal(a->step, ACME_FAILED);
		assert_true(a->last_error[0] != '\0');
	}
	/* a token of 129 characters, a URL of 513 bytes */
	to_order();
	memset(big, 'A', 129);
	big[129] = '\0';
	{
		char body[4096];

		snprintf(body, sizeof body, AUTHZ_PENDING("%s"), big);
		assert_int_equal(json(200, NULL, body), ACME_ACT_FAIL);
		big[128] = '\0';
		to_order();
		snprintf(body, sizeof body, AUTHZ_PENDING("%s"), big);
		assert_int_equal(json(200, NULL, body), ACME_ACT_SERVE);	/* 128: the bound itself */
		to_order();
		memset(big, 'u', sizeof big);
		big[513 - strlen(CA "/")] = '\0';
		snprintf(body, sizeof body, "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":"
			 "\"a.test\"},\"challenges\":[{\"type\":\"http-01\",\"url\":\""
			 CA "/%s\",\"token\":\"t\",\"status\":\"pending\"}]}", big);
		assert_int_equal(json(200, NULL, body), ACME_ACT_FAIL);	/* 513 bytes */
		to_order();
		big[512 - strlen(CA "/")] = '\0';
		snprintf(body, sizeof body, "{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":"
			 "\"a.test\"},\"challenges\":[{\"type\":\"http-01\",\"url\":\""
			 CA "/%s\",\"token\":\"t\",\"status\":\"pending\"}]}", big);
		assert_int_equal(json(200, NULL, body), ACME_ACT_SERVE);	/* 512 */
	}
	/* a certificate that is not PEM, or of the wrong type */
	to_order();
	a->step = ACME_FINALIZE;
	assert_int_equal(json(200, NULL, ORDER_JSON("valid", ",\"certificate\":\"" CA "/c\"")), ACME_ACT_SEND);
	assert_int_equal(reply(200, "application/json", NULL, PEM), ACME_ACT_FAIL);
	to_order();
	a->step = ACME_FINALIZE;
	assert_int_equal(json(200, NULL, ORDER_JSON("valid", ",\"certificate\":\"" CA "/c\"")), ACME_ACT_SEND);
	assert_int_equal(reply(200, "application/pem-certificate-chain", NULL, "garbage"), ACME_ACT_FAIL);
	/* a nonce that is not base64url is never signed with */
	to_order();
	{
		struct acme_resp r = { .status = 200, .content_type = "application/json", .nonce = "bad nonce",
				       .body = AUTHZ_PENDING("t") };
		r.len = strlen(r.body);
		assert_int_equal(acme_client_next(a, &r), ACME_ACT_SERVE);
		assert_int_equal(a->req.method, ACME_HEAD);
	}
}

static void test_poll_limit(void **state)
{
	nonce_k = 0;
	to_order();
	assert_int_equal(json(200, NULL, AUTHZ_PENDING("t")), ACME_ACT_SERVE);
	assert_int_equal(json(200, NULL, "{\"status\":\"processing\"}"), ACME_ACT_SEND);
	for (int i = 0; i < ACME_POLLS_MAX; i++) {
		struct acme_resp r = { .status = 200, .content_type = "application/json", .nonce = "nX",
				       .retry_after = "86400", .body = AUTHZ_PENDING("t") };
		r.len = strlen(r.body);
		assert_int_equal(acme_client_next(a, &r), ACME_ACT_SEND);
		assert_int_equal(a->req.delay_s, ACME_POLL_MAX_S);	/* a day asked, 10 s kept */
	}
	assert_int_equal(json(200, NULL, AUTHZ_PENDING("t")), ACME_ACT_FAIL);
	assert_non_null(strstr(a->last_error, "60 polls"));

	/* a CA answering "ready" to every finalize and poll: finalize and
	 * poll alternate, bounded by the same count */
	to_order();
	a->k = a->n_authz - 1;
	assert_int_equal(json(200, NULL, "{\"status\":\"valid\",\"challenges\":[]}"), ACME_ACT_SEND);
	assert_string_equal(a->req.url, CA "/fin/1");
	int sends = 0;
	enum acme_action act;

	while ((act = json(200, NULL, ORDER_JSON("ready", ""))) == ACME_ACT_SEND && sends < 1000)
		sends++;
	assert_int_equal(act, ACME_ACT_FAIL);
	assert_true(sends <= 2 * ACME_POLLS_MAX);
}

static void test_start_checks(void **state)
{
	struct acme_cfg c = cfg;

	c.directory = "http://ca.test/dir";
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_FAIL);
	c = cfg;
	c.n_names = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_FAIL);
	c = cfg;
	c.csr_b64 = "not b64!";
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_FAIL);
	/* the account URL is kept across attempts on the same CA */
	nonce_k = 0;
	to_order();
	assert_int_equal(acme_client_start(a, &cfg), ACME_ACT_SEND);
	assert_string_equal(a->account, CA "/acct/7");
	c = cfg;
	c.directory = "https://other.test/dir";
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_string_equal(a->account, "");
}

static void test_url_split(void **state)
{
	char host[64];
	const char *path;
	u16 port;

	assert_true(acme_url_split("https://ca.test:14000/dir?x=1", host, sizeof host, &port, &path));
	assert_string_equal(host, "ca.test");
	assert_int_equal(port, 14000);
	assert_string_equal(path, "/dir?x=1");
	assert_true(acme_url_split("https://10.0.0.1", host, sizeof host, &port, &path));
	assert_string_equal(host, "10.0.0.1");
	assert_int_equal(port, 443);
	assert_string_equal(path, "/");
	assert_true(acme_url_split("https://[fd00::1]:8443/d", host, sizeof host, &port, &path));
	assert_string_equal(host, "fd00::1");
	assert_int_equal(port, 8443);
	static const char *bad[] = { "http://ca.test/", "https://", "https:///x", "https://ca.test:/x",
				     "https://ca.test:0/x", "https://ca.test:65536/x", "https://ca.test:1a/x",
				     "https://u@ca.test/x", "https://ca.test/a b", "https://[fd00::1/x",
				     "https://ca.test?x", "https://ca.test#f" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (acme_url_split(bad[i], host, sizeof host, &port, &path))
			fail_msg("%s accepted", bad[i]);
	assert_false(acme_url_split("https://a-very-long-host-name.test/", host, 8, &port, &path));
}

/* External Account Binding: the caller's JWS (the client holds no keys)
 * is the newAccount payload's externalAccountBinding, asked for with the
 * directory's newAccount URL; a failing or overlong one fails the attempt. */
static char eab_url[600];
static int eab_ret;
static size_t eab_fill;
static int fake_eab(void *ctx, const char *url, char *out, size_t cap, size_t *len)
{
	assert_ptr_equal(ctx, &eab_ret);
	snprintf(eab_url, sizeof eab_url, "%s", url);
	if (eab_fill) {	/* all the room it is given: no room left for the '}' */
		memset(out, 'x', cap - 1);
		out[cap - 1] = '\0';
		*len = cap - 1;
		return 0;
	}
	if (eab_ret)
		return eab_ret;
	*len = (size_t)snprintf(out, cap, "{\"protected\":\"P\",\"payload\":\"Q\",\"signature\":\"S\"}");
	return 0;
}

static void test_eab(void **state)
{
	struct acme_cfg c = cfg;

	c.eab = fake_eab, c.eab_ctx = &eab_ret;
	nonce_k = 0, eab_ret = 0, eab_fill = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/acct",
		 "{\"termsOfServiceAgreed\":true,\"contact\":[\"mailto:ops@a.test\"],\"externalAccountBinding\":"
		 "{\"protected\":\"P\",\"payload\":\"Q\",\"signature\":\"S\"}}");
	assert_string_equal(eab_url, CA "/acct");
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order",
		 "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"a.test\"},{\"type\":\"dns\",\"value\":\"b.test\"}]}");
	/* the signer fails: so does the attempt, before anything is sent */
	eab_ret = -1;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_FAIL);
	assert_non_null(strstr(a->last_error, "externalAccountBinding"));
	/* one that takes all the room it is given: the closing brace still
	 * fits, the payload is full to its last byte and no further (ASan) */
	eab_ret = 0, eab_fill = 1;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_SEND);
	assert_int_equal(a->req.payload_len, ACME_PAYLOAD_MAX - 1);
	assert_int_equal(a->req.payload[a->req.payload_len - 1], '}');
	assert_int_equal(a->req.payload[a->req.payload_len - 2], 'x');
	eab_fill = 0;
	/* without one, no member */
	nonce_k = 0;
	to_order();
}

/* RFC 9773's renewalInfo: the window read; anything else is no window. */
static void test_ari_window(void **state)
{
	static const char good[] = "{\"suggestedWindow\":{\"start\":\"2025-01-02T04:00:00Z\","
				   "\"end\":\"2025-01-03T04:00:00Z\"},\"explanationURL\":\"https://ca.test/x\"}";
	static const char *const bad[] = {
		"{\"suggestedWindow\":{\"start\":\"2025-01-03T04:00:00Z\",\"end\":\"2025-01-02T04:00:00Z\"}}",
		"{\"suggestedWindow\":{\"start\":\"2025-01-02T04:00:00Z\",\"end\":\"2025-01-02T04:00:00Z\"}}",
		"{\"suggestedWindow\":{\"start\":\"2025-01-02T04:00:00Z\"}}",
		"{\"suggestedWindow\":{\"start\":1735790400,\"end\":1735876800}}",
		"{\"suggestedWindow\":\"soon\"}",
		"{\"suggestedWindow\":{\"start\":\"2025-01-02\",\"end\":\"2025-01-03\"}}",
		"{\"suggestedWindow\":{\"start\":\"2025-01-02T04:00:00Z\",\"end\":\"2025-01-03T04:00:00Z\"}",
		"[]",
		"",
	};
	struct acme_json_tok t[16];
	u64 st = 1, en = 2;

	assert_int_equal(acme_ari_window(good, strlen(good), t, 16, &st, &en), 0);
	assert_int_equal(st, 1735790400);
	assert_int_equal(en, 1735876800);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		st = 1, en = 2;
		if (acme_ari_window(bad[i], strlen(bad[i]), t, 16, &st, &en) != -1 || st != 1 || en != 2)
			fail_msg("accepted: %s", bad[i]);
	}
	/* more tokens than room: refused, not overrun */
	assert_int_equal(acme_ari_window(good, strlen(good), t, 4, &st, &en), -1);
}

/* RFC 9773: the directory's renewalInfo kept (absent, or foreign: none);
 * "replaces" in newOrder only with one; a newOrder refused with it is sent
 * once more without it, a second refusal fails. */
static void test_replaces(void **state)
{
	static const char dir_ari[] = "{\"newNonce\":\"" CA "/nonce\",\"newAccount\":\"" CA "/acct\","
				      "\"newOrder\":\"" CA "/order\",\"renewalInfo\":\"" CA "/ari\"}";
	static const char dir_foreign[] = "{\"newNonce\":\"" CA "/nonce\",\"newAccount\":\"" CA "/acct\","
					  "\"newOrder\":\"" CA "/order\",\"renewalInfo\":\"https://evil.test/ari\"}";
	static const char one[] = "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"a.test\"},"
				  "{\"type\":\"dns\",\"value\":\"b.test\"}]";
	struct acme_cfg c = cfg;
	char want[300];

	/* no renewalInfo (the plain directory): no replaces */
	c.replaces = "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE";
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_SEND);
	assert_string_equal(a->renewal_info, "");
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	snprintf(want, sizeof want, "%s}", one);
	want_req(ACME_POST, CA "/order", want);
	/* renewalInfo on another host: none, and the attempt goes on */
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, dir_foreign), ACME_ACT_SEND);
	assert_string_equal(a->renewal_info, "");
	assert_int_equal(a->step, ACME_ACCOUNT);
	assert_string_equal(a->last_error, "");
	/* with one: replaces sent; refused (409 alreadyReplaced): again
	 * without it; that refused too: the attempt fails */
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, dir_ari), ACME_ACT_SEND);
	assert_string_equal(a->renewal_info, CA "/ari");
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	snprintf(want, sizeof want, "%s,\"replaces\":\"%s\"}", one, c.replaces);
	want_req(ACME_POST, CA "/order", want);
	assert_int_equal(reply(409, "application/problem+json", NULL,
			       "{\"type\":\"urn:ietf:params:acme:error:alreadyReplaced\",\"detail\":\"x\"}"),
			 ACME_ACT_SEND);
	snprintf(want, sizeof want, "%s}", one);
	want_req(ACME_POST, CA "/order", want);
	assert_int_equal(reply(403, "application/problem+json", NULL,
			       "{\"type\":\"urn:ietf:params:acme:error:unauthorized\",\"detail\":\"no\"}"),
			 ACME_ACT_FAIL);
	assert_string_equal(a->last_error, "order: HTTP 403 unauthorized: no");
	/* accepted with it: the order goes on */
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, dir_ari), ACME_ACT_SEND);
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	assert_int_equal(json(201, CA "/order/1", ORDER_JSON("pending", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/authz/1", NULL);
	/* an identifier too long for the buffer: no replaces */
	{
		char big[ACME_ARI_ID_MAX + 2];

		memset(big, 'A', sizeof big - 1);
		big[sizeof big - 1] = '\0';
		c.replaces = big;
		assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
		assert_string_equal(a->replaces, "");
	}
}

/* An order a restart cut short (cfg.order): after newAccount the order
 * is read (POST-as-GET, no newOrder) and taken up where the CA has it:
 * valid, the certificate; processing, a poll; ready, its (valid)
 * authorizations then finalize; pending, the challenge answered again;
 * invalid, gone (404) or malformed, a newOrder in the same attempt, whose
 * Location is then the order; no answer fails the attempt. A kept URL
 * on another host is refused at start. */
#ifdef VIREO_ACME_KEEP
static void resume_to(const char *order_url)
{
	struct acme_cfg c = cfg;

	c.order = order_url;
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_SEND);
	assert_int_equal(json(200, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order/5", NULL);	/* POST-as-GET, no newOrder */
	assert_int_equal(a->step, ACME_ORDER);
}

static void test_resume_order(void **state)
{
	static const char neworder[] = "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"a.test\"},"
				       "{\"type\":\"dns\",\"value\":\"b.test\"}]}";
	struct acme_cfg c = cfg;

	/* valid: straight to the certificate */
	resume_to(CA "/order/5");
	assert_int_equal(json(200, NULL, ORDER_JSON("valid", ",\"certificate\":\"" CA "/cert/5\"")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/cert/5", NULL);
	assert_true(a->req.want_pem);
	assert_int_equal(reply(200, "application/pem-certificate-chain", NULL, PEM), ACME_ACT_DONE);
	assert_string_equal(a->order, CA "/order/5");
	/* processing: polled */
	resume_to(CA "/order/5");
	assert_int_equal(json(200, NULL, ORDER_JSON("processing", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order/5", NULL);
	assert_int_equal(a->step, ACME_ORDER_POLL);
	assert_int_equal(a->req.delay_s, ACME_POLL_S);
	/* ready: the authorizations (valid) then finalize with the CSR */
	resume_to(CA "/order/5");
	assert_int_equal(json(200, NULL, ORDER_JSON("ready", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/authz/1", NULL);
	assert_int_equal(json(200, NULL, "{\"status\":\"valid\",\"challenges\":[]}"), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, "{\"status\":\"valid\",\"challenges\":[]}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/fin/1", "{\"csr\":\"MIIBcsr\"}");
	/* pending: the challenge answered again */
	resume_to(CA "/order/5");
	assert_int_equal(json(200, NULL, ORDER_JSON("pending", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/authz/1", NULL);
	assert_int_equal(json(200, NULL, AUTHZ_PENDING("tok-5")), ACME_ACT_SERVE);
	want_req(ACME_POST, CA "/ch/1", "{}");
	/* invalid: a newOrder now, its Location the order from then on */
	resume_to(CA "/order/5");
	assert_int_equal(json(200, NULL, ORDER_JSON("invalid", "")), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order", neworder);
	assert_string_equal(a->order, "");
	assert_string_equal(a->last_error, "");
	assert_int_equal(json(201, CA "/order/6", ORDER_JSON("pending", "")), ACME_ACT_SEND);
	assert_string_equal(a->order, CA "/order/6");
	want_req(ACME_POST, CA "/authz/1", NULL);
	/* gone (404): a newOrder */
	resume_to(CA "/order/5");
	assert_int_equal(reply(404, "application/problem+json", NULL,
			       "{\"type\":\"urn:ietf:params:acme:error:malformed\",\"detail\":\"no order\"}"),
			 ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order", neworder);
	/* an answer that is not an order (no finalize): a newOrder */
	resume_to(CA "/order/5");
	assert_int_equal(json(200, NULL, "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order", neworder);
	/* badNonce on the read: the read again, not a newOrder */
	resume_to(CA "/order/5");
	assert_int_equal(reply(400, "application/problem+json", NULL,
			       "{\"type\":\"urn:ietf:params:acme:error:badNonce\",\"detail\":\"stale\"}"),
			 ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order/5", NULL);
	/* no answer: the attempt fails (the order is kept for the next) */
	resume_to(CA "/order/5");
	assert_int_equal(acme_client_next(a, &(struct acme_resp){ .err = -1 }), ACME_ACT_FAIL);
	/* a kept URL on another host, or not a URL: refused at start */
	c.order = "https://evil.test/order/5";
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_FAIL);
	c.order = "order/5";
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_FAIL);
	/* none: newOrder as always */
	c.order = "";
	nonce_k = 0;
	to_order();
}
#endif

/* A certificate profile: in newOrder when the directory's meta.profiles
 * names it; a directory that does not fails the attempt, saying so. */
static void test_profile(void **state)
{
	static const char dir_prof[] = "{\"newNonce\":\"" CA "/nonce\",\"newAccount\":\"" CA "/acct\","
				       "\"newOrder\":\"" CA "/order\",\"meta\":{\"profiles\":{\"classic\":\"90 days\","
				       "\"shortlived\":\"6 days\"}}}";
	struct acme_cfg c = cfg;
	char big[ACME_PROFILE_MAX + 2];

	c.profile = "shortlived";
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, dir_prof), ACME_ACT_SEND);
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order",
		 "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"a.test\"},{\"type\":\"dns\",\"value\":\"b.test\"}],"
		 "\"profile\":\"shortlived\"}");
	/* not named (the plain directory has no meta.profiles) */
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, DIR_JSON), ACME_ACT_FAIL);
	assert_string_equal(a->last_error, "directory: the CA offers no certificate profile shortlived");
	c.profile = "longlived";
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, dir_prof), ACME_ACT_FAIL);
	/* a name longer than the client keeps: refused at the start */
	memset(big, 'p', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	c.profile = big;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_FAIL);
	/* none: no member */
	c.profile = "";
	nonce_k = 0;
	assert_int_equal(acme_client_start(a, &c), ACME_ACT_SEND);
	assert_int_equal(json(200, NULL, dir_prof), ACME_ACT_SEND);
	assert_int_equal(json(201, CA "/acct/7", "{\"status\":\"valid\"}"), ACME_ACT_SEND);
	want_req(ACME_POST, CA "/order",
		 "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"a.test\"},{\"type\":\"dns\",\"value\":\"b.test\"}]}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_good_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_nonce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_nonce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_problem, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_poll_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eab, setup, teardown),
		cmocka_unit_test(test_url_split),
		cmocka_unit_test(test_ari_window),
		cmocka_unit_test_setup_teardown(test_replaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_profile, setup, teardown),
#ifdef VIREO_ACME_KEEP
		cmocka_unit_test_setup_teardown(test_resume_order, setup, teardown),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
