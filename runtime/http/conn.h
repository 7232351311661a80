/*
 * The HTTP server's connection and what its four files share (server.h is
 * the server's interface to the rest of the tree; this is its inside):
 *   server.c     the connection state machine on the TCP connection base
 *                (net/tcp/tcpconn.h): reading heads, routing, writing
 *                responses, timeouts
 *   exchange.c   an app's request: the vireo_req_* and vireo_resp_* calls
 *                (include/vireo/http.h), and the runtime's own routes
 *   admission.c  who gets a connection: the per-source table and the TLS
 *                handshake limits, at accept
 *   listen.c     the listeners: start, rebind, drain, stop; the counters
 */
#ifndef VIREO_RUNTIME_HTTP_CONN_H
#define VIREO_RUNTIME_HTTP_CONN_H

#include "kernel/loop.h"
#include "lib/types.h"
#include "net/tcp/tcpconn.h"
#include "runtime/api.h"
#include "runtime/conntab.h"
#include "runtime/http/chunked.h"
#include "runtime/http/hsrate.h"
#include "runtime/http/http.h"
#include "runtime/http/server.h"
#include "runtime/http/slots.h"

/*
 * A connection is in one of five states:
 *   READ    bytes from rx[] go to the request parser until a head is complete
 *   BODY    an app's request: its Content-Length or chunked body is read
 *           into a buffer counted against VIREO_HTTP_BUF_BUDGET
 *   APP     the route's handler has the request and has not answered yet
 *   SEND    a response is being handed to altcp_write() as send space allows
 *   LINGER  after the last response: our FIN is queued, input is discarded
 *           until the peer's FIN, or linger_ms after our data was acked
 */
enum conn_state { C_READ, C_SEND, C_LINGER, C_BODY, C_APP };

#define OUT_MAX 1024		/* a response head (an app's adds up to
				 * VIREO_RESP_HEADERS_MAX), or a whole error response */
/* Copied response bytes are written only below this many unacked bytes. */
#define HTTP_COPY_INFLIGHT 8192
/* A copied body (vireo_resp_write()'s stream, vireo_resp_send()'s copy)
 * with more left than HTTP_COPY_INFLIGHT lets through takes one of
 * HTTP_COPY_BULK_MAX grants, if one is free, and may then have
 * HTTP_COPY_BULK_INFLIGHT unacked: a proxied 64 KiB body in 2 flights
 * instead of 8. Given back once everything written is acknowledged or the
 * connection ends. Images without TLS only (TLS ones have HTTPS's grants,
 * the same size and number, and leave their heap no room for both):
 * net/port/lwipopts.h counts them. */
#define HTTP_COPY_BULK_INFLIGHT 32768
#define HTTP_COPY_BULK_MAX 2
/* With more than ~68 MiB of RAM the boot's plan widens the grant's flight
 * to NETMEM_COPY_WIDE (69,632: a 64 KiB body and its head in one flight)
 * and gives lwIP's heap its cost (net/port/netmem.h copy_inflight). */
/*
 * Slow readers (server_poll(), server_send_slow()). Three bounds on a
 * response, each judged by acknowledged bytes:
 * - per send_timeout window the peer acknowledges at least
 *   max(send_min_bytes, outstanding / HTTP_SEND_DRAIN) of what is
 *   outstanding (all of it if less): a reader holding much makes room
 *   fast or goes (1 MiB outstanding: 64 KiB per 30 s, 2.2 KB/s);
 * - the whole response within send_timeout + size / HTTP_SEND_FLOOR_BPS
 *   of its start (size: head and body, a stream's bytes so far), so
 *   draining just enough per window cannot stretch it for ever (1 MiB:
 *   30 + 1,024 s; a 300 B/s reader of /64k.bin: reset at 94 s);
 * - a bulk grant is kept only while the peer acknowledges at least
 *   HTTP_BULK_MIN_BPS over each HTTP_BULK_RATE_MS: below, the connection
 *   writes under the small bound from then on (for its whole life, so
 *   keep-alive does not hand it a grant per response) and gives the grant
 *   back once no more than HTTP_COPY_INFLIGHT is unacknowledged, which it
 *   must reach within HTTP_BULK_DRAIN_MS (24 KiB in 10 s, 2.4 KiB/s): a
 *   grant is the heap lwipopts.h counts, so it cannot be handed to
 *   another while its bytes are still held. A 300 B/s reader holds one
 *   for 12 s, not for the whole response.
 * Any of them resets the connection (timeouts_send).
 * And a throughput floor proportional to what is outstanding, for every
 * response (copied, zero-copy or streamed, plain or HTTPS, grant or not,
 * in any state while its bytes are unacknowledged): over each
 * TCPCONN_FLOOR_MS period that began with more than HTTP_COPY_INFLIGHT
 * outstanding, the peer acknowledges at least that outstanding *
 * period / TCPCONN_FLOOR_DRAIN_MS, i.e. at a pace that would drain it within
 * 64 s (48 KiB: 6 KiB per 8 s, 768 B/s; 1 MiB: 128 KiB per 8 s; 8 KiB or
 * less: no floor, the bounds above hold; nor when all it was sent is
 * acknowledged at the period's end: then the server was behind). Below,
 * the connection is reset
 * (timeouts_slow): a 300 B/s reader of /metrics goes within 8-16 s, not
 * at its deadline (net/tcp/tcpconn.h tcpconn_floor_met(), the app
 * services' floor too, with HTTP_COPY_INFLIGHT as its threshold).
 */
