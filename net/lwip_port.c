/* vireo's lwIP port: heap set-up, pool budgets, TIME_WAIT trimming. */
#include "kernel/console.h"
#include "kernel/mm.h"
#include "kernel/panic.h"	/* unused: checks cc.h's copy of panic() */
#include "kernel/types.h"
#include "lwip/init.h"
#include "lwip/memp.h"
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

static void tw_trim(void *arg)
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
	sys_timeout(TCP_TMR_INTERVAL, tw_trim, arg);
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

	sys_timeout(TCP_TMR_INTERVAL, tw_trim, NULL);
	return 0;
}
