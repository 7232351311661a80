/* Capacity from memory: see netmem.h. */
#include "net/port/netmem.h"
#include "net/port/segheap.h"

struct netmem_plan netmem = {
	.http_conns = NETMEM_CONNS_FLOOR,
	.heap_bytes = NETMEM_HEAP_FLOOR,
};

void netmem_plan_conns(u32 conns, struct netmem_plan *p)
{
	u64 heap;

	conns = MIN(MAX(conns, NETMEM_CONNS_FLOOR), NETMEM_CONNS_MAX);
	heap = NETMEM_HEAP_FLOOR + (u64)(conns - NETMEM_CONNS_FLOOR) * NETMEM_CONN_LWIP_BYTES;
	p->http_conns = conns;
	p->heap_bytes = ALIGN_UP(heap, (u64)SEGHEAP_PAGE);
}

void netmem_plan(u64 usable, struct netmem_plan *p)
{
	u64 more = 0;

	if (usable > NETMEM_BASE_RAM)
		more = (usable - NETMEM_BASE_RAM) / NETMEM_SHARE_DIV /
		       (NETMEM_CONN_LWIP_BYTES + NETMEM_CONN_STATE_BYTES);
	netmem_plan_conns(NETMEM_CONNS_FLOOR + (u32)MIN(more, (u64)NETMEM_CONNS_MAX), p);
	p->usable = usable;
}
