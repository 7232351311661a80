/*
 * vireo's application API: TCP and UDP services of the app's own, IPv4 and
 * IPv6 on every address of the appliance.
 *
 * TCP: the runtime accepts, applies the service's connection limits (a
 * table with a per-source cap and a fair share when full, as the HTTP
 * server's: runtime/conntab.h), timeouts and the HTTP server's throughput
 * floor for slow readers (net/tcp/tcpconn.h), and hands the app a vireo_tcp
 * handle per connection. Received bytes are offered through on_recv, which
 * says how many it consumed; the rest stays in the runtime's receive buffer
 * (VIREO_TCP_RXBUF) and the peer's window closes until the app consumes it,
 * so a fast sender cannot make the appliance buffer more. vireo_tcp_send()
 * copies what fits under the per-connection send bound (VIREO_TCP_INFLIGHT
 * bytes unacknowledged) and on_writable says when there is room again.
 *
 * UDP: one callback per datagram with its source; datagrams over the
 * service's max_datagram (at most VIREO_UDP_MAX) are dropped and counted,
 * as are datagrams from port 0 and from or to broadcast or multicast
 * addresses, and by default those from a service's port (a source port
 * below 1024, 1900, 5353 or 11211, or the service's own port): a spoofed
 * one would start a loop with a service that answers anything (chargen,
 * echo, daytime, ... or another host's copy of ours). Clients send from
 * ephemeral ports; VIREO_UDP_ANY_SOURCE_PORT opts a service out (docs/apps.md).
 * Replies go out with vireo_udp_send(). Rate limits against reflection are
 * the app's to apply (it knows what an answer costs); the runtime bounds
 * only what one datagram can make it hold.
 *
 * TCP clients: an app connects out through a client it made (the
 * vireo_tcp_client struct: callbacks, timeouts, a cap on connections at
 * once) to an IPv4 or IPv6 address and port. vireo_tcp_connect() hands back
 * a vireo_tcp at once; on_connected or on_fail (refused, timed out,
 * unreachable, or refused by the egress policy: loopback, unspecified,
 * link-local, private, multicast and broadcast addresses unless the
 * egress.allow= key lists them) follows from the loop. A connected one has
 * the same contract as an accepted one: on_recv consumes, the rest held
 * (VIREO_TCP_RXBUF) with the window closed, vireo_tcp_send() under
 * VIREO_TCP_INFLIGHT with on_writable, the same close, abort, timeouts.
 *
 * Names: vireo_resolve() looks a host name up (A, AAAA or both) through
 * the appliance's resolver: the dns= servers, then a DHCP lease's, one at
 * a time with failover; a cache bounded by memory that honours TTLs (5 s
 * to 1 h) and remembers names that do not exist (RFC 2308, 5 s to 5 min);
 * one query shared by every lookup of a name in flight; a deadline per
 * lookup. Its answer comes from the loop, a cached one too.
 * vireo_tcp_connect_name() connects by name: the egress policy applies to
 * every address the name gives (a name resolving to a private or
 * link-local address is refused like the address itself: DNS rebinding).
 *
 * Every service's counters are on /metrics as vireo_app_tcp_* and
 * vireo_app_udp_* with a service="name" label, every client's as
 * vireo_app_tcp_out_* with a client="name" label.
 */
#ifndef VIREO_API_NET_H
#define VIREO_API_NET_H

#include "vireo/app.h"

/* ---- TCP ---- */

/* One accepted connection. Pass by value; 0 is never a live handle. */
typedef struct vireo_tcp {
	u32 id;
} vireo_tcp;

/* lwIP's heap budget (net/port/lwipopts.h) counts 16 live connections besides
 * HTTP's: every service's and every client's together (apps/echo's
 * included); clients' at most VIREO_TCP_OUT_MAX of them. */
#define VIREO_TCP_SERVICES_MAX 5	/* listening services, all apps (echo's included) */
#define VIREO_TCP_CONNS_MAX 16		/* one service's max_conns at most */
#define VIREO_TCP_CONNS_TOTAL 16	/* live connections of every service */
#define VIREO_TCP_RXBUF 8192		/* received bytes held per connection at most
					 * (one TCP window, 5840 B, is all a peer may send) */
