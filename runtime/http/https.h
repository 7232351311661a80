/* The appliance's HTTPS listener (docs/https.md): the HTTP server of
 * server.c behind lwIP's altcp_tls over mbedTLS, on https= (default 443),
 * built with make TLS=1. Its keys: https=, http.redirect=. */
#ifndef VIREO_NET_APP_HTTPS_H
#define VIREO_NET_APP_HTTPS_H

#include "lib/types.h"

/*
 * Limits. What one TLS connection holds of the TLS heap is at most 30 KiB
 * (TLS_CONN_BYTES in net/tls/tls.h, measured) while it holds record
 * buffers (handshaking, or in a record), at most 4 KiB (TLS_IDLE_BYTES)
 * idle, and at most the plan's slots hold them at once (tlsmem.buf_slots:
 * 64 at the floor, 146 at -m 256); the keys and
 * configuration about 8 KiB. The HTTPS server admits https_max_conns() TLS
 * connections: the boot's plan (net/tls/tlsmem.h), sized with the TLS heap
 * from the VM's RAM so that each has its bytes whatever the others do:
 * HTTPS_MAX_CONNS (64) up to 64 MiB of RAM (64 x 30,720 + 8,192 + the
 * certificate slots = 2,072,576 B in the 2 MiB (2,097,152 B) floor heap),
 * 726 at -m 256; an accepted connection never finds the heap full because
 * of the others. Handshakes
 * cost the most CPU (one ECDHE and
 * one signature each) and are what a flood makes: at most
 * https.handshakes= (default HTTPS_MAX_HANDSHAKES) run at once,
 * https.handshakes_per_source= (default HTTPS_MAX_HANDSHAKES_PER_SRC) from
 * one source (IPv4 address, IPv6 /64); more are reset on accept (when all
 * handshake slots are taken, a source running fewer than its share evicts
 * the oldest handshake of the source running the most), and the other
 * connections stay for those whose handshake is done. Both keys are at
 * most HTTPS_MAX_CONNS, the floor (a handshake is a connection, so the
 * heap arithmetic holds whatever they are set to); a handshake is bounded
 * in time by https.hello_timeout= from accept to the ClientHello and by the
 * server's header timeout (accept to a complete first request head,
 * 10 s). Their rate, per prefix and in all, and the CPU they may take per
 * loop pass: runtime/http/hsgate.h.
 */
#define HTTPS_MAX_CONNS			64	/* the floor of https_max_conns() */

/*
 * What a TLS connection may keep queued in lwIP (runtime/http/server.c): the
 * encrypted bytes in its TCP send queue, records and their framing, measured
 * from lwIP's send buffer (not the plaintext count, which leaves out the
 * 22-29 bytes a record adds). HTTP_COPY_INFLIGHT (8 KiB) unless the
 * connection holds a bulk grant: then HTTPS_BULK_INFLIGHT, so a 64 KiB
 * response goes in two round trips instead of eight. A grant is taken when a
 * response has more left than 8 KiB allows and given back once everything
 * written is acknowledged or the connection ends; at most HTTPS_BULK_MAX
 * connections hold one, for net/port/lwipopts.h's heap worst case.
 */
#define HTTPS_BULK_INFLIGHT		32768
/* What a record adds to its plaintext, at most, with the suites
 * net/tls/mbedtls_config.h enables: 5 header + 8 explicit nonce (TLS 1.2
 * GCM) + 16 tag, or 5 + 1 content type + 16 + padding (TLS 1.3), < 64. */
#define TLS_RECORD_FRAMING_MAX		64
#define HTTPS_BULK_MAX			2
#define HTTPS_MAX_HANDSHAKES		16	/* https.handshakes= default */
#define HTTPS_MAX_HANDSHAKES_PER_SRC	8	/* https.handshakes_per_source= default */

/* Why a handshake did not finish. */
enum https_fail {
	HTTPS_FAIL_NO_COMMON,	/* no common version, suite or group */
	HTTPS_FAIL_MALFORMED,	/* a bad record or handshake message */
	HTTPS_FAIL_PEER_ALERT,	/* the client sent a fatal alert */
	HTTPS_FAIL_MEMORY,	/* the TLS heap could not give what it needed */
	HTTPS_FAIL_OTHER,	/* any other mbedTLS error */
	HTTPS_FAIL_CLOSED,	/* the peer closed or reset, or it was evicted */
	HTTPS_FAIL_TIMEOUT,	/* the header timeout ran out */
	HTTPS_FAIL_LIMIT,	/* refused on accept: https.handshakes= or https_max_conns() */
	HTTPS_FAIL_LIMIT_SOURCE, /* refused on accept: https.handshakes_per_source= */
	HTTPS_FAIL_COUNT
};

