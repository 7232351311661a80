/*
 * HTTPS (docs/https.md): the server of server.c behind lwIP's altcp_tls
 * (net/port/patches/0003, 0004) over mbedTLS with net/tls/mbedtls_config.h, and
 * its counters on /metrics. Built into every image for its keys (https=
 * and http.redirect= are listed whatever the build); the listener itself
 * exists only with make TLS=1.
 *
 * The TLS configuration is altcp_tls's server one (mbedTLS's defaults:
 * TLS 1.2 and 1.3, as compiled), with the certificate chain and key that
 * net/tls/tls_port.c loaded and checked at boot (no second parse), no
 * client certificate asked for (ALTCP_MBEDTLS_AUTHMODE in lwipopts.h), and
 * ALPN "http/1.1" (a client offering only h2 gets no ALPN and speaks
 * HTTP/1.1 anyway or leaves).
 *
 * Every handshake ends through the hook patch 0004 adds to altcp_tls
 * (vireo_tls_handshake_hook(), below) or, when the peer goes away first,
 * through the server (HTTPS_FAIL_CLOSED/TIMEOUT): counted once either way.
 */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/types.h"
#include "lib/metrics.h"
#include "runtime/http/hsgate.h"
#include "runtime/http/https.h"
#include "runtime/http/server.h"
#include "net/net.h"
#ifdef VIREO_TLS
#include "lwip/altcp_tls.h"
#include "mbedtls/net_sockets.h"	/* MBEDTLS_ERR_NET_*, as altcp_tls reports them */
#include "mbedtls/ssl.h"
#include "mbedtls/ssl_ciphersuites.h"
#include "mbedtls/ssl_ticket.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "kernel/shell.h"
#include "lib/string.h"
#include "net/tls/tls.h"
#include "net/tls/tls_cert.h"
#include "net/tls/tls_held.h"
#include "net/tls/tls_keys.h"
#include "net/tls/tlsmem.h"
#endif

static u64 https_port_opt = 443;
CMDLINE_PARAM(https, .key = "https", .type = CMDLINE_UINT, .dst = &https_port_opt, .min = 1, .max = 65535,
	      .def = "443", .help = "the HTTPS server's TCP port (make TLS=1 images with a good key)");

static bool https_redirect;
CMDLINE_PARAM(http_redirect, .key = "http.redirect", .type = CMDLINE_BOOL, .dst = &https_redirect,
	      .def = "off", .help = "answer plain HTTP with 301 to HTTPS, except /healthz (when HTTPS is on)");
/* Behind a port forward or a load balancer the port clients reach HTTPS on
 * is not the one vireo listens on: the redirect names the public one. */
static u64 https_public_port;
CMDLINE_PARAM(https_public_port, .key = "https.public_port", .type = CMDLINE_UINT, .dst = &https_public_port,
	      .min = 0, .max = 65535, .def = "0",
	      .help = "the HTTPS port http.redirect= sends clients to (0: https=); set it behind a port forward");

/* HSTS (RFC 6797): only while the certificate is CA-issued. A browser that
 * saw it refuses the site for max-age seconds unless its certificate
 * verifies, so a generated or any self-signed certificate would lock
 * every visitor out; then it is withheld, and the boot log says so. */
static u64 https_hsts_s;
CMDLINE_PARAM(https_hsts, .key = "https.hsts", .type = CMDLINE_UINT, .dst = &https_hsts_s, .min = 0,
	      .max = 63072000, .def = "0",
	      .help = "Strict-Transport-Security max-age (seconds) on HTTPS responses, sent only while the "
		      "certificate is CA-issued (not generated at boot, not self-signed); 0: none");
/* tls.names=: the names of the certificate a make TLS=1 image generates at
 * boot when it is given none; net/tls/tls_port.c checks them (tls_cert.h)
 * and says at boot if they are refused. Registered here, like https=, so
 * every image lists the key. 8 names of 253 characters fit no line
 * (CMDLINE_MAX): the buffer holds what a line can give. */
static char https_tls_names_opt[CMDLINE_MAX];
CMDLINE_PARAM(tls_names, .key = "tls.names", .type = CMDLINE_STR, .dst = https_tls_names_opt,
	      .dst_size = sizeof(https_tls_names_opt), .def = "vireo,localhost", .def_prose = true,
	      .values = "comma-separated DNS names (at most 8)",
	      .help = "the names (SANs) of the certificate generated at boot when none is given (make TLS=1); "
		      "the default also names 127.0.0.1 and ::1");

const char *https_tls_names(void)
{
	return https_tls_names_opt;
}

static char https_hsts[64];	/* the header line, or "" */
static u8 https_hsts_len;

size_t https_hsts_line(const char **line)
{
	*line = https_hsts;
#ifdef VIREO_TLS
	/* It follows the certificate served now (https_cert_install()). */
	if (!tls_serving_ca_issued())
		return 0;
#endif
	return https_hsts_len;
}

