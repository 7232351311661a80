/*
 * The application API's TCP and UDP services (include/vireo/net.h), on
 * lwIP's altcp (plain TCP) and raw UDP APIs.
 *
 * TCP, per connection, on the TCP connection base (net/tcp/tcpconn.h):
 * received bytes are copied into rx[] (at most one window can be
 * outstanding, so rx[] cannot overflow) and offered to on_recv; the window
 * reopens only for what the app consumed, so a slow app closes the peer's
 * window instead of growing a buffer. Sends are copied into lwIP
 * (TCP_WRITE_FLAG_COPY) while less than VIREO_TCP_INFLIGHT bytes are
 * unacknowledged, which is what net/port/lwipopts.h's heap budget counts for
 * these connections (VIREO_TCP_CONNS_TOTAL live). A bulk service's
 * connection asks net/tcp/rxmem.c for the bulk receive window at accept:
 * with it, rx[] and the send bound are VIREO_RXMEM_BULK_WND; without it,
 * TCP_WND each (the budget's W_bulk and W_echo).
 * Closing and aborting on the app's request happen from the connection's
 * work item, never inside the app's call: the app is not re-entered and its
 * handle stays valid until on_close. The poll callback (every 500 ms)
 * applies the idle and send-stall timeouts and the throughput floor.
 *
 * TCP clients (runtime/tcp_out.c) share this file's connection state,
 * delivery and timeouts through runtime/services.h.
 *
 * UDP: a datagram in one pbuf is offered to on_recv where it lies; one
 * reassembled from fragments (a chain) is copied into one buffer of the
 * largest max_datagram bound first. Larger than the service's
 * max_datagram, from port 0, or from or to a broadcast or multicast
 * address, it is dropped and counted.
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lib/fmt.h"
#include "lib/metrics.h"
#include "lwip/altcp.h"
#include "lwip/ip.h"
#include "lwip/udp.h"
#include "runtime/api.h"
#include "runtime/conntab.h"
#include "runtime/services.h"
#include "net/port/lwip_port.h"
#include "net/tcp/rxmem.h"
#include "net/tcp/tcpconn.h"
#include "vireo/net.h"
#if LWIP_ALTCP_TLS
#include "runtime/http/https.h"
#endif

_Static_assert(TCP_WND <= VIREO_TCP_RXBUF, "a connection's receive buffer holds one window");
_Static_assert(VIREO_TCP_BULK_RXBUF == VIREO_RXMEM_BULK_WND && VIREO_TCP_BULK_CONNS == VIREO_RXMEM_BULK_MAX,
	       "vireo/net.h's bulk window is rxmem's");

struct svcs *svcs;
u32 svcs_live, svcs_out_live;

bool svcs_alloc(void)
{
	if (!svcs)
		svcs = kzalloc(sizeof *svcs);
	return svcs != NULL;
}

u64 svc_now_ms(void)
{
	return time_ns() / NSEC_PER_MSEC;
}

void api_addr_of(const struct ip_addr *ip, u16 port, struct vireo_addr *a)
{
	__builtin_memset(a, 0, sizeof *a);
	a->port = port;
	if (IP_IS_V6(ip)) {
		a->family = VIREO_AF_INET6;
		__builtin_memcpy(a->ip, ip_2_ip6(ip)->addr, 16);
	} else {
		a->family = VIREO_AF_INET;
		__builtin_memcpy(a->ip, &ip_2_ip4(ip)->addr, 4);
	}
}

/* lwIP's address from a vireo_addr; false if the family is neither. */
bool svc_ip_of(const struct vireo_addr *a, ip_addr_t *ip)
{
	__builtin_memset(ip, 0, sizeof *ip);
	if (a->family == VIREO_AF_INET) {
		IP_SET_TYPE(ip, IPADDR_TYPE_V4);
		__builtin_memcpy(&ip_2_ip4(ip)->addr, a->ip, 4);
		return true;
	}
	if (a->family == VIREO_AF_INET6) {
		IP_SET_TYPE(ip, IPADDR_TYPE_V6);
		__builtin_memcpy(ip_2_ip6(ip)->addr, a->ip, 16);
		return true;
	}
	return false;
}