#define VIREO_TCP_INFLIGHT 4096		/* copied bytes unacknowledged per connection */
/* A bulk service's connection (uploads: apps/echo) holding the bulk receive
 * window: its received bytes held, and its copied bytes unacknowledged, at
 * most this (net/port/lwipopts.h VIREO_RXMEM_BULK_WND); at most
 * VIREO_TCP_BULK_CONNS connections of every service hold one at once. */
#define VIREO_TCP_BULK_RXBUF 46720
#define VIREO_TCP_BULK_CONNS 2
#define VIREO_TCP_MAX_CONNS_DEFAULT 8
#define VIREO_TCP_IDLE_MS_DEFAULT 60000	/* no byte either way */
#define VIREO_TCP_SEND_MS_DEFAULT 30000	/* data outstanding, no ACK progress */

/* A zero limit takes the default in brackets. */
struct vireo_tcp_service {
	const char *name;	/* 1..31 of [a-z0-9_-]: the metrics label */
	u16 port;		/* not 0, not a port in use (http=, https=, echo) */
	u32 max_conns;		/* [VIREO_TCP_MAX_CONNS_DEFAULT], <= VIREO_TCP_CONNS_MAX;
				 * more are reset on accept */
	u32 max_per_src;	/* from one source (IPv4 address, IPv6 /64) while the
				 * table has room [max_conns / 4, at least 1] */
	u32 idle_timeout_ms;	/* [VIREO_TCP_IDLE_MS_DEFAULT] */
	u32 send_timeout_ms;	/* [VIREO_TCP_SEND_MS_DEFAULT] */
	/* Ask for the bulk receive window at accept: while one of the
	 * VIREO_TCP_BULK_CONNS grants is free the connection's receive
	 * buffer and send bound are VIREO_TCP_BULK_RXBUF, else one TCP
	 * window (5840 B) each. */
	bool bulk;

	/* All optional but on_recv. */
	void (*on_accept)(vireo_tcp c, void *arg);
	/* data[0..len) (len >= 1) is everything received and not yet
	 * consumed; returns how many bytes it consumed (<= len). The rest
	 * is offered again when more arrives, after on_writable (room to
	 * answer), or on vireo_tcp_recv_again(). */
	size_t (*on_recv)(vireo_tcp c, const void *data, size_t len, void *arg);
	/* The peer sent its FIN after the bytes already offered. */
	void (*on_eof)(vireo_tcp c, void *arg);
	/* Room again after vireo_tcp_send() took less than asked. */
	void (*on_writable)(vireo_tcp c, void *arg);
	/* The connection is gone (closed, reset, timed out, evicted for a
	 * newcomer, power off); c is stale during the call except for
	 * vireo_tcp_ctx(c), which still returns the context to free. */
	void (*on_close)(vireo_tcp c, void *arg);
	void *arg;
};

/* Listen (the struct is copied). 0, or (logged) -EINVAL (no on_recv, port
 * 0, bad name, limits too large), -EEXIST (the port is taken), -ENOSPC
 * (VIREO_TCP_SERVICES_MAX), -ENOMEM, -EIO. */
int vireo_tcp_listen(const struct vireo_tcp_service *s);

/* Copies up to len bytes for sending and returns how many: less than len
 * (0 included) when the send bound is reached, and on_writable follows.
 * -EPIPE when stale or closing. */
int vireo_tcp_send(vireo_tcp c, const void *data, size_t len);
/* Offer the unconsumed received bytes again (after on_recv consumed less
 * than it was given and the app can now take more). 0 or -EPIPE. */
int vireo_tcp_recv_again(vireo_tcp c);
/* Close after what was sent is delivered (FIN); on_close follows. */
int vireo_tcp_close(vireo_tcp c);
/* Half-close: FIN after what was sent (a TLS connection's close_notify
 * first), while the peer's bytes still come (on_recv, then on_eof at its
 * FIN); vireo_tcp_send() is -EPIPE from here. vireo_tcp_close() or
 * vireo_tcp_abort() still ends it. 0 or -EPIPE. */
