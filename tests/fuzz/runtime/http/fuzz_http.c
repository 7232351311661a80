/* libFuzzer target for runtime/http/http.c. The first input byte seeds the chunk
 * sizes; the rest is a connection's byte stream, parsed request after request
 * as a server would (reset after each DONE, stop at the first ERROR).
 * Checks: no crash or over-read (ASan/UBSan); *consumed <= len and NEED_MORE
 * consumes everything; DONE gives GET/HEAD, HTTP/1.0 or 1.1 (with Host), a
 * NUL-terminated path of path_len bytes that starts with '/' and has no
 * control bytes and no ".." segment; ERROR gives a known status; and the
 * chunked run sees exactly the same requests as a run fed all at once.
 * Each request's outcome also exercises the response builders. Seed bit 4
 * turns on the parser's ext mode (the application API's: any method, bodies
 * by Content-Length, the query and the header index), where DONE gives any
 * method, a NUL-terminated query without control bytes, and http_header()
 * and http_query_param() are run over the head. A chunked request's body
 * (ext, "Transfer-Encoding: chunked") is decoded as the server reads it
 * (runtime/http/chunked.c, in the same pieces) and the next request parsed
 * right after its end: the payload's length and hash and where the body
 * ended (or that its framing failed) must not depend on the pieces. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/http/chunked.h"
#include "runtime/http/http.h"

#define MAX_REQS 64

struct event {
	int r, status, method, minor;
	bool keep;
	size_t end;		/* stream offset where this request's head ended */
	u32 path_hash, query_hash;
	u64 clen;
	bool chunked;
	int body;		/* chunked: CHUNKED_END or CHUNKED_ERROR (or MORE at the end) */
	size_t body_end, body_len;
	u32 body_hash;
};

static struct http_req_parser P;
static struct event ev_whole[MAX_REQS + 1], ev_chunk[MAX_REQS + 1];

static u32 hash(const char *s, size_t n)
{
	u32 h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (u8)s[i]) * 16777619u;
	return h;
}

static void check_done(void)
{
	const char *s = P.path;
	size_t n = P.path_len;

	if (P.ext ? (P.method == HTTP_METHOD_NONE || P.method > HTTP_METHOD_OTHER) :
		    (P.method != HTTP_METHOD_GET && P.method != HTTP_METHOD_HEAD))
		abort();
	if (P.ext) {
		static const char *const hn[] = { "host", "X-OTHER", "content-length", "if-none-match", "" };
		char v[16];

		for (const char *q = P.query; q && *q; q++)
			if ((u8)*q < 0x21 || *q == 0x7f)
				abort();
		for (size_t k = 0; k < sizeof hn / sizeof hn[0]; k++) {
			const char *h = http_header(&P, hn[k]);

			if (h && (h < P.buf || h >= P.buf + sizeof P.buf || strlen(h) >= sizeof P.buf))
				abort();
		}
		if (http_query_param(P.query, "a", v, sizeof v) >= (int)sizeof v || strlen(v) >= sizeof v)
			abort();
	} else if (P.content_length) {
		abort();	/* content_length is ext's only */
	}
	if (P.version_minor > 1 || (P.version_minor == 1 && !P.has_host) || P.status != 0)
		abort();
	if (!s || n == 0 || s[0] != '/' || strlen(s) != n)
		abort();
	for (size_t i = 0; i < n; i++) {
		if ((u8)s[i] < 0x20 || s[i] == 0x7f)
			abort();
		if (s[i] == '.' && i + 1 < n && s[i + 1] == '.' && s[i - 1] == '/' &&
		    (i + 2 == n || s[i + 2] == '/'))
			abort();
	}
	if (P.if_none_match)
		(void)http_etag_match(P.if_none_match, "\"0123456789abcdef\"");
	(void)http_content_type(s);
	/* Range and If-Range on any header value: a 206's bytes lie inside
	 * the file, whatever its length. */
	for (u16 k = 0; k < P.nfields; k++) {
		const char *v = P.buf + P.fields[k].value;
		u64 first, last, len = strlen(v) * 7;

		if (http_byte_range(v, len, &first, &last) == HTTP_RANGE_ONE && (first > last || last >= len))
			abort();
		(void)http_if_range(v, "\"0123456789abcdef\"", 784111777);
	}
}

