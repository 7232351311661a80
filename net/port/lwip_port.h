/* vireo's lwIP port: the heap lwIP runs in, its start-up and the glue the
 * netif and application code need beyond lwIP's own headers. */
#ifndef VIREO_NET_LWIP_PORT_H
#define VIREO_NET_LWIP_PORT_H

#include "lib/types.h"

/* Allocates lwIP's heap (MEM_SIZE bytes of kernel pages, see net/port/lwipopts.h),
 * runs lwip_init(), publishes the per-pool budgets as
 * lwip_stats.memp[i]->avail and starts the TIME_WAIT trim timer. Call once,
 * from the event loop's context, before any netif is added; later calls do
 * nothing and return 0. Returns 0, or -ENOMEM if the heap cannot be had.
 *
 * After it, the event loop owns lwIP: it alone calls netif input,
 * sys_check_timeouts() (sys_timeouts_sleeptime() says when next) and the raw
 * API, never an interrupt handler. */
int vireo_lwip_init(void);

struct vireo_lwip_stats {
	u64 tw_trimmed;		/* TIME_WAIT PCBs dropped above the cap */
	u64 tw_reopened;	/* TIME_WAIT PCBs a new SYN reopened (net/port/patches/0002) */
	u64 syn_trimmed;	/* half-open (SYN_RCVD) PCBs aborted after VIREO_LWIP_SYN_RCVD_MS */
	u64 syncookies_sent;	/* SYN-ACKs with a cookie, listen backlog full (net/tcp/syncookie.c) */
	u64 syncookies_validated;	/* ACKs with a valid cookie: a connection made */
	u64 syncookies_rejected;	/* ACKs for a listener with a bad or stale cookie */
	u64 orphans_capped;	/* orphans aborted over VIREO_LWIP_ORPHANS_MAX/_BYTES */
	u64 orphans_timedout;	/* orphans aborted after VIREO_LWIP_ORPHAN_TIMEOUT_MS */
	u64 orphans_peak;	/* most orphans seen at once (after a trim) */
	u64 orphan_visits;	/* PCBs a close's orphan bookkeeping looked at (tests count them) */
	u64 rx_coalesced_acks;	/* segments over one MSS (receive TSO) ACKed at once */
	u64 pcb_buckets;	/* lwIP's 4-tuple index (patch 0010), 0: one list */
};
extern struct vireo_lwip_stats vireo_lwip_stats;

/* lwIP's heap (net/port/segheap.c); all 0 when lwIP runs on the C library's
 * malloc (host tests). Bytes in blocks are lwip_stats.mem.used. */
struct vireo_lwip_heap_stats {
	u32 pages, pages_used, pages_peak;	/* of SEGHEAP_PAGE bytes */
	u64 bad_frees;		/* frees of a pointer that is no live block */
};
void vireo_lwip_heap_stats(struct vireo_lwip_heap_stats *st);

struct tcp_pcb;

/* Orphans: TCP PCBs the application closed (callback argument cleared)
 * that lwIP still holds in FIN_WAIT_1, FIN_WAIT_2, CLOSING or LAST_ACK, on
 * the port's queue, oldest first (lwip_port.c). Closing: cost =
 * vireo_lwip_orphan_closing(pcb) before tcp_close() (it queues pcb; a close
 * that frees it unqueues it), vireo_lwip_orphans_close(pcb, cost) after,
 * which aborts the oldest beyond the caps in net/port/lwipopts.h (never pcb
 * itself, which may be freed by then: only compared): O(1) per close and per
 * orphan aborted. vireo_lwip_orphans_trim(keep) is the same trim; the port
 * also runs it, the orphan timeout and the queueing of orphans closed
 * without vireo_lwip_orphan_closing() from its timer. Event loop only. */
void vireo_lwip_orphans_trim(struct tcp_pcb *keep);
u32 vireo_lwip_orphan_closing(struct tcp_pcb *pcb);
static inline void vireo_lwip_orphans_close(struct tcp_pcb *keep, u32 cost)
{
	(void)cost;	/* queued with the PCB by vireo_lwip_orphan_closing() */
	vireo_lwip_orphans_trim(keep);
}
/* Orphans queued now, and an estimate from above of the lwIP heap they
 * hold (brought up to date every timer tick). O(1). */
void vireo_lwip_orphans_count(u32 *count, u32 *bytes);

/* Buckets for lwIP's 4-tuple index when pcbs PCBs are budgeted: the next
 * power of two (lwip_port.c has the arithmetic). */
u32 vireo_lwip_pcb_buckets(u32 pcbs);

#endif
