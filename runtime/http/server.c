/*
 * The HTTP/1.1 server's connection state machine (runtime/http/conn.h: its
 * states, and the server's other three files), on the TCP connection base
 * (net/tcp/tcpconn.h: the lwIP callbacks, rx[], the send accounting; plain
 * TCP in the default build, plain TCP or TLS over TCP with make TLS=1;
 * NO_SYS: everything runs in the event loop, in lwIP's callbacks).
 *
 * Memory is bounded per connection. Received bytes are copied into rx[]
 * (TCP_WND bytes) and the pbuf is freed at once; the window reopens only
 * for bytes the parser has taken, so the window the peer sees is exactly
 * the room left in rx[]. While a response is written, pipelined requests
 * wait in rx[], and a peer that keeps sending stalls on a closed window.
 * Static bodies are passed to altcp_write() without copying (they are
 * rodata and outlive every segment); heads, error pages and /metrics are
 * copied. Writes stop when altcp_sndbuf() or the segment queue is full and
 * resume from the sent callback.
 *
 * Timeouts are checked from the poll callback (every TCP slow-timer tick,
 * 500 ms), against time_ns(). The send stall is judged by bytes: in every
 * send_timeout window with response data outstanding, the peer must
 * acknowledge send_min_bytes (or all that was outstanding when the window
 * began), so a reader that keeps its window at one byte and ACKs every probe
 * is reset like one that ACKs nothing (tcpconn_stalled()).
 *
 * What one connection makes lwIP's heap hold is bounded for the budget in
 * net/port/lwipopts.h: copied bytes (heads, error pages, /metrics) are
 * written only while less than HTTP_COPY_INFLIGHT is unacknowledged (an
 * app's copied or streamed body HTTP_COPY_BULK_INFLIGHT while it holds one
 * of HTTP_COPY_BULK_MAX grants, in an image without TLS), and
 * never with TCP_WRITE_FLAG_MORE, which would make lwIP round each copied
 * pbuf up to a whole MSS (TCP_OVERSIZE) for the next write to fill.
 *
 * Framing: after a response the next byte read must be the next request's
 * first. c->req_left counts the request's declared body not yet read off
 * the stream; server_keep_alive() is the one keep-alive decision (a body
 * left over is dropped in READ before the next head if it is at most
 * HTTP_DISCARD_MAX, else the answer closes), and server_start_send(),
 * which every response passes, enforces it.
 *
 * Every path is a route (runtime/http/routes.c): the apps', and the
 * runtime's own /healthz and /metrics (exchange.c), which plain HTTP keeps
 * serving when http.redirect= sends everything else to HTTPS. A request
 * for a route is an exchange with a vireo_req handle (exchange.c); the
 * API's calls never end a connection, free anything or call the app
 * themselves: they set up the response and queue the connection's
 * pump_work, so the app is never re-entered from its own call and a handle
 * of a freed connection is only ever stale, never dangling. The one write
 * to lwIP an API call makes is vireo_resp_write()'s copy into the send
 * queue when nothing of the stream is ahead of it (server_stream_direct(),
 * images without TLS), which stops at any error and leaves it to the pump.
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lwip/altcp.h"
#include "lwip/ip_addr.h"
#include "net/port/lwip_port.h"
#include "net/port/netmem.h"
#include "net/tcp/rxmem.h"
#include "net/tcp/tcpconn.h"
#include "runtime/http/conn.h"
#include "runtime/http/hsgate.h"
#include "runtime/http/https.h"
#include "runtime/http/allow.h"
#include "runtime/http/proxyproto.h"
#if LWIP_ALTCP_TLS
#include "lwip/altcp_tls.h"
#endif

#define LOCATION_MAX 352	/* the redirect's Location line */
#define POLL_TICKS 1		/* tcp_poll interval: 1 x 500 ms */

struct http_server_stats http_server_stats;

static inline struct conn *server_conn_of(struct tcpconn *tc)
{
	return tcpconn_owner(tc, struct conn, tc);
}

/* ---- connection lifetime ---- */

static void server_tls_bulk_release(struct conn *c)
{
	if (c->bulk) {
		c->bulk = false;
#if LWIP_ALTCP_TLS
		https_stats.bulk_grants--;
#else
		http_server_stats.copy_bulk_grants--;
#endif
	}
}

/* ---- buffer sets and send slots (conn.h, slots.h) ---- */

/* A plain connection: in the send budget and on the keep-alive list (HTTPS:
 * neither). Both take their buffer sets from the pool. */
static inline bool server_pooled(const struct conn *c)
{
	return !LWIP_ALTCP_TLS || !c->tc.tls;
}

__cold static void server_wake_bufs(struct slot_waiter *w)
{
	if (w)
		server_kick(tcpconn_owner(w, struct conn, bw));
}

__cold static void server_wake_sends(struct slot_waiter *w)
{
	if (w)
		server_kick(tcpconn_owner(w, struct conn, sw));
}

__cold static void server_ih_unlink(struct conn *c)
{
	if (!c->ih_on)
		return;
	if (c->ih_prev)
		c->ih_prev->ih_next = c->ih_next;
	else
		http_srv.ih_head = c->ih_next;
	if (c->ih_next)
		c->ih_next->ih_prev = c->ih_prev;
	else
		http_srv.ih_tail = c->ih_prev;
	c->ih_prev = c->ih_next = NULL;
	c->ih_on = false;
}

/* The set of c (idle, nothing of a head in) goes back to the pool, handed
 * to the oldest waiter if any; the window is cut to land[]. HTTPS: nothing
 * is held (server_bufs_put()) and altcp_tls keeps the window: what it
 * decrypts next lands in land[], or server_rx_short() takes a set for it. */
__cold static void server_bufs_release(struct conn *c)
{
	server_ih_unlink(c);
	if (server_pooled(c)) {
		tcpconn_rx_move(&c->tc, c->land, sizeof c->land);
		c->wnd_cut = true;
	} else {
		c->tc.rx = c->land;
		c->tc.rx_cap = sizeof c->land;
		c->tc.rx_off = c->tc.rx_len = 0;
	}
	kfree(c->b);
	c->b = NULL;
	server_wake_bufs(slots_give(&http_srv.bufs, &c->bw));
}

