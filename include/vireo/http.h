/*
 * vireo's application API: HTTP routes on the appliance's HTTP server (the
 * http= port, and https= in a TLS=1 build). The runtime owns the
 * connections, the parser and every limit of docs/appliance.md (header
 * size, connection counts, per-source caps, timeouts); an app sees one
 * request at a time through a vireo_req handle and answers through the same
 * handle.
 *
 *	static void hello(vireo_req r, void *arg)
 *	{
 *		vireo_resp_send(r, 200, "text/plain", "hello\n", 6);
 *	}
 *	...
 *	vireo_http_route(&(struct vireo_route){ .path = "/hello",
 *		.methods = VIREO_GET, .handler = hello });
 *
 * Routing: an exact route ("/hello") wins over a prefix route ("/api/",
 * .prefix = true, matching every path that starts with it); among prefix
 * routes the longest wins. /healthz and /metrics are the runtime's and cannot
 * be taken. No route: 404. A route that does not allow the method: 405 with
 * an Allow header, and the connection closes (as for any request the
 * runtime refuses before reading its body). GET implies HEAD: the runtime
 * drops the body of a HEAD answer and keeps its Content-Length.
 *
 * Request bodies: with Content-Length or "Transfer-Encoding: chunked"
 * (another coding is 501, both framings 400), at most the route's max_body
 * (413 and close otherwise; a chunked body as it grows past it), read
 * whole before the handler runs, unless the route streams its body
 * (on_body, below). The bytes held for bodies and copied responses are bounded
 * all together by VIREO_HTTP_BUF_BUDGET; a body is charged as its bytes
 * arrive (never on the length it declares), request bodies together take
 * at most three quarters of the budget and one client (an IPv4 address,
 * an IPv6 /64) at most a quarter: a body or a response that would pass a
 * bound is 503 and closes. The whole request (head and body) must arrive within the
 * header timeout (10 s, 408).
 *
 * The handler answers at once (vireo_resp_send and friends), or later: it
 * may return without answering and finish from a timer, deferred work or
 * another connection's callback, within VIREO_HTTP_DEFER_MS (else the
 * runtime answers 503 and closes). A response is written with
 * back-pressure: vireo_resp_write() takes what fits and on_writable says
 * when there is room again. The handle goes stale when the exchange ends
 * (response written, or the connection lost); on_done says which.
 */
#ifndef VIREO_API_HTTP_H
#define VIREO_API_HTTP_H

#include "vireo/app.h"

/* Methods, as bits of a route's mask and as vireo_req_method()'s answer. */
enum vireo_method {
	VIREO_GET = 1u << 0,
	VIREO_HEAD = 1u << 1,
	VIREO_POST = 1u << 2,
	VIREO_PUT = 1u << 3,
	VIREO_DELETE = 1u << 4,
	VIREO_PATCH = 1u << 5,
	VIREO_OPTIONS = 1u << 6,
};
#define VIREO_METHODS_ALL 0x7fu

/* One request and its response. Pass by value; 0 is never a live handle. */
typedef struct vireo_req {
	u32 id;
} vireo_req;

typedef void (*vireo_http_handler)(vireo_req r, void *arg);

#define VIREO_HTTP_ROUTES_MAX 32		/* routes in all, every app together */
#define VIREO_HTTP_PATH_MAX 256			/* a route's path, NUL excluded */
#define VIREO_HTTP_BODY_MAX (1024u * 1024u)	/* a route's max_body at most */
/* Request bodies held plus response bodies copied, all connections: 64
 * connections cannot make the runtime hold more than this. */
#define VIREO_HTTP_BUF_BUDGET (4u * 1024u * 1024u)
#define VIREO_HTTP_DEFER_MS 30000		/* a handler's answer must start by then */
#define VIREO_RESP_HEADERS_MAX 512		/* extra header bytes per response */
#define VIREO_RESP_STREAM_BUF 8192		/* vireo_resp_write()'s buffer */