int vireo_tcp_shutdown(vireo_tcp c);
/* Reset now; on_close follows (from the loop, not from this call). */
int vireo_tcp_abort(vireo_tcp c);
int vireo_tcp_peer(vireo_tcp c, struct vireo_addr *a);
/* One pointer of the app's per connection (NULL at accept). */
int vireo_tcp_set_ctx(vireo_tcp c, void *ctx);
void *vireo_tcp_ctx(vireo_tcp c);

/* A service's counters, as vireo_app_tcp_*{service=...} shows them: for an
 * app that exports its own view (apps/echo). */
struct vireo_tcp_stats {
	u64 accepted;		/* connections accepted */
	u64 refused;		/* reset on accept: limits or memory */
	u64 refused_source;	/* of those, for the per-source limit */
	u64 evicted;		/* reset for a source below its fair share */
	u64 timeouts_idle, timeouts_send;	/* reset by a timeout */
	u64 timeouts_slow;	/* reset below the throughput floor (a slow reader) */
	u64 rx_bytes, tx_bytes;	/* received; taken by vireo_tcp_send() */
	u64 active;		/* open now (a client's: connecting too) */
	/* A client's (vireo_tcp_client_stats()): connections established,
	 * and those that never were, by reason (enum vireo_tcp_fail's
	 * order); refused above counts connects refused for the cap or
	 * memory. */
	u64 connected;
	u64 failed_refused, failed_timeout, failed_unreachable, failed_policy, failed_aborted;
	u64 failed_name;
	/* TLS clients' (enum vireo_tcp_fail's order, after failed_name). */
	u64 failed_tls, failed_cert, failed_cert_name, failed_cert_expired, failed_cert_untrusted;
	u64 failed_noclock, failed_noca;
};
/* The counters of the service listening on port into *st: 0, or -ENOENT. */
int vireo_tcp_stats(u16 port, struct vireo_tcp_stats *st);

/* ---- TCP: connecting out ---- */

/* A client (a set of callbacks and caps for outbound connections). */
typedef struct vireo_tcp_out {
	u32 id;
} vireo_tcp_out;

#define VIREO_TCP_CLIENTS_MAX 4		/* clients, all apps */
#define VIREO_TCP_OUT_MAX 8		/* outbound connections at once, all clients
					 * (among VIREO_TCP_CONNS_TOTAL) */
#define VIREO_TCP_OUT_DEFAULT 4		/* a client's max_conns */
#define VIREO_TCP_CONNECT_MS_DEFAULT 10000

/* Why an outbound connection never was (on_fail). */
enum vireo_tcp_fail {
	VIREO_TCP_FAIL_REFUSED = 1,	/* the peer answered with a reset */
	VIREO_TCP_FAIL_TIMEOUT,		/* no answer by the connect deadline */
	VIREO_TCP_FAIL_UNREACHABLE,	/* no route to the address */
	VIREO_TCP_FAIL_POLICY,		/* the egress policy: no packet was sent */
	VIREO_TCP_FAIL_ABORTED,		/* closed or aborted by the app, power off */
	VIREO_TCP_FAIL_NAME,		/* vireo_tcp_connect_name(): the name gave no address */
	/* TLS clients (make TLS=1 images, struct vireo_tcp_client.tls): */
	VIREO_TCP_FAIL_TLS,		/* the handshake failed: the server's alert, no common
					 * protocol or suite, a broken record, TLS memory */
	VIREO_TCP_FAIL_CERT,		/* the certificate refused for another reason
					 * (key usage, a bad signature or key) */
	VIREO_TCP_FAIL_CERT_NAME,	/* it is not for the server name asked */
	VIREO_TCP_FAIL_CERT_EXPIRED,	/* it (or its chain) is expired or not yet valid */
	VIREO_TCP_FAIL_CERT_UNTRUSTED,	/* it chains to no CA of the bundle */
	VIREO_TCP_FAIL_NOCLOCK,		/* no wall clock yet: no certificate can be judged */
	VIREO_TCP_FAIL_NOCA,		/* no CA bundle (EFI/vireo/tls/ca.pem, make TLS_CA=) */
};
/* "refused", "timeout", "unreachable", "policy", "aborted", "name", "tls",
 * "cert", "cert_name", "cert_expired", "cert_untrusted", "noclock", "noca"
 * (the metrics' reason label), "?" for anything else. */
