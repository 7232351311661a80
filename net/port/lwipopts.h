/* lwIP configuration for vireo: NO_SYS raw API, dual stack, sized for an HTTP
 * appliance in a 48 MiB guest with 32+ concurrent connections. Options left
 * out keep lwIP's default (src/include/lwip/opt.h of the pinned source).
 *
 * Threading: everything lwIP runs in the kernel's event loop (netif input,
 * sys_check_timeouts(), application callbacks). Nothing may call lwIP from an
 * interrupt handler; drivers only note work there and poll it from the loop.
 * That is why no lwIP-level locking is configured below. */
#ifndef VIREO_LWIPOPTS_H
#define VIREO_LWIPOPTS_H

/* ---- system -------------------------------------------------------------- */
#define NO_SYS				1
#define LWIP_NETCONN			0
#define LWIP_SOCKET			0
#define LWIP_TIMERS			1	/* kernel loop calls sys_check_timeouts() */
#define SYS_LIGHTWEIGHT_PROT		0	/* single context, see above */
/* LWIP_RAND() is the kernel's ChaCha20 generator (kernel/random.c). Its users
 * in the pinned lwIP, by whether an attacker gains from predicting them:
 *  security-relevant
 *   - tcp.c tcp_new_port(), udp.c udp_new_port(): the first ephemeral port
 *     (later ones count up from it; RFC 6056 algorithm 1 would need a patch)
 *   - dhcp.c: the DHCP transaction id (DHCP_CREATE_RAND_XID); a guessed xid
 *     lets an off-path host spoof offers. dhcp6.c likewise (LWIP_IPV6_DHCP6
 *     is off); dns.c's query id and source port (DNS for ntp=, net/clients/resolv.c)
 *  not security-relevant (timing spread only)
 *   - mld6.c report delay; igmp.c report delay, acd.c probe timing (both off)
 * TCP ISNs do not use LWIP_RAND(): LWIP_HOOK_TCP_ISN below (RFC 6528). IPv4
 * and IPv6 fragment ids are lwIP's counters (ip4.c, ip6_frag.c), unchanged. */
#define LWIP_RAND()			((u32_t)random_u32())	/* cc.h declares it */

/* ---- hooks (net/port/lwip_hooks.h) ------------------------------------------
 * ISNs per RFC 6528 (net/tcp/tcp_isn.c) and SYN cookies (net/tcp/syncookie.c):
 * INPACKET_PCB answers a SYN with a cookie when the listen backlog is full,
 * TCP_LISTEN_ACK (added by net/port/patches/0001) turns an ACK with a valid
 * cookie into a connection; it also ACKs a coalesced (receive TSO) segment of
 * more than one MSS at once (net/port/lwip_port.c). TCP_TIMEWAIT_REOPEN (net/port/patches/0002) counts
 * TIME_WAIT PCBs a new SYN from the same 4-tuple reopened. TCP_PCB_HASH
 * (net/port/patches/0010) is the bucket hash of lwIP's 4-tuple index of
 * active and TIME_WAIT PCBs, SipHash under a key of its own
 * (net/tcp/tcp_isn.c), so that no remote party can pile its connections into
 * one bucket; net/port/lwip_port.c sizes the index from the boot's plan. */
#define LWIP_HOOK_FILENAME		"net/port/lwip_hooks.h"
#define LWIP_HOOK_TCP_ISN(lip, lport, rip, rport)	vireo_tcp_isn(lip, lport, rip, rport)
#define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p) \
	vireo_tcp_inpacket(pcb, hdr, optlen, opt1len, opt2, p)
#define LWIP_HOOK_TCP_LISTEN_ACK(lpcb, hdr, p)		vireo_syncookie_ack(lpcb, hdr, p)
#define LWIP_HOOK_TCP_TIMEWAIT_REOPEN(pcb)		vireo_lwip_tw_reopen(pcb)
#define LWIP_HOOK_TCP_UNLINK(pcb) \
	do { if ((pcb)->port_slot != 0) vireo_lwip_pcb_unlink(pcb); } while (0)
#define LWIP_HOOK_TCP_PCB_HASH(lip, lport, rip, rport)	vireo_tcp_pcb_hash(lip, lport, rip, rport)

