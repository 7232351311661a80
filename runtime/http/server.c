/*
 * The HTTP/1.1 server on lwIP's altcp API (tcputil.h: the raw TCP API in the
 * default build, plain TCP or TLS over TCP with make TLS=1; NO_SYS: everything runs in the
 * event loop, in lwIP's callbacks).
 *
 * One struct conn per accepted connection, in one of three states:
 *   READ    bytes from rx[] go to the request parser until a head is complete
 *   SEND    a response is being handed to altcp_write() as send space allows
 *   LINGER  after the last response: our FIN is queued, input is discarded
 *           until the peer's FIN, or linger_ms after our data was acked
 *
 * Memory is bounded per connection. Received bytes are copied into rx[]
 * (TCP_WND bytes) and the pbuf is freed at once; altcp_recved() is called only
 * for bytes the parser has taken, so the window the peer sees is exactly the
 * room left in rx[] and rx[] cannot overflow. While a response is written,
 * pipelined requests wait in rx[], and a peer that keeps sending stalls on a
 * closed window. Static bodies are passed to altcp_write() without copying
 * (they are rodata and outlive every segment); heads, error pages and
 * /metrics are copied. Writes stop when altcp_sndbuf() or the segment queue is
 * full and resume from the sent callback.
 *
 * Timeouts are checked from the poll callback (every TCP slow-timer tick,
 * 500 ms), against time_ns(). The send stall is judged by bytes: in every
 * send_timeout window with response data outstanding, the peer must
 * acknowledge send_min_bytes (or all that was outstanding when the window
 * began), so a reader that keeps its window at one byte and ACKs every probe
 * is reset like one that ACKs nothing.
 *
 * What one connection makes lwIP's heap hold is bounded for the budget in
 * net/port/lwipopts.h: copied bytes (heads, error pages, /metrics) are written only
 * while less than HTTP_COPY_INFLIGHT is unacknowledged, and never with
 * TCP_WRITE_FLAG_MORE, which would make lwIP round each copied pbuf up to a
 * whole MSS (TCP_OVERSIZE) for the next write to fill.
 *
 * Connections are kept in a conntab (runtime/conntab.h): a per-source cap and
 * a fair share of the table when it is full.
 *
 * Routes other than /healthz and /metrics are the apps' (include/vireo/http.h,
 * runtime/http/routes.c). A request for one is an exchange with a vireo_req
 * handle (runtime/api.h): two more states, BODY (reading a Content-Length
 * body into a buffer counted against VIREO_HTTP_BUF_BUDGET) and APP (the
 * handler has it and has not answered yet). The API's calls never write to
 * lwIP or free anything themselves: they set up the response and queue the
 * connection's pump_work, so the app is never re-entered from its own call
 * and a handle of a freed connection is only ever stale, never dangling.
 */
#include "lib/fmt.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/outbuf.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lib/metrics.h"
#include "kernel/time/wallclock.h"
#include "lwip/altcp.h"
#include "runtime/http/http.h"
#include "runtime/http/server.h"
#include "runtime/tcputil.h"
#include "runtime/api.h"
#include "runtime/conntab.h"
#include "runtime/http/https.h"
#include "runtime/site.h"
#include "net/port/lwip_port.h"
#include "net/tcp/rxmem.h"
#include "lwip/ip_addr.h"
#include "vireo/files.h"
#if LWIP_ALTCP_TLS
#include "lwip/altcp_tls.h"
#endif

enum conn_state { C_READ, C_SEND, C_LINGER, C_BODY, C_APP };

#define OUT_MAX 1024		/* a response head (an app's adds up to
				 * VIREO_RESP_HEADERS_MAX), or a whole error response */
#define LOCATION_MAX 352	/* the redirect's Location line */
#define POLL_TICKS 1		/* tcp_poll interval: 1 x 500 ms */
#define TYPE_TEXT "text/plain; charset=utf-8"
#define NO_STORE "Cache-Control: no-store\r\n"
/* Copied response bytes are written only below this many unacked bytes. */
#define HTTP_COPY_INFLIGHT 8192

struct conn {
	struct conntab_conn link;	/* first: the table hands back this */
	enum conn_state state;
	bool rx_eof;		/* the peer's FIN arrived */
	bool served;		/* a response was written: waiting is keep-alive idle */
	bool head_started;	/* READ: bytes of the next head have arrived */
	bool close_after;	/* SEND: close once this response is written */
	bool tls;		/* accepted on the HTTPS listener */
	bool handshaking;	/* HTTPS: TLS handshake not finished (counted in hs_active) */
	bool hs_timed_out;	/* HTTPS: closed by the header timeout while handshaking */
#if LWIP_ALTCP_TLS
	bool bulk;		/* HTTPS: holds a bulk grant (https.h HTTPS_BULK_INFLIGHT) */
#endif
	u64 t_wait;		/* READ: accept, or the end of the last response (ms) */
	u64 t_head;		/* READ: when the first byte of this head was seen */
	u64 t_progress;		/* last ACK progress, or when waiting for it began */
	u64 t_window;		/* start of the current send-stall window */
	u32 acked_window;	/* bytes acked since t_window */
	u32 need_window;	/* bytes the peer must ack by t_window + send_timeout */
	u32 inflight;		/* bytes given to altcp_write(), not yet acked */

	/* The response: out[] (copied), then body (zero-copy unless body_copy). */
	u16 out_len, out_off;
	const u8 *body;
	size_t body_len, body_off;
	bool body_copy;
	char *dyn;		/* kmalloc'd body (/metrics), freed once written */
	char out[OUT_MAX];

	/* The app's exchange (vireo/http.h): see the top of the file. */
	u32 xid;		/* its vireo_req id while live, else 0 */
	const struct api_route *route;
	u8 *req_body;		/* BODY/APP: the request body */
	u32 req_body_len, req_body_need;
	size_t budget;		/* bytes held against VIREO_HTTP_BUF_BUDGET */
	u64 t_app;		/* APP: when the handler got the request */
	bool stream;		/* SEND: the body comes from sbuf through vireo_resp_write */
	bool stream_ended;	/* vireo_resp_end() was called */
	bool chunked;		/* the stream is sent chunked */
	bool want_writable;	/* a write was short: call on_writable when there is room */
	u64 stream_len;		/* declared body length, or VIREO_LENGTH_UNKNOWN */
	u64 stream_taken;	/* body bytes vireo_resp_write() took */
	u8 *sbuf;		/* the stream buffer, VIREO_RESP_STREAM_BUF bytes */
	u32 sbuf_off, sbuf_len;	/* unsent bytes are sbuf[sbuf_off..sbuf_len) */
	void (*on_writable)(vireo_req r, void *arg);
	void *writable_arg;
	void (*on_done)(vireo_req r, bool done, void *arg);
	void *done_arg;
	struct work pump_work;	/* server_pump() from the loop, for API calls */
	bool in_handler;	/* the handler runs: the caller pumps after it */
	u16 xhdr_len;
	char xhdr[VIREO_RESP_HEADERS_MAX + 1];	/* the app's extra header lines */

	u32 rx_off, rx_len;	/* unparsed bytes are rx[rx_off..rx_len) */
	u8 rx[TCP_WND];
	struct http_req_parser parser;
};

_Static_assert(offsetof(struct conn, link) == 0, "conntab entries are struct conn");

struct http_server_stats http_server_stats;
struct api_http_stats api_http_stats;

static struct {
	struct altcp_pcb *listen;
	struct altcp_pcb *listen_tls;	/* HTTPS (https.c), or NULL */
	struct http_server_cfg cfg;
	struct conntab tab;
	bool draining;		/* http_server_drain(): close after each response */
	u16 redirect_port;	/* http.redirect: plain HTTP answers 301 to this port */
} server;

static u64 server_now_ms(void)
{
	return time_ns() / NSEC_PER_MSEC;
}

/* ---- the app's exchange: its end and its memory ---- */

/* Frees the request body and the stream buffer and gives back the budget
 * they (and a copied response) held. */
static void server_app_release(struct conn *c)
{
	kfree(c->req_body);
	c->req_body = NULL;
	c->req_body_len = c->req_body_need = 0;
	kfree(c->sbuf);
	c->sbuf = NULL;
	c->sbuf_off = c->sbuf_len = 0;
	api_buf_give(c->budget);
	c->budget = 0;
}

/* len bytes of the apps' shared buffer budget (api_buf_take), charged to
 * c until server_app_release(); NULL, nothing held, when the budget or the
 * heap refuses (a budget refusal counted). */