#define HTTP_SEND_DRAIN 16
#define HTTP_SEND_FLOOR_BPS 1024
#define HTTP_BULK_RATE_MS 2000
#define HTTP_BULK_MIN_BPS HTTP_COPY_INFLIGHT
#define HTTP_BULK_DRAIN_MS 10000
/* The framing rule (server_keep_alive()): a request body still unread when
 * its response starts is read and dropped before the next head if it is at
 * most this long (no more than a head costs: it passes through rx[], under
 * the header timeout), else the response closes the connection. */
#define HTTP_DISCARD_MAX HTTP_HEAD_MAX
/* req_left of a chunked body not read to its end: its length is unknown,
 * so it is never dropped; a response before its end closes. */
#define HTTP_CHUNKED_LEFT UINT64_MAX
/*
 * Request bodies (exchange_body_room()) are charged to VIREO_HTTP_BUF_BUDGET
 * as their bytes arrive, never on the declared Content-Length: the buffer
 * starts at HTTP_BODY_STEP and doubles up to the declared length, so a
 * body holds at most twice what has arrived (and never more than it
 * declared; a growth holds the old buffer, at most half the new, only
 * while it copies, one at a time). Two shares bound who holds it: all
 * connections' bodies together at most HTTP_BODIES_MAX (3 MiB), so copied
 * responses and stream buffers always keep the budget's last 1 MiB; one
 * source's bodies (conntab's: an IPv4 address, an IPv6 /64) at most
 * HTTP_BODY_SRC_MAX (1 MiB, one largest body, VIREO_HTTP_BODY_MAX), so
 * filling the bodies' share takes three sources that each send a megabyte
 * within the header timeout. A body that would pass either is 503.
 */
#define HTTP_BODY_STEP 8192
#define HTTP_BODIES_MAX (VIREO_HTTP_BUF_BUDGET / 4 * 3)
#define HTTP_BODY_SRC_MAX (VIREO_HTTP_BUF_BUDGET / 4)
_Static_assert(HTTP_BODY_SRC_MAX >= VIREO_HTTP_BODY_MAX, "a source can send one largest body");

/*
 * What a connection holds only while a request is in progress, from the
 * pool of http_srv.bufs (netmem.h sizes it from RAM): taken at the first
 * byte of a head (or at accept, if one is free), free once the
 * response is handed to lwIP whole and no byte of the next head is in.
 * An idle connection keeps its set until a taker finds none free, which
 * then takes the set of the one idle longest (http_srv.ih_head).
 * Without a set a connection receives into land[]: its window is cut
 * to HTTP_LAND (tcpconn_rx_move(); lwIP trims what arrives past it, the
 * peer sends it again once the window reopens), so a head that comes
 * while every set is taken waits in land[] and the peer's send queue,
 * FIFO (slots.h), under the header timeout. HTTPS connections take theirs
 * from the same pool but give it back at once when idle (nothing decrypted
 * held: a partial record stays in mbedTLS's record buffer) and keep their
 * window (altcp_tls's: a record is whole or nothing); a decrypted piece
 * larger than land[] takes a set first (server.c server_rx_short()).
 */
#define HTTP_LAND 512
/* While a head waits for a set, a head holding one that started this long
 * ago is answered 408 and closed (server_poll()): a slow head cannot keep
 * a set from others for the whole header timeout. */
#define HTTP_HEAD_PRESSURE_MS 2000
struct conn_bufs {
	u8 rx[TCP_WND];		/* tc's receive buffer: one window */
	struct http_req_parser parser;
	char out[OUT_MAX];
	char xhdr[VIREO_RESP_HEADERS_MAX + 1];	/* the app's extra header lines */
};

