/*
 * The TCP connection base (net/tcp/tcpconn.h): lwIP's callbacks for every
 * connection of the runtime, its receive buffer, its send accounting and
 * the two ways to end it.
 */
#include "kernel/time/time.h"
#include "lib/types.h"
#include "net/port/lwip_port.h"
#include "net/tcp/tcpconn.h"

u64 tcpconn_now_ms(void)
{
	return time_ns() / NSEC_PER_MSEC;
}

/* No more callbacks for pcb: lwIP's defaults take over. */
static void tcpconn_detach(struct altcp_pcb *pcb)
{
	altcp_arg(pcb, NULL);
	altcp_recv(pcb, NULL);
	altcp_sent(pcb, NULL);
	altcp_err(pcb, NULL);
	altcp_poll(pcb, NULL, 0);
}

static err_t tcpconn_on_recv(void *arg, struct altcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct tcpconn *tc = arg;
	u32 held, n;

	if (!tc) {
		/* The owner is gone: acknowledged and dropped. */
		if (p) {
			altcp_recved(pcb, p->tot_len);
			pbuf_free(p);
		}
		return ERR_OK;
	}
	if (!p) {
		tc->rx_eof = true;
		return tc->ops->recv(tc);
	}
	n = p->tot_len;
	if (tc->rx_drop) {
		if (tc->rx_count)
			*tc->rx_count += n;
		altcp_recved(pcb, (u16_t)n);
		pbuf_free(p);
		return ERR_OK;
	}
	held = tc->rx_len - tc->rx_off;
#if LWIP_ALTCP_TLS
	if (n > tc->rx_cap - held && tc->tls) {
		/* Over TLS, decrypted data is handed up as it is decrypted:
		 * the owner may give rx[] more room (a buffer set), else it is
		 * refused, altcp_tls keeps it and offers it again (poll). */
		if (!tc->ops->rx_short || !tc->ops->rx_short(tc, n))
			return ERR_MEM;
		held = tc->rx_len - tc->rx_off;
		if (n > tc->rx_cap - held)
			return ERR_MEM;
	}
#endif
	if (n > tc->rx_cap - held) {
		/* More than the window we granted: cannot happen with lwIP's
		 * window accounting, so treat it as a broken connection. */
		pbuf_free(p);
		return tcpconn_abort(tc);
	}
	if (tc->rx_len + n > tc->rx_cap) {
		__builtin_memmove(tc->rx, tc->rx + tc->rx_off, held);
		tc->rx_off = 0;
		tc->rx_len = held;
	}
	pbuf_copy_partial(p, tc->rx + tc->rx_len, (u16_t)n, 0);
	tc->rx_len += n;
	if (tc->rx_count)
		*tc->rx_count += n;
	pbuf_free(p);
	return tc->ops->recv(tc);
}

static err_t tcpconn_on_sent(void *arg, struct altcp_pcb *pcb, u16_t len)
{
	struct tcpconn *tc = arg;

	if (!tc)
		return ERR_OK;
	tc->inflight -= MIN((u32)len, tc->inflight);
	tc->acked_window += len;
	tc->floor_acked += len;
	tc->t_progress = tcpconn_now_ms();
	return tc->ops->sent(tc, len);
}

/* The pcb is already gone (RST from the peer, lwIP gave up, or ERR_CLSD
 * after our FIN was acked in LAST_ACK). */
static void tcpconn_on_err(void *arg, err_t err)
{
	struct tcpconn *tc = arg;

	if (tc)
		tc->ops->free(tc, err == ERR_OK ? ERR_ABRT : err);
}

static err_t tcpconn_on_poll(void *arg, struct altcp_pcb *pcb)
{
	struct tcpconn *tc = arg;

	if (!tc) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	return tc->ops->poll(tc);
}

void tcpconn_attach(struct tcpconn *tc, struct altcp_pcb *pcb, const struct tcpconn_ops *ops, u8 *rx,
		    u32 rx_cap, u8 poll_ticks)
{
	__builtin_memset(tc, 0, sizeof *tc);
	tc->pcb = pcb;
	tc->ops = ops;
	tc->rx = rx;
	tc->rx_cap = rx_cap;
	altcp_arg(pcb, tc);
	altcp_recv(pcb, tcpconn_on_recv);
	altcp_sent(pcb, tcpconn_on_sent);
	altcp_err(pcb, tcpconn_on_err);
	altcp_poll(pcb, tcpconn_on_poll, poll_ticks);
	altcp_nagle_disable(pcb);
}