static void *server_app_alloc(struct conn *c, size_t len)
{
	void *p;

	if (!api_buf_take(len)) {
		api_http_stats.budget_refusals++;
		return NULL;
	}
	p = kmalloc(len);
	if (!p) {
		api_buf_give(len);
		return NULL;
	}
	c->budget += len;
	return p;
}

/* The exchange ends: the handle goes stale, then on_done hears it. */
static void server_app_end(struct conn *c, bool done)
{
	void (*fn)(vireo_req r, bool done, void *arg) = c->on_done;
	u32 id = c->xid;

	if (!id)
		return;
	c->xid = 0;
	c->on_done = NULL;
	c->on_writable = NULL;
	api_handle_free(id);
	if (!done)
		api_http_stats.lost++;
	if (fn)
		fn((vireo_req){ id }, done, c->done_arg);
}

/* ---- connection lifetime ---- */

static void server_tls_bulk_release(struct conn *c)
{
#if LWIP_ALTCP_TLS
	if (c->bulk) {
		c->bulk = false;
		https_stats.bulk_grants--;
	}
#else
	(void)c;
#endif
}

static void server_conn_free(struct conn *c)
{
	server_tls_bulk_release(c);
	if (c->handshaking) {
		https_stats.handshakes_active--;
		https_stats.failures[c->hs_timed_out ? HTTPS_FAIL_TIMEOUT : HTTPS_FAIL_CLOSED]++;
	}
	if (c->tls)
		https_stats.conns_active--;
	work_cancel(&c->pump_work);
	server_app_end(c, false);
	server_app_release(c);
	conntab_remove(&server.tab, &c->link);
	kfree(c->dyn);
	kfree(c);
	http_server_stats.conns_active--;
}

/* No more callbacks for this pcb: lwIP's defaults take over. */
/* RST and free. Returns ERR_ABRT, which a callback must hand back to lwIP. */
static err_t server_conn_abort(struct conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;

	app_pcb_detach(pcb);
	server_conn_free(c);
	altcp_abort(pcb);
	return ERR_ABRT;
}

/* Window fully reopened first: lwIP answers altcp_close() with a RST when
 * received data was never altcp_recved(). */
static void server_rx_discard(struct conn *c)
{
	u32 n = c->rx_len - c->rx_off;

	if (n)
		altcp_recved(c->link.pcb, (u16_t)n);
	c->rx_off = c->rx_len = 0;
}

/* Hand the pcb to lwIP for an orderly close (FIN after queued data). */
static err_t server_conn_close(struct conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;
	struct tcp_pcb *tpcb = app_tcp_pcb(pcb);

	server_rx_discard(c);
#if LWIP_ALTCP_TLS
	if (c->tls)
		https_close_notify(pcb);
#endif
	app_pcb_detach(pcb);
	server_conn_free(c);
	return app_pcb_close_detached(pcb, tpcb);
}

/* Response bytes not yet acknowledged, written or not. */
static u32 server_outstanding(const struct conn *c)
{
	u32 n = c->inflight;

	if (c->state == C_SEND)
		n += (u32)(c->out_len - c->out_off) + (u32)(c->body_len - c->body_off) +
		     (c->stream ? c->sbuf_len - c->sbuf_off : 0);
	return n;
}

static void server_stall_window_start(struct conn *c, u64 now)
{
	c->t_window = now;
	c->acked_window = 0;
	c->need_window = MIN(server.cfg.send_min_bytes, server_outstanding(c));
}

/* No ACK progress for send_timeout, or at the end of a send_timeout window
 * less acked than the window asked for. */
static bool server_send_stalled(struct conn *c, u64 now)
{
	if (now - c->t_progress >= server.cfg.send_timeout_ms)
		return true;
	if (now - c->t_window < server.cfg.send_timeout_ms)
		return false;
	if (c->acked_window < c->need_window)
		return true;
	server_stall_window_start(c, now);
	return false;
}

/* The last response is written: send FIN after it, keep reading (and
 * dropping) what the peer still sends so it gets the response rather than a
 * RST, and free once the peer closes or linger_ms after everything was acked. */
static err_t server_begin_close(struct conn *c)
{
	server_rx_discard(c);
	if (c->rx_eof)
		return server_conn_close(c);
#if LWIP_ALTCP_TLS
	if (c->tls)
		https_close_notify(c->link.pcb);
#endif
	if (altcp_shutdown(c->link.pcb, 0, 1) != ERR_OK)
		return server_conn_abort(c);
	c->state = C_LINGER;
	if (!c->inflight)
		c->t_progress = server_now_ms();
	return ERR_OK;
}

/* ---- responses ---- */

static void server_count_response(int status)
{
	if (status >= 100 && status <= 599)
		http_server_stats.responses[status / 100]++;
}

static void server_start_send(struct conn *c)
{
	c->state = C_SEND;
	c->out_off = 0;
	c->body_off = 0;
	if (!c->inflight) {
		c->t_progress = server_now_ms();
		server_stall_window_start(c, c->t_progress);
	}
}

/* A whole canned error response into out[]; closes afterwards. */
static void server_respond_error(struct conn *c, int status, bool head_only)
{
	size_t n = http_error_response(c->out, sizeof c->out, status, false, head_only);

	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->stream = false;
	c->close_after = true;
	server_count_response(status);
	server_start_send(c);
}

/* The same with extra header lines (a route's Allow), closing afterwards. */
static void server_respond_error_extra(struct conn *c, int status, bool head_only, const char *extra)
{
	size_t body = http_error_body(NULL, 0, status);
	size_t n = http_response_head(c->out, sizeof c->out, status, "text/html; charset=utf-8", body, false,
				      extra);

	if (!n || !body) {
		server_respond_error(c, status, head_only);
		return;
	}
	if (!head_only)
		n += http_error_body(c->out + n, sizeof c->out - n, status);
	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->stream = false;
	c->close_after = true;
	server_count_response(status);
	server_start_send(c);
}

static bool server_path_is(const struct http_req_parser *p, const char *lit)
{
	size_t i;

	for (i = 0; i < p->path_len && lit[i]; i++)
		if (p->path[i] != lit[i])
			return false;
	return i == p->path_len && lit[i] == '\0';
}

/* Generate /metrics into a fresh buffer: size it with a counting pass first,
 * with some slack for counters that grow a digit in between. */
static int server_make_metrics(struct conn *c)
{
	struct metrics_buf b;
	size_t size;

	metrics_buf_init(&b, NULL, 0);
	metrics_write_all(&b);
	size = MIN(b.len + 256, (size_t)HTTP_METRICS_MAX);
	c->dyn = kmalloc(size);
	if (!c->dyn)
		return -ENOMEM;
	metrics_buf_init(&b, c->dyn, size);
	metrics_write_all(&b);
	if (b.overflow)
		http_server_stats.metrics_truncated++;
	c->body = (const u8 *)c->dyn;
	c->body_len = b.len;
	c->body_copy = true;
	return 0;
}

/* "Location: https://host[:port]/path\r\n" for the HTTPS redirect: the
 * request's Host without its port (else the address the connection came
 * in on), https= unless 443, and the decoded path percent-encoded again
 * (it may hold any byte). A path that does not fit sends to "/". The
 * query is not kept (the parser drops it). */
/* A letter, a digit, or one of other's characters. */
static bool server_alnum_or(u8 ch, const char *other)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return true;
	for (const char *o = other; *o; o++)
		if (ch == (u8)*o)
			return true;
	return false;
}

/* Left as they are in a URL path (RFC 3986 pchar without '%'). */
static bool server_url_char(u8 ch)
{
	return server_alnum_or(ch, "/-._~!$&'()*+,;=:@");
}

