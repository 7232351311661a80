/* libFuzzer target for net/acme/acme_client.c: a hostile CA. The first
 * byte picks how many good answers (directory, account, order, a pending
 * authorization) come first, so the fuzzed ones reach every step; the rest
 * of the input is split at '\x01' into responses, each's first byte its
 * status, content type and headers. Checks, after every response: the
 * action is one of the four; a request's URL is one the machine accepts
 * and on the directory's origin, its nonce base64url, its payload inside
 * the client's buffer; a served token base64url of at most 128 and its
 * name one of the order's; a failure's last_error non-empty and printable
 * without quotes or backslashes; the client never asks for more after
 * done or failed; a renewalInfo kept is on the origin too (the good
 * directory has one, a profile and the order a "replaces"; the first
 * byte's top bit has the order one a restart cut short). Each response
 * is also read as a renewalInfo body
 * (acme_ari_window(): a window it returns ends after it starts). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/acme/acme_client.h"

#define CA "https://ca.test"
static const char *const good[] = {
	"{\"newNonce\":\"" CA "/n\",\"newAccount\":\"" CA "/a\",\"newOrder\":\"" CA "/o\",\"renewalInfo\":\"" CA
	"/ri\",\"meta\":{\"profiles\":{\"shortlived\":\"6 days\"}}}",
	"{\"status\":\"valid\"}",
	"{\"status\":\"pending\",\"authorizations\":[\"" CA "/z/1\",\"" CA "/z/2\"],\"finalize\":\"" CA "/f\"}",
	"{\"status\":\"pending\",\"identifier\":{\"type\":\"dns\",\"value\":\"a.test\"},\"challenges\":[{\"type\":"
	"\"http-01\",\"url\":\"" CA "/c\",\"token\":\"tok\",\"status\":\"pending\"}]}",
	"{\"status\":\"processing\"}",
	"{\"status\":\"valid\"}",
};
static const char *const location[] = { NULL, NULL, CA "/a/1", CA "/o/1", NULL, NULL, NULL };
static const char *const types[] = { "application/json", "application/problem+json",
				     "application/pem-certificate-chain", "text/plain" };
static const int statuses[] = { 200, 201, 204, 400, 403, 429, 500, 503 };

static struct acme_client a;

static bool b64(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '-' || s[i] == '_'))
			return false;
	return true;
}

static void check(enum acme_action act)
{
	/* renewalInfo: none, or a URL on the CA's origin */
	if (a.renewal_info[0] && (!acme_url_ok(a.renewal_info, strlen(a.renewal_info)) ||
				  strncmp(a.renewal_info, CA "/", strlen(CA "/")) != 0))
		abort();
	if (act == ACME_ACT_SEND || act == ACME_ACT_SERVE) {
		if (!acme_url_ok(a.req.url, strlen(a.req.url)) || strncmp(a.req.url, CA "/", strlen(CA "/")) != 0)
			abort();
		if (a.req.method == ACME_POST && !b64(a.req.nonce, ACME_NONCE_MAX_C))
			abort();
		if (a.req.payload &&
		    (a.req.payload < a.payload || a.req.payload + a.req.payload_len > a.payload + sizeof a.payload))
			abort();
		if (act == ACME_ACT_SERVE &&
		    (!b64(a.token, ACME_TOKEN_MAX_C) || (strcmp(a.ident, "a.test") && strcmp(a.ident, "b.test"))))
			abort();
	} else if (act == ACME_ACT_FAIL) {
		size_t n = strlen(a.last_error);

		if (n == 0 || n >= sizeof a.last_error)
			abort();
		for (size_t i = 0; i < n; i++)
			if (a.last_error[i] < 0x20 || a.last_error[i] > 0x7e || a.last_error[i] == '"' ||
			    a.last_error[i] == '\\')
				abort();
	} else if (act != ACME_ACT_DONE) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct acme_cfg cfg = { .directory = CA "/dir", .names = { "a.test", "b.test" }, .n_names = 2,
					     .contact = "mailto:x@a.test", .csr_b64 = "MIIB",
					     .replaces = "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE", .profile = "shortlived" };
	enum acme_action act;
	size_t pos = 1;
	unsigned ngood, nonce = 0;
	char nbuf[16];

	if (size == 0)
		return 0;
	ngood = data[0] % (sizeof good / sizeof good[0] + 1);
	{
		struct acme_cfg c = cfg;

		/* the top bit: an order a restart cut short, taken up
		 * (make STORAGE=1's machine, -DVIREO_ACME_KEEP) */
		if (data[0] & 0x80)
			c.order = CA "/order/5";
		act = acme_client_start(&a, &c);
	}
	check(act);
	for (unsigned i = 0; i < ngood && (act == ACME_ACT_SEND || act == ACME_ACT_SERVE); i++) {
		struct acme_resp r = { .status = i == 1 || i == 2 ? 201 : 200, .content_type = types[0],
				       .location = location[i], .body = good[i], .len = strlen(good[i]), .now = 1 };

		nbuf[0] = 'n', nbuf[1] = (char)('a' + nonce++ % 26), nbuf[2] = '\0';
		r.nonce = nbuf;
		act = acme_client_next(&a, &r);
		check(act);
	}
	while (pos < size && (act == ACME_ACT_SEND || act == ACME_ACT_SERVE)) {
		const uint8_t *end = memchr(data + pos, 1, size - pos);
		size_t len = end ? (size_t)(end - data - pos) : size - pos;
		char *body = malloc(len ? len : 1);	/* exactly sized: ASan sees an over-read */
		uint8_t h = data[pos];
		struct acme_resp r = { .status = statuses[h & 7], .content_type = types[(h >> 3) & 3],
				       .location = (h & 0x20) ? CA "/x/1" : NULL, .retry_after = (h & 0x40) ? "2" : NULL,
				       .nonce = (h & 0x80) ? "nZ" : NULL, .now = 1, .err = h == 0xff ? -1 : 0 };

		memcpy(body, data + pos, len);
		r.body = len > 1 ? body + 1 : NULL;
		r.len = len > 1 ? len - 1 : 0;
		if (r.body) {	/* as a renewalInfo body too: a window read is a window */
			u64 st, en;

			if (acme_ari_window(r.body, r.len, a.t, ACME_TOKS, &st, &en) == 0 && en <= st)
				abort();
		}
		act = acme_client_next(&a, &r);
		check(act);
		free(body);
		pos += len + 1;
	}
	if (act == ACME_ACT_DONE || act == ACME_ACT_FAIL) {
		struct acme_resp r = { .status = 200, .content_type = types[0], .body = "{}", .len = 2 };

		if (acme_client_next(&a, &r) != ACME_ACT_FAIL)
			abort();
	}
	return 0;
}