/* ---- memory ---------------------------------------------------------------
 * vireo's linker script keeps .bss inside the EFI file's .data (the firmware
 * loader wants no NOBITS section) and asserts it stays under 64 KiB, so lwIP's
 * usual static arrays are not an option: ram_heap[] alone would be MEM_SIZE
 * and the memp_memory_*_base[] pools below another ~0.45 MiB of image.
 *
 * Instead:
 *  - MEM_CUSTOM_ALLOCATOR: lwIP's mem_malloc()/mem_free() go to
 *    net/port/segheap.c, a segregated-fit heap over MEM_SIZE bytes of pages the
 *    kernel allocates at boot (vireo_lwip_init(), net/port/lwip_port.c, before
 *    lwip_init()). A private heap bounds what the network can take from the
 *    kernel and the other way round; it is a hard cap (a request that does
 *    not fit fails, lwIP's callers handle ERR_MEM). Allocation and free are
 *    O(1): a request of at most 2 KiB pops a slot of its size class (25
 *    classes, 16 to 2048 bytes, each owning whole 8 KiB pages), larger ones
 *    take a run of pages. lwIP's own heap (mem.c's first fit) walked a list
 *    whose length grew with connections x queued segments: at 32
 *    connections on 64 KiB bodies 70-78% of the guest's time was that walk.
 *    mem.c keeps the request's size in an 8-byte header; the port makes
 *    lwip_stats.mem.used count whole blocks (class-rounded, with that
 *    header), so /metrics' heap level is what the heap really gives out,
 *    and mem.avail is MEM_SIZE.
 *  - MEMP_MEM_MALLOC=1: the memp pools are carved from that heap on demand.
 *    lwip_stats.memp[i]->used/max/err stay exact per pool (memp.c counts them
 *    either way), so /metrics can export them and tests can check every pool
 *    returns to its idle level. What is lost is the hard per-pool cap: the
 *    MEMP_NUM_* and PBUF_POOL_SIZE values below are budgets. vireo_lwip_init()
 *    copies them into lwip_stats.memp[i]->avail (lwIP leaves avail at 0 in
 *    this mode) so "used vs avail" still reads as intended. Growth is
 *    bounded elsewhere: the application caps the connections it accepts
 *    (an HTTP server counts them anyway), the listen backlog caps half-open
 *    ones, the per-PCB send buffer and window cap their data, and the port
 *    trims TIME_WAIT PCBs, the one kind that piles up with no application
 *    involved (VIREO_LWIP_TIME_WAIT_MAX below).
 *
 * Worst case of lwIP's heap, by kind of connection (x86_64 sizes; a block is
 * the request plus mem.c's 8-byte header, rounded up to its class,
 * segheap_block_bytes(): tcp_pcb 296 -> 320 (LWIP_TCP_KEEPALIVE adds
 * keep_idle/intvl/cnt, LWIP_WND_SCALE 32-bit windows), tcp_seg 32 -> 48, a ROM/REF pbuf 24 -> 32, a heap
 * pbuf 24 + 80 (struct and TCP/IPv6/Ethernet header room) + its data: 112
 * with no data, and above 128 bytes a class is at most 1.26 x the request,
 * so <= 141 + 1.26 x data). One TCP PCB holds at most
 *   the PCB                                                       320
 *   its send queue: TCP_SND_QUEUELEN (96) pbufs, lwIP refuses more
 *     tcp_write()s; each pbuf <= 141 + 1.26 x its copied bytes, each
 *     segment at least one pbuf, so <= 96 x (141 + 48)            18144
 *   + 1.26 x the copied bytes in that queue (below, per service)
 *   out-of-order segments: TCP_OOSEQ_MAX_PBUFS (8) x 48             384
 *     (their data: the driver's zero-copy pages, or copies counted
 *     once for all PCBs under "received data" below)
 * = 18848 + 1.26 x copied bytes. Copied bytes: the HTTP server copies heads,
 * error pages and /metrics only while less than 8192 bytes are unacked
 * (runtime/http/conn.h HTTP_COPY_INFLIGHT, or 32768 for the 2 holding a copy
 * grant, below; site bodies are PBUF_ROM into rodata), and
 * never with TCP_WRITE_FLAG_MORE, so lwIP does not round a copy up to an MSS
 * (TCP_OVERSIZE); an app's TCP service 4096 (VIREO_TCP_INFLIGHT,
 * include/vireo/net.h), a bulk service's (apps/echo's) at most its receive
 * window: TCP_WND (5840), or VIREO_RXMEM_BULK_WND (46720) for the at most
 * VIREO_RXMEM_BULK_MAX (2) connections holding a bulk window (net/tcp/rxmem.c),
 * so W_echo covers every service's plain connection.
 *   W_http = 18848 + 10322 = 29170        W_echo = 18848 + 7359 = 26207
 *   W_bulk = 18848 + 58868 = 77716 (a connection with a bulk window)
 *   W_sndbulk = W_http + (184 - 96) x 189 = 45802 (an HTTP connection with
 *     a bulk send grant: VIREO_SND_BULK_QUEUELEN pbufs instead of 96; its
 *     extra bytes are zero-copy body, so only copies count, as above)
 *
 *   live HTTP: 64 (the server's table) x W_http                 1866880
 *   bulk send grants: VIREO_SND_BULK_MAX (2) x (W_sndbulk - W_http),
 *     held until lwIP frees the PCB (an orphan's is inside the orphan
 *     estimate below, its cost counted from its real queue)          33264
 *   copied bodies' bulk grants (images without TLS): at most
 *     HTTP_COPY_BULK_MAX (2) HTTP connections may have 32768 copied
 *     bytes unacked (runtime/http/conn.h HTTP_COPY_BULK_INFLIGHT: a
 *     streamed or copied body), W_copy = 18848 + 41288 = 60136, so
 *     2 x (W_copy - W_http)                                          61932
 *     (With more than ~64.6 MiB of RAM the boot's plan widens that to
 *     69632 and adds 2 x 1.26 x 36864 = 92898 to the heap above MEM_SIZE,
 *     net/port/netmem.h copy_lwip_bytes: this sum's floor is unchanged.)
 *   live TCP services' connections and apps' outbound ones together
 *     (16, echo's included: VIREO_TCP_CONNS_TOTAL, outbound at most
 *     VIREO_TCP_OUT_MAX 8 of them, each with the same 4096 copied bytes
 *     and receive window as an accepted one, so W_echo; only bulk
 *     services' take bulk windows): 14 x W_echo + 2 x W_bulk     522330
 *     (An outbound connection of a bulk client, the HTTP client's,
 *     opens a bulk window too (46720, or 70080 by the boot's plan,
 *     net/port/netmem.h out_wnd), rxmem_out_grant(), outside the 2: its
 *     received data is copied out of lwIP at once, its out-of-order
 *     queue keeps the per-PCB and global caps, and it sends at most
 *     VIREO_TCP_INFLIGHT, so W_echo still covers it.)
 *     (Outbound connections share the 16 rather than add 8 more:
 *     8 x W_echo = 209656 would take the total past MEM_SIZE, and
 *     TLS=1 leaves 64 KiB. A connecting one, SYN_SENT, holds its PCB
 *     and one SYN segment, less than W_echo. An app's outbound ones
 *     close into TIME_WAIT, which the cap below bounds.)
 *   orphans (closed by the application, lwIP still sending our
 *     data and FIN): the port keeps <= VIREO_LWIP_ORPHANS_BYTES of
 *     them by its own estimate (net/port/lwip_port.c lwip_port_pcb_cost(),
 *     block sizes from segheap), plus the one just closed, at most
 *     W_bulk (an orphan keeps its grant, so it counts among the 2):
 *     524288 + W_bulk                                           602004
 *   half-open and not yet accepted: listen backlogs 32 (HTTP) + 5 x 4
 *     (TCP services, echo's included) x (PCB + SYN-ACK segment:
 *     320 + 48 + 112)                                               24960
 *   listening PCBs: 8 x 112                                          896
 *   TIME_WAIT: VIREO_LWIP_TIME_WAIT_MAX x 320 (queues are empty)   163840
 *   refused connections: aborted in the accept callback              0
 *   packets waiting for ARP/ND (lwIP: ARP_QUEUE_LEN 3 x
 *     ARP_TABLE_SIZE 10, and as many for ND6) x 1632 (a frame copy) 97920
 *   reassembly: IP_REASS_MAX_PBUFS zero-copy pbufs, bookkeeping       4096
 *   received data copied above the held-buffer watermark and kept
 *     (receive memory, below): out-of-order ~487 KiB (the global cap
 *     plus one batch of receive-TSO frames), reassembly 2 x 16
 *     copies ~50 KiB: 550112, x 1.26 for rounding                 693141
 *   DHCP, MLD, ND, timers                                            8192
 *                                                          total  4079455
 * i.e. 3.9 MiB of the 4 MiB heap, whatever the number or kind of connections
 * a remote party opens: every term is a count a limit above or in the
 * application caps times a per-PCB bound. The rest (112 KiB, 2.7%, 14 pages)
 * is for pages partly full: a class keeps a page while one of its slots is
 * live, and a page empty again goes back to the pool for any class.
 * make TLS=1 has no copied bodies' grants                        -61932
 * and adds (runtime/http/https.h): the HTTPS connections are among the 64
 * and count their queue encrypted, framing included, against the same 8192,
 * except the at most HTTPS_BULK_MAX (2) holding a bulk grant, 32768
 * (HTTPS_BULK_INFLIGHT): W_tls = 18848 + 41288 = 60136, so
 *   2 x (W_tls - W_http)                                          +61932
 *   the altcp layers: an altcp_pcb (88 + 8 -> 96) for each of the 80 live
 *     connections, and for the 64 TLS ones and the 4 TLS clients'
 *     (VIREO_TLS_OUT_MAX, among the 16 apps' ones) one more and
 *     altcp_tls's state (472 + 8 -> 512): 80 x 96 + 68 x 608       +49024
 *                                                     TLS=1 total  4128479
 * i.e. 3.9 MiB, 64 KiB (1.6%) left for pages partly full. Also outside the
 * sum in either build: a handshake's own flight (the chain, written by
 * mbedTLS before any response; at most https.handshakes= at once). Not in
 * this sum: frames no TCP
 * queue owns (ICMP echo replies are heap copies, UDP echo replies) while they
 * wait in the driver's transmit ring and backlog (net/netif/netif_vnet.c,
 * TX_BACKLOG_MAX frames); they last only as long as the device is slow.
 * tests/host/runtime/http/test_server.c test_orphans_* and tests/matrix
 * test_hostile_clients.py::test_orphan_flood push past the orphan caps.
 * MEM_SIZE = 4 MiB is ~8% of a 48 MiB guest (plus 48 KiB of the heap's page
 * descriptors).
 *
 * That sum is the floor: with more than 64 MiB of RAM the boot's plan
 * (net/port/netmem.h, printed at boot) makes the HTTP server's table
 * larger, but past the floor's 64 only S connections (the send budget,
 * runtime/http/conn.h http_srv.sends) may have bytes queued at once; every
 * other one is idle, its PCB alone with its altcp_pcb and a queued FIN
 * (NETMEM_IDLE_LWIP_BYTES, 576). So the "live HTTP" term above becomes
 * 64 x W_http (the floor's, which holds the at most 64 HTTPS connections,
 * outside the budget) + S x W_http + (table size - 64) x 576, and every
 * other term stays as it is:
 *   heap = MEM_SIZE + S x W_http + (table size - 64) x 576, in whole pages
 * (-m 256: S = 557, 36,676 connections, 40,560 KiB; a heap page's
 * descriptor costs 1.3% on top). The pool budgets grow the same way
 * (TCP_PCB by the table, TCP_SEG by S: vireo_lwip_init()). An idle
 * connection was measured at 416 B (tests/matrix/test_capacity.py). */
