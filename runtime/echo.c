/*
 * TCP and UDP echo on lwIP's altcp API (plain TCP; tcputil.h) and raw UDP API.
 *
 * TCP: received bytes are copied into the connection's buf[] (its receive
 * window: the bulk window if rxmem grants one at accept, net/tcp/rxmem.h, else
 * TCP_WND) and the pbuf freed; buf[] drains into altcp_write() as send space allows.
 * altcp_recved() is called from the sent callback, for bytes the peer has
 * acked, so everything the connection holds (buf[] plus its unacked echo)
 * stays within one window and buf[] cannot overflow. Connections are kept
 * in a conntab (runtime/conntab.h): per-source cap and fair share.
 *
 * UDP: never answers a source port below 1024 (0, and every well-known
 * service: chargen, daytime, echo itself would loop), our own port, a
 * broadcast or multicast destination or source, and is rate-limited by two
 * token buckets: one global, one per source (IPv4 address or IPv6 /64; sources
 * hashing to the same of ECHO_UDP_BUCKETS share one, which only limits them
 * more). Whatever a spoofed source makes us reflect is at most the global
 * rate, one datagram out per datagram in.
 */
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lib/metrics.h"
#include "lwip/ip.h"
#include "lwip/altcp.h"
#include "lwip/udp.h"
#include "vireo/net.h"
#include "runtime/api.h"
#include "runtime/echo.h"
#include "runtime/tcputil.h"
#include "runtime/conntab.h"
#include "net/port/lwip_port.h"
#include "net/tcp/rxmem.h"

struct echo_conn {
	struct conntab_conn link;	/* first: the table hands back this */
	bool eof;		/* the peer's FIN arrived */
	u32 unrecved;		/* received, not yet given back with altcp_recved() */
	u64 t_active;		/* last data either way (ms) */
	u32 off, len;		/* bytes still to echo: buf[off..len) */
	u32 cap;		/* sizeof buf: the window lwIP may open */
	u8 buf[];
};

_Static_assert(offsetof(struct echo_conn, link) == 0, "conntab entries are struct echo_conn");

#define ECHO_UDP_BUCKETS 64	/* per-source buckets, by keyed hash */

/* Token bucket in milli-datagrams: refills rate per second up to burst. */
struct bucket {
	u64 t_ms;
	u32 milli;
};

struct echo_stats echo_stats;

static struct {
	bool started;
	struct altcp_pcb *listen;
	struct udp_pcb *udp;
	struct conntab tab;
	struct echo_cfg cfg;
	u32 hash_key;
	struct bucket global;
	struct bucket src[ECHO_UDP_BUCKETS];
} echo;

static u64 echo_now_ms(void)
{
	return time_ns() / NSEC_PER_MSEC;
}

static void echo_conn_free(struct echo_conn *c)
{
	conntab_remove(&echo.tab, &c->link);
	kfree(c);
	echo_stats.tcp_active--;
}

static err_t echo_conn_abort(struct echo_conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;

	app_pcb_detach(pcb);
	echo_conn_free(c);
	altcp_abort(pcb);
	return ERR_ABRT;
}

/* Orderly close; the window is reopened first so lwIP sends FIN, not RST. */
static err_t echo_conn_close(struct echo_conn *c)
{
	struct altcp_pcb *pcb = c->link.pcb;
	struct tcp_pcb *tpcb = app_tcp_pcb(pcb);

	if (c->unrecved)
		altcp_recved(pcb, (u16_t)c->unrecved);
	app_pcb_detach(pcb);
	echo_conn_free(c);
	return app_pcb_close_detached(pcb, tpcb);
}

static err_t echo_more(struct echo_conn *c)
{
	u32 n = MIN(c->len - c->off, (u32)altcp_sndbuf(c->link.pcb));
	err_t err;

	if (n) {
		err = altcp_write(c->link.pcb, c->buf + c->off, (u16_t)n, TCP_WRITE_FLAG_COPY);
		if (err == ERR_OK) {
			c->off += n;
			echo_stats.tcp_bytes += n;
			altcp_output(c->link.pcb);
		} else if (err != ERR_MEM) {
			return echo_conn_abort(c);
		}
	}
	if (c->off == c->len)
		c->off = c->len = 0;
	if (c->eof && c->len == 0)
		return echo_conn_close(c);	/* FIN follows the queued echo */
	return ERR_OK;
}

