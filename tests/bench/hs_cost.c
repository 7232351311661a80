/* What one TLS handshake costs the server's CPU natively, by its public-key
 * operations, with vireo's mbedTLS configuration (net/tls/mbedtls_config.h,
 * net/tls/x25519_alt.c) built -O2 for the host: an X25519 key pair and
 * shared secret (the ECDHE of a TLS 1.3 handshake offering X25519), the
 * same on P-256, and a deterministic P-256 ECDSA signature (CertificateVerify
 * with the key vireo generates). Prints microseconds per operation and per
 * handshake; the defaults of runtime/http/hsgate.h are derived from the
 * handshake figure (docs/appliance.md). make bench-hs-cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "mbedtls/ecdh.h"
#include "mbedtls/ecdsa.h"
#include "mbedtls/ecp.h"

static int rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	while (len) {
		ssize_t n = getrandom(out, len, 0);

		if (n <= 0)
			return -1;
		out += n;
		len -= (size_t)n;
	}
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* One ECDHE on grp_id: our key pair, and the secret with a peer's key. */
static double ecdhe_us(mbedtls_ecp_group_id id, int n)
{
	mbedtls_ecp_group grp;
	mbedtls_mpi d, peer_d, z;
	mbedtls_ecp_point q, peer_q;
	double t0, t;

	mbedtls_ecp_group_init(&grp);
	mbedtls_mpi_init(&d), mbedtls_mpi_init(&peer_d), mbedtls_mpi_init(&z);
	mbedtls_ecp_point_init(&q), mbedtls_ecp_point_init(&peer_q);
	if (mbedtls_ecp_group_load(&grp, id) || mbedtls_ecdh_gen_public(&grp, &peer_d, &peer_q, rng, NULL))
		return -1;
	t0 = now_us();
	for (int i = 0; i < n; i++)
		if (mbedtls_ecdh_gen_public(&grp, &d, &q, rng, NULL) ||
		    mbedtls_ecdh_compute_shared(&grp, &z, &peer_q, &d, rng, NULL))
			return -1;
	t = (now_us() - t0) / n;
	mbedtls_ecp_group_free(&grp);
	mbedtls_mpi_free(&d), mbedtls_mpi_free(&peer_d), mbedtls_mpi_free(&z);
	mbedtls_ecp_point_free(&q), mbedtls_ecp_point_free(&peer_q);
	return t;
}

static double sign_us(int n)
{
	mbedtls_ecdsa_context k;
	unsigned char hash[32] = { 1 }, sig[MBEDTLS_ECDSA_MAX_LEN];
	size_t len;
	double t0, t;

	mbedtls_ecdsa_init(&k);
	if (mbedtls_ecdsa_genkey(&k, MBEDTLS_ECP_DP_SECP256R1, rng, NULL))
		return -1;
	t0 = now_us();
	for (int i = 0; i < n; i++) {
		hash[1] = (unsigned char)i;
		if (mbedtls_ecdsa_write_signature(&k, MBEDTLS_MD_SHA256, hash, sizeof hash, sig, sizeof sig, &len,
						  rng, NULL))
			return -1;
	}
	t = (now_us() - t0) / n;
	mbedtls_ecdsa_free(&k);
	return t;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	double x = ecdhe_us(MBEDTLS_ECP_DP_CURVE25519, n);
	double p = ecdhe_us(MBEDTLS_ECP_DP_SECP256R1, n);
	double s = sign_us(n);

	if (x < 0 || p < 0 || s < 0) {
		fprintf(stderr, "hs_cost: an mbedTLS call failed\n");
		return 1;
	}
	printf("X25519 ECDHE (key pair + secret): %.0f us\n", x);
	printf("P-256 ECDHE (key pair + secret):  %.0f us\n", p);
	printf("P-256 ECDSA sign (deterministic): %.0f us\n", s);
	printf("server handshake, X25519 + P-256 signature: %.0f us (%.0f a second on one CPU)\n", x + s,
	       1e6 / (x + s));
	printf("server handshake, P-256 + P-256 signature:  %.0f us (%.0f a second on one CPU)\n", p + s,
	       1e6 / (p + s));
	return 0;
}
