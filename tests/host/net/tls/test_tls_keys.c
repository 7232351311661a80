/* net/tls/tls_keys.c, the HTTPS certificate/key loader, with good and bad
 * input: fixtures made by openssl at build time (tests/host/net/tls/host.mk). Every
 * failure must come back as -1 with a message naming the problem, leave
 * nothing allocated, and never touch memory it should not (ASan). The TLS
 * heap is tests/host/net/tls/tls_host.c's: counted, with a failure switch. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/tls/tls.h"
#include "net/tls/tls_keys.h"
#include "tests/host/net/tls/tls_host.h"

static char err[160];

static int load(struct tls_keys *k, struct tls_blob c, struct tls_blob key)
{
	err[0] = '\0';
	return tls_keys_load(k, c.p, c.n, key.p, key.n, tls_host_rng, NULL, err, sizeof(err));
}

/* Loads, expects failure with msg in the message, blaming the file it is
 * about (the boot log names that file), and nothing left over. */
static void expect_fail_blame(const char *cert, const char *key, const char *msg, int blame)
{
	struct tls_blob c = tls_host_fixture(cert), kb = tls_host_fixture(key);
	struct tls_keys k;

	assert_int_equal(load(&k, c, kb), -1);
	if (!strstr(err, msg))
		fail_msg("%s + %s: \"%s\" does not say \"%s\"", cert, key, err, msg);
	if (tls_keys_blame(err) != blame)
		fail_msg("%s + %s: \"%s\" blamed on %d, not %d", cert, key, err, tls_keys_blame(err), blame);
	assert_int_equal(k.loaded, 0);
	tls_keys_free(&k);
	assert_int_equal(tls_host_heap.blocks, 0);
	free(c.p);
	free(kb.p);
}

#define CERT TLS_KEYS_BLAME_CERT
#define KEY TLS_KEYS_BLAME_KEY
#define BOTH TLS_KEYS_BLAME_BOTH

static void expect_ok(const char *cert, const char *key, const char *desc)
{
	struct tls_blob c = tls_host_fixture(cert), kb = tls_host_fixture(key);
	struct tls_keys k;
	char d[32];

	if (load(&k, c, kb) != 0)
		fail_msg("%s + %s: %s", cert, key, err);
	assert_int_equal(k.loaded, 1);
	assert_string_equal(tls_keys_describe(&k, d, sizeof(d)), desc);
	tls_keys_free(&k);
	assert_int_equal(tls_host_heap.blocks, 0);
	free(c.p);
	free(kb.p);
}

static void test_good_pairs(void **state)
{
	expect_ok("ec-cert.pem", "ec-key.pem", "EC P-256");
	expect_ok("rsa-cert.pem", "rsa-key.pem", "RSA 2048");
	expect_ok("ec-cert.der", "ec-key.der", "EC P-256");
}

/* Self-signed leaves are not CA-issued (https.hsts= is withheld for them);
 * a leaf signed by another certificate is, alone or with its chain. */
static void test_ca_issued(void **state)
{
	static const struct { const char *cert, *key; int want; } t[] = {
		{ "ec-cert.pem", "ec-key.pem", 0 },
		{ "rsa-cert.pem", "rsa-key.pem", 0 },
		{ "issued-cert.pem", "issued-key.pem", 1 },
		{ "issued-chain.pem", "issued-key.pem", 1 },
	};
	struct tls_keys k;

	(void)state;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		struct tls_blob c = tls_host_fixture(t[i].cert), kb = tls_host_fixture(t[i].key);

		if (load(&k, c, kb) != 0)
			fail_msg("%s + %s: %s", t[i].cert, t[i].key, err);
		if (tls_keys_ca_issued(&k) != t[i].want)
			fail_msg("%s: CA-issued %d, want %d", t[i].cert, tls_keys_ca_issued(&k), t[i].want);
		tls_keys_free(&k);
		free(c.p);
		free(kb.p);
	}
	memset(&k, 0, sizeof k);
	assert_int_equal(tls_keys_ca_issued(&k), 0);	/* nothing loaded */
}