/* ---- TCP connections ---- */

/* The connection whose on_close is running, and its context. */
static u32 svc_closing_id;
static void *svc_closing_ctx;

/* tcpconn's free: the handle goes stale, then on_close hears it. */
void svc_conn_free(struct tcpconn *tc, err_t err)
{
	struct svc_conn *c = svc_conn_of(tc);
	struct svc *s = c->svc;
	u32 id = c->id;
	void *ctx = c->ctx;
	enum vireo_tcp_fail why = c->fail;	/* an outbound one that never was */

	work_cancel(&c->work);
	conntab_remove(&s->tab, &c->link);
	api_handle_free(id);
	svcs_live--;
	s->st.active--;
	kfree(c);
	if (why ? s->on_fail != NULL : s->cfg.on_close != NULL) {
		/* The handle is stale, but on_close is where an app frees what
		 * it hung on the connection: vireo_tcp_ctx() still answers. */
		svc_closing_id = id;
		svc_closing_ctx = ctx;
		if (why)
			s->on_fail((vireo_tcp){ id }, why, s->cfg.arg);
		else
			s->cfg.on_close((vireo_tcp){ id }, s->cfg.arg);
		svc_closing_id = 0;
		svc_closing_ctx = NULL;
	}
}

/* vireo_tcp_shutdown()'s FIN (from work, never inside lwIP's callbacks):
 * what was written goes first, the receive side stays open. */
static err_t svc_shut(struct svc_conn *c)
{
	c->shut_done = true;
#if LWIP_ALTCP_TLS
	if (c->tc.tls || c->svc->tls)
		https_close_notify(c->tc.pcb);
#endif
	if (altcp_shutdown(c->tc.pcb, 0, 1) != ERR_OK)
		return tcpconn_abort(&c->tc);
	altcp_output(c->tc.pcb);
	return ERR_OK;
}

/* Offer what rx[] holds; on_eof once it is all consumed after the FIN. */
err_t svc_deliver(struct svc_conn *c)
{
	struct svc *s = c->svc;
	struct tcpconn *tc = &c->tc;

	if (c->shut_req && !c->shut_done && !c->close_req && !c->abort_req && svc_shut(c) == ERR_ABRT)
		return ERR_ABRT;
	while (tcpconn_rx_held(tc) && !c->close_req && !c->abort_req) {
		size_t len = tcpconn_rx_held(tc);
		size_t n = s->cfg.on_recv((vireo_tcp){ c->id }, tc->rx + tc->rx_off, len, s->cfg.arg);

		if (n > len) {
			api_misuse("tcp %s: on_recv consumed %zu of %zu bytes: counted as %zu", s->cfg.name, n, len,
				   len);
			n = len;
		}
		if (!n)
			break;
		tcpconn_rx_consume(tc, (u32)n);
	}
	if (c->abort_req)
		return tcpconn_abort(tc);
	if (c->close_req)
		return tcpconn_close(tc);
	if (tc->rx_eof && !tcpconn_rx_held(tc) && !c->eof_told) {
		c->eof_told = true;
		if (s->cfg.on_eof)
			s->cfg.on_eof((vireo_tcp){ c->id }, s->cfg.arg);
		else
			c->close_req = true;	/* no one to tell: close after our data */
		if (c->abort_req)
			return tcpconn_abort(tc);
		if (c->close_req)
			return tcpconn_close(tc);
	}
	return ERR_OK;
}

static void svc_conn_work(void *arg)
{
	struct svc_conn *c = arg;

	c->recv_req = false;
	svc_deliver(c);
}

err_t svc_recv(struct tcpconn *tc)
{
	struct svc_conn *c = svc_conn_of(tc);

	if (!tc->rx_eof)
		c->t_active = svc_now_ms();	/* bytes, not the FIN */
	return svc_deliver(c);
}

err_t svc_sent(struct tcpconn *tc, u16 len)
{
	struct svc_conn *c = svc_conn_of(tc);
	struct svc *s = c->svc;

	c->t_active = tc->t_progress;
	if (c->want_writable && tc->inflight <= c->inflight_max / 2 && !c->close_req && !c->abort_req) {
		c->want_writable = false;
		if (s->cfg.on_writable)
			s->cfg.on_writable((vireo_tcp){ c->id }, s->cfg.arg);
		/* What on_recv left for want of room is offered again. */
		return svc_deliver(c);
	}
	return ERR_OK;
}

