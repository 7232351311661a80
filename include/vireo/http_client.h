/*
 * vireo's application API: an HTTP/1.1 client (runtime/http_client.c), on
 * the outbound TCP connections of vireo/net.h.
 *
 * A pool is one upstream (a host name or address literal, a port) with its
 * caps and timeouts: at most max_conns connections at once, at most
 * max_idle of them kept alive between requests (closed after
 * idle_timeout_ms without one: keep it below the upstream's own keep-alive
 * timeout, so the pool never picks a connection the upstream is closing),
 * at most max_waiting requests waiting for a connection. A request
 * (vireo_http_request()) takes an idle connection, else opens one, else
 * waits; its response comes as on_head, then on_body spans with
 * back-pressure (on_body consumes what it can; the rest stays in the
 * connection's receive buffer, the upstream's window closes, and
 * vireo_http_resume() offers it again), then on_done once, with 0 or why
 * it failed (enum vireo_http_err).
 *
 * Responses are read with the hostile-client issue's framing rules
 * (runtime/http/response.h): Content-Length, chunked (with trailers,
 * discarded) or until close; both Content-Length and Transfer-Encoding, an
 * unknown or repeated coding, obs-fold, a bare LF, a head over max_head or a
 * body over max_body are errors, and the connection is closed.
 *
 * Retry: a request written to a reused keep-alive connection that the
 * upstream had already closed (EOF or reset before any byte of the
 * response) is sent once more on a fresh connection when it is idempotent
 * (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) and its body was given whole;
 * any other ends with VIREO_HTTP_ECLOSED (the upstream may have acted on
 * it).
 *
 * Timeouts: connect_timeout_ms for the connection (the name's lookup
 * included), head_timeout_ms from the request's last byte handed to the
 * connection (a streamed body's too) to the response head's end, body_timeout_ms between two body bytes (not counted
 * while the app holds back a span).
 *
 * The transport is vireo/net.h's contract: a pool makes its TCP client
 * with cfg.client (vireo_tcp_client() by default) and connects with
 * cfg.connect_name (vireo_tcp_connect_name(), or vireo_tcp_connect() for
 * an address literal, by default), so a TLS client with the same contract
 * slots in there.
 *
 * Counters on /metrics, per pool: vireo_app_http_out_requests_total,
 * _failures_total{reason=...}, _reused_total, _retries_total,
 * _connections_total, _connections_idle.
 */
#ifndef VIREO_API_HTTP_CLIENT_H
#define VIREO_API_HTTP_CLIENT_H

#include "vireo/net.h"

#ifndef VIREO_LENGTH_UNKNOWN
#define VIREO_LENGTH_UNKNOWN UINT64_MAX	/* as vireo/http.h: a body of unknown length */
#endif

typedef struct vireo_http_pool {
	u32 id;
} vireo_http_pool;

/* One request and its response. 0 is never a live handle. */
typedef struct vireo_http_call {
	u32 id;
} vireo_http_call;

#define VIREO_HTTP_POOLS_MAX 4		/* each has a TCP client (VIREO_TCP_CLIENTS_MAX) */
#define VIREO_HTTP_CALLS_MAX 64		/* requests live at once, all pools */
#define VIREO_HTTP_REQ_MAX 16384	/* a request's head and whole body, copied */
#define VIREO_HTTP_HEAD_MAX 8192	/* a response head's bytes at most (interim heads included) */
#define VIREO_HTTP_IDLE_DEFAULT 2	/* max_idle */
#define VIREO_HTTP_WAITING_DEFAULT 16	/* max_waiting */
#define VIREO_HTTP_HEAD_MS_DEFAULT 30000
#define VIREO_HTTP_BODY_MS_DEFAULT 30000
#define VIREO_HTTP_IDLE_MS_DEFAULT 4000	/* below the 5 s of Apache's and Node's keep-alive */
#define VIREO_HTTP_BODY_DEFAULT (1u << 20)

/* Why a call failed (on_done's err is minus one of these). */
enum vireo_http_err {
	VIREO_HTTP_ECONNECT = 1,	/* no connection: refused, unreachable, policy, name */
	VIREO_HTTP_ETIMEOUT,		/* the connect, head or body deadline passed */
	VIREO_HTTP_EFRAMING,		/* a malformed response, or its framing refused */
	VIREO_HTTP_ETOO_LARGE,		/* the head over max_head, or the body over max_body */
	VIREO_HTTP_ECLOSED,		/* the upstream closed or reset before the end */
	VIREO_HTTP_EABORTED,		/* vireo_http_cancel(), power off */
};
/* "connect", "timeout", "framing", "too_large", "closed", "aborted" (the
 * metrics' reason label), "?" for anything else. */
const char *vireo_http_err_str(int err);