const char *vireo_tcp_fail_str(enum vireo_tcp_fail why);

/* A zero limit takes the default in brackets. */
struct vireo_tcp_client {
	const char *name;	/* 1..31 of [a-z0-9_-]: the metrics label */
	u32 max_conns;		/* at once [VIREO_TCP_OUT_DEFAULT], <= VIREO_TCP_OUT_MAX */
	u32 connect_timeout_ms;	/* [VIREO_TCP_CONNECT_MS_DEFAULT]; counted in 500 ms ticks */
	u32 idle_timeout_ms;	/* [VIREO_TCP_IDLE_MS_DEFAULT], once connected */
	u32 send_timeout_ms;	/* [VIREO_TCP_SEND_MS_DEFAULT] */

	/* All optional but on_recv. c is the handle vireo_tcp_connect()
	 * gave; the rest as struct vireo_tcp_service's. */
	void (*on_connected)(vireo_tcp c, void *arg);
	/* The connection never was: c is stale as in on_close (its context
	 * still answers), and on_close does not follow. */
	void (*on_fail)(vireo_tcp c, enum vireo_tcp_fail why, void *arg);
	size_t (*on_recv)(vireo_tcp c, const void *data, size_t len, void *arg);
	void (*on_eof)(vireo_tcp c, void *arg);
	void (*on_writable)(vireo_tcp c, void *arg);
	void (*on_close)(vireo_tcp c, void *arg);	/* after on_connected only */
	void *arg;

	/* Downloads (the HTTP client's pools ask: response bodies): every
	 * connection's receive buffer, and the window the peer may fill, is
	 * VIREO_TCP_BULK_RXBUF instead of one TCP window (5840 B, in
	 * VIREO_TCP_RXBUF), so a body comes in 32 segments a round trip
	 * instead of 4; 48 segments (70,080 B) when the boot's plan has the
	 * memory (net/port/netmem.h, more than ~64.6 MiB of RAM). What the
	 * app sends stays under VIREO_TCP_INFLIGHT. Plain TCP only: a TLS
	 * client keeps the small window. At most VIREO_TCP_OUT_MAX x
	 * VIREO_TCP_BULK_RXBUF (365 KiB; 548 KiB wide) held received. */
	bool bulk;

	/* TLS (make TLS=1 images; -ENOTSUP otherwise): every connection of
	 * the client is TLS 1.3 or 1.2, the server's certificate verified
	 * against the CA bundle (EFI/vireo/tls/ca.pem, else make TLS_CA=),
	 * its dates against the wall clock and its name against the server
	 * name (vireo_tls_connect()'s, or vireo_tcp_connect_name()'s name),
	 * which is also sent as SNI; anything unverified is refused (on_fail:
	 * VIREO_TCP_FAIL_CERT_*, _NOCLOCK, _NOCA, _TLS), never connected.
	 * on_connected follows the verified handshake; on_recv has the
	 * plaintext, vireo_tcp_send() takes plaintext, with the same
	 * back-pressure (one TLS record, 4 KiB, at most in flight). At most
	 * VIREO_TLS_OUT_MAX TLS connections at once, all clients. */
	bool tls;
	/* ALPN: the protocols offered, NULL-terminated (each 1..255 bytes),
	 * or NULL for none; the array must outlive the client (static).
	 * vireo_tls_alpn() says which one the server chose. */
	const char *const *alpn;
};

