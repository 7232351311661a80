/*
 * HTTP/1.1 response heads and body framing, read from an upstream (the HTTP
 * client, runtime/http_client.c): pure, incremental, no I/O.
 *
 * The head: "HTTP/1.x SP 3DIGIT [SP reason] CRLF", field lines, CRLF; a
 * line ends in CRLF only (a bare LF or CR is an error), no control bytes,
 * no obs-fold, no whitespace before a field's colon, at most
 * HTTP_HEADERS_MAX fields and head_max bytes (HTTP_RESP_HEAD_MAX at most),
 * every 1xx interim head (100 Continue, 103 Early Hints: at most
 * HTTP_RESP_INTERIM_MAX of them) counted in it and skipped, 101 ending the
 * head with no body.
 *
 * The body (RFC 9112 6.3, with the hostile-client issue's rules): none for
 * a HEAD request, 1xx, 204 and 304; Transfer-Encoding "chunked" alone (one
 * field, one coding: "gzip, chunked", "chunked, chunked", an unknown coding
 * or Transfer-Encoding in an HTTP/1.0 response are errors) is chunked
 * (runtime/http/chunked.h); Content-Length (digits, one field: a repeated
 * one is an error even if equal) is a length; both together are an error;
 * neither is read until the connection closes (and never kept alive). A
 * body over body_max is an error, at the head when its length says so.
 */
#ifndef VIREO_HTTP_RESPONSE_H
#define VIREO_HTTP_RESPONSE_H

#include "lib/types.h"
#include "runtime/http/chunked.h"
#include "runtime/http/http.h"

#define HTTP_RESP_HEAD_MAX 8192
#define HTTP_RESP_INTERIM_MAX 8

enum http_resp_result {
	HTTP_RESP_MORE = 0,	/* all input used, feed more */
	HTTP_RESP_HEAD,		/* the head ended (http_resp_head) */
	HTTP_RESP_DATA,		/* a body span (http_resp_body) */
	HTTP_RESP_END,		/* the body ended (http_resp_body, http_resp_eof) */
	HTTP_RESP_ERROR,	/* p->err says why; the connection is lost */
};

enum http_resp_err {
	HTTP_RESP_EFRAMING = 1,	/* malformed, or framing refused */
	HTTP_RESP_ETOO_LARGE,	/* over head_max, the field count or body_max */
	HTTP_RESP_ETRUNCATED,	/* the connection closed before the end */
};

enum http_body_kind {
	HTTP_BODY_NONE = 0,
	HTTP_BODY_LENGTH,	/* content_length bytes */
	HTTP_BODY_CHUNKED,
	HTTP_BODY_CLOSE,	/* until the connection closes */
};

struct http_resp_parser {
	/* Set by the owner, kept across resets (0: the largest). */
	u32 head_max;		/* <= HTTP_RESP_HEAD_MAX */
	u64 body_max;

	/* Results, after HTTP_RESP_HEAD. */
	int status;		/* 100..999 */
	u8 version_minor;	/* 0, or 1 for any minor >= 1 */
	bool keep_alive;	/* the connection may take another request */
	u8 body;		/* enum http_body_kind */
	u64 content_length;	/* HTTP_BODY_LENGTH's */
	u64 body_seen;		/* payload bytes taken so far */
	int err;		/* enum http_resp_err after HTTP_RESP_ERROR */
	u16 nfields;
	struct http_field fields[HTTP_HEADERS_MAX];

	/* Private. */
	bool head_req;
	u8 state;
	u8 interim;
	u32 len;		/* head bytes in buf */
	u32 line_start;
	u32 total;		/* head bytes, interim heads included */
	struct chunked ch;
	char buf[HTTP_RESP_HEAD_MAX];
};

/* Ready for the response to the next request (head_req: it was HEAD). */
void http_resp_reset(struct http_resp_parser *p, bool head_req);

/* Feed the head: HTTP_RESP_MORE (all used), HTTP_RESP_HEAD (it ended at
 * data[*used - 1]; the rest is body) or HTTP_RESP_ERROR. */
int http_resp_head(struct http_resp_parser *p, const u8 *data, size_t len, size_t *used);

/* After the head, the body from data[0..len): *used bytes of framing, then
 * HTTP_RESP_DATA with data[*used .. *used + *avail) payload (take n of it
 * with http_resp_take() and feed again from there), HTTP_RESP_MORE,
 * HTTP_RESP_END (the body ended at data[*used - 1]; more bytes after it
 * are the upstream's error unless pipelining) or HTTP_RESP_ERROR. */
int http_resp_body(struct http_resp_parser *p, const u8 *data, size_t len, size_t *used, size_t *avail);
void http_resp_take(struct http_resp_parser *p, size_t n);

/* After a 101 head: every byte that follows is a body read until the
 * connection closes, uncapped (the HTTP client's tunnel). */
void http_resp_tunnel(struct http_resp_parser *p);

/* The connection closed: HTTP_RESP_END if that ends the body (close-
 * delimited, or already ended), else HTTP_RESP_ERROR (truncated). */
int http_resp_eof(struct http_resp_parser *p);

/* After the head: the trimmed value of field name (case-insensitive),
 * NULL if absent or repeated. */
const char *http_resp_header(const struct http_resp_parser *p, const char *name);

#endif
