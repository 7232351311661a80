/* HTTPS capacity from memory: how many TLS connections the HTTPS server
 * admits and how large the TLS heap is, worked out once at boot (tls_start())
 * from the RAM the VM has, like net/port/netmem.h does for the HTTP table
 * and lwIP's heap. Pure arithmetic; net/tls/tls_port.c applies it and prints
 * it, docs/https.md and docs/appliance.md have the figures.
 *
 * Up to TLSMEM_BASE_RAM the plan is the floor, what every image had before:
 * 64 HTTPS connections and a 2 MiB server heap (net/tls/tls.h: 64 x 30,720
 * + the keys, config and certificate slots = 2,072,576 B <= 2 MiB), so
 * -m 48..64 keeps today's numbers exactly. (The TLS heap alone would hold
 * more now, but the floor's lwIP heap and buffer sets pay for 64.) Those
 * 64 x TLS_CONN_BYTES are also the reserve for the connections holding
 * record buffers: at most buf_slots at once (TLS_BUF_SLOTS, 64, at the
 * floor), handshaking or in a record (net/tls/patches/0005); every other
 * connection is idle and holds at most TLS_IDLE_BYTES. Of the RAM above
 * the base, 1/TLSMEM_SHARE_DIV buys more TLS connections, each at
 * TLSMEM_CONN_COST in the heaps: TLS_IDLE_BYTES of the TLS heap (what one
 * holds with its record buffers released), an eighth of a holder's
 * TLS_CONN_BYTES - TLS_IDLE_BYTES (one more slot per 8 connections) and
 * W_http of lwIP's heap
 * (NETMEM_CONN_LWIP_BYTES: TLS connections write outside the HTTP
 * send-slot budget, and a connection's unacknowledged bytes stay queued in
 * lwIP after its record buffers are released, so the 64 holders of record
 * buffers do not bound them). An idle HTTPS connection holds no buffer set
 * (runtime/http/server.c gives it back between requests): sets come from
 * the HTTP pool, at most netmem.h's bufs at once, plain and HTTPS alike.
 *   conns       = 64 + (usable - 64 MiB) / 8 / (4,096 + 29,170 + 26,624 / 8)
 *   slots       = 64 + (conns - 64) / 8
 *   server heap = 2 MiB + (conns - 64) x 4,096 + (slots - 64) x 26,624,
 *                 in whole pages
 *   lwip_bytes  = (conns - 64) x 29,170, added to lwIP's heap by
 *                 vireo_lwip_init(), which plans it from the same RAM
 * The clients' part and the CA bundle's (tls.h) stay on top, fixed. At
 * -m 256 (249 MiB usable): 64 + 193,986,560 / 8 / 36,594 = 726
 * connections and 146 slots (792 with 64 slots at most, 554 while each
 * also paid a set of 16,128, 382 when each paid 30,720), a 6.7 MiB server
 * heap, 18.4 MiB more lwIP heap. Each is also an HTTP connection, whose idle state
 * netmem.h's half pays for. The eighth comes out of the RAM netmem.h
 * leaves to the kernel, the apps and the store (an eighth for its index):
 * a quarter stays free.
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
/* One more holder of record buffers (above TLS_BUF_SLOTS, the floor's)
 * for each TLSMEM_SLOT_DIV connections above the floor: a fixed 64 would
 * refuse the 65th connection active at once on any guest. */
#define TLSMEM_SLOT_DIV		8u
/* what a TLS connection above the floor may hold in the two heaps: its
 * idle cost and an eighth of a holder's record buffers */
#define TLSMEM_CONN_COST	((u64)TLS_IDLE_BYTES + NETMEM_CONN_LWIP_BYTES + \
				 ((u64)TLS_CONN_BYTES - TLS_IDLE_BYTES) / TLSMEM_SLOT_DIV)

struct tlsmem_plan {
	u64 usable;		/* the RAM it was worked out for */
	u32 https_conns;	/* TLS connections the HTTPS server admits */
	u32 buf_slots;		/* of them, holding record buffers at once */
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