/* A DER key whose last byte is zero (tls.mk draws keys until one is): not
 * a C string's NUL to drop. */
static void test_der_ending_in_zero(void **state)
{
	struct tls_blob kb = tls_host_fixture("ec00-key.der");

	assert_int_equal(kb.p[kb.n - 1], 0);
	free(kb.p);
	expect_ok("ec00-cert.pem", "ec00-key.der", "EC P-256");
}

/* The length may count a trailing NUL (a C string) or not. */
static void test_trailing_nul(void **state)
{
	struct tls_blob c = tls_host_fixture("ec-cert.pem"), kb = tls_host_fixture("ec-key.pem");
	struct tls_keys k;

	c.p = realloc(c.p, c.n + 1);
	c.p[c.n++] = '\0';
	assert_int_equal(load(&k, c, kb), 0);
	tls_keys_free(&k);
	assert_int_equal(tls_host_heap.blocks, 0);
	free(c.p);
	free(kb.p);
}

static void test_bad_pairs(void **state)
{
	expect_fail_blame("ec-cert.pem", "ec2-key.pem", "does not match", BOTH);
	expect_fail_blame("ec-cert.pem", "rsa-key.pem", "does not match", BOTH);
	expect_fail_blame("rsa-cert.pem", "ec-key.pem", "does not match", BOTH);
	expect_fail_blame("rsa1024-cert.pem", "rsa1024-key.pem", "under 2048", KEY);
	/* P-384 is not compiled in: neither its certificate nor its key
	 * parses, and the message says which kinds do. */
	expect_fail_blame("p384-cert.pem", "p384-key.pem", "certificate: does not parse as X.509", CERT);
	expect_fail_blame("ec-cert.pem", "p384-key.pem", "or EC P-256", KEY);
	expect_fail_blame("ec-cert.pem", "enc-key.pem", "encrypted", KEY);
	/* Swapped: a key where the certificate goes and the other way round. */
	expect_fail_blame("ec-key.pem", "ec-cert.pem", "certificate:", CERT);
	expect_fail_blame("ec-cert.pem", "ec-cert.pem", "key:", KEY);
}

static void test_empty_and_huge(void **state)
{
	struct tls_blob c = tls_host_fixture("ec-cert.pem"), kb = tls_host_fixture("ec-key.pem");
	struct tls_blob none = { c.p, 0 };
	struct tls_blob big = { calloc(1, TLS_KEYS_MAX_INPUT + 1), TLS_KEYS_MAX_INPUT + 1 };
	struct tls_keys k;

	assert_int_equal(load(&k, none, kb), -1);
	assert_non_null(strstr(err, "certificate: empty"));
	assert_int_equal(load(&k, c, none), -1);
	assert_non_null(strstr(err, "key: empty"));
	assert_int_equal(tls_keys_load(&k, NULL, 10, kb.p, kb.n, tls_host_rng, NULL, err, sizeof(err)), -1);
	assert_int_equal(load(&k, big, kb), -1);
	assert_non_null(strstr(err, "certificate: larger than 64 KiB"));
	assert_int_equal(tls_keys_blame(err), TLS_KEYS_BLAME_CERT);
	assert_int_equal(load(&k, c, big), -1);
	assert_non_null(strstr(err, "key: larger than 64 KiB"));
	assert_int_equal(tls_keys_blame(err), TLS_KEYS_BLAME_KEY);
	assert_int_equal(tls_host_heap.blocks, 0);
	free(big.p);
	free(c.p);
	free(kb.p);
}

/* Garbage and every truncation (in steps) of a good certificate and key:
 * refused, not crashed, nothing leaked. */
