/*
 * The app API's TCP clients (include/vireo/net.h, vireo_tcp_connect()):
 * outbound connections on the services' connection state and delivery
 * (runtime/services.h), in a file of their own so an image whose apps never
 * connect out links none of it (nor its strings).
 *
 * An outbound connection is a struct svc_conn, its client a struct svc
 * without a listening pcb, its connections in the client's table (insert
 * and remove only: no source admission for connections the app opens).
 * Before it is established the poll callback applies the connect deadline
 * instead of the idle and send-stall timeouts, and its end is told through
 * on_fail; one refused before any pcb (the egress policy, runtime/egress.h)
 * or whose pcb lwIP refused to connect (no route) ends from its work item,
 * so on_fail never runs inside vireo_tcp_connect(). Accepted and outbound
 * connections share the 16 of the heap budget (svcs_live), outbound ones
 * at most VIREO_TCP_OUT_MAX of them.
 *
 * TLS clients (make TLS=1, struct vireo_tcp_client.tls): the pcb is lwIP's
 * altcp_tls over a TCP one, under a configuration of the client's own
 * (made at its first connect: the CA bundle, verification REQUIRED, its
 * ALPN list), with the server name set on every connection for SNI and the
 * certificate's name check (altcp_tls would leave verification optional
 * and never set the name). altcp_tls tells "connected" once the handshake
 * is done and verified; a failed one reaches svc_tls_handshake() through
 * https.c's handshake hook (patch 0004), which sets the reason from
 * mbedTLS's verify flags before altcp_tls ends the connection.
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/types.h"
#include "lwip/altcp.h"
#include "runtime/api.h"
#include "runtime/egress.h"
#include "runtime/resolve.h"
#include "net/port/netmem.h"
#include "net/tcp/rxmem.h"
#include "runtime/services.h"
#include "vireo/app.h"
#include "vireo/net.h"

_Static_assert(VIREO_TCP_OUT_MAX == NETMEM_OUT_CONNS && VIREO_TCP_BULK_RXBUF == NETMEM_OUT_WND_FLOOR &&
	       NETMEM_OUT_WND_WIDE - TCP_WND <= 65535 && NETMEM_OUT_WND_WIDE % TCP_MSS == 0,
	       "net/port/netmem.h's outbound windows: VIREO_TCP_OUT_MAX of them, one tcp_recved() opens one");

/* The reasons of vireo_app_tcp_out_failures_total. */
static const char *const svc_fail_names[] = { "refused", "timeout", "unreachable", "policy", "aborted", "name",
					       "tls", "cert", "cert_name", "cert_expired", "cert_untrusted",
					       "noclock", "noca" };
_Static_assert(ARRAY_SIZE(svc_fail_names) == VIREO_TCP_FAIL_NOCA &&
		       offsetof(struct vireo_tcp_stats, failed_noca) ==
			       offsetof(struct vireo_tcp_stats, failed_refused) + 8 * (VIREO_TCP_FAIL_NOCA - 1),
	       "the failure counters are in enum vireo_tcp_fail's order, in a row");

const char *vireo_tcp_fail_str(enum vireo_tcp_fail why)
{
	return why >= VIREO_TCP_FAIL_REFUSED && why <= VIREO_TCP_FAIL_NOCA ? svc_fail_names[why - 1] : "?";
}

static u32 svcs_tls_live;	/* TLS client connections open or opening: <= VIREO_TLS_OUT_MAX */