/* Counters on /metrics as vireo_https_*. */
struct https_stats {
	u64 handshakes;			/* completed */
	u64 failures[HTTPS_FAIL_COUNT];
	u64 handshakes_active;		/* gauge */
	u64 handshakes_evicted;		/* of the closed ones: to make room for a lighter source */
	u64 hello_timeouts;		/* of the timed out ones: no ClientHello by https.hello_timeout= */
	u64 conns_active;		/* gauge: TLS connections the server holds */
	u64 conns_evicted;		/* idle ones reset: all were taken and a newcomer came */
	u64 resumptions;		/* session tickets accepted */
	u64 tickets_refused;		/* session tickets that did not open */
	u64 ticket_rotations;		/* ticket keys replaced */
#ifdef VIREO_TLS
	u32 bulk_grants;		/* gauge: connections holding a bulk grant */
	u32 bulk_peak;			/* most at once */
	u64 bulk_refused;		/* asked for one while all were held (per write) */
	u64 alerts_sent;		/* fatal alerts sent for failures mbedTLS left without one */
	u64 alpn01_handshakes;		/* TLS-ALPN-01 handshakes sent a challenge certificate */
	u64 alpn01_refused;		/* acme-tls/1 for a name with no challenge set */
#endif
};
extern struct https_stats https_stats;

/* The https= port, and whether http.redirect= asked for redirects. */
u16 https_port(void);
/* https.handshakes= and https.handshakes_per_source= (1-HTTPS_MAX_CONNS). */
u32 https_max_handshakes(void);
/* TLS connections admitted at once: the boot's plan (net/tls/tlsmem.h),
 * HTTPS_MAX_CONNS in images without TLS. */
u32 https_max_conns(void);
/* https.hello_timeout=: ms from accept to a parsed ClientHello (server.c's
 * poll closes a handshake that has none by then). */
u64 https_hello_timeout_ms(void);
#define HTTPS_HELLO_TIMEOUT_MS		3000	/* https.hello_timeout= default */
u32 https_max_handshakes_per_src(void);

/* The Strict-Transport-Security line (with its CRLF) HTTPS responses carry
 * (https.hsts= with a CA-issued certificate); returns its length, 0 for
 * none (also in images without TLS). */
size_t https_hsts_line(const char **line);
#define HTTPS_HSTS_LINE_MAX 64

/* make TLS=1: after tls_start() succeeded, configure TLS (certificate, ALPN
 * http/1.1) and open the listener through http_server_listen_tls(); tells
 * netup the port for the ready line and the server the redirect. Logs and
 * returns negative on failure (HTTP unaffected). */
int https_start(void);
/* tls.names= as given ("" when not): for tls_start() (net/tls/tls.h). */
const char *https_tls_names(void);

struct altcp_pcb;
/* The most one altcp_write() on the TLS connection pcb may take: one
 * record's payload (4096 B, MBEDTLS_SSL_OUT_CONTENT_LEN, 4095 under TLS
 * 1.3); altcp_tls cannot report a partial write. */
u16 https_write_max(struct altcp_pcb *pcb);
/* Queue a close_notify alert on pcb (once its handshake is done): an
 * orderly TLS close, before our FIN (RFC 8446 6.1). */
void https_close_notify(struct altcp_pcb *pcb);

/* make TLS=1: the certificate served, switched without dropping anything
 * (issue 33; net/tls/tls.h has the heap arithmetic, docs/https.md the
 * behaviour). */
struct tls_keys;
/* Serve k's chain and key on new handshakes from now on; connections and handshakes already under way keep the certificate they started with, and the previous keys are freed once nothing uses them. Moves *k in (k left empty) on 0; negative, k untouched, on failure. source: "esp", "built-in", "generated", "acme" (the console, `cert` and vireo_tls_cert_info on /metrics say it). */
int https_cert_install(struct tls_keys *k, const char *source);
/* TLS-ALPN-01 (RFC 8737): while set, a ClientHello that offers the ALPN protocol acme-tls/1 (only) with SNI name gets a self-signed certificate for name carrying RFC 8737's critical acmeIdentifier extension holding acme_id (the SHA-256 of the key authorization), ALPN acme-tls/1 is selected, and the connection is closed after the handshake (no HTTP on it). At most TLS_NAMES_MAX at once; 0 or negative. */
int https_alpn01_set(const char *name, const u8 acme_id[32]);
void https_alpn01_clear(const char *name);	/* NULL: all */
/* The server's connection pcb went away during its handshake: the
 * certificate the handshake held is let go (runtime/http/server.c). */
void https_handshake_gone(struct altcp_pcb *pcb);

/* make TLS=1: a TLS client's handshake (runtime/tcp_out.c sets it when a
 * client first connects): vireo_tls_handshake_hook() passes every client
 * handshake's outcome here instead of counting it as the server's. */
struct altcp_pcb;
struct mbedtls_ssl_context;
extern void (*https_client_handshake)(struct altcp_pcb *conn, struct mbedtls_ssl_context *ssl, int ret);

#endif