#ifndef VIREO_LWIP_MEM_SIZE
#define VIREO_LWIP_MEM_SIZE		(4u * 1024 * 1024)
#endif
#define MEM_LIBC_MALLOC			0
#define MEM_CUSTOM_ALLOCATOR		1
#define MEM_CUSTOM_MALLOC		vireo_mem_malloc	/* net/port/lwip_port.c */
#define MEM_CUSTOM_FREE			vireo_mem_free
#define MEM_CUSTOM_CALLOC		vireo_mem_calloc
void *vireo_mem_malloc(__SIZE_TYPE__ n);
void vireo_mem_free(void *p);
void *vireo_mem_calloc(__SIZE_TYPE__ count, __SIZE_TYPE__ size);
#define MEMP_MEM_MALLOC			1
#define MEM_SIZE			VIREO_LWIP_MEM_SIZE
#define MEM_ALIGNMENT			8

/* The port aborts the oldest TIME_WAIT PCBs beyond this many, every TCP timer
 * tick (lwIP's own TIME_WAIT reaping runs only once PCB allocation fails,
 * i.e. once the whole heap is gone). Linux's tcp_max_tw_buckets does the
 * same. 512 x 320 bytes = 160 KiB; 2 x TCP_MSL stays the default 2 min. */
#define VIREO_LWIP_TIME_WAIT_MAX	512