struct conn {
	struct conntab_conn link;	/* first: the table hands back this */
	struct conn_bufs *b;	/* the buffer set, or NULL (idle) */
	struct slot_waiter bw;	/* on http_srv.bufs */
	struct slot_waiter sw;	/* on http_srv.sends (plain connections) */
	struct conn *ih_prev, *ih_next;	/* http_srv's idle holders */
	bool ih_on;		/* idle, keeping b until a taker needs it */
	bool ka_on;		/* on http_srv's keep-alive list (server.c) */
	struct conn *ka_prev, *ka_next;
	bool wnd_cut;		/* on land[] with lwIP's window cut to it */
	struct tcpconn tc;	/* the pcb, rx[], inflight, the stall window */
	enum conn_state state;
	bool served;		/* a response was written: waiting is keep-alive idle */
	bool head_started;	/* READ: bytes of the next head have arrived */
	bool close_after;	/* SEND: close once this response is written */
	bool handshaking;	/* HTTPS: TLS handshake not finished (counted in hs_active) */
	bool proxy_wait;	/* from a proxy.trusted= peer: its PROXY header may come first */
	bool via_proxy;		/* from a proxy.trusted= peer: each request's
				 * X-Forwarded-For may name the client */
	ip_addr_t peer;		/* the client: the TCP peer, the PROXY header's
				 * source, or the request's X-Forwarded-For's */
	u16 peer_port;		/* 0 when X-Forwarded-For named the peer */
	ip_addr_t hop;		/* the peer before X-Forwarded-For */
	u16 hop_port;
	bool hs_timed_out;	/* HTTPS: closed by the header timeout while handshaking */
	bool hs_hello;		/* HTTPS: its ClientHello was parsed (the hello deadline is met) */
	/* Holds a bulk grant: HTTPS's (https.h HTTPS_BULK_INFLIGHT), or in an
	 * image without TLS a copied body's (HTTP_COPY_BULK_INFLIGHT). */
	bool bulk;
	bool bulk_slow;		/* read below HTTP_BULK_MIN_BPS once: no more grants */
	u32 rate_acked;		/* bytes acknowledged since t_rate */
	u64 t_rate;		/* ms: the bulk grant's rate period began */
	u64 t_send;		/* ms: the response started (server_start_send()) */
#if LWIP_ALTCP_TLS
	bool hs_queued;		/* HTTPS: its handshake step was put off (hsgate.c) */
	u16 hs_slot;		/* in that queue: its prefix's (hsfair, hsrate.h) */
	struct pbuf *pp_rx;	/* HTTPS from a proxy.trusted= peer (proxy_wait): the
				 * bytes of its PROXY header so far (https.c) */
	struct hsfair_node hs;	/* that queue's links */
#endif
	u64 t_wait;		/* READ: accept, or the end of the last response (ms) */
	u64 t_head;		/* READ: when the first byte of this head was seen */
	u64 req_left;		/* the request's declared body bytes not yet read off
				 * the stream (BODY reads them, READ drops them);
				 * HTTP_CHUNKED_LEFT while a chunked body is unread */

	/* The response: out[] (copied), then body (zero-copy unless body_copy). */
	u16 out_len, out_off;
	const u8 *body;
	size_t body_len, body_off;
	bool body_copy;
	char *dyn;		/* kmalloc'd body (/metrics, a copied response), freed once written */

	/* The exchange (exchange.c): a request for a route. */
	u32 xid;		/* its vireo_req id while live, else 0 */
	const struct api_route *route;
	u8 *req_body;		/* BODY/APP: the request body */
	u32 req_body_len, req_body_need;
	u32 req_body_cap;	/* req_body's size, charged (exchange_body_room()) */
	struct chunked dechunk;	/* BODY with parser.chunked: the body's decoder */
	bool body_stream;	/* APP: the route's on_body takes the body (until
				 * its end, or a response starts) */
	bool body_paused;	/* on_body took less than it was given: wait for
				 * vireo_req_body_resume() */
	u64 body_seen;		/* the streamed body's bytes taken so far */
	size_t budget;		/* bytes held against VIREO_HTTP_BUF_BUDGET */
	u64 t_app;		/* APP: when the handler got the request */
	bool stream;		/* SEND: the body comes from sbuf through vireo_resp_write */
	bool stream_ended;	/* vireo_resp_end() was called */
	bool tunnel_fin;	/* SEND: a tunnel's end sent as a FIN, its input open */
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
	u8 land[HTTP_LAND];	/* tc's receive buffer while b is NULL */
};

_Static_assert(offsetof(struct conn, link) == 0, "conntab entries are struct conn");

