/*
 * vireo's application API: SipHash-2-4 (Aumasson and Bernstein, 2012), a
 * keyed 64-bit PRF for short inputs: hash tables a remote party fills
 * (apps/kv's keys), cookies, per-source buckets. The kernel's own
 * (lib/crypto/siphash.c: RFC 6528 initial sequence numbers, SYN cookies).
 * Key it from vireo_random().
 */
#ifndef VIREO_API_SIPHASH_H
#define VIREO_API_SIPHASH_H

#include "vireo/types.h"

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
