/* Capacity from memory: how many HTTP connections the appliance holds, how
 * many of them may be in a request or have data queued at once, and how
 * large lwIP's heap is, worked out once at boot from the RAM the VM has
 * (net/port/lwipopts.h has the heap's worst case this scales,
 * docs/appliance.md the figures). Pure arithmetic; net/port/lwip_port.c
 * applies it, runtime/http/listen.c sizes the server from it.
 *
 * Up to NETMEM_BASE_RAM the plan is the floor, the numbers every image had
 * before: 64 HTTP connections and a 4 MiB heap, so a 48 MiB guest boots as
 * it did. Of the RAM above it, 1/NETMEM_SHARE_DIV goes to the HTTP server.
 * An idle connection (between requests, nothing unacknowledged) holds no
 * buffer: it costs
 *   lwIP's heap  NETMEM_IDLE_LWIP_BYTES  (its PCB 320, its altcp_pcb 96 in
 *                a TLS image, a FIN segment queued 160: 576)
 *   the kernel's NETMEM_CONN_STATE_BYTES (runtime/http/conn.h's struct
 *                conn with its heap header, a conntab source node and its
 *                share of the table's index; listen.c checks it)
 * Two budgets bound what connections hold beyond that (runtime/http/slots.h,
 * FIFO waiters, a remote party cannot pass either):
 *   sends: connections with response bytes queued in lwIP, each at most
 *          NETMEM_CONN_LWIP_BYTES (W_http, lwipopts.h)
 *   bufs:  connections in a request, each with a buffer set
 *          (struct conn_bufs: receive buffer, head parser, response head)
 *          of NETMEM_BUFS_BYTES on the kernel's heap
 * A quarter of the share goes to the two budgets (as many of each):
 *   active = (share / 4 - 64 x W_http) / (W_http + NETMEM_BUFS_BYTES)
 *   sends  = bufs = 64 + active
 * the rest to idle connections:
 *   conns  = 64 + (share - sends x W_http - active x NETMEM_BUFS_BYTES) /
 *            (NETMEM_IDLE_LWIP_BYTES + NETMEM_CONN_STATE_BYTES)
 *   heap   = 4 MiB + sends x W_http + (conns - 64) x NETMEM_IDLE_LWIP_BYTES,
 *            rounded up to a heap page
 * (the floor's 4 MiB already holds 64 connections' worst case: the HTTPS
 * ones, outside the send budget, are at most 64; their buffer sets come
 * from bufs like the plain ones'). e.g. -m 256 (249 MiB usable): 596 sends and sets, 40,000-odd
 * connections, a 38 MiB heap. The rest of the RAM above the base stays for
 * the kernel, the apps, the store's index (storage/disk.c: 1/8) and page
 * tables.
 *
 * Wide windows for what a proxy relays (issue 32): once the share is more
 * than NETMEM_WIDE_BYTES (RAM above ~64.6 MiB), that much comes off it
 * before the connections above are planned, and
 *   out_wnd       the receive window of an outbound bulk connection (the
 *                 HTTP client's, runtime/tcp_out.c) goes from 32 MSS
 *                 (46,720 B, NETMEM_OUT_WND_FLOOR) to 48 MSS (70,080 B,
 *                 NETMEM_OUT_WND_WIDE): a 64 KiB response and its head in
 *                 one flight. What it receives is copied out of lwIP at
 *                 once into the connection's rx[] on the kernel's heap, so
 *                 the cost is NETMEM_OUT_CONNS (8, VIREO_TCP_OUT_MAX) x
 *                 23,360 = 186,880 B of kernel heap, none of lwIP's;
 *   copy_inflight a plain HTTP connection holding one of the 2 copy grants
 *                 (runtime/http/conn.h HTTP_COPY_BULK_MAX, images without
 *                 TLS) may have 69,632 B (NETMEM_COPY_WIDE) of copied body
 *                 unacked instead of 32,768 (NETMEM_COPY_FLOOR): a proxied
 *                 64 KiB body and its head in one flight. lwIP's heap
 *                 (net/port/lwipopts.h, 1.26 x copied bytes) grows by
 *                 copy_lwip_bytes = 2 x ceil(1.26 x 36,864) = 92,898 B,
 *                 which net/port/lwip_port.c adds to heap_bytes in an image
 *                 without TLS (a TLS one has no copy grants).
 *   NETMEM_WIDE_BYTES = 186,880 + 92,898 = 279,778
 * Below that both stay at the floor's values.
 */
#ifndef VIREO_NET_PORT_NETMEM_H
#define VIREO_NET_PORT_NETMEM_H

#include "lib/types.h"

#define NETMEM_BASE_RAM		(64ull << 20)
#define NETMEM_SHARE_DIV	2
#define NETMEM_CONNS_FLOOR	64u
#define NETMEM_HEAP_FLOOR	(4ull << 20)
/* conntab's index and lwIP's pool budgets count in u32, the port numbers a
 * host can use limit one client address anyway. */
#define NETMEM_CONNS_MAX	65536u
#define NETMEM_CONN_LWIP_BYTES	29170u
#define NETMEM_IDLE_LWIP_BYTES	576u
#define NETMEM_CONN_STATE_BYTES	1408u
#define NETMEM_BUFS_BYTES	16128u
#define NETMEM_OUT_CONNS	8u		/* include/vireo/net.h VIREO_TCP_OUT_MAX */
#define NETMEM_OUT_WND_FLOOR	46720u		/* 32 MSS: VIREO_RXMEM_BULK_WND */
#define NETMEM_OUT_WND_WIDE	70080u		/* 48 MSS */
#define NETMEM_COPY_FLOOR	32768u		/* runtime/http/conn.h HTTP_COPY_BULK_INFLIGHT */
#define NETMEM_COPY_WIDE	69632u
#define NETMEM_COPY_GRANTS	2u		/* runtime/http/conn.h HTTP_COPY_BULK_MAX */
/* lwIP's heap for the wider copy grants: 1.26 x the extra copied bytes each */
#define NETMEM_COPY_LWIP_BYTES	(NETMEM_COPY_GRANTS * (((NETMEM_COPY_WIDE - NETMEM_COPY_FLOOR) * 126u + 99u) / 100u))
#define NETMEM_WIDE_BYTES	((u64)NETMEM_OUT_CONNS * (NETMEM_OUT_WND_WIDE - NETMEM_OUT_WND_FLOOR) + NETMEM_COPY_LWIP_BYTES)

struct netmem_plan {
	u64 usable;		/* the RAM it was worked out for */
	u32 http_conns;		/* the HTTP server's connection table */
	u32 http_sends;		/* of them, with response bytes queued at once */
	u32 http_bufs;		/* of them, in a request at once (buffer sets) */
	u64 heap_bytes;		/* lwIP's heap: a multiple of the heap's page */
	u32 out_wnd;		/* an outbound bulk connection's receive window */
	u32 copy_inflight;	/* a copy grant's unacked bytes (no TLS) */
	u32 copy_lwip_bytes;	/* what the copy grants add to lwIP's heap (no TLS) */
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