err_t svc_poll(struct tcpconn *tc)
{
	struct svc_conn *c = svc_conn_of(tc);
	u64 now = svc_now_ms();

	if (tc->inflight && tcpconn_stalled(tc, now, c->svc->cfg.send_timeout_ms, 0, tc->inflight)) {
		c->svc->st.timeouts_send++;
		return tcpconn_abort(tc);
	}
	/* The throughput floor (tcpconn.h), on whatever is unacknowledged:
	 * ACK progress alone keeps the stall and idle timeouts at bay, a few
	 * bytes a period would hold the connection and its bytes for ever. */
	if (tcpconn_floor_missed(tc, now, tc->inflight, 0)) {
		c->svc->st.timeouts_slow++;
		return tcpconn_abort(tc);
	}
	if (now - c->t_active >= c->svc->cfg.idle_timeout_ms) {
		c->svc->st.timeouts_idle++;
		return tcpconn_abort(tc);
	}
	return ERR_OK;
}

static const struct tcpconn_ops svc_tcp_ops = {
	.recv = svc_recv,
	.sent = svc_sent,
	.poll = svc_poll,
	.free = svc_conn_free,
};

/* Nothing unconsumed or unacknowledged: the cheapest to end. */
static bool svc_conn_idle(const struct conntab_conn *l)
{
	const struct svc_conn *c = (const struct svc_conn *)l;

	return !tcpconn_rx_held(&c->tc) && !c->tc.inflight;
}

static err_t svc_on_accept(void *arg, struct altcp_pcb *pcb, err_t err)
{
	struct svc *s = arg;
	enum conntab_verdict v = CONNTAB_REFUSE_FULL;
	struct conntab_conn *victim = NULL;
	struct svc_conn *c = NULL;
	bool bulk;
	u32 id, cap;

	if (err != ERR_OK || !pcb || !s)
		return ERR_VAL;
	bulk = s->cfg.bulk && rxmem_bulk_available();
	cap = bulk ? VIREO_RXMEM_BULK_WND : s->cfg.bulk ? TCP_WND : VIREO_TCP_RXBUF;
	/* The heap budget's 16 non-HTTP connections: all taken, only a
	 * newcomer that takes the place of one of this service's (its table
	 * full: conntab_accept() admits only with a victim) gets in. */
	if (svcs_live < VIREO_TCP_CONNS_TOTAL || s->tab.count >= s->tab.max_conns)
		c = (struct svc_conn *)conntab_accept(&s->tab, pcb, sizeof *c + cap, svc_conn_idle, &victim, &v);
	if (v == CONNTAB_REFUSE_SOURCE)
		s->st.refused_source++;
	if (!c)
		goto refuse;
	/* Every refusal first: the victim goes only once the newcomer is in
	 * for good (runtime/http/admission.c's rule). */
	id = api_handle_new(API_H_TCP, c);
	if (!id) {
		conntab_remove(&s->tab, &c->link);
		kfree(c);
		goto refuse;
	}
	c->svc = s;
	c->id = id;
	if (victim) {
		s->st.evicted++;
		tcpconn_abort(&((struct svc_conn *)victim)->tc);
	}
	c->inflight_max = s->cfg.bulk ? cap : VIREO_TCP_INFLIGHT;
	if (bulk)
		rxmem_bulk_grant(tcpconn_tcp_pcb(pcb));	/* else TCP_WND, counted there */
	else if (s->cfg.bulk)
		rxmem_stats.bulk_refused++;
	tcpconn_attach(&c->tc, pcb, &svc_tcp_ops, c->rx, cap, SVC_POLL_TICKS);
	c->tc.rx_count = &s->st.rx_bytes;
	c->t_active = c->tc.t_progress = svc_now_ms();
	work_init(&c->work, svc_conn_work, c);
	svcs_live++;
	s->st.accepted++;
	s->st.active++;
	if (s->cfg.on_accept) {
		s->cfg.on_accept((vireo_tcp){ id }, s->cfg.arg);
		if (c->abort_req)
			return tcpconn_abort(&c->tc);
		if (c->close_req)
			return tcpconn_close(&c->tc);
	}
	return ERR_OK;

refuse:
	s->st.refused++;
	altcp_abort(pcb);
	return ERR_ABRT;
}