static void check_error(void)
{
	static const int ok[] = { 400, 405, 413, 414, 431, 501, 505 };
	size_t i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (P.status == ok[i])
			break;
	if (i == sizeof ok / sizeof ok[0] || P.keep_alive || P.path)
		abort();
}

/* The response the server would send, into a buffer just big enough, and
 * the same into one byte less (which must refuse). */
static void respond(bool err, bool head_only)
{
	static char big[1024];
	size_t n, m;
	char *b;

	if (err)
		n = http_error_response(big, sizeof big, P.status, false, head_only);
	else
		n = http_response_head(big, sizeof big, 200, http_content_type(P.path), P.path_len,
				       P.keep_alive, "ETag: \"x\"\r\n");
	if (n == 0 || n > sizeof big)
		abort();
	b = malloc(n);
	if (err)
		m = http_error_response(b, n, P.status, false, head_only);
	else
		m = http_response_head(b, n, 200, http_content_type(P.path), P.path_len,
				       P.keep_alive, "ETag: \"x\"\r\n");
	if (m != n || memcmp(b, big, n) != 0)
		abort();
	if (err)
		m = http_error_response(b, n - 1, P.status, false, head_only);
	else
		m = http_response_head(b, n - 1, 200, http_content_type(P.path), P.path_len,
				       P.keep_alive, "ETag: \"x\"\r\n");
	if (m != 0)
		abort();
	free(b);
}

/* A chunked body from data[*off..len) in the run's pieces, into e: the
 * decoder's last result, where it stopped, the payload's length and hash. */
static void run_body(const u8 *data, size_t len, size_t *off, bool chunked, u32 *rng, u8 seed,
		     struct event *e)
{
	struct chunked d;
	size_t used, avail;
	u32 h = 2166136261u;
	int r = CHUNKED_MORE;

	chunked_init(&d);
	while (*off < len) {
		size_t c = len - *off;

		if (chunked) {
			*rng = *rng * 1103515245u + 12345u;
			c = MIN(c, (size_t)((*rng >> 16) % (seed % 64 + 1)) + 1);
		}
		r = chunked_step(&d, data + *off, c, &used, &avail);
		if (used > c || (r == CHUNKED_MORE && used != c) || (r == CHUNKED_DATA && (!avail || used + avail > c)))
			abort();
		*off += used;
		if (r == CHUNKED_DATA) {
			for (size_t i = 0; i < avail; i++)
				h = (h ^ data[*off + i]) * 16777619u;
			e->body_len += avail;
			chunked_take(&d, avail);
			*off += avail;
			continue;
		}
		if (r != CHUNKED_MORE)
			break;
	}
	e->body = r == CHUNKED_DATA ? CHUNKED_MORE : r;
	e->body_end = *off;
	e->body_hash = h;
}

/* Parse the stream; chunk 0 means "everything left", otherwise sizes come
 * from seed. Returns the number of events written to ev. */