/* The port aborts half-open (SYN_RCVD) PCBs older than this (lwIP keeps them
 * 20 s, TCP_SYN_RCVD_TIMEOUT, not configurable). Once a flood fills the
 * listen backlog, SYNs get SYN cookies (net/tcp/syncookie.c) and no PCB, so
 * clients are not shut out; this limit only makes the backlog, and with it
 * stateful SYN handling (and the MSS a cookie cannot carry exactly), come
 * back sooner after a flood. A real client answers a SYN-ACK within a
 * round trip, or retransmits its SYN after 1 s (which lwIP answers again),
 * so 3 s costs real clients nothing. */
#define VIREO_LWIP_SYN_RCVD_MS		3000

/* ---- receive memory (net/tcp/rxmem.c) -----------------------------------------
 * Every frame the stack keeps pins a receive buffer until lwIP frees it, and
 * lwIP keeps some for as long as a remote party likes: out-of-order segments
 * (per PCB only TCP_OOSEQ_MAX_PBUFS/BYTES), fragments of a datagram that
 * never completes, data the application has not read. 32 connections x 8
 * one-byte out-of-order segments = 256 frames would hold the whole pool.
 *
 * Watermark: once the stack holds more than 1/VIREO_RXMEM_WATERMARK_DIV of
 * the pool (256 / 4 = 64 buffers), each further frame is copied into a
 * PBUF_RAM pbuf sized to it (<= 1518 + 24 + 16 bytes) and its buffers are
 * returned at once. The stack then never holds more than 64 + the segments
 * of the frame being input, so at least 256 - 64 - 1 = 191 buffers stay
 * with the driver: the ring can absorb three full RX polls (64 each) even
 * while the stack keeps everything it may. Normal traffic keeps only a few
 * (the applications copy in-order data out and free it at once), so it is
 * not copied: tests/matrix saw no copy in ~500 requests next to a
 * reassembly flood holding 32 buffers.
 * A copy that would leave less than VIREO_RXMEM_HEAP_RESERVE of lwIP's heap
 * free is not made: the frame is dropped (counted), its buffers reposted.
 *
 * Receive TSO (GUEST_TSO4/6, drivers/virtio/net/virtio_net.c): a frame is then up to
 * 65,535 bytes in up to 17 buffers, so the stack holds at most 64 + 17 = 81
 * buffers and 175 stay with the driver; a copy is up to 65,535 B + its
 * pbuf, made only while VIREO_RXMEM_HEAP_RESERVE stays free. A zero-copy
 * coalesced frame is 17 pbufs to pbuf_clen(), more than a PCB's
 * TCP_OOSEQ_MAX_PBUFS (8), so lwIP keeps such a frame out of order only
 * as a copy (one pbuf).
 *
 * Out-of-order caps, all PCBs together, checked after every receive batch
 * (a poll of at most 64 buffers, ending past that only to finish a merged
 * frame: 64 + 16 = 80 buffers of at most 4,096 frame bytes, so a batch can
 * overshoot by 80 pbufs and 80 x 4,096 = 327,680 bytes before the check):
 * 256 pbufs and 128 KiB of payload; whole queues are freed oldest first
 * (rxmem.c says what "oldest" is). The peer retransmits what was freed.
 * Heap, at the worst overshoot: (131,072 + 327,680 B) payload + 336 pbufs
 * x (54 B of headers + 24 B struct pbuf + 16 B heap header + 56 B tcp_seg)
 * = 458,752 + 50,400 ~ 497 KiB (without receive TSO, 64 x 1460 B: ~270 KiB).
 *
 * IP reassembly needs no cap of the port's: IP_REASS_MAX_PBUFS (16) already
 * counts pbufs globally, over all datagrams, once for IPv4 (ip4_frag.c's
 * ip_reass_pbufcount) and once for IPv6 (ip6_frag.c's ip6_reass_pbufcount),
 * and lwIP frees the oldest datagram (IP_REASS_FREE_OLDEST, default on) to
 * make room. A received frame is one pbuf (one 4 KiB buffer with MRG_RXBUF
 * at MTU 1500, or one copy), so reassembly holds at most 2 x 16 = 32
 * buffers, or 32 x ~1.6 KiB ~ 50 KiB of heap once copied. Its datagrams
 * expire after IP_REASS_MAXAGE and IPV6_REASS_MAXAGE (15 s each, below). */