/* A zero field takes the default in brackets. */
struct vireo_http_pool_cfg {
	const char *name;	/* 1..31 of [a-z0-9_-]: the metrics label (and its TCP client's) */
	const char *host;	/* a host name, or an IPv4/IPv6 address literal */
	u16 port;
	const char *host_header;	/* the Host field [host, with ":port" unless 80] */
	u32 max_conns;		/* [VIREO_TCP_OUT_DEFAULT], <= VIREO_TCP_OUT_MAX */
	u32 max_idle;		/* [VIREO_HTTP_IDLE_DEFAULT], <= max_conns */
	u32 max_waiting;	/* [VIREO_HTTP_WAITING_DEFAULT], <= VIREO_HTTP_CALLS_MAX */
	u32 connect_timeout_ms;	/* [VIREO_TCP_CONNECT_MS_DEFAULT] */
	u32 head_timeout_ms;	/* [VIREO_HTTP_HEAD_MS_DEFAULT] */
	u32 body_timeout_ms;	/* [VIREO_HTTP_BODY_MS_DEFAULT] */
	u32 idle_timeout_ms;	/* [VIREO_HTTP_IDLE_MS_DEFAULT] */
	u32 max_head;		/* [VIREO_HTTP_HEAD_MAX], <= it */
	u64 max_body;		/* [VIREO_HTTP_BODY_DEFAULT]; UINT64_MAX: no cap */
	/* TLS (a make TLS=1 image; else vireo_http_pool_new() is -ENOTSUP):
	 * every connection verified for host (a name, or an address literal
	 * against the certificate's IP addresses), host sent as SNI, alpn
	 * offered (NULL-terminated, static; NULL: none). No option skips
	 * verification (vireo/net.h's .tls clients). The Host field leaves
	 * out port 443 as a plain pool's leaves out 80. */
	bool tls;
	const char *const *alpn;
	/* The transport [vireo_tcp_client, vireo_tcp_connect_name]. */
	int (*client)(const struct vireo_tcp_client *cfg, vireo_tcp_out *out);
	int (*connect_name)(vireo_tcp_out cl, const char *name, u16 port, void *ctx, vireo_tcp *c);
};

/* A pool (the struct is copied, host and host_header too) into *out: 0, or
 * (logged) -EINVAL (bad name, host, port or limits), -ENOSPC
 * (VIREO_HTTP_POOLS_MAX, or no TCP client left), -ENOMEM. */
int vireo_http_pool_new(const struct vireo_http_pool_cfg *cfg, vireo_http_pool *out);

/* During on_done of a call that ended with -VIREO_HTTP_ECONNECT or
 * -VIREO_HTTP_ETIMEOUT because its connection never was: the TCP client's
 * reason (enum vireo_tcp_fail: a TLS pool's VIREO_TCP_FAIL_CERT_NAME,
 * _CERT_EXPIRED, _CERT_UNTRUSTED, _NOCLOCK, ...). 0 otherwise. */
enum vireo_tcp_fail vireo_http_connect_why(vireo_http_call h);

/* The response head, during on_head. */
struct vireo_http_response {
	int status;		/* 101, or 200..999 (interim 1xx heads are skipped) */
	u8 version_minor;	/* HTTP/1.<this> */
	bool chunked;
	bool has_length;	/* content_length is the body's length */
	u64 content_length;
};

struct vireo_http_request {
	const char *method;	/* a token: "GET", "POST", ... */
	const char *target;	/* origin-form: "/path?query" */
	/* More fields, whole lines ("Name: value\r\n" each), or NULL. Host,
	 * Content-Length and Transfer-Encoding are the client's. */
	const char *headers;
	/* This request's Host field [the pool's host_header]: 1..253 bytes,
	 * no space or control byte (a proxy passes the client's on). */
	const char *host;
	/* The body, copied (head and body at most VIREO_HTTP_REQ_MAX); a
	 * Content-Length is sent for it (for POST, PUT and PATCH even when 0). */
	const void *body;
	size_t body_len;
	/* Or streamed: body_stream set and body_len its length; the app writes
	 * it with vireo_http_write() once on_writable says so. body_len
	 * VIREO_LENGTH_UNKNOWN: sent chunked ("Transfer-Encoding: chunked",
	 * a chunk per write, at most 1 MiB each, no trailers), ended by
	 * vireo_http_write_end(). */
	bool body_stream;
	u64 max_body;		/* [the pool's]: this response's body cap */

	/* All optional but on_done. */
	void (*on_head)(vireo_http_call h, const struct vireo_http_response *r, void *ctx);
	/* data[0..len) (len >= 1): body bytes in order; returns how many it
	 * took (<= len). The rest is offered again after vireo_http_resume(). */
	size_t (*on_body)(vireo_http_call h, const void *data, size_t len, void *ctx);
	/* A streamed body: room to write (first once the head is sent). */
	void (*on_writable)(vireo_http_call h, void *ctx);
	/* A tunnel's (vireo_http_tunnel()): the upstream's FIN, after every
	 * byte before it went through on_body. The call stays: the app's
	 * bytes still go out (vireo_http_write()) until
	 * vireo_http_tunnel_close(), whose FIN ends it (on_done(0)); the
	 * body timeout still bounds it. NULL: the FIN ends the call
	 * (on_done(0)) and closes the connection both ways. */
	void (*on_eof)(vireo_http_call h, void *ctx);
	/* The end, once: err 0 (the whole response was delivered) or
	 * -VIREO_HTTP_E*. h is stale after it returns. */
	void (*on_done)(vireo_http_call h, int err, void *ctx);
	void *ctx;
};

