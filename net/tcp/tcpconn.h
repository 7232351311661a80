/*
 * One TCP connection's base, over lwIP's altcp API (plain TCP, or TLS over
 * TCP with make TLS=1: with LWIP_ALTCP off altcp_* are lwIP's macros for
 * tcp_*, so this compiles to the raw API). Every TCP user of the tree sits
 * on it: the HTTP(S) server and the app API's TCP services (runtime/), and
 * the outbound clients to come, which is why it lives below them, in net/.
 *
 * It does what each of them did alike:
 * - the lwIP callbacks: a connection's owner sees recv, sent and poll
 *   events through its ops and is told once, through ops->free, that the
 *   connection is over; a callback for a pcb whose owner is gone
 *   acknowledges and drops what it carries, or aborts it;
 * - the receive buffer: received bytes are copied into the owner's rx[]
 *   and the pbuf is freed at once; lwIP opens the window again only for
 *   what the owner consumed (tcpconn_rx_consume()), so the window the peer
 *   sees is the room left in rx[] and rx[] cannot overflow (a peer sending
 *   past it is aborted; over TLS, where altcp_tls hands up whole records,
 *   the data is refused and offered again);
 * - the send accounting: bytes written and not yet acknowledged
 *   (inflight), the last ACK progress and the send-stall window, judged by
 *   bytes (tcpconn_stalled()), and the throughput floor's periods
 *   (tcpconn_floor_missed());
 * - the two ways out, each detaching the pcb before the owner frees its
 *   state, so no callback reaches freed memory: tcpconn_close() (FIN after
 *   what is queued; the window reopened first, else lwIP answers with a
 *   RST) and tcpconn_abort() (RST).
 *
 * An owner embeds a struct tcpconn and gets back to itself from it
 * (tcpconn_owner()). Event loop only (lwIP's context).
 */
#ifndef VIREO_NET_TCPCONN_H
#define VIREO_NET_TCPCONN_H

#include "lib/types.h"
#include "lwip/altcp.h"
#include "lwip/altcp_tcp.h"
#include "lwip/tcp.h"

struct tcpconn;

struct tcpconn_ops {
	/* New bytes are in rx[] (tcpconn_rx_held() > 0), or the peer's FIN
	 * arrived (rx_eof newly set, nothing new in rx[]). */
	err_t (*recv)(struct tcpconn *tc);
	/* len more bytes were acknowledged: inflight, the stall window and
	 * t_progress count them already. */
	err_t (*sent)(struct tcpconn *tc, u16 len);
	/* Every poll interval (tcpconn_attach()'s ticks of 500 ms). */
	err_t (*poll)(struct tcpconn *tc);
	/* The connection is over: free the owner's state. err is ERR_OK when
	 * the owner ended it (tcpconn_close() or tcpconn_abort()), else
	 * lwIP's reason (ERR_RST, ERR_ABRT, ERR_CLSD), its pcb gone already.
	 * Either way tc is detached: no lwIP callback comes for it again. */
	void (*free)(struct tcpconn *tc, err_t err);
	/* An outbound connection (tcpconn_connect()) is established; NULL
	 * for accepted ones. */
	err_t (*connected)(struct tcpconn *tc);
	/* Over TLS, n decrypted bytes do not fit in rx[]: the owner may give
	 * it a larger receive buffer (rx, rx_cap, the held bytes moved; the
	 * window is altcp_tls's, untouched) and return true. NULL or false:
	 * altcp_tls keeps them and offers them again from its poll. Never
	 * ends tc. */
	bool (*rx_short)(struct tcpconn *tc, u32 n);
};
/* recv, sent and poll return what the lwIP callback returns: ERR_OK, or
 * ERR_ABRT once they ended tc (tcpconn_close() or tcpconn_abort()'s
 * answer), after which tc must not be touched. */

struct tcpconn {
	struct altcp_pcb *pcb;
	const struct tcpconn_ops *ops;
	u8 *rx;			/* the owner's receive buffer ... */
	u32 rx_cap;		/* ... of at least the window lwIP may open */
	u32 rx_off, rx_len;	/* unconsumed bytes: rx[rx_off..rx_len) */
	bool rx_eof;		/* the peer's FIN arrived */
	bool rx_drop;		/* acknowledge and drop what arrives (lingering) */
	bool tls;		/* TLS over TCP */
	u64 *rx_count;		/* the owner's count of received bytes, or NULL */
	u32 inflight;		/* bytes given to altcp_write(), not yet acknowledged */
	u32 t_floor;		/* ms (low 32 bits): the throughput floor's period began */
	u64 t_progress;		/* ms: last ACK progress, or when waiting for it began */
	u64 t_window;		/* ms: the current send-stall window's start */
	u32 acked_window;	/* bytes acknowledged since t_window */
	u32 need_window;	/* bytes the peer must acknowledge in this window */
	u32 floor_out;		/* bytes outstanding when t_floor's period began */
	u32 floor_acked;	/* bytes acknowledged since */
};

/* The struct around tc: tcpconn_owner(tc, struct conn, tc). */
#define tcpconn_owner(tcp, type, member) ((type *)(void *)((char *)(tcp) - offsetof(type, member)))

/* Milliseconds since boot, as the timeouts count them. */
u64 tcpconn_now_ms(void);

/* Takes over pcb (accepted or connected): tc's fields zeroed but for the
 * buffer rx[0..rx_cap), pcb's callbacks pointed at tc, polled every
 * poll_ticks x 500 ms, Nagle off (a response's last segment goes out at
 * once). rx_cap must hold the largest window lwIP may open for pcb. */
