/* mbedTLS with vireo's configuration (net/tls/mbedtls_config.h) as a TLS
 * server over loopback, against openssl s_client: what the configuration
 * negotiates (TLS 1.3 and 1.2; X25519 and P-256; AES-GCM and
 * ChaCha20-Poly1305; ECDSA and RSA certificates; ALPN http/1.1) and what it
 * refuses (TLS 1.1, CBC suites, P-384 only, garbage and truncated
 * ClientHellos), with the heap back to zero after every connection. It also
 * measures what one connection holds (printed): the handshake peak and the
 * established level, the figures net/tls/tls.h's bound rests on. The server
 * is driven as the appliance will drive it: one context, records through
 * send/recv callbacks, no mbedTLS networking code. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <cmocka.h>

#include "mbedtls/ssl.h"
#include "mbedtls/net_sockets.h"
#include "net/tls/tls_keys.h"
#include "psa/crypto.h"
#include "tests/host/net/tls/tls_host.h"

/* net/tls/tls.h's TLS_IDLE_BYTES (tls.h does not mix with the C library's
 * errno.h; tests/host/net/tls/test_tlsmem.c checks the value there). */
#define TLS_IDLE_BYTES 4096u

/* ---- record I/O on a socket ---- */
static int bio_send(void *ctx, const unsigned char *buf, size_t len)
{
	ssize_t n = send(*(int *)ctx, buf, len, MSG_NOSIGNAL);

	return n < 0 ? MBEDTLS_ERR_NET_SEND_FAILED : (int)n;
}

static int bio_recv(void *ctx, unsigned char *buf, size_t len)
{
	ssize_t n = recv(*(int *)ctx, buf, len, 0);

	if (n < 0)
		return errno == EAGAIN ? MBEDTLS_ERR_SSL_TIMEOUT : MBEDTLS_ERR_NET_RECV_FAILED;
	return (int)n;	/* 0: EOF */
}

static const char *alpn[] = { "http/1.1", NULL };

struct result {
	int handshake;		/* mbedtls_ssl_handshake()'s final return */
	char client[8192];	/* s_client's output */
	size_t hs_peak;		/* heap peak during the handshake */
	size_t established;	/* heap in use once established */
	size_t idle;		/* heap in use once idle after a request and its reply */
	bool released;		/* the record buffers were released then (patch 0005) */
	char version[16], suite[64], alpn[16];
};