/* ---- TCP: the app's calls ---- */

static struct svc_conn *svc_tc(vireo_tcp t)
{
	return api_handle_get(API_H_TCP, t.id);
}

/* Live and not closing, or NULL. */
static struct svc_conn *svc_tc_open(vireo_tcp t)
{
	struct svc_conn *c = svc_tc(t);

	return c && !c->close_req && !c->abort_req ? c : NULL;
}

int vireo_tcp_send(vireo_tcp t, const void *data, size_t len)
{
	struct svc_conn *c = svc_tc_open(t);
	size_t n;
	err_t err;

	if (!c || c->shut_req)
		return -EPIPE;
	if (c->svc->out && !c->connected)
		return -ENOTCONN;
	if (len && !data) {
		api_misuse("vireo_tcp_send: no data: refused");
		return -EINVAL;
	}
	n = MIN(len, (size_t)altcp_sndbuf(c->tc.pcb));
	n = MIN(n, (size_t)(c->inflight_max - MIN(c->tc.inflight, c->inflight_max)));
	/* A TLS client's: one record a write at most (altcp_tls refuses a
	 * write it could only send part of), 4,095 bytes under TLS 1.3 with
	 * MBEDTLS_SSL_OUT_CONTENT_LEN 4096 (the record's content type byte). */
	if (c->svc->tls)
		n = MIN(n, (size_t)4095);
	if (n) {
		err = altcp_write(c->tc.pcb, data, (u16_t)n, TCP_WRITE_FLAG_COPY);
		if (err == ERR_MEM) {
			n = 0;
		} else if (err != ERR_OK) {
			c->abort_req = true;
			work_queue(&c->work);
			return -EPIPE;
		} else {
			if (!c->tc.inflight)
				c->tc.t_progress = svc_now_ms();
			c->tc.inflight += (u32)n;
			c->svc->st.tx_bytes += n;
			c->t_active = svc_now_ms();
			altcp_output(c->tc.pcb);
		}
	}
	if (n < len)
		c->want_writable = true;
	return (int)MIN(n, (size_t)0x7fffffff);
}

int vireo_tcp_recv_again(vireo_tcp t)
{
	struct svc_conn *c = svc_tc_open(t);

	if (!c)
		return -EPIPE;
	c->recv_req = true;
	work_queue(&c->work);
	return 0;
}

int vireo_tcp_close(vireo_tcp t)
{
	struct svc_conn *c = svc_tc_open(t);

	if (!c)
		return -EPIPE;
	c->close_req = true;
	work_queue(&c->work);
	return 0;
}

int vireo_tcp_shutdown(vireo_tcp t)
{
	struct svc_conn *c = svc_tc_open(t);

	if (!c || (c->svc->out && !c->connected))
		return -EPIPE;
	c->shut_req = true;
	work_queue(&c->work);
	return 0;
}

int vireo_tcp_abort(vireo_tcp t)
{
	struct svc_conn *c = svc_tc(t);

	if (!c)
		return -EPIPE;
	c->abort_req = true;
	work_queue(&c->work);
	return 0;
}

int vireo_tcp_peer(vireo_tcp t, struct vireo_addr *a)
{
	struct svc_conn *c = svc_tc(t);

	if (!c)
		return -EPIPE;
	if (!a)
		return -EINVAL;
	if (c->svc->out && !c->connected)
		return -ENOTCONN;
	api_addr_of(altcp_get_ip(c->tc.pcb, 0), tcpconn_tcp_pcb(c->tc.pcb)->remote_port, a);
	return 0;
}

int vireo_tcp_set_ctx(vireo_tcp t, void *ctx)
{
	struct svc_conn *c = svc_tc(t);

	if (!c)
		return -EPIPE;
	c->ctx = ctx;
	return 0;
}

