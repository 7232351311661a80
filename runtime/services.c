/*
 * The application API's TCP and UDP services (include/vireo/net.h), on
 * lwIP's altcp (plain TCP) and raw UDP APIs.
 *
 * TCP, per connection: received bytes are copied into rx[] (at most one
 * window, TCP_WND, can be outstanding, so rx[] cannot overflow) and offered
 * to on_recv; altcp_recved() is called only for what the app consumed, so a
 * slow app closes the peer's window instead of growing a buffer. Sends are
 * copied into lwIP (TCP_WRITE_FLAG_COPY) while less than VIREO_TCP_INFLIGHT
 * bytes are unacknowledged, which is what net/port/lwipopts.h's heap budget
 * counts for these connections (with echo's, VIREO_TCP_CONNS_TOTAL live).
 * Closing and aborting on the app's request happen from the connection's
 * work item, never inside the app's call: the app is not re-entered and its
 * handle stays valid until on_close. The poll callback (every 500 ms)
 * applies the idle and send-stall timeouts.
 *
 * UDP: a datagram is copied into one static buffer of VIREO_UDP_MAX bytes
 * and offered to on_recv; larger than the service's max_datagram, from
 * port 0, or from or to a broadcast or multicast address, it is dropped
 * and counted.
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lib/metrics.h"
#include "lwip/altcp.h"
#include "lwip/ip.h"
#include "lwip/udp.h"
#include "runtime/api.h"
#include "runtime/conntab.h"
#include "runtime/echo.h"
#include "runtime/tcputil.h"
#include "net/port/lwip_port.h"
#include "vireo/net.h"

_Static_assert(TCP_WND <= VIREO_TCP_RXBUF, "a connection's receive buffer holds one window");

#define SVC_POLL_TICKS 1	/* 500 ms */

struct svc;

struct svc_conn {
	struct conntab_conn link;	/* first: the table hands back this */
	struct svc *svc;
	u32 id;			/* the vireo_tcp handle */
	void *ctx;
	bool eof;		/* the peer's FIN arrived */
	bool eof_told;		/* on_eof was called */
	bool close_req, abort_req, recv_req;	/* the app asked: done from work */
	bool want_writable;
	u32 inflight;		/* copied to lwIP, not yet acked */
	u64 t_active;		/* last byte either way (ms) */
	u64 t_progress;		/* last ACK progress, or when data began waiting */
	struct work work;
	u32 rx_off, rx_len;
	u8 rx[VIREO_TCP_RXBUF];
};

_Static_assert(offsetof(struct svc_conn, link) == 0, "conntab entries are struct svc_conn");

struct svc {
	struct vireo_tcp_service cfg;
	struct altcp_pcb *listen;
	struct conntab tab;
	u64 accepted, refused, refused_source, evicted, timeouts_idle, timeouts_send, rx_bytes, tx_bytes;
};

struct usvc {
	struct vireo_udp_service cfg;
	struct udp_pcb *pcb;
	u64 datagrams, bytes, sent, send_errors, dropped_size, dropped_source;
};

/* From the heap at the first service (the EFI image's .bss is bounded),
 * never given back: services are not removed. */
static struct svcs {
	struct svc tcp[VIREO_TCP_SERVICES_MAX];
	u32 ntcp;
	struct usvc udp[VIREO_UDP_SERVICES_MAX];
	u32 nudp;
	u8 udp_buf[VIREO_UDP_MAX];	/* one datagram, as the app sees it */
} *svcs;
static u32 svcs_live;		/* TCP connections of every service */

static bool svcs_alloc(void)
{
	if (!svcs)
		svcs = kzalloc(sizeof *svcs);
	return svcs != NULL;
}

static u64 svc_now_ms(void)
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
static bool svc_ip_of(const struct vireo_addr *a, ip_addr_t *ip)
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

u32 api_tcp_live(void)
{
	return svcs_live;
}

static bool svc_name_ok(const char *s)
{
	size_t n;

	if (!s || !*s)
		return false;
	for (n = 0; s[n]; n++)
		if (n >= 31 || !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || s[n] == '_' ||
				 s[n] == '-'))
			return false;
	return true;
}

/* ---- TCP connections ---- */