static void test_garbage_and_truncation(void **state)
{
	struct tls_blob c = tls_host_fixture("ec-cert.pem"), kb = tls_host_fixture("ec-key.pem");
	struct tls_blob d = tls_host_fixture("ec-cert.der");
	struct tls_blob g = { malloc(2000), 2000 };
	struct tls_keys k;

	for (size_t i = 0; i < g.n; i++)
		g.p[i] = (unsigned char)(i * 131u + 7u);
	assert_int_equal(load(&k, g, kb), -1);
	assert_non_null(strstr(err, "certificate:"));
	assert_int_equal(load(&k, c, g), -1);
	assert_non_null(strstr(err, "key:"));
	for (size_t n = 1; n < c.n - 30; n += 7) {
		struct tls_blob t = { c.p, n };

		assert_int_equal(load(&k, t, kb), -1);
	}
	for (size_t n = 1; n < kb.n - 30; n += 5) {
		struct tls_blob t = { kb.p, n };

		assert_int_equal(load(&k, c, t), -1);
	}
	for (size_t n = 1; n < d.n; n += 3) {
		struct tls_blob t = { d.p, n };

		assert_int_equal(load(&k, t, kb), -1);
	}
	/* One flipped byte inside the base64 of the certificate's signature
	 * still parses (mbedTLS does not verify a self-signed leaf), but one in
	 * the public key makes the pair mismatch or not parse: never 0. */
	c.p[c.n / 3] ^= 0x01;
	assert_int_equal(load(&k, c, kb), -1);
	assert_int_equal(tls_host_heap.blocks, 0);
	free(c.p);
	free(kb.p);
	free(d.p);
	free(g.p);
}

/* Each allocation in turn fails: the load fails cleanly every time until
 * there are enough, then succeeds. */
static void test_allocation_failures(void **state)
{
	struct tls_blob c = tls_host_fixture("rsa-cert.pem"), kb = tls_host_fixture("rsa-key.pem");
	struct tls_keys k;
	long i;

	for (i = 0; i < 10000; i++) {
		int r;

		tls_host_fail_alloc(i);
		r = load(&k, c, kb);
		tls_keys_free(&k);
		assert_int_equal(tls_host_heap.blocks, 0);
		if (r == 0)
			break;
		assert_int_equal(r, -1);
	}
	tls_host_fail_alloc(-1);
	assert_true(i > 2 && i < 10000);
	free(c.p);
	free(kb.p);
}

/* ---- the TLS clients' CA bundle (tls_ca_load) ---- */

static int ca_load(mbedtls_x509_crt *ca, const void *p, size_t n)
{
	err[0] = '\0';
	return tls_ca_load(ca, p, n, err, sizeof(err));
}

static void ca_free(mbedtls_x509_crt *ca)
{
	mbedtls_x509_crt_free(ca);
	assert_int_equal(tls_host_heap.blocks, 0);
}

static void test_ca_bundles(void **state)
{
	struct tls_blob one = tls_host_fixture("ec-cert.pem"), chain = tls_host_fixture("issued-chain.pem"),
			der = tls_host_fixture("ec-cert.der"), rsa = tls_host_fixture("rsa-cert.pem");
	static const char junk[] = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n";
	mbedtls_x509_crt ca;
	char *buf;
	size_t n;

	(void)state;
	assert_int_equal(ca_load(&ca, one.p, one.n), 1);
	assert_string_equal(err, "1 CA certificate");
	ca_free(&ca);
	assert_int_equal(ca_load(&ca, chain.p, chain.n), 2);
	assert_string_equal(err, "2 CA certificates");
	ca_free(&ca);
	assert_int_equal(ca_load(&ca, der.p, der.n), 1);
	ca_free(&ca);
	/* one unreadable certificate among good ones: skipped and said */
	buf = malloc(one.n + sizeof junk + rsa.n);
	memcpy(buf, one.p, one.n);
	memcpy(buf + one.n, junk, sizeof junk - 1);
	memcpy(buf + one.n + sizeof junk - 1, rsa.p, rsa.n);
	n = one.n + sizeof junk - 1 + rsa.n;
	assert_int_equal(ca_load(&ca, buf, n), 2);
	assert_non_null(strstr(err, "1 unreadable, skipped"));
	ca_free(&ca);
	/* only unreadable ones, garbage, nothing: refused, nothing kept */
	assert_int_equal(ca_load(&ca, junk, sizeof junk - 1), -1);
	assert_non_null(strstr(err, "no certificate could be read"));
	ca_free(&ca);
	assert_int_equal(ca_load(&ca, "hello", 5), -1);
	ca_free(&ca);
	assert_int_equal(ca_load(&ca, "", 0), -1);
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(ca_load(&ca, NULL, 0), -1);
	free(buf);
	free(one.p);
	free(chain.p);
	free(der.p);
	free(rsa.p);
}