static const char *server_location(struct conn *c, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char scheme[] = "Location: https://";
	const struct http_req_parser *p = &c->parser;
	char local[IPADDR_STRLEN_MAX + 2];
	size_t n, hlen = 0, i, start;
	const char *h = p->host;

	if (h) {
		if (h[0] == '[') {
			while (h[hlen] && h[hlen] != ']')
				hlen++;
			hlen += h[hlen] == ']';
		} else {
			while (h[hlen] && h[hlen] != ':')
				hlen++;
		}
	}
	/* No Host (HTTP/1.0), an empty one or one too long for the line:
	 * the address the request came in on. */
	if (!hlen || sizeof scheme + hlen + sizeof ":65535/\r\n" > size) {
		const ip_addr_t *a = altcp_get_ip(c->link.pcb, 1);

		local[0] = '[';
		ipaddr_ntoa_r(a, local + 1, sizeof local - 2);
		hlen = __builtin_strlen(local + 1);
		if (IP_IS_V6(a)) {
			local[++hlen] = ']';
			h = local;
			hlen++;
		} else {
			h = local + 1;
		}
	}
	n = 0;
	for (i = 0; scheme[i]; i++)
		buf[n++] = scheme[i];
	for (i = 0; i < hlen; i++)
		buf[n++] = h[i];
	if (server.redirect_port != 443) {
		char digits[6];
		u32 port = server.redirect_port, nd = 0;

		do {
			digits[nd++] = (char)('0' + port % 10);
			port /= 10;
		} while (port);
		buf[n++] = ':';
		while (nd)
			buf[n++] = digits[--nd];
	}
	start = n;
	for (i = 0; i < p->path_len && n + 6 < size; i++) {
		u8 ch = (u8)p->path[i];

		if (server_url_char(ch)) {
			buf[n++] = (char)ch;
		} else {
			buf[n++] = '%';
			buf[n++] = hex[ch >> 4];
			buf[n++] = hex[ch & 15];
		}
	}
	if (i < p->path_len) {
		n = start;	/* the path does not fit: the site's root */
		buf[n++] = '/';
	}
	buf[n++] = '\r';
	buf[n++] = '\n';
	buf[n] = '\0';
	return buf;
}

/* ---- the apps' routes ---- */

static unsigned server_method_bit(enum http_method m)
{
	switch (m) {
	case HTTP_METHOD_GET: return VIREO_GET;
	case HTTP_METHOD_HEAD: return VIREO_HEAD;
	case HTTP_METHOD_POST: return VIREO_POST;
	case HTTP_METHOD_PUT: return VIREO_PUT;
	case HTTP_METHOD_DELETE: return VIREO_DELETE;
	case HTTP_METHOD_PATCH: return VIREO_PATCH;
	case HTTP_METHOD_OPTIONS: return VIREO_OPTIONS;
	default: return 0;
	}
}

/* Hand the request (head and body read) to its route's handler. It may
 * answer during the call (the state is SEND afterwards) or later. */
static void server_app_dispatch(struct conn *c)
{
	c->xid = api_handle_new(API_H_REQ, c);
	if (!c->xid) {
		server_app_release(c);
		server_respond_error(c, 503, c->parser.method == HTTP_METHOD_HEAD);
		return;
	}
	c->state = C_APP;
	c->t_app = server_now_ms();
	c->stream = c->stream_ended = c->chunked = c->want_writable = false;
	c->close_after = false;
	c->stream_len = c->stream_taken = 0;
	c->xhdr_len = 0;
	c->xhdr[0] = '\0';
	c->on_writable = NULL;
	c->on_done = NULL;
	api_http_stats.requests++;
	c->in_handler = true;
	c->route->r.handler((vireo_req){ c->xid }, c->route->r.arg);
	c->in_handler = false;
}

/* A request for an app's route: the method and the body checked, then
 * the body read (BODY) or the handler called. */
static void server_app_request(struct conn *c, const struct api_route *rt)
{
	const struct http_req_parser *p = &c->parser;
	bool head_only = p->method == HTTP_METHOD_HEAD;
	unsigned m = server_method_bit(p->method);
	char allow[96];

	if (m)
		rt = api_route_for_method(rt, m);
	if (!m || !api_route_allows(rt, m)) {
		api_http_stats.method_refusals++;
		server_respond_error_extra(c, 405, head_only, api_route_allow_header(rt, allow, sizeof allow));
		return;
	}
	if (p->content_length > rt->r.max_body) {
		api_http_stats.body_too_large++;
		server_respond_error(c, 413, head_only);
		return;
	}
	c->route = rt;
	if (!p->content_length) {
		server_app_dispatch(c);
		return;
	}
	c->req_body = server_app_alloc(c, (size_t)p->content_length);
	if (!c->req_body) {
		server_respond_error(c, 503, head_only);
		return;
	}
	c->req_body_need = (u32)p->content_length;
	c->req_body_len = 0;
	c->state = C_BODY;
}

/* Set up the response to the request the parser just completed. */
static void server_respond(struct conn *c)
{
	const struct http_req_parser *p = &c->parser;
	bool head_only = p->method == HTTP_METHOD_HEAD;
	bool keep = p->keep_alive && !server.draining;
	const struct api_route *rt;
	const char *type, *extra;
	char line301[LOCATION_MAX];
	int status = 200;
	size_t n;

	c->body = NULL;
	c->body_len = 0;
	c->body_copy = false;
	c->stream = false;
	if (server.redirect_port && !c->tls && !server_path_is(p, "/healthz")) {
		status = 301;
		type = NULL;
		extra = server_location(c, line301, sizeof line301);
	} else if (server_path_is(p, "/healthz")) {
		type = TYPE_TEXT;
		extra = NO_STORE;
		c->body = (const u8 *)"ok\n";
		c->body_len = 3;
	} else if (server_path_is(p, "/metrics")) {
		if (server_make_metrics(c)) {
			server_respond_error(c, 503, head_only);
			return;
		}
		type = METRICS_CONTENT_TYPE;
		extra = NO_STORE;
	} else if ((rt = api_route_match(p->path)) != NULL) {
		server_app_request(c, rt);
		return;
	} else {
		n = http_error_response(c->out, sizeof c->out, 404, keep, head_only);
		c->out_len = (u16)n;
		c->close_after = !keep;
		server_count_response(404);
		server_start_send(c);
		return;
	}

	n = http_response_head(c->out, sizeof c->out, status, type, c->body_len, keep, extra);
	if (!n) {
		/* Cannot happen with the types and tags mksite emits. */
		server_respond_error(c, 500, head_only);
		return;
	}
	c->out_len = (u16)n;
	if (head_only || status == 301)
		c->body_len = 0;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
}

#if LWIP_ALTCP_TLS
/* How many more bytes of one record (plaintext) a TLS connection may write
 * now: what its TCP send queue holds is counted encrypted, framing included,
 * against HTTP_COPY_INFLIGHT, or HTTPS_BULK_INFLIGHT with a bulk grant,
 * taken here when more is left than the small bound lets through. */
static size_t server_tls_room(struct conn *c, size_t left)
{
	struct tcp_pcb *tpcb = app_tcp_pcb(c->link.pcb);
	/* snd_buf itself: tcp_sndbuf() stops at 65,535, below TCP_SND_BUF */
	u32 queued = (u32)TCP_SND_BUF - MIN((u32)tpcb->snd_buf, (u32)TCP_SND_BUF);
	u32 cap = HTTP_COPY_INFLIGHT;

	if (!c->bulk && queued + left + TLS_RECORD_FRAMING_MAX > HTTP_COPY_INFLIGHT) {
		if (https_stats.bulk_grants < HTTPS_BULK_MAX) {
			c->bulk = true;
			if (++https_stats.bulk_grants > https_stats.bulk_peak)
				https_stats.bulk_peak = https_stats.bulk_grants;
		} else {
			https_stats.bulk_refused++;
		}
	}
	if (c->bulk)
		cap = HTTPS_BULK_INFLIGHT;
	if (queued + TLS_RECORD_FRAMING_MAX >= cap)
		return 0;
	return cap - queued - TLS_RECORD_FRAMING_MAX;
}
#endif