/* Sends rq (copied) through pool p: 0 and *out, then the callbacks from the
 * loop (never from this call). -EINVAL (logged: a bad pool, method, target,
 * headers, or no on_done), -E2BIG (over VIREO_HTTP_REQ_MAX), -ENOSPC
 * (max_waiting requests waiting, or VIREO_HTTP_CALLS_MAX live), -ENOMEM. */
int vireo_http_request(vireo_http_pool p, const struct vireo_http_request *rq, vireo_http_call *out);

/* During on_head and on_body: the response's field name (case-insensitive)
 * trimmed, or NULL (absent, repeated, or not now). */
const char *vireo_http_header(vireo_http_call h, const char *name);

/* During on_head and on_body: the response's i-th header field (0, 1, ...
 * in order, repeated ones each): 0 with *name (name_len bytes, not
 * NUL-terminated) and *value (trimmed, NUL-terminated); -ENOENT past the
 * last or not now. */
int vireo_http_field(vireo_http_call h, unsigned i, const char **name, size_t *name_len, const char **value);

/* Offer the body bytes on_body left again. 0 or -EINVAL (stale). */
int vireo_http_resume(vireo_http_call h);

/* A streamed body (or a tunnel's bytes): copies up to len bytes and returns
 * how many (less when the connection's send bound is reached: on_writable
 * follows), never past body_len in all. -EINVAL (stale, not streamed, too many bytes), -EAGAIN
 * (not connected yet: wait for on_writable). */
int vireo_http_write(vireo_http_call h, const void *data, size_t len);

/* A chunked body (body_len VIREO_LENGTH_UNKNOWN) is complete: its last
 * chunk goes out after what was written, and the head's deadline starts.
 * 0 (out, or out already), -EAGAIN (not connected, or the connection
 * took part of it: call again from on_writable), -EINVAL (stale, not
 * chunked, or the last write's bytes not all offered again: a chunk
 * declared is filled first). */
int vireo_http_write_end(vireo_http_call h);

/*
 * Switching protocols (a WebSocket through apps/proxy): a request whose
 * headers carry "Connection: upgrade" and "Upgrade: ...", no body, that
 * is answered 101 becomes a tunnel when on_head calls this: every byte
 * the upstream sends after the head comes through on_body (back-pressure
 * as for a body, no cap) until its FIN (on_done(0)); vireo_http_write()
 * sends raw bytes (on_writable as for a streamed body);
 * vireo_http_tunnel_close() half-closes after them; the upstream's FIN
 * is on_eof (the other way stays open) or, without one, the end. The body
 * timeout counts from the last byte either way: the tunnel's idle bound.
 * The connection is never reused. Without the call a 101 ends the call (on_done(0)).
 * 0 or -EINVAL (not during a 101's on_head, a request with a body).
 */
int vireo_http_tunnel(vireo_http_call h);
/* Half-closes a tunnel: a FIN after what was written (vireo_tcp_shutdown(),
 * not a reset), vireo_http_write() refused from here; the upstream's bytes
 * still come through on_body until its FIN, then on_done(0). After on_eof
 * (the upstream closed first) the connection closes after what was
 * written and on_done(0) follows from the loop. 0 or -EINVAL (stale, not
 * a tunnel). */
int vireo_http_tunnel_close(vireo_http_call h);

/* Ends the call now: on_done(-VIREO_HTTP_EABORTED) from the loop, its
 * connection closed. 0 or -EINVAL (stale). */
int vireo_http_cancel(vireo_http_call h);

/* The whole body in one buffer, for small answers (JSON APIs: ACME): rq's
 * callbacks are replaced; done(ctx, err, status, body, len) once, the body
 * (at most max bytes, else -VIREO_HTTP_ETOO_LARGE) valid during the call. */
typedef void (*vireo_http_fetch_fn)(void *ctx, int err, int status, const void *body, size_t len);
int vireo_http_fetch(vireo_http_pool p, const struct vireo_http_request *rq, size_t max, vireo_http_fetch_fn done,
		     void *ctx);

/* A pool's counters (vireo_app_http_out_*{pool=...}). */
struct vireo_http_stats {
	u64 requests;		/* calls started */
	u64 failed[6];		/* by enum vireo_http_err - 1 */
	u64 reused;		/* requests sent on a kept-alive connection */
	u64 retries;		/* sent again after a stale keep-alive connection */
	u64 connections;	/* connections opened */
	u64 idle;		/* kept alive now */
};
int vireo_http_pool_stats(vireo_http_pool p, struct vireo_http_stats *st);

#endif
