/* The kernel's cryptographic random generator: ChaCha20 with fast key
 * erasure (lib/crypto/csprng.c), seeded at boot from RDSEED or RDRAND when the
 * CPU has them and from TSC timing jitter, and reseeded with every batch of
 * device entropy (virtio-rng). Used for TCP ISN and SYN-cookie keys, lwIP's
 * LWIP_RAND() (ports, DHCP xids), a random MAC. Event-loop context only:
 * never call it from an interrupt handler. */
#ifndef VIREO_RANDOM_H
#define VIREO_RANDOM_H

#include "lib/types.h"

/* Seeds the generator and logs from what. Call once at boot, before any
 * other function here. */
void random_init(void);
/* Mixes len bytes of device entropy (with the TSC at arrival) into the key;
 * the output from then on depends on them. The first call logs. */
void random_add_entropy(const void *buf, size_t len);
u32 random_u32(void);
u64 random_u64(void);
/* Fills buf with len random bytes. */
void random_bytes(void *buf, size_t len);
/* What seeded the generator, e.g. "rdseed+tsc-jitter" or
 * "tsc-jitter+virtio-rng". */
const char *random_source(void);
/* Device entropy bytes mixed in so far. */
extern u64 random_entropy_bytes;

#endif