/* The handshake limits (https.h): the defaults keep one client or a small NAT
 * (a browser opens 6 connections at once) within its share; behind a proxy or
 * load balancer every connection comes from one address, and
 * https.handshakes_per_source= up to https.handshakes= lets it use them all. */
_Static_assert(HTTPS_MAX_CONNS == 64, "the .max of the two keys below (literal for tools/cmdline_table.py)");
static u64 https_handshakes_opt = HTTPS_MAX_HANDSHAKES;
CMDLINE_PARAM(https_handshakes, .key = "https.handshakes", .type = CMDLINE_UINT, .dst = &https_handshakes_opt,
	      .min = 1, .max = 64, .def = "16",
	      .help = "TLS handshakes running at once (of the TLS connections, 64 or more by RAM; more are reset on accept)");
static u64 https_handshakes_src_opt = HTTPS_MAX_HANDSHAKES_PER_SRC;
CMDLINE_PARAM(https_handshakes_per_source, .key = "https.handshakes_per_source", .type = CMDLINE_UINT,
	      .dst = &https_handshakes_src_opt, .min = 1, .max = 64, .def = "8",
	      .help = "TLS handshakes at once from one address (IPv6 /64); raise it behind a proxy");

/* From accept to the ClientHello (https.h): a client sends it with its
 * first flight, one round trip after connecting, so a connection silent for
 * longer holds a handshake slot for nothing. Checked from the server's
 * poll (every 500 ms): a silent connection goes 3 to 3.5 s after accept
 * instead of the header timeout's 10 s, so 16 silent connections (all the
 * default handshake slots) keep out newcomers a third as long, and each
 * must be renewed three times as often. A handshake step put off by the
 * CPU bound (hsgate.h) is not timed out while it waits. */
static u64 https_hello_timeout_opt = HTTPS_HELLO_TIMEOUT_MS;
CMDLINE_PARAM(https_hello_timeout, .key = "https.hello_timeout", .type = CMDLINE_UINT,
	      .dst = &https_hello_timeout_opt, .min = 500, .max = 10000, .def = "3000",
	      .help = "ms from accept to the TLS ClientHello; a silent connection is closed then");

/* Seconds between ticket key rotations (below). The floor keeps a ticket
 * useful for one full handshake's round trips under emulation; the ceiling
 * keeps a key's life (two periods) well inside TLS 1.3's 7-day limit on a
 * ticket's lifetime. */
static u64 https_ticket_rotate_opt = 3600;
CMDLINE_PARAM(https_ticket_rotate, .key = "https.ticket_rotate", .type = CMDLINE_UINT,
	      .dst = &https_ticket_rotate_opt, .min = 5, .max = 86400, .def = "3600",
	      .help = "seconds between session-ticket key rotations (a ticket opens for one to two)");

struct https_stats https_stats;

u16 https_port(void)
{
	return (u16)https_port_opt;
}

u32 https_max_conns(void)
{
#ifdef VIREO_TLS
	return tlsmem.https_conns;
#else
	return HTTPS_MAX_CONNS;
#endif
}

u64 https_hello_timeout_ms(void)
{
	return https_hello_timeout_opt;
}

u32 https_max_handshakes(void)
{
	return (u32)https_handshakes_opt;
}

u32 https_max_handshakes_per_src(void)
{
	return (u32)https_handshakes_src_opt;
}

#ifdef VIREO_TLS

/* The floor's heap holds HTTPS_MAX_CONNS connections and the rest. */
_Static_assert(HTTPS_MAX_CONNS * TLS_CONN_BYTES + TLS_FIXED_BYTES + (TLS_SERVED_SLOTS - 1) * TLS_SERVED_BYTES_MAX +
		       TLS_ALPN01_SLOTS * TLS_ALPN01_BYTES_MAX <= TLS_SERVER_HEAP_BYTES,
	       "the TLS heap must hold every HTTPS connection and the certificates handshakes hold (net/tls/tls.h)");
_Static_assert(TLSMEM_CONNS_FLOOR == HTTPS_MAX_CONNS, "tlsmem.h's floor is today's table");
/* Above the floor a connection brings only TLS_IDLE_BYTES: at most
 * TLS_BUF_SLOTS hold their record buffers at once (net/tls/patches/0005),
 * and the floor's TLS_CONN_BYTES each are their reserve. */
_Static_assert(TLS_BUF_SLOTS <= HTTPS_MAX_CONNS, "the record-buffer holders fit the floor's reserve");
_Static_assert(TLS_ALPN01_SLOTS >= 2 * TLS_NAMES_MAX, "a challenge set for each name and a cleared one in handshakes");
_Static_assert(HTTPS_MAX_HANDSHAKES <= HTTPS_MAX_CONNS, "handshakes are connections");

