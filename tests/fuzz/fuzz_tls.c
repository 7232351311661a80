/* libFuzzer target: mbedTLS with vireo's configuration as a TLS server, fed
 * the input as everything the client sends (records, from the first byte of
 * the ClientHello on; seeds from tests/fuzz/make_corpus.py). Whatever the
 * handshake does, the connection's memory must all come back: the TLS heap
 * is counted and the run aborts if a connection leaves bytes behind. The
 * server's own output is discarded. The key is an EC P-256 pair from the
 * host tests' fixtures (tests/host/tls.mk). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mbedtls/ssl.h"
#include "net/tls/tls_keys.h"
#include "psa/crypto.h"

static size_t live;

void *vireo_tls_calloc(size_t n, size_t size)
{
	size_t *p;

	if (size && n > ((size_t)-1 - 16) / size)
		return NULL;
	p = calloc(1, n * size + 16);
	if (!p)
		return NULL;
	p[0] = n * size;
	live += n * size;
	return (char *)p + 16;
}

void vireo_tls_free(void *q)
{
	size_t *p;

	if (!q)
		return;
	p = (size_t *)((char *)q - 16);
	live -= p[0];
	free(p);
}

/* Deterministic "randomness": the same input takes the same path. */
static void fill(unsigned char *out, size_t len)
{
	for (size_t i = 0; i < len; i++)
		out[i] = (unsigned char)(i * 97u + 13u);
}

int mbedtls_hardware_poll(void *data, unsigned char *out, size_t len, size_t *olen)
{
	fill(out, len);
	*olen = len;
	return 0;
}

psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *ctx,
					     uint8_t *out, size_t size, size_t *olen)
{
	fill(out, size);
	*olen = size;
	return PSA_SUCCESS;
}

static int rng(void *ctx, unsigned char *out, size_t len)
{
	fill(out, len);
	return 0;
}

struct in {
	const uint8_t *p;
	size_t n, off;
};

static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	return (int)len;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	struct in *in = ctx;
	size_t n = in->n - in->off;

	if (n > len)
		n = len;
	memcpy(buf, in->p + in->off, n);
	in->off += n;
	return (int)n;	/* 0 at the end: EOF */
}

static mbedtls_ssl_config conf;
static struct tls_keys keys;
static const char *alpn[] = { "http/1.1", NULL };

static unsigned char *slurp(const char *name, size_t *n)
{
	char path[256];
	unsigned char *b = malloc(65536);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", TLS_FIX_DIR, name);
	f = fopen(path, "rb");
	if (!f || !b) {
		fprintf(stderr, "fuzz_tls: cannot read %s (make the host tests' fixtures first)\n", path);
		abort();
	}
	*n = fread(b, 1, 65536, f);
	fclose(f);
	return b;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	size_t cn, kn;
	unsigned char *c = slurp("ec-cert.pem", &cn), *k = slurp("ec-key.pem", &kn);
	char err[160];

	if (psa_crypto_init() != PSA_SUCCESS ||
	    tls_keys_load(&keys, c, cn, k, kn, rng, NULL, err, sizeof(err)) != 0)
		abort();
	free(c);
	free(k);
	mbedtls_ssl_config_init(&conf);
	if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT) != 0)
		abort();
	mbedtls_ssl_conf_rng(&conf, rng, NULL);
	if (mbedtls_ssl_conf_own_cert(&conf, &keys.chain, &keys.key) != 0 ||
	    mbedtls_ssl_conf_alpn_protocols(&conf, alpn) != 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size, 0 };
	mbedtls_ssl_context ssl;
	size_t base = live;
	int ret;

	mbedtls_ssl_init(&ssl);
	if (mbedtls_ssl_setup(&ssl, &conf) != 0)
		abort();
	mbedtls_ssl_set_bio(&ssl, &in, bio_send, bio_recv, NULL);
	do
		ret = mbedtls_ssl_handshake(&ssl);
	while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE);
	/* FUZZ_TLS_VERBOSE=1: say where each input ended (checks the seeds). */
	if (getenv("FUZZ_TLS_VERBOSE"))
		fprintf(stderr, "fuzz_tls: %zu bytes, handshake -0x%04x in state %d\n", size, (unsigned)-ret,
			(int)ssl.MBEDTLS_PRIVATE(state));
	if (ret == 0) {
		unsigned char buf[256];

		while (mbedtls_ssl_read(&ssl, buf, sizeof(buf)) > 0)
			;
	}
	mbedtls_ssl_free(&ssl);
	if (live != base) {
		fprintf(stderr, "fuzz_tls: a connection left %zu bytes behind\n", live - base);
		abort();
	}
	return 0;
}