/* The client's connection on ls, within 20 s, reads timing out after 20 s. */
static int accept_client(int ls)
{
	struct timeval tv = { .tv_sec = 20 };
	struct pollfd pfd = { .fd = ls, .events = POLLIN };
	int fd;

	assert_int_equal(poll(&pfd, 1, 20000), 1);
	fd = accept(ls, NULL, NULL);
	assert_true(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* The server's side as the appliance sets it up: the certificate and key
 * (fixture files) loaded, the configuration's defaults for a stream server,
 * the RNG and its own certificate. server_free() undoes it. */
struct server {
	struct tls_blob c, k;
	struct tls_keys keys;
	mbedtls_ssl_config conf;
};

static void server_conf(struct server *s, const char *cert, const char *key)
{
	char err[160];

	s->c = tls_host_fixture(cert);
	s->k = tls_host_fixture(key);
	assert_int_equal(tls_keys_load(&s->keys, s->c.p, s->c.n, s->k.p, s->k.n, tls_host_rng, NULL, err,
				       sizeof(err)), 0);
	mbedtls_ssl_config_init(&s->conf);
	assert_int_equal(mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
						     MBEDTLS_SSL_PRESET_DEFAULT), 0);
	mbedtls_ssl_conf_rng(&s->conf, tls_host_rng, NULL);
	assert_int_equal(mbedtls_ssl_conf_own_cert(&s->conf, &s->keys.chain, &s->keys.key), 0);
}

static void server_free(struct server *s)
{
	mbedtls_ssl_config_free(&s->conf);
	tls_keys_free(&s->keys);
	free(s->c.p);
	free(s->k.p);
}

/* One connection: listen, start client_cmd (a shell command with %d for
 * the port), run the server side, collect the client's output. raw != NULL:
 * instead of a client command, connect a plain socket, send raw bytes and
 * close. */
static void serve(const char *cert, const char *key, const char *client_cmd, const void *raw, size_t raw_len,
		  struct result *r)
{
	struct server srv;
	mbedtls_ssl_context ssl;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	char cmd[1024];
	FILE *client = NULL;
	int ls, fd, cfd = -1, ret;
	size_t base;

	memset(r, 0, sizeof(*r));
	server_conf(&srv, cert, key);
	assert_int_equal(mbedtls_ssl_conf_alpn_protocols(&srv.conf, alpn), 0);

	ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 4), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	if (raw) {
		cfd = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(cfd, (struct sockaddr *)&a, sizeof(a)), 0);
		assert_int_equal(send(cfd, raw, raw_len, 0), (ssize_t)raw_len);
		shutdown(cfd, SHUT_WR);
	} else {
		snprintf(cmd, sizeof(cmd), client_cmd, ntohs(a.sin_port));
		client = popen(cmd, "r");
		assert_non_null(client);
	}
	fd = accept_client(ls);

	/* An RSA key caches its blinding values at its first private-key
	 * operation, for good: sign once so only the connection is counted. */
	if (mbedtls_pk_get_type(&srv.keys.key) == MBEDTLS_PK_RSA) {
		unsigned char hash[32] = { 1 }, sig[MBEDTLS_PK_SIGNATURE_MAX_SIZE];
		size_t slen;

		assert_int_equal(mbedtls_pk_sign(&srv.keys.key, MBEDTLS_MD_SHA256, hash, sizeof(hash), sig, sizeof(sig),
						 &slen, tls_host_rng, NULL), 0);
		assert_int_equal(mbedtls_pk_sign_ext(MBEDTLS_PK_RSASSA_PSS, &srv.keys.key, MBEDTLS_MD_SHA256, hash,
						     sizeof(hash), sig, sizeof(sig), &slen, tls_host_rng, NULL), 0);
	}
	base = tls_host_heap.bytes;
	tls_host_peak_reset();
	mbedtls_ssl_init(&ssl);
	assert_int_equal(mbedtls_ssl_setup(&ssl, &srv.conf), 0);
	mbedtls_ssl_set_bio(&ssl, &fd, bio_send, bio_recv, NULL);
	do
		ret = mbedtls_ssl_handshake(&ssl);
	while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE);
	r->handshake = ret;
	r->hs_peak = tls_host_heap.peak - base;
	r->established = tls_host_heap.bytes - base;
	if (ret == 0) {
		unsigned char buf[64];

		snprintf(r->version, sizeof(r->version), "%s", mbedtls_ssl_get_version(&ssl));
		snprintf(r->suite, sizeof(r->suite), "%s", mbedtls_ssl_get_ciphersuite(&ssl));
		if (mbedtls_ssl_get_alpn_protocol(&ssl))
			snprintf(r->alpn, sizeof(r->alpn), "%s", mbedtls_ssl_get_alpn_protocol(&ssl));
		/* TLS 1.3 may deliver a post-handshake message first. */
		do
			ret = mbedtls_ssl_read(&ssl, buf, sizeof(buf));
		while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET);
		assert_true(ret > 0);
		assert_int_equal(mbedtls_ssl_write(&ssl, (const unsigned char *)"pong\n", 5), 5);
		r->idle = tls_host_heap.bytes - base;
		r->released = mbedtls_ssl_idle_released(&ssl);
		mbedtls_ssl_close_notify(&ssl);
	}
	mbedtls_ssl_free(&ssl);
	close(fd);
	close(ls);
	if (client) {
		size_t n = fread(r->client, 1, sizeof(r->client) - 1, client);

		r->client[n] = '\0';
		pclose(client);
	}
	if (cfd >= 0)
		close(cfd);
	/* Everything the connection held is back. */
	assert_int_equal(tls_host_heap.bytes, base);
	server_free(&srv);
}

