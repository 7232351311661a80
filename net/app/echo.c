/*
 * TCP and UDP echo on lwIP's raw API.
 *
 * TCP: received bytes are copied into the connection's buf[] (TCP_WND bytes)
 * and the pbuf freed; buf[] drains into tcp_write() as send space allows.
 * tcp_recved() is called from the sent callback, for bytes the peer has
 * acked, so everything the connection holds (buf[] plus its unacked echo)
 * stays within one window and buf[] cannot overflow.
 */
#include "kernel/mm.h"
#include "kernel/time.h"
#include "kernel/types.h"
#include "lwip/ip.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"
#include "net/app/echo.h"
#include "net/app/metrics.h"
#include "net/app/tcputil.h"

struct echo_conn {
	struct echo_conn *next, *prev;
	struct tcp_pcb *pcb;
	bool eof;		/* the peer's FIN arrived */
	u32 unrecved;		/* received, not yet given back with tcp_recved() */
	u64 t_active;		/* last data either way (ms) */
	u32 off, len;		/* bytes still to echo: buf[off..len) */
	u8 buf[TCP_WND];
};

struct echo_stats echo_stats;

static struct {
	struct tcp_pcb *listen;
	struct udp_pcb *udp;
	struct echo_conn *conns;
} echo;

static u64 now_ms(void)
{
	return time_ns() / NSEC_PER_MSEC;
}

static void conn_free(struct echo_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		echo.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	kfree(c);
	echo_stats.tcp_active--;
}

static err_t conn_abort(struct echo_conn *c)
{
	struct tcp_pcb *pcb = c->pcb;

	app_pcb_detach(pcb);
	conn_free(c);
	tcp_abort(pcb);
	return ERR_ABRT;
}

/* Orderly close; the window is reopened first so lwIP sends FIN, not RST. */
static err_t conn_close(struct echo_conn *c)
{
	struct tcp_pcb *pcb = c->pcb;

	if (c->unrecved)
		tcp_recved(pcb, (u16_t)c->unrecved);
	app_pcb_detach(pcb);
	conn_free(c);
	if (tcp_close(pcb) != ERR_OK) {
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	return ERR_OK;
}

static err_t echo_more(struct echo_conn *c)
{
	u32 n = MIN(c->len - c->off, (u32)tcp_sndbuf(c->pcb));
	err_t err;

	if (n) {
		err = tcp_write(c->pcb, c->buf + c->off, (u16_t)n, TCP_WRITE_FLAG_COPY);
		if (err == ERR_OK) {
			c->off += n;
			echo_stats.tcp_bytes += n;
			tcp_output(c->pcb);
		} else if (err != ERR_MEM) {
			return conn_abort(c);
		}
	}
	if (c->off == c->len)
		c->off = c->len = 0;
	if (c->eof && c->len == 0)
		return conn_close(c);	/* FIN follows the queued echo */
	return ERR_OK;
}

static err_t on_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct echo_conn *c = arg;
	u32 held;

	if (!c) {
		if (p) {
			tcp_recved(pcb, p->tot_len);
			pbuf_free(p);
		}
		return ERR_OK;
	}
	if (!p) {
		c->eof = true;
		return echo_more(c);
	}
	held = c->len - c->off;
	if (p->tot_len > sizeof c->buf - held) {
		pbuf_free(p);	/* beyond the window we granted */
		return conn_abort(c);
	}
	if (c->len + p->tot_len > sizeof c->buf) {
		__builtin_memmove(c->buf, c->buf + c->off, held);
		c->off = 0;
		c->len = held;
	}
	pbuf_copy_partial(p, c->buf + c->len, p->tot_len, 0);
	c->len += p->tot_len;
	c->unrecved += p->tot_len;
	c->t_active = now_ms();
	pbuf_free(p);
	return echo_more(c);
}

static err_t on_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	struct echo_conn *c = arg;
	u32 n;

	if (!c)
		return ERR_OK;
	n = MIN((u32)len, c->unrecved);
	if (n) {
		c->unrecved -= n;
		tcp_recved(pcb, (u16_t)n);	/* the echo is acked: take more */
	}
	c->t_active = now_ms();
	return echo_more(c);
}

