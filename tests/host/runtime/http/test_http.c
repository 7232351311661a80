/* runtime/http/http.c and runtime/site.c: the request parser under every way TCP
 * can split a stream, its limits and refusals, response heads byte for byte,
 * content types, ETags, the generated default site and tools/mksite.py. */
#define _GNU_SOURCE	/* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ctype.h>
#include <cmocka.h>

#include "kernel/boot_info.h"
#include "kernel/mm/mm.h"
#include "runtime/http/chunked.h"
#include "runtime/http/http.h"
#include "runtime/site.h"
#include "tests/host/shim/hostk.h"

#define S(lit) lit, sizeof(lit) - 1	/* literal and its length, NULs included */

/* The parser is 8 KiB; keep it off the stack. Zeroed, so also "reset". */
static struct http_req_parser P;

/* What one parse produced, copied out so two runs can be compared. */
struct outcome {
	int r, status, method, minor;
	bool keep, host;
	size_t used;
	char path[HTTP_REQLINE_MAX + 1];
	char inm[HTTP_HEAD_MAX];
	bool has_inm;
};

enum split { WHOLE, BYTES, AT, RANDOM };

static u32 rng_state;

static u32 rng(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return rng_state >> 8;
}

/* Parse one request from s[0..n), delivered whole, one byte at a time, in two
 * pieces split at arg, or in random chunks seeded by arg. Checks the
 * consumed contract on every call. */
static void run(const void *s, size_t n, enum split how, size_t arg, struct outcome *o)
{
	const u8 *d = s;
	size_t off = 0, used;
	int r = HTTP_NEED_MORE;

	http_parser_reset(&P);
	rng_state = (u32)arg;
	while (off < n) {
		size_t c = n - off;

		if (how == BYTES)
			c = 1;
		else if (how == AT && off < arg)
			c = arg - off;
		else if (how == RANDOM) {
			size_t want = 1 + rng() % 97;	/* not inside MIN: it evaluates twice */

			c = MIN(c, want);
		}
		used = 12345;
		r = http_parse(&P, d + off, c, &used);
		if (used > c)
			fail_msg("consumed %zu of %zu", used, c);
		off += used;
		if (r != HTTP_NEED_MORE)
			break;
		if (used != c)
			fail_msg("NEED_MORE but consumed %zu of %zu", used, c);
	}
	memset(o, 0, sizeof *o);
	o->r = r;
	o->status = P.status;
	o->used = off;
	if (r == HTTP_DONE) {
		o->method = P.method;
		o->minor = P.version_minor;
		o->keep = P.keep_alive;
		o->host = P.has_host;
		assert_non_null(P.path);
		assert_int_equal(strlen(P.path), P.path_len);
		memcpy(o->path, P.path, P.path_len + 1);
		if (P.if_none_match) {
			o->has_inm = true;
			snprintf(o->inm, sizeof o->inm, "%s", P.if_none_match);
		}
	} else if (r == HTTP_ERROR) {
		assert_false(P.keep_alive);
		assert_null(P.path);
	}
}

static void same(const struct outcome *a, const struct outcome *b, const char *what, size_t arg)
{
	if (a->r != b->r || a->status != b->status || a->used != b->used ||
	    a->method != b->method || a->minor != b->minor || a->keep != b->keep ||
	    a->host != b->host || strcmp(a->path, b->path) != 0 || a->has_inm != b->has_inm ||
	    strcmp(a->inm, b->inm) != 0)
		fail_msg("%s %zu: r %d/%d status %d/%d used %zu/%zu path \"%s\"/\"%s\"", what, arg,
			 a->r, b->r, a->status, b->status, a->used, b->used, a->path, b->path);
}

/* Whole and byte-at-a-time must agree; returns the outcome. */
static void parse2(const void *s, size_t n, struct outcome *o)
{
	static struct outcome b;

	run(s, n, WHOLE, 0, o);
	run(s, n, BYTES, 0, &b);
	same(o, &b, "bytes", 0);
}

static void expect_error(const void *s, size_t n, int status)
{
	static struct outcome o;

	parse2(s, n, &o);
	if (o.r != HTTP_ERROR || o.status != status)
		fail_msg("\"%.*s\": want error %d, got r %d status %d", (int)MIN(n, 200), (const char *)s,
			 status, o.r, o.status);
}

static void expect_ok(const void *s, size_t n, int method, const char *path, int minor, bool keep)
{
	static struct outcome o;

	parse2(s, n, &o);
	if (o.r != HTTP_DONE)
		fail_msg("\"%.*s\": want DONE, got r %d status %d", (int)MIN(n, 200), (const char *)s,
			 o.r, o.status);
	assert_int_equal(o.used, n);
	assert_int_equal(o.method, method);
	assert_string_equal(o.path, path);
	assert_int_equal(o.minor, minor);
	assert_int_equal(o.keep, keep);
}

/* ---- well-formed requests ---- */

