/* runtime/http/response.c and chunked.c: good responses of every framing,
 * fed whole, byte by byte, split at every point and taken by a reader that
 * consumes little at a time (back-pressure), give the same status, body and
 * end; malformed and oversized ones are refused with the right reason. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/http/response.h"

static struct http_resp_parser P;

struct outcome {
	int r;			/* HTTP_RESP_END, HTTP_RESP_ERROR or HTTP_RESP_MORE (unfinished) */
	int err, status;
	bool keep;
	u8 body_kind;
	char body[4096];
	size_t body_len;
	size_t rest;		/* bytes after the end, left unconsumed */
};

/* Feeds raw[0..n) in pieces: cuts[] (ascending, < n) split it; each span
 * is taken at most take bytes at a time (0: all); eof says the connection
 * closes after the last byte. */
static void feed(const char *raw, size_t n, const size_t *cuts, size_t ncuts, size_t take, bool eof,
		 bool head_req, u64 body_max, u32 head_max, struct outcome *o)
{
	char pend[16384];
	size_t plen = 0, pos = 0;
	bool head = false;

	memset(o, 0, sizeof *o);
	o->r = HTTP_RESP_MORE;
	P.body_max = body_max;
	P.head_max = head_max;
	http_resp_reset(&P, head_req);
	for (size_t k = 0; k <= ncuts; k++) {
		size_t end = k < ncuts ? cuts[k] : n, used, avail;
		int r;

		assert_true(end >= pos && plen + end - pos <= sizeof pend);
		memcpy(pend + plen, raw + pos, end - pos);
		plen += end - pos;
		pos = end;
		for (;;) {
			if (!head) {
				r = http_resp_head(&P, (const u8 *)pend, plen, &used);
				assert_true(used <= plen);
				memmove(pend, pend + used, plen - used);
				plen -= used;
				if (r == HTTP_RESP_MORE) {
					assert_int_equal(plen, 0);
					break;
				}
				if (r == HTTP_RESP_ERROR) {
					o->r = r;
					o->err = P.err;
					return;
				}
				assert_int_equal(r, HTTP_RESP_HEAD);
				head = true;
				o->status = P.status;
				o->keep = P.keep_alive;
				o->body_kind = P.body;
			}
			r = http_resp_body(&P, (const u8 *)pend, plen, &used, &avail);
			assert_true(used + avail <= plen);
			if (r == HTTP_RESP_DATA) {
				size_t t = take && avail > take ? take : avail;

				assert_true(avail > 0);
				assert_true(o->body_len + t <= sizeof o->body);
				memcpy(o->body + o->body_len, pend + used, t);
				o->body_len += t;
				http_resp_take(&P, t);
				used += t;
			}
			memmove(pend, pend + used, plen - used);
			plen -= used;
			if (r == HTTP_RESP_MORE)
				break;
			if (r == HTTP_RESP_END || r == HTTP_RESP_ERROR) {
				o->r = r;
				o->err = P.err;
				o->rest = plen + (n - pos);
				return;
			}
		}
	}
	if (eof) {
		o->r = http_resp_eof(&P);
		o->err = P.err;
	}
}

static void feed_whole(const char *raw, bool eof, bool head_req, struct outcome *o)
{
	feed(raw, strlen(raw), NULL, 0, 0, eof, head_req, 0, 0, o);
}

/* The same outcome fed whole, byte by byte, split at every point (taking
 * all, or one byte at a time), and at every pair of points. */
static void check_all_splits(const char *raw, bool eof, bool head_req, const struct outcome *want)
{
	size_t n = strlen(raw), cuts[2];
	struct outcome o;
	size_t *every = malloc(n * sizeof *every);

	assert_non_null(every);
	for (size_t i = 0; i < n; i++)
		every[i] = i;
	feed(raw, n, every, n, 0, eof, head_req, 0, 0, &o);
	assert_int_equal(o.r, want->r);
	assert_int_equal(o.body_len, want->body_len);
	assert_memory_equal(o.body, want->body, want->body_len);
	free(every);
	for (size_t i = 0; i <= n; i++) {
		for (size_t take = 0; take <= 1; take++) {
			cuts[0] = i;
			feed(raw, n, cuts, 1, take ? 1 : 0, eof, head_req, 0, 0, &o);
			assert_int_equal(o.r, want->r);
			assert_int_equal(o.status, want->status);
			assert_int_equal(o.keep, want->keep);
			assert_int_equal(o.body_len, want->body_len);
			assert_memory_equal(o.body, want->body, want->body_len);
			assert_int_equal(o.rest, want->rest);
		}
		for (size_t j = i; j <= n && n < 200; j++) {
			cuts[0] = i;
			cuts[1] = j;
			feed(raw, n, cuts, 2, 3, eof, head_req, 0, 0, &o);
			assert_int_equal(o.r, want->r);
			assert_int_equal(o.body_len, want->body_len);
			assert_memory_equal(o.body, want->body, want->body_len);
		}
	}
	/* every strict prefix of the head and body is unfinished, not an error */
	for (size_t i = 0; i + want->rest < n; i++) {
		feed(raw, i, NULL, 0, 0, false, head_req, 0, 0, &o);
		assert_int_equal(o.r, HTTP_RESP_MORE);
	}
}