static const struct svc_family svc_out_families[] = {
	SVC_O("vireo_app_tcp_out_connections_total", "App outbound TCP connections established.", connected),
	{ "vireo_app_tcp_out_failures_total",
	  "App outbound TCP connections that never were, by reason (refused, timeout, unreachable, "
	  "policy: the egress policy, aborted: by the app, name: no address for the name; TLS clients: tls: the "
	  "handshake, cert, cert_name, cert_expired, cert_untrusted: the certificate refused, noclock: no wall "
	  "clock, noca: no CA bundle).", offsetof(struct svc, st.failed_refused), SVC_OUT, false,
	  true },
	SVC_O("vireo_app_tcp_out_refused_total", "App connects refused at once: the client's cap or memory.",
	      refused),
	{ "vireo_app_tcp_out_connections_active", "App outbound TCP connections open or opening now.",
	  offsetof(struct svc, st.active), SVC_OUT, true, false },
	SVC_O("vireo_app_tcp_out_timeouts_idle_total", "App outbound TCP connections reset for inactivity.",
	      timeouts_idle),
	SVC_O("vireo_app_tcp_out_timeouts_send_total", "App outbound TCP connections reset for a send stall.",
	      timeouts_send),
	SVC_O("vireo_app_tcp_out_received_bytes_total", "App outbound TCP bytes received.", rx_bytes),
	SVC_O("vireo_app_tcp_out_sent_bytes_total", "App outbound TCP bytes queued for sending.", tx_bytes),
};

static void svc_write_out_metrics(struct metrics_buf *b)
{
	svc_write_families(b, svc_out_families, ARRAY_SIZE(svc_out_families), svc_fail_names,
			   ARRAY_SIZE(svc_fail_names));
}

/* Outbound connections' ops: the accepted side's recv and sent, their own
 * connect, poll (the deadline first) and end. */

/* A connection by name (vireo_tcp_connect_name()): the addresses the
 * policy let through, tried in order. From the heap with the connection
 * (344 B), freed with it. */
struct svc_name {
	struct vireo_addr a[VIREO_RESOLVE_MAX];
	u16 port;
	u8 n, next;
	bool retry;	/* the last address failed: the next from the work item */
};

/* The end of an outbound connection: why it never was, if it never was. */
static void svc_out_free(struct tcpconn *tc, err_t err)
{
	struct svc_conn *c = svc_conn_of(tc);

	/* lwIP's ERR_ABRT here: it gave up on its SYNs. */
	if (!c->connected && !c->fail)
		c->fail = err == ERR_RST ? VIREO_TCP_FAIL_REFUSED : err == ERR_OK ? VIREO_TCP_FAIL_ABORTED :
			  err == ERR_ABRT ? VIREO_TCP_FAIL_TIMEOUT :
			  /* altcp_tls: the server closed during the handshake */
			  err == ERR_CLSD && c->svc->tls ? VIREO_TCP_FAIL_TLS : VIREO_TCP_FAIL_UNREACHABLE;
	/* By name: a reset or no route moves to the next address while the
	 * deadline (svc_out_poll's, from the connect) has not passed. */
	if (!c->connected && c->nm && c->nm->next < c->nm->n && !c->close_req && !c->abort_req &&
	    (c->fail == VIREO_TCP_FAIL_REFUSED || c->fail == VIREO_TCP_FAIL_UNREACHABLE)) {
		c->fail = 0;
		c->tc.pcb = NULL;
		c->nm->retry = true;
		work_queue(&c->work);
		return;
	}
	kfree(c->nm);
	c->nm = NULL;
	kfree(c->sni);
	c->sni = NULL;
	if (!c->connected)
		(&c->svc->st.failed_refused)[c->fail - VIREO_TCP_FAIL_REFUSED]++;
	if (c->svc->tls)
		svcs_tls_live--;
	svcs_out_live--;
	svc_conn_free(tc, err);	/* on_fail when c->fail is set, else on_close */
}

/* Established. */
static err_t svc_out_connected(struct tcpconn *tc)
{
	struct svc_conn *c = svc_conn_of(tc);
	struct svc *s = c->svc;

	c->connected = true;
	c->t_active = tc->t_progress;
	s->st.connected++;
	if (s->rxbuf > VIREO_TCP_RXBUF)
		rxmem_out_grant(tcpconn_tcp_pcb(tc->pcb), s->rxbuf);	/* a bulk client's: rx[] holds the window */
	if (s->on_connected)
		s->on_connected((vireo_tcp){ c->id }, s->cfg.arg);
	if (c->abort_req)
		return tcpconn_abort(tc);
	if (c->close_req)
		return tcpconn_close(tc);
	return ERR_OK;
}