#define VIREO_RXMEM_WATERMARK_DIV	4
#define VIREO_RXMEM_OOSEQ_PBUFS		256
#define VIREO_RXMEM_OOSEQ_BYTES		(128u * 1024)
#define VIREO_RXMEM_HEAP_RESERVE	(512u * 1024)	/* for PCBs and TX */
/* One lwIP ext arg per PCB: rxmem's out-of-order age stamp. */
#define LWIP_TCP_PCB_NUM_EXT_ARGS	1

/* Orphans (above, and net/port/lwip_port.c): at most this many, and at most this
 * many bytes of the heap by the port's estimate; the oldest beyond either are
 * aborted (RST), checked on every close by the application and every TCP
 * timer tick. A legitimate orphan lasts one round trip (the peer's ACK of our
 * FIN), so 64 cover 64 clients closing in the same millisecond. Like Linux's
 * tcp_fin_timeout, an orphan whose peer has sent nothing for
 * VIREO_LWIP_ORPHAN_TIMEOUT_MS is aborted (lwIP alone would retransmit and
 * probe for tens of minutes). */
#define VIREO_LWIP_ORPHANS_MAX		64
#define VIREO_LWIP_ORPHANS_BYTES	(512u * 1024)
#define VIREO_LWIP_ORPHAN_TIMEOUT_MS	60000

/* Budgets (see above: exported as avail, not enforced by lwIP). */
/* 64 HTTP and 16 TCP-service live (accepted and outbound), 52 half-open, the orphan and TIME_WAIT caps. */
#define MEMP_NUM_TCP_PCB		(64 + 16 + 52 + VIREO_LWIP_ORPHANS_MAX + VIREO_LWIP_TIME_WAIT_MAX)
#define MEMP_NUM_TCP_PCB_LISTEN		8	/* HTTP, HTTPS, 5 TCP services (echo's included), a spare */
#define MEMP_NUM_TCP_SEG		(64 * TCP_SND_QUEUELEN)	/* 64 live, each a full queue */
#define MEMP_NUM_UDP_PCB		10	/* DHCP, DNS, SNTP, syslog, 5 UDP services (echo's included), a spare */
#define MEMP_NUM_PBUF			256	/* PBUF_REF/ROM: zero-copy TX of static bodies */
#define PBUF_POOL_SIZE			32	/* unused on the zero-copy RX path; a budget */
#define MEMP_NUM_ARP_QUEUE		16
#define MEMP_NUM_ND6_QUEUE		16
#define MEMP_NUM_MLD6_GROUP		4	/* all-nodes + 3 solicited-node groups */
#define MEMP_NUM_REASSDATA		4
#define MEMP_NUM_FRAG_PBUF		16
/* lwIP's own timers plus the port's TIME_WAIT trim and the SNTP client's. */
#define MEMP_NUM_SYS_TIMEOUT		(LWIP_NUM_SYS_TIMEOUT_INTERNAL + 2)

/* ---- pbufs ---------------------------------------------------------------- */
/* One pool pbuf holds a whole frame: 1514 bytes, 1518 with a VLAN tag. */
#define PBUF_POOL_BUFSIZE		1536
/* No headroom for the virtio-net header: the driver posts it from a slot of
 * its own as the chain's first descriptor (one ring slot with indirect
 * descriptors), so pbufs need none. */
#define PBUF_LINK_ENCAPSULATION_HLEN	0