struct vireo_route {
	const char *path;	/* starts with '/'; must live as long as the image */
	bool prefix;		/* match every path starting with path */
	unsigned methods;	/* VIREO_GET | VIREO_POST ...; not 0 */
	vireo_http_handler handler;
	void *arg;		/* handed to handler */
	u32 max_body;		/* request body bytes accepted, <= VIREO_HTTP_BODY_MAX;
				 * 0: a request with a body is 413 */
	/*
	 * A streamed request body (opt-in: on_body set; max_body must be 0).
	 * The handler runs at the head, before any body byte; then on_body
	 * gets the body (decoded, for a chunked one) as it arrives, in spans
	 * of what the connection's receive buffer holds, and returns how
	 * much it took (0..len): the rest stays in the buffer, so the TCP
	 * window closes until vireo_req_body_resume(r) (vireo_tcp's on_recv
	 * contract). After the last byte on_body_end runs once. Nothing is
	 * copied or charged to VIREO_HTTP_BUF_BUDGET: what the body makes the
	 * runtime hold is the receive buffer (one TCP window), whatever its
	 * length. body_limit bounds the body's bytes (0: none): a
	 * Content-Length past it is 413 at the head, a chunked body 413 as it
	 * passes it (the exchange then ends lost, on_done(r, false)), as is
	 * a chunked body's bad framing (400). An answer may start before the
	 * body's end; on_body is not called after it, and the rest of the
	 * body is dropped (at most HTTP's 8 KiB) or the connection closes.
	 * The exchange must answer within VIREO_HTTP_DEFER_MS of the last
	 * body byte taken (of the head, before any).
	 */
	size_t (*on_body)(vireo_req r, const void *data, size_t len, void *arg);
	void (*on_body_end)(vireo_req r, void *arg);
	u64 body_limit;
};

/*
 * Adds a route (the struct is copied). Returns 0, or (logged):
 * -EINVAL  no handler, no methods or unknown bits, a path that is empty, does
 *          not start with '/', is longer than VIREO_HTTP_PATH_MAX or holds a
 *          byte outside printable ASCII, max_body too large, on_body with
 *          max_body, on_body_end or body_limit without on_body;
 * -EEXIST  the same path (and prefix flag) is routed already for one of these
 *          methods, or the path is a runtime route (/healthz, /metrics);
 * -ENOSPC  VIREO_HTTP_ROUTES_MAX routes exist.
 * (Inline: a route with max_body or on_body links the runtime's readers of
 * chunked and streamed bodies, which an image whose routes take no body,
 * such as the static site's, leaves out.)
 */
int vireo_http_route_add(const struct vireo_route *route);
void vireo_http_bodies(void);
static inline int vireo_http_route(const struct vireo_route *route)
{
	if (route && (route->max_body || route->on_body))
		vireo_http_bodies();
	return vireo_http_route_add(route);
}

/* ---- the request (valid until the exchange ends) ---- */

/* True while r is live (its response not yet finished, connection up). */
bool vireo_req_live(vireo_req r);
/* One VIREO_* bit, or 0 if r is stale. */
enum vireo_method vireo_req_method(vireo_req r);
/* The decoded path ("/kv/a b"), NUL-terminated, no query; "" if stale. */
const char *vireo_req_path(vireo_req r);
/* For a prefix route: the path after the prefix ("/kv/" matched by "/kv/"
 * gives ""); for an exact route "". */
const char *vireo_req_subpath(vireo_req r);
/* The path as the client sent it, still percent-encoded ("/a%2Fb"), no
 * query: for an app that passes the target on (apps/proxy: "%2F" is not
 * "/"), once it called vireo_http_raw_paths() (in its init: the parser
 * then copies each request's raw path beside its head; an image whose
 * apps never call it links none of this). NULL if stale, before that
 * call, or when the head left no room for the copy (the head and the
 * path together over 8 KiB). */
const char *vireo_req_raw_path(vireo_req r);
void vireo_http_raw_paths(void);
/* The raw query after '?' (still percent-encoded), "" if none or stale. */
const char *vireo_req_query(vireo_req r);
/*
 * The first name=value of the query whose name is name (names compare
 * exactly, after decoding), its value percent-decoded ('+' is a space) into
 * buf[size] and NUL-terminated. Returns the value's length, -ENOENT if
 * absent, -E2BIG if it does not fit (buf is then ""), -EINVAL if it decodes
 * to a NUL byte, -EPIPE if r is stale.
 */
int vireo_req_query_param(vireo_req r, const char *name, char *buf, size_t size);
/* A header field's value, trimmed, by case-insensitive name; NULL if it is
 * absent, appears more than once (an ambiguous value is no value), or r is
 * stale. */
const char *vireo_req_header(vireo_req r, const char *name);
/* The i-th header field of the request (0, 1, ... in the order they came,
 * repeated ones each): 0 with *name (name_len bytes, not NUL-terminated)
 * and *value (trimmed, NUL-terminated); -ENOENT past the last, -EPIPE if
 * r is stale. For an app that passes the head on (apps/proxy). */