static err_t echo_on_recv(void *arg, struct altcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct echo_conn *c = arg;
	u32 held;

	if (!c)
		return app_recv_stray(pcb, p);
	if (!p) {
		c->eof = true;
		return echo_more(c);
	}
	held = c->len - c->off;
	if (p->tot_len > c->cap - held) {
		pbuf_free(p);	/* beyond the window we granted */
		return echo_conn_abort(c);
	}
	if (c->len + p->tot_len > c->cap) {
		__builtin_memmove(c->buf, c->buf + c->off, held);
		c->off = 0;
		c->len = held;
	}
	pbuf_copy_partial(p, c->buf + c->len, p->tot_len, 0);
	c->len += p->tot_len;
	c->unrecved += p->tot_len;
	c->t_active = echo_now_ms();
	pbuf_free(p);
	return echo_more(c);
}

static err_t echo_on_sent(void *arg, struct altcp_pcb *pcb, u16_t len)
{
	struct echo_conn *c = arg;
	u32 n;

	if (!c)
		return ERR_OK;
	n = MIN((u32)len, c->unrecved);
	if (n) {
		c->unrecved -= n;
		altcp_recved(pcb, (u16_t)n);	/* the echo is acked: take more */
	}
	c->t_active = echo_now_ms();
	return echo_more(c);
}

static void echo_on_err(void *arg, err_t err)
{
	if (arg)
		echo_conn_free(arg);
}

static err_t echo_on_poll(void *arg, struct altcp_pcb *pcb)
{
	struct echo_conn *c = arg;

	if (!c) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	if (echo_now_ms() - c->t_active >= ECHO_IDLE_MS) {
		echo_stats.tcp_timeouts++;
		return echo_conn_abort(c);	/* a stalled peer may hold unacked data */
	}
	return echo_more(c);
}

/* Nothing waiting to be echoed or acknowledged. */
static bool echo_conn_idle(const struct conntab_conn *l)
{
	const struct echo_conn *c = (const struct echo_conn *)l;

	return c->len == c->off && !c->unrecved;
}

static void echo_conn_evict(struct conntab_conn *l)
{
	echo_conn_abort((struct echo_conn *)l);
}

static err_t echo_on_accept(void *arg, struct altcp_pcb *pcb, err_t err)
{
	enum conntab_verdict v;
	struct echo_conn *c;
	bool bulk = rxmem_bulk_available();
	u32 cap = bulk ? VIREO_RXMEM_BULK_WND : TCP_WND;

	if (err != ERR_OK || !pcb)
		return ERR_VAL;
	/* lwIP's heap budget counts 16 live connections for echo and the apps'
	 * TCP services together (vireo/net.h). */
	if (api_tcp_live() && api_tcp_live() + echo_stats.tcp_active >= VIREO_TCP_CONNS_TOTAL)
		goto refuse;
	c = (struct echo_conn *)conntab_accept(&echo.tab, pcb, sizeof *c + cap, echo_conn_idle, echo_conn_evict, &v);
	if (v == CONNTAB_REFUSE_SOURCE)
		echo_stats.tcp_refused_source++;
	else if (v == CONNTAB_EVICT)
		echo_stats.tcp_evicted++;
	if (!c)
		goto refuse;
	c->cap = cap;
	if (bulk)
		rxmem_bulk_grant(app_tcp_pcb(pcb));	/* else TCP_WND, counted there */
	else
		rxmem_stats.bulk_refused++;
	c->t_active = echo_now_ms();
	echo_stats.tcp_accepted++;
	echo_stats.tcp_active++;
	altcp_arg(pcb, c);
	altcp_recv(pcb, echo_on_recv);
	altcp_sent(pcb, echo_on_sent);
	altcp_err(pcb, echo_on_err);
	altcp_poll(pcb, echo_on_poll, 2);
	altcp_nagle_disable(pcb);
	return ERR_OK;

refuse:
	echo_stats.tcp_refused++;
	altcp_abort(pcb);
	return ERR_ABRT;
}

/* Refill b for the time since it was last used, then take one datagram's
 * token if there is one. */
static bool echo_bucket_take(struct bucket *b, u32 rate, u32 burst, u64 now)
{
	u64 milli = b->milli + (now - b->t_ms) * rate;	/* rate/s = rate milli/ms */

	b->t_ms = now;
	b->milli = (u32)MIN(milli, (u64)burst * 1000);
	if (b->milli < 1000)
		return false;
	b->milli -= 1000;
	return true;
}

static bool echo_addr_is_bcast(const ip_addr_t *a)
{
	return IP_IS_V4(a) && ip4_addr_isbroadcast(ip_2_ip4(a), ip_current_input_netif());
}