/* The connection is gone: the handle goes stale, then on_close hears it. */
/* The connection whose on_close is running, and its context. */
static u32 svc_closing_id;
static void *svc_closing_ctx;

static void svc_conn_free(struct svc_conn *c)
{
	struct svc *s = c->svc;
	u32 id = c->id;
	void *ctx = c->ctx;

	work_cancel(&c->work);
	conntab_remove(&s->tab, &c->link);
	api_handle_free(id);
	svcs_live--;
	kfree(c);
	if (s->cfg.on_close) {
		/* The handle is stale, but on_close is where an app frees what
		 * it hung on the connection: vireo_tcp_ctx() still answers. */
		svc_closing_id = id;
		svc_closing_ctx = ctx;
		s->cfg.on_close((vireo_tcp){ id }, s->cfg.arg);
		svc_closing_id = 0;
		svc_closing_ctx = NULL;
	}
}

static err_t svc_conn_abort(struct svc_conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;

	app_pcb_detach(pcb);
	svc_conn_free(c);
	altcp_abort(pcb);
	return ERR_ABRT;
}

static err_t svc_conn_close(struct svc_conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;
	struct tcp_pcb *tpcb = app_tcp_pcb(pcb);
	u32 held = c->rx_len - c->rx_off;

	if (held)
		altcp_recved(pcb, (u16_t)held);	/* a full window: FIN, not RST */
	app_pcb_detach(pcb);
	svc_conn_free(c);
	return app_pcb_close_detached(pcb, tpcb);
}

/* Offer what rx[] holds; on_eof once it is all consumed after the FIN. */
static err_t svc_deliver(struct svc_conn *c)
{
	struct svc *s = c->svc;

	while (c->rx_off < c->rx_len && !c->close_req && !c->abort_req) {
		size_t len = c->rx_len - c->rx_off;
		size_t n = s->cfg.on_recv((vireo_tcp){ c->id }, c->rx + c->rx_off, len, s->cfg.arg);

		if (n > len) {
			api_misuse("tcp %s: on_recv consumed %zu of %zu bytes: counted as %zu", s->cfg.name, n, len,
				   len);
			n = len;
		}
		if (!n)
			break;
		c->rx_off += (u32)n;
		altcp_recved(c->link.pcb, (u16_t)n);
	}
	if (c->rx_off == c->rx_len)
		c->rx_off = c->rx_len = 0;
	if (c->abort_req)
		return svc_conn_abort(c);
	if (c->close_req)
		return svc_conn_close(c);
	if (c->eof && c->rx_len == 0 && !c->eof_told) {
		c->eof_told = true;
		if (s->cfg.on_eof)
			s->cfg.on_eof((vireo_tcp){ c->id }, s->cfg.arg);
		else
			c->close_req = true;	/* no one to tell: close after our data */
		if (c->abort_req)
			return svc_conn_abort(c);
		if (c->close_req)
			return svc_conn_close(c);
	}
	return ERR_OK;
}

static void svc_conn_work(void *arg)
{
	struct svc_conn *c = arg;

	c->recv_req = false;
	svc_deliver(c);
}

static err_t svc_on_recv(void *arg, struct altcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct svc_conn *c = arg;
	u32 held, n;

	if (!c)
		return app_recv_stray(pcb, p);
	if (!p) {
		c->eof = true;
		return svc_deliver(c);
	}
	n = p->tot_len;
	held = c->rx_len - c->rx_off;
	if (n > sizeof c->rx - held) {
		pbuf_free(p);	/* beyond the window we granted */
		return svc_conn_abort(c);
	}
	if (c->rx_len + n > sizeof c->rx) {
		__builtin_memmove(c->rx, c->rx + c->rx_off, held);
		c->rx_off = 0;
		c->rx_len = held;
	}
	pbuf_copy_partial(p, c->rx + c->rx_len, (u16_t)n, 0);
	c->rx_len += n;
	c->svc->rx_bytes += n;
	c->t_active = svc_now_ms();
	pbuf_free(p);
	return svc_deliver(c);
}