/* The bounds: TLS_CA_MAX_INPUT bytes and TLS_CA_MAX_CERTS certificates, one
 * past each refused; the heap a full-size bundle costs (the Debian system
 * bundle, when installed) within TLS_CA_HEAP_BYTES (net/tls/tls.h). */
static void test_ca_bounds(void **state)
{
	struct tls_blob one = tls_host_fixture("ec-cert.pem");
	mbedtls_x509_crt ca;
	size_t cap = (TLS_CA_MAX_CERTS + 1) * one.n;
	char *buf = malloc(cap > TLS_CA_MAX_INPUT + 1 ? cap : TLS_CA_MAX_INPUT + 1);
	FILE *f;

	(void)state;
	assert_true(cap <= TLS_CA_MAX_INPUT);
	for (int i = 0; i <= TLS_CA_MAX_CERTS; i++)
		memcpy(buf + i * one.n, one.p, one.n);
	assert_int_equal(ca_load(&ca, buf, TLS_CA_MAX_CERTS * one.n), TLS_CA_MAX_CERTS);
	ca_free(&ca);
	assert_int_equal(ca_load(&ca, buf, cap), -1);
	assert_non_null(strstr(err, "more than"));
	ca_free(&ca);
	memset(buf, 'A', TLS_CA_MAX_INPUT + 1);
	assert_int_equal(ca_load(&ca, buf, TLS_CA_MAX_INPUT + 1), -1);
	assert_non_null(strstr(err, "larger than"));
	ca_free(&ca);
	f = fopen("/etc/ssl/certs/ca-certificates.crt", "rb");
	if (f) {
		size_t n = fread(buf, 1, TLS_CA_MAX_INPUT, f);
		int got;

		fclose(f);
		tls_host_peak_reset();
		got = ca_load(&ca, buf, n);
		/* with this configuration's algorithms (no P-384, no SHA-1)
		 * 83 of Debian 12's 144 roots parse: the rest are skipped */
		if (got < 50)
			fail_msg("the system bundle: %d, %s", got, err);
		printf("CA bundle: /etc/ssl/certs/ca-certificates.crt, %zu bytes, %s: %zu bytes of "
		       "TLS heap (peak %zu), %zu a certificate; TLS_CA_HEAP_BYTES %u\n", n, err,
		       tls_host_heap.bytes, tls_host_heap.peak, tls_host_heap.bytes / (size_t)got,
		       (unsigned)TLS_CA_HEAP_BYTES);
		/* kept: within its bound; while parsing, a copy of the input too */
		assert_true(tls_host_heap.bytes <= TLS_CA_HEAP_BYTES);
		assert_true(tls_host_heap.peak <= TLS_CA_HEAP_BYTES + TLS_CA_MAX_INPUT + 64);
		ca_free(&ca);
	}
	free(buf);
	free(one.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_pairs),
		cmocka_unit_test(test_ca_issued),
		cmocka_unit_test(test_der_ending_in_zero),
		cmocka_unit_test(test_trailing_nul),
		cmocka_unit_test(test_bad_pairs),
		cmocka_unit_test(test_empty_and_huge),
		cmocka_unit_test(test_garbage_and_truncation),
		cmocka_unit_test(test_allocation_failures),
		cmocka_unit_test(test_ca_bundles),
		cmocka_unit_test(test_ca_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
