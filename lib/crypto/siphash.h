/* SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed 64-bit PRF for short
 * inputs. Used for RFC 6528 initial sequence numbers and SYN cookies. Pure
 * code, built for the host tests too. */
#ifndef VIREO_SIPHASH_H
#define VIREO_SIPHASH_H

#include "lib/types.h"

/* The 128-bit key as the reference takes it: k0 = bytes 0-7, k1 = bytes
 * 8-15, each little-endian. */
struct siphash_key {
	u64 k0, k1;
};

/* Loads a key from 16 bytes. */
void siphash_key_from_bytes(struct siphash_key *k, const u8 bytes[16]);
/* SipHash-2-4 of len bytes at in under key k. */
u64 siphash24(const struct siphash_key *k, const void *in, size_t len);

#endif