/* The connect deadline, then the accepted side's timeouts. */
static err_t svc_out_poll(struct tcpconn *tc)
{
	struct svc_conn *c = svc_conn_of(tc);

	if (c->connected)
		return svc_poll(tc);
	if (svc_now_ms() - c->t_active < c->svc->connect_ms)
		return ERR_OK;
	c->fail = VIREO_TCP_FAIL_TIMEOUT;
	return tcpconn_abort(tc);
}

/* ---- TLS ---- */

#ifdef VIREO_TLS
#include "kernel/time/wallclock.h"
#include "lwip/altcp_tls.h"
#include "mbedtls/ssl.h"
#include "net/tls/tls.h"
#include "net/tls/tls_keys.h"
#include "runtime/http/https.h"

mbedtls_ssl_config *altcp_tls_ssl_config(struct altcp_tls_config *conf);	/* net/port/patches/0004 */

_Static_assert(VIREO_TLS_OUT_MAX == TLS_CLIENT_CONNS, "the TLS heap keeps room for every TLS client connection");

/* The reason for a refused certificate. */
static const u8 svc_tls_why[] = {
	[TLS_VERIFY_OTHER] = VIREO_TCP_FAIL_CERT,
	[TLS_VERIFY_NOCLOCK] = VIREO_TCP_FAIL_NOCLOCK,
	[TLS_VERIFY_UNTRUSTED] = VIREO_TCP_FAIL_CERT_UNTRUSTED,
	[TLS_VERIFY_EXPIRED] = VIREO_TCP_FAIL_CERT_EXPIRED,
	[TLS_VERIFY_NAME] = VIREO_TCP_FAIL_CERT_NAME,
};

/* https.c's handshake hook, for a client's handshake: the chosen ALPN
 * protocol, or why it failed (altcp_tls ends the connection next: ERR_CLSD
 * to svc_out_free, which keeps the reason set here). */
static void svc_tls_handshake(struct altcp_pcb *conn, mbedtls_ssl_context *ssl, int ret)
{
	struct tcpconn *tc = conn->arg;
	struct svc_conn *c;
	u32 flags;
	u64 ns;

	if (!tc)
		return;
	c = svc_conn_of(tc);
	if (ret == 0) {
		c->alpn = mbedtls_ssl_get_alpn_protocol(ssl);
		return;
	}
	flags = mbedtls_ssl_get_verify_result(ssl);
	if (wallclock_best(&ns) == WALLCLOCK_NONE)
		/* no date can be judged: tls_time.c's gmtime refuses, and
		 * mbedTLS stops at the certificate with
		 * MBEDTLS_ERR_X509_FATAL_ERROR and no verify flags */
		c->fail = VIREO_TCP_FAIL_NOCLOCK;
	else if (ret == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED || (flags && flags != (u32)-1))
		c->fail = svc_tls_why[tls_verify_why(flags, true)];
	else
		c->fail = VIREO_TCP_FAIL_TLS;
	vireo_log("tls client %s: %.64s: %s (mbedTLS -0x%04x, verify flags %#x)", c->svc->cfg.name,
		  c->sni ? c->sni : "?", vireo_tcp_fail_str(c->fail), (unsigned)-ret,
		  flags == (u32)-1 ? 0u : flags);
}

/* The client's TLS configuration, made at its first connect (tls_start()
 * runs after the apps' init): 0, or why no connection can be made. */
static enum vireo_tcp_fail svc_tls_conf(struct svc *s)
{
	mbedtls_ssl_config *mc;

