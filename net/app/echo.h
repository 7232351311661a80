/* Echo (RFC 862) on TCP and UDP, dual stack, bounded memory: a test and diagnostics service. */
#ifndef VIREO_NET_APP_ECHO_H
#define VIREO_NET_APP_ECHO_H

#include "kernel/types.h"

#define ECHO_MAX_CONNS 16	/* more TCP connections are reset on accept */
#define ECHO_IDLE_MS 60000	/* a TCP connection with no traffic either way is closed */

/* Exported on /metrics as vireo_echo_*. */
struct echo_stats {
	u64 tcp_accepted, tcp_refused, tcp_active, tcp_bytes, tcp_timeouts;
	u64 udp_datagrams, udp_bytes, udp_dropped;
};
extern struct echo_stats echo_stats;

/*
 * Listen on TCP and UDP port (normally 7), IPv4 and IPv6. A TCP connection
 * holds at most one receive window (TCP_WND) of data: bytes are acknowledged
 * with tcp_recved() only once their echo has been acked by the peer, so a
 * peer that does not read sees the window close. UDP datagrams are answered
 * to their source unless it is port 0 or the datagram was not unicast to us.
 * Call from the event loop after vireo_lwip_init(). Returns 0, -EBUSY if
 * already started, -ENOMEM or -EIO.
 */
int echo_start(u16 port);

/* Close both listeners and reset every TCP connection. */
void echo_stop(void);

#endif
