/* vireo's lwIP port: heap set-up, pool budgets, TIME_WAIT and orphan trimming. */
#include "kernel/console.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"	/* unused: checks cc.h's copy of panic() */
#include "lib/metrics.h"
#include "lib/types.h"
#include "lwip/init.h"
#include "lwip/memp.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/priv/tcp_priv.h"
#include "netif/ppp/ppp_opts.h"	/* PPP_NUM_TIMEOUTS, in a pool budget */
#include "net/port/lwip_hooks.h"
#include "net/port/lwip_port.h"
#include "net/port/netmem.h"
#include "net/port/segheap.h"
#if VIREO_TLS
#include "net/tls/tlsmem.h"
#endif
#include "net/tcp/rxmem.h"
#include <string.h>

/* lwIP's heap is net/port/segheap.c over the boot's plan's heap_bytes
 * (net/port/netmem.h: MEM_SIZE, 4 MiB, up to 64 MiB of RAM, more above) of
 * pages, plus the heap's descriptors in front of them, through
 * MEM_CUSTOM_ALLOCATOR. */
static size_t lwip_port_kpages(u32 npages)
{
	return (segheap_region_bytes(npages) + PAGE_SIZE - 1) / PAGE_SIZE;
}

/* mem.c (MEM_CUSTOM_ALLOCATOR with MEM_STATS) puts the request's size in a
 * header of this many bytes in front of each block. */
#define MEM_HDR LWIP_MEM_ALIGN_SIZE(sizeof(mem_size_t))

static void *lwip_port_heap_mem;
struct vireo_lwip_stats vireo_lwip_stats;

#if !MEM_LIBC_MALLOC
static struct segheap lwip_port_heap;

/* mem.c adds the request's size (without its header) to
 * lwip_stats.mem.used after this returns, and subtracts it before calling
 * vireo_mem_free(); each adds the rest of the block, so mem.used (and
 * mem.max, which lwIP updates with it) is the heap's bytes in blocks
 * exactly: what the rounding and headers really take. */
void *vireo_mem_malloc(size_t n)
{
	size_t before = lwip_port_heap.bytes;
	void *p = segheap_alloc(&lwip_port_heap, n);

	if (p != NULL && n >= MEM_HDR)
		lwip_stats.mem.used += (lwip_port_heap.bytes - before) - (n - MEM_HDR);
	return p;
}

void vireo_mem_free(void *p)
{
	mem_size_t size = p != NULL ? *(mem_size_t *)p : 0;
	size_t block = segheap_free(&lwip_port_heap, p);

	if (block)
		lwip_stats.mem.used -= block - size;
}

/* Only called with MEM_STATS off (mem.c's own mem_calloc otherwise). */
void *vireo_mem_calloc(size_t count, size_t size)
{
	void *p;

	if (size && count > (size_t)-1 / size)
		return NULL;
	p = segheap_alloc(&lwip_port_heap, count * size);
	if (p != NULL)
		memset(p, 0, count * size);
	return p;
}

void vireo_lwip_heap_stats(struct vireo_lwip_heap_stats *st)
{
	st->pages = lwip_port_heap.npages;
	st->pages_used = lwip_port_heap.pages_used;
	st->pages_peak = lwip_port_heap.pages_peak;
	st->bad_frees = lwip_port_heap.bad_frees;
}
#else
void vireo_lwip_heap_stats(struct vireo_lwip_heap_stats *st)
{
	*st = (struct vireo_lwip_heap_stats){0};
}
#endif

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

/* The heap block a request of n bytes takes (net/port/segheap.c's class or run
 * for n plus mem.c's size header). */
#define HEAP_COST(n) ((u32)segheap_block_bytes(MEM_HDR + LWIP_MEM_ALIGN_SIZE(n)))

/* lwipopts.h's heap worst case counts a PCB as a 320-byte block and its
 * send queue as 96 pbufs: a change to either must redo that sum. */
_Static_assert(sizeof(struct tcp_pcb) + 8 <= 320 && TCP_SND_QUEUELEN <= 96,
	       "redo the heap worst case in net/port/lwipopts.h");
_Static_assert(MEM_SIZE == NETMEM_HEAP_FLOOR, "net/port/netmem.h's floor is lwipopts.h's sum");

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


