/* HTTPS capacity from memory: how many TLS connections the HTTPS server
 * admits and how large the TLS heap is, worked out once at boot (tls_start())
 * from the RAM the VM has, like net/port/netmem.h does for the HTTP table
 * and lwIP's heap. Pure arithmetic; net/tls/tls_port.c applies it and prints
 * it, docs/https.md and docs/appliance.md have the figures.
 *
 * Up to TLSMEM_BASE_RAM the plan is the floor, what every image had before:
 * 64 HTTPS connections and a 2 MiB server heap (net/tls/tls.h: 64 x 30,720
 * + the keys, config and certificate slots = 2,072,576 B <= 2 MiB), so
 * -m 48..64 keeps today's numbers exactly. Of the RAM above the base,
 * 1/TLSMEM_SHARE_DIV buys more TLS connections, each at its worst case in
 * the three heaps (TLSMEM_CONN_COST): TLS_CONN_BYTES of the TLS heap (the
 * most one holds, handshaking or established), the buffer set an HTTPS
 * connection keeps for its life outside the HTTP pool (NETMEM_BUFS_BYTES of
 * kernel heap) and W_http of lwIP's heap (NETMEM_CONN_LWIP_BYTES: TLS
 * connections write outside the HTTP send-slot budget):
 *   conns       = 64 + (usable - 64 MiB) / 8 / (30,720 + 16,128 + 29,170)
 *   server heap = 2 MiB + (conns - 64) x 30,720, in whole pages
 *   lwip_bytes  = (conns - 64) x 29,170, added to lwIP's heap by
 *                 vireo_lwip_init(), which plans it from the same RAM
 * The clients' part and the CA bundle's (tls.h) stay on top, fixed. At
 * -m 256 (249 MiB usable): 64 + 193,986,560 / 8 / 76,018 = 382 connections,
 * an 11.3 MiB server heap, 9.3 MiB more lwIP heap. Each is also an HTTP
 * connection, whose idle state netmem.h's half pays for. The eighth comes
 * out of the RAM netmem.h leaves to the kernel, the apps and the store (an
 * eighth for its index): a quarter stays free.
 */
#ifndef VIREO_NET_TLS_TLSMEM_H
#define VIREO_NET_TLS_TLSMEM_H

#include "lib/types.h"
#include "net/port/netmem.h"
#include "net/tls/tls.h"

#define TLSMEM_BASE_RAM		(64ull << 20)
#define TLSMEM_SHARE_DIV	8
#define TLSMEM_CONNS_FLOOR	64u
/* A bound on the arithmetic (u32 counters, a heap far below 4 GiB): 65,536
 * connections would take 1.9 GiB of TLS heap. */
#define TLSMEM_CONNS_MAX	65536u
#define TLSMEM_PAGE		4096u
/* what a TLS connection above the floor may hold in all three heaps */
#define TLSMEM_CONN_COST	((u64)TLS_CONN_BYTES + NETMEM_BUFS_BYTES + NETMEM_CONN_LWIP_BYTES)

struct tlsmem_plan {
	u64 usable;		/* the RAM it was worked out for */
	u32 https_conns;	/* TLS connections the HTTPS server admits */
	u64 server_bytes;	/* the server's part of the TLS heap */
	u64 heap_bytes;		/* the whole TLS heap (clients and CA bundle included), in pages */
	u64 lwip_bytes;		/* lwIP's heap for the connections above the floor */
};

/* The plan for usable bytes of RAM (the frame allocator's usable memory). */
void tlsmem_plan(u64 usable, struct tlsmem_plan *p);
/* The RAM to plan for instead when the heap the plan asks for is not
 * there in one run of pages: a quarter less above the base, 0 (the floor)
 * once at the base. */
u64 tlsmem_smaller(u64 usable);

/* The boot's plan (tls_start()); the floor until then. */
extern struct tlsmem_plan tlsmem;

#endif