void *vireo_tcp_ctx(vireo_tcp t)
{
	struct svc_conn *c;

	if (t.id && t.id == svc_closing_id)
		return svc_closing_ctx;
	c = svc_tc(t);
	return c ? c->ctx : NULL;
}

int vireo_tcp_stats(u16 port, struct vireo_tcp_stats *st)
{
	u32 i;

	for (i = 0; svcs && st && i < svcs->ntcp; i++) {
		if (svcs->tcp[i].cfg.port != port)
			continue;
		*st = svcs->tcp[i].st;
		return 0;
	}
	return -ENOENT;
}

/* ---- metrics ---- */

/* vireo_app_tcp_*, vireo_app_udp_* and vireo_app_tcp_out_*, one sample
 * per service or client (or a row of counters, one per reason): the
 * counter at off in its struct svc (tcp, out) or struct usvc (udp). */
static const struct svc_family svc_families[] = {
	SVC_T("vireo_app_tcp_connections_accepted_total", "App TCP connections accepted.", accepted),
	SVC_T("vireo_app_tcp_connections_refused_total", "App TCP connections reset on accept (limits or memory).",
	      refused),
	SVC_T("vireo_app_tcp_connections_refused_source_total", "Of those, refused for the per-source limit.",
	      refused_source),
	SVC_T("vireo_app_tcp_connections_evicted_total",
	      "App TCP connections reset to give a source below its fair share a slot.", evicted),
	{ "vireo_app_tcp_connections_active", "App TCP connections open now.", offsetof(struct svc, st.active), SVC_TCP,
	  true, false },
	SVC_T("vireo_app_tcp_timeouts_idle_total", "App TCP connections reset for inactivity.", timeouts_idle),
	SVC_T("vireo_app_tcp_timeouts_send_total", "App TCP connections reset for a send stall.", timeouts_send),
	SVC_T("vireo_app_tcp_timeouts_slow_total", "App TCP connections reset below the throughput floor.",
	      timeouts_slow),
	SVC_T("vireo_app_tcp_received_bytes_total", "App TCP bytes received.", rx_bytes),
	SVC_T("vireo_app_tcp_sent_bytes_total", "App TCP bytes queued for sending.", tx_bytes),
	SVC_U("vireo_app_udp_datagrams_total", "App UDP datagrams handed to the app.", datagrams),
	SVC_U("vireo_app_udp_received_bytes_total", "App UDP payload bytes handed to the app.", bytes),
	SVC_U("vireo_app_udp_dropped_size_total", "App UDP datagrams over max_datagram, dropped.", dropped_size),
	{ "vireo_app_udp_dropped_source_total",
	  "App UDP datagrams dropped for their source or destination (port 0, a service's port, "
	  "the service's own, broadcast, multicast), by reason.", offsetof(struct usvc, st.dropped_port0), SVC_UDP,
	  false, true },
	SVC_U("vireo_app_udp_sent_total", "App UDP datagrams sent.", sent),
	SVC_U("vireo_app_udp_send_errors_total", "App UDP sends that failed (memory, routing).", send_errors),
};
/* The reasons of vireo_app_udp_dropped_source_total, in the order of their
 * counters in struct vireo_udp_stats. */
static const char *const svc_udp_reasons[] = { "port0", "broadcast", "multicast", "service_port", "own_port" };
_Static_assert(offsetof(struct vireo_udp_stats, dropped_own_port) ==
		       offsetof(struct vireo_udp_stats, dropped_port0) + 8 * (ARRAY_SIZE(svc_udp_reasons) - 1),
	       "dropped_source's counters are in a row");

_Static_assert(offsetof(struct svc, cfg.name) == 0 && offsetof(struct usvc, cfg.name) == 0,
	       "a service's or client's name is first");

