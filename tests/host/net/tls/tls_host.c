/* tls_host: mbedTLS's platform hooks on the host; see tls_host.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "mbedtls/platform_time.h"
#include "mbedtls/ssl.h"
#include "psa/crypto.h"
#include "tests/host/net/tls/tls_host.h"

#define HDR 16	/* size header in front of each block; keeps 16-byte alignment */

struct tls_host_heap tls_host_heap;
static long fail_countdown = -1;
static bool deterministic;

void tls_host_peak_reset(void)
{
	tls_host_heap.peak = tls_host_heap.bytes;
}

void tls_host_fail_alloc(long n)
{
	fail_countdown = n;
}

void tls_host_deterministic(bool on)
{
	deterministic = on;
}

/* mbedTLS's allocator (MBEDTLS_PLATFORM_CALLOC_MACRO, net/tls/mbedtls_config.h);
 * the kernel's is in net/tls/tls_port.c. */
void *vireo_tls_calloc(size_t n, size_t size)
{
	size_t *p;

	if (fail_countdown >= 0 && fail_countdown-- == 0)
		return NULL;
	if (size && n > (SIZE_MAX - HDR) / size)
		return NULL;
	p = calloc(1, n * size + HDR);
	if (!p)
		return NULL;
	p[0] = n * size;
	tls_host_heap.blocks++;
	tls_host_heap.bytes += n * size;
	if (tls_host_heap.bytes > tls_host_heap.peak)
		tls_host_heap.peak = tls_host_heap.bytes;
	return (char *)p + HDR;
}

void vireo_tls_free(void *q)
{
	size_t *p;

	if (!q)
		return;
	p = (size_t *)((char *)q - HDR);
	tls_host_heap.blocks--;
	tls_host_heap.bytes -= p[0];
	free(p);
}

/* The slots of net/tls/patches/0005 (the kernel's are in net/tls/tls_port.c):
 * unlimited until tls_host_slots() sets a limit. */
struct tls_host_slots tls_host_slots_now = { .limit = -1 };

void tls_host_slots(long limit)
{
	tls_host_slots_now.limit = limit;
}

int mbedtls_ssl_idle_slot_take(void)
{
	if (tls_host_slots_now.limit >= 0 && tls_host_slots_now.used >= tls_host_slots_now.limit) {
		tls_host_slots_now.refused++;
		return -1;
	}
	tls_host_slots_now.used++;
	tls_host_slots_now.taken++;
	return 0;
}

void mbedtls_ssl_idle_slot_give(void)
{
	tls_host_slots_now.used--;
}

static int fill(unsigned char *out, size_t len)
{
	if (deterministic) {
		for (size_t i = 0; i < len; i++)
			out[i] = (unsigned char)(i * 97u + 13u);
		return 0;
	}
	return getrandom(out, len, 0) == (ssize_t)len ? 0 : -1;
}

int tls_host_rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	return fill(out, len);
}

psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *ctx, uint8_t *out,
					     size_t size, size_t *olen)
{
	(void)ctx;
	if (fill(out, size))
		return PSA_ERROR_INSUFFICIENT_ENTROPY;
	*olen = size;
	return PSA_SUCCESS;
}

static bool tls_host_fake_time;
static long tls_host_time;

void tls_host_set_time(long t)
{
	tls_host_fake_time = true;
	tls_host_time = t;
}

void tls_host_real_time(void)
{
	tls_host_fake_time = false;
}

/* MBEDTLS_PLATFORM_TIME_MACRO (net/tls/mbedtls_config.h). */
long vireo_tls_time(long *t)
{
	long now = tls_host_fake_time ? tls_host_time : (long)time(NULL);

	if (t)
		*t = now;
	return now;
}

/* MBEDTLS_PLATFORM_MS_TIME_ALT: a monotonic clock. */
mbedtls_ms_time_t mbedtls_ms_time(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (mbedtls_ms_time_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct tls_blob tls_host_fixture(const char *name)
{
	char path[256];
	unsigned char *b = NULL;
	FILE *f;
	long n = -1;

	snprintf(path, sizeof(path), "%s/%s", TLS_FIX_DIR, name);
	f = fopen(path, "rb");
	if (f && fseek(f, 0, SEEK_END) == 0)
		n = ftell(f);
	if (n > 0 && fseek(f, 0, SEEK_SET) == 0)
		b = malloc((size_t)n);
	if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "tls_host: cannot read %s (the fixtures come from tests/host/net/tls/host.mk)\n", path);
		abort();
	}
	fclose(f);
	return (struct tls_blob){ b, (size_t)n };
}