/* TLS client connections at once, all clients (among VIREO_TCP_OUT_MAX):
 * what the TLS heap keeps for them (net/tls/tls.h, docs/https.md). */
#define VIREO_TLS_OUT_MAX 4

/* A client (the struct is copied) into *out. 0, or (logged) -EINVAL (no
 * on_recv, bad name, limits too large), -ENOSPC (VIREO_TCP_CLIENTS_MAX),
 * -ENOMEM. */
int vireo_tcp_client(const struct vireo_tcp_client *cfg, vireo_tcp_out *out);

/* Connects to dst (VIREO_AF_INET or VIREO_AF_INET6, a port) with ctx as
 * the connection's context: 0 and *c, then on_connected or on_fail from
 * the loop (the policy's refusal too, logged). Until on_connected,
 * vireo_tcp_send() and vireo_tcp_peer() answer -ENOTCONN; close and
 * abort end it (on_fail, VIREO_TCP_FAIL_ABORTED). -EINVAL (bad handle or
 * address), -ENOSPC (the client's max_conns or VIREO_TCP_OUT_MAX open, or
 * all VIREO_TCP_CONNS_TOTAL: counted as refused), -ENOMEM. */
int vireo_tcp_connect(vireo_tcp_out cl, const struct vireo_addr *dst, void *ctx, vireo_tcp *c);

/* Connects to name (a host name, vireo_resolve()'s rules) and port: as
 * vireo_tcp_connect(), the handle at once, then on_connected or on_fail.
 * The name is resolved (A and AAAA, IPv4 first); every address is judged
 * by the egress policy (refused ones logged and counted in
 * vireo_resolve_refused_egress_total: a name that resolves to a private or
 * link-local address is refused like the address, whatever its DNS says);
 * the allowed ones are tried in order, the next after a reset or no route,
 * all within the client's connect_timeout_ms from this call. on_fail:
 * VIREO_TCP_FAIL_NAME (no address: no such name, no answer in time),
 * _POLICY (every address refused), or the last address's reason. -EINVAL,
 * -ENOSPC, -ENOMEM as vireo_tcp_connect(), or vireo_resolve()'s. */
int vireo_tcp_connect_name(vireo_tcp_out cl, const char *name, u16 port, void *ctx, vireo_tcp *c);

/* A TLS client's connection to dst, verified for server_name (a host name,
 * 1..253 bytes; sent as SNI): as vireo_tcp_connect(), on_connected once the
 * handshake is done and the certificate verified. vireo_tcp_connect() on a
 * TLS client is refused (-EINVAL: no name to verify); so is this call on a
 * plain one. -ENOSPC also when VIREO_TLS_OUT_MAX are open. */
int vireo_tls_connect(vireo_tcp_out cl, const struct vireo_addr *dst, const char *server_name, void *ctx,
		      vireo_tcp *c);

/* The ALPN protocol the server chose (one of the client's alpn strings),
 * or NULL (none, not connected yet, not TLS, stale). */
const char *vireo_tls_alpn(vireo_tcp c);

/* A client's counters (vireo_app_tcp_out_*{client=...}): 0, or -EINVAL. */
int vireo_tcp_client_stats(vireo_tcp_out cl, struct vireo_tcp_stats *st);

/* ---- Names ---- */

#define VIREO_RESOLVE_A 1u		/* IPv4 addresses */
#define VIREO_RESOLVE_AAAA 2u		/* IPv6 addresses */
#define VIREO_RESOLVE_ANY 3u		/* both: IPv4 first */
#define VIREO_RESOLVE_MAX 16		/* addresses one answer gives, at most (8 a family) */
#define VIREO_RESOLVE_MS_DEFAULT 5000	/* a lookup's deadline unless it gives one */
#define VIREO_RESOLVE_PENDING 16	/* lookups waiting at once, all apps */

/* A lookup's end: err 0 with addrs[0..n) (n >= 1, family and ip set, port
 * 0; valid during the call only) good for ttl seconds; or -ENOENT (no
 * such name, or no address of the families asked), -ETIMEDOUT (no answer
 * by the deadline), -EIO (every server failed), -ECANCELED (power off). */