static size_t run(const u8 *data, size_t len, u8 seed, bool chunked, struct event *ev)
{
	size_t off = 0, nev = 0, used;
	u32 rng = seed;

	P.ext = seed & 16;
	http_parser_reset(&P);
	while (off < len && nev < MAX_REQS) {
		size_t c = len - off;
		int r;

		if (chunked) {
			rng = rng * 1103515245u + 12345u;
			c = MIN(c, (size_t)((rng >> 16) % (seed % 64 + 1)) + 1);
		}
		used = (size_t)-1;
		r = http_parse(&P, data + off, c, &used);
		if (used > c)
			abort();
		off += used;
		if (r == HTTP_NEED_MORE) {
			if (used != c)
				abort();
			continue;
		}
		ev[nev] = (struct event){ .r = r, .status = P.status, .end = off };
		if (r == HTTP_DONE) {
			check_done();
			ev[nev].method = P.method;
			ev[nev].minor = P.version_minor;
			ev[nev].keep = P.keep_alive;
			ev[nev].path_hash = hash(P.path, P.path_len);
			ev[nev].query_hash = P.query ? hash(P.query, strlen(P.query)) : 0;
			ev[nev].clen = P.content_length;
			ev[nev].chunked = P.chunked;
			if (P.chunked && (!P.ext || P.content_length))
				abort();
			if (!chunked)
				respond(false, false);
			if (http_parse(&P, data + off, len - off, &used) != HTTP_DONE || used)
				abort();
			if (P.chunked) {
				run_body(data, len, &off, chunked, &rng, seed, &ev[nev]);
				if (ev[nev].body != CHUNKED_END) {
					nev++;
					break;	/* an error, or the stream ended inside it */
				}
			}
			nev++;
			http_parser_reset(&P);
			continue;
		}
		if (r != HTTP_ERROR)
			abort();
		check_error();
		if (!chunked)
			respond(true, seed & 1);
		if (http_parse(&P, data + off, len - off, &used) != HTTP_ERROR || used)
			abort();
		nev++;
		break;
	}
	return nev;
}

/* Whole versus chunked on one stream: same requests, same offsets. */
static void compare(const u8 *data, size_t size, u8 seed)
{
	size_t a = run(data, size, seed, false, ev_whole);
	size_t b = run(data, size, seed, true, ev_chunk);

	if (a != b)
		abort();
	for (size_t i = 0; i < a; i++) {
		const struct event *x = &ev_whole[i], *y = &ev_chunk[i];

		if (x->r != y->r || x->status != y->status || x->end != y->end ||
		    x->method != y->method || x->minor != y->minor || x->keep != y->keep ||
		    x->path_hash != y->path_hash || x->query_hash != y->query_hash || x->clen != y->clen ||
		    x->chunked != y->chunked || x->body != y->body || x->body_end != y->body_end ||
		    x->body_len != y->body_len || x->body_hash != y->body_hash)
			abort();
	}
}

static void append(u8 *buf, size_t *n, const void *s, size_t len)
{
	memcpy(buf + *n, s, len);
	*n += len;
}

#define LIT(s) s, sizeof(s) - 1

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "HEAD", "GET", "POST" };
	static const char *const names[] = {
		"Host", "Connection", "Content-Length", "Transfer-Encoding", "If-None-Match",
		"connection", "X-Other",
	};
	size_t i, n = 0;
	u8 seed, *buf;

	if (size < 1)
		return 0;
	seed = data[0];
	data++;
	size--;

	/* The bytes as a raw stream. */
	compare(data, size, seed);

	/* The bytes spliced into a request template, so that DONE and every
	 * header the parser knows are reached often. Pieces are separated by
	 * '\n' in the input: the first is the target, each other one is a header
	 * line whose first byte picks the name and whose rest is the value.
	 * The seed picks the method and version and whether Host is sent. */
	buf = malloc(size * 12 + 128);	/* a 2-byte piece becomes <= 23 */
	append(buf, &n, methods[seed % 4], strlen(methods[seed % 4]));
	append(buf, &n, LIT(" /"));
	for (i = 0; i < size && data[i] != '\n'; i++)
		buf[n++] = data[i];
	append(buf, &n, (seed & 4) ? " HTTP/1.0\r\n" : " HTTP/1.1\r\n", 11);
	if (!(seed & 8))
		append(buf, &n, LIT("Host: h\r\n"));
	while (i < size) {
		const char *name;

		i++;	/* the '\n' */
		if (i == size)
			break;
		name = names[data[i++] % (sizeof names / sizeof names[0])];
		append(buf, &n, name, strlen(name));
		append(buf, &n, LIT(": "));
		for (; i < size && data[i] != '\n'; i++)
			buf[n++] = data[i];
		append(buf, &n, LIT("\r\n"));
	}
	append(buf, &n, LIT("\r\nHEAD /b HTTP/1.0\r\n\r\n"));
	compare(buf, n, seed);
	free(buf);
	return 0;
}