static void on_err(void *arg, err_t err)
{
	if (arg)
		conn_free(arg);
}

static err_t on_poll(void *arg, struct tcp_pcb *pcb)
{
	struct echo_conn *c = arg;

	if (!c) {
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	if (now_ms() - c->t_active >= ECHO_IDLE_MS) {
		echo_stats.tcp_timeouts++;
		return conn_abort(c);	/* a stalled peer may hold unacked data */
	}
	return echo_more(c);
}

static err_t on_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	struct echo_conn *c = NULL;

	if (err != ERR_OK || !pcb)
		return ERR_VAL;
	if (echo_stats.tcp_active < ECHO_MAX_CONNS)
		c = kzalloc(sizeof *c);
	if (!c) {
		echo_stats.tcp_refused++;
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	c->pcb = pcb;
	c->t_active = now_ms();
	c->next = echo.conns;
	if (echo.conns)
		echo.conns->prev = c;
	echo.conns = c;
	echo_stats.tcp_accepted++;
	echo_stats.tcp_active++;
	tcp_arg(pcb, c);
	tcp_recv(pcb, on_recv);
	tcp_sent(pcb, on_sent);
	tcp_err(pcb, on_err);
	tcp_poll(pcb, on_poll, 2);
	tcp_nagle_disable(pcb);
	return ERR_OK;
}

static void on_udp(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr,
		   u16_t port)
{
	const ip_addr_t *dst = ip_current_dest_addr();

	/* No answers to port 0, to broadcasts or multicasts (amplification),
	 * or to another echo port (two echo servers would ping-pong forever). */
	if (port == 0 || port == pcb->local_port || ip_addr_ismulticast(dst) ||
	    (IP_IS_V4(dst) && ip4_addr_isbroadcast(ip_2_ip4(dst), ip_current_input_netif()))) {
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

static void write_echo(struct metrics_buf *b)
{
	const struct echo_stats *s = &echo_stats;

	metrics_simple(b, "vireo_echo_tcp_connections_accepted_total", METRICS_COUNTER,
		       "Echo TCP connections accepted.", s->tcp_accepted);
	metrics_simple(b, "vireo_echo_tcp_connections_refused_total", METRICS_COUNTER,
		       "Echo TCP connections reset on accept.", s->tcp_refused);
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
}

static struct metrics_source echo_source = { "echo", write_echo, NULL };

int echo_start(u16 port)
{
	struct tcp_pcb *pcb, *lpcb;
	struct udp_pcb *upcb;
	err_t err;

	if (echo.listen)
		return -EBUSY;
	pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
	if (!pcb)
		return -ENOMEM;
	if (tcp_bind(pcb, IP_ANY_TYPE, port) != ERR_OK) {
		tcp_close(pcb);
		return -EIO;
	}
	lpcb = tcp_listen_with_backlog_and_err(pcb, 4, &err);
	if (!lpcb) {
		tcp_close(pcb);
		return err == ERR_MEM ? -ENOMEM : -EIO;
	}
	upcb = udp_new_ip_type(IPADDR_TYPE_ANY);
	if (!upcb) {
		tcp_close(lpcb);
		return -ENOMEM;
	}
	if (udp_bind(upcb, IP_ANY_TYPE, port) != ERR_OK) {
		udp_remove(upcb);
		tcp_close(lpcb);
		return -EIO;
	}
	echo.listen = lpcb;
	echo.udp = upcb;
	__builtin_memset(&echo_stats, 0, sizeof echo_stats);
	tcp_accept(lpcb, on_accept);
	udp_recv(upcb, on_udp, NULL);
	metrics_register(&echo_source);
	return 0;
}

void echo_stop(void)
{
	if (!echo.listen)
		return;
	tcp_close(echo.listen);
	echo.listen = NULL;
	udp_remove(echo.udp);
	echo.udp = NULL;
	while (echo.conns)
		conn_abort(echo.conns);
	metrics_unregister(&echo_source);
}