/* The orphan queue: the orphans in the order they were closed, oldest at
 * the head, in a table of VIREO_LWIP_ORPHANS_MAX + 1 slots (the +1: a close
 * queues its PCB before the trim takes the oldest out). A PCB knows its
 * slot (pcb->port_slot, net/port/patches/0012: 0 for none), and lwIP tells
 * the port (LWIP_HOOK_TCP_UNLINK) as a PCB leaves the active list (to
 * TIME_WAIT or to be freed) or is freed, which unqueues it: queueing,
 * unqueueing and taking the oldest are O(1), so a close looks at its own
 * PCB and the one it may push out, never at the other connections (the
 * walk of the active list this replaces looked at all 20,000 at -m 256).
 * count and bytes are the queued PCBs and the heap they held when queued
 * (vireo_lwip_orphan_closing()'s estimate); the timer brings bytes up to
 * date every tick (lwip_port_orphans_expire()). Slot 0 is the list's head:
 * q[0].next is the oldest, q[0].prev the newest; spare slots are chained
 * through next from lwip_port_orphan_spare. */
#define ORPHAN_SLOTS (VIREO_LWIP_ORPHANS_MAX + 1)
_Static_assert(ORPHAN_SLOTS < 65536, "port_slot is 16 bits");

static struct {
	struct tcp_pcb *pcb;
	u32 cost;
	u16 prev, next;
} lwip_port_orphan_q[ORPHAN_SLOTS + 1];
static u16 lwip_port_orphan_spare, lwip_port_orphan_fresh;
static u32 lwip_port_orphans_n, lwip_port_orphans_bytes;

/* Queues pcb (not queued yet) as the newest orphan; false when every slot is
 * taken (the timer's walk queues it later). */
static bool lwip_port_orphan_push(struct tcp_pcb *pcb, u32 cost)
{
	u16 s = lwip_port_orphan_spare, tail = lwip_port_orphan_q[0].prev;

	if (s != 0)
		lwip_port_orphan_spare = lwip_port_orphan_q[s].next;
	else if (lwip_port_orphan_fresh < ORPHAN_SLOTS)
		s = ++lwip_port_orphan_fresh;
	else
		return false;
	lwip_port_orphan_q[s].pcb = pcb;
	lwip_port_orphan_q[s].cost = cost;
	lwip_port_orphan_q[s].prev = tail;
	lwip_port_orphan_q[s].next = 0;
	lwip_port_orphan_q[tail].next = s;
	lwip_port_orphan_q[0].prev = s;
	pcb->port_slot = s;
	lwip_port_orphans_n++;
	lwip_port_orphans_bytes += cost;
	return true;
}

/* LWIP_HOOK_TCP_UNLINK (net/port/patches/0012): pcb leaves a list or is
 * freed; it is an orphan no more. A slot that does not name pcb back is
 * left alone (lwIP's memory, not the network's, but checked all the same). */
static void lwip_port_orphan_unqueue(u16 s)
{
	u16 p = lwip_port_orphan_q[s].prev, n = lwip_port_orphan_q[s].next;

	lwip_port_orphan_q[p].next = n;
	lwip_port_orphan_q[n].prev = p;
	lwip_port_orphan_q[s].pcb = NULL;
	lwip_port_orphan_q[s].next = lwip_port_orphan_spare;
	lwip_port_orphan_spare = s;
	lwip_port_orphans_n--;
	lwip_port_orphans_bytes -= lwip_port_orphan_q[s].cost;
}

void vireo_lwip_pcb_unlink(struct tcp_pcb *pcb)
{
	u16 s = pcb->port_slot;

	pcb->port_slot = 0;
	if (s != 0 && s <= ORPHAN_SLOTS && lwip_port_orphan_q[s].pcb == pcb)
		lwip_port_orphan_unqueue(s);
}

/* A FIN's segment (or a TLS close_notify's) the close may queue. */
#define ORPHAN_CLOSE_SLACK (HEAP_COST(sizeof(struct tcp_seg)) + HEAP_COST(sizeof(struct pbuf) + 128))