#define CLIENT "printf 'ping\\n' | timeout 30 openssl s_client -connect 127.0.0.1:%%d -brief -ign_eof %s 2>&1"

static void client_ok(const char *cert, const char *key, const char *opts, const char *version,
		      const char *suite)
{
	char cmd[512];
	struct result r;

	snprintf(cmd, sizeof(cmd), CLIENT, opts);
	serve(cert, key, cmd, NULL, 0, &r);
	if (r.handshake != 0)
		fail_msg("%s: handshake -0x%04x; client said:\n%s", opts, (unsigned)-r.handshake, r.client);
	assert_string_equal(r.version, version);
	if (suite && strcmp(r.suite, suite) != 0)
		fail_msg("%s: suite %s, expected %s", opts, r.suite, suite);
	/* ALPN: agreed when the client offers http/1.1, absent otherwise. */
	assert_string_equal(r.alpn, strstr(opts, "http/1.1") ? "http/1.1" : "");
	if (!strstr(r.client, "pong"))
		fail_msg("%s: no reply at the client:\n%s", opts, r.client);
	/* Idle between requests, the record buffers are freed (patch 0005):
	 * what is left is the bound tls.h's TLS_IDLE_BYTES rests on. */
	assert_true(r.released);
	assert_true(r.idle <= TLS_IDLE_BYTES);
	printf("  %-58s %s %s: handshake peak %zu B, established %zu B, idle %zu B\n", opts, r.version, r.suite,
	       r.hs_peak, r.established, r.idle);
}

static void client_refused(const char *cert, const char *key, const char *opts)
{
	char cmd[512];
	struct result r;

	snprintf(cmd, sizeof(cmd), CLIENT, opts);
	serve(cert, key, cmd, NULL, 0, &r);
	if (r.handshake == 0)
		fail_msg("%s: negotiated %s %s, should be refused", opts, r.version, r.suite);
	printf("  %-58s refused (-0x%04x)\n", opts, (unsigned)-r.handshake);
}

static int setup(void **state)
{
	return psa_crypto_init() == PSA_SUCCESS ? 0 : -1;
}

static void test_tls13(void **state)
{
	/* The suite is the server's first choice among the client's
	 * (net/tls/patches/0001), whatever the client's order: OpenSSL
	 * lists AES-256-GCM first, and with ChaCha20 last. */
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -alpn http/1.1", "TLSv1.3", "TLS1-3-CHACHA20-POLY1305-SHA256");
	client_ok("ec-cert.pem", "ec-key.pem",
		  "-tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256",
		  "TLSv1.3", "TLS1-3-CHACHA20-POLY1305-SHA256");
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256",
		  "TLSv1.3", "TLS1-3-AES-128-GCM-SHA256");
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256", "TLSv1.3",
		  "TLS1-3-AES-128-GCM-SHA256");
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -ciphersuites TLS_AES_256_GCM_SHA384", "TLSv1.3",
		  "TLS1-3-AES-256-GCM-SHA384");
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -ciphersuites TLS_CHACHA20_POLY1305_SHA256", "TLSv1.3",
		  "TLS1-3-CHACHA20-POLY1305-SHA256");
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -groups X25519", "TLSv1.3", NULL);
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_3 -groups P-256", "TLSv1.3", NULL);
	client_ok("rsa-cert.pem", "rsa-key.pem", "-tls1_3", "TLSv1.3", NULL);
}

static void test_tls12(void **state)
{
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_2 -alpn h2,http/1.1 -cipher ECDHE-ECDSA-AES128-GCM-SHA256",
		  "TLSv1.2",
		  "TLS-ECDHE-ECDSA-WITH-AES-128-GCM-SHA256");
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305", "TLSv1.2",
		  "TLS-ECDHE-ECDSA-WITH-CHACHA20-POLY1305-SHA256");
	client_ok("rsa-cert.pem", "rsa-key.pem", "-tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384", "TLSv1.2",
		  "TLS-ECDHE-RSA-WITH-AES-256-GCM-SHA384");
	/* 1.2 takes the server's order too (mbedTLS's own): ChaCha20 first. */
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_2 -cipher ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305",
		  "TLSv1.2", "TLS-ECDHE-ECDSA-WITH-CHACHA20-POLY1305-SHA256");
	/* X25519 key exchange in 1.2: with an RSA certificate (an ECDSA one
	 * needs its own curve, P-256, among the client's groups: RFC 8422). */
	client_ok("rsa-cert.pem", "rsa-key.pem", "-tls1_2 -groups X25519", "TLSv1.2", NULL);
	client_ok("ec-cert.pem", "ec-key.pem", "-tls1_2 -groups X25519:P-256", "TLSv1.2", NULL);
}