void svc_write_families(struct metrics_buf *b, const struct svc_family *t, size_t nt, const char *const *reasons,
			u32 nr)
{
	const struct svc_family *f;

	for (f = t; f < t + nt; f++) {
		const u8 *base = f->kind == SVC_UDP ? (const u8 *)svcs->udp :
				 f->kind == SVC_OUT ? (const u8 *)svcs->out : (const u8 *)svcs->tcp;
		u32 stride = f->kind == SVC_UDP ? sizeof(struct usvc) : sizeof(struct svc);
		u32 n = f->kind == SVC_UDP ? svcs->nudp : f->kind == SVC_OUT ? svcs->nout : svcs->ntcp;
		const char *label = f->kind == SVC_OUT ? "client" : "service";

		if (!n)
			continue;
		metrics_family(b, f->name, f->gauge ? METRICS_GAUGE : METRICS_COUNTER, f->help);
		for (u32 i = 0; i < n; i++, base += stride) {
			const u64 *v = (const u64 *)(const void *)(base + f->off);
			const char *svc = *(const char *const *)(const void *)base;
			char labels[80];	/* a name is 1..31 of [a-z0-9_-]: nothing to escape */

			if (!f->reasons) {
				metrics_sample1(b, f->name, label, svc, v[0]);
				continue;
			}
			for (u32 r = 0; r < nr; r++) {
				ksnprintf(labels, sizeof labels, "%s=\"%s\",reason=\"%s\"", label, svc, reasons[r]);
				metrics_sample(b, f->name, labels, v[r]);
			}
		}
	}
}

/* The clients' families: set by the first vireo_tcp_client(), so an image
 * whose apps never connect out links neither them nor the code. */
void (*svc_out_metrics)(struct metrics_buf *b);
void (*svc_out_stop)(void);

static void svc_write_metrics(struct metrics_buf *b)
{
	if (!svcs)
		return;
	svc_write_families(b, svc_families, ARRAY_SIZE(svc_families), svc_udp_reasons, ARRAY_SIZE(svc_udp_reasons));
	if (svc_out_metrics)
		svc_out_metrics(b);
}

/* /metrics has the services' families once one is registered: the app
 * source (api.c) calls them through api_services_metrics. A pointer set
 * here rather than an entry of the metrics_sources set: a set entry would
 * keep this file's code in an image whose app has no service, which
 * gc-sections leaves out (1.6 KiB in the default image). */
void svc_metrics_register(void)
{
	api_services_metrics = svc_write_metrics;
}

/* ---- TCP: listening ---- */

int vireo_tcp_listen(const struct vireo_tcp_service *cfg)
{
	struct altcp_pcb *pcb, *lpcb;
	struct svc *s;
	err_t err;

	if (!cfg || !cfg->on_recv || !cfg->port || !api_name_ok(cfg->name, 31, false) || cfg->max_conns > VIREO_TCP_CONNS_MAX) {
		api_misuse("vireo_tcp_listen %.32s: needs on_recv, a port, a name of 1..31 [a-z0-9_-], "
			   "max_conns <= %u: refused", cfg && cfg->name ? cfg->name : "(null)", VIREO_TCP_CONNS_MAX);
		return -EINVAL;
	}
	if (!svcs_alloc())
		return -ENOMEM;
	if (svcs->ntcp == VIREO_TCP_SERVICES_MAX) {
		api_misuse("vireo_tcp_listen %s: %u services already: refused", cfg->name, VIREO_TCP_SERVICES_MAX);
		return -ENOSPC;
	}
	pcb = altcp_tcp_new_ip_type(IPADDR_TYPE_ANY);
	if (!pcb)
		return -ENOMEM;
	err = altcp_bind(pcb, IP_ANY_TYPE, cfg->port);
	if (err != ERR_OK) {
		altcp_close(pcb);
		api_misuse("vireo_tcp_listen %s: port %u is taken: refused", cfg->name, cfg->port);
		return err == ERR_USE ? -EEXIST : -EIO;
	}
	lpcb = altcp_listen_with_backlog_and_err(pcb, 4, &err);
	if (!lpcb) {
		altcp_close(pcb);
		return err == ERR_MEM ? -ENOMEM : -EIO;
	}
	s = &svcs->tcp[svcs->ntcp++];
	__builtin_memset(s, 0, sizeof *s);
	s->cfg = *cfg;
	if (!s->cfg.max_conns)
		s->cfg.max_conns = VIREO_TCP_MAX_CONNS_DEFAULT;
	if (!s->cfg.max_per_src)
		s->cfg.max_per_src = MAX(s->cfg.max_conns / 4, 1u);
	s->cfg.max_per_src = MIN(s->cfg.max_per_src, s->cfg.max_conns);
	if (!s->cfg.idle_timeout_ms)
		s->cfg.idle_timeout_ms = VIREO_TCP_IDLE_MS_DEFAULT;
	if (!s->cfg.send_timeout_ms)
		s->cfg.send_timeout_ms = VIREO_TCP_SEND_MS_DEFAULT;
	s->tab.max_conns = s->cfg.max_conns;
	s->tab.max_per_src = s->cfg.max_per_src;
	conntab_init(&s->tab);	/* else at the first accept */
	s->listen = lpcb;
	altcp_arg(lpcb, s);
	altcp_accept(lpcb, svc_on_accept);
	svc_metrics_register();
	return 0;
}