/* A buffer set for c, its receive buffer moved into it and the window
 * reopened: 1, or 0 while it waits for one (its pump is kicked when
 * handed one), -1 without memory. */
__cold static int server_bufs_get(struct conn *c)
{
	struct conn_bufs *b;

	if (c->b) {
		server_ih_unlink(c);	/* in a request: not to be taken */
		return 1;
	}
	/* none free: the one idle longest gives its set back to the pool
	 * (nobody waits while one is idle: server_bufs_put()) */
	if (!c->bw.queued && !c->bw.granted && http_srv.bufs.used >= http_srv.bufs.max && http_srv.ih_head)
		server_bufs_release(http_srv.ih_head);
	if (!slots_take(&http_srv.bufs, &c->bw))
		return 0;
	b = kmalloc(sizeof *b);
	if (!b) {
		server_wake_bufs(slots_give(&http_srv.bufs, &c->bw));
		return -1;
	}
	__builtin_memset(&b->parser, 0, offsetof(struct http_req_parser, buf));
	http_parser_reset(&b->parser);
	b->parser.ext = true;	/* methods and bodies for the routes */
	b->xhdr[0] = '\0';
	c->b = b;
	if (c->wnd_cut) {
		c->wnd_cut = false;
		tcpconn_rx_move(&c->tc, b->rx, sizeof b->rx);
		return 1;
	}
	/* at accept (nothing received yet) or HTTPS: the window was never
	 * cut, nothing to reopen */
#if LWIP_ALTCP_TLS
	__builtin_memcpy(b->rx, c->tc.rx + c->tc.rx_off, tcpconn_rx_held(&c->tc));
	c->tc.rx_len -= c->tc.rx_off;
	c->tc.rx_off = 0;
#endif
	c->tc.rx = b->rx;
	c->tc.rx_cap = sizeof b->rx;
	return 1;
}

/* c is between requests, nothing of the next in: it keeps its set (and
 * its window) until a taker needs it, on the idle holders' list; to the
 * oldest waiter at once if one waits, so nobody waits while one is idle.
 * HTTPS gives it back at once: nothing decrypted is held (rx[] is empty,
 * a partial record is in mbedTLS's record buffer, not here) and cutting
 * its window would not make the peer wait (a record is whole or nothing),
 * so an idle HTTPS connection holds no set. */
__cold static void server_bufs_put(struct conn *c)
{
	if (!c->b || c->ih_on)
		return;
	if (slots_waited_for(&http_srv.bufs) || !server_pooled(c)) {
		server_bufs_release(c);	/* straight to the oldest waiter */
		return;
	}
	c->ih_on = true;
	c->ih_next = NULL;
	c->ih_prev = http_srv.ih_tail;
	if (http_srv.ih_tail)
		http_srv.ih_tail->ih_next = c;
	else
		http_srv.ih_head = c;
	http_srv.ih_tail = c;
}

static void server_ka_unlink(struct conn *c);

/* tcpconn's free: the connection is over (err: ERR_OK when we ended it,
 * else lwIP's reason, counted as a reset unless it is the close of a FIN
 * acknowledged in LAST_ACK). */
static void server_conn_free(struct tcpconn *tc, err_t err)
{
	struct conn *c = server_conn_of(tc);

	if (err != ERR_OK && err != ERR_CLSD)
		http_server_stats.conns_reset++;
	server_tls_bulk_release(c);
	if (c->handshaking) {
#if LWIP_ALTCP_TLS
		https_handshake_gone(c->tc.pcb);	/* its certificate, if it took one */
#endif
		c->link.node->handshakes--;
		https_stats.handshakes_active--;
		https_stats.failures[c->hs_timed_out ? HTTPS_FAIL_TIMEOUT : HTTPS_FAIL_CLOSED]++;
#if LWIP_ALTCP_TLS
		hsgate_forget(c);
#endif
	}
	if (c->tc.tls)
		https_stats.conns_active--;
#if LWIP_ALTCP_TLS
	if (c->pp_rx)
		pbuf_free(c->pp_rx);	/* a PROXY header's first bytes (https.c) */
#endif
	work_cancel(&c->pump_work);
	exchange_end(c, false);
	exchange_release(c);
	conntab_remove(&http_srv.tab, &c->link);
	kfree(c->dyn);
	server_ih_unlink(c);
	server_ka_unlink(c);
	kfree(c->b);
	server_wake_bufs(slots_forget(&http_srv.bufs, &c->bw));
	if (server_pooled(c))
		server_wake_sends(slots_forget(&http_srv.sends, &c->sw));
	kfree(c);
	http_server_stats.conns_active--;
}

err_t server_conn_abort(struct conn *c)
{
	return tcpconn_abort(&c->tc);
}

/* ---- keep-alive idle connections ----
 *
 * A served plain connection waiting for its next request, no byte of it
 * come, asks lwIP for no polls (tcpconn_poll_ticks(0)): once nothing of it
 * is in flight lwIP parks its PCB off the list its timers walk
 * (net/port/patches/0011), so their work per tick follows the busy
 * connections, not the 20,000 idle ones. Its idle timeout is kept here
 * instead: it joins http_srv's keep-alive list at the tail as it goes idle
 * (t_wait = then), so the list runs oldest first, and a tick every
 * SERVER_KA_TICK_MS while the list is not empty closes the expired ones
 * from its head: O(1 + closed) per tick, however many are idle. */
#define SERVER_KA_TICK_MS 500
static struct timer server_ka_timer;

static void server_ka_tick(struct timer *t, void *arg);

/* Off the list; its pcb untouched (it may be gone: server_conn_free()). */
static void server_ka_unlink(struct conn *c)
{
	if (!c->ka_on)
		return;
	c->ka_on = false;
	*(c->ka_prev ? &c->ka_prev->ka_next : &http_srv.ka_head) = c->ka_next;
	*(c->ka_next ? &c->ka_next->ka_prev : &http_srv.ka_tail) = c->ka_prev;
	c->ka_next = c->ka_prev = NULL;
}

