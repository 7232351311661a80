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
 * net/lwipopts.h: copied bytes (heads, error pages, /metrics) are written only
 * while less than HTTP_COPY_INFLIGHT is unacknowledged, and never with
 * TCP_WRITE_FLAG_MORE, which would make lwIP round each copied pbuf up to a
 * whole MSS (TCP_OVERSIZE) for the next write to fill.
 *
 * Connections are kept in a conntab (net/app/conntab.h): a per-source cap and
 * a fair share of the table when it is full.
 */
#include "kernel/mm.h"
#include "kernel/time.h"
#include "kernel/types.h"
#include "kernel/wallclock.h"
#include "lwip/altcp.h"
#include "net/app/http.h"
#include "net/app/metrics.h"
#include "net/app/server.h"
#include "net/app/site.h"
#include "net/app/tcputil.h"
#include "net/app/conntab.h"
#include "net/app/https.h"
#include "net/lwip_port.h"
#include "lwip/ip_addr.h"
#if LWIP_ALTCP_TLS
#include "lwip/altcp_tls.h"
#endif

enum conn_state { C_READ, C_SEND, C_LINGER };

#define OUT_MAX 512		/* a response head, or a whole error response */
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

	u32 rx_off, rx_len;	/* unparsed bytes are rx[rx_off..rx_len) */
	u8 rx[TCP_WND];
	struct http_req_parser parser;
};

_Static_assert(offsetof(struct conn, link) == 0, "conntab entries are struct conn");

struct http_server_stats http_server_stats;

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

/* ---- connection lifetime ---- */

static void server_conn_free(struct conn *c)
{
	if (c->handshaking) {
		https_stats.handshakes_active--;
		https_stats.failures[c->hs_timed_out ? HTTPS_FAIL_TIMEOUT : HTTPS_FAIL_CLOSED]++;
	}
	if (c->tls)
		https_stats.conns_active--;
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
	if (altcp_close(pcb) != ERR_OK) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	vireo_lwip_orphans_trim(tpcb);	/* pcb is an orphan now: keep within the caps */
	return ERR_OK;
}

/* Response bytes not yet acknowledged, written or not. */
static u32 server_outstanding(const struct conn *c)
{
	u32 n = c->inflight;

	if (c->state == C_SEND)
		n += (u32)(c->out_len - c->out_off) + (u32)(c->body_len - c->body_off);
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
	c->close_after = true;
	server_count_response(status);
	server_start_send(c);
}