/* Hand as much of the response to lwIP as it takes now. */
static err_t server_write_some(struct conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;
	bool wrote = false;
	err_t err;

	for (;;) {
		const void *src;
		size_t left, n;
		u8_t flags;

		if (c->out_off < c->out_len) {
			src = c->out + c->out_off;
			left = c->out_len - c->out_off;
			flags = TCP_WRITE_FLAG_COPY;
		} else if (c->body_off < c->body_len) {
			src = c->body + c->body_off;
			left = c->body_len - c->body_off;
			flags = c->body_copy ? TCP_WRITE_FLAG_COPY : 0;
		} else if (c->stream && c->sbuf_off < c->sbuf_len) {
			src = c->sbuf + c->sbuf_off;
			left = c->sbuf_len - c->sbuf_off;
			flags = TCP_WRITE_FLAG_COPY;
		} else {
			break;
		}
		if (c->tls)
			flags = TCP_WRITE_FLAG_COPY;	/* altcp_tls copies: count it so */
		n = MIN(left, (size_t)altcp_sndbuf(pcb));
#if LWIP_ALTCP_TLS
		if (c->tls)
			n = MIN(n, (size_t)https_write_max(pcb));
#endif
#if LWIP_ALTCP_TLS
		if (c->tls)
			n = MIN(n, server_tls_room(c, left));
		else
#endif
		if (flags & TCP_WRITE_FLAG_COPY)
			n = c->inflight < HTTP_COPY_INFLIGHT ?
			    MIN(n, (size_t)(HTTP_COPY_INFLIGHT - c->inflight)) : 0;
		if (n == 0)
			break;
		if (n < left && !(flags & TCP_WRITE_FLAG_COPY))
			flags |= TCP_WRITE_FLAG_MORE;
		/* A zero-copy body larger than TCP_SND_BUF asks once, at its
		 * first write, for the bulk send buffer (lwipopts.h
		 * VIREO_SND_BULK_BUF): its queue costs headers, not payload. */
		if (!(flags & TCP_WRITE_FLAG_COPY) && c->body_off == 0 && c->body_len > TCP_SND_BUF &&
		    c->out_off == c->out_len)
			rxmem_snd_grant(app_tcp_pcb(pcb));
		err = altcp_write(pcb, src, (u16_t)n, flags);
		if (err == ERR_MEM)
			break;	/* queue full or no memory: sent or poll retries */
		if (err != ERR_OK)
			return server_conn_abort(c);
		if (c->out_off < c->out_len)
			c->out_off += (u16)n;
		else if (c->body_off < c->body_len)
			c->body_off += n;
		else
			c->sbuf_off += (u32)n;
		c->inflight += (u32)n;
		http_server_stats.tx_bytes += n;
		wrote = true;
	}
	if (wrote)
		altcp_output(pcb);	/* on failure lwIP retries from its timer */
	else if (!c->inflight)
		server_tls_bulk_release(c);	/* nothing went: the grant is for bytes in flight */
	return ERR_OK;
}

/*
 * Move the connection forward as far as it goes: write the response, then
 * parse the next request from rx[] and answer it, and so on, so pipelined
 * requests are answered in order. Callbacks return what this returns and
 * must not touch c afterwards: it may be freed.
 */
static err_t server_pump(struct conn *c)
{
	for (;;) {
		int r;
		size_t used;

		if (c->state == C_SEND) {
			if (server_write_some(c) == ERR_ABRT)
				return ERR_ABRT;
			if (c->out_off < c->out_len || c->body_off < c->body_len)
				return ERR_OK;	/* resumes from server_on_sent() */
			if (c->stream && (c->sbuf_off < c->sbuf_len || !c->stream_ended)) {
				/* Drained what the app gave: ask for more. */
				if (c->want_writable && c->on_writable && c->xid && !c->stream_ended &&
				    c->sbuf_len - c->sbuf_off <= VIREO_RESP_STREAM_BUF / 2) {
					c->want_writable = false;
					c->on_writable((vireo_req){ c->xid }, c->writable_arg);
					if (c->sbuf_off < c->sbuf_len || c->stream_ended)
						continue;
				}
				return ERR_OK;
			}
			kfree(c->dyn);
			c->dyn = NULL;
			server_app_end(c, true);
			server_app_release(c);
			c->stream = false;
			if (c->close_after || server.draining)
				return server_begin_close(c);
			c->state = C_READ;
			c->served = true;
			c->head_started = false;
			c->t_wait = server_now_ms();
			http_parser_reset(&c->parser);
			continue;
		}
		if (c->state == C_BODY) {
			u32 n = MIN(c->rx_len - c->rx_off, c->req_body_need - c->req_body_len);

			if (n) {
				__builtin_memcpy(c->req_body + c->req_body_len, c->rx + c->rx_off, n);
				c->req_body_len += n;
				c->rx_off += n;
				altcp_recved(c->link.pcb, (u16_t)n);
			}
			if (c->req_body_len == c->req_body_need) {
				server_app_dispatch(c);
				continue;
			}
			if (c->rx_off == c->rx_len) {
				c->rx_off = c->rx_len = 0;
				if (c->rx_eof)
					return server_conn_close(c);	/* the body will not come */
			}
			return ERR_OK;
		}
		if (c->state != C_READ)
			return ERR_OK;

		if (c->rx_off == c->rx_len) {
			c->rx_off = c->rx_len = 0;
			if (c->rx_eof)
				return server_conn_close(c);	/* nothing more will come */
			return ERR_OK;
		}
		if (!c->head_started) {
			c->head_started = true;
			c->t_head = server_now_ms();
		}
		r = http_parse(&c->parser, c->rx + c->rx_off, c->rx_len - c->rx_off, &used);
		if (used) {
			c->rx_off += (u32)used;
			altcp_recved(c->link.pcb, (u16_t)used);
		}
		if (r == HTTP_NEED_MORE)
			continue;
		http_server_stats.requests++;
		if (r == HTTP_DONE)
			server_respond(c);
		else
			server_respond_error(c, c->parser.status, false);
	}
}

/* The connection's pump_work: an API call set something up. */
static void server_pump_work(void *arg)
{
	server_pump(arg);
}

/* ---- the application API's exchange calls (vireo/http.h) ---- */

/* Something to write: pump from the loop, unless the handler is running
 * inline (server_respond()'s caller pumps when it returns). */
static void server_kick(struct conn *c)
{
	if (!c->in_handler)
		work_queue(&c->pump_work);
}

/* The live exchange of r, or NULL. */
static struct conn *server_xc(vireo_req r)
{
	return api_handle_get(API_H_REQ, r.id);
}

bool vireo_req_live(vireo_req r)
{
	return server_xc(r) != NULL;
}

enum vireo_method vireo_req_method(vireo_req r)
{
	struct conn *c = server_xc(r);

	return c ? (enum vireo_method)server_method_bit(c->parser.method) : (enum vireo_method)0;
}

const char *vireo_req_path(vireo_req r)
{
	struct conn *c = server_xc(r);

	return c ? c->parser.path : "";
}

const char *vireo_req_subpath(vireo_req r)
{
	struct conn *c = server_xc(r);

	if (!c || !c->route->r.prefix)
		return "";
	return c->parser.path + MIN(c->route->path_len, c->parser.path_len);
}

const char *vireo_req_query(vireo_req r)
{
	struct conn *c = server_xc(r);

	return c && c->parser.query ? c->parser.query : "";
}

int vireo_req_query_param(vireo_req r, const char *name, char *buf, size_t size)
{
	struct conn *c = server_xc(r);

	if (!c) {
		if (buf && size)
			buf[0] = '\0';
		return -EPIPE;
	}
	if (!name || !buf || !size) {
		api_misuse("vireo_req_query_param: no name or buffer: refused");
		return -EINVAL;
	}
	return http_query_param(c->parser.query, name, buf, size);
}

const char *vireo_req_header(vireo_req r, const char *name)
{
	struct conn *c = server_xc(r);

	return c && name ? http_header(&c->parser, name) : NULL;
}

const void *vireo_req_body(vireo_req r, size_t *len)
{
	struct conn *c = server_xc(r);
	size_t n = c && c->req_body ? c->req_body_len : 0;

	if (len)
		*len = n;
	return n ? c->req_body : NULL;
}

int vireo_req_peer(vireo_req r, struct vireo_addr *a)
{
	struct conn *c = server_xc(r);

	if (!c)
		return -EPIPE;
	api_addr_of(altcp_get_ip(c->link.pcb, 0), app_tcp_pcb(c->link.pcb)->remote_port, a);
	return 0;
}

bool vireo_req_tls(vireo_req r)
{
	struct conn *c = server_xc(r);

	return c && c->tls;
}

bool vireo_req_etag_match(vireo_req r, const char *etag)
{
	struct conn *c = server_xc(r);

	return c && http_etag_match(c->parser.if_none_match, etag);
}

/* mtime as a Last-Modified may give it: never later than now (RFC 9110
 * 8.8.2.1); 0 while the clock is not set or without a time. */
static u64 server_lm(u64 mtime)
{
	u64 now;

	if (!mtime || !wallclock_now(&now))
		return 0;
	return MIN(mtime, now / NSEC_PER_SEC);
}

u64 vireo_resp_last_modified(vireo_req r, u64 mtime)
{
	char date[32];
	u64 lm = server_lm(mtime);

	if (!lm || !wallclock_http_date(lm, date, sizeof date) || vireo_resp_header(r, "Last-Modified", date) < 0)
		return 0;
	return lm;
}

/* If-None-Match decides when present; otherwise If-Modified-Since (RFC
 * 9110 13.1.3, 13.2.2), where a date we cannot read is no condition. */
