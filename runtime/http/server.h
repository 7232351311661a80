/* The appliance's HTTP/1.1 server: the routes' (the apps' and the runtime's
 * own /healthz and /metrics) over the TCP connection base. Its four files
 * and what they share: runtime/http/conn.h. */
#ifndef VIREO_NET_APP_SERVER_H
#define VIREO_NET_APP_SERVER_H

#include "lib/types.h"

/* Limits and timeouts; a zero field takes the default in brackets. */
struct http_server_cfg {
	u32 max_conns;		/* live connections [the boot's plan, net/port/netmem.h:
				 * 64 up to 64 MiB of RAM]; more are reset on accept */
	u32 idle_timeout_ms;	/* keep-alive: no byte of a next request [30000] */
	u32 header_timeout_ms;	/* accept or first byte -> complete head [10000] */
	u32 send_timeout_ms;	/* response data outstanding, no ACK progress [30000] */
	u32 linger_ms;		/* after our FIN, all data acked, wait for the peer's [2000] */
	u32 max_per_src;	/* connections from one source (IPv4 address, IPv6 /64)
				 * while the table has room [max_conns]; when it is full a
				 * source below its fair share evicts from the heaviest */
	u32 send_min_bytes;	/* bytes the peer must ack per send_timeout [4096] */
};

#define HTTP_SERVER_MAX_CONNS 64	/* the plan's floor (listen.c checks) */
#define HTTP_SERVER_IDLE_MS 30000
#define HTTP_SERVER_HEADER_MS 10000
#define HTTP_SERVER_SEND_MS 30000
#define HTTP_SERVER_LINGER_MS 2000
#define HTTP_SERVER_SEND_MIN_BYTES 4096

/* /metrics is generated into at most this many bytes per request. */
#define HTTP_METRICS_MAX (64 * 1024)

/* Counters since http_server_start(); exported on /metrics as vireo_http_*. */
struct http_server_stats {
	u64 requests;			/* complete heads, and parse errors */
	u64 responses[6];		/* [n] = nxx responses (index 0 unused) */
	u64 conns_accepted;
	u64 conns_refused;		/* over max_conns or out of memory: reset */
	u64 conns_refused_source;	/* of those, over max_per_src */
	u64 conns_evicted;		/* reset to make room for a source below its share */
	u64 conns_active;		/* gauge */
	u64 conns_reset;		/* closed by an error: peer RST, lwIP abort */
	u64 timeouts_idle, timeouts_header, timeouts_send;
	u64 timeouts_slow;		/* below the throughput floor (conn.h, tcpconn.h TCPCONN_FLOOR_DRAIN_MS) */
	u64 rx_bytes, tx_bytes;		/* request bytes read, response bytes queued */
	u64 metrics_truncated;		/* /metrics responses cut at HTTP_METRICS_MAX */
	u64 proxy_headers, proxy_refused;	/* PROXY headers taken; connections reset for a bad one */
	u64 forwarded;
	u64 bulk_slow;		/* bulk grants given back for a reader below HTTP_BULK_MIN_BPS */		/* requests whose X-Forwarded-For named the client */
	/* Copied bodies' bulk grants (conn.h HTTP_COPY_BULK_MAX; no TLS); not
	 * on /metrics (their lines would cost the default image 512 B). */
	u32 copy_bulk_grants;
	u64 copy_bulk_refused;		/* writes that asked while all were held */
};
extern struct http_server_stats http_server_stats;

/*
 * Listen on port (IPv4 and IPv6, IPADDR_TYPE_ANY) and serve the routes
 * (http_server_routes(), vireo_http_route()). cfg may be NULL for the defaults and is
 * copied. Zeroes the counters and registers them as the "http" metrics
 * source. Call from the event loop, after vireo_lwip_init(); the netif may
 * come up later. Returns 0, -EBUSY if already started, -ENOMEM or -EIO
 * (lwIP refused the bind or listen).
 */
int http_server_start(u16 port, const struct http_server_cfg *cfg);

/* Registers the runtime's own routes, /healthz and /metrics, in the route
 * table (api_apps_start(), before the apps' init). 0 or the table's error. */
int http_server_routes(void);

/* Moves the HTTP listener to port: listens there, then closes the old
 * listener (its connections go on). 0, -EBUSY (not started), -ENOMEM or
 * -EIO (the new port refused; the old one still listens). */
int http_server_rebind(u16 port);

/* Close the listener and abort every connection (RST); frees all the server
 * holds. Safe to call when not started. The counters stay readable. */
void http_server_stop(void);

/*
 * Graceful stop (power off): close the listener, close at once every
 * connection waiting for a request with no byte of it read (*idle_closed),
 * and let the others (*busy) finish the request they are in: its response
 * says "Connection: close" and the connection closes once it is written,
 * pipelined requests after it are dropped. The timeouts above still apply.
 * All are gone when http_server_stats.conns_active is 0; http_server_stop()
 * aborts what is left. No-op (0, 0) when not started or already draining.
 */
void http_server_drain(u32 *idle_closed, u32 *busy);

/* HTTPS (runtime/http/https.c, make TLS=1): listen on port through altcp_tls
 * with conf, after http_server_start(), serving the same routes with the
 * same limits, plus https.h's handshake and connection limits. 0, -EBUSY,
 * -ENOMEM or -EIO. */
struct altcp_tls_config;
int http_server_listen_tls(u16 port, struct altcp_tls_config *conf);
/* A connection's handshake ended (arg: its altcp arg, may be NULL). */
void http_server_handshake_end(void *arg);
/* A connection's ClientHello was parsed (its certificate chosen): the
 * hello deadline (https.hello_timeout=) no longer applies. */
void http_server_hello_seen(void *arg);
/* http.redirect=on: plain HTTP requests other than /healthz get a 301 to
 * https://<Host>[:https_port]/<path>. 0 turns it off. */
void http_server_set_redirect(u16 https_port);

#endif