/* Completed handshakes by version and suite: few pairs are possible with
 * mbedtls_config.h (3 suites under 1.3, 6 under 1.2); a pair beyond the
 * table (cannot happen) counts under the last slot's "other". */
#define HTTPS_SUITES 12
static struct {
	int id;			/* mbedTLS ciphersuite id; 0: unused */
	bool v13;
	u64 n;
} https_suites[HTTPS_SUITES];
static u64 https_suites_other;

static struct altcp_tls_config *https_conf;

/*
 * Session tickets. mbedTLS's ticket module seals a session under one of two
 * keys (AES-256-GCM); https.c replaces the older one with 32 bytes from the
 * CSPRNG, and makes it the one new tickets are sealed with, every
 * https.ticket_rotate= seconds (default 3600), so a ticket is accepted for
 * one to two periods after it was issued, and a key never outlives two
 * periods. The lifetime mbedTLS writes into tickets (how long a client may
 * offer one) is two periods, the longest a ticket can open: clients drop a
 * ticket older than that hint, and RFC 8446 4.6.1 lets the server refuse one
 * sooner (a ticket issued late in a period opens for a little over one).
 */
#define HTTPS_TICKET_ROTATE_S	((u32)https_ticket_rotate_opt)
#define HTTPS_TICKET_LIFETIME_S	(2 * HTTPS_TICKET_ROTATE_S)
static mbedtls_ssl_ticket_context https_ticket;
static struct timer https_ticket_timer;

static int https_rng(void *ctx, unsigned char *out, size_t len)
{
	random_bytes(out, len);
	return 0;
}

static void https_ticket_rotate(struct timer *t, void *arg)
{
	unsigned char name[4], key[32];

	random_bytes(name, sizeof name);
	random_bytes(key, sizeof key);
	if (mbedtls_ssl_ticket_rotate(&https_ticket, name, sizeof name, key, sizeof key,
				      HTTPS_TICKET_LIFETIME_S) == 0)
		https_stats.ticket_rotations++;
	__builtin_memset(key, 0, sizeof key);
	timer_start(t, time_ns() + (u64)HTTPS_TICKET_ROTATE_S * NSEC_PER_SEC);
}

/* mbedTLS's ticket parse, counting the tickets it accepts: each is a
 * resumed session. */
static int https_ticket_parse(void *p_ticket, mbedtls_ssl_session *session, unsigned char *buf, size_t len)
{
	int ret = mbedtls_ssl_ticket_parse(p_ticket, session, buf, len);

	if (ret == 0)
		https_stats.resumptions++;
	else
		https_stats.tickets_refused++;
	return ret;
}

static int https_tickets_start(mbedtls_ssl_config *c)
{
	mbedtls_ssl_ticket_init(&https_ticket);
	if (mbedtls_ssl_ticket_setup(&https_ticket, https_rng, NULL, MBEDTLS_CIPHER_AES_256_GCM,
				     HTTPS_TICKET_LIFETIME_S) != 0)
		return -1;
	mbedtls_ssl_conf_session_tickets_cb(c, mbedtls_ssl_ticket_write, https_ticket_parse, &https_ticket);
	timer_init(&https_ticket_timer, https_ticket_rotate, NULL);
	timer_start(&https_ticket_timer, time_ns() + (u64)HTTPS_TICKET_ROTATE_S * NSEC_PER_SEC);
	return 0;
}

/* net/port/patches/0004: the mbedTLS configuration under an altcp_tls one. */
mbedtls_ssl_config *altcp_tls_ssl_config(struct altcp_tls_config *conf);

static const char *const https_fail_names[HTTPS_FAIL_COUNT] = {
	[HTTPS_FAIL_NO_COMMON] = "no_common",
	[HTTPS_FAIL_MALFORMED] = "malformed",
	[HTTPS_FAIL_PEER_ALERT] = "peer_alert",
	[HTTPS_FAIL_MEMORY] = "memory",
	[HTTPS_FAIL_OTHER] = "other",
	[HTTPS_FAIL_CLOSED] = "closed",
	[HTTPS_FAIL_TIMEOUT] = "timeout",
	[HTTPS_FAIL_LIMIT] = "limit",
	[HTTPS_FAIL_LIMIT_SOURCE] = "limit_source",
};