static bool server_not_modified(const struct conn *c, const char *etag, u64 lm)
{
	u64 since;

	if (c->parser.if_none_match)
		return etag && http_etag_match(c->parser.if_none_match, etag);
	return lm && c->parser.if_modified_since && wallclock_parse_http_date(c->parser.if_modified_since, &since) &&
	       lm <= since;
}

bool vireo_req_not_modified(vireo_req r, const char *etag, u64 mtime)
{
	struct conn *c = server_xc(r);

	return c && server_not_modified(c, etag, server_lm(mtime));
}

/* An HTTP token character (RFC 9110 5.6.2 tchar). */
static bool server_tchar(u8 ch)
{
	return server_alnum_or(ch, "!#$%&'*+-.^_`|~");
}

static bool server_name_is(const char *name, const char *lit)
{
	for (; *name && *lit; name++, lit++) {
		char a = *name >= 'A' && *name <= 'Z' ? (char)(*name + 32) : *name;

		if (a != *lit)
			return false;
	}
	return *name == *lit;
}

/* The exchange of r waiting for its answer, or NULL after a refusal
 * (*err says which, logged for misuse). */
static struct conn *server_xc_unanswered(vireo_req r, const char *fn, int *err)
{
	struct conn *c = server_xc(r);

	if (!c) {
		*err = -EPIPE;
		return NULL;
	}
	if (c->state != C_APP) {
		api_misuse("%s: the response has started already: refused", fn);
		*err = -EALREADY;
		return NULL;
	}
	return c;
}

int vireo_resp_header(vireo_req r, const char *name, const char *value)
{
	static const char *const runtime[] = { "content-length", "transfer-encoding", "connection", "server",
					       "date" };
	size_t nl = 0, vl = 0, i;
	struct conn *c;
	int err;

	c = server_xc_unanswered(r, "vireo_resp_header", &err);
	if (!c)
		return err;
	if (!name || !value) {
		api_misuse("vireo_resp_header: no name or value: refused");
		return -EINVAL;
	}
	for (nl = 0; name[nl]; nl++)
		if (!server_tchar((u8)name[nl]) || nl > VIREO_RESP_HEADERS_MAX)
			break;
	for (i = 0; i < ARRAY_SIZE(runtime); i++)
		if (server_name_is(name, runtime[i]))
			nl = 0;
	for (vl = 0; value[vl] && vl <= VIREO_RESP_HEADERS_MAX; vl++)
		if (((u8)value[vl] < 0x20 && value[vl] != '\t') || value[vl] == 0x7f)
			break;
	if (!nl || name[nl] || value[vl]) {
		api_misuse("vireo_resp_header %.32s: not a token, a runtime header, or a bad value: refused", name);
		return -EINVAL;
	}
	if (c->xhdr_len + nl + 2 + vl + 2 > VIREO_RESP_HEADERS_MAX) {
		api_misuse("vireo_resp_header %.32s: over %u bytes of headers: refused", name,
			   VIREO_RESP_HEADERS_MAX);
		return -ENOSPC;
	}
	__builtin_memcpy(c->xhdr + c->xhdr_len, name, nl);
	c->xhdr_len += (u16)nl;
	c->xhdr[c->xhdr_len++] = ':';
	c->xhdr[c->xhdr_len++] = ' ';
	__builtin_memcpy(c->xhdr + c->xhdr_len, value, vl);
	c->xhdr_len += (u16)vl;
	c->xhdr[c->xhdr_len++] = '\r';
	c->xhdr[c->xhdr_len++] = '\n';
	c->xhdr[c->xhdr_len] = '\0';
	return 0;
}

/* The head into out[] and SEND; the pump is queued. length: the
 * Content-Length, or NULL for none. */
static int server_app_head(struct conn *c, int status, const char *type, const u64 *length, const char *te)
{
	char extra[VIREO_RESP_HEADERS_MAX + 32];
	bool keep = c->parser.keep_alive && !server.draining && !c->close_after;
	size_t n = c->xhdr_len, i;

	__builtin_memcpy(extra, c->xhdr, n);
	for (i = 0; te && te[i]; i++)
		extra[n++] = te[i];
	extra[n] = '\0';
	n = http_response_head_len(c->out, sizeof c->out, status, type, length, keep, extra);
	if (!n) {
		api_misuse("vireo_resp: status %d with its headers does not fit: 500 sent", status);
		server_respond_error(c, 500, c->parser.method == HTTP_METHOD_HEAD);
		server_kick(c);
		return -EINVAL;
	}
	c->out_len = (u16)n;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
	server_kick(c);
	return 0;
}

static bool server_status_ok(int status, const char *fn)
{
	if (status < 200 || status > 599) {
		api_misuse("%s: status %d: refused", fn, status);
		return false;
	}
	return true;
}

static int server_app_send(vireo_req r, int status, const char *type, const void *body, size_t len, bool copy)
{
	const char *fn = copy ? "vireo_resp_send" : "vireo_resp_send_static";
	struct conn *c;
	bool head_only;
	int err;

	c = server_xc_unanswered(r, fn, &err);
	if (!c)
		return err;
	head_only = c->parser.method == HTTP_METHOD_HEAD || status == 304;
	if (!server_status_ok(status, fn))
		return -EINVAL;
	if ((len && !body) || (status == 204 && len)) {
		api_misuse("%s: %s: refused", fn, len && !body ? "a length without a body" : "204 has no body");
		return -EINVAL;
	}
	c->body = body;
	c->body_len = len;
	c->body_copy = false;
	if (copy && len && !head_only) {
		c->dyn = server_app_alloc(c, len);
		if (!c->dyn)
			return -ENOMEM;
		__builtin_memcpy(c->dyn, body, len);
		c->body = (const u8 *)c->dyn;
		c->body_copy = true;
	}
	/* 304: Content-Length stays the 200's (RFC 9110 8.6), no body. */
	err = server_app_head(c, status, status == 304 ? NULL : type, &(u64){ len }, NULL);
	if (head_only)
		c->body_len = 0;
	return err;
}

int vireo_resp_send(vireo_req r, int status, const char *type, const void *body, size_t len)
{
	return server_app_send(r, status, type, body, len, true);
}

int vireo_resp_send_static(vireo_req r, int status, const char *type, const void *body, size_t len)
{
	return server_app_send(r, status, type, body, len, false);
}

/* "Last-Modified: <date>\r\n" for lm (not 0) and its length; one line is
 * kept, since the baked files share the build's time. 0 if the date does
 * not format. */
static size_t server_lm_line(u64 lm, const char **line)
{
	static struct {
		u64 lm;
		size_t len;
		char line[48];
	} k;
	size_t n;

	if (lm != k.lm) {
		k.lm = lm;
		k.len = 0;
		__builtin_memcpy(k.line, "Last-Modified: ", 15);
		n = wallclock_http_date(lm, k.line + 15, sizeof k.line - 17);
		if (n) {
			k.line[15 + n] = '\r';
			k.line[16 + n] = '\n';
			k.len = 17 + n;
		}
	}
	*line = k.line;
	return k.len;
}

