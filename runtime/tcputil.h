/* Small helpers for the appliance's TCP services, written against lwIP's
 * altcp API: with LWIP_ALTCP off (the default build) altcp_* are lwIP's
 * macros for tcp_*, so the code compiles to the raw API; with it on (make
 * TLS=1) a connection may be plain TCP or TLS over TCP. */
#ifndef VIREO_NET_APP_TCPUTIL_H
#define VIREO_NET_APP_TCPUTIL_H

#include "lwip/altcp.h"
#include "lwip/altcp_tcp.h"
#include "lwip/tcp.h"
#include "net/port/lwip_port.h"

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

/* Closes pcb once the caller has detached it (app_pcb_detach) and freed
 * its own state: a FIN after what is queued, or a reset when lwIP cannot
 * queue one (ERR_ABRT then, for an lwIP callback to return). tpcb is
 * app_tcp_pcb(pcb), taken before the close frees the altcp layers; the
 * orphan it becomes is kept within the port's caps. */
static inline err_t app_pcb_close_detached(struct altcp_pcb *pcb, struct tcp_pcb *tpcb)
{
	if (altcp_close(pcb) != ERR_OK) {
		altcp_abort(pcb);
		return ERR_ABRT;
	}
	vireo_lwip_orphans_trim(tpcb);
	return ERR_OK;
}

/* A receive callback's data for a connection whose state is gone (the
 * argument already NULL): acknowledged and dropped. */
static inline err_t app_recv_stray(struct altcp_pcb *pcb, struct pbuf *p)
{
	if (p) {
		altcp_recved(pcb, p->tot_len);
		pbuf_free(p);
	}
	return ERR_OK;
}

#endif
