/*
 * Receive memory accounting (rxmem.h): the copy above the held-buffer
 * watermark and the global caps on TCP out-of-order queues.
 *
 * Why both: receive is zero-copy, so whatever lwIP keeps of a frame (an
 * out-of-order segment, a fragment waiting for its datagram, data the
 * application has not read) keeps one of the driver's few hundred buffers
 * off the ring. lwIP's own relief for this (freeing out-of-order data when
 * PBUF_POOL runs dry) never fires, since receive does not use PBUF_POOL. The
 * watermark keeps the ring supplied whatever the stack holds; the caps bound
 * the heap the copies then take.
 *
 * "Oldest" is the connection whose out-of-order queue has been non-empty the
 * longest: each one is stamped with a sequence number (an lwIP ext arg) the
 * first time a check finds it non-empty, and the stamp is cleared once it is
 * empty again. A real connection fills its hole within a round trip, so its
 * stamp is young; data an attacker leaves in place grows old and goes first.
 *
 * Bulk windows: the same ext arg's top bit marks a connection granted the
 * bulk receive window (VIREO_RXMEM_BULK_WND instead of TCP_WND; lwIP asks
 * rxmem_wnd_max() through TCP_WND_MAX(pcb), net/port/patches/0005). At most
 * rxmem_limits.bulk_max connections hold a grant; it ends when lwIP frees
 * the PCB (the ext arg's destroy callback), so a closed connection whose
 * queue lwIP still sends keeps its grant as long as it keeps the memory.
 *
 * Outbound connections of a bulk client (the HTTP client's: response
 * bodies) get a window of their own and bit (rxmem_limits.out_wnd, the
 * boot's plan: 32 or 48 MSS, net/port/netmem.h), uncounted (rxmem_out_grant() in
 * rxmem.h: no destroy callback), outside bulk_max: what they send stays under the
 * app's VIREO_TCP_INFLIGHT, so a larger window costs lwIP no more than a
 * plain connection (the heap budget's W_echo), and VIREO_TCP_OUT_MAX
 * bounds how many hold one.
 *
 * Bulk send grants, the same way for what we send: the ext arg's next bit
 * marks a connection whose send buffer was raised from TCP_SND_BUF to
 * VIREO_SND_BULK_BUF (pcb->snd_buf, the free space lwIP counts down on
 * writes and up on ACKs, raised by the difference) and its queue cap from
 * TCP_SND_QUEUELEN to VIREO_SND_BULK_QUEUELEN (lwIP asks
 * rxmem_snd_queuelen_max() through TCP_SND_QUEUELEN_PCB(pcb),
 * net/port/patches/0006). The HTTP server asks for one for a zero-copy body
 * larger than TCP_SND_BUF. At most rxmem_limits.snd_bulk_max are held; like
 * the receive grant it ends when lwIP frees the PCB.
 */
#include "lib/metrics.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"
#include "net/tcp/rxmem.h"

struct rxmem_stats rxmem_stats;
struct rxmem_limits rxmem_limits = {
	.ooseq_pbufs = VIREO_RXMEM_OOSEQ_PBUFS,
	.ooseq_bytes = VIREO_RXMEM_OOSEQ_BYTES,
	.heap_reserve = VIREO_RXMEM_HEAP_RESERVE,
	.bulk_max = VIREO_RXMEM_BULK_MAX,
	.snd_bulk_max = VIREO_SND_BULK_MAX,
	.out_wnd = VIREO_RXMEM_BULK_WND,
};

static u8 age_id;
static bool age_ready;
static u64 age_seq;

#define RXMEM_BULK_BIT	RXMEM_BULK_ARG_BIT	/* in the ext arg, above the age stamp */
#define RXMEM_SND_BIT	VIREO_SND_BULK_ARG_BIT	/* a bulk send grant */
#define RXMEM_FLAGS	(RXMEM_BULK_BIT | RXMEM_SND_BIT)

static u64 rxmem_arg_get(const struct tcp_pcb *pcb)
{
	return age_ready ? (u64)(uintptr_t)tcp_ext_arg_get(pcb, age_id) : 0;
}

static void rxmem_pcb_destroyed(u8_t id, void *data)
{
	(void)id;
	if (((u64)(uintptr_t)data & RXMEM_BULK_BIT) && rxmem_stats.bulk_grants)
		rxmem_stats.bulk_grants--;
	if (((u64)(uintptr_t)data & RXMEM_SND_BIT) && rxmem_stats.snd_bulk_grants)
		rxmem_stats.snd_bulk_grants--;
}

static const struct tcp_ext_arg_callbacks rxmem_ext_callbacks = {
	.destroy = rxmem_pcb_destroyed,
};

void rxmem_init(void)
{
	/* The only ext arg: id 0, which TCP_SND_QUEUELEN_PCB() reads inline. */
	if (!age_ready)
		age_id = tcp_ext_arg_alloc_id();
	age_ready = true;
}