int vireo_resp_send_file(vireo_req r, const struct vireo_file *vf)
{
	static const char st200[] = "HTTP/1.1 200 OK\r\nServer: vireo\r\n";
	static const char st304[] = "HTTP/1.1 304 Not Modified\r\nServer: vireo\r\n";
	static const char ka[] = "Connection: keep-alive\r\n", cl[] = "Connection: close\r\n";
	const struct site_file *f;
	const struct site_head *h;
	struct site_head made;
	const char *head, *lm_line = NULL;
	char date[40], lines[SITE_LINES_MAX];
	size_t dl, hl, ll = 0, total;
	bool keep, nm;
	struct conn *c;
	u64 lm;
	char *p;
	int err;

	c = server_xc_unanswered(r, "vireo_resp_send_file", &err);
	if (!c)
		return err;
	f = vf ? site_owned(vf->priv, &h) : NULL;
	if (!f) {
		api_misuse("vireo_resp_send_file: not a file vireo_file_find() found: refused");
		return -EINVAL;
	}
	if (!h) {
		/* No memory for the table's lines: the same bytes, made now. */
		if (site_head_lines(f, &made, lines, sizeof lines) > sizeof lines) {
			api_misuse("vireo_resp_send_file: %.64s: its head lines do not fit: refused", f->path);
			return -EINVAL;
		}
		h = &made;
	}
	lm = server_lm(f->mtime);
	nm = server_not_modified(c, f->etag, lm);
	head = h->head + (nm ? h->cl_off : 0);
	hl = h->head_len - (nm ? h->cl_off : 0);
	if (lm)
		ll = server_lm_line(lm, &lm_line);
	dl = http_date(date, sizeof date);
	keep = c->parser.keep_alive && !server.draining && !c->close_after;
	total = (nm ? sizeof st304 : sizeof st200) - 1 + (dl ? dl + 8 : 0) + hl + (keep ? sizeof ka : sizeof cl) - 1 +
		c->xhdr_len + h->etag_line_len + ll + 2;
	if (total > sizeof c->out) {
		api_misuse("vireo_resp_send_file: %.64s with its headers does not fit: 500 sent", f->path);
		server_respond_error(c, 500, c->parser.method == HTTP_METHOD_HEAD);
		server_kick(c);
		return -EINVAL;
	}
	/* The order of http_response_head(): status, Server, Date, Content-Type,
	 * Content-Length, Connection, then the extra lines. */
	p = nm ? outbuf_put(c->out, st304, sizeof st304 - 1) : outbuf_put(c->out, st200, sizeof st200 - 1);
	if (dl) {
		p = outbuf_put(p, "Date: ", 6);
		p = outbuf_put(p, date, dl);
		p = outbuf_put(p, "\r\n", 2);
	}
	p = outbuf_put(p, head, hl);
	p = keep ? outbuf_put(p, ka, sizeof ka - 1) : outbuf_put(p, cl, sizeof cl - 1);
	p = outbuf_put(p, c->xhdr, c->xhdr_len);
	p = outbuf_put(p, h->etag_line, h->etag_line_len);
	p = outbuf_put(p, lm_line, ll);
	p = outbuf_put(p, "\r\n", 2);
	c->out_len = (u16)(p - c->out);
	c->body = f->data;
	c->body_len = nm || c->parser.method == HTTP_METHOD_HEAD ? 0 : f->len;
	c->body_copy = false;
	c->close_after = !keep;
	server_count_response(nm ? 304 : 200);
	server_start_send(c);
	server_kick(c);
	return 0;
}

int vireo_resp_error(vireo_req r, int status)
{
	bool head_only, keep;
	struct conn *c;
	size_t n;
	int err;

	c = server_xc_unanswered(r, "vireo_resp_error", &err);
	if (!c)
		return err;
	if (status < 400 || status > 599 || !http_error_body(NULL, 0, status)) {
		api_misuse("vireo_resp_error: status %d has no canned page: refused", status);
		return -EINVAL;
	}
	head_only = c->parser.method == HTTP_METHOD_HEAD;
	keep = status < 500 && c->parser.keep_alive && !server.draining;
	n = http_error_response(c->out, sizeof c->out, status, keep, head_only);
	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
	server_kick(c);
	return 0;
}

int vireo_resp_start(vireo_req r, int status, const char *type, u64 length)
{
	struct conn *c;
	bool head_only;
	int err;

	c = server_xc_unanswered(r, "vireo_resp_start", &err);
	if (!c)
		return err;
	if (!server_status_ok(status, "vireo_resp_start"))
		return -EINVAL;
	if ((status == 204 || status == 304) && length) {
		api_misuse("vireo_resp_start: %d has no body: refused", status);
		return -EINVAL;
	}
	head_only = c->parser.method == HTTP_METHOD_HEAD || status == 204 || status == 304;
	if (!head_only) {
		c->sbuf = server_app_alloc(c, VIREO_RESP_STREAM_BUF);
		if (!c->sbuf)
			return -ENOMEM;
	}
	c->sbuf_off = c->sbuf_len = 0;
	c->stream_len = length;
	c->stream_taken = 0;
	c->stream_ended = false;
	c->chunked = false;
	c->body = NULL;
	c->body_len = 0;
	c->body_copy = false;
	if (length == VIREO_LENGTH_UNKNOWN && !head_only) {
		if (c->parser.version_minor >= 1)
			c->chunked = true;
		else
			c->close_after = true;	/* HTTP/1.0: the end is our FIN */
	}
	err = server_app_head(c, status, type, length == VIREO_LENGTH_UNKNOWN ? NULL : &length,
			      c->chunked ? "Transfer-Encoding: chunked\r\n" : NULL);
	if (!err)
		c->stream = true;
	return err;
}

/* The stream of r, started and not ended, or NULL after a refusal. */
static struct conn *server_xc_stream(vireo_req r, const char *fn, int *err)
{
	struct conn *c = server_xc(r);

	if (!c) {
		*err = -EPIPE;
		return NULL;
	}
	if (c->state != C_SEND || !c->stream) {
		api_misuse("%s: no vireo_resp_start() before: refused", fn);
		*err = -EINVAL;
		return NULL;
	}
	if (c->stream_ended) {
		api_misuse("%s: after vireo_resp_end(): refused", fn);
		*err = -EINVAL;
		return NULL;
	}
	return c;
}

#define CHUNK_TRAILER "0\r\n\r\n"

int vireo_resp_write(vireo_req r, const void *data, size_t len)
{
	struct conn *c;
	size_t room, n, over = 0;
	int err;

	c = server_xc_stream(r, "vireo_resp_write", &err);
	if (!c)
		return err;
	if (len && !data) {
		api_misuse("vireo_resp_write: no data: refused");
		return -EINVAL;
	}
	len = MIN(len, (size_t)0x7fffffff);
	if (c->stream_len != VIREO_LENGTH_UNKNOWN && len > c->stream_len - c->stream_taken) {
		api_misuse("vireo_resp_write: past the declared length %llu: refused",
			   (unsigned long long)c->stream_len);
		return -EINVAL;
	}
	if (!c->sbuf) {		/* HEAD, 204, 304: no body goes out */
		c->stream_taken += len;
		return (int)len;
	}
	if (c->sbuf_off == c->sbuf_len)
		c->sbuf_off = c->sbuf_len = 0;
	else if (c->sbuf_off) {
		__builtin_memmove(c->sbuf, c->sbuf + c->sbuf_off, c->sbuf_len - c->sbuf_off);
		c->sbuf_len -= c->sbuf_off;
		c->sbuf_off = 0;
	}
	room = VIREO_RESP_STREAM_BUF - c->sbuf_len;
	if (c->chunked)
		over = 4 + 2 + 2 + sizeof CHUNK_TRAILER - 1;	/* hex size, CRLF, CRLF; the trailer */
	n = room > over ? MIN(len, room - over) : 0;
	if (n) {
		if (c->chunked)
			c->sbuf_len += (u32)ksnprintf((char *)c->sbuf + c->sbuf_len, 8, "%zx\r\n", n);
		__builtin_memcpy(c->sbuf + c->sbuf_len, data, n);
		c->sbuf_len += (u32)n;
		if (c->chunked) {
			c->sbuf[c->sbuf_len++] = '\r';
			c->sbuf[c->sbuf_len++] = '\n';
		}
		c->stream_taken += n;
		server_kick(c);
	}
	if (n < len)
		c->want_writable = true;
	return (int)n;
}

int vireo_resp_end(vireo_req r)
{
	struct conn *c;
	int err;

	c = server_xc_stream(r, "vireo_resp_end", &err);
	if (!c)
		return err;
	if (c->chunked) {
		__builtin_memcpy(c->sbuf + c->sbuf_len, CHUNK_TRAILER, sizeof CHUNK_TRAILER - 1);
		c->sbuf_len += sizeof CHUNK_TRAILER - 1;
	}
	if (c->stream_len != VIREO_LENGTH_UNKNOWN && c->stream_taken < c->stream_len)
		c->close_after = true;	/* short: the peer must not take it for whole */
	c->stream_ended = true;
	server_kick(c);
	return 0;
}

int vireo_resp_on_writable(vireo_req r, void (*fn)(vireo_req r, void *arg), void *arg)
{
	struct conn *c = server_xc(r);

	if (!c)
		return -EPIPE;
	c->on_writable = fn;
	c->writable_arg = arg;
	return 0;
}

int vireo_req_on_done(vireo_req r, void (*fn)(vireo_req r, bool done, void *arg), void *arg)
{
	struct conn *c = server_xc(r);

	if (!c)
		return -EPIPE;
	c->on_done = fn;
	c->done_arg = arg;
	return 0;
}

/* ---- lwIP callbacks ---- */

