/* Randomness for the network stack (initial sequence numbers, ports, a
 * random MAC): a xoshiro256** generator seeded from RDSEED/RDRAND when the
 * CPU has them and the TSC, with device entropy (virtio-rng) mixed in. Not
 * a cryptographic generator. */
#ifndef VIREO_RANDOM_H
#define VIREO_RANDOM_H

#include "kernel/types.h"

void random_init(void);
/* Mixes len bytes of entropy into the state. */
void random_add_entropy(const void *buf, size_t len);
u32 random_u32(void);
u64 random_u64(void);
/* What seeded the generator: "rdseed", "rdrand" or "tsc". */
const char *random_source(void);

#endif