static void test_refused(void **state)
{
	client_refused("ec-cert.pem", "ec-key.pem", "-tls1_1 -cipher DEFAULT@SECLEVEL=0");
	client_refused("ec-cert.pem", "ec-key.pem", "-tls1_2 -cipher ECDHE-ECDSA-AES128-SHA");
	client_refused("rsa-cert.pem", "rsa-key.pem", "-tls1_2 -cipher AES128-GCM-SHA256");	/* static RSA */
	client_refused("ec-cert.pem", "ec-key.pem", "-tls1_3 -groups P-384");
	client_refused("ec-cert.pem", "ec-key.pem", "-tls1_2 -groups P-384");
}

static void test_garbage(void **state)
{
	static const unsigned char hello_start[] = { 0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03 };
	unsigned char junk[600];
	struct result r;

	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 37u + 11u);
	serve("ec-cert.pem", "ec-key.pem", NULL, junk, sizeof(junk), &r);
	assert_int_not_equal(r.handshake, 0);
	/* A ClientHello record header promising 512 bytes, then EOF. */
	serve("ec-cert.pem", "ec-key.pem", NULL, hello_start, sizeof(hello_start), &r);
	assert_int_not_equal(r.handshake, 0);
	/* A record header claiming more than a record may hold. */
	serve("ec-cert.pem", "ec-key.pem", NULL, "\x16\x03\x01\xff\xff", 5, &r);
	assert_int_not_equal(r.handshake, 0);
	serve("ec-cert.pem", "ec-key.pem", NULL, "GET / HTTP/1.1\r\n\r\n", 18, &r);
	assert_int_not_equal(r.handshake, 0);
}

/* Idle release (net/tls/patches/0005) over a real session: released after
 * a request and its reply; a wake without a free slot consumes nothing and
 * says WANT_READ, then goes on once one is free; after waking, a record
 * larger than the 4 KiB output buffer comes in and 12 KiB go out in 4 KiB
 * records, the incoming record counter carried across (a wrong one fails
 * the next record's authentication); and mbedtls_ssl_setup() refuses a
 * server context when no slot is free. */