	if (s->tls_conf)
		return 0;
	if (!tls_client_ready())
		return VIREO_TCP_FAIL_TLS;
	if (!tls_client_ca())
		return VIREO_TCP_FAIL_NOCA;
	s->tls_conf = altcp_tls_create_config_client(NULL, 0);
	if (!s->tls_conf)
		return VIREO_TCP_FAIL_TLS;
	mc = altcp_tls_ssl_config(s->tls_conf);
	/* altcp_tls set ALTCP_MBEDTLS_AUTHMODE (none: the server's): never
	 * for a client. */
	mbedtls_ssl_conf_authmode(mc, MBEDTLS_SSL_VERIFY_REQUIRED);
	mbedtls_ssl_conf_ca_chain(mc, tls_client_ca(), NULL);
	mbedtls_ssl_conf_session_tickets(mc, MBEDTLS_SSL_SESSION_TICKETS_DISABLED);
	if (s->alpn && altcp_tls_configure_alpn_protocols(s->tls_conf, (const char **)(uintptr_t)s->alpn) != 0) {
		altcp_tls_free_config(s->tls_conf);
		s->tls_conf = NULL;
		return VIREO_TCP_FAIL_TLS;
	}
	https_client_handshake = svc_tls_handshake;
	return 0;
}

/* A TLS pcb over a new TCP one of type, verifying name: NULL for memory. */
static struct altcp_pcb *svc_tls_pcb(struct svc *s, u8 type, const char *name)
{
	struct altcp_pcb *inner = altcp_tcp_new_ip_type(type), *pcb;

	if (!inner)
		return NULL;
	pcb = altcp_tls_wrap(s->tls_conf, inner);
	if (!pcb) {
		altcp_close(inner);
		return NULL;
	}
	if (mbedtls_ssl_set_hostname(altcp_tls_context(pcb), name) != 0) {
		altcp_close(pcb);
		return NULL;
	}
	return pcb;
}

const char *vireo_tls_alpn(vireo_tcp t)
{
	struct svc_conn *c = api_handle_get(API_H_TCP, t.id);

	return c && c->svc->out && c->connected ? c->alpn : NULL;
}
#else
static enum vireo_tcp_fail svc_tls_conf(struct svc *s)
{
	(void)s;
	return VIREO_TCP_FAIL_TLS;
}

static struct altcp_pcb *svc_tls_pcb(struct svc *s, u8 type, const char *name)
{
	(void)s;
	(void)type;
	(void)name;
	return NULL;
}

const char *vireo_tls_alpn(vireo_tcp t)
{
	(void)t;
	return NULL;
}
#endif

/* A new pcb of type for a connection of s's (TLS: verifying name). */
static struct altcp_pcb *svc_out_pcb(struct svc *s, u8 type, const char *name)
{
	return s->tls ? svc_tls_pcb(s, type, name) : altcp_tcp_new_ip_type(type);
}

