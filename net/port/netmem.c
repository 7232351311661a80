/* Capacity from memory: see netmem.h. */
#include "net/port/netmem.h"
#include "net/port/segheap.h"

struct netmem_plan netmem = {
	.http_conns = NETMEM_CONNS_FLOOR,
	.heap_bytes = NETMEM_HEAP_FLOOR,
};

void netmem_plan(u64 usable, struct netmem_plan *p)
{
	u64 more = 0;

	if (usable > NETMEM_BASE_RAM)
		more = MIN((usable - NETMEM_BASE_RAM) / NETMEM_SHARE_DIV /
			   (NETMEM_CONN_LWIP_BYTES + NETMEM_CONN_STATE_BYTES),
			   (u64)(NETMEM_CONNS_MAX - NETMEM_CONNS_FLOOR));
	p->usable = usable;
	p->http_conns = NETMEM_CONNS_FLOOR + (u32)more;
	p->heap_bytes = ALIGN_UP(NETMEM_HEAP_FLOOR + more * NETMEM_CONN_LWIP_BYTES, (u64)SEGHEAP_PAGE);
}

u64 netmem_smaller(u64 usable)
{
	return usable > NETMEM_BASE_RAM ? NETMEM_BASE_RAM + (usable - NETMEM_BASE_RAM) / 4 * 3 : 0;
}