int vireo_req_field(vireo_req r, unsigned i, const char **name, size_t *name_len, const char **value);
/* The body (NULL and *len 0 without one, or for a route that streams it). */
const void *vireo_req_body(vireo_req r, size_t *len);
/* A streamed body's on_body took less than it was given: call it again
 * with what is left (and what arrived since). Nothing if r is stale or
 * not paused. */
void vireo_req_body_resume(vireo_req r);
/* The client's address and port. 0 or -EPIPE. */
int vireo_req_peer(vireo_req r, struct vireo_addr *a);
/* Whether the request came over HTTPS. */
bool vireo_req_tls(vireo_req r);
/* Whether the request is HTTP/1.0 (RFC 9110 7.8: its Upgrade field is
 * ignored; vireo_resp_upgrade() refuses it). False if stale. */
bool vireo_req_http10(vireo_req r);
/* Whether If-None-Match matches etag (a quoted entity tag, weak
 * comparison, RFC 9110 13.1.2): answer 304 then. False if stale. */
bool vireo_req_etag_match(vireo_req r, const char *etag);
/* Whether to answer 304 for a representation with this entity tag and
 * modification time (Unix seconds, 0: none): If-None-Match decides when
 * the request has one (as vireo_req_etag_match); otherwise
 * If-Modified-Since not older than mtime (RFC 9110 13.1.3, 13.2.2), which
 * needs the wall clock set (ntp=). False if stale. */
bool vireo_req_not_modified(vireo_req r, const char *etag, u64 mtime);

/* ---- the response ---- */

/* Adds "name: value" to the response head. Before the response starts
 * only. 0, -EINVAL (a name that is not a token, a value with CR, LF or
 * another control byte; or one the runtime sets: Content-Length,
 * Transfer-Encoding, Connection, Server, Date), -ENOSPC (more than
 * VIREO_RESP_HEADERS_MAX bytes), -EALREADY (started), -EPIPE. */
int vireo_resp_header(vireo_req r, const char *name, const char *value);
/* Adds Last-Modified for mtime (Unix seconds), never later than now, once
 * the wall clock is set (ntp=); returns the time given, or 0 when no
 * header was added (no clock, no time, or as vireo_resp_header refuses). */
u64 vireo_resp_last_modified(vireo_req r, u64 mtime);

/* A whole response with body[0..len) copied (counted against
 * VIREO_HTTP_BUF_BUDGET while it is sent). type may be NULL (no
 * Content-Type; checked as vireo_resp_header() checks a value). For 304,
 * len is the representation's Content-Length (RFC 9110 8.6) and no body is
 * sent, nor for HEAD. Ends the exchange for the app: r goes stale once
 * written. 0, -EINVAL (status outside 200..599, a body with 204, a type
 * with CR, LF or another control byte), -ENOMEM (budget), -EALREADY,
 * -EPIPE. */
int vireo_resp_send(vireo_req r, int status, const char *type, const void *body, size_t len);
/* The same without copying: body must stay unchanged as long as the image
 * lives (rodata, the baked site). */
int vireo_resp_send_static(vireo_req r, int status, const char *type, const void *body, size_t len);
/*
 * A file vireo_file_find() filled f with, served whole and zero-copy with
 * its validators, formatting nothing per request (its head's lines were
 * made when the site was: the fast path of the static site):
 * 304 with its Content-Length and no body when vireo_req_not_modified(r,
 * f->etag, f->mtime), else 200 with its Content-Type and bytes (none for
 * HEAD); then ETag and, as vireo_resp_last_modified() adds it,
 * Last-Modified, after any header added before, and on a 200
 * "Accept-Ranges: bytes". The bytes sent are the same as from
 * vireo_resp_header(r, "ETag", f->etag), vireo_resp_last_modified(r,
 * f->mtime), vireo_resp_header(r, "Accept-Ranges", "bytes") (200 only) and
 * vireo_resp_send_static(). A Range (one range, as nginx serves it: its
 * If-Range honoured) is a 206 with Content-Range and those bytes, or a 416
 * with "Content-Range: bytes * /len" and the canned page; several ranges
 * get the whole file (200). A file with NAME.gz beside it in the site is
 * answered with Vary: Accept-Encoding, and with the .gz's bytes and ETag
 * (Content-Encoding: gzip, f's type) to a client taking gzip.
 * The runtime serves the file f names as it found it, whatever f's other
 * fields say now. 0, -EINVAL (f NULL or not from vireo_file_find(), or
 * the head does not fit: then 500 is sent), -EALREADY, -EPIPE.
 */