/* ---- UDP ---- */

static bool svc_addr_bcast(const ip_addr_t *a)
{
	return IP_IS_V4(a) && (ip4_addr_isbroadcast(ip_2_ip4(a), ip_current_input_netif()) ||
			       ip4_addr_isany_val(*ip_2_ip4(a)));
}

/* A port some service listens on: the system ports (RFC 6335: assigned to
 * services, never a client's ephemeral port) and the high ones that answer
 * an unsolicited unicast datagram (SSDP, mDNS, memcached). A spoofed
 * datagram from one makes our answer a request to that service, whose
 * answer may be a request to ours: a loop (chargen 19, echo 7, daytime 13,
 * qotd 17, time 37) or an amplified flood. */
static bool svc_service_port(u16_t port)
{
	return port < 1024 || port == 1900 || port == 5353 || port == 11211;
}

/* Why a datagram from addr:port to dst is dropped before the app sees it,
 * or NULL. */
static u64 *svc_udp_refusal(struct usvc *u, const ip_addr_t *addr, u16_t port, const ip_addr_t *dst)
{
	if (!port)
		return &u->st.dropped_port0;
	if (!(u->cfg.flags & VIREO_UDP_ANY_SOURCE_PORT)) {
		if (svc_service_port(port))
			return &u->st.dropped_service_port;
		if (port == u->cfg.port)	/* a high one: another host's copy of us */
			return &u->st.dropped_own_port;
	}
	if (ip_addr_ismulticast(addr) || ip_addr_ismulticast(dst))
		return &u->st.dropped_multicast;
	if (svc_addr_bcast(addr) || svc_addr_bcast(dst))
		return &u->st.dropped_broadcast;
	return NULL;
}

static void svc_on_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	struct usvc *u = arg;
	u64 *why = svc_udp_refusal(u, addr, port, ip_current_dest_addr());
	struct vireo_addr src;
	u16 len = p->tot_len;
	const void *data = p->payload;

	if (!why && len > u->cfg.max_datagram)
		why = &u->st.dropped_size;
	if (why) {
		(*why)++;
		pbuf_free(p);
		return;
	}
	if (p->len != len) {	/* reassembled from fragments */
		pbuf_copy_partial(p, svcs->udp_buf, len, 0);
		data = svcs->udp_buf;
	}
	u->st.datagrams++;
	u->st.bytes += len;
	api_addr_of(addr, port, &src);
	u->cfg.on_recv((vireo_udp){ (u32)(u - svcs->udp) + 1 }, &src, data, len, u->cfg.arg);
	pbuf_free(p);
}

