/* libFuzzer target: mbedTLS with vireo's configuration as a TLS server, fed
 * the input as everything the client sends (records, from the first byte of
 * the ClientHello on; seeds from tests/fuzz/make_corpus.py). Whatever the
 * handshake does, the connection's memory must all come back: the TLS heap
 * is counted (tests/host/net/tls/tls_host.c, in its deterministic mode) and the run
 * aborts if a connection leaves bytes behind. The
 * server's own output is discarded. The key is an EC P-256 pair from the
 * host tests' fixtures (tests/host/net/tls/host.mk). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mbedtls/ssl.h"
#include "net/tls/tls_keys.h"
#include "psa/crypto.h"
#include "tests/host/net/tls/tls_host.h"

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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct tls_blob c = tls_host_fixture("ec-cert.pem"), k = tls_host_fixture("ec-key.pem");
	char err[160];

	tls_host_deterministic(true);	/* the same input takes the same path */
	if (psa_crypto_init() != PSA_SUCCESS ||
	    tls_keys_load(&keys, c.p, c.n, k.p, k.n, tls_host_rng, NULL, err, sizeof(err)) != 0)
		abort();
	free(c.p);
	free(k.p);
	mbedtls_ssl_config_init(&conf);
	if (mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
					MBEDTLS_SSL_PRESET_DEFAULT) != 0)
		abort();
	mbedtls_ssl_conf_rng(&conf, tls_host_rng, NULL);
	if (mbedtls_ssl_conf_own_cert(&conf, &keys.chain, &keys.key) != 0 ||
	    mbedtls_ssl_conf_alpn_protocols(&conf, alpn) != 0)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size, 0 };
	mbedtls_ssl_context ssl;
	size_t base = tls_host_heap.bytes;
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
		fprintf(stderr, "fuzz_mbedtls_config: %zu bytes, handshake -0x%04x in state %d\n", size, (unsigned)-ret,
			(int)ssl.MBEDTLS_PRIVATE(state));
	if (ret == 0) {
		unsigned char buf[256];

		while (mbedtls_ssl_read(&ssl, buf, sizeof(buf)) > 0)
			;
	}
	mbedtls_ssl_free(&ssl);
	if (tls_host_heap.bytes != base) {
		fprintf(stderr, "fuzz_mbedtls_config: a connection left %zu bytes behind\n", tls_host_heap.bytes - base);
		abort();
	}
	return 0;
}
