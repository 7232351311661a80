/* Every backported Mbed TLS fix (net/tls/patches/, the advisory table in
 * docs/https.md), one test each, against vireo's configuration (the
 * image's, server and client: net/tls/mbedtls_config.h). Server and client are fed hand-made records from memory, so each
 * test reaches the exact message the advisory is about and looks at what
 * mbedTLS decided.
 *
 * - CVE-2026-93831 (patch 0003): a ticket the server sealed for a TLS 1.3
 *   session, offered in a TLS 1.2 ClientHello, must not resume TLS 1.2; a
 *   TLS 1.2 ticket in the same ClientHello does (the control: the hand-made
 *   ClientHello is one the server resumes from).
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
#include "mbedtls/ssl_ticket.h"
#include "psa/crypto.h"
#include "net/tls/tls_keys.h"
#include "tests/host/net/tls/tls_host.h"

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

static void put16(unsigned char *p, size_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

/* A TLS 1.2 ClientHello record (no supported_versions, so the server takes
 * its TLS 1.2 path) offering ECDHE-ECDSA-AES128-GCM-SHA256 on X25519/P-256
 * with the given ticket in its SessionTicket extension and a 32-byte
 * session ID (RFC 5077 3.4: echoed when the ticket is accepted). */
static size_t client_hello12(unsigned char *out, size_t cap, const unsigned char *ticket, size_t tlen)
{
	unsigned char *p = out + 9, *ext;

	assert_true(tlen + 128 <= cap);
	*p++ = 3; *p++ = 3;				/* client_version 1.2 */
	memset(p, 0x5a, 32); p += 32;			/* random */
	*p++ = 32; memset(p, 0xa5, 32); p += 32;	/* session_id */
	put16(p, 2); p += 2; *p++ = 0xc0; *p++ = 0x2b;	/* cipher_suites */
	*p++ = 1; *p++ = 0;				/* compression: null */
	ext = p; p += 2;
	put16(p, 0x000a); put16(p + 2, 6); put16(p + 4, 4);	/* supported_groups */
	put16(p + 6, 0x001d); put16(p + 8, 0x0017); p += 10;
	put16(p, 0x000b); put16(p + 2, 2); p[4] = 1; p[5] = 0; p += 6;	/* ec_point_formats */
	put16(p, 0x000d); put16(p + 2, 4); put16(p + 4, 2);	/* signature_algorithms */
	put16(p + 6, 0x0403); p += 8;
	put16(p, 0x0023); put16(p + 2, tlen); memcpy(p + 4, ticket, tlen); p += 4 + tlen;	/* session_ticket */
	put16(ext, (size_t)(p - ext - 2));
	out[0] = 22; out[1] = 3; out[2] = 1; put16(out + 3, (size_t)(p - out - 5));	/* record */
	out[5] = 1; out[6] = 0; put16(out + 7, (size_t)(p - out - 9));		/* ClientHello */
	return (size_t)(p - out);
}

/* Runs the server over one ClientHello carrying a ticket sealed from
 * session s; returns whether the server chose to resume. */