u32 vireo_lwip_orphan_closing(struct tcp_pcb *pcb)
{
	u32 cost = lwip_port_pcb_cost(pcb) + ORPHAN_CLOSE_SLACK;

	/* Not one already in TIME_WAIT (an application closing on the EOF
	 * that took it there), nor one off the active list: lwIP would not
	 * unlink it from the queue while it lives. */
	vireo_lwip_stats.orphan_visits++;
	if (pcb->port_slot == 0 && pcb->state != TIME_WAIT && pcb->state != CLOSED && pcb->state != LISTEN)
		lwip_port_orphan_push(pcb, cost);
	return cost;
}

/* Aborts the oldest orphans while they are over either cap; keep (the PCB
 * just closed, whose callback may still be running in lwIP, or NULL) is
 * counted but never aborted: it is the newest, so the loop stops there.
 * Aborting other PCBs from an application callback is safe: lwIP's timers
 * restart their walk when the list changes (tcp_active_pcbs_changed), and
 * tcp_input() touches only the PCB it is delivering to. tcp_abort() unqueues
 * the PCB (through the hook) before it returns. */
void vireo_lwip_orphans_trim(struct tcp_pcb *keep)
{
	while (lwip_port_orphans_n > VIREO_LWIP_ORPHANS_MAX || lwip_port_orphans_bytes > VIREO_LWIP_ORPHANS_BYTES) {
		u16 s = lwip_port_orphan_q[0].next;
		struct tcp_pcb *pcb = lwip_port_orphan_q[s].pcb;

		if (s == 0 || pcb == keep)
			break;
		vireo_lwip_stats.orphan_visits++;
		tcp_abort(pcb);		/* frees pcb: tcp_free() unqueues it (the hook) */
		vireo_lwip_stats.orphans_capped++;
	}
	if (lwip_port_orphans_n > vireo_lwip_stats.orphans_peak)
		vireo_lwip_stats.orphans_peak = lwip_port_orphans_n;
}

/* The timer's: aborts the orphans the peer has sent nothing to for
 * VIREO_LWIP_ORPHAN_TIMEOUT_MS, and brings each one's cost up to date
 * (acknowledged data leaves, out-of-order data may come): at most
 * ORPHAN_SLOTS slots. */
void vireo_lwip_orphans_count(u32 *count, u32 *bytes)
{
	*count = lwip_port_orphans_n;
	*bytes = lwip_port_orphans_bytes;
}

static void lwip_port_orphans_expire(void)
{
	u16 s, next;

	lwip_port_orphans_bytes = 0;
	for (s = lwip_port_orphan_q[0].next; s != 0; s = next) {
		struct tcp_pcb *pcb = lwip_port_orphan_q[s].pcb;

		next = lwip_port_orphan_q[s].next;
		if ((u32_t)(tcp_ticks - pcb->tmr) >= VIREO_LWIP_ORPHAN_TIMEOUT_MS / TCP_SLOW_INTERVAL) {
			lwip_port_orphan_q[s].cost = 0;
			tcp_abort(pcb);	/* unqueued, as above */
			vireo_lwip_stats.orphans_timedout++;
			continue;
		}
		lwip_port_orphan_q[s].cost = lwip_port_pcb_cost(pcb);
		lwip_port_orphans_bytes += lwip_port_orphan_q[s].cost;
	}
}

