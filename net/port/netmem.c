/* Capacity from memory: see netmem.h. */
#include "net/port/netmem.h"
#include "net/port/segheap.h"

struct netmem_plan netmem = {
	.http_conns = NETMEM_CONNS_FLOOR,
	.http_sends = NETMEM_CONNS_FLOOR,
	.http_bufs = NETMEM_CONNS_FLOOR,
	.heap_bytes = NETMEM_HEAP_FLOOR,
	.out_wnd = NETMEM_OUT_WND_FLOOR,
	.copy_inflight = NETMEM_COPY_FLOOR,
};

void netmem_plan(u64 usable, struct netmem_plan *p)
{
	const u64 floor_q = (u64)NETMEM_CONNS_FLOOR * NETMEM_CONN_LWIP_BYTES;
	u64 share = 0, active = 0, idle = 0, sends = 0, left;

	if (usable > NETMEM_BASE_RAM)
		share = (usable - NETMEM_BASE_RAM) / NETMEM_SHARE_DIV;
	p->usable = usable;
	p->http_conns = p->http_sends = p->http_bufs = NETMEM_CONNS_FLOOR;
	p->heap_bytes = NETMEM_HEAP_FLOOR;
	p->out_wnd = NETMEM_OUT_WND_FLOOR;
	p->copy_inflight = NETMEM_COPY_FLOOR;
	p->copy_lwip_bytes = 0;
	/* the wide windows first: their cost is small beside the connections' */
	if (share > NETMEM_WIDE_BYTES) {
		share -= NETMEM_WIDE_BYTES;
		p->out_wnd = NETMEM_OUT_WND_WIDE;
		p->copy_inflight = NETMEM_COPY_WIDE;
		p->copy_lwip_bytes = NETMEM_COPY_LWIP_BYTES;
	}
	if (share <= floor_q)
		return;
	if (share / 4 > floor_q)
		active = MIN((share / 4 - floor_q) / (NETMEM_CONN_LWIP_BYTES + NETMEM_BUFS_BYTES),
			     (u64)(NETMEM_CONNS_MAX - NETMEM_CONNS_FLOOR));
	sends = NETMEM_CONNS_FLOOR + active;
	left = share - sends * NETMEM_CONN_LWIP_BYTES - active * NETMEM_BUFS_BYTES;
	idle = MIN(left / (NETMEM_IDLE_LWIP_BYTES + NETMEM_CONN_STATE_BYTES),
		   (u64)(NETMEM_CONNS_MAX - NETMEM_CONNS_FLOOR));
	p->http_conns = NETMEM_CONNS_FLOOR + (u32)idle;
	p->http_sends = p->http_bufs = (u32)MIN(sends, (u64)p->http_conns);
	p->heap_bytes = ALIGN_UP(NETMEM_HEAP_FLOOR + (u64)p->http_sends * NETMEM_CONN_LWIP_BYTES +
				 idle * NETMEM_IDLE_LWIP_BYTES, (u64)SEGHEAP_PAGE);
}

u64 netmem_smaller(u64 usable)
{
	return usable > NETMEM_BASE_RAM ? NETMEM_BASE_RAM + (usable - NETMEM_BASE_RAM) / 4 * 3 : 0;
}