/* ---- interface ------------------------------------------------------------ */
#define LWIP_SINGLE_NETIF		1	/* one virtio-net device; no loopif */
#define LWIP_NETIF_LINK_CALLBACK	1
#define LWIP_NETIF_STATUS_CALLBACK	1
#define LWIP_NETIF_HOSTNAME		1	/* DHCP option 12 */
#define LWIP_NETIF_TX_SINGLE_PBUF	0	/* TX maps pbuf chains to descriptors */

/* ---- checksums -------------------------------------------------------------
 * All generation and checking is compiled in; each netif turns parts off at
 * run time (NETIF_SET_CHECKSUM_CTRL) when virtio-net negotiates CSUM or
 * GUEST_CSUM. lwIP requires every CHECKSUM_* on for per-netif control. */
#define LWIP_CHECKSUM_CTRL_PER_NETIF	1
#define CHECKSUM_GEN_IP			1
#define CHECKSUM_GEN_UDP		1
#define CHECKSUM_GEN_TCP		1
#define CHECKSUM_GEN_ICMP		1
#define CHECKSUM_GEN_ICMP6		1
#define CHECKSUM_CHECK_IP		1
#define CHECKSUM_CHECK_UDP		1
#define CHECKSUM_CHECK_TCP		1
#define CHECKSUM_CHECK_ICMP		1
#define CHECKSUM_CHECK_ICMP6		1
/* Off: with it on, tcp_write() sums every zero-copy (PBUF_ROM) site body in
 * software as it queues it, whether or not the device then computes the
 * checksum (virtio-net CSUM, the usual case): 21% of the guest's samples at
 * 32 connections on /64k.bin (tests/bench/profile.py --callers). Without
 * CSUM, tcp_output_segment() sums each segment once when sent instead. */
#define LWIP_CHECKSUM_ON_COPY		0

/* ---- IPv4 ----------------------------------------------------------------- */
#define LWIP_IPV4			1
#define LWIP_ARP			1
#define ARP_QUEUEING			1
#define LWIP_ICMP			1
#define LWIP_RAW			0	/* ICMP echo needs no raw PCBs */
#define LWIP_IGMP			0
#define LWIP_DHCP			1
#define LWIP_DHCP_GET_NTP_SRV		1	/* option 42, for ntp=dhcp (net/clients/sntp.c) */
/* No address conflict detection before binding a DHCP lease: it costs 3-5 s
 * of probes per boot, and on a virtual NIC the DHCP server owns the segment. */
#define LWIP_DHCP_DOES_ACD_CHECK	0
#define LWIP_ACD			0
#define LWIP_AUTOIP			0
/* DNS for names in ntp= (net/clients/resolv.c): one pcb, DNS_TABLE_SIZE (4) cached
 * names of at most DNS_MAX_NAME_LENGTH (256), one query at a time, random
 * ids and source port (LWIP_DNS_SECURE's default). */
#define LWIP_DNS			1
/* Reassembly and fragmentation for large pings and odd paths; bounded. */
#define IP_REASSEMBLY			1
#define IP_FRAG				1
#define IP_REASS_MAX_PBUFS		16	/* global, per IP version (rxmem above) */
#define IP_REASS_MAXAGE			15	/* s */

/* ---- IPv6 ----------------------------------------------------------------- */
#define LWIP_IPV6			1
#define LWIP_IPV6_AUTOCONFIG		1	/* SLAAC from router advertisements */
#define LWIP_IPV6_SEND_ROUTER_SOLICIT	1
#define LWIP_ND6_ALLOW_RA_UPDATES	1
#define LWIP_IPV6_MLD			1	/* solicited-node groups for ND */
#define LWIP_ICMP6			1
#define LWIP_IPV6_REASS			1
#define LWIP_IPV6_FRAG			1
/* Required on 64-bit: the reassembly bookkeeping (with a pointer) does not
 * fit into the 8-byte fragment header it would otherwise overwrite. */
#define IPV6_FRAG_COPYHEADER		1
#define IPV6_REASS_MAXAGE		15	/* s; lwIP's 60 s, as long as IPv4's */
#define LWIP_IPV6_DHCP6			0
#define LWIP_IPV6_NUM_ADDRESSES		3	/* link-local + 2 SLAAC prefixes */

/* ---- UDP / TCP ------------------------------------------------------------ */
#define LWIP_UDP			1
#define LWIP_TCP			1
/* make TLS=1: the application layered TCP API, with lwIP's TLS layer over
 * mbedTLS (src/apps/altcp_tls, patched for mbedTLS 3 by net/port/patches/0003).
 * Off otherwise: the default image is built exactly as before. */
#ifdef VIREO_TLS
#define LWIP_ALTCP			1
#define LWIP_ALTCP_TLS			1
#define LWIP_ALTCP_TLS_MBEDTLS		1
/* A server asks no client certificate. */
#define ALTCP_MBEDTLS_AUTHMODE		MBEDTLS_SSL_VERIFY_NONE
/* net/port/patches/0004: every handshake's outcome, to runtime/http/https.c. */
struct altcp_pcb;
struct mbedtls_ssl_context;
/* It may turn a completed handshake into an error (TLS-ALPN-01: closed
 * after the handshake, runtime/http/https.c), so altcp_tls closes it. */