u32 rxmem_wnd_max(const struct tcp_pcb *pcb)
{
	u64 arg = rxmem_arg_get(pcb);

	if (arg & RXMEM_OUT_ARG_BIT)
		return rxmem_limits.out_wnd;
	return (arg & RXMEM_BULK_BIT) ? VIREO_RXMEM_BULK_WND : TCP_WND;
}

bool rxmem_bulk_available(void)
{
	return age_ready && rxmem_stats.bulk_grants < rxmem_limits.bulk_max;
}

bool rxmem_bulk_grant(struct tcp_pcb *pcb)
{
	u64 arg;

	arg = rxmem_arg_get(pcb);
	if (arg & RXMEM_BULK_BIT)
		return true;
	if (!rxmem_bulk_available()) {
		rxmem_stats.bulk_refused++;
		return false;
	}
	tcp_ext_arg_set(pcb, age_id, (void *)(uintptr_t)(arg | RXMEM_BULK_BIT));
	tcp_ext_arg_set_callbacks(pcb, age_id, &rxmem_ext_callbacks);
	rxmem_stats.bulk_grants++;
	rxmem_stats.bulk_granted++;
	if (rxmem_stats.bulk_grants > rxmem_stats.bulk_peak)
		rxmem_stats.bulk_peak = rxmem_stats.bulk_grants;
	/* Open the rest of the window now: lwIP announces it at once (the
	 * update is more than TCP_WND_UPDATE_THRESHOLD). */
	tcp_recved(pcb, (u16_t)(VIREO_RXMEM_BULK_WND - TCP_WND));
	return true;
}

u16 rxmem_snd_queuelen_max(const struct tcp_pcb *pcb)
{
	return age_ready ? TCP_SND_QUEUELEN_PCB(pcb) : TCP_SND_QUEUELEN;
}

bool rxmem_snd_grant(struct tcp_pcb *pcb)
{
	u64 arg;

	arg = rxmem_arg_get(pcb);
	if (arg & RXMEM_SND_BIT)
		return true;
	if (!age_ready || rxmem_stats.snd_bulk_grants >= rxmem_limits.snd_bulk_max) {
		rxmem_stats.snd_bulk_refused++;
		return false;
	}
	tcp_ext_arg_set(pcb, age_id, (void *)(uintptr_t)(arg | RXMEM_SND_BIT));
	tcp_ext_arg_set_callbacks(pcb, age_id, &rxmem_ext_callbacks);
	if (++rxmem_stats.snd_bulk_grants > rxmem_stats.snd_bulk_peak)
		rxmem_stats.snd_bulk_peak = rxmem_stats.snd_bulk_grants;
	/* snd_buf is the free space: what is queued now stays counted. */
	pcb->snd_buf += VIREO_SND_BULK_BUF - TCP_SND_BUF;
	/* lwIP starts ssthresh at TCP_SND_BUF, the most it could have in
	 * flight: slow start may now go on to the larger buffer. */
	if (pcb->ssthresh < VIREO_SND_BULK_BUF)
		pcb->ssthresh = VIREO_SND_BULK_BUF;
	return true;
}

u32 rxmem_watermark(u32 total)
{
	return total / VIREO_RXMEM_WATERMARK_DIV;
}

/* Whether a copy of len bytes would eat into the heap's reserve. lwIP's
 * mem.avail is 0 when its heap is the C library's (host tests): no limit. */
static bool rxmem_heap_short(u32 len)
{
	mem_size_t avail = lwip_stats.mem.avail, used = lwip_stats.mem.used;
	u32 need = len + (u32)sizeof(struct pbuf) + 2 * MEM_ALIGNMENT;

	if (!avail)
		return false;
	return used > avail || avail - used < (mem_size_t)need + rxmem_limits.heap_reserve;
}

struct pbuf *rxmem_admit(struct pbuf *p, u32 held, u32 total)
{
	u32 mark = rxmem_watermark(total);

	rxmem_stats.watermark = mark;
	if (held > rxmem_stats.held_peak)
		rxmem_stats.held_peak = held;
	if (held <= mark)
		return p;
	return rxmem_copy(p);
}

struct pbuf *rxmem_copy(struct pbuf *p)
{
	struct pbuf *q = rxmem_heap_short(p->tot_len) ? NULL : pbuf_clone(PBUF_RAW, PBUF_RAM, p);

	pbuf_free(p);	/* the driver's buffers go back to the ring now */
	if (!q) {
		rxmem_stats.nomem_drops++;
		return NULL;
	}
	rxmem_stats.copied_frames++;
	rxmem_stats.copied_bytes += q->tot_len;
	return q;
}

static u64 rxmem_age_get(const struct tcp_pcb *pcb)
{
	return rxmem_arg_get(pcb) & ~RXMEM_FLAGS;
}

static void rxmem_age_set(struct tcp_pcb *pcb, u64 age)
{
	u64 flags = rxmem_arg_get(pcb) & RXMEM_FLAGS;

	tcp_ext_arg_set(pcb, age_id, (void *)(uintptr_t)(age | flags));
}

static void rxmem_ooseq_size(const struct tcp_pcb *pcb, u32 *pbufs, u32 *bytes)
{
	const struct tcp_seg *s;

	*pbufs = 0;
	*bytes = 0;
	for (s = pcb->ooseq; s; s = s->next) {
		*pbufs += pbuf_clen(s->p);
		*bytes += s->p->tot_len;
	}
}