/* "Name: value\r\n" into buf, or "" if it does not fit. */
static const char *server_header_line(char *buf, size_t size, const char *name, const char *value)
{
	size_t n = 0;
	const char *s;

	for (s = name; *s && n < size; s++)
		buf[n++] = *s;
	for (s = ": "; *s && n < size; s++)
		buf[n++] = *s;
	for (s = value; *s && n < size; s++)
		buf[n++] = *s;
	for (s = "\r\n"; *s && n < size; s++)
		buf[n++] = *s;
	if (n >= size) {
		buf[0] = '\0';
		return buf;
	}
	buf[n] = '\0';
	return buf;
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
/* Left as they are in a URL path (RFC 3986 pchar without '%'). */
static bool server_url_char(u8 ch)
{
	static const char other[] = "/-._~!$&'()*+,;=:@";

	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return true;
	for (const char *o = other; *o; o++)
		if (ch == (u8)*o)
			return true;
	return false;
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

/* Appends "Last-Modified: <date>\r\n" to the NUL-terminated buf[size]
 * once the clock is set and f has a time (never later than now, RFC 9110
 * 8.8.2.1); returns that time, or 0 (nothing appended). */
static u64 server_last_modified(const struct site_file *f, char *buf, size_t size)
{
	size_t at = __builtin_strlen(buf), n;
	u64 now, lm;

	if (!f->mtime || !wallclock_now(&now) || size - at < 15 + 30 + 2)
		return 0;
	lm = MIN(f->mtime, now / NSEC_PER_SEC);
	__builtin_memcpy(buf + at, "Last-Modified: ", 15);
	n = wallclock_http_date(lm, buf + at + 15, size - at - 15);
	__builtin_memcpy(buf + at + 15 + n, "\r\n", 3);
	return lm;
}

/* If-Modified-Since (RFC 9110 13.1.3), asked only without If-None-Match:
 * a date we cannot read is no condition. */
static bool server_not_modified_since(const struct http_req_parser *p, u64 lm)
{
	u64 since;

	return lm && p->if_modified_since && wallclock_parse_http_date(p->if_modified_since, &since) &&
	       lm <= since;
}

/* Set up the response to the request the parser just completed. */
static void server_respond(struct conn *c)
{
	const struct http_req_parser *p = &c->parser;
	bool head_only = p->method == HTTP_METHOD_HEAD;
	bool keep = p->keep_alive && !server.draining;
	const struct site_file *f;
	const char *type, *extra;
	char line[160], line301[OUT_MAX - 160];
	u64 lm;
	int status = 200;
	size_t n;

	c->body = NULL;
	c->body_len = 0;
	c->body_copy = false;
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
	} else if ((f = site_lookup(p->path)) != NULL) {
		type = f->content_type;
		extra = server_header_line(line, sizeof line, "ETag", f->etag);
		lm = server_last_modified(f, line, sizeof line);
		c->body = f->data;
		c->body_len = f->len;
		if (p->if_none_match ? http_etag_match(p->if_none_match, f->etag) : server_not_modified_since(p, lm)) {
			status = 304;
			type = NULL;	/* Content-Length stays the 200's, RFC 9110 8.6 */
		}
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
	if (head_only || status == 304 || status == 301)
		c->body_len = 0;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
}

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
		if (flags & TCP_WRITE_FLAG_COPY)
			n = c->inflight < HTTP_COPY_INFLIGHT ?
			    MIN(n, (size_t)(HTTP_COPY_INFLIGHT - c->inflight)) : 0;
		if (n == 0)
			break;
		if (n < left && !(flags & TCP_WRITE_FLAG_COPY))
			flags |= TCP_WRITE_FLAG_MORE;
		err = altcp_write(pcb, src, (u16_t)n, flags);
		if (err == ERR_MEM)
			break;	/* queue full or no memory: sent or poll retries */
		if (err != ERR_OK)
			return server_conn_abort(c);
		if (c->out_off < c->out_len)
			c->out_off += (u16)n;
		else
			c->body_off += n;
		c->inflight += (u32)n;
		http_server_stats.tx_bytes += n;
		wrote = true;
	}
	if (wrote)
		altcp_output(pcb);	/* on failure lwIP retries from its timer */
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
			kfree(c->dyn);
			c->dyn = NULL;
			if (c->close_after || server.draining)
				return server_begin_close(c);
			c->state = C_READ;
			c->served = true;
			c->head_started = false;
			c->t_wait = server_now_ms();
			http_parser_reset(&c->parser);
			continue;
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

/* ---- lwIP callbacks ---- */

static err_t server_on_recv(void *arg, struct altcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct conn *c = arg;
	u32 held, n;

	if (!c) {
		if (p) {
			altcp_recved(pcb, p->tot_len);
			pbuf_free(p);
		}
		return ERR_OK;
	}
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
	http_parser_reset(&c->parser);
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

static void server_write_metrics(struct metrics_buf *b)
{
	const struct http_server_stats *s = &http_server_stats;
	static const char *const classes[] = { NULL, "1xx", "2xx", "3xx", "4xx", "5xx" };
	size_t i;

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

static struct metrics_source server_metrics_source = { "http", server_write_metrics, NULL };

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

int http_server_start(u16 port, const struct http_server_cfg *cfg)
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
	metrics_register(&server_metrics_source);
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
	metrics_unregister(&server_metrics_source);
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