#define IDLE_BIG 12000
static void idle_session(const char *opts)
{
	struct server srv;
	mbedtls_ssl_context ssl, refused;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	struct pollfd pfd;
	static unsigned char buf[16384], big[IDLE_BIG];
	static char out[65536];
	char cmd[1024];
	FILE *client;
	int ls, fd, ret;
	size_t base, got = 0, most = 0, n;
	long blocks;

	server_conf(&srv, "ec-cert.pem", "ec-key.pem");

	ls = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 4), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	/* ping, a pause (the server goes idle), then 12,000 bytes at once
	 * (s_client sends what it reads from stdin as one record, up to its
	 * 8 KiB buffer), then time for the reply. */
	snprintf(cmd, sizeof(cmd),
		 "(printf 'ping\\n'; sleep 1; head -c %d /dev/zero | tr '\\0' x; sleep 3) | "
		 "timeout 30 openssl s_client -connect 127.0.0.1:%d -quiet -ign_eof %s 2>/dev/null",
		 IDLE_BIG, ntohs(a.sin_port), opts);
	client = popen(cmd, "r");
	assert_non_null(client);
	fd = accept_client(ls);

	base = tls_host_heap.bytes;
	mbedtls_ssl_init(&ssl);
	assert_int_equal(mbedtls_ssl_setup(&ssl, &srv.conf), 0);
	assert_int_equal(tls_host_slots_now.used, 1);
	mbedtls_ssl_set_bio(&ssl, &fd, bio_send, bio_recv, NULL);
	do
		ret = mbedtls_ssl_handshake(&ssl);
	while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_WANT_WRITE);
	assert_int_equal(ret, 0);
	do
		ret = mbedtls_ssl_read(&ssl, buf, sizeof(buf));
	while (ret == MBEDTLS_ERR_SSL_WANT_READ || ret == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET);
	assert_int_equal(ret, 5);
	assert_memory_equal(buf, "ping\n", 5);
	assert_int_equal(mbedtls_ssl_write(&ssl, (const unsigned char *)"pong\n", 5), 5);
	/* Idle: no buffers, no slot. */
	assert_true(mbedtls_ssl_idle_released(&ssl));
	assert_int_equal(tls_host_slots_now.used, 0);
	assert_true(tls_host_heap.bytes - base <= TLS_IDLE_BYTES);

	/* No slot free: a new server context is refused and holds nothing... */
	tls_host_slots(0);
	blocks = tls_host_heap.blocks;
	mbedtls_ssl_init(&refused);
	assert_int_equal(mbedtls_ssl_setup(&refused, &srv.conf), MBEDTLS_ERR_SSL_ALLOC_FAILED);
	mbedtls_ssl_free(&refused);
	assert_int_equal(tls_host_heap.blocks, blocks);
	/* ...and the idle one, its next record there, waits without reading it. */
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 20000), 1);
	assert_int_equal(mbedtls_ssl_read(&ssl, buf, sizeof(buf)), MBEDTLS_ERR_SSL_WANT_READ);
	assert_true(mbedtls_ssl_idle_released(&ssl));
	assert_int_equal(tls_host_heap.blocks, blocks);
	assert_int_equal(recv(fd, buf, 1, MSG_PEEK | MSG_DONTWAIT), 1);
	tls_host_slots(-1);

	/* A slot again: the big record(s), then 12,000 bytes back. */
	while (got < IDLE_BIG) {
		ret = mbedtls_ssl_read(&ssl, buf, sizeof(buf));
		if (ret == MBEDTLS_ERR_SSL_WANT_READ)
			continue;
		assert_true(ret > 0);
		for (int i = 0; i < ret; i++)
			assert_int_equal(buf[i], 'x');
		got += (size_t)ret;
		most = (size_t)ret > most ? (size_t)ret : most;
	}
	assert_int_equal(got, IDLE_BIG);
	assert_true(most > 4096);	/* a record larger than the output buffer came in */
	memset(big, 'y', sizeof(big));
	for (size_t off = 0; off < sizeof(big); off += (size_t)ret) {
		ret = mbedtls_ssl_write(&ssl, big + off, sizeof(big) - off);
		assert_true(ret > 0 && ret <= 4096);
		/* each write releases again once its record is out */
		assert_true(mbedtls_ssl_idle_released(&ssl));
	}
	assert_int_equal(tls_host_slots_now.used, 0);
	mbedtls_ssl_close_notify(&ssl);
	mbedtls_ssl_free(&ssl);
	assert_int_equal(tls_host_slots_now.used, 0);
	close(fd);
	close(ls);
	n = fread(out, 1, sizeof(out) - 1, client);
	out[n] = '\0';
	pclose(client);
	assert_non_null(strstr(out, "pong\n"));
	assert_int_equal(n - 5, (size_t)IDLE_BIG);	/* every y came back */
	assert_int_equal(tls_host_heap.bytes, base);
	printf("  idle release %-48s wake waited without a slot, then a %zu-byte record in, %d bytes out\n",
	       opts, most, IDLE_BIG);
	server_free(&srv);
}

static void test_idle_release(void **state)
{
	idle_session("-tls1_3");
	idle_session("-tls1_2");
	idle_session("-tls1_2 -cipher ECDHE-ECDSA-CHACHA20-POLY1305");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tls13),
		cmocka_unit_test(test_tls12),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_idle_release),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
