/* vireo's lwIP hooks (LWIP_HOOK_FILENAME in net/port/lwipopts.h): RFC 6528
 * initial sequence numbers (net/tcp/tcp_isn.c) and SYN cookies
 * (net/tcp/syncookie.c). Included by lwIP's own sources after their headers. */
#ifndef VIREO_NET_LWIP_HOOKS_H
#define VIREO_NET_LWIP_HOOKS_H

#include "lwip/arch.h"
#include "lwip/err.h"
#include "lwip/ip_addr.h"

struct pbuf;
struct tcp_hdr;
struct tcp_pcb;
struct tcp_pcb_listen;

/* LWIP_HOOK_TCP_ISN: keyed hash of the connection's addresses and ports
 * plus a 4 us clock (RFC 6528). Ports in host order. */
u32_t vireo_tcp_isn(const ip_addr_t *local_ip, u16_t local_port,
		    const ip_addr_t *remote_ip, u16_t remote_port);

/* LWIP_HOOK_TCP_PCB_HASH (net/port/patches/0010): keyed hash of a 4-tuple for
 * lwIP's index of active and TIME_WAIT PCBs (net/tcp/tcp_isn.c). Ports in
 * host order. */
u32_t vireo_tcp_pcb_hash(const ip_addr_t *local_ip, u16_t local_port,
			 const ip_addr_t *remote_ip, u16_t remote_port);

/* LWIP_HOOK_TCP_INPACKET_PCB: a SYN for a listener whose backlog is full is
 * answered with a SYN cookie here and dropped (ERR_ABRT); everything else
 * goes on (ERR_OK). Header fields are in host order (tcp_input converted
 * them). */
err_t vireo_syncookie_inpacket(struct tcp_pcb *pcb, struct tcp_hdr *hdr, u16_t optlen,
			       u16_t opt1len, u8_t *opt2, struct pbuf *p);

/* LWIP_HOOK_TCP_INPACKET_PCB itself (net/port/lwip_port.c): a segment of more
 * than one MSS (receive TSO) is acknowledged at once; then the above. */
err_t vireo_tcp_inpacket(struct tcp_pcb *pcb, struct tcp_hdr *hdr, u16_t optlen, u16_t opt1len, u8_t *opt2,
			 struct pbuf *p);

/* LWIP_HOOK_TCP_LISTEN_ACK (net/port/patches/0001): a pure ACK for a listener.
 * If it acknowledges a valid cookie, returns a registered SYN_RCVD PCB for
 * tcp_input to process the segment with; otherwise NULL. */
struct tcp_pcb *vireo_syncookie_ack(struct tcp_pcb_listen *lpcb, struct tcp_hdr *hdr,
				    struct pbuf *p);

/* LWIP_HOOK_TCP_TIMEWAIT_REOPEN (net/port/patches/0002): a SYN (no ACK, no RST)
 * above a TIME_WAIT PCB's rcv_nxt; lwIP frees the PCB after this returns and
 * hands the SYN to the listeners. Counts vireo_lwip_stats.tw_reopened. */
void vireo_lwip_tw_reopen(struct tcp_pcb *pcb);

/* LWIP_HOOK_TCP_UNLINK (net/port/patches/0012): pcb leaves the bound, active
 * or TIME_WAIT list, or is freed; lwipopts.h calls it only for a PCB with a
 * port_slot (an orphan on the port's queue, net/port/lwip_port.c), which it
 * unqueues in O(1). */
void vireo_lwip_pcb_unlink(struct tcp_pcb *pcb);

#endif
