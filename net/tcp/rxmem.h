/* Receive memory accounting: what lwIP may keep of received frames.
 *
 * The netif hands every received frame through rxmem_admit() with the
 * driver's count of buffers the stack holds. Up to a watermark the frame goes
 * up zero-copy (it pins its driver buffers until lwIP frees it); above it the
 * frame is copied into lwIP's heap and its buffers go back to the ring at
 * once, so nothing the stack keeps can drain the receive pool. After each
 * receive batch rxmem_enforce() caps the TCP out-of-order data kept across
 * all connections, freeing the oldest connection's queue first.
 *
 * Bounds and their arithmetic: net/port/lwipopts.h, "receive memory". Call from
 * the event loop only (lwIP's context). */
#ifndef VIREO_NET_RXMEM_H
#define VIREO_NET_RXMEM_H

#include "lib/types.h"
#include "lwip/tcp.h"

struct pbuf;
struct tcp_pcb;

struct rxmem_limits {
	u32 ooseq_pbufs;	/* TCP out-of-order pbufs, all connections */
	u32 ooseq_bytes;	/* TCP out-of-order payload bytes, all connections */
	u32 heap_reserve;	/* lwIP heap bytes a copy must leave free */
	u32 bulk_max;		/* connections holding the bulk window at once */
	u32 snd_bulk_max;	/* connections holding the bulk send buffer at once */
	u32 out_wnd;		/* an outbound bulk connection's window: the boot's
				 * plan (net/port/netmem.h out_wnd) */
};

struct rxmem_stats {
	u64 copied_frames;	/* frames copied into lwIP's heap above the watermark */
	u64 copied_bytes;
	u64 nomem_drops;	/* frames dropped: lwIP's heap short for a copy */
	u64 ooseq_evictions;	/* connections whose out-of-order queue was freed */
	u64 ooseq_evicted_pbufs;
	u64 ooseq_evicted_bytes;
	u32 ooseq_pbufs;	/* out-of-order data kept, at the last rxmem_enforce() */
	u32 ooseq_bytes;
	u32 held_peak;		/* most driver buffers the stack held at once */
	u32 watermark;		/* the last watermark in force */
	u32 bulk_grants;	/* connections holding the bulk window now */
	u32 bulk_peak;		/* most at once */
	u64 bulk_granted;	/* grants made */
	u64 bulk_refused;	/* asked for while all were held: TCP_WND instead */
	u32 snd_bulk_grants;	/* connections holding the bulk send buffer now */
	u32 snd_bulk_peak;	/* most at once */
	u64 snd_bulk_refused;	/* asked for while all were held: TCP_SND_BUF instead */
};
extern struct rxmem_stats rxmem_stats;

/* Sets up the per-connection bookkeeping (one lwIP ext arg). Call once after
 * lwip_init(), before any connection exists. */
void rxmem_init(void);

/* The limits in force; tests may lower them. */
extern struct rxmem_limits rxmem_limits;

/* Buffers of a pool of `total` the stack may hold before frames are copied. */
u32 rxmem_watermark(u32 total);

/* A received frame p (a chain of the driver's zero-copy pbufs), with `held`
 * driver buffers now held by the stack, this frame's included, of `total`.
 * Returns the pbuf to give to lwIP: p itself, or a PBUF_RAM copy (p is then
 * freed, which returns its buffers to the driver), or NULL if the frame was
 * dropped for lack of heap (p freed, counted). */
struct pbuf *rxmem_admit(struct pbuf *p, u32 held, u32 total);
/* The copy alone: a PBUF_RAM copy of p (p freed either way), or NULL when
 * the heap is short (dropped, counted). Counted as copied. */
struct pbuf *rxmem_copy(struct pbuf *p);

/* Applies the global out-of-order caps: frees whole out-of-order queues,
 * oldest first, until the total is within rxmem_limits. It walks the active
 * PCBs only after rxmem_ooseq_note(), until a walk finds no out-of-order
 * data: in-order traffic costs no walk of every connection per batch. */
void rxmem_enforce(void);
/* A segment with data or FIN not at its PCB's rcv_nxt arrived: lwIP may
 * queue it out of order (LWIP_HOOK_TCP_INPACKET_PCB, net/port/lwip_port.c). */
void rxmem_ooseq_note(void);

/* The receive window lwIP may open for pcb: VIREO_RXMEM_BULK_WND if it holds
 * a bulk grant, else TCP_WND. lwIP's TCP_WND_MAX(pcb) (net/port/lwipopts.h). */
u32 rxmem_wnd_max(const struct tcp_pcb *pcb);

/* Whether a bulk grant is free now (at most rxmem_limits.bulk_max held). */
bool rxmem_bulk_available(void);

/* Gives an established pcb the bulk window and announces it at once, if a
 * grant is free (else counted, and pcb keeps TCP_WND). The grant is held
 * until lwIP frees the pcb. Returns whether pcb holds one. */
bool rxmem_bulk_grant(struct tcp_pcb *pcb);

/* The ext arg's bits for the bulk window and an outbound one's (rxmem's
 * ext arg is id 0; VIREO_SND_BULK_ARG_BIT is bit 62). */
#define RXMEM_BULK_ARG_BIT (1ull << 63)
#define RXMEM_OUT_ARG_BIT (1ull << 61)

/* Gives an established outbound connection of a bulk client
 * (runtime/tcp_out.c) a receive window of wnd bytes (its rx[]: at most
 * rxmem_limits.out_wnd, the plan's, TCP_WND + 65,535 at most), announced at once. Not one
 * of the bulk_max grants: those are for accepted connections that may send
 * back as much as they receive (W_bulk); an outbound one keeps the app's
 * send bound (VIREO_TCP_INFLIGHT), so its lwIP cost stays W_echo, and the
 * client's cap (VIREO_TCP_OUT_MAX) bounds how many hold one. So the bit
 * is set without the destroy callback that counts grants down (an
 * outbound pcb gets no other grant, so none is ever set on it). Once per
 * connection, when established; held until lwIP frees the pcb. Before
 * rxmem_init() the bit is not read and tcp_recved() stops at TCP_WND.
 * Inline: a call costs the TLS image's budget more than it. */
static inline void rxmem_out_grant(struct tcp_pcb *pcb, u32 wnd)
{
	pcb->ext_args[0].data = (void *)((uintptr_t)pcb->ext_args[0].data | (uintptr_t)RXMEM_OUT_ARG_BIT);
	tcp_recved(pcb, (u16_t)(wnd - TCP_WND));
}

/* The send queue cap lwIP applies to pcb, in pbufs: VIREO_SND_BULK_QUEUELEN
 * if it holds a bulk send grant, else TCP_SND_QUEUELEN: what lwIP's
 * TCP_SND_QUEUELEN_PCB(pcb) (net/port/lwipopts.h) reads inline. */
u16 rxmem_snd_queuelen_max(const struct tcp_pcb *pcb);

/* Raises pcb's send buffer to VIREO_SND_BULK_BUF bytes and its queue to
 * VIREO_SND_BULK_QUEUELEN pbufs, if a grant is free (else counted, and pcb
 * keeps TCP_SND_BUF). Held until lwIP frees the pcb. Returns whether pcb
 * holds one. */
bool rxmem_snd_grant(struct tcp_pcb *pcb);

#endif