static enum https_fail https_classify(int ret)
{
	switch (ret) {
	case MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE:
	case MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION:
	case MBEDTLS_ERR_SSL_BAD_CERTIFICATE:
	case MBEDTLS_ERR_SSL_NO_APPLICATION_PROTOCOL:
		return HTTPS_FAIL_NO_COMMON;
	case MBEDTLS_ERR_SSL_DECODE_ERROR:
	case MBEDTLS_ERR_SSL_INVALID_RECORD:
	case MBEDTLS_ERR_SSL_UNEXPECTED_MESSAGE:
	case MBEDTLS_ERR_SSL_UNEXPECTED_RECORD:
	case MBEDTLS_ERR_SSL_ILLEGAL_PARAMETER:
	case MBEDTLS_ERR_SSL_INVALID_MAC:
	case MBEDTLS_ERR_SSL_UNSUPPORTED_EXTENSION:
	case MBEDTLS_ERR_SSL_BAD_INPUT_DATA:
		return HTTPS_FAIL_MALFORMED;
	case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
		return HTTPS_FAIL_PEER_ALERT;
	case MBEDTLS_ERR_SSL_ALLOC_FAILED:
		return HTTPS_FAIL_MEMORY;
	case MBEDTLS_ERR_SSL_CONN_EOF:
	case MBEDTLS_ERR_NET_CONN_RESET:
	case MBEDTLS_ERR_NET_SEND_FAILED:
		return HTTPS_FAIL_CLOSED;
	default:
		return HTTPS_FAIL_OTHER;
	}
}

static void https_count_suite(const mbedtls_ssl_context *ssl)
{
	int id = mbedtls_ssl_get_ciphersuite_id_from_ssl(ssl);
	bool v13 = mbedtls_ssl_get_version_number(ssl) == MBEDTLS_SSL_VERSION_TLS1_3;

	for (int i = 0; i < HTTPS_SUITES; i++) {
		if (!https_suites[i].id) {
			https_suites[i].id = id;
			https_suites[i].v13 = v13;
		}
		if (https_suites[i].id == id && https_suites[i].v13 == v13) {
			https_suites[i].n++;
			return;
		}
	}
	https_suites_other++;
}

/* The alert RFC 8446 section 6 asks for when a handshake fails on our side
 * with ret; 0 when none is due (the peer's alert, the peer gone). */
static int https_alert_for(const mbedtls_ssl_context *ssl, int ret)
{
	switch (ret) {
	case MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE:
	case MBEDTLS_ERR_SSL_CONN_EOF:
	case MBEDTLS_ERR_NET_CONN_RESET:
	case MBEDTLS_ERR_NET_SEND_FAILED:
		return 0;
	case MBEDTLS_ERR_SSL_HANDSHAKE_FAILURE:
		return MBEDTLS_SSL_ALERT_MSG_HANDSHAKE_FAILURE;
	case MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION:
		return MBEDTLS_SSL_ALERT_MSG_PROTOCOL_VERSION;
	case MBEDTLS_ERR_SSL_BAD_CERTIFICATE:
		return MBEDTLS_SSL_ALERT_MSG_BAD_CERT;
	case MBEDTLS_ERR_SSL_ILLEGAL_PARAMETER:
		return MBEDTLS_SSL_ALERT_MSG_ILLEGAL_PARAMETER;
	case MBEDTLS_ERR_SSL_INVALID_MAC:
		return MBEDTLS_SSL_ALERT_MSG_BAD_RECORD_MAC;
	case MBEDTLS_ERR_SSL_UNSUPPORTED_EXTENSION:
		return MBEDTLS_SSL_ALERT_MSG_UNSUPPORTED_EXT;
	case MBEDTLS_ERR_SSL_UNEXPECTED_MESSAGE:
	case MBEDTLS_ERR_SSL_UNEXPECTED_RECORD:
		return MBEDTLS_SSL_ALERT_MSG_UNEXPECTED_MESSAGE;
	case MBEDTLS_ERR_SSL_INVALID_RECORD:
	case MBEDTLS_ERR_SSL_BAD_INPUT_DATA: {	/* a record header mbedTLS refused */
		/* Not TLS at all (an unknown content type: "GET " is 0x47) is
		 * an unexpected record type (RFC 8446 5), a length over
		 * 2^14 + 256 a record_overflow (5.2; mbedTLS says BAD_INPUT_DATA:
		 * more than its buffer), anything else a field out of range. */
		const unsigned char *h = ssl->MBEDTLS_PRIVATE(in_hdr);

		if (!h || h[0] < MBEDTLS_SSL_MSG_CHANGE_CIPHER_SPEC || h[0] > MBEDTLS_SSL_MSG_APPLICATION_DATA)
			return MBEDTLS_SSL_ALERT_MSG_UNEXPECTED_MESSAGE;
		if (((unsigned)h[3] << 8 | h[4]) > 16384 + 256)
			return MBEDTLS_SSL_ALERT_MSG_RECORD_OVERFLOW;
		return MBEDTLS_SSL_ALERT_MSG_DECODE_ERROR;
	}
	case MBEDTLS_ERR_SSL_DECODE_ERROR:
		return MBEDTLS_SSL_ALERT_MSG_DECODE_ERROR;
	case MBEDTLS_ERR_SSL_NO_APPLICATION_PROTOCOL:
		return MBEDTLS_SSL_ALERT_MSG_NO_APPLICATION_PROTOCOL;
	default:
		return MBEDTLS_SSL_ALERT_MSG_INTERNAL_ERROR;
	}
}