static err_t server_on_recv(void *arg, struct altcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct conn *c = arg;
	u32 held, n;

	if (!c)
		return app_recv_stray(pcb, p);
	if (!p) {
		c->rx_eof = true;
		if (c->state == C_LINGER)
			return server_conn_close(c);
		return server_pump(c);
	}
	n = p->tot_len;
	http_server_stats.rx_bytes += n;
	if (c->state == C_LINGER) {
		altcp_recved(pcb, (u16_t)n);
		pbuf_free(p);
		return ERR_OK;
	}
	held = c->rx_len - c->rx_off;
	if (n > sizeof c->rx - held) {
		/* Over TLS, decrypted data is handed up as it is decrypted:
		 * refuse it, altcp_tls keeps it and offers it again (poll). */
		if (c->tls) {
			http_server_stats.rx_bytes -= n;
			return ERR_MEM;
		}
		/* More than the window we granted: cannot happen with lwIP's
		 * window accounting, so treat it as a broken connection. */
		pbuf_free(p);
		return server_conn_abort(c);
	}
	if (c->rx_len + n > sizeof c->rx) {
		__builtin_memmove(c->rx, c->rx + c->rx_off, held);
		c->rx_off = 0;
		c->rx_len = held;
	}
	pbuf_copy_partial(p, c->rx + c->rx_len, (u16_t)n, 0);
	c->rx_len += n;
	pbuf_free(p);
	return server_pump(c);
}

static err_t server_on_sent(void *arg, struct altcp_pcb *pcb, u16_t len)
{
	struct conn *c = arg;

	if (!c)
		return ERR_OK;
	c->inflight -= MIN((u32)len, c->inflight);
	c->acked_window += len;
	c->t_progress = server_now_ms();
	if (!c->inflight)
		server_tls_bulk_release(c);	/* taken again if more is left */
	if (c->state == C_SEND)
		return server_pump(c);
	return ERR_OK;
}

/* The pcb is already gone (RST from the peer, lwIP gave up, or ERR_CLSD
 * after our FIN was acked in LAST_ACK). */
static void server_on_err(void *arg, err_t err)
{
	struct conn *c = arg;

	if (!c)
		return;
	if (err != ERR_CLSD)
		http_server_stats.conns_reset++;
	server_conn_free(c);
}

static err_t server_on_poll(void *arg, struct altcp_pcb *pcb)
{
	struct conn *c = arg;
	const struct http_server_cfg *cfg = &server.cfg;
	u64 now = server_now_ms();

	if (!c) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	switch (c->state) {
	case C_READ:
		/* A response handed to lwIP whole can still be stuck behind a
		 * reader that stopped reading: the send stall applies until it
		 * is acknowledged, whatever the connection does meanwhile. */
		if (c->inflight && server_send_stalled(c, now)) {
			http_server_stats.timeouts_send++;
			return server_conn_abort(c);
		}
		if (c->head_started) {
			if (now - c->t_head < cfg->header_timeout_ms)
				break;
			http_server_stats.timeouts_header++;
			server_respond_error(c, 408, false);
			return server_pump(c);
		}
		if (!c->served && now - c->t_wait >= cfg->header_timeout_ms) {
			http_server_stats.timeouts_header++;
			c->hs_timed_out = c->handshaking;
			return server_conn_close(c);
		}
		if (c->served && now - c->t_wait >= cfg->idle_timeout_ms) {
			http_server_stats.timeouts_idle++;
			return server_conn_close(c);
		}
		break;
	case C_BODY:
		if (c->inflight && server_send_stalled(c, now)) {
			http_server_stats.timeouts_send++;
			return server_conn_abort(c);
		}
		if (now - c->t_head >= cfg->header_timeout_ms) {
			http_server_stats.timeouts_header++;
			server_app_release(c);
			server_respond_error(c, 408, false);
			return server_pump(c);
		}
		break;
	case C_APP:
		if (c->inflight && server_send_stalled(c, now)) {
			http_server_stats.timeouts_send++;
			return server_conn_abort(c);
		}
		if (now - c->t_app >= VIREO_HTTP_DEFER_MS) {
			api_http_stats.deferred_timeouts++;
			server_app_end(c, false);
			server_app_release(c);
			server_respond_error(c, 503, c->parser.method == HTTP_METHOD_HEAD);
			return server_pump(c);
		}
		break;
	case C_SEND:
		if (server_send_stalled(c, now)) {
			http_server_stats.timeouts_send++;
			return server_conn_abort(c);
		}
		return server_pump(c);	/* retry writes that failed for memory */
	case C_LINGER:
		if (c->inflight) {
			if (server_send_stalled(c, now)) {
				http_server_stats.timeouts_send++;
				return server_conn_abort(c);
			}
		} else if (now - c->t_progress >= cfg->linger_ms) {
			return server_conn_close(c);
		}
		break;
	}
	return ERR_OK;
}

/* Waiting for a request, nothing unacknowledged: the cheapest to end. */
static bool server_conn_idle(const struct conntab_conn *l)
{
	const struct conn *c = (const struct conn *)l;

	return c->state == C_READ && !c->head_started && !c->inflight;
}

static void server_conn_evict(struct conntab_conn *l)
{
	server_conn_abort((struct conn *)l);
}

/* Handshakes in progress from src. */
static u32 server_tls_handshakes_from(const struct conntab_src *src)
{
	const struct conntab_conn *l;
	u32 n = 0;

	for (l = server.tab.head; l; l = l->next)
		if (((const struct conn *)l)->handshaking && conntab_src_equal(&l->src, src))
			n++;
	return n;
}

/* All handshake slots taken: the oldest handshake of the source running
 * the most, if that source runs more than mine + 1 (so that evicting
 * evens the shares out, never the other way round); else NULL. At most
 * 64 x 64 source compares, only while the slots are full. */
static struct conn *server_tls_victim(u32 mine)
{
	struct conntab_conn *l;
	struct conn *victim = NULL;
	u32 heavy = 0, n;

	for (l = server.tab.head; l; l = l->next) {
		if (!((struct conn *)l)->handshaking)
			continue;
		n = server_tls_handshakes_from(&l->src);
		if (n > heavy || (n == heavy && victim && conntab_src_equal(&l->src, &victim->link.src))) {
			heavy = n;
			victim = (struct conn *)l;	/* newest first: the last seen is the oldest */
		}
	}
	return heavy > mine + 1 ? victim : NULL;
}

/* HTTPS: the handshake and connection limits (https.h); false to refuse.
 * When every handshake slot is taken, a source below its share evicts
 * the oldest handshake of the heaviest source, as the table does. */
static bool server_tls_admit(struct altcp_pcb *pcb)
{
	struct conntab_src src;
	struct conn *victim;
	u32 mine;

	if (https_stats.conns_active >= HTTPS_MAX_CONNS) {
		https_stats.failures[HTTPS_FAIL_LIMIT]++;
		return false;
	}
	conntab_src_of(altcp_get_ip(pcb, 0), &src);
	mine = server_tls_handshakes_from(&src);
	if (mine >= https_max_handshakes_per_src()) {
		https_stats.failures[HTTPS_FAIL_LIMIT_SOURCE]++;
		return false;
	}
	if (https_stats.handshakes_active >= https_max_handshakes()) {
		victim = server_tls_victim(mine);
		if (!victim) {
			https_stats.failures[HTTPS_FAIL_LIMIT]++;
			return false;
		}
		https_stats.handshakes_evicted++;
		server_conn_abort(victim);
	}
	return true;
}

static err_t server_on_accept(void *arg, struct altcp_pcb *pcb, err_t err)
{
	bool tls = arg == &server.listen_tls;
	enum conntab_verdict v;
	struct conn *c;

	if (err != ERR_OK || !pcb)
		return ERR_VAL;
	if (tls && !server_tls_admit(pcb))
		goto refuse;
	c = (struct conn *)conntab_accept(&server.tab, pcb, sizeof *c, server_conn_idle, server_conn_evict, &v);
	if (v == CONNTAB_REFUSE_SOURCE)
		http_server_stats.conns_refused_source++;
	else if (v == CONNTAB_EVICT)
		http_server_stats.conns_evicted++;	/* not our pcb: nothing to hand back to lwIP */
	if (!c)
		goto refuse;
	c->state = C_READ;
	c->t_wait = server_now_ms();
	c->parser.ext = true;	/* methods and bodies for the apps' routes */
	http_parser_reset(&c->parser);
	work_init(&c->pump_work, server_pump_work, c);
	http_server_stats.conns_accepted++;
	http_server_stats.conns_active++;
	if (tls) {
		c->tls = c->handshaking = true;
		https_stats.conns_active++;
		https_stats.handshakes_active++;
	}

	altcp_arg(pcb, c);
	altcp_recv(pcb, server_on_recv);
	altcp_sent(pcb, server_on_sent);
	altcp_err(pcb, server_on_err);
	altcp_poll(pcb, server_on_poll, POLL_TICKS);
	altcp_nagle_disable(pcb);	/* a response's last segment goes out at once */
	return ERR_OK;

refuse:
	/* Reset at once. Nothing is kept for the refused peer, so a flood
	 * costs no memory (see docs/appliance.md). */
	http_server_stats.conns_refused++;
	altcp_abort(pcb);
	return ERR_ABRT;
}

