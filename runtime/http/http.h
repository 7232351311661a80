/* The appliance's HTTP/1.1 layer: request-head parser, response heads, content types. No I/O. */
#ifndef VIREO_NET_APP_HTTP_H
#define VIREO_NET_APP_HTTP_H

#include "lib/types.h"
#include "runtime/http/token.h"

/*
 * Limits. A request line longer than HTTP_REQLINE_MAX bytes (not counting its
 * CRLF) is 414 URI Too Long; the target lives inside that line, so it has no
 * separate limit. The whole head (leading empty lines, request line, header
 * lines, every line ending and the final empty line) must fit HTTP_HEAD_MAX
 * bytes, and at most HTTP_HEADERS_MAX header lines are allowed; either
 * overflow is 431 Request Header Fields Too Large.
 */
#define HTTP_REQLINE_MAX 2048
#define HTTP_HEAD_MAX 8192
#define HTTP_HEADERS_MAX 64

/* http_parse() results. */
enum http_result {
	HTTP_NEED_MORE = 0,	/* all input consumed, the head is not complete */
	HTTP_DONE = 1,		/* one request parsed; *consumed ends at its head */
	HTTP_ERROR = 2,		/* p->status says which error response to send */
};

enum http_method {
	HTTP_METHOD_NONE = 0,
	HTTP_METHOD_GET,
	HTTP_METHOD_HEAD,
	/* Only with the parser's ext flag (the application API): */
	HTTP_METHOD_POST,
	HTTP_METHOD_PUT,
	HTTP_METHOD_DELETE,
	HTTP_METHOD_PATCH,
	HTTP_METHOD_OPTIONS,
	HTTP_METHOD_OTHER,	/* any other token */
};

/* A header field of the head, as offsets into the parser's buf: the name
 * (not NUL-terminated) and its trimmed value (NUL-terminated in place). */
struct http_field {
	u16 name, name_len, value;
};

/* The value of the one field called name (case-insensitive) among fields[n]
 * of a parsed head in buf, NULL when there is none or more than one (a
 * repeated field is ambiguous): for requests and upstream responses alike. */
static inline const char *http_field_find(const char *buf, const struct http_field *fields, size_t n,
					  const char *name)
{
	const char *found = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct http_field *f = &fields[i];
		size_t k;

		for (k = 0; k < f->name_len && name[k]; k++)
			if (http_to_lower((u8)buf[f->name + k]) != http_to_lower((u8)name[k]))
				break;
		if (k != f->name_len || name[k])
			continue;
		if (found)
			return NULL;
		found = buf + f->value;
	}
	return found;
}

/*
 * One connection's request parser. Zero it or call http_parser_reset() before
 * the first request. The public fields are meaningful after HTTP_DONE (and
 * status after HTTP_ERROR); the rest is private. path, if_none_match,
 * if_modified_since and host point
 * into buf, so they stay valid only until the next reset.
 */
struct http_req_parser {
	/* Results. */
	int status;		/* 0 after HTTP_DONE; 400/405/413/414/431/501/505 on error */
	enum http_method method;
	u8 version_minor;	/* HTTP/1.<this>: 0, or 1 for any minor >= 1 */
	bool keep_alive;	/* false after HTTP_ERROR: send the error, then close */
	bool has_host;
	const char *path;	/* decoded, NUL-terminated, starts with '/', no query */
	size_t path_len;
	const char *if_none_match;	/* trimmed value, or NULL (absent or repeated) */
	const char *if_modified_since;	/* trimmed value, or NULL (absent or repeated) */
	const char *host;	/* the Host field's trimmed value (checked characters), or NULL */
	/* With ext only: */
	const char *query;	/* the raw query after '?', NUL-terminated, or NULL */
	const char *raw_path;	/* with http_raw_keep: the path as it came
				 * (percent-encoded), copied after the head when
				 * it fits there (head and path within
				 * HTTP_HEAD_MAX), else NULL */
	u64 content_length;	/* Content-Length, 0 if absent */
	bool chunked;		/* Transfer-Encoding: chunked (content_length 0):
				 * the body is chunked (runtime/http/chunked.h) */
	bool expect;		/* an Expect field came (the client may hold its
				 * body back until a 100 Continue) */
	u16 nfields;		/* fields[0..nfields): every header field */
	struct http_field fields[HTTP_HEADERS_MAX];

	/* Set by the owner, kept across resets: parse for the application
	 * API. Any method token is accepted (HTTP_METHOD_OTHER for unknown
	 * ones; the caller answers 405), Content-Length > 0 is accepted
	 * (the caller reads or refuses the body), and query and fields are
	 * filled, and "Transfer-Encoding: chunked" sets chunked (one other
	 * coding 501; a list, with Content-Length, twice, in 1.0: 400).
	 * Without ext any Transfer-Encoding is 501 (400 with
	 * Content-Length). */
	bool ext;

	/* Private. */
	u8 state;
	bool seen_reqline;	/* request line complete; later lines are headers */
	u16 nheaders;
	u32 len;		/* bytes held in buf */
	u32 line_start;		/* offset of the line being received */
	u32 req_start;		/* offset of the request line (after empty lines) */
	char buf[HTTP_HEAD_MAX];
};

/* Called with each whole head (its request line at buf + req_start, not
 * yet checked) before it is parsed: sets p->raw_path. NULL (nothing
 * kept) unless an app asked for raw paths (vireo_http_raw_paths():
 * runtime/http/exchange.c's keeper). */