int vireo_tls_handshake_hook(struct altcp_pcb *conn, struct mbedtls_ssl_context *ssl, int ret);
#define ALTCP_MBEDTLS_HANDSHAKE_HOOK(conn, ssl, ret) ((ret) = vireo_tls_handshake_hook((conn), (ssl), (ret)))
/* net/port/patches/0007: each handshake step asks runtime/http/hsgate.c
 * first (0: put off to a later loop pass), and reports when it ran. */
int vireo_tls_step_begin(struct altcp_pcb *conn, struct mbedtls_ssl_context *ssl);
void vireo_tls_step_end(struct altcp_pcb *conn, struct mbedtls_ssl_context *ssl);
#define ALTCP_MBEDTLS_HANDSHAKE_STEP_BEGIN(conn, ssl) vireo_tls_step_begin((conn), (ssl))
#define ALTCP_MBEDTLS_HANDSHAKE_STEP_END(conn, ssl) vireo_tls_step_end((conn), (ssl))
/* net/port/patches/0008: mbedTLS's random bytes straight from the kernel
 * CSPRNG (net/tls/tls_port.c), with no CTR_DRBG or entropy module on top. */
int vireo_tls_rng(void *ctx, unsigned char *out, __SIZE_TYPE__ len);
#define ALTCP_MBEDTLS_RNG_DIRECT	vireo_tls_rng
#endif
#define TCP_MSS				1460	/* 1500 MTU - 40; IPv6 gets 1440 per route */
/* Requests are small, so the receive window mainly bounds what one slow
 * reader can make the heap hold: 4 MSS = 5840 bytes, ~47 Mbit/s of upload per
 * connection at 1 ms RTT, which an appliance that serves does not need. */
#define TCP_WND				(4 * TCP_MSS)
/* Uploads: a connection rxmem grants a bulk window (a bulk TCP service asks at
 * accept: apps/echo's)
 * opens up to VIREO_RXMEM_BULK_WND instead; 4 MSS holds an upload to one
 * small window per round trip. At most VIREO_RXMEM_BULK_MAX connections
 * hold one at once (until lwIP frees the PCB), the rest keep TCP_WND: the
 * heap budget above counts both, and echo's own buffer (kernel heap) is
 * its window, 2 x 46720 + 14 x 5840 bytes at most. Through echo on a tap,
 * 16 MiB uploads, medians of 6 (make bench-upload's upload, shared host):
 * 4 MSS 10.1 MB/s, 16 MSS 32.2, 32 MSS 50.0, 44 MSS 50.1. TCP_WND_MAX(pcb)
 * is lwIP's per-connection cap, made overridable by net/port/patches/0005. */
#define VIREO_RXMEM_BULK_WND		(32 * TCP_MSS)	/* 46720 */
#define VIREO_RXMEM_BULK_MAX		2
struct tcp_pcb;
__UINT32_TYPE__ rxmem_wnd_max(const struct tcp_pcb *pcb);	/* net/tcp/rxmem.c */
#define TCP_WND_MAX(pcb)		((tcpwnd_size_t)rxmem_wnd_max(pcb))
/* Responses: up to 46 MSS (67160 bytes) queued per connection, so a whole
 * 64 KiB file with its head (65,683 bytes) goes out in one burst as fast as
 * the peer's window and lwIP's congestion window allow. Measured under TCG
 * with user networking: 8 MSS gave 188 requests/s for /64k.bin at one
 * connection, 44 MSS 606 (the ACK clock, not the bytes, was the limit).
 * 44 MSS (64240, the largest window without scaling) left the response's
 * last 1,443 bytes waiting a round trip for the ACK of the first 44
 * segments on every keep-alive request (docs/benchmarks.md, "64 KiB at one
 * connection"); past 65,535 bytes the peer's window must be scaled
 * (LWIP_WND_SCALE below). Bodies are zero-copy, so this costs headers only
 * (budget above). */
#define TCP_SND_BUF			(46 * TCP_MSS)
/* A 64 KiB response takes 2 pbufs per segment (header, ROM body) over 45
 * segments, 91 with the head's copy: 92 (2 x TCP_SND_BUF / TCP_MSS, lwIP's
 * minimum) and 4 more for heads and small writes. A full queue makes
 * tcp_write() refuse more (ERR_MEM) until ACKs free pbufs. This count bounds
 * a PCB's queue in the heap budget above (4 per segment, 184, would be
 * 16 KiB more per PCB). */
#define TCP_SND_QUEUELEN		((2 * TCP_SND_BUF) / TCP_MSS + 4)
/* Large bodies: a connection writing a zero-copy body larger than
 * TCP_SND_BUF (the HTTP server asks, runtime/http/server.c) gets a bulk send
 * grant (net/tcp/rxmem.c): VIREO_SND_BULK_BUF bytes and VIREO_SND_BULK_QUEUELEN
 * pbufs instead, so a 1 MiB response keeps more than one 64 KiB flight
 * queued while ACKs come back. At most VIREO_SND_BULK_MAX connections hold
 * one at once (until lwIP frees the PCB), the rest keep TCP_SND_BUF; the
 * heap budget above counts both. TCP_SND_QUEUELEN_PCB(pcb) is lwIP's
 * per-connection queue cap, made overridable by net/port/patches/0006. */
