/* Small helpers for the appliance's TCP services, written against lwIP's
 * altcp API: with LWIP_ALTCP off (the default build) altcp_* are lwIP's
 * macros for tcp_*, so the code compiles to the raw API; with it on (make
 * TLS=1) a connection may be plain TCP or TLS over TCP. */
#ifndef VIREO_NET_APP_TCPUTIL_H
#define VIREO_NET_APP_TCPUTIL_H

#include "lwip/altcp.h"
#include "lwip/altcp_tcp.h"
#include "lwip/tcp.h"

/* Unhooks every callback and the argument from pcb, so lwIP never calls
 * back into state the caller is about to free. */
static inline void app_pcb_detach(struct altcp_pcb *pcb)
{
	altcp_arg(pcb, NULL);
	altcp_recv(pcb, NULL);
	altcp_sent(pcb, NULL);
	altcp_err(pcb, NULL);
	altcp_poll(pcb, NULL, 0);
}

/* The tcp_pcb at the bottom of pcb's layers (TLS over TCP: the TCP one).
 * Take it before altcp_close(): the altcp layers are freed there while the
 * tcp_pcb lives on as an orphan (see vireo_lwip_orphans_trim()). */
static inline struct tcp_pcb *app_tcp_pcb(struct altcp_pcb *pcb)
{
#if LWIP_ALTCP
	while (pcb->inner_conn)
		pcb = pcb->inner_conn;
	return (struct tcp_pcb *)pcb->state;
#else
	return pcb;
#endif
}

#endif