int vireo_udp_bind(const struct vireo_udp_service *cfg, vireo_udp *out)
{
	struct udp_pcb *pcb;
	struct usvc *u;
	u32 max;
	err_t err;

	if (out)
		out->id = 0;
	if (!cfg || !cfg->on_recv || !cfg->port || !api_name_ok(cfg->name, 31, false) ||
	    cfg->max_datagram > VIREO_UDP_MAX || (cfg->flags & ~VIREO_UDP_ANY_SOURCE_PORT)) {
		api_misuse("vireo_udp_bind %.32s: needs on_recv, a port, a name of 1..31 [a-z0-9_-], "
			   "max_datagram <= %u, known flags: refused", cfg && cfg->name ? cfg->name : "(null)",
			   VIREO_UDP_MAX);
		return -EINVAL;
	}
	if (!svcs_alloc())
		return -ENOMEM;
	if (svcs->nudp == VIREO_UDP_SERVICES_MAX) {
		api_misuse("vireo_udp_bind %s: %u services already: refused", cfg->name, VIREO_UDP_SERVICES_MAX);
		return -ENOSPC;
	}
	/* One buffer for a fragmented datagram of any service: the largest
	 * max_datagram bound. */
	max = cfg->max_datagram ? cfg->max_datagram : VIREO_UDP_DGRAM_DEFAULT;
	if (max > svcs->udp_buf_size) {
		u8 *buf = kmalloc(max);

		if (!buf)
			return -ENOMEM;
		kfree(svcs->udp_buf);
		svcs->udp_buf = buf;
		svcs->udp_buf_size = max;
	}
	pcb = udp_new_ip_type(IPADDR_TYPE_ANY);
	if (!pcb)
		return -ENOMEM;
	err = udp_bind(pcb, IP_ANY_TYPE, cfg->port);
	if (err != ERR_OK) {
		udp_remove(pcb);
		api_misuse("vireo_udp_bind %s: port %u is taken: refused", cfg->name, cfg->port);
		return err == ERR_USE ? -EEXIST : -EIO;
	}
	u = &svcs->udp[svcs->nudp++];
	__builtin_memset(u, 0, sizeof *u);
	u->cfg = *cfg;
	u->cfg.max_datagram = max;
	u->pcb = pcb;
	udp_recv(pcb, svc_on_udp, u);
	svc_metrics_register();
	if (out)
		out->id = svcs->nudp;
	return 0;
}

static struct usvc *svc_udp(vireo_udp h)
{
	return svcs && h.id && h.id <= svcs->nudp ? &svcs->udp[h.id - 1] : NULL;
}

int vireo_udp_stats(vireo_udp h, struct vireo_udp_stats *st)
{
	struct usvc *u = svc_udp(h);

	if (!u || !st)
		return -EPIPE;
	*st = u->st;
	return 0;
}

int vireo_udp_send(vireo_udp h, const struct vireo_addr *dst, const void *data, size_t len)
{
	struct usvc *u = svc_udp(h);
	ip_addr_t ip;
	struct pbuf *p;
	err_t err;

	if (!u || !u->pcb)
		return -EPIPE;
	if (!dst || !svc_ip_of(dst, &ip) || !dst->port || len > VIREO_UDP_MAX || (len && !data)) {
		api_misuse("vireo_udp_send %s: a bad address or port, or over %u bytes: refused", u->cfg.name,
			   VIREO_UDP_MAX);
		return -EINVAL;
	}
	p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);
	if (!p) {
		u->st.send_errors++;
		return -ENOMEM;
	}
	if (len)
		pbuf_take(p, data, (u16_t)len);
	err = udp_sendto(u->pcb, p, &ip, dst->port);
	pbuf_free(p);
	if (err != ERR_OK) {
		u->st.send_errors++;
		return err == ERR_MEM ? -ENOMEM : -EIO;
	}
	u->st.sent++;
	return 0;
}

/* ---- stop (tests, power off) ---- */

void api_services_stop(void)
{
	u32 i;

	if (!svcs)
		return;
	for (i = 0; i < svcs->ntcp; i++) {
		struct svc *s = &svcs->tcp[i];

		if (s->listen)
			altcp_close(s->listen);
		s->listen = NULL;
		while (s->tab.count)
			tcpconn_abort(&((struct svc_conn *)conntab_newest(&s->tab))->tc);
		conntab_release(&s->tab);
	}
	if (svc_out_stop)
		svc_out_stop();
	for (i = 0; i < svcs->nudp; i++) {
		if (svcs->udp[i].pcb)
			udp_remove(svcs->udp[i].pcb);
		svcs->udp[i].pcb = NULL;
	}
	kfree(svcs->udp_buf);
	kfree(svcs);
	svcs = NULL;
	api_services_metrics = NULL;
	svc_out_metrics = NULL;
	svc_out_stop = NULL;
}