static void server_ka_mark(struct conn *c, bool on)
{
	if (c->ka_on == on)
		return;
	if (on) {
		c->ka_on = true;
		c->t_wait = tcpconn_now_ms();
		c->ka_next = NULL;
		c->ka_prev = http_srv.ka_tail;
		*(http_srv.ka_tail ? &http_srv.ka_tail->ka_next : &http_srv.ka_head) = c;
		http_srv.ka_tail = c;
		if (!server_ka_timer.armed) {
			timer_init(&server_ka_timer, server_ka_tick, NULL);
			timer_start(&server_ka_timer, time_ns() + SERVER_KA_TICK_MS * NSEC_PER_MSEC);
		}
	} else {
		server_ka_unlink(c);
	}
	tcpconn_poll_ticks(&c->tc, on ? 0 : POLL_TICKS);
}

__cold static void server_ka_tick(struct timer *t, void *arg)
{
	u64 now = tcpconn_now_ms();
	struct conn *c;

	(void)arg;
	while ((c = http_srv.ka_head) && now - c->t_wait >= http_srv.cfg.idle_timeout_ms) {
		http_server_stats.timeouts_idle++;
		server_ka_unlink(c);
		(void)server_conn_close(c);
	}
	if (http_srv.ka_head)
		timer_start(t, time_ns() + SERVER_KA_TICK_MS * NSEC_PER_MSEC);
}

/* The table's idle list (conntab_idle()) follows the connection: idle
 * while it waits for a request of which no byte has come, or for good once
 * it read too slowly for a bulk grant (the least productive: a full table
 * ends the one on the list longest first, admission.c). A plain one that
 * was served and waits so is on the keep-alive list too. */
__attribute__((noinline)) static void server_idle_mark(struct conn *c)
{
	bool waiting = c->state == C_READ && !c->head_started;

	conntab_idle(&http_srv.tab, &c->link, waiting || c->bulk_slow);
	server_ka_mark(c, waiting && c->served && !c->bulk_slow && server_pooled(c));
}

/* Hand the pcb to lwIP for an orderly close (FIN after queued data). */
err_t server_conn_close(struct conn *c)
{
#if LWIP_ALTCP_TLS
	if (c->tc.tls)
		https_close_notify(c->tc.pcb);
#endif
	return tcpconn_close(&c->tc);
}

/* Response bytes not yet acknowledged, written or not. */
static u32 server_outstanding(const struct conn *c)
{
	u32 n = c->tc.inflight;

	if (c->state == C_SEND)
		n += (u32)(c->out_len - c->out_off) + (u32)(c->body_len - c->body_off) +
		     (c->stream ? c->sbuf_len - c->sbuf_off : 0);
	return n;
}

/* What the peer must acknowledge in a send_timeout window (conn.h). */
static u32 server_send_need(const struct conn *c, u32 outstanding)
{
	return MIN(MAX(http_srv.cfg.send_min_bytes, outstanding / HTTP_SEND_DRAIN), outstanding);
}

static bool server_send_stalled(struct conn *c, u64 now)
{
	u32 out = server_outstanding(c);

	return tcpconn_stalled(&c->tc, now, http_srv.cfg.send_timeout_ms, server_send_need(c, out), out);
}

/* Past the response's deadline, or a bulk grant's reader too slow for it
 * that did not drain to the small bound in time (conn.h): true to reset.
 * Marks a reader too slow for its grant (the grant is then on its way back). */
__cold static bool server_send_slow(struct conn *c, u64 now)
{
	/* stream_taken outlives the stream (a response's bytes can still be
	 * in flight in READ): at worst a later response's deadline is longer */
	u64 size = (u64)c->out_len + c->body_len + c->stream_taken;

	if (now - c->t_send >= http_srv.cfg.send_timeout_ms + size * 1000 / HTTP_SEND_FLOOR_BPS)
		return true;
	if (c->bulk && c->bulk_slow)	/* still above the small bound */
		return now - c->t_rate >= HTTP_BULK_DRAIN_MS;
	if (c->bulk && now - c->t_rate >= HTTP_BULK_RATE_MS) {
		if ((u64)c->rate_acked * 1000 < (u64)HTTP_BULK_MIN_BPS * (now - c->t_rate)) {
			c->bulk_slow = true;
			http_server_stats.bulk_slow++;
			server_idle_mark(c);
			if (c->tc.inflight <= HTTP_COPY_INFLIGHT)
				server_tls_bulk_release(c);
		}
		c->t_rate = now;
		c->rate_acked = 0;
	}
	return false;
}

/* The throughput floor's next period (conn.h) starts now. */
static void server_floor_start(struct conn *c, u64 now)
{
	tcpconn_floor_start(&c->tc, now, server_outstanding(c));
}

/* Every bound on a response's bytes (conn.h: the stall, the deadline, the
 * bulk grant's floor, the throughput floor), in whatever state they are
 * still unacknowledged: true to reset c, counted. */
static bool server_send_over(struct conn *c, u64 now)
{
	if (server_send_stalled(c, now) || server_send_slow(c, now)) {
		http_server_stats.timeouts_send++;
		return true;
	}
	/* nothing unacknowledged at a period's end: the server, not the
	 * reader, was behind (no send memory, an app slow to write) */
	if (!tcpconn_floor_missed(&c->tc, now, server_outstanding(c), HTTP_COPY_INFLIGHT))
		return false;
	http_server_stats.timeouts_slow++;
	return true;
}

/* Our FIN, after a TLS close_notify: false when lwIP refused it. */
static bool server_fin(struct conn *c)
{
#if LWIP_ALTCP_TLS
	if (c->tc.tls)
		https_close_notify(c->tc.pcb);
#endif
	return altcp_shutdown(c->tc.pcb, 0, 1) == ERR_OK;
}

/* The last response is written: send FIN after it, keep reading (and
 * dropping) what the peer still sends so it gets the response rather than a
 * RST, and free once the peer closes or linger_ms after everything was acked. */