static void good(const char *raw, bool eof, bool head_req, int status, bool keep, u8 kind, const char *body,
		 size_t rest)
{
	struct outcome o;

	feed_whole(raw, eof, head_req, &o);
	assert_int_equal(o.r, HTTP_RESP_END);
	assert_int_equal(o.status, status);
	assert_int_equal(o.keep, keep);
	assert_int_equal(o.body_kind, kind);
	assert_int_equal(o.body_len, strlen(body));
	assert_memory_equal(o.body, body, o.body_len);
	assert_int_equal(o.rest, rest);
	check_all_splits(raw, eof, head_req, &o);
}

static void test_length(void **state)
{
	(void)state;
	good("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello", false, false, 200, true,
	     HTTP_BODY_LENGTH, "hello", 0);
	/* pipelined bytes after the body are left */
	good("HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabcXYZ", false, false, 404,
	     false, HTTP_BODY_LENGTH, "abc", 3);
	good("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, false, 200, true, HTTP_BODY_LENGTH, "", 0);
	/* no reason phrase, with or without its SP */
	good("HTTP/1.1 200\r\nContent-Length: 1\r\n\r\nx", false, false, 200, true, HTTP_BODY_LENGTH, "x", 0);
	good("HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\nx", false, false, 200, true, HTTP_BODY_LENGTH, "x", 0);
	/* HTTP/1.0: kept alive only when it says so */
	good("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", false, false, 200, false, HTTP_BODY_LENGTH, "hi", 0);
	good("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nhi", false, false, 200, true,
	     HTTP_BODY_LENGTH, "hi", 0);
	P.head_max = 0;
	assert_string_equal(http_resp_header(&P, "content-LENGTH"), "2");
	assert_string_equal(http_resp_header(&P, "Connection"), "Keep-Alive");
	assert_null(http_resp_header(&P, "server"));
}

static void test_chunked(void **state)
{
	(void)state;
	good("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n", false,
	     false, 200, true, HTTP_BODY_CHUNKED, "hello, world", 0);
	/* extensions, upper-case hex, leading zeros, trailers, the coding's case */
	good("HTTP/1.1 200 OK\r\ntransfer-encoding:  Chunked \r\n\r\n00A ; a=b;c=\"d\"\r\n0123456789\r\n"
	     "1;x\r\n!\r\n0\r\nX-Sum: 1\r\nY: \r\n\r\nNEXT",
	     false, false, 200, true, HTTP_BODY_CHUNKED, "0123456789!", 4);
	good("HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n", false,
	     false, 201, false, HTTP_BODY_CHUNKED, "", 0);
}

static void test_close_delimited_and_none(void **state)
{
	(void)state;
	good("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", true, false, 200, false,
	     HTTP_BODY_CLOSE, "until the end", 0);
	good("HTTP/1.0 200 OK\r\n\r\nold", true, false, 200, false, HTTP_BODY_CLOSE, "old", 0);
	/* no body: HEAD, 204, 304 (their lengths describe another response) */
	good("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", false, true, 200, true, HTTP_BODY_NONE, "", 0);
	good("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", false, true, 200, true, HTTP_BODY_NONE, "", 0);
	good("HTTP/1.1 204 No Content\r\n\r\n", false, false, 204, true, HTTP_BODY_NONE, "", 0);
	good("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\nETag: \"x\"\r\n\r\n", false, false, 304, true,
	     HTTP_BODY_NONE, "", 0);
	/* interim heads are skipped; 101 ends the head for good */
	good("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
	     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	     false, false, 200, true, HTTP_BODY_LENGTH, "ok", 0);
	good("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nframes", false, false, 101, false,
	     HTTP_BODY_NONE, "", 6);
}

/* A tunnel (the HTTP client's vireo_http_tunnel()): after a 101 head every
 * byte is a body span, uncapped, until the connection closes. */
static void test_tunnel(void **state)
{
	static const char raw[] = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x02hi";
	size_t used, avail, off;

	(void)state;
	http_resp_reset(&P, false);
	P.body_max = 1;
	assert_int_equal(http_resp_head(&P, (const u8 *)raw, sizeof raw - 1, &used), HTTP_RESP_HEAD);
	assert_int_equal(P.status, 101);
	off = used;
	http_resp_tunnel(&P);
	assert_false(P.keep_alive);
	assert_int_equal(http_resp_body(&P, (const u8 *)raw + off, sizeof raw - 1 - off, &used, &avail), HTTP_RESP_DATA);
	assert_int_equal(used, 0);
	assert_int_equal(avail, 4);	/* past body_max: a tunnel has none */
	http_resp_take(&P, avail);
	assert_int_equal(http_resp_body(&P, NULL, 0, &used, &avail), HTTP_RESP_MORE);
	assert_int_equal(http_resp_eof(&P), HTTP_RESP_END);
}

static void bad(const char *raw, bool eof, int err)
{
	struct outcome o;
	size_t n = strlen(raw);
	size_t *every = malloc(n * sizeof *every);

	feed_whole(raw, eof, false, &o);
	assert_int_equal(o.r, HTTP_RESP_ERROR);
	assert_int_equal(o.err, err);
	assert_non_null(every);
	for (size_t i = 0; i < n; i++)
		every[i] = i;
	feed(raw, n, every, n, 1, eof, false, 0, 0, &o);
	free(every);
	assert_int_equal(o.r, HTTP_RESP_ERROR);
	assert_int_equal(o.err, err);
}

static void test_malformed(void **state)
{
	static const char *const framing[] = {
		/* CL and TE together, either order (CL.TE / TE.CL) */
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n",
		/* unknown, listed and repeated codings, obfuscated ones */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		/* lengths: repeated (even equal), a list, signs, spaces, empty */
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1 1\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\nx",
		/* obs-fold, bare LF, bare CR, NUL, controls, empty first line */
		"HTTP/1.1 200 OK\r\nX: a\r\n b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n\tb\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\rX: y\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x01" "b\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x7f\r\nContent-Length: 0\r\n\r\n",
		"\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		/* the status line */
		"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 20 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 099 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1  200 OK\r\nContent-Length: 0\r\n\r\n",
		"http/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200OK\r\nContent-Length: 0\r\n\r\n",
		"ICY 200 OK\r\n\r\n",
		/* fields: no colon, empty name, space in the name */
		"HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: v\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX Y: v\r\nContent-Length: 0\r\n\r\n",
		/* chunk sizes: none, not hex, a sign, 0x, overflow, whitespace first
		 * or alone after the size, a bare LF, a missing CRLF after the data */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nG\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\nx\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloX\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;\x01\r\nx\r\n0\r\n\r\n",
		/* trailers: obs-fold, no colon, a bare LF */
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\r\n c\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: b\n\r\n",
	};

	(void)state;
	for (size_t i = 0; i < sizeof framing / sizeof framing[0]; i++) {
		bad(framing[i], false, HTTP_RESP_EFRAMING);
	}
	/* the connection closes early: truncated */
	bad("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", true, HTTP_RESP_ETRUNCATED);
	bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", true, HTTP_RESP_ETRUNCATED);
	bad("HTTP/1.1 200 OK\r\nContent-", true, HTTP_RESP_ETRUNCATED);
	bad("", true, HTTP_RESP_ETRUNCATED);
}

static void test_limits(void **state)
{
	char raw[HTTP_RESP_HEAD_MAX + 256], line[64];
	struct outcome o;
	size_t n;
	int k;

	(void)state;
	/* a head of exactly head_max bytes passes, one more is too large */
	n = (size_t)snprintf(raw, sizeof raw, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ");
	while (n < 1000 - 4)
		raw[n++] = 'a';
	memcpy(raw + n, "\r\n\r\n", 5);
	n += 4;
	assert_int_equal(n, 1000);
	feed(raw, n, NULL, 0, 0, false, false, 0, 1000, &o);
	assert_int_equal(o.r, HTTP_RESP_END);
	feed(raw, n, NULL, 0, 0, false, false, 0, 999, &o);
	assert_int_equal(o.r, HTTP_RESP_ERROR);
	assert_int_equal(o.err, HTTP_RESP_ETOO_LARGE);
	/* an endless head against the largest bound: refused at it */
	n = (size_t)snprintf(raw, sizeof raw, "HTTP/1.1 200 OK\r\n");
	while (n < sizeof raw - 2)
		raw[n++] = 'b';
	raw[n] = 0;
	feed(raw, n, NULL, 0, 0, false, false, 0, 0, &o);
	assert_int_equal(o.err, HTTP_RESP_ETOO_LARGE);
	/* interim heads count in the head's bytes, and in number */
	n = 0;
	for (k = 0; k < HTTP_RESP_INTERIM_MAX + 1; k++)
		n += (size_t)snprintf(raw + n, sizeof raw - n, "HTTP/1.1 100 Continue\r\n\r\n");
	n += (size_t)snprintf(raw + n, sizeof raw - n, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	feed(raw, n, NULL, 0, 0, false, false, 0, 0, &o);
	assert_int_equal(o.err, HTTP_RESP_EFRAMING);
	feed(raw, n, NULL, 0, 0, false, false, 0, 100, &o);
	assert_int_equal(o.err, HTTP_RESP_ETOO_LARGE);
	/* fields: HTTP_HEADERS_MAX pass, one more is too large */
	for (int extra = 0; extra <= 1; extra++) {
		n = (size_t)snprintf(raw, sizeof raw, "HTTP/1.1 200 OK\r\n");
		for (k = 0; k < HTTP_HEADERS_MAX - 1 + extra; k++) {
			snprintf(line, sizeof line, "X%d: y\r\n", k);
			n += (size_t)snprintf(raw + n, sizeof raw - n, "%s", line);
		}
		n += (size_t)snprintf(raw + n, sizeof raw - n, "Content-Length: 0\r\n\r\n");
		feed(raw, n, NULL, 0, 0, false, false, 0, 0, &o);
		assert_int_equal(o.r, extra ? HTTP_RESP_ERROR : HTTP_RESP_END);
		if (extra)
			assert_int_equal(o.err, HTTP_RESP_ETOO_LARGE);
	}
	/* body_max: a length over it at the head; chunked and close-delimited
	 * bodies at the byte that passes it */
	static const char *const bodies[] = {
		"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nhello!",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n3\r\nlo!\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nhello!",
	};
	for (size_t i = 0; i < 3; i++) {
		feed(bodies[i], strlen(bodies[i]), NULL, 0, 0, true, false, 6, 0, &o);
		assert_int_equal(o.r, HTTP_RESP_END);
		assert_int_equal(o.body_len, 6);
		feed(bodies[i], strlen(bodies[i]), NULL, 0, 0, true, false, 5, 0, &o);
		assert_int_equal(o.r, HTTP_RESP_ERROR);
		assert_int_equal(o.err, HTTP_RESP_ETOO_LARGE);
		assert_true(o.body_len <= 5);
	}
}

/* The decoder alone: a size line and a trailer section at their bounds. */
static void test_chunked_bounds(void **state)
{
	char buf[CHUNKED_TRAILER_MAX + 64];
	struct chunked d;
	size_t used, avail, n;

	(void)state;
	for (int over = 0; over <= 1; over++) {
		chunked_init(&d);
		n = 0;
		buf[n++] = '1';
		buf[n++] = ';';
		while (n < CHUNKED_LINE_MAX + (size_t)over)
			buf[n++] = 'e';
		memcpy(buf + n, "\r\nx\r\n", 5);
		n += 5;
		assert_int_equal(chunked_step(&d, (const u8 *)buf, n, &used, &avail), over ? CHUNKED_ERROR : CHUNKED_DATA);
	}
	/* the trailer section counts its lines and the final CR */
	for (int over = 0; over <= 1; over++) {
		size_t k = CHUNKED_TRAILER_MAX + (size_t)over - 5;

		chunked_init(&d);
		n = (size_t)snprintf(buf, sizeof buf, "0\r\nA:");
		memset(buf + n, 'x', k);
		n += k;
		memcpy(buf + n, "\r\n\r\n", 4);
		n += 4;
		assert_int_equal(chunked_step(&d, (const u8 *)buf, n, &used, &avail), over ? CHUNKED_ERROR : CHUNKED_END);
	}
	/* taking more than given breaks the decoder */
	chunked_init(&d);
	assert_int_equal(chunked_step(&d, (const u8 *)"2\r\nab", 5, &used, &avail), CHUNKED_DATA);
	assert_int_equal(used, 3);
	assert_int_equal(avail, 2);
	chunked_take(&d, 3);
	assert_int_equal(chunked_step(&d, (const u8 *)"\r\n", 2, &used, &avail), CHUNKED_ERROR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_length),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_close_delimited_and_none),
		cmocka_unit_test(test_tunnel),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_chunked_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