#define VIREO_SND_BULK_BUF		(90 * TCP_MSS)	/* 131400 */
#define VIREO_SND_BULK_QUEUELEN		((2 * VIREO_SND_BULK_BUF) / TCP_MSS + 4)	/* 184 */
#define VIREO_SND_BULK_MAX		2
/* The grant is a bit of the PCB's one ext arg (rxmem's, id 0: the only one
 * allocated); read inline, since lwIP asks on every write and output (a
 * call there was 2.2% of the guest's samples at 1 MiB c32). */
#define VIREO_SND_BULK_ARG_BIT		(1ull << 62)
#define TCP_SND_QUEUELEN_PCB(pcb)	(((__UINT64_TYPE__)(__UINTPTR_TYPE__)(pcb)->ext_args[0].data & \
					  VIREO_SND_BULK_ARG_BIT) ? VIREO_SND_BULK_QUEUELEN : TCP_SND_QUEUELEN)
#define TCP_QUEUE_OOSEQ			1
#define TCP_OOSEQ_MAX_BYTES		TCP_WND	/* per PCB */
#define TCP_OOSEQ_MAX_PBUFS		8	/* per PCB: stops tiny-segment floods */
#define TCP_LISTEN_BACKLOG		1
/* Bounds half-open PCBs per listener: 32 x 320 B = 10 KiB; past it SYNs get
 * cookies and cost nothing to hold. */
#define TCP_DEFAULT_LISTEN_BACKLOG	32
#define LWIP_TCP_KEEPALIVE		1	/* idle keep-alive connections get probed */
/* Window scaling (RFC 7323) for what we send: a peer that offers it may
 * announce more than 64 KiB, which a 64 KiB response plus its head needs to
 * leave in one flight. Our own receive window has scale 1 where the peer
 * offers scaling: the widest window we open, an outbound bulk connection's
 * 70,080 B by the boot's plan (net/port/netmem.h out_wnd: a proxied 64 KiB
 * response and its head from the upstream in one flight), needs more than
 * 16 bits; every other window stays below 65,536 and even, so announces
 * exactly. What a peer can make us hold is still each PCB's rcv_wnd
 * (TCP_WND_MAX(pcb)), not the scale. A connection whose peer did not offer
 * the option keeps scale 0 (lwIP announces at most 65,535 then); lwIP
 * offers it in a SYN-ACK only when the SYN had it; a SYN cookie's SYN-ACK
 * never does (net/tcp/syncookie.c). Costs 24 B per PCB (32-bit windows;
 * the budget above). */
#define LWIP_WND_SCALE			1
#define TCP_RCV_SCALE			1
#define LWIP_TCP_SACK_OUT		0
#define LWIP_TCP_TIMESTAMPS		0

/* ---- statistics ------------------------------------------------------------
 * Every counter is on; /metrics reads lwip_stats directly. 32-bit counters:
 * the 16-bit default wraps within minutes on a busy link. STATS_DISPLAY is on
 * for stats_display() and because it makes lwIP record each pool's name in
 * lwip_stats.memp[i]->name, which /metrics uses as a label. */
#define LWIP_STATS			1
#define LWIP_STATS_LARGE		1
#define LWIP_STATS_DISPLAY		1
#define LINK_STATS			1
#define ETHARP_STATS			1
#define IP_STATS			1
#define IPFRAG_STATS			1
#define ICMP_STATS			1
#define UDP_STATS			1
#define TCP_STATS			1
#define MEM_STATS			1
#define MEMP_STATS			1
#define SYS_STATS			0	/* no semaphores or mailboxes in NO_SYS */
#define IP6_STATS			1
#define IP6_FRAG_STATS			1
#define ICMP6_STATS			1
#define MLD6_STATS			1
#define ND6_STATS			1

/* ---- debugging -------------------------------------------------------------
 * Assertions stay on (LWIP_PLATFORM_ASSERT panics). Build with
 * -DVIREO_LWIP_DEBUG for lwIP's debug output on the console, and with
 * -DVIREO_LWIP_SANITY for heap overflow and pool sanity checks. */
#ifdef VIREO_LWIP_DEBUG
#define LWIP_DEBUG			1
#define LWIP_DBG_MIN_LEVEL		LWIP_DBG_LEVEL_ALL
#define LWIP_DBG_TYPES_ON		LWIP_DBG_ON
#define NETIF_DEBUG			LWIP_DBG_ON
#define DHCP_DEBUG			LWIP_DBG_ON
#define TCP_DEBUG			LWIP_DBG_ON
#endif
#ifdef VIREO_LWIP_SANITY
#define MEM_OVERFLOW_CHECK		1
#define MEM_SANITY_CHECK		1
#define MEMP_OVERFLOW_CHECK		1
#endif

#endif
