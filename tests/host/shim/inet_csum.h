/* inet_csum: the Internet checksum (RFC 1071) for the host tests that
 * hand-make their packets into ip_input() without the in-process netif
 * (tests/host/lwip/lwip_wire.c), computed apart from lwIP's inet_chksum so
 * that a fault there shows: csum_add() sums bytes as big-endian 16-bit
 * words, an odd last byte padded with zero, and chains over pieces of even
 * length; csum_fold() folds the carries in and complements. */
#ifndef VIREO_INET_CSUM_H
#define VIREO_INET_CSUM_H

#include <stddef.h>
#include "lib/types.h"

static inline u32 csum_add(u32 sum, const u8 *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (u32)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (u32)p[n - 1] << 8;
	return sum;
}

static inline u16 csum_fold(u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

#endif
