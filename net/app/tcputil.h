/* Small helpers for the appliance's raw-API TCP services. */
#ifndef VIREO_NET_APP_TCPUTIL_H
#define VIREO_NET_APP_TCPUTIL_H

#include "lwip/tcp.h"

/* Unhooks every callback and the argument from pcb, so lwIP never calls
 * back into state the caller is about to free. */
static inline void app_pcb_detach(struct tcp_pcb *pcb)
{
	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	tcp_sent(pcb, NULL);
	tcp_err(pcb, NULL);
	tcp_poll(pcb, NULL, 0);
}

#endif