typedef void (*vireo_resolve_fn)(void *ctx, int err, const struct vireo_addr *addrs, unsigned n, u32 ttl);

/* Looks name (a host name: letters, digits, '-', '_', dots; at most 253)
 * up for families (VIREO_RESOLVE_*) within timeout_ms (0: the default):
 * 0, then cb from the loop (never from this call). -EINVAL (a bad name,
 * families or cb), -ENOSPC (VIREO_RESOLVE_PENDING lookups waiting, or the
 * resolver's 8 queries in flight), -ENETUNREACH (no DNS server: no dns=,
 * no lease yet), -ENOMEM. */
int vireo_resolve(const char *name, unsigned families, u32 timeout_ms, vireo_resolve_fn cb, void *ctx);

/* The resolver's counters (vireo_resolve_*_total on /metrics). */
struct vireo_resolve_stats {
	u64 lookups, cache_hits, negative_hits, shared;
	u64 queries, timeouts, failovers, bad_responses, refused;
	u64 refused_egress;	/* vireo_tcp_connect_name(): addresses the policy refused */
};
/* Into *st: 0, or -ENOENT before the first vireo_resolve(). */
int vireo_resolve_stats(struct vireo_resolve_stats *st);

/* ---- UDP ---- */

typedef struct vireo_udp {
	u32 id;
} vireo_udp;

#define VIREO_UDP_SERVICES_MAX 5	/* echo's included */
#define VIREO_UDP_MAX 65507		/* a datagram's payload, either way: UDP's own
					 * bound (the runtime keeps one buffer of the
					 * largest max_datagram bound) */
#define VIREO_UDP_DGRAM_DEFAULT 512

/* vireo_udp_service.flags: answer datagrams from every source port but 0,
 * service ports included (an NTP peer, a DNS forwarder that still sends
 * from port 53); the service then bounds its own loops. */
#define VIREO_UDP_ANY_SOURCE_PORT 1u

struct vireo_udp_service {
	const char *name;	/* 1..31 of [a-z0-9_-] */
	u16 port;
	u32 max_datagram;	/* [VIREO_UDP_DGRAM_DEFAULT], <= VIREO_UDP_MAX */
	u32 flags;		/* VIREO_UDP_*: 0 */
	/* data[0..len) is valid during the call only. */
	void (*on_recv)(vireo_udp u, const struct vireo_addr *src, const void *data, size_t len,
			void *arg);
	void *arg;
};

/* Bind (the struct is copied); *out (may be NULL) gets the socket. 0, or
 * (logged) -EINVAL, -EEXIST, -ENOSPC, -ENOMEM, -EIO. */
int vireo_udp_bind(const struct vireo_udp_service *s, vireo_udp *out);
/* Send data[0..len) (len <= VIREO_UDP_MAX) to dst from the service's port.
 * 0, -EINVAL (bad address, too long), -ENOMEM, -EIO, -EPIPE (bad handle). */
int vireo_udp_send(vireo_udp u, const struct vireo_addr *dst, const void *data, size_t len);

/* A UDP service's counters (vireo_app_udp_*{service=...}). */
struct vireo_udp_stats {
	u64 datagrams, bytes;	/* handed to on_recv */
	u64 sent, send_errors;	/* vireo_udp_send() */
	u64 dropped_size;	/* over max_datagram */
	/* dropped before the app saw them, by source: from port 0, from or to
	 * a broadcast address (or 0.0.0.0), from or to a multicast one, from a
	 * service's port (below 1024, 1900, 5353, 11211), from the service's
	 * own port (the last two unless VIREO_UDP_ANY_SOURCE_PORT) */
	u64 dropped_port0, dropped_broadcast, dropped_multicast;
	u64 dropped_service_port, dropped_own_port;
};
/* u's counters into *st: 0, or -EPIPE (bad handle). */
int vireo_udp_stats(vireo_udp u, struct vireo_udp_stats *st);

#endif