/* ---- metrics ---- */

__cold static void server_write_metrics(struct metrics_buf *b)
{
	const struct http_server_stats *s = &http_server_stats;
	static const char *const classes[] = { NULL, "1xx", "2xx", "3xx", "4xx", "5xx" };
	size_t i;

	if (!server.listen && !server.draining)
		return;	/* not started, or stopped */
	metrics_simple(b, "vireo_http_requests_total", METRICS_COUNTER,
		       "HTTP requests read (complete heads and malformed ones).", s->requests);
	metrics_family(b, "vireo_http_responses_total", METRICS_COUNTER,
		       "HTTP responses, by status class.");
	for (i = 1; i < ARRAY_SIZE(classes); i++)
		metrics_sample1(b, "vireo_http_responses_total", "code", classes[i],
				s->responses[i]);
	metrics_simple(b, "vireo_http_connections_accepted_total", METRICS_COUNTER,
		       "TCP connections accepted.", s->conns_accepted);
	metrics_simple(b, "vireo_http_connections_refused_total", METRICS_COUNTER,
		       "TCP connections reset on accept (connection limit or no memory).",
		       s->conns_refused);
	metrics_simple(b, "vireo_http_connections_refused_source_total", METRICS_COUNTER,
		       "Of those refused, refused for the per-source limit.", s->conns_refused_source);
	metrics_simple(b, "vireo_http_connections_evicted_total", METRICS_COUNTER,
		       "Connections reset to give a newcomer below its fair share a slot.",
		       s->conns_evicted);
	metrics_simple(b, "vireo_http_connections_reset_total", METRICS_COUNTER,
		       "Connections that ended in an error (peer reset, lwIP abort).", s->conns_reset);
	metrics_simple(b, "vireo_http_connections_active", METRICS_GAUGE,
		       "Connections open now.", s->conns_active);
	metrics_family(b, "vireo_http_timeouts_total", METRICS_COUNTER,
		       "Connections closed by a timeout, by kind.");
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "idle", s->timeouts_idle);
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "header", s->timeouts_header);
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "send", s->timeouts_send);
	metrics_simple(b, "vireo_http_received_bytes_total", METRICS_COUNTER,
		       "Request bytes received.", s->rx_bytes);
	metrics_simple(b, "vireo_http_sent_bytes_total", METRICS_COUNTER,
		       "Response bytes queued for sending.", s->tx_bytes);
	metrics_simple(b, "vireo_http_metrics_truncated_total", METRICS_COUNTER,
		       "/metrics responses cut short by the size limit.", s->metrics_truncated);
}

METRICS_SOURCE(http, server_write_metrics);

/* ---- start and stop ---- */

static u32 server_or_default(u32 v, u32 def)
{
	return v ? v : def;
}

/* Binds pcb (NULL: its allocation failed) to port on every address and
 * listens; *out is the listening pcb. Returns 0 or -ENOMEM/-EIO, pcb closed. */
static int server_listen_on(struct altcp_pcb *pcb, u16 port, struct altcp_pcb **out)
{
	err_t err;

	if (!pcb)
		return -ENOMEM;
	err = altcp_bind(pcb, IP_ANY_TYPE, port);
	if (err != ERR_OK) {
		altcp_close(pcb);
		return -EIO;
	}
	*out = altcp_listen_with_backlog_and_err(pcb, TCP_DEFAULT_LISTEN_BACKLOG, &err);
	if (!*out) {
		altcp_close(pcb);
		return err == ERR_MEM ? -ENOMEM : -EIO;
	}
	return 0;
}

__cold int http_server_start(u16 port, const struct http_server_cfg *cfg)
{
	struct http_server_cfg none = { 0 };
	struct altcp_pcb *lpcb;
	int rc;

	if (server.listen)
		return -EBUSY;
	if (!cfg)
		cfg = &none;
	server.cfg.max_conns = server_or_default(cfg->max_conns, HTTP_SERVER_MAX_CONNS);
	server.cfg.idle_timeout_ms = server_or_default(cfg->idle_timeout_ms, HTTP_SERVER_IDLE_MS);
	server.cfg.header_timeout_ms = server_or_default(cfg->header_timeout_ms, HTTP_SERVER_HEADER_MS);
	server.cfg.send_timeout_ms = server_or_default(cfg->send_timeout_ms, HTTP_SERVER_SEND_MS);
	server.cfg.linger_ms = server_or_default(cfg->linger_ms, HTTP_SERVER_LINGER_MS);
	server.cfg.max_per_src = MIN(server_or_default(cfg->max_per_src, server.cfg.max_conns), server.cfg.max_conns);
	server.cfg.send_min_bytes = server_or_default(cfg->send_min_bytes, HTTP_SERVER_SEND_MIN_BYTES);
	server.tab.max_conns = server.cfg.max_conns;
	server.tab.max_per_src = server.cfg.max_per_src;

	rc = server_listen_on(altcp_tcp_new_ip_type(IPADDR_TYPE_ANY), port, &lpcb);
	if (rc)
		return rc;
	server.listen = lpcb;
	__builtin_memset(&http_server_stats, 0, sizeof http_server_stats);
	altcp_accept(lpcb, server_on_accept);
	return 0;
}

/* A new port for the HTTP listener (cloud metadata's http=): the new one
 * listens before the old one closes, so a refusal leaves HTTP as it was.
 * Connections accepted on the old port go on. */
int http_server_rebind(u16 port)
{
	struct altcp_pcb *lpcb;
	int rc;

	if (!server.listen)
		return -EBUSY;
	rc = server_listen_on(altcp_tcp_new_ip_type(IPADDR_TYPE_ANY), port, &lpcb);
	if (rc)
		return rc;
	altcp_close(server.listen);
	server.listen = lpcb;
	altcp_accept(lpcb, server_on_accept);
	return 0;
}

/* Graceful stop, for power off: see server.h. */
void http_server_drain(u32 *idle_closed, u32 *busy)
{
	struct conn *c, *next;

	*idle_closed = *busy = 0;
	if (!server.listen)
		return;
	altcp_close(server.listen);
	server.listen = NULL;
	if (server.listen_tls)
		altcp_close(server.listen_tls);
	server.listen_tls = NULL;
	server.draining = true;
	for (c = (struct conn *)server.tab.head; c; c = next) {
		next = (struct conn *)c->link.next;
		/* Waiting for a first or next request, no byte of it yet:
		 * idle, unless the last response is still unacknowledged,
		 * which then closes as if it had asked for it. */
		if (c->state == C_READ && !c->head_started && !c->inflight) {
			server_conn_close(c);
			(*idle_closed)++;
			continue;
		}
		(*busy)++;
		if (c->state == C_READ && !c->head_started)
			server_begin_close(c);
	}
}

void http_server_stop(void)
{
	if (!server.listen && !server.draining)
		return;
	if (server.listen)
		altcp_close(server.listen);	/* a listening pcb is freed at once */
	server.listen = NULL;
	if (server.listen_tls)
		altcp_close(server.listen_tls);
	server.listen_tls = NULL;
	server.draining = false;
	while (server.tab.head)
		server_conn_abort((struct conn *)server.tab.head);
}

/* ---- HTTPS (https.c) ---- */

void http_server_set_redirect(u16 https_port)
{
	server.redirect_port = https_port;
}

/* The TLS handshake of the connection whose altcp arg is arg ended (patch
 * 0004's hook, through https.c): it no longer counts as handshaking. */
void http_server_handshake_end(void *arg)
{
	struct conn *c = arg;

	if (c && c->handshaking) {
		c->handshaking = false;
		https_stats.handshakes_active--;
	}
}

#if LWIP_ALTCP_TLS
int http_server_listen_tls(u16 port, struct altcp_tls_config *conf)
{
	struct altcp_pcb *lpcb;
	int rc;

	if (!server.listen || server.listen_tls)
		return -EBUSY;
	rc = server_listen_on(altcp_tls_new(conf, IPADDR_TYPE_ANY), port, &lpcb);
	if (rc)
		return rc;
	server.listen_tls = lpcb;
	altcp_arg(lpcb, &server.listen_tls);
	altcp_accept(lpcb, server_on_accept);
	return 0;
}
#endif
