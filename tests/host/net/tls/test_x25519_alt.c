/* net/tls/x25519_alt.c: vireo's Montgomery ladder in its own Curve25519
 * field arithmetic (MBEDTLS_ECP_MUL_MXZ_ALT, net/tls/patches/0002),
 * driven through the public mbedtls_ecp_mul() as PSA and ECDH drive it:
 * RFC 7748's scalar multiplication vectors (5.2), its Diffie-Hellman example
 * (6.1) and the 1,000-fold iteration (5.2), agreement over random key
 * pairs, a low-order point refused, each multiplication counted by the
 * ladder (so mbedTLS's own ladder cannot pass these in its place), and
 * that P-256 still goes through mbedTLS's own code (a key pair checks out).
 * The TLS heap is tests/host/net/tls/tls_host.c's: nothing may be left allocated. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mbedtls/ecp.h"
#include "tests/host/net/tls/tls_host.h"

extern unsigned long x25519_alt_ladders;	/* net/tls/x25519_alt.c, HOST_TEST */

static void unhex(unsigned char out[32], const char *hex)
{
	for (int i = 0; i < 32; i++)
		sscanf(hex + 2 * i, "%2hhx", &out[i]);
}

/* X25519(k, u) as RFC 7748 defines it (the scalar clamped, the u-coordinate's
 * top bit ignored), by mbedtls_ecp_mul(). Returns mbedTLS's error. */
static int x25519(unsigned char out[32], const unsigned char k_in[32], const unsigned char u[32])
{
	mbedtls_ecp_group grp;
	mbedtls_ecp_point P, R;
	mbedtls_mpi k;
	unsigned char kc[32];
	size_t olen = 0;
	int ret;

	memcpy(kc, k_in, 32);
	kc[0] &= 248;
	kc[31] &= 127;
	kc[31] |= 64;
	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&P);
	mbedtls_ecp_point_init(&R);
	mbedtls_mpi_init(&k);
	ret = mbedtls_ecp_group_load(&grp, MBEDTLS_ECP_DP_CURVE25519);
	if (!ret)
		ret = mbedtls_mpi_read_binary_le(&k, kc, 32);
	if (!ret)
		ret = mbedtls_ecp_point_read_binary(&grp, &P, u, 32);
	if (!ret)
		ret = mbedtls_ecp_mul(&grp, &R, &k, &P, tls_host_rng, NULL);
	if (!ret)
		ret = mbedtls_ecp_point_write_binary(&grp, &R, MBEDTLS_ECP_PF_UNCOMPRESSED, &olen, out, 32);
	if (!ret)
		assert_int_equal(olen, 32);
	mbedtls_mpi_free(&k);
	mbedtls_ecp_point_free(&R);
	mbedtls_ecp_point_free(&P);
	mbedtls_ecp_group_free(&grp);
	return ret;
}

static void expect(const char *k_hex, const char *u_hex, const char *want_hex)
{
	unsigned char k[32], u[32], want[32], got[32];

	unsigned long ladders = x25519_alt_ladders;

	unhex(k, k_hex);
	unhex(u, u_hex);
	unhex(want, want_hex);
	assert_int_equal(x25519(got, k, u), 0);
	assert_int_equal(x25519_alt_ladders, ladders + 1);	/* vireo's ladder ran */
	assert_memory_equal(got, want, 32);
}

static void test_rfc7748_vectors(void **state)
{
	(void)state;
	expect("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
	       "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
	       "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
	/* The top bit of this u is set: it must be ignored. */
	expect("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
	       "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
	       "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");
	assert_int_equal(tls_host_heap.blocks, 0);
}

static void test_rfc7748_diffie_hellman(void **state)
{
	static const char nine[] = "0900000000000000000000000000000000000000000000000000000000000000";
	static const char alice[] = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
	static const char bob[] = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb";
	static const char alice_pub[] = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
	static const char bob_pub[] = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
	static const char shared[] = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";

	(void)state;
	expect(alice, nine, alice_pub);
	expect(bob, nine, bob_pub);
	expect(alice, bob_pub, shared);
	expect(bob, alice_pub, shared);
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* k, u = X25519(k, u), k: after 1 and after 1,000 rounds. */
static void test_rfc7748_iterated(void **state)
{
	unsigned char k[32] = { 9 }, u[32] = { 9 }, r[32], want1[32], want1000[32];

	(void)state;
	unhex(want1, "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
	unhex(want1000, "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
	for (int i = 1; i <= 1000; i++) {
		assert_int_equal(x25519(r, k, u), 0);
		memcpy(u, k, 32);
		memcpy(k, r, 32);
		if (i == 1)
			assert_memory_equal(k, want1, 32);
	}
	assert_memory_equal(k, want1000, 32);
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* Random key pairs: X25519(a, X25519(b, 9)) == X25519(b, X25519(a, 9)),
 * each with its own projective randomisation. */
static void test_agreement_random(void **state)
{
	static const unsigned char nine[32] = { 9 };
	unsigned char a[32], b[32], pa[32], pb[32], sa[32], sb[32];

	(void)state;
	for (int i = 0; i < 64; i++) {
		tls_host_rng(NULL, a, sizeof(a));
		tls_host_rng(NULL, b, sizeof(b));
		assert_int_equal(x25519(pa, a, nine), 0);
		assert_int_equal(x25519(pb, b, nine), 0);
		assert_int_equal(x25519(sa, a, pb), 0);
		assert_int_equal(x25519(sb, b, pa), 0);
		assert_memory_equal(sa, sb, 32);
		assert_memory_not_equal(pa, pb, 32);
	}
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* Low-order points (u = 0, u = p, which is 0 mod p though below 2^255,
 * u = 1 of order 4, u = p - 1) never reach the ladder: mbedTLS's public-key
 * check refuses them first, so the shared secret cannot be forced to zero. */
static void test_low_order_refused(void **state)
{
	static const char *const bad[] = {
		"0000000000000000000000000000000000000000000000000000000000000000",
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"0100000000000000000000000000000000000000000000000000000000000000",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	};
	unsigned char key[32], u[32], out[32];
	unsigned long ladders = x25519_alt_ladders;

	(void)state;
	unhex(key, "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unhex(u, bad[i]);
		assert_int_equal(x25519(out, key, u), MBEDTLS_ERR_ECP_INVALID_KEY);
	}
	assert_int_equal(x25519_alt_ladders, ladders);
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* P-256 is not the hooks' group: a generated key pair must check out
 * (mbedtls_ecp_check_pub_priv multiplies again with mbedTLS's own code). */
static void test_p256_untouched(void **state)
{
	mbedtls_ecp_keypair kp;

	(void)state;
	mbedtls_ecp_keypair_init(&kp);
	assert_int_equal(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, &kp, tls_host_rng, NULL), 0);
	assert_int_equal(mbedtls_ecp_check_pub_priv(&kp, &kp, tls_host_rng, NULL), 0);
	mbedtls_ecp_keypair_free(&kp);
	assert_int_equal(tls_host_heap.blocks, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7748_vectors),
		cmocka_unit_test(test_rfc7748_diffie_hellman),
		cmocka_unit_test(test_rfc7748_iterated),
		cmocka_unit_test(test_agreement_random),
		cmocka_unit_test(test_low_order_refused),
		cmocka_unit_test(test_p256_untouched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