/* The server's state (listen.c). */
struct http_srv {
	struct altcp_pcb *listen;
	struct altcp_pcb *listen_tls;	/* HTTPS (https.c), or NULL */
	struct http_server_cfg cfg;
	struct conntab tab;
	bool draining;		/* http_server_drain(): close after each response */
	/* Buffer sets (struct conn_bufs) and send slots: a plain connection
	 * holds one only while it has response bytes unacknowledged or
	 * about to be written, so lwIP's heap holds at most sends.max
	 * connections' send queues (netmem.h). */
	struct slots bufs, sends;
	/* Idle connections that kept their set (lazily given back: only when
	 * a taker finds none free, oldest first), so a window is cut only
	 * when every set is in a request. */
	struct conn *ih_head, *ih_tail;
	/* Served plain connections waiting for their next request, in the
	 * order they went idle (t_wait): their idle timeout (server.c). */
	struct conn *ka_head, *ka_tail;
	u16 redirect_port;	/* http.redirect: plain HTTP answers 301 to this port */
};
extern struct http_srv http_srv;

/* ---- server.c: the connection ---- */

/* A connection admission.c let in: its state set up, pcb taken over. */
void server_conn_attach(struct conn *c, struct altcp_pcb *pcb, bool tls);
/* RST and free; FIN and free (a close_notify first over TLS). Both return
 * what an lwIP callback hands back (ERR_ABRT for the abort). */
err_t server_conn_abort(struct conn *c);
err_t server_conn_close(struct conn *c);
/* A PROXY header from a proxy.trusted= peer (proxyproto.h) names the
 * client: it becomes c's peer and the table counts c (and its handshake)
 * for it; false when the table has no memory for the client's node. */
struct proxyproto_hdr;
bool server_proxy_peer(struct conn *c, const struct proxyproto_hdr *h);
/* The last response is written: FIN, then linger (C_LINGER). */
err_t server_begin_close(struct conn *c);
/* Move the connection forward as far as it goes (writes, parses, answers
 * pipelined requests). Callers return what this returns and must not
 * touch c afterwards: it may be freed. */
err_t server_pump(struct conn *c);
/* server_pump() from the loop, unless a handler runs inline. */
void server_kick(struct conn *c);
/* vireo_resp_write()'s bytes written to lwIP at once when nothing of the
 * stream waits in sbuf (plain connections, images without TLS): how many
 * it took. Never ends c. */
#if !LWIP_ALTCP_TLS
size_t server_stream_direct(struct conn *c, const void *data, size_t len);
#else
static inline size_t server_stream_direct(struct conn *c, const void *data, size_t len)
{
	(void)c, (void)data, (void)len;
	return 0;
}
#endif
/* The framing rule, the one keep-alive decision every response head
 * takes: keep-alive only if the request asked for it, the server is not
 * draining, nothing decided to close, and what is left of the request's
 * body (req_left) can be dropped (HTTP_DISCARD_MAX); server_start_send()
 * enforces it whatever a head said. */
bool server_keep_alive(const struct conn *c);
/* A response starts: SEND, its stall window and counters; closes after it
 * unless server_keep_alive(). Every response passes here. */
void server_count_response(int status);
void server_start_send(struct conn *c);
/* A canned error page into out[]; closes afterwards. extra: header lines
 * (a route's Allow) or NULL. */
void server_respond_error(struct conn *c, int status, bool head_only);
void server_respond_error_extra(struct conn *c, int status, bool head_only, const char *extra);

/* ---- exchange.c: a request for a route ---- */

/* The request the parser completed, for route rt: its method and body
 * checked, the body read (BODY) or the handler called. */
void exchange_request(struct conn *c, const struct api_route *rt);
/* Room in the request body for n more bytes that have arrived (at most
 * what is left of the declared length): false, nothing changed, when a
 * share, the budget or the heap refuses (then 503). */
bool exchange_body_room(struct conn *c, u32 n);
/* The body is in: the handler gets the request. */
void exchange_dispatch(struct conn *c);
/* The exchange ends: the handle goes stale, then on_done hears it. */
void exchange_end(struct conn *c, bool done);
/* ---- reqbody.c: chunked and streamed request bodies ---- */

/* Both are set by vireo_http_bodies() (the first route with max_body or
 * on_body): NULL in an image whose routes take no body, which then
 * links neither reqbody.c nor the chunked decoder. */
struct reqbody_ops {
	/* A route that streams its body (on_body): 413 past body_limit at
	 * the head, else the handler at once, the body to on_body after it. */
	void (*stream_start)(struct conn *c, const struct api_route *rt);
	/* BODY with a chunked body, APP with body_stream: rx[] through the
	 * decoder (chunked) into the body or to on_body. 1 when the pump
	 * should go round again (dispatched, ended, the app answered, an
	 * error being answered), 0 to wait for bytes or a resume. */
	int (*pump)(struct conn *c);
};
extern const struct reqbody_ops *reqbody;

/* Frees the request body and the stream buffer and gives back the budget. */
void exchange_release(struct conn *c);

/* ---- admission.c: accepting ---- */

/* The listeners' accept callback (arg: &http_srv.listen_tls for HTTPS). */
err_t admission_accept(void *arg, struct altcp_pcb *pcb, err_t err);

#endif