static void test_get_and_head(void **state)
{
	struct outcome o;

	run(S("GET /index.html HTTP/1.1\r\nHost: vireo\r\nUser-Agent: t\r\n\r\n"), WHOLE, 0, &o);
	assert_int_equal(o.r, HTTP_DONE);
	assert_int_equal(o.status, 0);
	assert_int_equal(o.method, HTTP_METHOD_GET);
	assert_string_equal(o.path, "/index.html");
	assert_int_equal(P.path_len, 11);
	assert_int_equal(o.minor, 1);
	assert_true(o.keep);
	assert_true(o.host);
	assert_false(o.has_inm);

	expect_ok(S("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_HEAD, "/", 1, true);
	expect_ok(S("GET / HTTP/1.0\r\n\r\n"), HTTP_METHOD_GET, "/", 0, false);
	/* Empty lines before the request line are skipped (RFC 9112 2.2). */
	expect_ok(S("\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/b", 1, true);
	/* Header names are case-insensitive; OWS around values is dropped. */
	expect_ok(S("GET / HTTP/1.1\r\nhOsT:x\r\nCONNECTION: \t close \t\r\n\r\n"),
		  HTTP_METHOD_GET, "/", 1, false);
	/* Content-Length: 0 is no body. */
	expect_ok(S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"), HTTP_METHOD_GET, "/",
		  1, true);
	/* obs-text in a value is allowed; Host may be empty (RFC 9112 3.2). */
	expect_ok(S("GET / HTTP/1.1\r\nHost:\r\nX-Name: caf\xc3\xa9\r\n\r\n"), HTTP_METHOD_GET,
		  "/", 1, true);
}

static void test_target_forms(void **state)
{
	expect_ok(S("GET /a/b?x=1&y=%20 HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/a/b", 1, true);
	expect_ok(S("GET /?q HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/", 1, true);
	expect_ok(S("GET /a%20b%2Fc%7e HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/a b/c~", 1, true);
	expect_ok(S("GET /%c3%a9t%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET,
		  "/\xc3\xa9t\xc3\xa9", 1, true);
	expect_ok(S("GET /a:b@c!$&'()*+,;=-._~ HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET,
		  "/a:b@c!$&'()*+,;=-._~", 1, true);
	/* Dots that are not a ".." segment are fine. */
	expect_ok(S("GET /..a/b../.../.x/. HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET,
		  "/..a/b../.../.x/.", 1, true);
	/* absolute-form keeps only the path. */
	expect_ok(S("GET http://example.com/x/y?z HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET,
		  "/x/y", 1, true);
	expect_ok(S("GET HTTP://Example.COM:8080/a HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET,
		  "/a", 1, true);
	expect_ok(S("GET http://[::1]:80 HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/", 1, true);
	expect_ok(S("GET http://h?q=1 HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/", 1, true);

	expect_error(S("GET https://h/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://user@h/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http:///x HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http:// HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://h?%zz HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	/* the authority: balanced IP-literal brackets, a numeric port */
	expect_error(S("GET http://[::1 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://[::1/x HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://::1]/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://[]/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://[::1]x/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://h:8a/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET http://:80/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_ok(S("GET http://h:/ HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/", 1, true);
	expect_ok(S("GET http://[fe80::1]/a HTTP/1.1\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/a", 1, true);
	expect_error(S("GET ftp://h/ HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET * HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET h:80 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET index.html HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a#frag HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a<b> HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a\\b HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /?a b HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /?a=\"b\" HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
}

static void test_percent_escapes(void **state)
{
	expect_error(S("GET /% HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /%4 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /%4?x HTTP/1.1\r\nHost: x\r\n\r\n"), 400);	/* escape cut by '?' */
	expect_error(S("GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /%g0 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /%0g HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a?b=% HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	/* Decoded NUL and controls. */
	expect_error(S("GET /a%00b HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a%0d%0aX: y HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a%0a HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a%1f HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	expect_error(S("GET /a%7F HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
}

static void test_path_traversal(void **state)
{
	static const char *const bad[] = {
		"/..", "/../", "/../etc/passwd", "/a/../b", "/a/..", "/a/b/../../..",
		"/%2e%2e/x", "/%2E%2E", "/.%2e/x", "/a/%2e./b", "/a%2f..%2fb", "/a%2F..",
		"/..?q", "http://h/../x", "http://h/a/..",
	};
	char req[128];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", bad[i]);

		expect_error(req, (size_t)n, 400);
	}
}

/* ---- split anywhere ---- */

static const struct {
	const char *s;
	size_t n;
} samples[] = {
	{ S("GET /index.html HTTP/1.1\r\nHost: vireo\r\nAccept: */*\r\n\r\n") },
	{ S("HEAD /64k.bin?x=1 HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n") },
	{ S("\r\nGET http://h:1/%41%42 HTTP/1.1\r\nHost: h\r\nIf-None-Match: W/\"x\" \r\n\r\n") },
	{ S("\r\nGET http://h:1/%41%42 HTTP/1.1\nHost: h\nIf-None-Match: W/\"x\" \n\n") },
	{ S("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n\r\n") },
	{ S("GET /a/../b HTTP/1.1\r\nHost: x\r\n\r\n") },
	{ S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc") },
	{ S("GET / HTTP/1.1\r\nHost: x\r\n y\r\n\r\n") },
	{ S("GET / HTTP/1.1\r\nHost: x\rX\r\n\r\n") },
	{ S("GET / HTTP/2.0\r\n\r\n") },
	{ S("GET /\x00 HTTP/1.1\r\n\r\n") },
	{ S("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\n") },
	{ S("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") },
	{ S("GET /partial HTTP/1.1\r\nHost: x\r\n") },
};

static void test_split_every_way(void **state)
{
	static struct outcome whole, other;

	for (size_t i = 0; i < ARRAY_SIZE(samples); i++) {
		const char *s = samples[i].s;
		size_t n = samples[i].n;

		run(s, n, WHOLE, 0, &whole);
		run(s, n, BYTES, 0, &other);
		same(&whole, &other, "bytes, sample", i);
		for (size_t at = 0; at <= n; at++) {
			run(s, n, AT, at, &other);
			same(&whole, &other, "split at", at);
		}
		for (size_t seed = 1; seed <= 200; seed++) {
			run(s, n, RANDOM, seed, &other);
			same(&whole, &other, "random chunks, seed", seed);
		}
	}
	/* The samples are meant to cover each result. */
	run(S("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\n"), WHOLE, 0, &whole);
	assert_int_equal(whole.r, HTTP_DONE);
	assert_int_equal(whole.used, 27);
	run(S("GET /partial HTTP/1.1\r\nHost: x\r\n"), BYTES, 0, &whole);
	assert_int_equal(whole.r, HTTP_NEED_MORE);
	run(S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"), BYTES, 0, &whole);
	assert_int_equal(whole.status, 405);
}

/* ---- pipelining ---- */

/* Parse every request in buf[0..n) as a server would; returns the count and
 * checks each *consumed against ends[]. chunk 0 feeds all that is left. */
static size_t pipeline(const char *buf, size_t n, const size_t *ends, const char *const *paths,
		       size_t chunk)
{
	size_t off = 0, count = 0, used;

	http_parser_reset(&P);
	while (off < n) {
		size_t c = chunk ? MIN(chunk, n - off) : n - off;
		int r = http_parse(&P, (const u8 *)buf + off, c, &used);

		assert_true(used <= c);
		off += used;
		if (r == HTTP_NEED_MORE) {
			assert_int_equal(used, c);
			continue;
		}
		assert_int_equal(r, HTTP_DONE);
		assert_int_equal(off, ends[count]);
		assert_string_equal(P.path, paths[count]);
		assert_int_equal(P.method, count % 2 ? HTTP_METHOD_HEAD : HTTP_METHOD_GET);
		/* A finished parser holds its request until reset. */
		assert_int_equal(http_parse(&P, (const u8 *)buf + off, n - off, &used), HTTP_DONE);
		assert_int_equal(used, 0);
		count++;
		http_parser_reset(&P);
	}
	return count;
}

static void test_pipelined(void **state)
{
	static const char *const paths[] = { "/r0", "/r1", "/r2", "/r3", "/r4",
					     "/r5", "/r6", "/r7", "/r8", "/r9" };
	char buf[2048];
	size_t ends[10], n = 0;

	for (int i = 0; i < 10; i++) {
		n += (size_t)snprintf(buf + n, sizeof buf - n,
				      "%s %s%s HTTP/1.1\r\nHost: h\r\nX-Pad: %.*s\r\n\r\n",
				      i % 2 ? "HEAD" : "GET", paths[i], i == 3 ? "?q=3" : "",
				      i * 7, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopq");
		ends[i] = n;
	}
	/* Two requests in one segment, then ten, then ten in small segments. */
	assert_int_equal(pipeline(buf, ends[1], ends, paths, 0), 2);
	assert_int_equal(pipeline(buf, n, ends, paths, 0), 10);
	for (size_t chunk = 1; chunk <= 64; chunk++)
		assert_int_equal(pipeline(buf, n, ends, paths, chunk), 10);
	/* Ten plus a partial eleventh: ten DONE, then NEED_MORE holding the rest. */
	memcpy(buf + n, "GET /r10 HT", 11);
	assert_int_equal(pipeline(buf, n + 11, ends, paths, 0), 10);
	assert_int_equal(P.len, 11);
}

/* ---- keep-alive ---- */

static void test_keep_alive(void **state)
{
	static const struct {
		int minor;
		const char *conn;	/* header lines, "" for none */
		bool keep;
	} cases[] = {
		{ 1, "", true },
		{ 1, "Connection: close\r\n", false },
		{ 1, "Connection: Close\r\n", false },
		{ 1, "connection: CLOSE\r\n", false },
		{ 1, "Connection: keep-alive\r\n", true },
		{ 1, "Connection: keep-alive, Upgrade\r\n", true },
		{ 1, "Connection: Upgrade, close\r\n", false },
		{ 1, "Connection: Upgrade,close,\r\n", false },
		{ 1, "Connection: , ,close\r\n", false },
		{ 1, "Connection: keep-alive, close\r\n", false },
		{ 1, "Connection: closed\r\n", true },
		{ 1, "Connection: \r\n", true },
		{ 1, "Connection: upgrade\r\nConnection: close\r\n", false },
		{ 0, "", false },
		{ 0, "Connection: keep-alive\r\n", true },
		{ 0, "Connection: Keep-Alive\r\n", true },
		{ 0, "Connection: keep-alive, Upgrade\r\n", true },
		{ 0, "Connection: Upgrade,  KEEP-ALIVE \r\n", true },
		{ 0, "Connection: close\r\n", false },
		{ 0, "Connection: keep-alive\r\nConnection: close\r\n", false },
		{ 0, "Connection: keep-alived\r\n", false },
		{ 0, "Keep-Alive: timeout=5\r\n", false },
	};
	char req[256];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int n = snprintf(req, sizeof req, "GET / HTTP/1.%d\r\nHost: x\r\n%s\r\n", cases[i].minor,
				 cases[i].conn);

		expect_ok(req, (size_t)n, HTTP_METHOD_GET, "/", cases[i].minor, cases[i].keep);
	}
	/* HTTP/1.x with x > 1 is served as 1.1: keep-alive default, Host needed. */
	expect_ok(S("GET / HTTP/1.2\r\nHost: x\r\n\r\n"), HTTP_METHOD_GET, "/", 1, true);
	expect_ok(S("GET / HTTP/1.9\r\nHost: x\r\nConnection: close\r\n\r\n"), HTTP_METHOD_GET, "/",
		  1, false);
	expect_error(S("GET / HTTP/1.2\r\n\r\n"), 400);
	/* Connection elements must be tokens. */
	expect_error(S("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep alive\r\n\r\n"), 400);
	expect_error(S("GET / HTTP/1.1\r\nHost: x\r\nConnection: \"close\"\r\n\r\n"), 400);
}

/* ---- refusals ---- */

static void test_bad_request(void **state)
{
	static const struct {
		const char *s;
		size_t n;
	} bad[] = {
		/* request line */
		{ S("GET /\r\n\r\n") },
		{ S("GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n") },
		{ S("GET  / HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET /  HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S(" GET / HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/1.1 \r\nHost: x\r\n\r\n") },
		{ S("GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET /\tHTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("/ HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET / http/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/1.10\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/1\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/11\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/a.1\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/1.x\r\nHost: x\r\n\r\n") },
		{ S("G(T / HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("G\xc3\x89T / HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n") },
		{ S("GET") },	/* fed with nothing after: see below */
		/* Host */
		{ S("GET / HTTP/1.1\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: a b\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: u@h\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: h/x\r\n\r\n") },
		/* field lines */
		{ S("GET / HTTP/1.1\r\nHost : x\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX-A\t: y\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX-A: y\r\n  folded\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX-A: y\r\n\tfolded\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\n Host: x\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\n: empty-name\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX(Y): z\r\n\r\n") },
		/* control bytes, NUL and bare CR anywhere */
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x01z\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x7fz\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nX-A: a\x00z\r\n\r\n") },
		{ S("GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET /a\x1b[0m HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("GET / HTTP/1.1\rHost: x\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\n\r\r\n") },
		/* bare LF: no line ends in it (a front end that splits only at
		 * CRLF would see "X-A: a\nHost: y" as one field) */
		{ S("GET /a HTTP/1.1\nHost: x\n\n") },
		{ S("GET /a HTTP/1.1\r\nHost: x\n\r\n") },
		{ S("GET /a HTTP/1.1\r\nHost: x\r\nX-A: a\nHost: y\r\n\r\n") },
		{ S("GET /a HTTP/1.1\r\nHost: x\r\n\n") },
		{ S("\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n") },
		{ S("\r\n\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n") },
		/* Content-Length */
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 5\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: +1\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1 2\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n") },
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n") },
		/* both framings at once */
		{ S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n") },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		if (strcmp(bad[i].s, "GET") == 0)
			continue;
		expect_error(bad[i].s, bad[i].n, 400);
	}
	/* A lone "GET" is not an error yet: more may come. */
	{
		struct outcome o;

		parse2(S("GET"), &o);
		assert_int_equal(o.r, HTTP_NEED_MORE);
		assert_int_equal(o.used, 3);
	}
	/* Errors are reported at the offending byte, before the head ends. */
	{
		size_t used;

		http_parser_reset(&P);
		assert_int_equal(http_parse(&P, (const u8 *)"GET /\x01 and more", 16, &used), HTTP_ERROR);
		assert_int_equal(used, 6);
		assert_int_equal(P.status, 400);
	}
}

static void test_bodies_refused(void **state)
{
	expect_error(S("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"), 413);
	expect_error(S("HEAD / HTTP/1.1\r\nHost: x\r\ncontent-length: 1\r\n\r\n"), 413);
	expect_error(S("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"), 501);
	expect_error(S("GET / HTTP/1.0\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
	expect_error(S("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
		     400);
}

/* With ext (the application API): "Transfer-Encoding: chunked" alone is
 * a chunked body; everything that could put its end in doubt is refused. */
static void test_te_ext(void **state)
{
	static const struct { const char *te; int status; } cases[] = {
		{ "chunked", 0 }, { "Chunked", 0 }, { "CHUNKED ", 0 }, { "\tchunked", 0 },
		{ "gzip", 501 }, { "gzip, chunked", 400 }, { "xchunked", 501 }, { "chunkedx", 501 },
		{ "identity", 501 }, { "chunked, chunked", 400 }, { "chunked, gzip", 400 },
		{ "chunked,", 400 }, { ",chunked", 400 }, { "", 400 }, { "chunk ed", 400 },
		{ "\"chunked\"", 400 }, { "chunked;q=1", 400 },
	};
	static struct outcome o;
	char req[256];
	int n;

	P.ext = true;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		n = snprintf(req, sizeof req, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: %s\r\n\r\n",
			     cases[i].te);
		parse2(req, (size_t)n, &o);
		if (cases[i].status ? o.r != HTTP_ERROR || o.status != cases[i].status :
				      o.r != HTTP_DONE || !P.chunked || P.content_length)
			fail_msg("\"%s\": r %d status %d, want %d", cases[i].te, o.r, o.status, cases[i].status);
	}
	/* Both framings (either order), the field twice, HTTP/1.0: 400. */
	expect_error(S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
		     400);
	expect_error(S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n"),
		     400);
	expect_error(S("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n"),
		     400);
	expect_error(S("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
	/* A Content-Length request is not chunked, and a reset forgets it. */
	parse2(S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"), &o);
	assert_int_equal(o.r, HTTP_DONE);
	assert_false(P.chunked);
	assert_int_equal(P.content_length, 3);
	http_parser_reset(&P);
	assert_false(P.chunked);
	P.ext = false;
}

/* With ext the Connection field is listed among the fields too (an app
 * that passes the head on reads it: apps/proxy's Upgrade), its tokens
 * still read; the path decoded, the query raw. The raw path is kept only
 * with http_raw_keep set (runtime/http/exchange.c's, tests/host/runtime/
 * test_api.c). */
static void test_connection_listed(void **state)
{
	static struct outcome o;

	P.ext = true;
	parse2(S("GET /a%2Fb/c%20d?x=%2F HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, close\r\n\r\n"), &o);
	assert_int_equal(o.r, HTTP_DONE);
	assert_string_equal(P.path, "/a/b/c d");
	assert_string_equal(P.query, "x=%2F");
	assert_null(P.raw_path);
	assert_string_equal(http_header(&P, "connection"), "Upgrade, close");
	assert_false(P.keep_alive);
	http_parser_reset(&P);
	expect_error(S("GET / HTTP/1.1\r\nHost: x\r\nConnection: a b\r\n\r\n"), 400);
	P.ext = false;
}

/* A chunked request, its body and a pipelined request, split at every
 * byte into two deliveries: the head parser, the decoder from where the
 * head ended, then the parser again from where the body ended, as the
 * server reads them. The same payload and the same next request every
 * time. */
static void test_chunked_request_every_split(void **state)
{
	static const char s[] = "PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
				"5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nT: v\r\n\r\n"
				"GET /next HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char want[] = "hello 0123456789";
	const size_t n = sizeof s - 1;

	for (size_t k = 0; k <= n; k++) {
		/* Two deliveries: s[0..k) then s[k..n); held bytes are re-fed. */
		size_t have = 0, off = 0, used, avail, got = 0;
		char body[64];
		int phase = 0, r;
		struct chunked d;

		http_parser_reset(&P);
		P.ext = true;
		for (int delivery = 0; delivery < 2; delivery++) {
			have = delivery ? n : k;
			while (off < have) {
				if (phase == 0) {
					r = http_parse(&P, (const u8 *)s + off, have - off, &used);
					off += used;
					if (r == HTTP_NEED_MORE)
						break;
					assert_int_equal(r, HTTP_DONE);
					assert_true(P.chunked);
					assert_string_equal(P.path, "/up");
					chunked_init(&d);
					phase = 1;
				} else if (phase == 1) {
					r = chunked_step(&d, (const u8 *)s + off, have - off, &used, &avail);
					off += used;
					if (r == CHUNKED_DATA) {
						assert_true(got + avail < sizeof body);
						memcpy(body + got, s + off, avail);
						got += avail;
						chunked_take(&d, avail);
						off += avail;
						continue;
					}
					if (r == CHUNKED_MORE)
						break;
					assert_int_equal(r, CHUNKED_END);
					http_parser_reset(&P);
					phase = 2;
				} else {
					r = http_parse(&P, (const u8 *)s + off, have - off, &used);
					off += used;
					if (r == HTTP_NEED_MORE)
						break;
					assert_int_equal(r, HTTP_DONE);
					assert_false(P.chunked);
					assert_string_equal(P.path, "/next");
					phase = 3;
				}
			}
		}
		if (phase != 3 || off != n || got != sizeof want - 1 || memcmp(body, want, got))
			fail_msg("split %zu: phase %d off %zu got %zu", k, phase, off, got);
	}
	P.ext = false;
}

static void test_method_not_allowed(void **state)
{
	static const char *const methods[] = {
		"POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "CONNECT", "get", "Head",
		"GETS", "BREW", "M-SEARCH", "X!#$%&'*+-.^_`|~1",
	};
	char req[128];

	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		int n = snprintf(req, sizeof req, "%s / HTTP/1.1\r\nHost: x\r\n\r\n", methods[i]);

		expect_error(req, (size_t)n, 405);
	}
	/* Method is judged before the target: OPTIONS * and CONNECT h:443 are 405. */
	expect_error(S("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"), 405);
	expect_error(S("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n"), 405);
	expect_error(S("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"), 405);
}

static void test_version_not_supported(void **state)
{
	expect_error(S("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), 505);
	expect_error(S("GET / HTTP/3.0\r\nHost: x\r\n\r\n"), 505);
	expect_error(S("GET / HTTP/0.9\r\n\r\n"), 505);
	expect_error(S("GET / HTTP/9.9\r\n\r\n"), 505);
	expect_error(S("POST / HTTP/2.0\r\n\r\n"), 505);
}

/* "GET /aaa...a HTTP/1.1" whose request line is exactly line_len bytes,
 * lines ending in eol. The target goes to target (if not NULL). */
static char *long_line_request(size_t line_len, const char *eol, size_t *n_out, char *target)
{
	size_t tl = line_len - 4 - 9;
	char *s = malloc(line_len + 64);
	int n;

	assert_non_null(s);
	memcpy(s, "GET /", 5);
	memset(s + 5, 'a', tl - 1);
	n = sprintf(s + 4 + tl, " HTTP/1.1%sHost: x%s%s", eol, eol, eol);
	*n_out = 4 + tl + (size_t)n;
	if (target) {
		memcpy(target, s + 4, tl);
		target[tl] = '\0';
	}
	return s;
}

static void test_uri_too_long(void **state)
{
	static char target[HTTP_REQLINE_MAX];
	size_t n, used;
	char *s;

	s = long_line_request(3013, "\r\n", &n, NULL);	/* a 3000-byte target */
	expect_error(s, n, 414);
	free(s);

	/* Exactly HTTP_REQLINE_MAX is fine, one more is not (a bare LF ends
	 * no line: 400 whatever the length). */
	s = long_line_request(HTTP_REQLINE_MAX, "\r\n", &n, target);
	expect_ok(s, n, HTTP_METHOD_GET, target, 1, true);
	free(s);
	s = long_line_request(HTTP_REQLINE_MAX + 1, "\r\n", &n, NULL);
	expect_error(s, n, 414);
	free(s);
	s = long_line_request(HTTP_REQLINE_MAX, "\n", &n, NULL);
	expect_error(s, n, 400);
	free(s);

	/* 414 as soon as the line is too long, without waiting for its end. */
	s = malloc(4000);
	assert_non_null(s);
	memcpy(s, "GET /", 5);
	memset(s + 5, 'b', 4000 - 5);
	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)s, 4000, &used), HTTP_ERROR);
	assert_int_equal(P.status, 414);
	assert_int_equal(used, HTTP_REQLINE_MAX + 2);
	free(s);
}

/* A request whose head is exactly head_len bytes, padded in one header. */
static char *sized_head(size_t head_len, size_t *n_out)
{
	static const char pre[] = "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ";
	char *s = malloc(head_len + 1);
	size_t pad = head_len - (sizeof pre - 1) - 4;

	assert_non_null(s);
	memcpy(s, pre, sizeof pre - 1);
	memset(s + sizeof pre - 1, 'p', pad);
	memcpy(s + sizeof pre - 1 + pad, "\r\n\r\n", 4);
	*n_out = head_len;
	return s;
}

static void test_header_fields_too_large(void **state)
{
	char *s, req[4096];
	size_t n, used;
	int len;

	s = sized_head(9000, &n);
	expect_error(s, n, 431);
	free(s);
	s = sized_head(HTTP_HEAD_MAX, &n);
	expect_ok(s, n, HTTP_METHOD_GET, "/", 1, true);
	free(s);
	s = sized_head(HTTP_HEAD_MAX + 1, &n);
	expect_error(s, n, 431);
	/* Reported once the buffer is full, consuming exactly HTTP_HEAD_MAX. */
	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)s, n, &used), HTTP_ERROR);
	assert_int_equal(used, HTTP_HEAD_MAX);
	free(s);

	/* 64 header lines are fine (Host plus 63), 65 are not. */
	for (int count = 64; count <= 65; count++) {
		len = sprintf(req, "GET / HTTP/1.1\r\nHost: x\r\n");
		for (int i = 1; i < count; i++)
			len += sprintf(req + len, "X-H%d: v\r\n", i);
		len += sprintf(req + len, "\r\n");
		if (count == 64)
			expect_ok(req, (size_t)len, HTTP_METHOD_GET, "/", 1, true);
		else
			expect_error(req, (size_t)len, 431);
	}
	/* Empty lines before the request count toward the head. */
	s = malloc(HTTP_HEAD_MAX + 64);
	assert_non_null(s);
	for (n = 0; n < HTTP_HEAD_MAX; n += 2)
		memcpy(s + n, "\r\n", 2);
	memcpy(s + n, "GET / HTTP/1.0\r\n\r\n", 18);
	expect_error(s, n + 18, 431);
	free(s);
}

static void test_if_none_match_and_state(void **state)
{
	struct outcome o;
	size_t used;

	parse2(S("GET / HTTP/1.1\r\nHost: x\r\nIf-None-Match:   \"a\", W/\"b\"  \r\n\r\n"), &o);
	assert_int_equal(o.r, HTTP_DONE);
	assert_true(o.has_inm);
	assert_string_equal(o.inm, "\"a\", W/\"b\"");
	parse2(S("GET / HTTP/1.1\r\nHost: x\r\nIf-None-Match: \"a\"\r\nif-none-match: \"b\"\r\n\r\n"), &o);
	assert_int_equal(o.r, HTTP_DONE);
	assert_false(o.has_inm);

	/* If-Modified-Since: trimmed, NUL-terminated; twice is none; reset forgets it */
	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.1\r\nHost: x\r\nIf-Modified-Since:  Sun, 06 Nov 1994 08:49:37 GMT \r\n\r\n",
				    79, &used), HTTP_DONE);
	assert_string_equal(P.if_modified_since, "Sun, 06 Nov 1994 08:49:37 GMT");
	http_parser_reset(&P);
	assert_null(P.if_modified_since);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.1\r\nHost: x\r\nIf-Modified-Since: a\r\nif-modified-since: a\r\n\r\n",
				    71, &used), HTTP_DONE);
	assert_null(P.if_modified_since);

	/* Errors stick until reset; reset makes the parser reusable. */
	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)"BAD\x01", 4, &used), HTTP_ERROR);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.0\r\n\r\n", 18, &used), HTTP_ERROR);
	assert_int_equal(used, 0);
	assert_int_equal(P.status, 400);
	http_parser_reset(&P);
	assert_int_equal(P.status, 0);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.0\r\n\r\n", 18, &used), HTTP_DONE);
	assert_int_equal(used, 18);
	/* Zero input is fine in any state. */
	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)"", 0, &used), HTTP_NEED_MORE);
	assert_int_equal(used, 0);
	/* A zeroed parser needs no reset. */
	{
		static struct http_req_parser z;

		assert_int_equal(http_parse(&z, (const u8 *)"HEAD /z HTTP/1.0\r\n\r\n", 20, &used), HTTP_DONE);
		assert_string_equal(z.path, "/z");
	}
}

/* The Host value is kept (trimmed) for the HTTPS redirect's Location. */
static void test_host_value(void **state)
{
	size_t used;

	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.1\r\nHost:  ex.org:8080 \r\n\r\n", 39, &used),
			 HTTP_DONE);
	assert_string_equal(P.host, "ex.org:8080");
	http_parser_reset(&P);
	assert_null(P.host);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.0\r\n\r\n", 18, &used), HTTP_DONE);
	assert_null(P.host);
	/* A bad Host character is a 400 and leaves no value behind. */
	http_parser_reset(&P);
	assert_int_equal(http_parse(&P, (const u8 *)"GET / HTTP/1.1\r\nHost: a\"b\r\n\r\n", 29, &used),
			 HTTP_ERROR);
	assert_int_equal(P.status, 400);
	assert_null(P.host);
}

/* ---- responses ---- */

static void check_head(int status, const char *type, u64 len, bool keep, const char *extra,
		       const char *want)
{
	size_t need = strlen(want), got;
	char *buf;

	for (size_t size = 0; size <= need + 1; size++) {
		buf = malloc(size ? size : 1);	/* exact size: ASan sees any overrun */
		got = http_response_head(buf, size, status, type, len, keep, extra);
		if (size < need) {
			if (got)
				fail_msg("status %d size %zu < %zu: returned %zu", status, size, need, got);
		} else {
			assert_int_equal(got, need);
			if (memcmp(buf, want, need) != 0)
				fail_msg("got \"%.*s\"\nwant \"%s\"", (int)need, buf, want);
		}
		free(buf);
	}
}

static void test_response_head(void **state)
{
	char buf[256];

	check_head(200, "text/html; charset=utf-8", 612, true, NULL,
		   "HTTP/1.1 200 OK\r\n"
		   "Server: vireo\r\n"
		   "Content-Type: text/html; charset=utf-8\r\n"
		   "Content-Length: 612\r\n"
		   "Connection: keep-alive\r\n"
		   "\r\n");
	check_head(404, "text/html; charset=utf-8", 0, false, "X-A: 1\r\nX-B: 2\r\n",
		   "HTTP/1.1 404 Not Found\r\n"
		   "Server: vireo\r\n"
		   "Content-Type: text/html; charset=utf-8\r\n"
		   "Content-Length: 0\r\n"
		   "Connection: close\r\n"
		   "X-A: 1\r\nX-B: 2\r\n"
		   "\r\n");
	check_head(304, NULL, 65536, true, "ETag: \"abc\"\r\n",
		   "HTTP/1.1 304 Not Modified\r\n"
		   "Server: vireo\r\n"
		   "Content-Length: 65536\r\n"
		   "Connection: keep-alive\r\n"
		   "ETag: \"abc\"\r\n"
		   "\r\n");
	check_head(200, "application/octet-stream", UINT64_MAX, false, "",
		   "HTTP/1.1 200 OK\r\n"
		   "Server: vireo\r\n"
		   "Content-Type: application/octet-stream\r\n"
		   "Content-Length: 18446744073709551615\r\n"
		   "Connection: close\r\n"
		   "\r\n");
	check_head(299, NULL, 10, true, NULL,
		   "HTTP/1.1 299 \r\nServer: vireo\r\nContent-Length: 10\r\n"
		   "Connection: keep-alive\r\n\r\n");
	assert_int_equal(http_response_head(buf, sizeof buf, 99, NULL, 0, true, NULL), 0);
	assert_int_equal(http_response_head(buf, sizeof buf, 600, NULL, 0, true, NULL), 0);
	assert_int_equal(http_response_head(buf, sizeof buf, -200, NULL, 0, true, NULL), 0);
}

static void test_reasons(void **state)
{
	static const struct {
		int status;
		const char *reason;
	} r[] = {
		{ 200, "OK" }, { 304, "Not Modified" }, { 400, "Bad Request" }, { 404, "Not Found" },
		{ 405, "Method Not Allowed" }, { 408, "Request Timeout" },
		{ 413, "Content Too Large" }, { 414, "URI Too Long" },
		{ 431, "Request Header Fields Too Large" }, { 500, "Internal Server Error" },
		{ 501, "Not Implemented" }, { 503, "Service Unavailable" },
		{ 505, "HTTP Version Not Supported" }, { 0, "" }, { 418, "" }, { 999, "" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(r); i++)
		assert_string_equal(http_reason(r[i].status), r[i].reason);
}

static void test_error_responses(void **state)
{
	static const int statuses[] = { 400, 404, 405, 408, 413, 414, 431, 500, 501, 503, 505 };
	char buf[1024], body[512], want_h1[128], *p;
	size_t n, b, h;

	for (size_t i = 0; i < ARRAY_SIZE(statuses); i++) {
		int st = statuses[i];

		b = http_error_body(NULL, 0, st);
		assert_true(b > 0);
		assert_int_equal(http_error_body(body, sizeof body, st), b);
		assert_int_equal(http_error_body(body, b - 1, st), 0);
		snprintf(want_h1, sizeof want_h1, "<h1>%d %s</h1>", st, http_reason(st));
		body[b] = '\0';
		assert_non_null(strstr(body, want_h1));
		assert_memory_equal(body, "<!DOCTYPE html>\n<html>", 22);

		n = http_error_response(buf, sizeof buf, st, false, false);
		assert_true(n > b);
		h = n - b;
		assert_memory_equal(buf + h, body, b);
		assert_memory_equal(buf + h - 4, "\r\n\r\n", 4);
		buf[h] = '\0';
		snprintf(want_h1, sizeof want_h1, "HTTP/1.1 %d %s\r\n", st, http_reason(st));
		assert_memory_equal(buf, want_h1, strlen(want_h1));
		snprintf(want_h1, sizeof want_h1, "\r\nContent-Length: %zu\r\n", b);
		assert_non_null(strstr(buf, want_h1));
		assert_non_null(strstr(buf, "\r\nContent-Type: text/html; charset=utf-8\r\n"));
		assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
		p = strstr(buf, "\r\nAllow: GET, HEAD\r\n");
		assert_true(st == 405 ? p != NULL : p == NULL);

		assert_int_equal(http_error_response(buf, sizeof buf, st, false, true), h);
		assert_int_equal(http_error_response(buf, n - 1, st, false, false), 0);
		assert_int_equal(http_error_response(buf, n, st, false, false), n);
		assert_int_equal(http_error_response(buf, h - 1, st, false, true), 0);
	}
	http_error_response(buf, sizeof buf, 404, true, false);
	assert_non_null(strstr(buf, "\r\nConnection: keep-alive\r\n"));
	assert_int_equal(http_error_body(NULL, 0, 200), 0);
	assert_int_equal(http_error_body(NULL, 0, 499), 0);
	assert_int_equal(http_error_response(buf, sizeof buf, 302, false, false), 0);
}

static void test_content_types(void **state)
{
	static const struct {
		const char *path, *type;
	} t[] = {
		{ "/index.html", "text/html; charset=utf-8" },
		{ "/a.HTM", "text/html; charset=utf-8" },
		{ "/s.css", "text/css; charset=utf-8" },
		{ "/app.js", "text/javascript; charset=utf-8" },
		{ "/d.json", "application/json" },
		{ "/r.txt", "text/plain; charset=utf-8" },
		{ "/i.svg", "image/svg+xml" },
		{ "/i.PNG", "image/png" },
		{ "/i.jpg", "image/jpeg" },
		{ "/i.jpeg", "image/jpeg" },
		{ "/i.gif", "image/gif" },
		{ "/favicon.ico", "image/x-icon" },
		{ "/m.wasm", "application/wasm" },
		{ "/f.xml", "application/xml" },
		{ "/doc.pdf", "application/pdf" },
		{ "/f.woff", "font/woff" },
		{ "/f.woff2", "font/woff2" },
		{ "/64k.bin", "application/octet-stream" },
		{ "/README", "application/octet-stream" },
		{ "/a.tar.gz", "application/gzip" },
		{ "/m.mjs", "text/javascript; charset=utf-8" },
		{ "/M.MJS", "text/javascript; charset=utf-8" },
		{ "/app.webmanifest", "application/manifest+json" },
		{ "/app.js.map", "application/json" },
		{ "/i.webp", "image/webp" },
		{ "/i.avif", "image/avif" },
		{ "/v.mp4", "video/mp4" },
		{ "/v.webm", "video/webm" },
		{ "/a.mp3", "audio/mpeg" },
		{ "/a.wav", "audio/wav" },
		{ "/f.ttf", "font/ttf" },
		{ "/f.otf", "font/otf" },
		{ "/d.csv", "text/csv; charset=utf-8" },
		{ "/z.zip", "application/zip" },
		{ "/x.webmanifestx", "application/octet-stream" },
		{ "/x.webmanifes", "application/octet-stream" },
		{ "/x.m", "application/octet-stream" },
		{ "/x.\xc3\xa9", "application/octet-stream" },
		{ "/a.html.bak", "application/octet-stream" },
		{ "/dir.html/file", "application/octet-stream" },
		{ "/x.", "application/octet-stream" },
		{ "/x.htmlx", "application/octet-stream" },
		{ "/x.ht", "application/octet-stream" },
		{ "/.html", "text/html; charset=utf-8" },
		{ "", "application/octet-stream" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		if (strcmp(http_content_type(t[i].path), t[i].type) != 0)
			fail_msg("%s: got %s want %s", t[i].path, http_content_type(t[i].path), t[i].type);
}

/* Every extension of the table tools/mkmime.py makes from /etc/mime.types,
 * as the tool says, in upper case too: the generated C table and the tool
 * agree (mksite.py uses the tool's). */
static void test_content_types_generated(void **state)
{
	char line[256], ext[64], type[160], up[64];
	unsigned n = 0;
	FILE *p;

	if (access("tools/mkmime.py", R_OK) != 0 || access("/etc/mime.types", R_OK) != 0)
		skip();	/* run from the repository root, with media-types */
	p = popen("/usr/bin/python3 tools/mkmime.py --list", "r");
	assert_non_null(p);
	while (fgets(line, sizeof line, p)) {
		char path[80];
		size_t i;

		assert_int_equal(sscanf(line, "%63s %159[^\n]", ext, type), 2);
		snprintf(path, sizeof path, "/d.x/f.%s", ext);
		if (strcmp(http_content_type(path), type) != 0)
			fail_msg("%s: got %s want %s", path, http_content_type(path), type);
		for (i = 0; ext[i]; i++)
			up[i] = (char)toupper((unsigned char)ext[i]);
		up[i] = '\0';
		snprintf(path, sizeof path, "/F.%s", up);
		assert_string_equal(http_content_type(path), type);
		n++;
	}
	assert_int_equal(pclose(p), 0);
	assert_true(n > 100);	/* the table is the list's, not a handful */
}

/* Range as nginx answers it (ngx_http_range_parse's rules): one range
 * 206, none satisfiable or malformed 416, several or another unit 200. */
static void test_byte_range(void **state)
{
	static const struct {
		const char *v;
		u64 len;
		int want;
		u64 first, last;
	} t[] = {
		{ "bytes=0-99", 1000, HTTP_RANGE_ONE, 0, 99 },
		{ "bytes=100-", 1000, HTTP_RANGE_ONE, 100, 999 },
		{ "bytes=-100", 1000, HTTP_RANGE_ONE, 900, 999 },
		{ "bytes=-5000", 1000, HTTP_RANGE_ONE, 0, 999 },	/* suffix past the start: whole */
		{ "bytes=500-5000", 1000, HTTP_RANGE_ONE, 500, 999 },	/* last clamped */
		{ "bytes=999-999", 1000, HTTP_RANGE_ONE, 999, 999 },
		{ "BYTES=0-0", 1000, HTTP_RANGE_ONE, 0, 0 },
		{ "bytes= 1 - 2 ", 1000, HTTP_RANGE_ONE, 1, 2 },
		{ "bytes=0-1,2000-3000", 1000, HTTP_RANGE_ONE, 0, 1 },	/* one satisfiable */
		{ "bytes=1000-", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=1000-2000", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=-0", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=5-4", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=abc", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=1-2x", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=-", 1000, HTTP_RANGE_BAD, 0, 0 },
		{ "bytes=99999999999999999999-", 1000, HTTP_RANGE_BAD, 0, 0 },	/* past u64 */
		{ "bytes=0-18446744073709551615", 1000, HTTP_RANGE_ONE, 0, 999 },
		{ "bytes=0-1,3-4", 1000, HTTP_RANGE_NONE, 0, 0 },	/* several: the whole file */
		{ "items=0-1", 1000, HTTP_RANGE_NONE, 0, 0 },
		{ "bytes 0-1", 1000, HTTP_RANGE_NONE, 0, 0 },
		{ "", 1000, HTTP_RANGE_NONE, 0, 0 },
		{ "bytes=0-", 0, HTTP_RANGE_NONE, 0, 0 },	/* an empty file: whole */
		{ "bytes=-1", 0, HTTP_RANGE_NONE, 0, 0 },
		{ "bytes=1-", 0, HTTP_RANGE_BAD, 0, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		u64 first = 77, last = 77;
		int r = http_byte_range(t[i].v, t[i].len, &first, &last);

		if (r != t[i].want)
			fail_msg("Range %s on %llu: got %d want %d", t[i].v, (unsigned long long)t[i].len, r, t[i].want);
		if (r == HTTP_RANGE_ONE && (first != t[i].first || last != t[i].last))
			fail_msg("Range %s: got %llu-%llu", t[i].v, (unsigned long long)first, (unsigned long long)last);
	}
	assert_int_equal(http_byte_range(NULL, 10, &(u64){ 0 }, &(u64){ 0 }), HTTP_RANGE_NONE);
}

static void test_if_range(void **state)
{
	u64 lm = 784111777;	/* Sun, 06 Nov 1994 08:49:37 GMT */

	assert_true(http_if_range(NULL, "\"abc\"", lm));
	assert_true(http_if_range("\"abc\"", "\"abc\"", lm));
	assert_false(http_if_range("\"abd\"", "\"abc\"", lm));
	assert_false(http_if_range("\"abc", "\"abc\"", lm));
	assert_false(http_if_range("W/\"abc\"", "\"abc\"", lm));	/* weak never matches */
	assert_false(http_if_range("\"abc\"", NULL, lm));
	assert_true(http_if_range("Sun, 06 Nov 1994 08:49:37 GMT", "\"abc\"", lm));
	assert_false(http_if_range("Sun, 06 Nov 1994 08:49:38 GMT", "\"abc\"", lm));
	assert_false(http_if_range("Sun, 06 Nov 1994 08:49:37 GMT", "\"abc\"", 0));	/* no Last-Modified */
	assert_false(http_if_range("yesterday", "\"abc\"", lm));
}

static void test_accepts_gzip(void **state)
{
	assert_true(http_accepts_coding("gzip", "gzip"));
	assert_true(http_accepts_coding("gzip, deflate, br", "gzip"));
	assert_true(http_accepts_coding("br;q=1.0, GZIP;q=0.5", "gzip"));
	assert_true(http_accepts_coding("deflate, gzip", "gzip"));
	assert_true(http_accepts_coding("gzip;q=0.1", "gzip"));
	assert_false(http_accepts_coding(NULL, "gzip"));
	assert_false(http_accepts_coding("", "gzip"));
	assert_false(http_accepts_coding("identity", "gzip"));
	assert_false(http_accepts_coding("gzip;q=0", "gzip"));
	assert_false(http_accepts_coding("gzip; q=0.000, br", "gzip"));
	assert_false(http_accepts_coding("xgzip, gzipx", "gzip"));
	assert_false(http_accepts_coding("*", "gzip"));
	assert_false(http_accepts_coding("br, gzip;q=0.0", "gzip"));
	assert_true(http_accepts_coding("gzip, deflate, br", "br"));
	assert_true(http_accepts_coding("BR;q=0.5", "br"));
	assert_false(http_accepts_coding("gzip, deflate", "br"));
	assert_false(http_accepts_coding("br;q=0, gzip", "br"));
	assert_false(http_accepts_coding("brotli, b, bro", "br"));
}

static void test_etag_match(void **state)
{
	static const struct {
		const char *inm, *etag;
		bool match;
	} t[] = {
		{ "\"abc\"", "\"abc\"", true },
		{ "W/\"abc\"", "\"abc\"", true },
		{ "\"abc\"", "W/\"abc\"", true },
		{ "\"x\", \"abc\"", "\"abc\"", true },
		{ "\"x\",W/\"abc\" ,", "\"abc\"", true },
		{ " , ,\"abc\"", "\"abc\"", true },
		{ "*", "\"abc\"", true },
		{ " * ", "\"abc\"", true },
		{ "\"abd\"", "\"abc\"", false },
		{ "\"ab\"", "\"abc\"", false },
		{ "\"abcd\"", "\"abc\"", false },
		{ "abc", "\"abc\"", false },
		{ "\"abc", "\"abc\"", false },
		{ "\"abc\" junk", "\"abc\"", false },
		{ "\"abc\", junk", "\"abc\"", false },
		{ "*, \"abc\"", "\"abc\"", false },
		{ "\"a bc\"", "\"a bc\"", false },
		{ "", "\"abc\"", false },
		{ "\"abc\"", "abc", false },
		{ "w/\"abc\"", "\"abc\"", false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++)
		if (http_etag_match(t[i].inm, t[i].etag) != t[i].match)
			fail_msg("If-None-Match %s vs %s: want %d", t[i].inm, t[i].etag, t[i].match);
	assert_false(http_etag_match(NULL, "\"abc\""));
	assert_false(http_etag_match("*", NULL));
}

/* ---- the static site ---- */

static void test_site_lookup(void **state)
{
	const struct site_file *f, *idx;

	assert_int_equal(site_nfiles, 2);
	/* /64k.bin is synthetic: not in the image, found once generated */
	assert_null(site_files[0].data);
	assert_null(site_lookup("/64k.bin"));
	site_synth_boot();
	site_synth_boot();	/* once */
	idx = site_lookup("/index.html");
	assert_non_null(idx);
	assert_string_equal(idx->path, "/index.html");
	assert_int_equal(idx->len, 612);
	assert_string_equal(idx->content_type, "text/html; charset=utf-8");
	assert_memory_equal(idx->data, "<!DOCTYPE html>", 15);
	assert_non_null(memmem(idx->data, idx->len, "Welcome to vireo!", 17));
	assert_ptr_equal(site_lookup("/"), idx);

	f = site_lookup("/64k.bin");
	assert_non_null(f);
	assert_int_equal(f->len, 65536);
	assert_string_equal(f->content_type, "application/octet-stream");
	for (size_t i = 0; i < f->len; i++)
		if (f->data[i] != i % 251)
			fail_msg("64k.bin byte %zu is %u", i, f->data[i]);

	assert_null(site_lookup("/missing"));
	assert_null(site_lookup("/index.htm"));
	assert_null(site_lookup("/index.html/"));
	assert_null(site_lookup("/index.htmlx"));
	assert_null(site_lookup("/64k.bin/"));
	assert_null(site_lookup("//"));
	assert_null(site_lookup("index.html"));
	assert_null(site_lookup(""));
	assert_null(site_lookup(NULL));

	/* Every entry: sorted, findable, typed as the parser would, quoted tag. */
	for (size_t i = 0; i < site_nfiles; i++) {
		const char *e = site_files[i].etag;

		if (i)
			assert_true(strcmp(site_files[i - 1].path, site_files[i].path) < 0);
		f = site_lookup(site_files[i].path);
		assert_non_null(f);
		assert_string_equal(f->path, site_files[i].path);
		assert_int_equal(f->len, site_files[i].len);
		assert_ptr_equal(f->etag, site_files[i].etag);
		assert_true(site_files[i].data == NULL || f == &site_files[i] || f->data == site_files[i].data);
		assert_string_equal(site_files[i].content_type, http_content_type(site_files[i].path));
		assert_int_equal(strlen(e), 18);
		assert_true(e[0] == '"' && e[17] == '"');
		assert_int_equal(strspn(e + 1, "0123456789abcdef"), 16);
		assert_true(http_etag_match(e, e));
	}
	assert_string_not_equal(site_files[0].etag, site_files[1].etag);
}

static void test_site_find_dirs(void **state)
{
	static const u8 d[1];
	static const struct site_file t[] = {	/* byte order, as mksite.py sorts */
		{ "/a", d, 1, "", "", 0 },
		{ "/a-b/index.html", d, 1, "", "", 0 },
		{ "/a/b", d, 1, "", "", 0 },
		{ "/a/index.html", d, 1, "", "", 0 },
		{ "/b.txt", d, 1, "", "", 0 },
		{ "/docs/deep/index.html", d, 1, "", "", 0 },
		{ "/docs/index.html", d, 1, "", "", 0 },
		{ "/z", d, 1, "", "", 0 },
	};

	for (size_t n = 0; n <= ARRAY_SIZE(t); n++)	/* every prefix of the table */
		for (size_t i = 0; i < ARRAY_SIZE(t); i++)
			assert_ptr_equal(site_find(t, n, t[i].path), i < n ? &t[i] : NULL);
	assert_ptr_equal(site_find(t, ARRAY_SIZE(t), "/a/"), &t[3]);
	assert_ptr_equal(site_find(t, ARRAY_SIZE(t), "/a-b/"), &t[1]);
	assert_ptr_equal(site_find(t, ARRAY_SIZE(t), "/docs/"), &t[6]);
	assert_ptr_equal(site_find(t, ARRAY_SIZE(t), "/docs/deep/"), &t[5]);
	assert_null(site_find(t, ARRAY_SIZE(t), "/"));
	assert_null(site_find(t, ARRAY_SIZE(t), "/docs"));
	assert_null(site_find(t, ARRAY_SIZE(t), "/docs//"));
	assert_null(site_find(t, ARRAY_SIZE(t), "/b.txt/"));
	assert_null(site_find(t, ARRAY_SIZE(t), "/0"));
	assert_null(site_find(t, ARRAY_SIZE(t), "/zz"));
	assert_null(site_find(t, 0, "/"));
}

/* ---- tools/mksite.py ---- */

#define PY "/usr/bin/python3 tools/mksite.py"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_mksite(void **state)
{
	char tmp[] = "/tmp/vireo-mksite-XXXXXX", a[600], b[600], out1[600], out2[600], longname[300];
	char *t1, *t2;
	size_t n1, n2;

	if (access("tools/mksite.py", R_OK) != 0 || access("/usr/bin/python3", X_OK) != 0)
		skip();	/* run from the repository root */
	assert_non_null(mkdtemp(tmp));
	snprintf(out1, sizeof out1, "%s/one.c", tmp);
	snprintf(out2, sizeof out2, "%s/two.c", tmp);

	/* The default site: twice, identical, and what this binary was built from. */
	assert_int_equal(sh(PY " runtime/default-site %s --extra 64k.bin=65536", out1), 0);
	assert_int_equal(sh(PY " runtime/default-site %s --extra 64k.bin=65536", out2), 0);
	t1 = slurp(out1, &n1);
	t2 = slurp(out2, &n2);
	assert_non_null(t1);
	assert_non_null(t2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_non_null(strstr(t1, "static const u8 site_data_1[612]"));
	assert_non_null(strstr(t1, "const size_t site_nfiles = 2;"));
	free(t2);
	t2 = slurp("build/host/site_default.c", &n2);
	if (t2) {
		assert_int_equal(n1, n2);
		assert_memory_equal(t1, t2, n1);
		free(t2);
	}
	free(t1);

	/* Same tree built in a different order, with different mtimes: same output.
	 * Dotfiles and dot-directories are left out. */
	snprintf(a, sizeof a, "%s/a", tmp);
	snprintf(b, sizeof b, "%s/b", tmp);
	assert_int_equal(sh("mkdir -p %s/sub %s/.git %s/sub %s/.git", a, a, b, b), 0);
	write_file(a, "z.txt", "zed");
	write_file(a, "sub/index.html", "<p>sub</p>");
	write_file(a, "e.css", "");
	write_file(a, ".hidden", "secret");
	write_file(a, ".git/config", "secret");
	write_file(b, ".git/config", "secret");
	write_file(b, "e.css", "");
	write_file(b, "sub/index.html", "<p>sub</p>");
	write_file(b, "z.txt", "zed");
	assert_int_equal(sh("touch -d 2001-01-01 %s/z.txt", b), 0);
	assert_int_equal(sh(PY " %s %s --extra sub/gen.bin=100", a, out1), 0);
	assert_int_equal(sh(PY " %s %s --extra /sub/gen.bin=100", b, out2), 0);
	t1 = slurp(out1, &n1);
	t2 = slurp(out2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_null(strstr(t1, "hidden"));
	assert_null(strstr(t1, "git"));
	assert_non_null(strstr(t1, "{ \"/e.css\", site_data_0, 0, \"text/css; charset=utf-8\""));
	assert_non_null(strstr(t1, "{ \"/sub/gen.bin\", NULL, 100,"));
	assert_null(strstr(t1, "site_data_1["));	/* generated at boot, not stored */
	assert_non_null(strstr(t1, "{ \"/sub/index.html\", site_data_2, 10,"));
	assert_non_null(strstr(t1, "{ \"/z.txt\", site_data_3, 3,"));
	assert_non_null(strstr(t1, "const size_t site_nfiles = 4;"));
	free(t1);
	free(t2);

	/* --gzip: the default site's index.html (612 B of HTML) gets its .gz,
	 * a gzip stream (1f 8b) that gunzips to it; the 3-byte z.txt and the
	 * CSS below 256 bytes do not. Twice the same (no name, no time). */
	assert_int_equal(sh(PY " --gzip runtime/default-site %s", out1), 0);
	assert_int_equal(sh(PY " --gzip runtime/default-site %s", out2), 0);
	t1 = slurp(out1, &n1);
	t2 = slurp(out2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_non_null(strstr(t1, "{ \"/index.html.gz\", site_data_1, "));
	assert_non_null(strstr(t1, "\"Content-Type: application/gzip\\r\\n"));
	assert_non_null(strstr(t1, "site_data_1[") && strstr(strstr(t1, "site_data_1["), "\"\\037\\213"));
	assert_non_null(strstr(t1, "const size_t site_nfiles = 2;"));
	free(t1);
	free(t2);
	assert_int_equal(sh(PY " --gzip %s %s", a, out1), 0);
	t1 = slurp(out1, &n1);
	assert_null(strstr(t1, ".gz\""));
	free(t1);
	assert_int_equal(sh("/usr/bin/python3 -c 'import sys; sys.path.insert(0, \"tools\"); import mksite, gzip; "
			    "f = {\"/index.html\": open(\"runtime/default-site/index.html\", \"rb\").read()}; "
			    "mksite.add_gzip(f); assert gzip.decompress(f[\"/index.html.gz\"]) == f[\"/index.html\"]'"),
			 0);
	/* --brotli: index.html.br beside it, twice the same, and brotli -d
	 * gives index.html back. */
	assert_int_equal(sh(PY " --brotli --gzip runtime/default-site %s", out1), 0);
	assert_int_equal(sh(PY " --brotli --gzip runtime/default-site %s", out2), 0);
	t1 = slurp(out1, &n1);
	t2 = slurp(out2, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(t1, t2, n1);
	assert_non_null(strstr(t1, "{ \"/index.html.br\", site_data_"));
	assert_non_null(strstr(t1, "const size_t site_nfiles = 3;"));
	free(t1);
	free(t2);
	assert_int_equal(sh("/usr/bin/python3 -c 'import sys, subprocess; sys.path.insert(0, \"tools\"); import mksite; "
			    "f = {\"/index.html\": open(\"runtime/default-site/index.html\", \"rb\").read()}; "
			    "mksite.add_brotli(f); assert subprocess.run([\"brotli\", \"-d\", \"-c\"], "
			    "input=f[\"/index.html.br\"], capture_output=True, check=True).stdout == f[\"/index.html\"]'"),
			 0);

	/* Refusals: names needing escapes, long names, clashes, bad --extra. */
	assert_int_equal(sh(PY " %s %s --extra z.txt=1 2>/dev/null", a, out1), 1);
	assert_int_equal(sh(PY " %s %s --extra x=abc 2>/dev/null", a, out1), 1);
	assert_int_equal(sh(PY " %s %s --extra ../x=1 2>/dev/null", a, out1), 1);
	assert_int_equal(sh(PY " %s %s --extra 'a b=1' 2>/dev/null", a, out1), 1);
	assert_int_equal(sh(PY " %s/nonexistent %s 2>/dev/null", a, out1), 1);
	write_file(b, "bad name.html", "x");
	assert_int_equal(sh(PY " %s %s 2>/dev/null", b, out1), 1);
	assert_int_equal(sh("rm '%s/bad name.html'", b), 0);
	write_file(b, "caf\xc3\xa9.html", "x");
	assert_int_equal(sh(PY " %s %s 2>/dev/null", b, out1), 1);
	assert_int_equal(sh("rm %s/caf*", b), 0);
	/* Linux itself refuses 256-byte file names, so try that one via --extra. */
	memset(longname, 'n', 256);
	longname[256] = '\0';
	assert_int_equal(sh(PY " %s %s --extra %s=1 2>/dev/null", b, out1, longname), 1);
	longname[255] = '\0';	/* 255 is still allowed */
	write_file(b, longname, "x");
	assert_int_equal(sh(PY " %s %s", b, out1), 0);
	assert_int_equal(sh("ln -s z.txt %s/link.txt", b), 0);
	assert_int_equal(sh(PY " %s %s 2>/dev/null", b, out1), 1);
	/* A failed run leaves the previous output alone. */
	t1 = slurp(out1, &n1);
	assert_non_null(strstr(t1, longname));
	free(t1);

	assert_int_equal(sh("rm -rf %s", tmp), 0);
}

/* ---- the ESP's site (site_esp.c) ---- */

struct esp_site {
	struct boot_dir_entry tab[BOOT_DIR_MAX_FILES];
	u8 data[BOOT_DIR_MAX_FILES * 8];
};

static void esp_add(struct esp_site *s, u32 i, const char *path, u64 off, const char *content)
{
	snprintf(s->tab[i].path, sizeof s->tab[i].path, "%s", path);
	s->tab[i].off = off;
	s->tab[i].len = strlen(content);
	memcpy(s->data + off, content, strlen(content));
}

/* A table in boot/'s order becomes a sorted site with types and ETags,
 * and site_use() makes site_lookup serve it instead of the baked site. */
static void test_esp_site_indexed_and_served(void **state)
{
	struct esp_site *s = calloc(1, sizeof *s);
	struct site_file *files;
	const struct site_file *f;
	char why[64] = "";

	esp_add(s, 0, "/z.txt", 0, "zzz");
	esp_add(s, 1, "/index.html", 8, "<h1>esp</h1>");
	esp_add(s, 2, "/css/a.css", 24, "body{}");
	esp_add(s, 3, "/empty", 32, "");
	s->tab[1].mtime = 1764892800;	/* the ESP file's time goes with it (Last-Modified) */
	assert_int_equal(site_esp_index(s->tab, 4, s->data, sizeof s->data, &files, why, sizeof why), 4);
	assert_int_equal(files[2].mtime, 1764892800);
	assert_int_equal(files[0].mtime, 0);
	assert_string_equal(files[0].path, "/css/a.css");
	assert_string_equal(files[1].path, "/empty");
	assert_string_equal(files[2].path, "/index.html");
	assert_string_equal(files[3].path, "/z.txt");
	assert_string_equal(files[0].content_type, "text/css; charset=utf-8");
	assert_string_equal(files[1].content_type, "application/octet-stream");
	assert_int_equal(files[1].len, 0);
	assert_int_equal(strlen(files[2].etag), 18);
	assert_true(files[2].etag[0] == '"' && files[2].etag[17] == '"');
	assert_string_not_equal(files[0].etag, files[3].etag);

	site_use(files, 4);
	f = site_lookup("/");
	assert_non_null(f);
	assert_int_equal(f->len, 12);
	assert_memory_equal(f->data, "<h1>esp</h1>", 12);
	assert_ptr_equal(site_lookup("/css/a.css"), &files[0]);
	assert_null(site_lookup("/64k.bin"));	/* the baked site is not merged in */
	site_use(NULL, 0);
	site_synth_boot();
	assert_non_null(site_lookup("/64k.bin"));
	kfree(files);
	free(s);
}

/* Whatever the table says, nothing outside data is served, no path is
 * unterminated, odd or given twice; each refusal has a reason. */
static void test_esp_site_refusals(void **state)
{
	struct esp_site *s = calloc(1, sizeof *s);
	struct site_file *files = (struct site_file *)1;
	long live = hk_kmem_live();
	char why[64];
	static const char *const bad_paths[] = {
		"index.html", "/", "/a//b", "/a/", "/.hidden", "/a/.b", "/a\tb", "/a\x7f", "/a/../b", "/a\x01",
	};

	/* A path the site cannot serve is left out, named in the warning;
	 * the rest is served. The bad path alone is "no file it can serve". */
	for (size_t i = 0; i < sizeof bad_paths / sizeof bad_paths[0]; i++) {
		char want[300];

		memset(s, 0, sizeof *s);
		esp_add(s, 0, "/ok", 0, "x");
		esp_add(s, 1, bad_paths[i], 8, "y");
		if (site_esp_index(s->tab, 2, s->data, sizeof s->data, &files, why, sizeof why) != 1)
			fail_msg("path %s accepted", bad_paths[i]);
		assert_string_equal(files[0].path, "/ok");
		snprintf(want, sizeof want, "warning: site: EFI/vireo/site%s: not a path the site can serve; left out",
			 bad_paths[i]);
		if (!hk_log_contains(want))
			fail_msg("no warning naming %s", bad_paths[i]);
		kfree(files);
		assert_int_equal(site_esp_index(s->tab + 1, 1, s->data, sizeof s->data, &files, why, sizeof why),
				 -EINVAL);
		assert_null(files);
		assert_string_equal(why, "no file it can serve");
	}

	memset(s, 0, sizeof *s);
	memset(s->tab[0].path, 'a', sizeof s->tab[0].path);	/* no NUL */
	s->tab[0].path[0] = '/';
	assert_int_equal(site_esp_index(s->tab, 1, s->data, sizeof s->data, &files, why, sizeof why), -EINVAL);
	assert_string_equal(why, "a path with no end");

	memset(s, 0, sizeof *s);
	esp_add(s, 0, "/a", 0, "123456");
	s->tab[0].off = sizeof s->data - 5;	/* its last byte one past data */
	assert_int_equal(site_esp_index(s->tab, 1, s->data, sizeof s->data, &files, why, sizeof why), -EINVAL);
	assert_string_equal(why, "/a: outside the data read");
	s->tab[0].off = UINT64_MAX;	/* off + len would wrap */
	s->tab[0].len = 2;
	assert_int_equal(site_esp_index(s->tab, 1, s->data, sizeof s->data, &files, why, sizeof why), -EINVAL);
	s->tab[0].off = 0;
	s->tab[0].len = UINT64_MAX;
	assert_int_equal(site_esp_index(s->tab, 1, s->data, sizeof s->data, &files, why, sizeof why), -EINVAL);

	memset(s, 0, sizeof *s);
	esp_add(s, 0, "/b", 0, "1");
	esp_add(s, 1, "/a", 8, "2");
	esp_add(s, 2, "/b", 16, "3");
	assert_int_equal(site_esp_index(s->tab, 3, s->data, sizeof s->data, &files, why, sizeof why), -EINVAL);
	assert_string_equal(why, "/b: given twice");

	assert_int_equal(site_esp_index(s->tab, 0, s->data, sizeof s->data, &files, why, sizeof why), -EINVAL);
	assert_string_equal(why, "no files");
	assert_int_equal(site_esp_index(s->tab, BOOT_DIR_MAX_FILES + 1, s->data, sizeof s->data, &files, why,
					sizeof why), -EINVAL);
	assert_string_equal(why, "too many files");
	assert_int_equal(hk_kmem_live(), live);	/* every refusal freed its array */
	free(s);
}

/* Names nginx serves and mksite.py's old set refused: RFC 3986's
 * sub-delims, '@', ':', spaces, '%', UTF-8; each served by the path a
 * request decodes to. */
static void test_esp_site_names(void **state)
{
	static const char *const paths[] = {
		"/logo@2x.png", "/a b.html", "/caf\xc3\xa9.txt", "/\xe6\x97\xa5\xe6\x9c\xac/\xe8\xaa\x9e.css",
		"/x!$&'()*+,;=:.js", "/100%.txt", "/f\xf0\x9f\x98\x80.svg", "/a~b-c_d.e",
	};
	struct esp_site *s = calloc(1, sizeof *s);
	struct site_file *files;
	char why[64];
	u32 n = sizeof paths / sizeof paths[0];

	for (u32 i = 0; i < n; i++)
		esp_add(s, i, paths[i], i * 8, "z");
	assert_int_equal(site_esp_index(s->tab, n, s->data, sizeof s->data, &files, why, sizeof why), (int)n);
	site_use(files, n);
	for (u32 i = 0; i < n; i++)
		if (!site_lookup(paths[i]))
			fail_msg("%s not served", paths[i]);
	assert_string_equal(site_lookup("/logo@2x.png")->content_type, "image/png");
	assert_string_equal(site_lookup("/\xe6\x97\xa5\xe6\x9c\xac/\xe8\xaa\x9e.css")->content_type,
			    "text/css; charset=utf-8");
	site_use(NULL, 0);
	kfree(files);
	free(s);
}

/* The bound itself: BOOT_DIR_MAX_FILES files index; the order comes out
 * sorted from the reverse, and from a shuffle (the heapsort's other
 * paths), each file still with its own bytes and ETag. */
static void test_esp_site_full_table(void **state)
{
	struct esp_site *s = calloc(1, sizeof *s);
	struct site_file *files;
	char why[64], name[16];
	u32 seed = 7;

	for (int round = 0; round < 2; round++) {
		for (u32 i = 0; i < BOOT_DIR_MAX_FILES; i++) {
			u32 k = BOOT_DIR_MAX_FILES - 1 - i;

			snprintf(name, sizeof name, "/f%05u", k);
			esp_add(s, i, name, i * 8, k & 1 ? "ab" : "abc");
		}
		for (u32 i = BOOT_DIR_MAX_FILES - 1; round && i > 0; i--) {	/* Fisher-Yates */
			struct boot_dir_entry t;
			u32 j;

			seed = seed * 1103515245u + 12345u;
			j = (seed >> 8) % (i + 1);
			t = s->tab[i];
			s->tab[i] = s->tab[j];
			s->tab[j] = t;
		}
		assert_int_equal(site_esp_index(s->tab, BOOT_DIR_MAX_FILES, s->data, sizeof s->data, &files, why,
						sizeof why), BOOT_DIR_MAX_FILES);
		for (u32 i = 0; i < BOOT_DIR_MAX_FILES; i++) {
			snprintf(name, sizeof name, "/f%05u", i);
			assert_string_equal(files[i].path, name);
			assert_int_equal(files[i].len, i & 1 ? 2 : 3);
			if (i && !strcmp(files[i].etag, files[i - 1].etag))
				fail_msg("%s shares the ETag of the file before it", name);
		}
		kfree(files);
	}
	free(s);
}

/* The directory caps boot/ reads the ESP with (kernel/boot_info.h): an
 * eighth of free memory in whole MiB, a file per 32 KiB, both clamped. */
static void test_esp_dir_caps(void **state)
{
	static const struct { u64 free, bytes; u32 files; } t[] = {
		{ 0, 8ull << 20, 256 },
		{ 40ull << 20, 8ull << 20, 256 },
		{ 64ull << 20, 8ull << 20, 256 },
		{ (64ull << 20) + (8 << 20) - 1, 8ull << 20, 256 },	/* whole MiB */
		{ 72ull << 20, 9ull << 20, 288 },
		{ 256ull << 20, 32ull << 20, 1024 },
		{ 1ull << 30, 128ull << 20, 4096 },
		{ 4ull << 30, 512ull << 20, 16384 },
		{ 8ull << 30, 1ull << 30, 16384 },
		{ 1ull << 40, 1ull << 30, 16384 },
	};
	u64 bytes;
	u32 files;

	(void)state;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		boot_dir_caps(t[i].free, &bytes, &files);
		if (bytes != t[i].bytes || files != t[i].files)
			fail_msg("%llu free: %llu bytes, %u files; want %llu, %u", (unsigned long long)t[i].free,
				 (unsigned long long)bytes, files, (unsigned long long)t[i].bytes, t[i].files);
	}
}

/* A file's head lines against the runtime's own formatting: what
 * http_response_head() writes around them for 200 and for 304. */
static void check_lines(const struct site_file *f, const struct site_head *h)
{
	char etag[64], got[1024], want[1024];
	size_t n;

	assert_non_null(h->head);
	assert_int_equal(strlen(h->head), h->head_len);
	assert_int_equal(strlen(h->etag_line), h->etag_line_len);
	snprintf(etag, sizeof etag, "ETag: %s\r\n", f->etag);
	assert_string_equal(h->etag_line, etag);
	n = http_response_head(got, sizeof got, 200, f->content_type, f->len, true, etag);
	got[n] = '\0';
	snprintf(want, sizeof want, "HTTP/1.1 200 OK\r\nServer: vireo\r\n%sConnection: keep-alive\r\n%s\r\n",
		 h->head, h->etag_line);
	assert_string_equal(got, want);
	n = http_response_head(got, sizeof got, 304, NULL, f->len, false, etag);
	got[n] = '\0';
	snprintf(want, sizeof want, "HTTP/1.1 304 Not Modified\r\nServer: vireo\r\n%sConnection: close\r\n%s\r\n",
		 h->head + h->cl_off, h->etag_line);
	assert_string_equal(got, want);
}

/* mksite.py's site_heads[] and site_heads_make()'s lines are what the
 * runtime formats; site_owned() knows the entries of the table in use and
 * hands out their lines, or none for a table given without them. */
static void test_site_heads(void **state)
{
	struct esp_site *s = calloc(1, sizeof *s);
	char buf[SITE_LINES_MAX];
	struct site_head h, *heads;
	const struct site_head *hp;
	const struct site_file *f;
	struct site_file *files;
	char why[64] = "";
	size_t n;

	for (size_t i = 0; i < site_nfiles; i++) {
		f = &site_files[i];
		check_lines(f, &site_heads[i]);
		memset(&h, 0, sizeof h);
		n = site_head_lines(f, &h, buf, sizeof buf);
		assert_true(n > 0 && n <= sizeof buf);
		assert_int_equal(h.head_len, site_heads[i].head_len);
		assert_int_equal(h.cl_off, site_heads[i].cl_off);
		assert_string_equal(h.etag_line, site_heads[i].etag_line);
		assert_memory_equal(h.head, site_heads[i].head, h.head_len);
		/* Measuring, and a buffer one byte short: the size, nothing made. */
		memset(&h, 0, sizeof h);
		assert_int_equal(site_head_lines(f, &h, NULL, 0), n);
		assert_int_equal(site_head_lines(f, &h, buf, n - 1), n);
		assert_null(h.head);
	}

	/* The baked table (synthetic files made): its entries, nothing else. */
	site_synth_boot();
	f = site_lookup("/index.html");
	assert_ptr_equal(site_owned(f, &hp), f);
	assert_ptr_equal(hp, &site_heads[1]);
	assert_null(site_owned((const char *)f + 8, &hp));
	assert_null(hp);
	assert_null(site_owned(&h, &hp));
	assert_null(site_owned(NULL, &hp));

	/* The ESP's table: lines made at boot, handed over after site_use(). */
	esp_add(s, 0, "/z.txt", 0, "zzz");
	esp_add(s, 1, "/index.html", 8, "<h1>esp</h1>");
	esp_add(s, 2, "/empty", 24, "");
	assert_int_equal(site_esp_index(s->tab, 3, s->data, sizeof s->data, &files, why, sizeof why), 3);
	heads = site_heads_make(files, 3);
	assert_non_null(heads);
	for (size_t i = 0; i < 3; i++)
		check_lines(&files[i], &heads[i]);
	site_use(files, 3);
	assert_ptr_equal(site_owned(&files[1], &hp), &files[1]);
	assert_null(hp);	/* no lines given: served the slower way */
	assert_null(site_owned(f, &hp));	/* the baked site is not in use */
	site_use_heads(heads);
	assert_ptr_equal(site_owned(&files[2], &hp), &files[2]);
	assert_ptr_equal(hp, &heads[2]);
	site_use(NULL, 0);
	assert_ptr_equal(site_owned(f, &hp), f);
	kfree(heads);
	kfree(files);
	free(s);
}

/* ---- the Date header ---- */

static size_t date_known(char *buf, size_t size)
{
	return (size_t)snprintf(buf, size, "Sun, 06 Nov 1994 08:49:37 GMT");
}

static size_t date_unknown(char *buf, size_t size)
{
	(void)buf;
	(void)size;
	return 0;
}

static void test_date_header(void **state)
{
	char buf[512];
	size_t n;

	http_set_date_source(date_known);
	n = http_response_head(buf, sizeof buf, 200, "text/plain", 3, true, NULL);
	buf[n] = '\0';
	assert_string_equal(buf, "HTTP/1.1 200 OK\r\nServer: vireo\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
				 "Content-Type: text/plain\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n");
	n = http_error_response(buf, sizeof buf, 404, false, true);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"));
	/* the head still refuses what does not fit, Date included */
	assert_int_equal(http_response_head(buf, 60, 200, "text/plain", 3, true, NULL), 0);
	http_set_date_source(date_unknown);
	n = http_response_head(buf, sizeof buf, 200, NULL, 0, false, NULL);
	buf[n] = '\0';
	assert_null(strstr(buf, "Date:"));
	http_set_date_source(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_get_and_head),
		cmocka_unit_test(test_target_forms),
		cmocka_unit_test(test_percent_escapes),
		cmocka_unit_test(test_path_traversal),
		cmocka_unit_test(test_split_every_way),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_bad_request),
		cmocka_unit_test(test_bodies_refused),
		cmocka_unit_test(test_te_ext), cmocka_unit_test(test_connection_listed),
		cmocka_unit_test(test_chunked_request_every_split),
		cmocka_unit_test(test_method_not_allowed),
		cmocka_unit_test(test_version_not_supported),
		cmocka_unit_test(test_uri_too_long),
		cmocka_unit_test(test_header_fields_too_large),
		cmocka_unit_test(test_if_none_match_and_state),
		cmocka_unit_test(test_host_value),
		cmocka_unit_test(test_response_head),
		cmocka_unit_test(test_reasons),
		cmocka_unit_test(test_error_responses),
		cmocka_unit_test(test_content_types),
		cmocka_unit_test(test_content_types_generated),
		cmocka_unit_test(test_byte_range),
		cmocka_unit_test(test_if_range),
		cmocka_unit_test(test_accepts_gzip),
		cmocka_unit_test(test_etag_match),
		cmocka_unit_test(test_site_lookup),
		cmocka_unit_test(test_date_header),
		cmocka_unit_test(test_esp_site_indexed_and_served),
		cmocka_unit_test(test_esp_site_refusals),
		cmocka_unit_test(test_esp_site_full_table),
		cmocka_unit_test(test_esp_dir_caps),
		cmocka_unit_test(test_esp_site_names),
		cmocka_unit_test(test_site_find_dirs),
		cmocka_unit_test(test_mksite),
		cmocka_unit_test(test_site_heads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
