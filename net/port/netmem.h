/* Capacity from memory: how many HTTP connections the appliance holds and
 * how large lwIP's heap is, worked out once at boot from the RAM the VM has
 * (net/port/lwipopts.h has the heap's worst case this scales, docs/appliance.md
 * the figures). Pure arithmetic; net/port/lwip_port.c applies it.
 *
 * Up to NETMEM_BASE_RAM the plan is the floor, the numbers every image had
 * before: 64 HTTP connections and a 4 MiB heap, so a 48 MiB guest boots as
 * it did. Of the RAM above it, 1/NETMEM_SHARE_DIV goes to more HTTP
 * connections, each costing its worst case in both heaps:
 *   lwIP's heap  NETMEM_CONN_LWIP_BYTES  (W_http, lwipopts.h: its PCB, a full
 *                send queue, HTTP_COPY_INFLIGHT copied bytes unacked)
 *   the kernel's NETMEM_CONN_STATE_BYTES (runtime/http/conn.h's struct conn
 *                with its heap header, a conntab source node and its share
 *                of the table's index; runtime/http/listen.c checks it)
 * so that whatever a remote party does with every connection at once, the
 * heap's worst case stays inside the heap:
 *   conns = 64 + (usable - 64 MiB) / 2 / (29,170 + 16,896)
 *   heap  = 4 MiB + (conns - 64) x 29,170, rounded up to a heap page
 * e.g. -m 256 (about 250 MiB usable): about 2,100 connections, a 62 MiB
 * heap. The rest of the RAM above the base stays for the kernel, the apps,
 * the store's index (storage/disk.c: 1/8) and page tables.
 */
#ifndef VIREO_NET_PORT_NETMEM_H
#define VIREO_NET_PORT_NETMEM_H

#include "lib/types.h"

#define NETMEM_BASE_RAM		(64ull << 20)
#define NETMEM_SHARE_DIV	2
#define NETMEM_CONNS_FLOOR	64u
#define NETMEM_HEAP_FLOOR	(4ull << 20)
/* conntab's index and lwIP's pool budgets count in u32, the port numbers a
 * host can use limit one client address anyway; 65,536 connections would
 * take 3 GiB of the two heaps. */
#define NETMEM_CONNS_MAX	65536u
#define NETMEM_CONN_LWIP_BYTES	29170u
#define NETMEM_CONN_STATE_BYTES	16896u

struct netmem_plan {
	u64 usable;		/* the RAM it was worked out for */
	u32 http_conns;		/* the HTTP server's connection table */
	u64 heap_bytes;		/* lwIP's heap: a multiple of the heap's page */
};

/* The plan for usable bytes of RAM (the frame allocator's usable memory). */
void netmem_plan(u64 usable, struct netmem_plan *p);

/* The RAM to plan for instead when the plan for usable asks for a heap
 * the frame allocator cannot give in one run: a quarter less above the
 * base, 0 (the floor) once at the base. */
u64 netmem_smaller(u64 usable);

/* The boot's plan (vireo_lwip_init()); the floor until then. */
extern struct netmem_plan netmem;

#endif
