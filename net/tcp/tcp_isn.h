/* Keyed hashing of TCP 4-tuples, shared by RFC 6528 ISNs (net/tcp/tcp_isn.c)
 * and SYN cookies (net/tcp/syncookie.c). */
#ifndef VIREO_NET_TCP_ISN_H
#define VIREO_NET_TCP_ISN_H

#include "lib/crypto/siphash.h"
#include "lib/types.h"
#include "lwip/ip_addr.h"

/* Two IPv6 addresses and two ports. */
#define TCP_ISN_TUPLE_MAX	(16 + 16 + 2 + 2)

/* A fresh 128-bit key from the kernel's generator. */
void tcp_isn_key(struct siphash_key *k);
/* Serializes the 4-tuple into buf (TCP_ISN_TUPLE_MAX bytes); returns the
 * length used. Ports in host order. */
size_t tcp_isn_tuple(u8 *buf, const ip_addr_t *local_ip, u16_t local_port,
		     const ip_addr_t *remote_ip, u16_t remote_port);

#endif