void tcpconn_attach(struct tcpconn *tc, struct altcp_pcb *pcb, const struct tcpconn_ops *ops, u8 *rx,
		    u32 rx_cap, u8 poll_ticks);
/* Polled every poll_ticks x 500 ms from now; 0: polled every tick only
 * while lwIP has something of it to time, not at all once it is at rest
 * (lwIP parks its PCB: net/port/patches/0011), for an owner that keeps
 * the idle connection's timeout itself. */
void tcpconn_poll_ticks(struct tcpconn *tc, u8 poll_ticks);

/* Connects an attached pcb out to ip:port: ERR_OK (ops->connected, or
 * ops->free with ERR_RST when refused, ERR_ABRT when lwIP gave up on its
 * SYNs, follows), or lwIP's error at once (ERR_RTE: no route), tc then
 * still attached for the owner to end. */
err_t tcpconn_connect(struct tcpconn *tc, const ip_addr_t *ip, u16 port);

/* Orderly close: rx[] is dropped (its window reopened), pcb detached,
 * ops->free(tc, ERR_OK), then a FIN after what is queued, or a RST when
 * lwIP cannot queue one (ERR_ABRT then). The orphan the pcb becomes is
 * kept within the port's caps. Returns what an lwIP callback returns. */
err_t tcpconn_close(struct tcpconn *tc);
/* RST: pcb detached, ops->free(tc, ERR_OK), pcb aborted. ERR_ABRT. */
err_t tcpconn_abort(struct tcpconn *tc);

/* Unconsumed received bytes. */
static inline u32 tcpconn_rx_held(const struct tcpconn *tc)
{
	return tc->rx_len - tc->rx_off;
}

/* The owner took n (<= held) bytes from rx[rx_off]: the window reopens by n. */
static inline void tcpconn_rx_consume(struct tcpconn *tc, u32 n)
{
	tc->rx_off += n;
	altcp_recved(tc->pcb, (u16_t)n);
	if (tc->rx_off == tc->rx_len)
		tc->rx_off = tc->rx_len = 0;
}

/* The receive buffer moves to rx[0..rx_cap) (plain TCP; the unconsumed
 * bytes, which must fit, are copied), and the window follows: a larger
 * buffer reopens it by the difference, a smaller one cuts what lwIP may
 * take to the room left in it. lwIP then trims whatever arrives past that
 * (the peer sends it again when the window reopens): the window announced
 * to the peer is not taken back, only what lwIP keeps. */
void tcpconn_rx_move(struct tcpconn *tc, u8 *rx, u32 rx_cap);

/* Everything unconsumed is dropped and its window reopened. */
void tcpconn_rx_discard(struct tcpconn *tc);

/* Starts a send-stall window at now: by now + the timeout the peer must
 * acknowledge need bytes (0: only ACK progress is asked for). */
static inline void tcpconn_stall_start(struct tcpconn *tc, u64 now, u32 need)
{
	tc->t_window = now;
	tc->acked_window = 0;
	tc->need_window = need;
}

/*
 * The send stall, from the poll callback while data is outstanding: no ACK
 * progress for timeout_ms, or at the end of a window of timeout_ms less
 * acknowledged than it asked for; a window that got its bytes starts the
 * next, asking for MIN(min_bytes, outstanding) (the bytes not yet
 * acknowledged, written or not). So a reader that keeps its window at one
 * byte and acknowledges every probe is cut off like one that acknowledges
 * nothing.
 */
bool tcpconn_stalled(struct tcpconn *tc, u64 now, u32 timeout_ms, u32 min_bytes, u32 outstanding);

/*
 * The throughput floor, shared by the HTTP server (runtime/http/conn.h)
 * and the app API's TCP services (runtime/services.c): over each period
 * of TCPCONN_FLOOR_MS that began with more than min_out bytes outstanding
 * (out), the peer acknowledges at least out x period / TCPCONN_FLOOR_DRAIN_MS,
 * a pace that would drain what it holds within 64 s (4 KiB: 512 B per
 * 8 s; 48 KiB: 6 KiB). The verdict on one period of elapsed_ms that saw
 * acked bytes acknowledged; the owner judges a period only while bytes
 * are still unacknowledged at its end (else it, not the peer, was behind)
 * and resets a connection that misses it (docs/appliance.md).
 */
#define TCPCONN_FLOOR_MS 8000
#define TCPCONN_FLOOR_DRAIN_MS 64000
static inline bool tcpconn_floor_met(u32 out, u32 acked, u32 elapsed_ms, u32 min_out)
{
	return out <= min_out || (u64)acked * TCPCONN_FLOOR_DRAIN_MS >= (u64)out * elapsed_ms;
}

/* The floor's next period starts at now with out bytes outstanding (the
 * owner's count: queued and unacknowledged). */
static inline void tcpconn_floor_start(struct tcpconn *tc, u64 now, u32 out)
{
	tc->t_floor = (u32)now;
	tc->floor_out = out;
	tc->floor_acked = 0;
}

/* From the poll callback: once a period is over, true if the peer missed
 * the floor over it (above min_out, something still unacknowledged), and
 * the next starts with out outstanding. */
bool tcpconn_floor_missed(struct tcpconn *tc, u64 now, u32 out, u32 min_out);

/* The tcp_pcb at the bottom of pcb's layers (TLS over TCP: the TCP one). */
static inline struct tcp_pcb *tcpconn_tcp_pcb(struct altcp_pcb *pcb)
{
#if LWIP_ALTCP
	while (pcb->inner_conn)
		pcb = pcb->inner_conn;
	return (struct tcp_pcb *)pcb->state;
#else
	return pcb;
#endif
}

#endif