/*
 * The certificate each handshake gets (https.h, net/tls/tls_held.h):
 * mbedTLS asks once the ClientHello is parsed (mbedtls_ssl_conf_cert_cb:
 * SNI and the agreed ALPN protocol known) and the handshake takes the
 * certificate then, held until it ends (the hook below, or
 * https_handshake_gone() when the connection goes first). Keyed by the
 * connection's altcp pcb, which is the ssl context's bio (altcp_tls sets
 * it): one entry a handshake, dropped when it ends, so at most
 * https.handshakes= (at most HTTPS_MAX_CONNS, its key's .max) whatever
 * number of connections the plan admits.
 */
static struct tls_holder https_holder_e[HTTPS_MAX_CONNS];
static struct tls_holders https_holders = { https_holder_e, HTTPS_MAX_CONNS };

/* ALPN: http/1.1, and acme-tls/1 for TLS-ALPN-01 (RFC 8737): a client
 * offering both gets http/1.1 (our order), so only one offering
 * acme-tls/1 without http/1.1 (an ACME server offers it alone) gets the
 * challenge certificate. */
static const char https_alpn_acme[] = "acme-tls/1";
static const char *https_alpn[] = { "http/1.1", https_alpn_acme, NULL };

/* TLS-ALPN-01 challenges set (https_alpn01_set()): the name, the key
 * authorization's SHA-256, and the certificate made for them at set time
 * (a key and a signature: once per set, never per ClientHello). */
static struct {
	char name[TLS_NAME_MAX + 1];	/* "" : free */
	u8 id[32];
	struct tls_held *h;
} https_alpn01[TLS_NAMES_MAX];
/* Its slots (TLS_ALPN01_SLOTS x sizeof(struct tls_held), about 12 KiB) come
 * from the kernel heap at https_start(), not .bss (linker/vireo.ld's guard);
 * until then the pool is empty and a set answers -EBUSY. */
static struct tls_held_pool https_alpn01_pool;

static bool https_is_acme(const mbedtls_ssl_context *ssl)
{
	const char *alpn = mbedtls_ssl_get_alpn_protocol(ssl);

	return alpn && !strcmp(alpn, https_alpn_acme);
}

static int https_cert_cb(mbedtls_ssl_context *ssl)
{
	const void *conn = ssl->MBEDTLS_PRIVATE(p_bio);
	struct tls_held *h = NULL;

	if (https_is_acme(ssl)) {
		size_t len;
		const unsigned char *sni = mbedtls_ssl_get_hs_sni(ssl, &len);

		for (unsigned i = 0; i < TLS_NAMES_MAX && !h; i++)
			if (https_alpn01[i].h && tls_sni_is(sni, len, https_alpn01[i].name))
				h = https_alpn01[i].h;
		if (!h) {
			/* No challenge for that name: acme-tls/1 is not on
			 * offer for it (RFC 8737 section 3; the hook sends
			 * the alert). */
			https_stats.alpn01_refused++;
			return MBEDTLS_ERR_SSL_NO_APPLICATION_PROTOCOL;
		}
		/* Counted when the challenge certificate goes out: a
		 * validator has what it came for then, whether or not its
		 * handshake ends here (it may close at once: patch 0014 keeps
		 * that FIN behind a step the gate put off). */
		https_stats.alpn01_handshakes++;
	} else {
		h = tls_served_current();
	}
	http_server_hello_seen(((const struct altcp_pcb *)conn)->arg);
	h = tls_holders_hold(&https_holders, conn, h);
	if (!h)
		return MBEDTLS_ERR_SSL_ALLOC_FAILED;	/* cannot happen: an entry a connection */
	return mbedtls_ssl_set_hs_own_cert(ssl, &h->keys.chain, &h->keys.key);
}

void https_handshake_gone(struct altcp_pcb *pcb)
{
	tls_holders_drop(&https_holders, pcb);
}

int https_cert_install(struct tls_keys *k, const char *source)
{
	return tls_served_install(k, source);
}

static void https_alpn01_free(unsigned i)
{
	if (https_alpn01[i].h)
		tls_held_retire(https_alpn01[i].h);	/* freed when its handshakes end */
	__builtin_memset(&https_alpn01[i], 0, sizeof https_alpn01[i]);
}