/* Why a datagram from addr:port to dst gets no answer, or NULL. */
static u64 *echo_udp_refusal(const struct udp_pcb *pcb, const ip_addr_t *addr, u16_t port,
			const ip_addr_t *dst)
{
	struct conntab_src src;
	u64 now;

	if (port < 1024)
		return &echo_stats.udp_refused[ECHO_UDP_LOW_PORT];
	if (port == pcb->local_port)
		return &echo_stats.udp_refused[ECHO_UDP_OWN_PORT];
	if (ip_addr_ismulticast(dst) || ip_addr_ismulticast(addr))
		return &echo_stats.udp_refused[ECHO_UDP_MULTICAST];
	if (echo_addr_is_bcast(dst) || echo_addr_is_bcast(addr) ||
	    (IP_IS_V4(addr) && ip4_addr_isany_val(*ip_2_ip4(addr))))
		return &echo_stats.udp_refused[ECHO_UDP_BROADCAST];
	now = echo_now_ms();
	conntab_src_of(addr, &src);
	if (!echo_bucket_take(&echo.src[conntab_src_hash(&src, echo.hash_key) % ECHO_UDP_BUCKETS],
			 echo.cfg.udp_src_rate, echo.cfg.udp_src_burst, now))
		return &echo_stats.udp_refused[ECHO_UDP_RATE_SOURCE];
	if (!echo_bucket_take(&echo.global, echo.cfg.udp_rate, echo.cfg.udp_burst, now))
		return &echo_stats.udp_refused[ECHO_UDP_RATE_GLOBAL];
	return NULL;
}

static void echo_on_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr,
		   u16_t port)
{
	u64 *why = echo_udp_refusal(pcb, addr, port, ip_current_dest_addr());

	if (why) {
		(*why)++;
		echo_stats.udp_dropped++;
		pbuf_free(p);
		return;
	}
	echo_stats.udp_datagrams++;
	echo_stats.udp_bytes += p->tot_len;
	if (udp_sendto(pcb, p, addr, port) != ERR_OK)
		echo_stats.udp_dropped++;
	pbuf_free(p);
}

static const char *const echo_udp_reasons[ECHO_UDP_REASONS] = {
	[ECHO_UDP_LOW_PORT] = "low_port",
	[ECHO_UDP_OWN_PORT] = "own_port",
	[ECHO_UDP_BROADCAST] = "broadcast",
	[ECHO_UDP_MULTICAST] = "multicast",
	[ECHO_UDP_RATE_SOURCE] = "rate_source",
	[ECHO_UDP_RATE_GLOBAL] = "rate_global",
};

__cold static void echo_write_metrics(struct metrics_buf *b)
{
	const struct echo_stats *s = &echo_stats;
	int i;

	if (!echo.started)
		return;
	metrics_simple(b, "vireo_echo_tcp_connections_accepted_total", METRICS_COUNTER,
		       "Echo TCP connections accepted.", s->tcp_accepted);
	metrics_simple(b, "vireo_echo_tcp_connections_refused_total", METRICS_COUNTER,
		       "Echo TCP connections reset on accept.", s->tcp_refused);
	metrics_simple(b, "vireo_echo_tcp_connections_refused_source_total", METRICS_COUNTER,
		       "Of those refused, refused for the per-source limit.", s->tcp_refused_source);
	metrics_simple(b, "vireo_echo_tcp_connections_evicted_total", METRICS_COUNTER,
		       "Echo TCP connections reset to give a source below its fair share a slot.",
		       s->tcp_evicted);
	metrics_simple(b, "vireo_echo_tcp_connections_active", METRICS_GAUGE,
		       "Echo TCP connections open now.", s->tcp_active);
	metrics_simple(b, "vireo_echo_tcp_timeouts_total", METRICS_COUNTER,
		       "Echo TCP connections closed for inactivity.", s->tcp_timeouts);
	metrics_simple(b, "vireo_echo_tcp_bytes_total", METRICS_COUNTER,
		       "Bytes echoed over TCP.", s->tcp_bytes);
	metrics_simple(b, "vireo_echo_udp_datagrams_total", METRICS_COUNTER,
		       "UDP datagrams echoed.", s->udp_datagrams);
	metrics_simple(b, "vireo_echo_udp_bytes_total", METRICS_COUNTER,
		       "Bytes echoed over UDP.", s->udp_bytes);
	metrics_simple(b, "vireo_echo_udp_dropped_total", METRICS_COUNTER,
		       "UDP datagrams not echoed (refused source or send failure).", s->udp_dropped);
	metrics_family(b, "vireo_echo_udp_refused_total", METRICS_COUNTER,
		       "UDP datagrams not echoed, by rule.");
	for (i = 0; i < ECHO_UDP_REASONS; i++)
		metrics_sample1(b, "vireo_echo_udp_refused_total", "reason", echo_udp_reasons[i],
				s->udp_refused[i]);
}