err_t server_begin_close(struct conn *c)
{
	tcpconn_rx_discard(&c->tc);
	if (c->tc.rx_eof)
		return server_conn_close(c);
	if (!server_fin(c))
		return server_conn_abort(c);
	c->state = C_LINGER;
	server_idle_mark(c);
	c->tc.rx_drop = true;
	if (!c->tc.inflight)
		c->tc.t_progress = tcpconn_now_ms();
	return ERR_OK;
}

/* vireo_resp_end() in a tunnel (exchange.c): our FIN once its bytes are
 * written; the client's bytes still go to on_body until its FIN. */
__cold static err_t server_tunnel_fin(struct conn *c)
{
	c->tunnel_fin = true;
	return server_fin(c) ? ERR_OK : server_conn_abort(c);
}

/* ---- responses ---- */

void server_count_response(int status)
{
	if (status >= 100 && status <= 599)
		http_server_stats.responses[status / 100]++;
}

/* The framing rule (conn.h, docs/appliance.md "Framing"): a response may
 * leave the connection open only if the next byte after it is the next
 * request's, so a body nobody read is dropped before the next head
 * (HTTP_DISCARD_MAX at most) or the connection closes. A client that sent
 * Expect may never send the body it declared (it waits for a 100 Continue
 * we do not send): then what follows is not known to be the body, and the
 * connection closes too. Every head takes its Connection from here. */
bool server_keep_alive(const struct conn *c)
{
	return c->b->parser.keep_alive && !http_srv.draining && !c->close_after &&
	       (!c->req_left || (c->req_left <= HTTP_DISCARD_MAX && !c->b->parser.expect));
}

void server_start_send(struct conn *c)
{
	if (!server_keep_alive(c))
		c->close_after = true;	/* whatever the head said: the rule holds */
	c->body_stream = false;	/* an answer ends a streamed body's delivery */
	c->state = C_SEND;
	c->out_off = 0;
	c->body_off = 0;
	c->t_send = tcpconn_now_ms();
	server_floor_start(c, c->t_send);
	if (!c->tc.inflight) {
		c->tc.t_progress = c->t_send;
		tcpconn_stall_start(&c->tc, c->tc.t_progress, server_send_need(c, server_outstanding(c)));
	}
}

/* A whole canned error response into out[]; closes afterwards. */
void server_respond_error(struct conn *c, int status, bool head_only)
{
	size_t n = http_error_response(c->b->out, sizeof c->b->out, status, false, head_only);

	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->stream = false;
	c->close_after = true;
	server_count_response(status);
	server_start_send(c);
}

/* The same with extra header lines (a route's Allow), closing afterwards. */
__cold void server_respond_error_extra(struct conn *c, int status, bool head_only, const char *extra)
{
	size_t body = http_error_body(NULL, 0, status);
	size_t n = http_response_head(c->b->out, sizeof c->b->out, status, "text/html; charset=utf-8", body, false,
				      extra);

	if (!n || !body) {
		server_respond_error(c, status, head_only);
		return;
	}
	if (!head_only)
		n += http_error_body(c->b->out + n, sizeof c->b->out - n, status);
	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->stream = false;
	c->close_after = true;
	server_count_response(status);
	server_start_send(c);
}

/* "Location: https://host[:port]/path\r\n" for the HTTPS redirect: the
 * request's Host without its port (else the address the connection came
 * in on), https= unless 443, and the decoded path percent-encoded again
 * (it may hold any byte), then "?query" as the request had it. A path and
 * query that do not fit send to "/". */
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