int https_alpn01_set(const char *name, const u8 acme_id[32])
{
	static struct tls_names names;	/* 2 KiB: not on the stack */
	struct tls_keys k;
	struct tls_held *h;
	char err[160];
	u64 now = 0, nb, na;
	unsigned slot = TLS_NAMES_MAX;
	size_t bytes;
	u64 ns;
	bool clock = wallclock_best(&ns) != WALLCLOCK_NONE;

	if (!name || !acme_id || tls_names_parse(name, &names, err, sizeof err) != 0 || names.n != 1)
		return -EINVAL;
	if (!tls_ready())
		return -ENODEV;
	for (unsigned i = 0; i < TLS_NAMES_MAX; i++) {
		if (!strcmp(https_alpn01[i].name, names.name[0])) {
			if (!__builtin_memcmp(https_alpn01[i].id, acme_id, 32))
				return 0;	/* already set: no new key */
			slot = i;
			break;
		}
		if (!https_alpn01[i].name[0] && slot == TLS_NAMES_MAX)
			slot = i;
	}
	if (slot == TLS_NAMES_MAX)
		return -ENOSPC;
	now = clock ? ns / NSEC_PER_SEC : 0;
	tls_cert_validity(clock, now, &nb, &na);
	if (tls_cert_generate_id(&k, &names, nb, na, acme_id, https_rng, NULL, err, sizeof err) != 0) {
		kprintf("https: TLS-ALPN-01 certificate for %s: %s\n", names.name[0], err);
		return -ENOMEM;
	}
	bytes = tls_keys_heap_bytes(&k);
	h = bytes <= TLS_ALPN01_BYTES_MAX ? tls_held_take(&https_alpn01_pool, &k) : NULL;
	if (!h) {
		tls_keys_free(&k);
		return bytes <= TLS_ALPN01_BYTES_MAX ? -EBUSY : -E2BIG;
	}
	https_alpn01_free(slot);
	__builtin_memcpy(https_alpn01[slot].name, names.name[0], sizeof https_alpn01[slot].name);
	__builtin_memcpy(https_alpn01[slot].id, acme_id, 32);
	https_alpn01[slot].h = h;
	return 0;
}

void https_alpn01_clear(const char *name)
{
	for (unsigned i = 0; i < TLS_NAMES_MAX; i++)
		if (https_alpn01[i].name[0] &&
		    (!name || tls_sni_is((const unsigned char *)name, strlen(name), https_alpn01[i].name)))
			https_alpn01_free(i);
}

static unsigned https_alpn01_count(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < TLS_NAMES_MAX; i++)
		n += https_alpn01[i].h != NULL;
	return n;
}

/* Test hook (debug=on): `tls-alpn01 set NAME HEX64`, `tls-alpn01 clear [NAME]`. */
static int https_hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void https_alpn01_cmd(const char *args)
{
	char name[TLS_NAME_MAX + 1];
	const char *sp;
	u8 id[32];
	size_t n;
	int ret;

	if (!strncmp(args, "clear", 5) && (!args[5] || args[5] == ' ')) {
		https_alpn01_clear(args[5] ? args + 6 : NULL);
		kprintf("tls-alpn01: cleared (%u set)\n", https_alpn01_count());
		return;
	}
	if (strncmp(args, "set ", 4) != 0)
		goto usage;
	for (sp = args + 4; *sp && *sp != ' '; sp++)
		;
	n = (size_t)(sp - args - 4);
	if (!*sp || n == 0 || n > TLS_NAME_MAX || strlen(sp + 1) != 64)
		goto usage;
	__builtin_memcpy(name, args + 4, n);
	name[n] = 0;
	for (int i = 0; i < 32; i++) {
		int hi = https_hexval(sp[1 + 2 * i]), lo = https_hexval(sp[2 + 2 * i]);

		if (hi < 0 || lo < 0)
			goto usage;
		id[i] = (u8)(hi << 4 | lo);
	}
	ret = https_alpn01_set(name, id);
	kprintf("tls-alpn01: set %s: %d (%u set)\n", name, ret, https_alpn01_count());
	return;
usage:
	kprintf("tls-alpn01: usage: tls-alpn01 set NAME HEX64 | tls-alpn01 clear [NAME]\n");
}
SHELL_CMD(tls_alpn01, .name = "tls-alpn01", .fn = https_alpn01_cmd, .debug = true,
	  .usage = "set NAME HEX64 | clear [NAME]", .help = "TLS-ALPN-01 challenge certificates (test hook)");

/* Patch 0004's ALTCP_MBEDTLS_HANDSHAKE_HOOK (net/port/lwipopts.h): once per
 * handshake, ret 0 when it completed, else mbedTLS's error; altcp_tls
 * closes the connection right after a failure. mbedTLS sends a fatal
 * alert for most failures itself, but some of its TLS 1.3 paths return
 * without one (no common group: the HelloRetryRequest finds no group to
 * ask for), and none for a first record that is not TLS: then the alert
 * the error calls for is sent here, so every failure on our side ends
 * with one (RFC 8446 6.2). mbedTLS's own is the last record it built
 * (out_msgtype); a record still partly unsent (out_left) gets none. */