static struct tcp_pcb *rxmem_ooseq_oldest(void)
{
	struct tcp_pcb *pcb, *oldest = NULL;

	for (pcb = tcp_active_pcbs; pcb; pcb = pcb->next)
		if (pcb->ooseq && (!oldest || rxmem_age_get(pcb) < rxmem_age_get(oldest)))
			oldest = pcb;
	return oldest;
}

/* Whether some PCB may hold out-of-order data (rxmem.h). */
static bool ooseq_maybe;

void rxmem_ooseq_note(void)
{
	ooseq_maybe = true;
}

void rxmem_enforce(void)
{
	u32 pbufs = 0, bytes = 0, np, nb;
	struct tcp_pcb *pcb;

	if (!ooseq_maybe)
		return;

	/* Only active PCBs keep out-of-order data: lwIP purges it when a
	 * connection enters TIME_WAIT or is freed. */
	for (pcb = tcp_active_pcbs; pcb; pcb = pcb->next) {
		if (!pcb->ooseq) {
			if (rxmem_age_get(pcb))
				rxmem_age_set(pcb, 0);
			continue;
		}
		if (!rxmem_age_get(pcb))
			rxmem_age_set(pcb, ++age_seq);
		rxmem_ooseq_size(pcb, &np, &nb);
		pbufs += np;
		bytes += nb;
	}
	while (pbufs > rxmem_limits.ooseq_pbufs || bytes > rxmem_limits.ooseq_bytes) {
		pcb = rxmem_ooseq_oldest();
		if (!pcb)
			break;
		rxmem_ooseq_size(pcb, &np, &nb);
		tcp_free_ooseq(pcb);
		rxmem_age_set(pcb, 0);
		pbufs -= np;
		bytes -= nb;
		rxmem_stats.ooseq_evictions++;
		rxmem_stats.ooseq_evicted_pbufs += np;
		rxmem_stats.ooseq_evicted_bytes += nb;
	}
	rxmem_stats.ooseq_pbufs = pbufs;
	rxmem_stats.ooseq_bytes = bytes;
	ooseq_maybe = pbufs != 0;
}

/* Each decision receive memory accounting takes (the pool's own gauges
 * are the netif's, net/netif/netif_vnet.c). */
__cold static void rxmem_write_metrics(struct metrics_buf *b)
{
	const struct rxmem_stats *s = &rxmem_stats;

	metrics_simple(b, "vireo_rxmem_held_peak", METRICS_GAUGE, "Most receive buffers the stack held at once",
		       s->held_peak);
	metrics_simple(b, "vireo_rxmem_copied_frames_total", METRICS_COUNTER,
		       "Frames copied into lwIP's heap (above the watermark; all of them under dma.rx copy)", s->copied_frames);
	metrics_simple(b, "vireo_rxmem_copied_bytes_total", METRICS_COUNTER, "Bytes of the copied frames",
		       s->copied_bytes);
	metrics_simple(b, "vireo_rxmem_nomem_drops_total", METRICS_COUNTER,
		       "Frames dropped above the watermark: lwIP's heap too short for a copy", s->nomem_drops);
	metrics_simple(b, "vireo_rxmem_ooseq_pbufs", METRICS_GAUGE,
		       "TCP out-of-order pbufs kept, all connections", s->ooseq_pbufs);
	metrics_simple(b, "vireo_rxmem_ooseq_bytes", METRICS_GAUGE,
		       "TCP out-of-order payload bytes kept, all connections", s->ooseq_bytes);
	metrics_simple(b, "vireo_rxmem_ooseq_evictions_total", METRICS_COUNTER,
		       "Out-of-order queues freed by the global cap, oldest first", s->ooseq_evictions);
	metrics_simple(b, "vireo_rxmem_ooseq_evicted_pbufs_total", METRICS_COUNTER,
		       "Pbufs in the freed out-of-order queues", s->ooseq_evicted_pbufs);
	metrics_simple(b, "vireo_rxmem_ooseq_evicted_bytes_total", METRICS_COUNTER,
		       "Payload bytes in the freed out-of-order queues", s->ooseq_evicted_bytes);
	metrics_simple(b, "vireo_rxmem_bulk_windows", METRICS_GAUGE,
		       "Connections holding the bulk receive window now", s->bulk_grants);
	metrics_simple(b, "vireo_rxmem_bulk_windows_peak", METRICS_GAUGE,
		       "Most connections holding the bulk receive window at once", s->bulk_peak);
	metrics_simple(b, "vireo_rxmem_bulk_windows_granted_total", METRICS_COUNTER,
		       "Bulk receive windows granted", s->bulk_granted);
	metrics_simple(b, "vireo_rxmem_bulk_windows_refused_total", METRICS_COUNTER,
		       "Bulk receive windows asked for while all were held (TCP_WND instead)", s->bulk_refused);
}
METRICS_SOURCE(rxmem, rxmem_write_metrics);