static int resumes_from(mbedtls_ssl_session *s)
{
	struct tls_blob c = tls_host_fixture("ec-cert.pem"), k = tls_host_fixture("ec-key.pem");
	struct tls_keys keys;
	mbedtls_ssl_ticket_context tctx;
	mbedtls_ssl_config conf;
	mbedtls_ssl_context ssl;
	unsigned char ticket[1024], hello[1200];
	size_t tlen;
	uint32_t lifetime;
	struct wire w = { 0 };
	char err[160];
	int ret, resumed;

	assert_int_equal(tls_keys_load(&keys, c.p, c.n, k.p, k.n, tls_host_rng, NULL, err, sizeof(err)), 0);
	mbedtls_ssl_ticket_init(&tctx);
	assert_int_equal(mbedtls_ssl_ticket_setup(&tctx, tls_host_rng, NULL, MBEDTLS_CIPHER_AES_256_GCM, 7200), 0);
	assert_int_equal(mbedtls_ssl_ticket_write(&tctx, s, ticket, ticket + sizeof(ticket), &tlen, &lifetime), 0);

	mbedtls_ssl_config_init(&conf);
	assert_int_equal(mbedtls_ssl_config_defaults(&conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
						     MBEDTLS_SSL_PRESET_DEFAULT), 0);
	mbedtls_ssl_conf_rng(&conf, tls_host_rng, NULL);
	assert_int_equal(mbedtls_ssl_conf_own_cert(&conf, &keys.chain, &keys.key), 0);
	mbedtls_ssl_conf_session_tickets_cb(&conf, mbedtls_ssl_ticket_write, mbedtls_ssl_ticket_parse, &tctx);

	w.in = hello;
	w.in_len = client_hello12(hello, sizeof(hello), ticket, tlen);
	mbedtls_ssl_init(&ssl);
	assert_int_equal(mbedtls_ssl_setup(&ssl, &conf), 0);
	mbedtls_ssl_set_bio(&ssl, &w, wire_send, wire_recv, NULL);
	/* Up to the client's next flight: the ClientHello is parsed and the
	 * server's answer (abbreviated or full) written. */
	do
		ret = mbedtls_ssl_handshake_step(&ssl);
	while (ret == 0 && ssl.state != MBEDTLS_SSL_HANDSHAKE_OVER);
	assert_int_equal(ret, MBEDTLS_ERR_SSL_WANT_READ);
	assert_int_equal(ssl.tls_version, MBEDTLS_SSL_VERSION_TLS1_2);
	assert_true(w.in_off == w.in_len && w.out > 0);
	/* Resumed: ServerHello, ChangeCipherSpec and Finished are out and the
	 * client's ChangeCipherSpec is next. Full: ServerHello to
	 * ServerHelloDone are out and the client's ClientKeyExchange is next
	 * (no client certificate is asked for). */
	assert_true(ssl.state == MBEDTLS_SSL_CLIENT_CHANGE_CIPHER_SPEC ||
		    ssl.state == MBEDTLS_SSL_CLIENT_KEY_EXCHANGE);
	resumed = ssl.state == MBEDTLS_SSL_CLIENT_CHANGE_CIPHER_SPEC;

	mbedtls_ssl_free(&ssl);
	mbedtls_ssl_config_free(&conf);
	mbedtls_ssl_ticket_free(&tctx);
	tls_keys_free(&keys);
	free(c.p);
	free(k.p);
	return resumed;
}

static void test_tls12_refuses_tls13_ticket(void **state)
{
	mbedtls_ssl_session s;
	long blocks = tls_host_heap.blocks;

	(void)state;
	/* The control: a TLS 1.2 session's ticket resumes. */
	mbedtls_ssl_session_init(&s);
	s.tls_version = MBEDTLS_SSL_VERSION_TLS1_2;
	s.endpoint = MBEDTLS_SSL_IS_SERVER;
	s.ciphersuite = MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256;
	memset(s.master, 0x11, sizeof(s.master));
	/* a ticket written now, as the server stamps one (MBEDTLS_HAVE_TIME:
	 * older than its lifetime, it would not open) */
	s.ticket_creation_time = mbedtls_ms_time();
	assert_int_equal(resumes_from(&s), 1);
	mbedtls_ssl_session_free(&s);

	/* A TLS 1.3 session's ticket, which holds a resumption key and no
	 * TLS 1.2 master secret, is ignored: a full handshake follows. */
	mbedtls_ssl_session_init(&s);
	s.tls_version = MBEDTLS_SSL_VERSION_TLS1_3;
	s.endpoint = MBEDTLS_SSL_IS_SERVER;
	s.ciphersuite = MBEDTLS_TLS1_3_AES_128_GCM_SHA256;
	s.ticket_flags = MBEDTLS_SSL_TLS1_3_TICKET_ALLOW_PSK_EPHEMERAL_RESUMPTION;
	s.ticket_creation_time = mbedtls_ms_time();
	s.resumption_key_len = 32;
	memset(s.resumption_key, 0x22, 32);
	assert_int_equal(resumes_from(&s), 0);
	mbedtls_ssl_session_free(&s);
	assert_int_equal(tls_host_heap.blocks, blocks);
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
		cmocka_unit_test(test_tls12_refuses_tls13_ticket),
		cmocka_unit_test(test_tls12_server_hello_with_tls13_version),
	};

	psa_crypto_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