void (*https_client_handshake)(struct altcp_pcb *conn, struct mbedtls_ssl_context *ssl, int ret);

int vireo_tls_handshake_hook(struct altcp_pcb *conn, mbedtls_ssl_context *ssl, int ret)
{
	if (ssl->MBEDTLS_PRIVATE(conf)->MBEDTLS_PRIVATE(endpoint) == MBEDTLS_SSL_IS_CLIENT) {
		if (https_client_handshake)
			https_client_handshake(conn, ssl, ret);
		return ret;
	}
	tls_holders_drop(&https_holders, conn);
	if (ret == 0) {
		https_stats.handshakes++;
		https_count_suite(ssl);
		if (https_is_acme(ssl)) {
			/* TLS-ALPN-01 done: nothing more is said on it (RFC
			 * 8737 section 3); a close_notify, then altcp_tls
			 * closes it as it does a failed handshake (the
			 * error returned), so it never reaches the server. */
			if (!ssl->MBEDTLS_PRIVATE(out_left))
				mbedtls_ssl_close_notify(ssl);
			http_server_handshake_end(conn->arg);
			return MBEDTLS_ERR_SSL_CONN_EOF;
		}
	} else {
		int alert = https_alert_for(ssl, ret);

		https_stats.failures[https_classify(ret)]++;
		if (alert && ssl->MBEDTLS_PRIVATE(out_msgtype) != MBEDTLS_SSL_MSG_ALERT &&
		    !ssl->MBEDTLS_PRIVATE(out_left) &&
		    mbedtls_ssl_send_alert_message(ssl, MBEDTLS_SSL_ALERT_LEVEL_FATAL, (unsigned char)alert) == 0)
			https_stats.alerts_sent++;
	}
	http_server_handshake_end(conn->arg);
	return ret;
}

static bool https_listening;	/* https_start succeeded: /metrics has HTTPS */

static void https_metrics(struct metrics_buf *b)
{
	const struct https_stats *s = &https_stats;
	char labels[96];

	if (!https_listening)
		return;

	metrics_simple(b, "vireo_https_handshakes_total", METRICS_COUNTER, "TLS handshakes completed",
		       s->handshakes);
	metrics_family(b, "vireo_https_handshake_failures_total", METRICS_COUNTER,
		       "TLS handshakes that did not complete, by reason");
	for (int i = 0; i < HTTPS_FAIL_COUNT; i++)
		metrics_sample1(b, "vireo_https_handshake_failures_total", "reason", https_fail_names[i],
				s->failures[i]);
	metrics_simple(b, "vireo_https_handshakes_active", METRICS_GAUGE, "TLS handshakes in progress",
		       s->handshakes_active);
	metrics_simple(b, "vireo_https_handshakes_evicted_total", METRICS_COUNTER,
		       "Handshakes reset to make room for a source running fewer", s->handshakes_evicted);
	metrics_simple(b, "vireo_https_hello_timeouts_total", METRICS_COUNTER,
		       "Handshakes closed with no ClientHello by https.hello_timeout=", s->hello_timeouts);
	metrics_simple(b, "vireo_https_connections_active", METRICS_GAUGE, "HTTPS connections open now",
		       s->conns_active);
	metrics_simple(b, "vireo_https_connections_evicted_total", METRICS_COUNTER,
		       "Idle HTTPS connections reset for a newcomer: all were taken", s->conns_evicted);
	metrics_simple(b, "vireo_https_connections_max", METRICS_GAUGE,
		       "HTTPS connections admitted at most (sized from memory, net/tls/tlsmem.h)", https_max_conns());
	metrics_simple(b, "vireo_https_resumptions_total", METRICS_COUNTER,
		       "Session tickets accepted: handshakes that resumed a session", s->resumptions);
	metrics_simple(b, "vireo_https_tickets_refused_total", METRICS_COUNTER,
		       "Session tickets offered that did not open (old key, forged, damaged)",
		       s->tickets_refused);
	metrics_simple(b, "vireo_https_ticket_key_rotations_total", METRICS_COUNTER,
		       "Session ticket keys replaced from the CSPRNG", s->ticket_rotations);
	metrics_simple(b, "vireo_https_bulk_grants", METRICS_GAUGE,
		       "HTTPS connections allowed HTTPS_BULK_INFLIGHT queued bytes now", s->bulk_grants);
	metrics_simple(b, "vireo_https_bulk_grants_peak", METRICS_GAUGE, "Most bulk grants held at once",
		       s->bulk_peak);
	metrics_simple(b, "vireo_https_bulk_refused_total", METRICS_COUNTER,
		       "Writes that asked for a bulk grant while all were held (8 KiB queued instead)",
		       s->bulk_refused);
	metrics_simple(b, "vireo_https_alerts_sent_total", METRICS_COUNTER,
		       "Fatal alerts sent for failed handshakes mbedTLS ended without one", s->alerts_sent);
	metrics_simple(b, "vireo_https_alpn01_handshakes_total", METRICS_COUNTER,
		       "TLS-ALPN-01 (acme-tls/1) handshakes sent a challenge certificate", s->alpn01_handshakes);
	metrics_simple(b, "vireo_https_alpn01_refused_total", METRICS_COUNTER,
		       "acme-tls/1 ClientHellos for a name with no challenge set (no_application_protocol)",
		       s->alpn01_refused);
	metrics_simple(b, "vireo_https_alpn01_challenges", METRICS_GAUGE, "TLS-ALPN-01 challenges set now",
		       https_alpn01_count());
	metrics_family(b, "vireo_https_sessions_total", METRICS_COUNTER,
		       "Completed handshakes by protocol version and cipher suite");
	for (int i = 0; i < HTTPS_SUITES && https_suites[i].id; i++) {
		ksnprintf(labels, sizeof labels, "version=\"%s\",cipher=\"%s\"",
			  https_suites[i].v13 ? "TLSv1.3" : "TLSv1.2",
			  mbedtls_ssl_get_ciphersuite_name(https_suites[i].id));
		metrics_sample(b, "vireo_https_sessions_total", labels, https_suites[i].n);
	}
	if (https_suites_other)
		metrics_sample(b, "vireo_https_sessions_total", "version=\"other\",cipher=\"other\"",
			       https_suites_other);
}

