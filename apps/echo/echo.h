/* Echo (RFC 862) on TCP and UDP, dual stack, bounded memory: a test and
 * diagnostics service, an app on the API (include/vireo/) that every image
 * carries (docs/apps.md). Its keys: echo=, echo.udp_rate=. This header is
 * the app's own and its tests'. */
#ifndef VIREO_APPS_ECHO_H
#define VIREO_APPS_ECHO_H

#include "vireo/types.h"

#define ECHO_PORT 7
#define ECHO_TCP 1u
#define ECHO_UDP 2u

#define ECHO_MAX_CONNS 16	/* more TCP connections are reset on accept */
#define ECHO_IDLE_MS 60000	/* a TCP connection with no traffic, or no ACK progress, is reset */
/* UDP token buckets: datagrams per second, and the burst a full bucket allows. */
#define ECHO_UDP_RATE 256
#define ECHO_UDP_BURST 64
#define ECHO_UDP_SRC_RATE 16
#define ECHO_UDP_SRC_BURST 16
#define ECHO_UDP_BUCKETS 64	/* per-source buckets, by keyed hash */

/* A zero field takes the default in brackets. */
struct echo_cfg {
	u16 port;		/* TCP and UDP port (7) */
	unsigned int services;	/* ECHO_TCP | ECHO_UDP, at least one */
	u32 max_conns;		/* TCP connections [ECHO_MAX_CONNS] */
	u32 max_per_src;	/* from one source while there is room [max_conns] */
	u32 udp_rate, udp_burst;	/* all sources together [256/s, 64] */
	u32 udp_src_rate, udp_src_burst;	/* one source (IPv4, IPv6 /64) [16/s, 16] */
};

/* Why echo itself did not answer a datagram (the runtime drops those from
 * port 0, from a service's port or echo's own, and from or to broadcast and
 * multicast addresses before echo sees them: vireo_udp_stats()). */
enum echo_udp_reason {
	ECHO_UDP_RATE_SOURCE,	/* the source's bucket is empty */
	ECHO_UDP_RATE_GLOBAL,	/* the global bucket is empty */
	ECHO_UDP_REASONS
};

/* Echo's own counts; with its services' (vireo_tcp_stats(),
 * vireo_udp_stats()) they make /metrics' vireo_echo_*. */
struct echo_stats {
	u64 tcp_bytes;		/* echoed: taken by vireo_tcp_send() */
	u64 udp_datagrams, udp_bytes, udp_send_errors;
	u64 udp_refused[ECHO_UDP_REASONS];
};
extern struct echo_stats echo_stats;

/*
 * Start the services cfg->services names on cfg->port, IPv4 and IPv6 (the
 * app's init does, from echo=). 0, -EBUSY if started, -EINVAL for no or
 * unknown services, or vireo_tcp_listen()'s and vireo_udp_bind()'s errors.
 */
int echo_start(const struct echo_cfg *cfg);

/* Forget that echo started (the tests, after stopping the runtime's
 * services: the API has no way to stop one). */
void echo_stop(void);

#endif
