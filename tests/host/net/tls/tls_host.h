/* tls_host: the platform mbedTLS needs (net/tls/tls.h's hooks), on the host,
 * shared by test_tls_keys, test_mbedtls_config and fuzz_mbedtls_config.
 *
 * - The TLS heap (vireo_tls_calloc/vireo_tls_free): the C library's calloc
 *   with a size header, counting live blocks, live bytes and the peak, with
 *   a fault-injection knob (the n-th allocation from now fails).
 * - Randomness (the PSA external random hook and
 *   tls_host_rng for mbedTLS's f_rng arguments): getrandom(), or in the
 *   deterministic mode a fixed pattern, so the same input takes the same
 *   path (the fuzzer).
 * - The wall clock (vireo_tls_time, mbedtls_ms_time): the host's, or a
 *   time a test sets (tls_host_set_time), -1 standing for "no clock".
 * - The openssl fixtures tests/host/net/tls/host.mk makes at build time. */
#ifndef VIREO_TESTS_HOST_TLS_HOST_H
#define VIREO_TESTS_HOST_TLS_HOST_H

#include <stdbool.h>
#include <stddef.h>

struct tls_host_heap {
	long blocks;		/* allocations not yet freed */
	size_t bytes;		/* bytes in them */
	size_t peak;		/* the most bytes at once since tls_host_peak_reset() */
};
extern struct tls_host_heap tls_host_heap;

/* Starts the peak over at the current level. */
void tls_host_peak_reset(void);
/* The n-th allocation from now (0: the next one) returns NULL, once;
 * n < 0 turns the failure off. */
void tls_host_fail_alloc(long n);
/* The record-buffer slots (net/tls/patches/0005): server contexts holding
 * buffers now, slots handed out and refused so far, and the limit
 * (< 0: none, the default). */
struct tls_host_slots {
	long used, limit;
	unsigned long taken, refused;
};
extern struct tls_host_slots tls_host_slots_now;
void tls_host_slots(long limit);
/* On: every random byte comes from a fixed pattern; off (the default):
 * getrandom(). */
void tls_host_deterministic(bool on);
/* mbedTLS's f_rng: fills out with len random bytes (as above); 0 or -1. */
int tls_host_rng(void *ctx, unsigned char *out, size_t len);

/* What vireo_tls_time() answers from now: t (Unix seconds; -1 as the
 * kernel's without a clock); tls_host_real_time() goes back to the host's. */
void tls_host_set_time(long t);
void tls_host_real_time(void);

/* The whole fixture file name (TLS_FIX_DIR) in a malloc'd buffer (the
 * caller frees p); aborts with a message if it cannot be read. */
struct tls_blob {
	unsigned char *p;
	size_t n;
};
struct tls_blob tls_host_fixture(const char *name);

#endif
