/* vireo's lwIP port: heap set-up, pool budgets, TIME_WAIT and orphan trimming. */
#include "kernel/console.h"
#include "kernel/mm.h"
#include "kernel/panic.h"	/* unused: checks cc.h's copy of panic() */
#include "kernel/types.h"
#include "lwip/init.h"
#include "lwip/memp.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/priv/tcp_priv.h"
#include "netif/ppp/ppp_opts.h"	/* PPP_NUM_TIMEOUTS, in a pool budget */
#include "net/lwip_hooks.h"
#include "net/lwip_port.h"

/* mem.c aligns this pointer and carves MEM_SIZE bytes plus two block headers
 * from it; one spare page covers both. */
#define HEAP_PAGES ((MEM_SIZE + PAGE_SIZE - 1) / PAGE_SIZE + 1)

void *vireo_lwip_heap;
struct vireo_lwip_stats vireo_lwip_stats;

/* The MEMP_NUM_* and PBUF_POOL_SIZE budgets, indexed by memp_t, from the same
 * pool list memp.c expands (the size argument is dropped unevaluated). */
static const u16_t pool_budget[MEMP_MAX] = {
#define LWIP_MEMPOOL(name, num, size, desc) [MEMP_##name] = (num),
#include "lwip/priv/memp_std.h"
};

/* ---- orphans: connections the application closed, not yet gone ----
 *
 * After tcp_close() a PCB stays in lwIP's active list, without an argument
 * or callbacks, until the peer acknowledges our data and FIN (FIN_WAIT_1,
 * CLOSING, LAST_ACK) and, in FIN_WAIT_2, sends its own FIN. A peer that never
 * does keeps it for as long as lwIP's retransmissions and persist probes last
 * (tens of minutes). Like Linux's tcp_max_orphans and tcp_fin_timeout, the
 * port aborts (RST) orphans beyond VIREO_LWIP_ORPHANS_MAX or
 * VIREO_LWIP_ORPHANS_BYTES, oldest first, and any orphan the peer has sent
 * nothing to for VIREO_LWIP_ORPHAN_TIMEOUT_MS. */

/* mem.c's block header, rounded to MEM_ALIGNMENT (x86_64: 3 x u32 -> 16). */
#define HEAP_HDR LWIP_MEM_ALIGN_SIZE(12)
#define HEAP_COST(n) (HEAP_HDR + LWIP_MEM_ALIGN_SIZE(n))

static bool lwip_port_pcb_is_orphan(const struct tcp_pcb *pcb)
{
	if (pcb->callback_arg != NULL)
		return false;
	switch (pcb->state) {
	case FIN_WAIT_1:
	case FIN_WAIT_2:
	case CLOSING:
	case LAST_ACK:
		return true;
	default:
		return false;
	}
}

/* Heap bytes one pbuf chain holds: heap pbufs by their extent (struct,
 * header room and data), pool and ROM/REF pbufs by their pool element, the
 * driver's zero-copy receive pbufs nothing. */
static u32 lwip_port_chain_cost(const struct pbuf *p)
{
	u32 n = 0;

	for (; p != NULL; p = p->next) {
		switch (pbuf_get_allocsrc(p)) {
		case PBUF_TYPE_ALLOC_SRC_MASK_STD_HEAP:
			n += HEAP_COST((u32)((const u8 *)p->payload - (const u8 *)p) + p->len);
			break;
		case PBUF_TYPE_ALLOC_SRC_MASK_STD_MEMP_PBUF:
			n += HEAP_COST(sizeof(struct pbuf));
			break;
		case PBUF_TYPE_ALLOC_SRC_MASK_STD_MEMP_PBUF_POOL:
			n += HEAP_COST(LWIP_MEM_ALIGN_SIZE(sizeof(struct pbuf)) + PBUF_POOL_BUFSIZE);
			break;
		default:
			break;
		}
	}
	return n;
}

static u32 lwip_port_segs_cost(const struct tcp_seg *seg)
{
	u32 n = 0;

	for (; seg != NULL; seg = seg->next)
		n += HEAP_COST(sizeof(struct tcp_seg)) + lwip_port_chain_cost(seg->p);
	return n;
}

/* What pcb holds of lwIP's heap, an estimate from above. */
static u32 lwip_port_pcb_cost(const struct tcp_pcb *pcb)
{
	u32 n = HEAP_COST(sizeof(struct tcp_pcb)) + lwip_port_segs_cost(pcb->unsent) + lwip_port_segs_cost(pcb->unacked);

#if TCP_QUEUE_OOSEQ
	n += lwip_port_segs_cost(pcb->ooseq);
#endif
	return n + lwip_port_chain_cost(pcb->refused_data);
}