u16 https_write_max(struct altcp_pcb *pcb)
{
	int n = mbedtls_ssl_get_max_out_record_payload(altcp_tls_context(pcb));

	return n > 0 ? (u16)MIN(n, 0xffff) : 0;
}

void https_close_notify(struct altcp_pcb *pcb)
{
	mbedtls_ssl_context *ssl = altcp_tls_context(pcb);

	/* Not while a record is still partly unsent (out_left): the alert
	 * would be built over it. Best effort: no room, no alert. */
	if (ssl && mbedtls_ssl_is_handshake_over(ssl) && !ssl->MBEDTLS_PRIVATE(out_left))
		mbedtls_ssl_close_notify(ssl);
}

METRICS_SOURCE(https, https_metrics);

int https_start(void)
{
	int err;

	if (!tls_served_current())
		return -EINVAL;	/* tls_start() said why */
	https_conf = altcp_tls_create_config_server(0);
	if (!https_conf) {
		kprintf("https: no memory for the TLS configuration; HTTPS off\n");
		return -ENOMEM;
	}
	/* No certificate in the configuration: each handshake takes the one
	 * served when its ClientHello is read (https_cert_cb()). */
	mbedtls_ssl_conf_cert_cb(altcp_tls_ssl_config(https_conf), https_cert_cb);
	if (!https_alpn01_pool.slot &&
	    !(https_alpn01_pool.slot = kzalloc(TLS_ALPN01_SLOTS * sizeof(struct tls_held)))) {
		kprintf("https: no memory for the TLS-ALPN-01 certificates; HTTPS off\n");
		goto fail;
	}
	https_alpn01_pool.n = TLS_ALPN01_SLOTS;
	if (altcp_tls_configure_alpn_protocols(https_conf, https_alpn) != ERR_OK ||
	    https_tickets_start(altcp_tls_ssl_config(https_conf)) != 0) {
		kprintf("https: the TLS configuration was refused; HTTPS off\n");
		goto fail;
	}
	if (hsgate_start() != 0) {
		kprintf("https: no memory for the handshake gate; HTTPS off\n");
		goto fail;
	}
	err = http_server_listen_tls(https_port(), https_conf);
	if (err) {
		kprintf("https: cannot listen on port %u (%d); HTTPS off\n", (unsigned)https_port(), err);
		goto fail;
	}
	https_listening = true;
	if (https_hsts_s)
		https_hsts_len = (u8)ksnprintf(https_hsts, sizeof https_hsts,
					      "Strict-Transport-Security: max-age=%lu\r\n", (unsigned long)https_hsts_s);
	if (https_hsts_s && tls_serving_ca_issued()) {
		kprintf("https: HSTS max-age=%lu (a CA-issued certificate)\n", (unsigned long)https_hsts_s);
	} else if (https_hsts_s) {
		kprintf("https: https.hsts=%lu withheld: the certificate is self-signed, and browsers would refuse "
			"the site for that long\n", (unsigned long)https_hsts_s);
	}
	netup_set_https_port(https_port());
	if (https_redirect)
		http_server_set_redirect(https_public_port ? (u16)https_public_port : https_port());
	return 0;
fail:
	altcp_tls_free_config(https_conf);
	https_conf = NULL;
	return -EIO;
}

#else

int https_start(void)
{
	return -ENOTSUP;
}

#endif