void tcpconn_poll_ticks(struct tcpconn *tc, u8 poll_ticks)
{
	if (tc->pcb)
		altcp_poll(tc->pcb, tcpconn_on_poll, poll_ticks);
}

static err_t tcpconn_on_connected(void *arg, struct altcp_pcb *pcb, err_t err)
{
	struct tcpconn *tc = arg;

	if (!tc) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	tc->t_progress = tcpconn_now_ms();
	return tc->ops->connected(tc);
}

err_t tcpconn_connect(struct tcpconn *tc, const ip_addr_t *ip, u16 port)
{
	return altcp_connect(tc->pcb, ip, port, tcpconn_on_connected);
}

void tcpconn_rx_discard(struct tcpconn *tc)
{
	u32 n = tc->rx_len - tc->rx_off;

	if (n)
		altcp_recved(tc->pcb, (u16_t)n);
	tc->rx_off = tc->rx_len = 0;
}

err_t tcpconn_close(struct tcpconn *tc)
{
	struct altcp_pcb *pcb = tc->pcb;
	/* Taken before the close frees the altcp layers: the tcp_pcb lives
	 * on as an orphan (vireo_lwip_orphans_trim()). */
	struct tcp_pcb *tpcb = tcpconn_tcp_pcb(pcb);
	u32 cost = tpcb ? vireo_lwip_orphan_closing(tpcb) : 0;

	tcpconn_rx_discard(tc);
	/* A window cut by tcpconn_rx_move() reopened too: lwIP resets a
	 * connection closed with its window short of the full one. */
	if (tc->rx_cap < TCP_WND)
		altcp_recved(pcb, (u16_t)TCP_WND);
	tcpconn_detach(pcb);
	tc->ops->free(tc, ERR_OK);
	if (altcp_close(pcb) != ERR_OK) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	vireo_lwip_orphans_close(tpcb, cost);
	return ERR_OK;
}

err_t tcpconn_abort(struct tcpconn *tc)
{
	struct altcp_pcb *pcb = tc->pcb;

	tcpconn_detach(pcb);
	tc->ops->free(tc, ERR_OK);
	altcp_abort(pcb);
	return ERR_ABRT;
}

bool tcpconn_stalled(struct tcpconn *tc, u64 now, u32 timeout_ms, u32 min_bytes, u32 outstanding)
{
	if (now - tc->t_progress >= timeout_ms)
		return true;
	if (now - tc->t_window < timeout_ms)
		return false;
	if (tc->acked_window < tc->need_window)
		return true;
	tcpconn_stall_start(tc, now, MIN(min_bytes, outstanding));
	return false;
}

bool tcpconn_floor_missed(struct tcpconn *tc, u64 now, u32 out, u32 min_out)
{
	u32 elapsed = (u32)now - tc->t_floor;
	bool met;

	if (elapsed < TCPCONN_FLOOR_MS)
		return false;
	met = !tc->inflight || tcpconn_floor_met(tc->floor_out, tc->floor_acked, elapsed, min_out);
	tcpconn_floor_start(tc, now, out);
	return !met;
}

void tcpconn_rx_move(struct tcpconn *tc, u8 *rx, u32 rx_cap)
{
	struct tcp_pcb *tpcb = tcpconn_tcp_pcb(tc->pcb);
	u32 held = tcpconn_rx_held(tc), old = tc->rx_cap;

	__builtin_memmove(rx, tc->rx + tc->rx_off, held);
	tc->rx = rx;
	tc->rx_cap = rx_cap;
	tc->rx_off = 0;
	tc->rx_len = held;
	if (rx_cap > old)
		altcp_recved(tc->pcb, (u16_t)(rx_cap - old));
	else if (tpcb->rcv_wnd > rx_cap - held)
		tpcb->rcv_wnd = rx_cap - held;
}