static err_t svc_on_sent(void *arg, struct altcp_pcb *pcb, u16_t len)
{
	struct svc_conn *c = arg;
	struct svc *s;

	if (!c)
		return ERR_OK;
	s = c->svc;
	c->inflight -= MIN((u32)len, c->inflight);
	c->t_active = c->t_progress = svc_now_ms();
	if (c->want_writable && c->inflight <= VIREO_TCP_INFLIGHT / 2 && !c->close_req && !c->abort_req) {
		c->want_writable = false;
		if (s->cfg.on_writable)
			s->cfg.on_writable((vireo_tcp){ c->id }, s->cfg.arg);
		/* What on_recv left for want of room is offered again. */
		return svc_deliver(c);
	}
	return ERR_OK;
}

static void svc_on_err(void *arg, err_t err)
{
	if (arg)
		svc_conn_free(arg);
}

static err_t svc_on_poll(void *arg, struct altcp_pcb *pcb)
{
	struct svc_conn *c = arg;
	u64 now = svc_now_ms();

	if (!c) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	if (c->inflight && now - c->t_progress >= c->svc->cfg.send_timeout_ms) {
		c->svc->timeouts_send++;
		return svc_conn_abort(c);
	}
	if (now - c->t_active >= c->svc->cfg.idle_timeout_ms) {
		c->svc->timeouts_idle++;
		return svc_conn_abort(c);
	}
	return ERR_OK;
}

/* Nothing unconsumed or unacknowledged: the cheapest to end. */
static bool svc_conn_idle(const struct conntab_conn *l)
{
	const struct svc_conn *c = (const struct svc_conn *)l;

	return c->rx_len == c->rx_off && !c->inflight;
}

static void svc_conn_evict(struct conntab_conn *l)
{
	svc_conn_abort((struct svc_conn *)l);
}