METRICS_SOURCE(echo, echo_write_metrics);

static u32 echo_or_default(u32 v, u32 def)
{
	return v ? v : def;
}

static int echo_start_tcp(u16 port)
{
	struct altcp_pcb *pcb, *lpcb;
	err_t err;

	pcb = altcp_tcp_new_ip_type(IPADDR_TYPE_ANY);
	if (!pcb)
		return -ENOMEM;
	if (altcp_bind(pcb, IP_ANY_TYPE, port) != ERR_OK) {
		altcp_close(pcb);
		return -EIO;
	}
	lpcb = altcp_listen_with_backlog_and_err(pcb, 4, &err);
	if (!lpcb) {
		altcp_close(pcb);
		return err == ERR_MEM ? -ENOMEM : -EIO;
	}
	echo.listen = lpcb;
	altcp_accept(lpcb, echo_on_accept);
	return 0;
}

static int echo_start_udp(u16 port)
{
	struct udp_pcb *upcb;

	upcb = udp_new_ip_type(IPADDR_TYPE_ANY);
	if (!upcb)
		return -ENOMEM;
	if (udp_bind(upcb, IP_ANY_TYPE, port) != ERR_OK) {
		udp_remove(upcb);
		return -EIO;
	}
	echo.udp = upcb;
	udp_recv(upcb, echo_on_udp, NULL);
	return 0;
}

__cold int echo_start(const struct echo_cfg *c)
{
	int err, i;

	if (echo.started)
		return -EBUSY;
	if (!c->services || (c->services & ~(ECHO_TCP | ECHO_UDP)))
		return -EINVAL;
	__builtin_memset(&echo.tab, 0, sizeof echo.tab);
	echo.cfg.port = c->port;
	echo.cfg.services = c->services;
	echo.cfg.max_conns = echo_or_default(c->max_conns, ECHO_MAX_CONNS);
	echo.cfg.max_per_src = MIN(echo_or_default(c->max_per_src, echo.cfg.max_conns), echo.cfg.max_conns);
	echo.cfg.udp_rate = echo_or_default(c->udp_rate, ECHO_UDP_RATE);
	echo.cfg.udp_burst = echo_or_default(c->udp_burst, ECHO_UDP_BURST);
	echo.cfg.udp_src_rate = echo_or_default(c->udp_src_rate, ECHO_UDP_SRC_RATE);
	echo.cfg.udp_src_burst = echo_or_default(c->udp_src_burst, ECHO_UDP_SRC_BURST);
	echo.tab.max_conns = echo.cfg.max_conns;
	echo.tab.max_per_src = echo.cfg.max_per_src;
	echo.hash_key = (u32)LWIP_RAND();
	/* Buckets start full. */
	echo.global.t_ms = echo_now_ms();
	echo.global.milli = echo.cfg.udp_burst * 1000;
	for (i = 0; i < ECHO_UDP_BUCKETS; i++) {
		echo.src[i].t_ms = echo.global.t_ms;
		echo.src[i].milli = echo.cfg.udp_src_burst * 1000;
	}

	if (c->services & ECHO_TCP) {
		err = echo_start_tcp(c->port);
		if (err)
			return err;
	}
	if (c->services & ECHO_UDP) {
		err = echo_start_udp(c->port);
		if (err)
			goto fail_tcp;
	}
	echo.started = true;
	__builtin_memset(&echo_stats, 0, sizeof echo_stats);
	return 0;

fail_tcp:
	if (echo.listen) {
		altcp_close(echo.listen);
		echo.listen = NULL;
	}
	return err;
}

void echo_stop(void)
{
	if (!echo.started)
		return;
	if (echo.listen) {
		altcp_close(echo.listen);
		echo.listen = NULL;
	}
	if (echo.udp) {
		udp_remove(echo.udp);
		echo.udp = NULL;
	}
	while (echo.tab.head)
		echo_conn_abort((struct echo_conn *)echo.tab.head);
	echo.started = false;
}
