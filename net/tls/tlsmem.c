/* HTTPS capacity from memory: see tlsmem.h. */
#include "net/tls/tlsmem.h"
#include "net/tls/tls.h"

#define TLSMEM_HEAP_FLOOR	((u64)TLS_HEAP_BYTES)

struct tlsmem_plan tlsmem = {
	.https_conns = TLSMEM_CONNS_FLOOR,
	.buf_slots = TLS_BUF_SLOTS,
	.server_bytes = TLS_SERVER_HEAP_BYTES,
	.heap_bytes = TLSMEM_HEAP_FLOOR,
};

_Static_assert(TLS_HEAP_BYTES % TLSMEM_PAGE == 0, "the floor is whole pages");

void tlsmem_plan(u64 usable, struct tlsmem_plan *p)
{
	u64 more = 0;

	if (usable > TLSMEM_BASE_RAM)
		more = MIN((usable - TLSMEM_BASE_RAM) / TLSMEM_SHARE_DIV / TLSMEM_CONN_COST,
			   (u64)(TLSMEM_CONNS_MAX - TLSMEM_CONNS_FLOOR));
	p->usable = usable;
	p->https_conns = TLSMEM_CONNS_FLOOR + (u32)more;
	p->buf_slots = TLS_BUF_SLOTS + (u32)(more / TLSMEM_SLOT_DIV);
	p->server_bytes = ALIGN_UP((u64)TLS_SERVER_HEAP_BYTES + more * TLS_IDLE_BYTES +
				   (more / TLSMEM_SLOT_DIV) * ((u64)TLS_CONN_BYTES - TLS_IDLE_BYTES), (u64)TLSMEM_PAGE);
	p->heap_bytes = p->server_bytes + (TLSMEM_HEAP_FLOOR - TLS_SERVER_HEAP_BYTES);
	p->lwip_bytes = more * NETMEM_CONN_LWIP_BYTES;
}

u64 tlsmem_smaller(u64 usable)
{
	return usable > TLSMEM_BASE_RAM ? TLSMEM_BASE_RAM + (usable - TLSMEM_BASE_RAM) / 4 * 3 : 0;
}