void vireo_lwip_orphans_count(u32 *count, u32 *bytes)
{
	const struct tcp_pcb *pcb;

	*count = *bytes = 0;
	for (pcb = tcp_active_pcbs; pcb != NULL; pcb = pcb->next) {
		if (!lwip_port_pcb_is_orphan(pcb))
			continue;
		(*count)++;
		*bytes += lwip_port_pcb_cost(pcb);
	}
}

/* TCP_REG() pushes on the head, so the active list runs newest first: walk it
 * summing orphans, and every orphan past either cap is older than all those
 * kept. keep (the PCB just closed, whose callback may still be running in
 * lwIP) is counted but never aborted. Aborting other PCBs from an
 * application callback is safe: lwIP's timers restart their walk when the
 * list changes (tcp_active_pcbs_changed), and tcp_input() touches only the
 * PCB it is delivering to. */
void vireo_lwip_orphans_trim(struct tcp_pcb *keep)
{
	struct tcp_pcb *pcb, *next;
	u32 count = 0, bytes = 0, cost;

	for (pcb = tcp_active_pcbs; pcb != NULL; pcb = next) {
		next = pcb->next;
		if (!lwip_port_pcb_is_orphan(pcb))
			continue;
		cost = lwip_port_pcb_cost(pcb);
		if (pcb != keep && (count + 1 > VIREO_LWIP_ORPHANS_MAX ||
				    bytes + cost > VIREO_LWIP_ORPHANS_BYTES)) {
			tcp_abort(pcb);
			vireo_lwip_stats.orphans_capped++;
			continue;
		}
		count++;
		bytes += cost;
	}
	if (count > vireo_lwip_stats.orphans_peak)
		vireo_lwip_stats.orphans_peak = count;
}

static void lwip_port_orphans_expire(void)
{
	struct tcp_pcb *pcb, *next;

	for (pcb = tcp_active_pcbs; pcb != NULL; pcb = next) {
		next = pcb->next;
		if (lwip_port_pcb_is_orphan(pcb) &&
		    (u32_t)(tcp_ticks - pcb->tmr) >= VIREO_LWIP_ORPHAN_TIMEOUT_MS / TCP_SLOW_INTERVAL) {
			tcp_abort(pcb);
			vireo_lwip_stats.orphans_timedout++;
		}
	}
}

static void lwip_port_tw_trim(void *arg)
{
	struct tcp_pcb *pcb, *next;
	unsigned int n = 0;

	/* Half-open connections older than VIREO_LWIP_SYN_RCVD_MS (lwipopts.h):
	 * tcp_ticks counts TCP_SLOW_INTERVAL (500 ms) ticks; pcb->tmr is the
	 * tick of the last segment from the peer. */
	for (pcb = tcp_active_pcbs; pcb != NULL; pcb = next) {
		next = pcb->next;
		if (pcb->state == SYN_RCVD &&
		    (u32_t)(tcp_ticks - pcb->tmr) >= VIREO_LWIP_SYN_RCVD_MS / TCP_SLOW_INTERVAL) {
			tcp_abort(pcb);
			vireo_lwip_stats.syn_trimmed++;
		}
	}

	/* TCP_REG() pushes on the head, so the list runs newest first and
	 * everything past the cap is the oldest. Aborting a TIME_WAIT PCB only
	 * unlinks and frees it; no RST is sent. */
	for (pcb = tcp_tw_pcbs; pcb != NULL; pcb = next) {
		next = pcb->next;
		if (++n > VIREO_LWIP_TIME_WAIT_MAX) {
			tcp_abort(pcb);
			vireo_lwip_stats.tw_trimmed++;
		}
	}
	lwip_port_orphans_expire();
	vireo_lwip_orphans_trim(NULL);
	sys_timeout(TCP_TMR_INTERVAL, lwip_port_tw_trim, arg);
}

/* LWIP_HOOK_TCP_TIMEWAIT_REOPEN (net/patches/0002): lwIP is about to free a
 * TIME_WAIT PCB because a SYN above its rcv_nxt reopens the 4-tuple. */
void vireo_lwip_tw_reopen(struct tcp_pcb *pcb)
{
	(void)pcb;
	vireo_lwip_stats.tw_reopened++;
}

int vireo_lwip_init(void)
{
	int i;

	if (vireo_lwip_heap != NULL)
		return 0;
	vireo_lwip_heap = page_alloc(HEAP_PAGES);
	if (vireo_lwip_heap == NULL) {
		kprintf("lwip: no %u KiB for the heap\n", (unsigned int)(HEAP_PAGES * PAGE_SIZE / 1024));
		return -ENOMEM;
	}
	vireo_lwip_stats.heap_bytes = MEM_SIZE;

	lwip_init();

	/* With MEMP_MEM_MALLOC lwIP leaves avail at 0; publish the budgets. */
	for (i = 0; i < MEMP_MAX; i++)
		lwip_stats.memp[i]->avail = pool_budget[i];

	sys_timeout(TCP_TMR_INTERVAL, lwip_port_tw_trim, NULL);
	return 0;
}