static void lwip_port_tw_trim(void *arg)
{
	struct tcp_pcb *pcb, *next;
	unsigned int n = 0;

	/* Half-open connections older than VIREO_LWIP_SYN_RCVD_MS (lwipopts.h):
	 * tcp_ticks counts TCP_SLOW_INTERVAL (500 ms) ticks; pcb->tmr is the
	 * tick of the last segment from the peer. This walk stops at the
	 * first parked PCB, as lwIP's timers do (net/port/patches/0011):
	 * half-open connections and orphans are never parked (only an
	 * ESTABLISHED PCB at rest is), and every parked PCB is behind every
	 * other, so it is linear in the PCBs with something to time, not in
	 * the idle connections. The orphans' expiry and trim walk their queue
	 * (<= ORPHAN_SLOTS). */
	for (pcb = tcp_active_pcbs; pcb != NULL && !(pcb->flags & TF_PARKED); pcb = next) {
		next = pcb->next;
		if (pcb->state == SYN_RCVD &&
		    (u32_t)(tcp_ticks - pcb->tmr) >= VIREO_LWIP_SYN_RCVD_MS / TCP_SLOW_INTERVAL) {
			tcp_abort(pcb);
			vireo_lwip_stats.syn_trimmed++;
		} else if (pcb->port_slot == 0 && lwip_port_pcb_is_orphan(pcb)) {
			/* Closed without vireo_lwip_orphan_closing(): queued
			 * here, trimmed after the walk (an abort now could free
			 * next); with every slot taken, at a later tick. */
			lwip_port_orphan_push(pcb, lwip_port_pcb_cost(pcb));
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

/* LWIP_HOOK_TCP_TIMEWAIT_REOPEN (net/port/patches/0002): lwIP is about to free a
 * TIME_WAIT PCB because a SYN above its rcv_nxt reopens the 4-tuple. */
void vireo_lwip_tw_reopen(struct tcp_pcb *pcb)
{
	(void)pcb;
	vireo_lwip_stats.tw_reopened++;
}

/* LWIP_HOOK_TCP_INPACKET_PCB, for every segment tcp_input has a PCB for
 * (p: the payload, the TCP header already taken off). A segment carrying
 * more than one MSS of data is one the device coalesced (receive TSO): it
 * is acknowledged at once, as RFC 5681 §4.2 asks for every second
 * full-sized segment. lwIP would count it as one segment and hold the ACK
 * for the delayed-ACK timer, while the sender, whose whole window it may
 * be, waits for that ACK. Setting TF_ACK_DELAY makes tcp_receive's
 * tcp_ack() send the ACK now. A segment with data or FIN that is not at
 * rcv_nxt may be queued out of order: receive memory accounting is told, so
 * that its pass after the batch walks the PCBs (net/tcp/rxmem.h). Then the
 * SYN-cookie check. */
err_t vireo_tcp_inpacket(struct tcp_pcb *pcb, struct tcp_hdr *hdr, u16_t optlen, u16_t opt1len, u8_t *opt2,
			 struct pbuf *p)
{
	/* (a listener's PCB, a struct tcp_pcb_listen, has no rcv_nxt) */
	if (pcb->state != LISTEN && (p->tot_len > 0 || (TCPH_FLAGS(hdr) & TCP_FIN)) &&
	    hdr->seqno != pcb->rcv_nxt)
		rxmem_ooseq_note();
	if ((pcb->state == ESTABLISHED || pcb->state == FIN_WAIT_1 || pcb->state == FIN_WAIT_2) &&
	    p->tot_len > pcb->mss) {
		tcp_set_flags(pcb, TF_ACK_DELAY);
		vireo_lwip_stats.rx_coalesced_acks++;
	}
	return vireo_syncookie_inpacket(pcb, hdr, optlen, opt1len, opt2, p);
}

/* lwIP's 4-tuple index of active and TIME_WAIT PCBs (net/port/patches/0010):
 * one bucket, a pointer, per PCB the plan budgets (lwIP's MEMP_NUM_TCP_PCB
 * and the plan's HTTP connections above the floor), rounded up to a power of
 * two, so the load stays at most 1 and a segment's lookup examines about
 * one PCB (the hash is keyed: net/tcp/tcp_isn.c):
 *   buckets = 2^ceil(log2(MEMP_NUM_TCP_PCB + http_conns - 64)), 8 bytes each
 * e.g. the floor's 708 PCBs: 1,024 buckets, 8 KiB; 2,100 HTTP connections:
 * 4,096, 32 KiB; 20,000: 32,768, 256 KiB. From the kernel's pages, not
 * lwIP's heap. Should the pages not be there, the index stays one bucket
 * (lookups correct, walking every PCB as lwIP did). */
u32 vireo_lwip_pcb_buckets(u32 pcbs)
{
	u32 n = 1;

	while (n < pcbs && n < (1u << 31))
		n <<= 1;
	return n;
}

static struct tcp_pcb **lwip_port_pcb_index;

__cold static void lwip_port_pcb_index_init(void)
{
	u32 n = vireo_lwip_pcb_buckets(MEMP_NUM_TCP_PCB + netmem.http_conns - NETMEM_CONNS_FLOOR);
	size_t pages = ((size_t)n * sizeof(*lwip_port_pcb_index) + PAGE_SIZE - 1) / PAGE_SIZE;

	lwip_port_pcb_index = page_alloc(pages);
	if (lwip_port_pcb_index == NULL) {
		kprintf("net: no %lu KiB for lwIP's PCB index: one list\n", (u64)pages * PAGE_SIZE >> 10);
		return;
	}
	tcp_pcb_hash_init(lwip_port_pcb_index, n);
	vireo_lwip_stats.pcb_buckets = n;
	kprintf("net: lwIP PCB index %u buckets, %lu KiB\n", n, (u64)pages * PAGE_SIZE >> 10);
}

/* lwIP's heap is sized by the boot's plan (net/port/netmem.h), printed:
 * planned for a quarter less RAM at a time if the frame allocator has no
 * run of pages that long (the heap is one run), -ENOMEM if even the
 * floor's is not there. */
__cold int vireo_lwip_init(void)
{
	struct mm_stats ms;
	u64 plan_for;
	u32 npages;
	int i;

	if (lwip_port_heap_mem != NULL)
		return 0;
	mm_get_stats(&ms);
	plan_for = ms.usable_bytes;
	/* Not zeroed: segheap_init writes every page descriptor it keeps and
	 * lwIP initialises whatever it allocates (4 MiB of zeroing was a
	 * third of the bring-up under emulation). */
	do {
		netmem_plan(plan_for, &netmem);
#if VIREO_TLS
		{
			/* the HTTPS connections above the floor write outside
			 * the send slots: their lwIP worst case (tlsmem.h) */
			struct tlsmem_plan t;

			tlsmem_plan(plan_for, &t);
			netmem.heap_bytes += ALIGN_UP(t.lwip_bytes, (u64)SEGHEAP_PAGE);
		}
#else
		/* the copy grants' wider flight, if the plan gives it */
		netmem.heap_bytes += ALIGN_UP((u64)netmem.copy_lwip_bytes, (u64)SEGHEAP_PAGE);
#endif
		npages = (u32)(netmem.heap_bytes / SEGHEAP_PAGE);
		lwip_port_heap_mem = page_alloc_raw(lwip_port_kpages(npages));
	} while (!lwip_port_heap_mem && (plan_for = netmem_smaller(plan_for)) != 0);
	kprintf(lwip_port_heap_mem ? "net: %lu MiB usable: %u HTTP connections, lwIP heap %lu KiB, %u in a request or sending "
		"(net/port/netmem.h)\n" : "net: %lu MiB usable, %u HTTP connections: no %lu KiB for lwIP's heap\n",
		ms.usable_bytes >> 20, netmem.http_conns, netmem.heap_bytes >> 10, netmem.http_bufs);
	if (lwip_port_heap_mem == NULL)
		return -ENOMEM;
	rxmem_limits.out_wnd = netmem.out_wnd;
#if !MEM_LIBC_MALLOC
	/* exactly npages pages: segheap.h's segheap_region_bytes() (its host
	 * test checks it) */
	segheap_init(&lwip_port_heap, lwip_port_heap_mem, segheap_region_bytes(npages));
#endif

	lwip_init();
	lwip_port_pcb_index_init();
#if !MEM_LIBC_MALLOC
	/* mem_init() does nothing with MEM_CUSTOM_ALLOCATOR: the heap's size. */
	lwip_stats.mem.avail = (mem_size_t)netmem.heap_bytes;
#endif

	/* With MEMP_MEM_MALLOC lwIP leaves avail at 0; publish the budgets,
	 * the HTTP connections' PCBs and send queues as many as the plan's. */
	for (i = 0; i < MEMP_MAX; i++)
		lwip_stats.memp[i]->avail = pool_budget[i];
	lwip_stats.memp[MEMP_TCP_PCB]->avail += netmem.http_conns - NETMEM_CONNS_FLOOR;
	if (netmem.http_conns > NETMEM_CONNS_FLOOR)
		lwip_stats.memp[MEMP_TCP_SEG]->avail += netmem.http_sends * TCP_SND_QUEUELEN;

	sys_timeout(TCP_TMR_INTERVAL, lwip_port_tw_trim, NULL);
	return 0;
}

/* ---- /metrics: lwIP's counters and the port's ---- */

/* TCP PCBs by list: connections in use vs. TIME_WAIT (bounded by the port's
 * trim), so a leak shows apart from the TIME_WAIT a closing server keeps. */
__cold static void lwip_port_write_tcp_pcbs(struct metrics_buf *b)
{
	u64 active = 0, tw = 0;
	struct tcp_pcb *p;

	for (p = tcp_active_pcbs; p; p = p->next)
		active++;
	for (p = tcp_tw_pcbs; p; p = p->next)
		tw++;
	metrics_family(b, "vireo_tcp_pcbs", METRICS_GAUGE, "TCP connections by lwIP list");
	metrics_sample(b, "vireo_tcp_pcbs", "list=\"active\"", active);
	metrics_sample(b, "vireo_tcp_pcbs", "list=\"time_wait\"", tw);
}

/* lwIP's struct stats_proto, one table row per protocol. */
static const struct {
	const char *name;
	const struct stats_proto *st;
} lwip_port_protos[] = {
	{ "link", &lwip_stats.link },
	{ "etharp", &lwip_stats.etharp },
	{ "ip_frag", &lwip_stats.ip_frag },
	{ "ip", &lwip_stats.ip },
	{ "icmp", &lwip_stats.icmp },
	{ "udp", &lwip_stats.udp },
	{ "tcp", &lwip_stats.tcp },
	{ "ip6", &lwip_stats.ip6 },
	{ "icmp6", &lwip_stats.icmp6 },
	{ "ip6_frag", &lwip_stats.ip6_frag },
	{ "nd6", &lwip_stats.nd6 },
};

/* The columns: family name, help and the field's offset. */
#define LWIP_PORT_PROTO_FIELD(f, h) { "vireo_lwip_" #f "_total", h, offsetof(struct stats_proto, f) }
static const struct {
	const char *name;
	const char *help;
	size_t off;
} lwip_port_proto_fields[] = {
	LWIP_PORT_PROTO_FIELD(xmit, "Packets transmitted, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(recv, "Packets received, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(fw, "Packets forwarded, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(drop, "Packets dropped, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(chkerr, "Checksum errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(lenerr, "Invalid length errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(memerr, "Out of memory errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(rterr, "Routing errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(proterr, "Protocol errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(opterr, "Option errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(err, "Other errors, by lwIP protocol layer."),
	LWIP_PORT_PROTO_FIELD(cachehit, "Cache hits, by lwIP protocol layer."),
};

__cold static void lwip_port_write_metrics(struct metrics_buf *b)
{
	struct vireo_lwip_heap_stats hs;
	u32 orphans, orphan_bytes;
	size_t f, i;

	metrics_simple(b, "vireo_lwip_heap_bytes", METRICS_GAUGE,
		       "Size of lwIP's private heap.", netmem.heap_bytes);
	metrics_simple(b, "vireo_lwip_time_wait_trimmed_total", METRICS_COUNTER,
		       "TIME_WAIT PCBs dropped above the port's cap.", vireo_lwip_stats.tw_trimmed);
	metrics_simple(b, "vireo_lwip_time_wait_reopened_total", METRICS_COUNTER,
		       "TIME_WAIT PCBs dropped for a new SYN above the old connection's sequence numbers.",
		       vireo_lwip_stats.tw_reopened);
	metrics_simple(b, "vireo_lwip_rx_coalesced_acks_total", METRICS_COUNTER,
		       "Segments of more than one MSS (receive TSO) acknowledged at once.",
		       vireo_lwip_stats.rx_coalesced_acks);
	metrics_simple(b, "vireo_lwip_syn_rcvd_trimmed_total", METRICS_COUNTER,
		       "Half-open connections aborted after the port's SYN_RCVD limit.", vireo_lwip_stats.syn_trimmed);
	metrics_simple(b, "vireo_lwip_syncookies_sent_total", METRICS_COUNTER,
		       "SYN-ACKs sent with a SYN cookie (listen backlog full).", vireo_lwip_stats.syncookies_sent);
	metrics_simple(b, "vireo_lwip_syncookies_validated_total", METRICS_COUNTER,
		       "ACKs with a valid SYN cookie, each a new connection.", vireo_lwip_stats.syncookies_validated);
	metrics_simple(b, "vireo_lwip_syncookies_rejected_total", METRICS_COUNTER,
		       "ACKs to a listener with an invalid or expired SYN cookie.", vireo_lwip_stats.syncookies_rejected);
	vireo_lwip_orphans_count(&orphans, &orphan_bytes);
	metrics_simple(b, "vireo_lwip_orphans", METRICS_GAUGE,
		       "TCP connections closed by the application that lwIP still holds.", orphans);
	metrics_simple(b, "vireo_lwip_orphans_bytes", METRICS_GAUGE,
		       "lwIP heap the orphans hold (estimate from above).", orphan_bytes);
	metrics_simple(b, "vireo_lwip_orphans_peak", METRICS_GAUGE,
		       "Most orphans at once, after the cap.", vireo_lwip_stats.orphans_peak);
	metrics_family(b, "vireo_lwip_orphans_aborted_total", METRICS_COUNTER,
		       "Orphans aborted by the port, by reason.");
	metrics_sample1(b, "vireo_lwip_orphans_aborted_total", "reason", "cap",
			vireo_lwip_stats.orphans_capped);
	metrics_sample1(b, "vireo_lwip_orphans_aborted_total", "reason", "timeout",
			vireo_lwip_stats.orphans_timedout);

	metrics_simple(b, "vireo_lwip_mem_avail_bytes", METRICS_GAUGE,
		       "lwIP heap bytes available.", lwip_stats.mem.avail);
	metrics_simple(b, "vireo_lwip_mem_used_bytes", METRICS_GAUGE,
		       "lwIP heap bytes in use.", lwip_stats.mem.used);
	metrics_simple(b, "vireo_lwip_mem_max_bytes", METRICS_GAUGE,
		       "Highest lwIP heap use so far.", lwip_stats.mem.max);
	metrics_simple(b, "vireo_lwip_mem_errors_total", METRICS_COUNTER,
		       "lwIP heap allocations that failed.", lwip_stats.mem.err);
	vireo_lwip_heap_stats(&hs);
	metrics_simple(b, "vireo_lwip_heap_pages", METRICS_GAUGE,
		       "Pages of lwIP's segregated heap (8 KiB each).", hs.pages);
	metrics_simple(b, "vireo_lwip_heap_pages_used", METRICS_GAUGE,
		       "lwIP heap pages held by a size class or a large block.", hs.pages_used);
	metrics_simple(b, "vireo_lwip_heap_pages_peak", METRICS_GAUGE,
		       "Most lwIP heap pages held at once.", hs.pages_peak);
	metrics_simple(b, "vireo_lwip_heap_bad_frees_total", METRICS_COUNTER,
		       "Frees of a pointer that was no live lwIP heap block (ignored).", hs.bad_frees);

	metrics_family(b, "vireo_lwip_memp_used", METRICS_GAUGE,
		       "Elements in use, by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_used", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->used);
	metrics_family(b, "vireo_lwip_memp_max", METRICS_GAUGE,
		       "Most elements ever in use, by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_max", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->max);
	metrics_family(b, "vireo_lwip_memp_avail", METRICS_GAUGE,
		       "Budgeted elements (MEMP_NUM_*), by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_avail", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->avail);
	metrics_family(b, "vireo_lwip_memp_errors_total", METRICS_COUNTER,
		       "Failed allocations, by lwIP memory pool.");
	for (i = 0; i < MEMP_MAX; i++)
		metrics_sample1(b, "vireo_lwip_memp_errors_total", "pool", lwip_stats.memp[i]->name,
				lwip_stats.memp[i]->err);

	for (f = 0; f < ARRAY_SIZE(lwip_port_proto_fields); f++) {
		metrics_family(b, lwip_port_proto_fields[f].name, METRICS_COUNTER, lwip_port_proto_fields[f].help);
		for (i = 0; i < ARRAY_SIZE(lwip_port_protos); i++) {
			const STAT_COUNTER *v = (const STAT_COUNTER *)(const void *)
				((const u8 *)lwip_port_protos[i].st + lwip_port_proto_fields[f].off);

			metrics_sample1(b, lwip_port_proto_fields[f].name, "proto", lwip_port_protos[i].name, *v);
		}
	}
	lwip_port_write_tcp_pcbs(b);
}
METRICS_SOURCE(lwip, lwip_port_write_metrics);
