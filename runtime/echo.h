/* Echo (RFC 862) on TCP and UDP, dual stack, bounded memory: a test and diagnostics service. */
#ifndef VIREO_NET_APP_ECHO_H
#define VIREO_NET_APP_ECHO_H

#include "lib/types.h"

#define ECHO_TCP 1u
#define ECHO_UDP 2u

#define ECHO_MAX_CONNS 16	/* more TCP connections are reset on accept */
#define ECHO_IDLE_MS 60000	/* a TCP connection with no traffic either way is closed */
/* UDP token buckets: datagrams per second, and the burst a full bucket allows. */
#define ECHO_UDP_RATE 256
#define ECHO_UDP_BURST 64
#define ECHO_UDP_SRC_RATE 16
#define ECHO_UDP_SRC_BURST 16

/* A zero field takes the default in brackets. */
struct echo_cfg {
	u16 port;		/* TCP and UDP port (7) */
	unsigned int services;	/* ECHO_TCP | ECHO_UDP, at least one */
	u32 max_conns;		/* TCP connections [ECHO_MAX_CONNS] */
	u32 max_per_src;	/* from one source while there is room [max_conns] */
	u32 udp_rate, udp_burst;	/* all sources together [256/s, 64] */
	u32 udp_src_rate, udp_src_burst;	/* one source (IPv4, IPv6 /64) [16/s, 16] */
};

enum echo_udp_reason {
	ECHO_UDP_LOW_PORT,	/* source port below 1024 (0, chargen, daytime, echo...) */
	ECHO_UDP_OWN_PORT,	/* source port is the echo port */
	ECHO_UDP_BROADCAST,	/* IPv4 broadcast (or unspecified) destination or source */
	ECHO_UDP_MULTICAST,	/* multicast destination or source */
	ECHO_UDP_RATE_SOURCE,	/* the source's bucket is empty */
	ECHO_UDP_RATE_GLOBAL,	/* the global bucket is empty */
	ECHO_UDP_REASONS
};

/* Exported on /metrics as vireo_echo_*. */
struct echo_stats {
	u64 tcp_accepted, tcp_refused, tcp_refused_source, tcp_evicted, tcp_active;
	u64 tcp_bytes, tcp_timeouts;
	u64 udp_datagrams, udp_bytes, udp_dropped;
	u64 udp_refused[ECHO_UDP_REASONS];
};
extern struct echo_stats echo_stats;

/*
 * Start the services cfg->services names on cfg->port, IPv4 and IPv6. A TCP
 * connection holds at most one receive window of data (TCP_WND, or the bulk
 * window if net/tcp/rxmem.c grants one at accept): bytes are
 * acknowledged with tcp_recved() only once their echo has been acked by the
 * peer, so a peer that does not read sees the window close. UDP datagrams are
 * answered to their source under the rules and rates in echo.c. Call from the
 * event loop after vireo_lwip_init(). Returns 0, -EBUSY if already started,
 * -EINVAL for no or unknown services, -ENOMEM or -EIO.
 */
int echo_start(const struct echo_cfg *cfg);

/* Close the listeners and reset every TCP connection. */
void echo_stop(void);

#endif
