/* A ChaCha20 fast-key-erasure generator (D. J. Bernstein, "Fast-key-erasure
 * random-number generators", 2017) with an input for entropy. Pure code:
 * kernel/random.c owns the one kernel instance and its seeding; the host
 * tests drive this directly. Not thread-safe: one context owns an instance. */
#ifndef VIREO_CSPRNG_H
#define VIREO_CSPRNG_H

#include "lib/crypto/chacha20.h"

/* Keystream blocks made per refill: the first 32 bytes become the next key,
 * the other CSPRNG_BUF_BYTES are handed out (and wiped as they are). Four
 * blocks amortize the refill over 56 random_u32() calls. */
#define CSPRNG_REFILL_BLOCKS	4
#define CSPRNG_BUF_BYTES	(CSPRNG_REFILL_BLOCKS * CHACHA20_BLOCK_BYTES - CHACHA20_KEY_BYTES)

struct csprng {
	u8 key[CHACHA20_KEY_BYTES];
	u8 buf[CSPRNG_BUF_BYTES];
	size_t avail;		/* unread bytes, at the end of buf */
	u64 mixes;		/* csprng_mix() calls so far */
	u64 refills;
};

/* A zeroed instance: all-zero key, nothing buffered. Seed it with
 * csprng_mix() before use. */
void csprng_init(struct csprng *g);
/* Mixes len bytes into the key (any length, 0 included) and drops the
 * buffered output, so everything read afterwards depends on them. Input that
 * has no entropy does no harm. */
void csprng_mix(struct csprng *g, const void *in, size_t len);
/* Fills out with len bytes. Bytes handed out are wiped from the state, and
 * the key that made them is overwritten before they are returned. */
void csprng_bytes(struct csprng *g, void *out, size_t len);

#endif
