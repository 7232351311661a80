/*
 * The HTTP server's listeners (runtime/http/conn.h): start with the limits
 * and timeouts of struct http_server_cfg, move to another port (cloud
 * metadata's http=), drain for power off, stop; the HTTPS listener
 * (https.c); the server's counters on /metrics.
 */
#include "kernel/cmdline.h"
#include "lib/types.h"
#include "lwip/altcp.h"
#include "lwip/altcp_tcp.h"
#include "runtime/http/conn.h"
#include "runtime/http/https.h"
#include "lib/metrics.h"
#include "net/port/netmem.h"
#if LWIP_ALTCP_TLS
#include "lwip/altcp_tls.h"
#endif

struct http_srv http_srv;

/* ---- metrics ---- */

__cold static void listen_write_metrics(struct metrics_buf *b)
{
	const struct http_server_stats *s = &http_server_stats;
	static const char *const classes[] = { NULL, "1xx", "2xx", "3xx", "4xx", "5xx" };
	size_t i;

	if (!http_srv.listen && !http_srv.draining)
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
		       "Connections reset to make room for a newcomer in a full table (the one idle longest, or a heavier prefix's).",
		       s->conns_evicted);
	metrics_simple(b, "vireo_http_connections_reset_total", METRICS_COUNTER,
		       "Connections that ended in an error (peer reset, lwIP abort).", s->conns_reset);
	metrics_simple(b, "vireo_http_proxy_headers_total", METRICS_COUNTER,
		       "PROXY protocol headers taken from proxy.trusted= peers.", s->proxy_headers);
	metrics_simple(b, "vireo_http_proxy_refused_total", METRICS_COUNTER,
		       "Connections from proxy.trusted= peers reset for a malformed PROXY header.",
		       s->proxy_refused);
	metrics_simple(b, "vireo_http_bulk_slow_total", METRICS_COUNTER,
		       "Bulk send grants given back because the reader acknowledged too little.", s->bulk_slow);
	metrics_simple(b, "vireo_http_forwarded_total", METRICS_COUNTER,
		       "Requests from proxy.trusted= peers whose X-Forwarded-For named the client.", s->forwarded);
	metrics_simple(b, "vireo_http_connections_active", METRICS_GAUGE,
		       "Connections open now.", s->conns_active);
	metrics_simple(b, "vireo_http_bufsets_used", METRICS_GAUGE, "Buffer sets held.", http_srv.bufs.used);
	metrics_simple(b, "vireo_http_bufsets_waits_total", METRICS_COUNTER, "Waits for a buffer set.",
		       http_srv.bufs.waits_total);
	metrics_family(b, "vireo_http_timeouts_total", METRICS_COUNTER,
		       "Connections closed by a timeout, by kind.");
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "idle", s->timeouts_idle);
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "header", s->timeouts_header);
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "send", s->timeouts_send);
	metrics_sample1(b, "vireo_http_timeouts_total", "kind", "slow", s->timeouts_slow);
	metrics_simple(b, "vireo_http_received_bytes_total", METRICS_COUNTER,
		       "Request bytes received.", s->rx_bytes);
	metrics_simple(b, "vireo_http_sent_bytes_total", METRICS_COUNTER,
		       "Response bytes queued for sending.", s->tx_bytes);
	metrics_simple(b, "vireo_http_metrics_truncated_total", METRICS_COUNTER,
		       "/metrics responses cut short by the size limit.", s->metrics_truncated);
}

METRICS_SOURCE(http, listen_write_metrics);

/* ---- start and stop ---- */

/* What net/port/netmem.h counts for a connection on the kernel's heap: the
 * struct with kernel/mm/heap.c's 32-byte block header, one conntab source
 * node (72 bytes in a 112-byte block: at most one per connection) and the
 * table's index (a hash of under 2 pointers and a by_n entry of 2 per
 * connection, runtime/conntab.c). */
_Static_assert(sizeof(struct conn) + 32 + 112 + 16 + 16 <= NETMEM_CONN_STATE_BYTES,
	       "redo net/port/netmem.h's NETMEM_CONN_STATE_BYTES");
_Static_assert(sizeof(struct conn_bufs) + 32 <= NETMEM_BUFS_BYTES, "redo net/port/netmem.h's NETMEM_BUFS_BYTES");
_Static_assert(HTTP_SERVER_MAX_CONNS == NETMEM_CONNS_FLOOR, "the default table is the plan's floor");

static u64 http_idle_s = HTTP_SERVER_IDLE_MS / 1000;
CMDLINE_PARAM(http_idle, .key = "http.idle_s", .type = CMDLINE_UINT, .dst = &http_idle_s, .min = 1, .max = 3600,
	      .def = "30", .help = "seconds a keep-alive connection may wait for its next request");

static u32 listen_or_default(u32 v, u32 def)
{
	return v ? v : def;
}