static err_t svc_on_accept(void *arg, struct altcp_pcb *pcb, err_t err)
{
	struct svc *s = arg;
	enum conntab_verdict v = CONNTAB_REFUSE_FULL;
	struct svc_conn *c = NULL;
	u32 id;

	if (err != ERR_OK || !pcb || !s)
		return ERR_VAL;
	/* The heap budget's 16 non-HTTP connections, shared with echo. */
	if (svcs_live + (u32)echo_stats.tcp_active < VIREO_TCP_CONNS_TOTAL)
		c = (struct svc_conn *)conntab_accept(&s->tab, pcb, sizeof *c, svc_conn_idle, svc_conn_evict, &v);
	if (v == CONNTAB_REFUSE_SOURCE)
		s->refused_source++;
	else if (v == CONNTAB_EVICT)
		s->evicted++;
	if (!c)
		goto refuse;
	id = api_handle_new(API_H_TCP, c);
	if (!id) {
		conntab_remove(&s->tab, &c->link);
		kfree(c);
		goto refuse;
	}
	c->svc = s;
	c->id = id;
	c->t_active = c->t_progress = svc_now_ms();
	work_init(&c->work, svc_conn_work, c);
	svcs_live++;
	s->accepted++;
	altcp_arg(pcb, c);
	altcp_recv(pcb, svc_on_recv);
	altcp_sent(pcb, svc_on_sent);
	altcp_err(pcb, svc_on_err);
	altcp_poll(pcb, svc_on_poll, SVC_POLL_TICKS);
	altcp_nagle_disable(pcb);
	if (s->cfg.on_accept) {
		s->cfg.on_accept((vireo_tcp){ id }, s->cfg.arg);
		if (c->abort_req)
			return svc_conn_abort(c);
		if (c->close_req)
			return svc_conn_close(c);
	}
	return ERR_OK;

refuse:
	s->refused++;
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

	if (!c)
		return -EPIPE;
	if (len && !data) {
		api_misuse("vireo_tcp_send: no data: refused");
		return -EINVAL;
	}
	n = MIN(len, (size_t)altcp_sndbuf(c->link.pcb));
	n = MIN(n, (size_t)(VIREO_TCP_INFLIGHT - MIN(c->inflight, (u32)VIREO_TCP_INFLIGHT)));
	if (n) {
		err = altcp_write(c->link.pcb, data, (u16_t)n, TCP_WRITE_FLAG_COPY);
		if (err == ERR_MEM) {
			n = 0;
		} else if (err != ERR_OK) {
			c->abort_req = true;
			work_queue(&c->work);
			return -EPIPE;
		} else {
			if (!c->inflight)
				c->t_progress = svc_now_ms();
			c->inflight += (u32)n;
			c->svc->tx_bytes += n;
			c->t_active = svc_now_ms();
			altcp_output(c->link.pcb);
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
	api_addr_of(altcp_get_ip(c->link.pcb, 0), app_tcp_pcb(c->link.pcb)->remote_port, a);
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

/* ---- metrics ---- */

static void svc_family(struct metrics_buf *b, const char *name, enum metrics_type type, const char *help,
		       size_t off)
{
	u32 i;

	if (!svcs->ntcp)
		return;
	metrics_family(b, name, type, help);
	for (i = 0; i < svcs->ntcp; i++)
		metrics_sample1(b, name, "service", svcs->tcp[i].cfg.name,
				*(const u64 *)(const void *)((const u8 *)&svcs->tcp[i] + off));
}

static void usvc_family(struct metrics_buf *b, const char *name, const char *help, size_t off)
{
	u32 i;

	if (!svcs->nudp)
		return;
	metrics_family(b, name, METRICS_COUNTER, help);
	for (i = 0; i < svcs->nudp; i++)
		metrics_sample1(b, name, "service", svcs->udp[i].cfg.name,
				*(const u64 *)(const void *)((const u8 *)&svcs->udp[i] + off));
}

static void svc_write_metrics(struct metrics_buf *b)
{
	u32 i;

	if (!svcs)
		return;
	svc_family(b, "vireo_app_tcp_connections_accepted_total", METRICS_COUNTER,
		   "App TCP connections accepted.", offsetof(struct svc, accepted));
	svc_family(b, "vireo_app_tcp_connections_refused_total", METRICS_COUNTER,
		   "App TCP connections reset on accept (limits or memory).", offsetof(struct svc, refused));
	svc_family(b, "vireo_app_tcp_connections_refused_source_total", METRICS_COUNTER,
		   "Of those, refused for the per-source limit.", offsetof(struct svc, refused_source));
	svc_family(b, "vireo_app_tcp_connections_evicted_total", METRICS_COUNTER,
		   "App TCP connections reset to give a source below its fair share a slot.",
		   offsetof(struct svc, evicted));
	if (svcs->ntcp) {
		metrics_family(b, "vireo_app_tcp_connections_active", METRICS_GAUGE, "App TCP connections open now.");
		for (i = 0; i < svcs->ntcp; i++)
			metrics_sample1(b, "vireo_app_tcp_connections_active", "service", svcs->tcp[i].cfg.name,
					svcs->tcp[i].tab.count);
	}
	svc_family(b, "vireo_app_tcp_timeouts_idle_total", METRICS_COUNTER,
		   "App TCP connections reset for inactivity.", offsetof(struct svc, timeouts_idle));
	svc_family(b, "vireo_app_tcp_timeouts_send_total", METRICS_COUNTER,
		   "App TCP connections reset for a send stall.", offsetof(struct svc, timeouts_send));
	svc_family(b, "vireo_app_tcp_received_bytes_total", METRICS_COUNTER, "App TCP bytes received.",
		   offsetof(struct svc, rx_bytes));
	svc_family(b, "vireo_app_tcp_sent_bytes_total", METRICS_COUNTER, "App TCP bytes queued for sending.",
		   offsetof(struct svc, tx_bytes));
	usvc_family(b, "vireo_app_udp_datagrams_total", "App UDP datagrams handed to the app.",
		    offsetof(struct usvc, datagrams));
	usvc_family(b, "vireo_app_udp_received_bytes_total", "App UDP payload bytes handed to the app.",
		    offsetof(struct usvc, bytes));
	usvc_family(b, "vireo_app_udp_dropped_size_total", "App UDP datagrams over max_datagram, dropped.",
		    offsetof(struct usvc, dropped_size));
	usvc_family(b, "vireo_app_udp_dropped_source_total",
		    "App UDP datagrams from port 0 or a broadcast/multicast address, dropped.",
		    offsetof(struct usvc, dropped_source));
	usvc_family(b, "vireo_app_udp_sent_total", "App UDP datagrams sent.", offsetof(struct usvc, sent));
	usvc_family(b, "vireo_app_udp_send_errors_total", "App UDP sends that failed (memory, routing).",
		    offsetof(struct usvc, send_errors));
}

/* /metrics has the services' families once one is registered: the app
 * source (api.c) calls them through api_services_metrics. A pointer set
 * here rather than an entry of the metrics_sources set: a set entry would
 * keep this file's code in an image whose app has no service, which
 * gc-sections leaves out (1.6 KiB in the default image). */
static void svc_metrics_register(void)
{
	api_services_metrics = svc_write_metrics;
}

/* ---- TCP: listening ---- */

int vireo_tcp_listen(const struct vireo_tcp_service *cfg)
{
	struct altcp_pcb *pcb, *lpcb;
	struct svc *s;
	err_t err;

	if (!cfg || !cfg->on_recv || !cfg->port || !svc_name_ok(cfg->name) || cfg->max_conns > VIREO_TCP_CONNS_MAX) {
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

static void svc_on_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	struct usvc *u = arg;
	const ip_addr_t *dst = ip_current_dest_addr();
	struct vireo_addr src;
	u16 len = p->tot_len;

	if (!port || ip_addr_ismulticast(addr) || ip_addr_ismulticast(dst) || svc_addr_bcast(addr) ||
	    svc_addr_bcast(dst)) {
		u->dropped_source++;
		pbuf_free(p);
		return;
	}
	if (len > u->cfg.max_datagram) {
		u->dropped_size++;
		pbuf_free(p);
		return;
	}
	pbuf_copy_partial(p, svcs->udp_buf, len, 0);
	pbuf_free(p);
	u->datagrams++;
	u->bytes += len;
	api_addr_of(addr, port, &src);
	u->cfg.on_recv((vireo_udp){ (u32)(u - svcs->udp) + 1 }, &src, svcs->udp_buf, len, u->cfg.arg);
}

int vireo_udp_bind(const struct vireo_udp_service *cfg, vireo_udp *out)
{
	struct udp_pcb *pcb;
	struct usvc *u;
	err_t err;

	if (out)
		out->id = 0;
	if (!cfg || !cfg->on_recv || !cfg->port || !svc_name_ok(cfg->name) || cfg->max_datagram > VIREO_UDP_MAX) {
		api_misuse("vireo_udp_bind %.32s: needs on_recv, a port, a name of 1..31 [a-z0-9_-], "
			   "max_datagram <= %u: refused", cfg && cfg->name ? cfg->name : "(null)", VIREO_UDP_MAX);
		return -EINVAL;
	}
	if (!svcs_alloc())
		return -ENOMEM;
	if (svcs->nudp == VIREO_UDP_SERVICES_MAX) {
		api_misuse("vireo_udp_bind %s: %u services already: refused", cfg->name, VIREO_UDP_SERVICES_MAX);
		return -ENOSPC;
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
	if (!u->cfg.max_datagram)
		u->cfg.max_datagram = VIREO_UDP_DGRAM_DEFAULT;
	u->pcb = pcb;
	udp_recv(pcb, svc_on_udp, u);
	svc_metrics_register();
	if (out)
		out->id = svcs->nudp;
	return 0;
}

int vireo_udp_send(vireo_udp h, const struct vireo_addr *dst, const void *data, size_t len)
{
	struct usvc *u = svcs && h.id && h.id <= svcs->nudp ? &svcs->udp[h.id - 1] : NULL;
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
		u->send_errors++;
		return -ENOMEM;
	}
	if (len)
		pbuf_take(p, data, (u16_t)len);
	err = udp_sendto(u->pcb, p, &ip, dst->port);
	pbuf_free(p);
	if (err != ERR_OK) {
		u->send_errors++;
		return err == ERR_MEM ? -ENOMEM : -EIO;
	}
	u->sent++;
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
		while (s->tab.head)
			svc_conn_abort((struct svc_conn *)s->tab.head);
	}
	for (i = 0; i < svcs->nudp; i++) {
		if (svcs->udp[i].pcb)
			udp_remove(svcs->udp[i].pcb);
		svcs->udp[i].pcb = NULL;
	}
	kfree(svcs);
	svcs = NULL;
	api_services_metrics = NULL;
}