struct vireo_file;
int vireo_resp_send_file(vireo_req r, const struct vireo_file *f);
/* The runtime's canned HTML page for an error status (400..599). A 4xx
 * keeps the connection alive (as the framing rule allows: docs/appliance.md),
 * a 5xx closes it. */
int vireo_resp_error(vireo_req r, int status);

/* Streaming: the head now, the body through vireo_resp_write(). length is
 * the body's exact size, or VIREO_LENGTH_UNKNOWN: chunked for HTTP/1.1, and
 * for HTTP/1.0 the connection closes at the end. type as for
 * vireo_resp_send(). 0, -EINVAL, -EALREADY, -EPIPE. */
#define VIREO_LENGTH_UNKNOWN UINT64_MAX
int vireo_resp_start(vireo_req r, int status, const char *type, u64 length);
/* Copies as much of data[0..len) as fits the stream buffer
 * (VIREO_RESP_STREAM_BUF) and returns it: 0 when full, so wait for
 * on_writable. When nothing waits in the buffer, in an image without TLS,
 * the bytes go straight to the connection's send queue, as many as it
 * takes at once (its copy room: 8 KiB unacknowledged, 32 KiB with one of
 * the server's 2 copy grants), and the buffer takes at most what it alone
 * would have: a call never takes less than the buffer's room. Writing more than a declared length is -EINVAL and nothing
 * is taken; -EINVAL before vireo_resp_start(), -EPIPE when stale. */
int vireo_resp_write(vireo_req r, const void *data, size_t len);
/* The body is complete: the exchange ends once it is written. With a
 * declared length, ending short of it closes the connection instead (the
 * peer sees a short body, not a wrong one), but for HEAD, 204 and 304,
 * which send no body whatever the length: the connection stays alive (a
 * proxy passes a HEAD answer's Content-Length on). 0, -EINVAL (not
 * started), -EPIPE. */
int vireo_resp_end(vireo_req r);

/* A stream that cannot be finished (its source failed midway): what was
 * written goes out, then the connection closes without the body's end (no
 * last chunk; short of a declared length), so the client sees a cut
 * response, never a whole one. 0, -EINVAL (not started, or ended), -EPIPE. */
int vireo_resp_abort(vireo_req r);

/*
 * Switching protocols (RFC 9110 7.8: a WebSocket, apps/proxy's tunnel):
 * answers a GET that carries Upgrade, has no body and came on a route
 * with on_body, with "101 Switching Protocols", "Connection: upgrade",
 * "Upgrade: protocol" and the lines vireo_resp_header() added
 * (Sec-WebSocket-Accept ...). The connection is then a tunnel until
 * either side ends it: the client's bytes go raw to the route's on_body
 * (back-pressure as for a body: what it leaves stays in the receive
 * buffer, vireo_req_body_resume()), uncapped by body_limit, and its FIN
 * to on_body_end (which ran once already, at the empty body's end, before
 * the upgrade); the app's go out through vireo_resp_write() (never
 * chunked) with on_writable; vireo_resp_end() closes after them (FIN),
 * vireo_resp_abort() too. The tunnel holds the connection (one of the
 * server's 64) and the stream buffer; the send stall timeout applies,
 * an idle bound is the app's. 0, -EINVAL (not such a request, a protocol
 * empty or with a control byte, the head over OUT_MAX), -ENOMEM (budget),
 * -EPIPE (stale or answered).
 */
int vireo_resp_upgrade(vireo_req r, const char *protocol);

/* fn(r, arg) from the loop whenever the stream buffer has drained below
 * half after a write was short or returned 0. One callback per exchange;
 * NULL removes it. 0 or -EPIPE. */
int vireo_resp_on_writable(vireo_req r, void (*fn)(vireo_req r, void *arg), void *arg);
/* fn(r, done, arg) once when the exchange ends: done is true if the whole
 * response was handed to TCP, false if the connection was lost first
 * (reset, timeout, power off) or the handler never answered. r is stale
 * during the call; free the request's own state here. 0 or -EPIPE. */
int vireo_req_on_done(vireo_req r, void (*fn)(vireo_req r, bool done, void *arg), void *arg);

#endif