/* A server name for SNI and verification: a host name of 1..253 bytes. */
static bool svc_host_ok(const char *n)
{
	size_t i;

	for (i = 0; n && n[i]; i++)
		if (!((n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z') || (n[i] >= '0' && n[i] <= '9') ||
		      n[i] == '.' || n[i] == '-' || n[i] == '_' || n[i] == '*') || i >= 253)
			return false;
	return n && i > 0;
}

static char *svc_strdup(const char *n)
{
	size_t len = __builtin_strlen(n);
	char *p = kmalloc(len + 1);

	if (p)
		__builtin_memcpy(p, n, len + 1);
	return p;
}

static void svc_name_try(struct svc_conn *c);

/* Refused before any pcb (policy), refused by lwIP (no route), or ended
 * by the app while connecting; by name, the next address; then the
 * accepted side's. */
static void svc_out_work(void *arg)
{
	struct svc_conn *c = arg;

	c->recv_req = false;
	if (c->nm && c->nm->retry && !c->close_req && !c->abort_req) {
		c->nm->retry = false;
		svc_name_try(c);
	} else if (c->connected) {
		svc_deliver(c);
	} else if (!c->tc.pcb) {
		if (!c->nm || c->fail || c->close_req || c->abort_req)	/* else: resolving */
			svc_out_free(&c->tc, ERR_OK);
	} else if (c->fail || c->close_req || c->abort_req) {
		if (!c->fail)
			c->fail = VIREO_TCP_FAIL_ABORTED;
		tcpconn_abort(&c->tc);
	}
}

/* Every client's connections, ended (api_services_stop()). */
static void svc_out_stop_all(void)
{
	for (u32 i = 0; i < svcs->nout; i++) {
		struct svc *s = &svcs->out[i];

		while (s->tab.count) {
			struct svc_conn *c = (struct svc_conn *)conntab_newest(&s->tab);

			c->abort_req = true;	/* no next address */
			if (c->tc.pcb)
				tcpconn_abort(&c->tc);
			else
				svc_out_free(&c->tc, ERR_OK);
		}
		conntab_release(&s->tab);
	}
}

static const struct tcpconn_ops svc_out_ops = {
	.recv = svc_recv,
	.sent = svc_sent,
	.poll = svc_out_poll,
	.free = svc_out_free,
	.connected = svc_out_connected,
};

int vireo_tcp_client(const struct vireo_tcp_client *cfg, vireo_tcp_out *out)
{
	struct svc *s;

	if (out)
		out->id = 0;
	if (!cfg || !out || !cfg->on_recv || !api_name_ok(cfg->name, 31, false) || cfg->max_conns > VIREO_TCP_OUT_MAX) {
		api_misuse("vireo_tcp_client %.32s: needs on_recv, a name of 1..31 [a-z0-9_-], max_conns <= %u, "
			   "a handle to fill: refused", cfg && cfg->name ? cfg->name : "(null)", VIREO_TCP_OUT_MAX);
		return -EINVAL;
	}
	if (!svcs_alloc())
		return -ENOMEM;
#ifndef VIREO_TLS
	if (cfg->tls) {
		api_misuse("vireo_tcp_client %s: TLS needs a make TLS=1 image: refused", cfg->name);
		return -ENOTSUP;
	}
#endif
	for (const char *const *a = cfg->alpn; cfg->tls && a && *a; a++) {
		size_t n = __builtin_strlen(*a);

		if (n == 0 || n > 255 || a - cfg->alpn >= 8) {
			api_misuse("vireo_tcp_client %s: ALPN names of 1..255 bytes, 8 at most: refused", cfg->name);
			return -EINVAL;
		}
	}
	if (svcs->nout == VIREO_TCP_CLIENTS_MAX) {
		api_misuse("vireo_tcp_client %s: %u clients already: refused", cfg->name, VIREO_TCP_CLIENTS_MAX);
		return -ENOSPC;
	}
	s = &svcs->out[svcs->nout++];
	__builtin_memset(s, 0, sizeof *s);
	s->out = true;
	s->cfg = (struct vireo_tcp_service){
		.name = cfg->name,
		.max_conns = cfg->max_conns ? cfg->max_conns : VIREO_TCP_OUT_DEFAULT,
		.idle_timeout_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : VIREO_TCP_IDLE_MS_DEFAULT,
		.send_timeout_ms = cfg->send_timeout_ms ? cfg->send_timeout_ms : VIREO_TCP_SEND_MS_DEFAULT,
		.on_recv = cfg->on_recv,
		.on_eof = cfg->on_eof,
		.on_writable = cfg->on_writable,
		.on_close = cfg->on_close,
		.arg = cfg->arg,
	};
	s->connect_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : VIREO_TCP_CONNECT_MS_DEFAULT;
	s->on_connected = cfg->on_connected;
	s->on_fail = cfg->on_fail;
	s->tls = cfg->tls;
	s->alpn = cfg->tls ? cfg->alpn : NULL;
	/* a bulk (plain TCP) client's holds the window rxmem_out_grant() opens:
	 * the boot's plan (net/port/netmem.h out_wnd, rxmem_limits.out_wnd) */
	s->rxbuf = cfg->bulk && !cfg->tls ? rxmem_limits.out_wnd : VIREO_TCP_RXBUF;
	s->tab.max_conns = s->cfg.max_conns;
	s->tab.max_per_src = s->cfg.max_conns;	/* the table counts; the client caps */
	conntab_init(&s->tab);	/* else at the first connect */
	svc_metrics_register();
	svc_out_metrics = svc_write_out_metrics;
	svc_out_stop = svc_out_stop_all;
	out->id = svcs->nout;
	return 0;
}

static struct svc *svc_out(vireo_tcp_out h)
{
	return svcs && h.id && h.id <= svcs->nout ? &svcs->out[h.id - 1] : NULL;
}

int vireo_tcp_client_stats(vireo_tcp_out h, struct vireo_tcp_stats *st)
{
	struct svc *s = svc_out(h);

	if (!s || !st)
		return -EINVAL;
	*st = s->st;
	return 0;
}

/* Room for one more connection of s's: false (counted as refused) when not. */
static bool svc_out_room(struct svc *s)
{
	if (s->tab.count >= s->cfg.max_conns || svcs_out_live >= VIREO_TCP_OUT_MAX ||
	    svcs_live >= VIREO_TCP_CONNS_TOTAL || (s->tls && svcs_tls_live >= VIREO_TLS_OUT_MAX)) {
		s->st.refused++;
		return false;
	}
	return true;
}

static int svc_out_connect(struct svc *s, const struct vireo_addr *dst, const char *name, void *ctx, vireo_tcp *out)
{
	struct svc_conn *c;
	struct altcp_pcb *pcb = NULL;
	enum vireo_tcp_fail tls_fail = 0;
	enum egress_kind k;
	ip_addr_t ip;
	u8 a[16];
	err_t err;

	svc_ip_of(dst, &ip);
	if (!svc_out_room(s))
		return -ENOSPC;
	allow_addr_ip(a, &ip);
	k = egress_check(a);
	if (k == EGRESS_OK && s->tls)
		tls_fail = svc_tls_conf(s);
	if (k == EGRESS_OK && !tls_fail) {
		pcb = svc_out_pcb(s, IP_GET_TYPE(&ip), name);
		if (!pcb) {
			s->st.refused++;
			return -ENOMEM;
		}
	}
	c = kzalloc(sizeof *c + s->rxbuf);
	if (c)
		c->id = api_handle_new(API_H_TCP, c);
	if (c && c->id && name) {
		c->sni = svc_strdup(name);
		if (!c->sni) {
			api_handle_free(c->id);
			c->id = 0;
		}
	}
	if (!c || !c->id) {
		kfree(c);
		if (pcb)
			altcp_close(pcb);	/* never connected: freed at once */
		s->st.refused++;
		return -ENOMEM;
	}
	c->svc = s;
	c->ctx = ctx;
	c->inflight_max = VIREO_TCP_INFLIGHT;
	work_init(&c->work, svc_out_work, c);
	if (!conntab_insert(&s->tab, &c->link)) {	/* no memory for the table's index */
		api_handle_free(c->id);
		kfree(c->sni);
		kfree(c);
		if (pcb)
			altcp_close(pcb);
		s->st.refused++;
		return -ENOMEM;
	}
	svcs_live++;
	svcs_out_live++;
	svcs_tls_live += s->tls;
	s->st.active++;
	out->id = c->id;
	if (!pcb) {
		char str[VIREO_ADDR_STRLEN];

		vireo_addr_str(dst, str, sizeof str);
		if (tls_fail)
			vireo_log("tls client %s: %s port %u: %s", s->cfg.name, str, dst->port,
				  tls_fail == VIREO_TCP_FAIL_NOCA ? "no CA bundle (EFI/vireo/tls/ca.pem, make TLS_CA=): "
								    "refused, never unverified" : "TLS is not up: refused");
		else
			vireo_log("tcp client %s: %s port %u is %s: refused by the egress policy (egress.allow=)",
				  s->cfg.name, str, dst->port, egress_kind_name(k));
		c->fail = tls_fail ? tls_fail : VIREO_TCP_FAIL_POLICY;
		work_queue(&c->work);
		return 0;
	}
	tcpconn_attach(&c->tc, pcb, &svc_out_ops, c->rx, s->rxbuf, SVC_POLL_TICKS);
	c->tc.rx_count = &s->st.rx_bytes;
	c->t_active = svc_now_ms();
	err = tcpconn_connect(&c->tc, &ip, dst->port);
	if (err != ERR_OK) {
		c->fail = VIREO_TCP_FAIL_UNREACHABLE;	/* ERR_RTE; or memory: no SYN left */
		work_queue(&c->work);
	}
	return 0;
}

int vireo_tcp_connect(vireo_tcp_out h, const struct vireo_addr *dst, void *ctx, vireo_tcp *out)
{
	struct svc *s = svc_out(h);
	ip_addr_t ip;

	if (out)
		out->id = 0;
	if (!s || !out || !dst || !svc_ip_of(dst, &ip) || !dst->port || s->tls) {
		api_misuse("vireo_tcp_connect: a bad client, address or port, or a TLS client (vireo_tls_connect(): "
			   "a name to verify): refused");
		return -EINVAL;
	}
	return svc_out_connect(s, dst, NULL, ctx, out);
}

int vireo_tls_connect(vireo_tcp_out h, const struct vireo_addr *dst, const char *server_name, void *ctx,
		      vireo_tcp *out)
{
	struct svc *s = svc_out(h);
	ip_addr_t ip;

	if (out)
		out->id = 0;
	if (!s || !out || !dst || !svc_ip_of(dst, &ip) || !dst->port || !s->tls || !svc_host_ok(server_name)) {
		api_misuse("vireo_tls_connect: a bad client (not TLS), address, port or server name: refused");
		return -EINVAL;
	}
	return svc_out_connect(s, dst, server_name, ctx, out);
}


/* ---- by name ---- */

/* The next address of c's (there is one): a pcb and its connect. lwIP
 * refusing the connect (no route) ends this try as a reset would: the
 * next address from the work item (svc_out_free), or the end. */
static void svc_name_try(struct svc_conn *c)
{
	struct svc_name *nm = c->nm;
	struct altcp_pcb *pcb;
	ip_addr_t ip;

	svc_ip_of(&nm->a[nm->next++], &ip);
	pcb = svc_out_pcb(c->svc, IP_GET_TYPE(&ip), c->sni);
	if (!pcb) {
		c->fail = VIREO_TCP_FAIL_UNREACHABLE;
		nm->next = nm->n;	/* no memory: no more tries */
		svc_out_free(&c->tc, ERR_OK);
		return;
	}
	tcpconn_attach(&c->tc, pcb, &svc_out_ops, c->rx, c->svc->rxbuf, SVC_POLL_TICKS);
	c->tc.rx_count = &c->svc->st.rx_bytes;
	if (tcpconn_connect(&c->tc, &ip, nm->port) != ERR_OK) {
		c->fail = VIREO_TCP_FAIL_UNREACHABLE;
		tcpconn_abort(&c->tc);
	}
}

/* The name's addresses: each judged by the policy, the allowed ones tried. */
static void svc_name_found(void *ctx, int err, const struct vireo_addr *addrs, unsigned n, u32 ttl)
{
	struct svc_conn *c = api_handle_get(API_H_TCP, (u32)(uintptr_t)ctx);
	struct svc_name *nm;

	(void)ttl;
	if (!c || !c->nm || c->tc.pcb)
		return;	/* ended while resolving */
	nm = c->nm;
	for (unsigned i = 0; i < n; i++) {
		enum egress_kind k = EGRESS_UNSPECIFIED;
		ip_addr_t ip;
		u8 a[16];

		if (svc_ip_of(&addrs[i], &ip)) {
			allow_addr_ip(a, &ip);
			k = egress_check(a);
		}
		if (k == EGRESS_OK) {
			nm->a[nm->n] = addrs[i];
			nm->a[nm->n++].port = nm->port;
		} else {
			char str[VIREO_ADDR_STRLEN];

			vireo_addr_str(&addrs[i], str, sizeof str);
			vireo_log("tcp client %s: a name gave %s, %s: refused by the egress policy (egress.allow=)",
				  c->svc->cfg.name, str, egress_kind_name(k));
			resolve_refused_egress();
		}
	}
	if (c->close_req || c->abort_req)
		return;	/* its work item ends it */
	if (err || !n)
		c->fail = VIREO_TCP_FAIL_NAME;
	else if (!nm->n)
		c->fail = VIREO_TCP_FAIL_POLICY;
	if (c->fail) {
		svc_out_free(&c->tc, ERR_OK);
		return;
	}
	svc_name_try(c);
}

int vireo_tcp_connect_name(vireo_tcp_out h, const char *name, u16 port, void *ctx, vireo_tcp *out)
{
	struct svc *s = svc_out(h);
	struct svc_conn *c;
	int err;

	if (out)
		out->id = 0;
	if (!s || !out || !name || !port || (s->tls && !svc_host_ok(name))) {
		api_misuse("vireo_tcp_connect_name: a bad client, name or port: refused");
		return -EINVAL;
	}
	if (!svc_out_room(s))
		return -ENOSPC;
	c = kzalloc(sizeof *c + s->rxbuf);
	if (c) {
		c->nm = kzalloc(sizeof *c->nm);
		c->sni = s->tls ? svc_strdup(name) : NULL;
		c->id = c->nm && (c->sni || !s->tls) ? api_handle_new(API_H_TCP, c) : 0;
	}
	if (!c || !c->id) {
		if (c) {
			kfree(c->nm);
			kfree(c->sni);
		}
		kfree(c);
		s->st.refused++;
		return -ENOMEM;
	}
	c->svc = s;
	c->ctx = ctx;
	c->inflight_max = VIREO_TCP_INFLIGHT;
	c->nm->port = port;
	work_init(&c->work, svc_out_work, c);
	if (!conntab_insert(&s->tab, &c->link)) {
		err = -ENOMEM;
		goto fail;
	}
	if (s->tls && (c->fail = (u8)svc_tls_conf(s)) != 0) {
		/* no CA, TLS not up: refused from the work item, no lookup */
		vireo_log("tls client %s: %.64s: %s", s->cfg.name, name,
			  c->fail == VIREO_TCP_FAIL_NOCA ? "no CA bundle (EFI/vireo/tls/ca.pem, make TLS_CA=): refused, "
							   "never unverified" : "TLS is not up: refused");
		svcs_live++;
		svcs_out_live++;
		svcs_tls_live++;
		s->st.active++;
		out->id = c->id;
		work_queue(&c->work);
		return 0;
	}
	err = vireo_resolve(name, VIREO_RESOLVE_ANY, s->connect_ms, svc_name_found, (void *)(uintptr_t)c->id);
	if (err) {
		conntab_remove(&s->tab, &c->link);
		goto fail;
	}
	svcs_live++;
	svcs_out_live++;
	svcs_tls_live += s->tls;
	s->st.active++;
	c->t_active = svc_now_ms();
	out->id = c->id;
	return 0;
fail:
	api_handle_free(c->id);
	kfree(c->nm);
	kfree(c->sni);
	kfree(c);
	s->st.refused++;
	return err;
}