extern void (*http_raw_keep)(struct http_req_parser *p);

/* Forget any previous request: parse the next one from scratch. */
void http_parser_reset(struct http_req_parser *p);

/*
 * Feed len bytes of the connection's stream. Always sets *consumed (<= len) to
 * the bytes this call used. HTTP_NEED_MORE: all of data was used, feed more.
 * HTTP_DONE: a request head ended at data[*consumed - 1]; the rest of data
 * belongs to the next (pipelined) request and must be fed again after
 * http_parser_reset(). HTTP_ERROR: p->status holds the error status; the
 * stream cannot be resynchronised, so answer and close. Once DONE or ERROR,
 * further calls return the same result and consume nothing until reset.
 * Without ext requests with bodies are refused: Content-Length > 0 is 413
 * and any Transfer-Encoding is 501 (400 if Content-Length is present too).
 */
int http_parse(struct http_req_parser *p, const u8 *data, size_t len, size_t *consumed);

/* After HTTP_DONE with ext: the trimmed value of the header field name
 * (case-insensitive), or NULL if it is absent or appears more than once. */
const char *http_header(const struct http_req_parser *p, const char *name);

/*
 * In a raw query string (name=value pairs split by '&', percent-encoded,
 * '+' for space): the first pair whose decoded name is name, its decoded
 * value into buf[size] NUL-terminated. Returns the value's length, -ENOENT,
 * -E2BIG (buf is then "") or -EINVAL (a bad escape or a NUL byte).
 */
int http_query_param(const char *query, const char *name, char *buf, size_t size);

/* The reason phrase for status ("Not Found"), or "" for a code we never send. */
const char *http_reason(int status);

/* Where the Date header comes from: fn writes "Sun, 06 Nov 1994 08:49:37
 * GMT" into buf[size] and returns its length, or 0 while the time is
 * unknown (no Date then). NULL, the default, sends none. */
void http_set_date_source(size_t (*fn)(char *buf, size_t size));

/* The Date header's value from that source into buf[size] (size >= 40),
 * NUL-terminated, and its length; 0 for no Date line. Every head the
 * runtime writes takes its date from here. */
size_t http_date(char *buf, size_t size);

/*
 * Write a response head into buf:
 *   HTTP/1.1 <status> <reason>\r\n Server: vireo\r\n Content-Type: <type>\r\n
 *   Content-Length: <n>\r\n Connection: keep-alive|close\r\n <extra> \r\n
 * content_type NULL omits its line; extra_headers (NULL for none) must be
 * whole lines, each ending in \r\n. Returns the bytes written (no NUL), or 0
 * if the head would not fit in size bytes or status is not in 100..599.
 */
size_t http_response_head(char *buf, size_t size, int status, const char *content_type,
			  u64 content_length, bool keep_alive, const char *extra_headers);

/* The same with content_length NULL for no Content-Length line (a chunked
 * or close-delimited body). */
size_t http_response_head_len(char *buf, size_t size, int status, const char *content_type,
			      const u64 *content_length, bool keep_alive, const char *extra_headers);

/*
 * Write the canned HTML body for an error status ("<h1>404 Not Found</h1>...")
 * into buf. Returns its length, or 0 if it would not fit or status is unknown.
 * With buf NULL and size 0 it only returns the length the body would have.
 */
size_t http_error_body(char *buf, size_t size, int status);

/*
 * Write a whole error response: head (text/html, with "Allow: GET, HEAD" for
 * 405) and, unless head_only, the canned body. Returns the bytes written, or
 * 0 if it would not fit or status is unknown.
 */
size_t http_error_response(char *buf, size_t size, int status, bool keep_alive, bool head_only);

/*
 * The Content-Type for path, chosen by its extension (ASCII case-insensitive)
 * from the table tools/mkmime.py generates from Debian's media-types
 * (runtime/http/mime.c); text types carry "; charset=utf-8"; anything else
 * is application/octet-stream. Returns a static string.
 */
const char *http_content_type(const char *path);

/*
 * If-None-Match evaluation (weak comparison, RFC 9110 13.1.2): true if the
 * header value if_none_match ("*", or a list of [W/]"tag") matches etag (a
 * quoted entity tag such as "\"1a2b\""), i.e. the answer is 304. A malformed
 * list never matches.
 */
bool http_etag_match(const char *if_none_match, const char *etag);

/* Range (runtime/http/range.c), as nginx answers it for a file of len
 * bytes: HTTP_RANGE_ONE (206) with bytes [*first, *last], HTTP_RANGE_BAD
 * (416: none satisfiable, or a malformed "bytes=" set), or HTTP_RANGE_NONE
 * (200, the whole file: v NULL, another unit, several ranges, an empty
 * file). */
enum { HTTP_RANGE_NONE, HTTP_RANGE_ONE, HTTP_RANGE_BAD };
int http_byte_range(const char *v, u64 len, u64 *first, u64 *last);

/* If-Range (RFC 9110 13.1.5): true if v is NULL, the strong tag etag, or
 * the HTTP-date lm (not 0) exactly; else the range is ignored. */
bool http_if_range(const char *v, const char *etag, u64 lm);

/* Accept-Encoding v (NULL: absent) names coding ("gzip", "br": lower case)
 * without q=0, in any case. ("*" is not taken for either, as nginx's
 * gzip_static does not.) */
bool http_accepts_coding(const char *v, const char *coding);

#endif
