/* Mbed TLS advisories that concern the TLS client, against vireo's
 * configuration with the client compiled in (tests/host/
 * mbedtls_config_client.h, as the connect-out and ACME issues will build
 * it), one test per backported fix (net/patches-mbedtls/, table in
 * docs/https.md). The client talks to hand-made server records from memory.
 *
 * - CVE-2026-115490 (patch 0004): a client offering TLS 1.2 and 1.3 that
 *   gets a ServerHello without supported_versions (so: TLS 1.2) but with
 *   legacy_version 0x0304 and a TLS 1.3 suite must refuse it with
 *   MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION, not carry on in the TLS 1.2
 *   state machine with a TLS 1.3 version and no TLS 1.3 key schedule. */
#define MBEDTLS_ALLOW_PRIVATE_ACCESS
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mbedtls/ssl.h"
#include "psa/crypto.h"
#include "tests/host/tls_host.h"

/* ---- records from memory, output counted and dropped ---- */
struct wire {
	const unsigned char *in;
	size_t in_len, in_off;
	size_t out;
};

static int wire_send(void *ctx, const unsigned char *buf, size_t len)
{
	(void)buf;
	((struct wire *)ctx)->out += len;
	return (int)len;
}

static int wire_recv(void *ctx, unsigned char *buf, size_t len)
{
	struct wire *w = ctx;
	size_t n = w->in_len - w->in_off;

	if (n == 0)
		return MBEDTLS_ERR_SSL_WANT_READ;
	if (n > len)
		n = len;
	memcpy(buf, w->in + w->in_off, n);
	w->in_off += n;
	return (int)n;
}

/* Steps the handshake until it needs input, fails or is over. */
static int run(mbedtls_ssl_context *ssl)
{
	int ret;

	do
		ret = mbedtls_ssl_handshake_step(ssl);
	while (ret == 0 && ssl->state != MBEDTLS_SSL_HANDSHAKE_OVER);
	return ret;
}

static void test_tls12_server_hello_with_tls13_version(void **state)
{
	/* ServerHello, TLS 1.2 layout: legacy_version 0x0304, a random
	 * without the downgrade sentinel, no session ID,
	 * TLS_AES_128_GCM_SHA256, null compression, no extensions. */
	unsigned char hello[5 + 4 + 38] = { 22, 3, 3, 0, 42, 2, 0, 0, 38, 3, 4 };
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	struct wire w = { 0 };
	long blocks = tls_host_heap.blocks;

	(void)state;
	memset(hello + 11, 0x33, 32);
	hello[43] = 0;				/* session_id length */
	hello[44] = 0x13; hello[45] = 0x01;	/* cipher_suite */
	hello[46] = 0;				/* compression_method */

	mbedtls_ssl_config_init(&conf);
	assert_int_equal(mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
						     MBEDTLS_SSL_PRESET_DEFAULT), 0);
	mbedtls_ssl_conf_rng(&conf, tls_host_rng, NULL);
	mbedtls_ssl_conf_authmode(&conf, MBEDTLS_SSL_VERIFY_NONE);
	mbedtls_ssl_conf_min_tls_version(&conf, MBEDTLS_SSL_VERSION_TLS1_2);
	mbedtls_ssl_conf_max_tls_version(&conf, MBEDTLS_SSL_VERSION_TLS1_3);
	mbedtls_ssl_init(&ssl);
	assert_int_equal(mbedtls_ssl_setup(&ssl, &conf), 0);
	mbedtls_ssl_set_bio(&ssl, &w, wire_send, wire_recv, NULL);

	assert_int_equal(run(&ssl), MBEDTLS_ERR_SSL_WANT_READ);	/* ClientHello out */
	assert_true(w.out > 0);
	w.in = hello;
	w.in_len = sizeof(hello);
	assert_int_equal(run(&ssl), MBEDTLS_ERR_SSL_BAD_PROTOCOL_VERSION);
	assert_int_equal(w.in_off, w.in_len);

	mbedtls_ssl_free(&ssl);
	mbedtls_ssl_config_free(&conf);
	assert_int_equal(tls_host_heap.blocks, blocks);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls12_server_hello_with_tls13_version),
	};

	psa_crypto_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