__cold static const char *server_location(struct conn *c, char *buf, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	static const char scheme[] = "Location: https://";
	const struct http_req_parser *p = &c->b->parser;
	char local[IPADDR_STRLEN_MAX + 2];
	size_t n, hlen = 0, i, start;
	const char *h = p->host;
	bool fits;

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
		const ip_addr_t *a = altcp_get_ip(c->tc.pcb, 1);

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
	if (http_srv.redirect_port != 443) {
		char digits[6];
		u32 port = http_srv.redirect_port, nd = 0;

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
	fits = i == p->path_len;
	if (fits && p->query) {
		/* The parser kept only a well-formed query: it goes as it came. */
		size_t qlen = __builtin_strlen(p->query);

		fits = n + 1 + qlen + 3 <= size;	/* '?', the query, CR LF NUL */
		if (fits) {
			buf[n++] = '?';
			__builtin_memcpy(buf + n, p->query, qlen);
			n += qlen;
		}
	}
	if (!fits) {
		n = start;	/* the path and query do not fit: the site's root */
		buf[n++] = '/';
	}
	buf[n++] = '\r';
	buf[n++] = '\n';
	buf[n] = '\0';
	return buf;
}

/* Set up the response to the request the parser just completed: its
 * route's exchange; a 301 to HTTPS under http.redirect= (but for the
 * routes plain HTTP keeps: /healthz); 404 without a route. */
static void server_respond(struct conn *c)
{
	const struct http_req_parser *p = &c->b->parser;
	bool head_only = p->method == HTTP_METHOD_HEAD;
	bool keep = server_keep_alive(c);
	const struct api_route *rt = api_route_match(p->path);
	char line301[LOCATION_MAX];
	size_t n;

	c->body = NULL;
	c->body_len = 0;
	c->body_copy = false;
	c->stream = false;
	if (http_srv.redirect_port && !c->tc.tls && !(rt && rt->plain)) {
		n = http_response_head(c->b->out, sizeof c->b->out, 301, NULL, 0, keep,
				       server_location(c, line301, sizeof line301));
		if (!n) {
			server_respond_error(c, 500, head_only);
			return;
		}
		c->out_len = (u16)n;
		c->close_after = !keep;
		server_count_response(301);
		server_start_send(c);
		return;
	}
	if (rt) {
		exchange_request(c, rt);
		return;
	}
	n = http_error_response(c->b->out, sizeof c->b->out, 404, keep, head_only);
	c->out_len = (u16)n;
	c->close_after = !keep;
	server_count_response(404);
	server_start_send(c);
}

#if LWIP_ALTCP_TLS
/* How many more bytes of one record (plaintext) a TLS connection may write
 * now: what its TCP send queue holds is counted encrypted, framing included,
 * against HTTP_COPY_INFLIGHT, or HTTPS_BULK_INFLIGHT with a bulk grant,
 * taken here when more is left than the small bound lets through. */
static size_t server_tls_room(struct conn *c, size_t left)
{
	struct tcp_pcb *tpcb = tcpconn_tcp_pcb(c->tc.pcb);
	/* snd_buf itself: tcp_sndbuf() stops at 65,535, below TCP_SND_BUF */
	u32 queued = (u32)TCP_SND_BUF - MIN((u32)tpcb->snd_buf, (u32)TCP_SND_BUF);
	u32 cap = HTTP_COPY_INFLIGHT;

	if (!c->bulk && !c->bulk_slow && queued + left + TLS_RECORD_FRAMING_MAX > HTTP_COPY_INFLIGHT) {
		if (https_stats.bulk_grants < HTTPS_BULK_MAX) {
			c->bulk = true;
			c->t_rate = tcpconn_now_ms();
			c->rate_acked = 0;
			if (++https_stats.bulk_grants > https_stats.bulk_peak)
				https_stats.bulk_peak = https_stats.bulk_grants;
		} else {
			https_stats.bulk_refused++;
		}
	}
	if (c->bulk && !c->bulk_slow)
		cap = HTTPS_BULK_INFLIGHT;
	if (queued + TLS_RECORD_FRAMING_MAX >= cap)
		return 0;
	return cap - queued - TLS_RECORD_FRAMING_MAX;
}
#endif

#if !LWIP_ALTCP_TLS
_Static_assert(HTTP_COPY_BULK_INFLIGHT == NETMEM_COPY_FLOOR && HTTP_COPY_BULK_MAX == NETMEM_COPY_GRANTS,
	       "net/port/netmem.h's copy grants are conn.h's");
/* How many more copied bytes a plain connection may write now: below
 * HTTP_COPY_INFLIGHT unacked, or HTTP_COPY_BULK_INFLIGHT with a grant, taken
 * for a body (not a head) with more left than the small bound lets through. */
static size_t server_copy_room(struct conn *c, size_t left)
{
	u32 cap = HTTP_COPY_INFLIGHT;

	if (!c->bulk && !c->bulk_slow && c->out_off == c->out_len && c->tc.inflight + left > HTTP_COPY_INFLIGHT) {
		if (http_server_stats.copy_bulk_grants < HTTP_COPY_BULK_MAX) {
			c->bulk = true;
			c->t_rate = tcpconn_now_ms();
			c->rate_acked = 0;
			http_server_stats.copy_bulk_grants++;
		} else {
			http_server_stats.copy_bulk_refused++;
		}
	}
	if (c->bulk && !c->bulk_slow)
		cap = netmem.copy_inflight;	/* HTTP_COPY_BULK_INFLIGHT, or wider by the plan */
	return c->tc.inflight < cap ? cap - c->tc.inflight : 0;
}
#endif

/* Nothing of c's is unacknowledged and nothing is being written: its send
 * slot goes to the next writer waiting. */
static void server_send_put(struct conn *c)
{
	if (server_pooled(c))
		server_wake_sends(slots_give(&http_srv.sends, &c->sw));
}

/* Hand as much of the response to lwIP as it takes now (plain: once it
 * holds a send slot). */
static err_t server_write_some(struct conn *c)
{
	struct altcp_pcb *pcb = c->tc.pcb;
	bool wrote = false;
	err_t err;

	if (server_pooled(c) && !slots_take(&http_srv.sends, &c->sw))
		return ERR_OK;	/* kicked when handed a send slot */
	for (;;) {
		const void *src;
		size_t left, n;
		u8_t flags;

		if (c->out_off < c->out_len) {
			src = c->b->out + c->out_off;
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
		if (c->tc.tls)
			flags = TCP_WRITE_FLAG_COPY;	/* altcp_tls copies: count it so */
		n = MIN(left, (size_t)altcp_sndbuf(pcb));
#if LWIP_ALTCP_TLS
		if (c->tc.tls)
			n = MIN(n, (size_t)https_write_max(pcb));
#endif
#if LWIP_ALTCP_TLS
		if (c->tc.tls)
			n = MIN(n, server_tls_room(c, left));
		else
#endif
		if (flags & TCP_WRITE_FLAG_COPY)
#if LWIP_ALTCP_TLS
			n = c->tc.inflight < HTTP_COPY_INFLIGHT ?
			    MIN(n, (size_t)(HTTP_COPY_INFLIGHT - c->tc.inflight)) : 0;
#else
			n = MIN(n, server_copy_room(c, left));
#endif
		if (n == 0)
			break;
		if (n < left && !(flags & TCP_WRITE_FLAG_COPY))
			flags |= TCP_WRITE_FLAG_MORE;
		/* A zero-copy body larger than TCP_SND_BUF asks once, at its
		 * first write, for the bulk send buffer (lwipopts.h
		 * VIREO_SND_BULK_BUF): its queue costs headers, not payload. */
		if (!(flags & TCP_WRITE_FLAG_COPY) && c->body_off == 0 && c->body_len > TCP_SND_BUF &&
		    c->out_off == c->out_len)
			rxmem_snd_grant(tcpconn_tcp_pcb(pcb));
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
		c->tc.inflight += (u32)n;
		http_server_stats.tx_bytes += n;
		wrote = true;
	}
	if (wrote) {
		altcp_output(pcb);	/* on failure lwIP retries from its timer */
	} else if (!c->tc.inflight) {
		server_tls_bulk_release(c);	/* nothing went: the grant is for bytes in flight */
		server_send_put(c);
	}
	return ERR_OK;
}

#if !LWIP_ALTCP_TLS
/* vireo_resp_write()'s bytes copied straight into lwIP's send queue, the
 * head still unwritten first, when nothing of the stream is ahead of them
 * in the stream buffer: a proxied body then leaves in flights as large as
 * the copy room (HTTP_COPY_BULK_INFLIGHT with a grant) instead of 8 KiB
 * stream-buffer loads a loop pass apart, and is copied once less. The same
 * bounds as server_write_some() (the copy room, lwIP's send buffer); it
 * never ends c nor calls the app: on an error it stops, and the pump
 * (kicked by the caller) meets the error again and ends the connection.
 * Returns how many of data's bytes lwIP took. */
size_t server_stream_direct(struct conn *c, const void *data, size_t len)
{
	struct altcp_pcb *pcb = c->tc.pcb;
	size_t done = 0, n;
	bool wrote = false;

	if (c->state != C_SEND || !c->stream || c->chunked || c->sbuf_off != c->sbuf_len ||
	    c->body_off < c->body_len || !pcb || !slots_take(&http_srv.sends, &c->sw))
		return 0;
	while (c->out_off < c->out_len) {
		n = MIN((size_t)(c->out_len - c->out_off), (size_t)altcp_sndbuf(pcb));
		n = MIN(n, server_copy_room(c, c->out_len - c->out_off));
		if (!n || altcp_write(pcb, c->b->out + c->out_off, (u16_t)n, TCP_WRITE_FLAG_COPY) != ERR_OK)
			goto out;
		c->out_off += (u16)n;
		c->tc.inflight += (u32)n;
		http_server_stats.tx_bytes += n;
		wrote = true;
	}
	while (done < len) {
		n = MIN(len - done, (size_t)altcp_sndbuf(pcb));
		n = MIN(n, server_copy_room(c, len - done));
		if (!n || altcp_write(pcb, (const u8 *)data + done, (u16_t)n, TCP_WRITE_FLAG_COPY) != ERR_OK)
			break;
		done += n;
		c->tc.inflight += (u32)n;
		http_server_stats.tx_bytes += n;
		wrote = true;
	}
out:
	if (wrote)
		altcp_output(pcb);	/* on failure lwIP retries from its timer */
	return done;
}
#endif

/*
 * Move the connection forward as far as it goes: write the response, then
 * parse the next request from rx[] and answer it, and so on, so pipelined
 * requests are answered in order. Callbacks return what this returns and
 * must not touch c afterwards: it may be freed.
 */
/* The PROXY header a proxy.trusted= peer sends first (proxyproto.h): the
 * client it names becomes the connection's peer (what the app, /metrics'
 * allow-list and the connection table see; the table re-keys it, so the
 * fair share and per-source sums count the real client). A malformed one,
 * or none, resets the connection. */
__cold static err_t server_proxy_header(struct conn *c)
{
	struct tcpconn *tc = &c->tc;
	struct proxyproto_hdr h;
	int r = proxyproto_parse(tc->rx + tc->rx_off, tcpconn_rx_held(tc), &h);

	if (r == 0 && !tc->rx_eof)
		return ERR_OK;
	if (r < 0 && tcpconn_rx_held(tc) && proxyproto_absent(tc->rx + tc->rx_off, tcpconn_rx_held(tc))) {
		c->proxy_wait = false;	/* plain HTTP: its X-Forwarded-For counts */
		return ERR_OK;
	}
	if (r <= 0) {
		http_server_stats.proxy_refused++;
		return server_conn_abort(c);
	}
	tcpconn_rx_consume(tc, (u32)r);
	c->proxy_wait = false;
	c->head_started = false;	/* the head's clock starts at its first byte */
	server_idle_mark(c);
	if (!server_proxy_peer(c, &h))
		return server_conn_abort(c);	/* no memory for the client's node */
	return ERR_OK;
}

bool server_proxy_peer(struct conn *c, const struct proxyproto_hdr *h)
{
	struct conntab_src src;
	bool ok;

	http_server_stats.proxy_headers++;
	if (!h->family)
		return true;	/* LOCAL, UNKNOWN: the proxy's own connection */
	allow_addr_to_ip(&c->peer, h->src);
	c->peer_port = h->sport;
	ip_addr_copy(c->hop, c->peer);
	c->hop_port = c->peer_port;
	conntab_src_of(&c->peer, &src);
	/* a handshake counts for its source (admission.c): it moves along */
	if (c->handshaking)
		c->link.node->handshakes--;
	ok = conntab_rekey(&http_srv.tab, &c->link, &src);
	if (c->handshaking)
		c->link.node->handshakes++;
	return ok;
}

/* A request from a proxy.trusted= peer: the client its X-Forwarded-For
 * fields name (proxyproto_xff_client()), else the hop, is the peer for
 * this request (the app, /metrics' allow-list), and the table counts the
 * connection for it (no request body is held at a head). */
__cold static err_t server_forwarded(struct conn *c)
{
	static const char name[] = "x-forwarded-for";
	const struct http_req_parser *p = &c->b->parser;
	const char *vals[HTTP_HEADERS_MAX];
	struct conntab_src src;
	u8 hop[16], client[16];
	ip_addr_t peer;
	u16 port = c->hop_port;
	size_t n = 0;

	for (u16 i = 0; i < p->nfields; i++) {
		const struct http_field *f = &p->fields[i];
		size_t k;

		for (k = 0; k < f->name_len && name[k]; k++)
			if (http_to_lower((u8)p->buf[f->name + k]) != (u8)name[k])
				break;
		if (k == f->name_len && !name[k])
			vals[n++] = p->buf + f->value;
	}
	allow_addr_ip(hop, &c->hop);
	ip_addr_copy(peer, c->hop);
	if (proxyproto_xff_client(&proxy_trusted, hop, vals, n, client)) {
		allow_addr_to_ip(&peer, client);
		port = 0;
		http_server_stats.forwarded++;
	}
	c->peer_port = port;
	if (ip_addr_cmp(&peer, &c->peer))
		return ERR_OK;
	ip_addr_copy(c->peer, peer);
	conntab_src_of(&c->peer, &src);
	if (!conntab_rekey(&http_srv.tab, &c->link, &src))
		return server_conn_abort(c);	/* no memory for the client's node */
	return ERR_OK;
}

err_t server_pump(struct conn *c)
{
	struct tcpconn *tc = &c->tc;

	for (;;) {
		int r;
		size_t used;

		if (c->state == C_SEND) {
			if (server_write_some(c) == ERR_ABRT)
				return ERR_ABRT;
			if (c->out_off < c->out_len || c->body_off < c->body_len)
				return ERR_OK;	/* resumes from server_sent() */
			if (c->stream && (c->sbuf_off < c->sbuf_len || !c->stream_ended || c->body_stream)) {
				/* A tunnel the app half-closed (body_stream in SEND
				 * is one): FIN after its bytes, the client's still
				 * come until its own. */
				if (c->stream_ended && !c->tunnel_fin && c->sbuf_off == c->sbuf_len &&
				    server_tunnel_fin(c) == ERR_ABRT)
					return ERR_ABRT;
				/* Drained what the app gave: ask for more. */
				if (c->want_writable && c->on_writable && c->xid && !c->stream_ended &&
				    c->sbuf_len - c->sbuf_off <= VIREO_RESP_STREAM_BUF / 2) {
					c->want_writable = false;
					c->on_writable((vireo_req){ c->xid }, c->writable_arg);
					if (c->sbuf_off < c->sbuf_len || c->stream_ended)
						continue;
				}
				/* on below: a tunnel's input (body_stream) */
			} else {
				kfree(c->dyn);
				c->dyn = NULL;
				exchange_end(c, true);
				exchange_release(c);
				c->stream = false;
				if (c->close_after || http_srv.draining)
					return server_begin_close(c);
				c->state = C_READ;
				c->served = true;
				c->head_started = false;
				c->t_wait = tcpconn_now_ms();
				server_idle_mark(c);
				http_parser_reset(&c->b->parser);
				continue;
			}
		}
		/* body_stream: APP's streamed body, or SEND's tunnel
		 * (vireo_resp_upgrade()); every answer else clears it */
		if ((c->state == C_BODY && c->b->parser.chunked) || c->body_stream) {
			if (reqbody->pump(c))
				continue;	/* dispatched, ended, answered */
			if (!tcpconn_rx_held(tc) && tc->rx_eof)
				return server_conn_close(c);	/* the body will not come */
			return ERR_OK;
		}
		if (c->state == C_BODY) {
			u32 n = MIN(tcpconn_rx_held(tc), c->req_body_need - c->req_body_len);

			if (n && !exchange_body_room(c, n)) {
				exchange_release(c);
				server_respond_error(c, 503, c->b->parser.method == HTTP_METHOD_HEAD);
				continue;	/* closes after it: the rest is unread */
			}
			if (n) {
				__builtin_memcpy(c->req_body + c->req_body_len, tc->rx + tc->rx_off, n);
				c->req_body_len += n;
				c->req_left -= n;
				tcpconn_rx_consume(tc, n);
			}
			if (c->req_body_len == c->req_body_need) {
				exchange_dispatch(c);
				continue;
			}
			if (!tcpconn_rx_held(tc) && tc->rx_eof)
				return server_conn_close(c);	/* the body will not come */
			return ERR_OK;
		}
		if (c->state != C_READ)
			return ERR_OK;

		if (!tcpconn_rx_held(tc)) {
			if (tc->rx_eof)
				return server_conn_close(c);	/* nothing more will come */
			if (!c->head_started)
				server_bufs_put(c);
#if LWIP_ALTCP_TLS
			else if (!c->b && c->bw.granted) {
				/* HTTPS: server_rx_short() waited; its bytes come
				 * again from altcp_tls's next poll (net/port/patches/
				 * 0013). HTTP_HEAD_PRESSURE_MS counts from the set (the
				 * header timeout too: the wait is on top, once a head) */
				if (server_bufs_get(c) < 0)
					return server_conn_abort(c);
				c->t_head = tcpconn_now_ms();
			}
#endif
			return ERR_OK;
		}
		if (!c->head_started) {
			c->head_started = true;
			c->t_head = tcpconn_now_ms();
			server_idle_mark(c);
		}
		if (!c->b || c->ih_on) {
			r = server_bufs_get(c);
			if (r < 0)
				return server_conn_abort(c);
			if (!r)
				return ERR_OK;	/* in land[], under the header timeout */
		}
		if (c->proxy_wait) {
			if (server_proxy_header(c) == ERR_ABRT)
				return ERR_ABRT;
			if (c->proxy_wait)
				return ERR_OK;	/* more to come, under the head timeout */
			continue;
		}
		if (c->req_left) {
			/* The answered request's body (at most HTTP_DISCARD_MAX,
			 * server_keep_alive()): dropped, never parsed as a head. */
			u32 n = (u32)MIN((u64)tcpconn_rx_held(tc), c->req_left);

			tcpconn_rx_consume(tc, n);
			c->req_left -= n;
			c->head_started = c->req_left != 0;	/* the next head's clock starts at its byte */
			server_idle_mark(c);
			continue;
		}
		r = http_parse(&c->b->parser, tc->rx + tc->rx_off, tcpconn_rx_held(tc), &used);
		if (used)
			tcpconn_rx_consume(tc, (u32)used);
		if (r == HTTP_NEED_MORE)
			continue;
		http_server_stats.requests++;
		c->req_left = c->b->parser.chunked ? HTTP_CHUNKED_LEFT : c->b->parser.content_length;	/* 0 after HTTP_ERROR */
		if (r == HTTP_DONE && c->via_proxy && server_forwarded(c) == ERR_ABRT)
			return ERR_ABRT;
		if (r == HTTP_DONE)
			server_respond(c);
		else
			server_respond_error(c, c->b->parser.status, false);
	}
}

/* The connection's pump_work: an API call set something up. */
static void server_pump_work(void *arg)
{
	server_pump(arg);
}

void server_kick(struct conn *c)
{
	if (!c->in_handler)
		work_queue(&c->pump_work);
}

/* ---- the connection's events (tcpconn_ops) ---- */

static err_t server_recv(struct tcpconn *tc)
{
	struct conn *c = server_conn_of(tc);

	if (tc->rx_eof && c->state == C_LINGER)
		return server_conn_close(c);
	return server_pump(c);
}

static err_t server_sent(struct tcpconn *tc, u16 len)
{
	struct conn *c = server_conn_of(tc);

	c->rate_acked += len;
	if (!tc->inflight || (c->bulk_slow && tc->inflight <= HTTP_COPY_INFLIGHT))
		server_tls_bulk_release(c);	/* taken again if more is left (not once slow) */
	if (!tc->inflight && c->state != C_SEND)
		server_send_put(c);
	if (c->state == C_SEND)
		return server_pump(c);
	return ERR_OK;
}

static err_t server_poll(struct tcpconn *tc)
{
	struct conn *c = server_conn_of(tc);
	const struct http_server_cfg *cfg = &http_srv.cfg;
	u64 now = tcpconn_now_ms();

	switch (c->state) {
	case C_READ:
		/* A response handed to lwIP whole can still be stuck behind a
		 * reader that stopped reading or reads slowly: every bound on
		 * its bytes applies until they are acknowledged, whatever the
		 * connection does meanwhile (grant or not). */
		if (tc->inflight && server_send_over(c, now))
			return server_conn_abort(c);
		if (c->head_started) {
			if (now - c->t_head < cfg->header_timeout_ms &&
			    !(c->b && http_srv.bufs.waiting && now - c->t_head >= HTTP_HEAD_PRESSURE_MS))
				break;
			http_server_stats.timeouts_header++;
			if (!c->b)
				return server_conn_close(c);	/* waited for a set all along */
			server_respond_error(c, 408, false);
			return server_pump(c);
		}
#if LWIP_ALTCP_TLS
		/* HTTPS: no ClientHello yet (none parsed, no step of it put
		 * off) by https.hello_timeout= (https.c). */
		if (c->handshaking && !c->hs_hello && !c->hs_queued && now - c->t_wait >= https_hello_timeout_ms()) {
			http_server_stats.timeouts_header++;
			https_stats.hello_timeouts++;
			c->hs_timed_out = true;
			return server_conn_close(c);
		}
#endif
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
		if (tc->inflight && server_send_over(c, now))
			return server_conn_abort(c);
		if (now - c->t_head >= cfg->header_timeout_ms) {
			http_server_stats.timeouts_header++;
			exchange_release(c);
			server_respond_error(c, 408, false);
			return server_pump(c);
		}
		break;
	case C_APP:
		if (tc->inflight && server_send_over(c, now))
			return server_conn_abort(c);
		if (now - c->t_app >= VIREO_HTTP_DEFER_MS) {
			api_http_stats.deferred_timeouts++;
			exchange_end(c, false);
			exchange_release(c);
			server_respond_error(c, 503, c->b->parser.method == HTTP_METHOD_HEAD);
			return server_pump(c);
		}
		break;
	case C_SEND:
		if (c->sw.queued) {
			/* waiting for a send slot is not the reader's stall */
			tc->t_progress = c->t_send = now;
			tcpconn_stall_start(tc, now, 0);
			server_floor_start(c, now);
			break;
		}
		if (server_send_over(c, now))
			return server_conn_abort(c);
		return server_pump(c);	/* retry writes that failed for memory */
	case C_LINGER:
		if (tc->inflight) {
			if (server_send_over(c, now))
				return server_conn_abort(c);
		} else if (now - tc->t_progress >= cfg->linger_ms) {
			return server_conn_close(c);
		}
		break;
	}
	return ERR_OK;
}

/* HTTPS: a decrypted chunk (up to PBUF_POOL_BUFSIZE) larger than land[]:
 * the head has begun, so a set for it from the pool, with the waiting of
 * plain connections when none is free (the chunk stays with altcp_tls,
 * offered again from its poll once the set is taken: server_pump()). */
#if LWIP_ALTCP_TLS
__cold static bool server_rx_short(struct tcpconn *tc, u32 n)
{
	struct conn *c = server_conn_of(tc);

	(void)n;
	if (c->b || c->state != C_READ)
		return false;	/* rx[] of a set is one window: it waits */
	if (!c->head_started) {
		c->head_started = true;
		c->t_head = tcpconn_now_ms();
		server_idle_mark(c);
	}
	return server_bufs_get(c) > 0;
}
#endif

static const struct tcpconn_ops server_tcp_ops = {
	.recv = server_recv,
#if LWIP_ALTCP_TLS
	.rx_short = server_rx_short,
#endif
	.sent = server_sent,
	.poll = server_poll,
	.free = server_conn_free,
};

void server_conn_attach(struct conn *c, struct altcp_pcb *pcb, bool tls)
{
	tcpconn_attach(&c->tc, pcb, &server_tcp_ops, c->land, sizeof c->land, POLL_TICKS);
	c->tc.rx_count = &http_server_stats.rx_bytes;
	c->tc.tls = tls;
	c->state = C_READ;
	c->t_wait = tcpconn_now_ms();
	ip_addr_copy(c->peer, *altcp_get_ip(pcb, 0));
	c->peer_port = tcpconn_tcp_pcb(pcb)->remote_port;
	ip_addr_copy(c->hop, c->peer);
	c->hop_port = c->peer_port;
	c->via_proxy = proxy_trusted.n && allow_match_ip(&proxy_trusted, &c->peer);
	c->proxy_wait = !tls && c->via_proxy;
	work_init(&c->pump_work, server_pump_work, c);
	/* A set at once if one is free, else the window the SYN-ACK offered
	 * is cut to land[]. HTTPS: land[] until its first request (the
	 * handshake needs no set; altcp_tls keeps the window). */
	if (!tls && !slots_waited_for(&http_srv.bufs) && (http_srv.bufs.used < http_srv.bufs.max || http_srv.ih_head))
		(void)server_bufs_get(c);
	if (!c->b && !tls) {
		tcpconn_rx_move(&c->tc, c->land, sizeof c->land);
		c->wnd_cut = true;
	}
	server_idle_mark(c);
	http_server_stats.conns_accepted++;
	http_server_stats.conns_active++;
}