/* Binds pcb (NULL: its allocation failed) to port on every address and
 * listens; *out is the listening pcb. Returns 0 or -ENOMEM/-EIO, pcb closed. */
static int listen_on(struct altcp_pcb *pcb, u16 port, struct altcp_pcb **out)
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

	if (http_srv.listen)
		return -EBUSY;
	if (!cfg)
		cfg = &none;
	http_srv.cfg.max_conns = listen_or_default(cfg->max_conns, netmem.http_conns);
	http_srv.cfg.idle_timeout_ms = listen_or_default(cfg->idle_timeout_ms, (u32)http_idle_s * 1000);
	http_srv.cfg.header_timeout_ms = listen_or_default(cfg->header_timeout_ms, HTTP_SERVER_HEADER_MS);
	http_srv.cfg.send_timeout_ms = listen_or_default(cfg->send_timeout_ms, HTTP_SERVER_SEND_MS);
	http_srv.cfg.linger_ms = listen_or_default(cfg->linger_ms, HTTP_SERVER_LINGER_MS);
	http_srv.cfg.max_per_src = MIN(listen_or_default(cfg->max_per_src, http_srv.cfg.max_conns), http_srv.cfg.max_conns);
	http_srv.cfg.send_min_bytes = listen_or_default(cfg->send_min_bytes, HTTP_SERVER_SEND_MIN_BYTES);
	http_srv.tab.max_conns = http_srv.cfg.max_conns;
	http_srv.tab.max_per_src = http_srv.cfg.max_per_src;
	conntab_init(&http_srv.tab);	/* else at the first accept */
	slots_init(&http_srv.bufs, netmem.http_bufs);
	slots_init(&http_srv.sends, netmem.http_sends);

	rc = listen_on(altcp_tcp_new_ip_type(IPADDR_TYPE_ANY), port, &lpcb);
	if (rc)
		return rc;
	http_srv.listen = lpcb;
	__builtin_memset(&http_server_stats, 0, sizeof http_server_stats);
	altcp_accept(lpcb, admission_accept);
	return 0;
}

/* A new port for the HTTP listener (cloud metadata's http=): the new one
 * listens before the old one closes, so a refusal leaves HTTP as it was.
 * Connections accepted on the old port go on. */
int http_server_rebind(u16 port)
{
	struct altcp_pcb *lpcb;
	int rc;

	if (!http_srv.listen)
		return -EBUSY;
	rc = listen_on(altcp_tcp_new_ip_type(IPADDR_TYPE_ANY), port, &lpcb);
	if (rc)
		return rc;
	altcp_close(http_srv.listen);
	http_srv.listen = lpcb;
	altcp_accept(lpcb, admission_accept);
	return 0;
}

/* Graceful stop, for power off: see server.h. */
void http_server_drain(u32 *idle_closed, u32 *busy)
{
	struct conn *c, *next;

	*idle_closed = *busy = 0;
	if (!http_srv.listen)
		return;
	altcp_close(http_srv.listen);
	http_srv.listen = NULL;
	if (http_srv.listen_tls)
		altcp_close(http_srv.listen_tls);
	http_srv.listen_tls = NULL;
	http_srv.draining = true;
	for (c = (struct conn *)conntab_newest(&http_srv.tab); c; c = next) {
		next = (struct conn *)conntab_older(&http_srv.tab, &c->link);
		/* Waiting for a first or next request, no byte of it yet:
		 * idle, unless the last response is still unacknowledged,
		 * which then closes as if it had asked for it. */
		if (c->state == C_READ && !c->head_started && !c->tc.inflight) {
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
	if (!http_srv.listen && !http_srv.draining)
		return;
	if (http_srv.listen)
		altcp_close(http_srv.listen);	/* a listening pcb is freed at once */
	http_srv.listen = NULL;
	if (http_srv.listen_tls)
		altcp_close(http_srv.listen_tls);
	http_srv.listen_tls = NULL;
	http_srv.draining = false;
	while (http_srv.tab.count)
		server_conn_abort((struct conn *)conntab_newest(&http_srv.tab));
	conntab_release(&http_srv.tab);
}

/* ---- HTTPS (https.c) ---- */

void http_server_set_redirect(u16 https_port)
{
	http_srv.redirect_port = https_port;
}

#if LWIP_ALTCP_TLS
int http_server_listen_tls(u16 port, struct altcp_tls_config *conf)
{
	struct altcp_pcb *lpcb;
	int rc;

	if (!http_srv.listen || http_srv.listen_tls)
		return -EBUSY;
	rc = listen_on(altcp_tls_new(conf, IPADDR_TYPE_ANY), port, &lpcb);
	if (rc)
		return rc;
	http_srv.listen_tls = lpcb;
	altcp_arg(lpcb, &http_srv.listen_tls);
	altcp_accept(lpcb, admission_accept);
	return 0;
}
#endif
