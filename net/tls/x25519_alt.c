/*
 * Curve25519 field arithmetic for mbedTLS's Montgomery ladder
 * (MBEDTLS_ECP_INTERNAL_ALT with MBEDTLS_ECP_DOUBLE_ADD_MXZ_ALT and
 * MBEDTLS_ECP_NORMALIZE_MXZ_ALT in net/tls/mbedtls_config.h; docs/https.md).
 *
 * Why: every TLS 1.3 handshake, resumed or not, makes two X25519 scalar
 * multiplications (our key share and the shared secret). mbedTLS runs them
 * over its general bignum code: each of the ladder's 255 steps is nine
 * multiplications of heap-allocated, variable-length integers with a
 * generic reduction, and under QEMU's TCG that was most of a handshake's
 * time (QMP samples: mbedtls_mpi_sub_abs, _cmp_mpi, _core_mla, _grow,
 * memcpy/memset, the heap). mbedTLS's hooks let a port replace the ladder
 * step and the final normalisation for groups it is "capable" of; this file
 * is capable of Curve25519 only (P-256 keeps mbedTLS's code) and does the
 * step in a fixed representation instead: a field element mod
 * p = 2^255 - 19 as five 51-bit limbs in 64-bit words, products as
 * unsigned __int128 (one mulq each), reduction by folding 2^255 = 19.
 * The ladder itself (bit loop, constant-time swaps, the projective
 * randomisation) stays mbedTLS's.
 *
 * Constant time: no branch or memory index depends on the values; the one
 * branch is normalisation's Z = 0 test, which is about the peer's public
 * point (a low-order point gives Z = 0) and fails the multiplication the
 * way mbedTLS's own inversion does (MBEDTLS_ERR_MPI_NOT_ACCEPTABLE).
 *
 * The formulas are those of ecp.c's own ecp_double_add_mxz() (the
 * hyperelliptic.org "mladd-1987-m" ladder step, a24 = (A + 2) / 4 = 121666)
 * and an inversion by Fermat, z^(p-2). tests/host/test_x25519.c checks the
 * result through mbedtls_ecp_mul() against RFC 7748's vectors, and
 * test_tls_server handshakes with OpenSSL over X25519 through it.
 */
#include "mbedtls/ecp.h"
#include "mbedtls/bignum.h"

typedef unsigned __int128 x25519_u128;
typedef unsigned long long x25519_u64;
typedef x25519_u64 x25519_fe[5];

#define X25519_MASK ((1ull << 51) - 1)

_Static_assert(sizeof(mbedtls_mpi_uint) == 8, "64-bit bignum limbs");

/* mbedTLS's private hook prototypes (library/ecp_internal_alt.h). */
unsigned char mbedtls_internal_ecp_grp_capable(const mbedtls_ecp_group *grp);
int mbedtls_internal_ecp_init(const mbedtls_ecp_group *grp);
void mbedtls_internal_ecp_free(const mbedtls_ecp_group *grp);
int mbedtls_internal_ecp_double_add_mxz(const mbedtls_ecp_group *grp, mbedtls_ecp_point *R, mbedtls_ecp_point *S,
					const mbedtls_ecp_point *P, const mbedtls_ecp_point *Q,
					const mbedtls_mpi *d);
int mbedtls_internal_ecp_normalize_mxz(const mbedtls_ecp_group *grp, mbedtls_ecp_point *P);

/* Limbs to below 2^51 each (plus at most 2^13 in limb 1), value mod p kept. */
static void x25519_carry(x25519_fe a)
{
	x25519_u64 c;

	c = a[0] >> 51; a[0] &= X25519_MASK; a[1] += c;
	c = a[1] >> 51; a[1] &= X25519_MASK; a[2] += c;
	c = a[2] >> 51; a[2] &= X25519_MASK; a[3] += c;
	c = a[3] >> 51; a[3] &= X25519_MASK; a[4] += c;
	c = a[4] >> 51; a[4] &= X25519_MASK; a[0] += 19 * c;
	c = a[0] >> 51; a[0] &= X25519_MASK; a[1] += c;
}

static void x25519_add(x25519_fe r, const x25519_fe a, const x25519_fe b)
{
	for (int i = 0; i < 5; i++)
		r[i] = a[i] + b[i];
	x25519_carry(r);
}

/* a - b + 2p: limbs of carried inputs stay non-negative. */
static void x25519_sub(x25519_fe r, const x25519_fe a, const x25519_fe b)
{
	r[0] = a[0] + 0xfffffffffffdaull - b[0];
	for (int i = 1; i < 5; i++)
		r[i] = a[i] + 0xffffffffffffeull - b[i];
	x25519_carry(r);
}

/* Inputs carried (limbs < 2^52): every column sum stays below 2^116. */
static void x25519_mul(x25519_fe r, const x25519_fe a, const x25519_fe b)
{
	x25519_u64 b1 = 19 * b[1], b2 = 19 * b[2], b3 = 19 * b[3], b4 = 19 * b[4];
	x25519_u128 t0, t1, t2, t3, t4;
	x25519_u64 c;

	t0 = (x25519_u128)a[0] * b[0] + (x25519_u128)a[1] * b4 + (x25519_u128)a[2] * b3 +
	     (x25519_u128)a[3] * b2 + (x25519_u128)a[4] * b1;
	t1 = (x25519_u128)a[0] * b[1] + (x25519_u128)a[1] * b[0] + (x25519_u128)a[2] * b4 +
	     (x25519_u128)a[3] * b3 + (x25519_u128)a[4] * b2;
	t2 = (x25519_u128)a[0] * b[2] + (x25519_u128)a[1] * b[1] + (x25519_u128)a[2] * b[0] +
	     (x25519_u128)a[3] * b4 + (x25519_u128)a[4] * b3;
	t3 = (x25519_u128)a[0] * b[3] + (x25519_u128)a[1] * b[2] + (x25519_u128)a[2] * b[1] +
	     (x25519_u128)a[3] * b[0] + (x25519_u128)a[4] * b4;
	t4 = (x25519_u128)a[0] * b[4] + (x25519_u128)a[1] * b[3] + (x25519_u128)a[2] * b[2] +
	     (x25519_u128)a[3] * b[1] + (x25519_u128)a[4] * b[0];
	t1 += (x25519_u64)(t0 >> 51);
	t2 += (x25519_u64)(t1 >> 51);
	t3 += (x25519_u64)(t2 >> 51);
	t4 += (x25519_u64)(t3 >> 51);
	c = (x25519_u64)(t4 >> 51);
	r[0] = ((x25519_u64)t0 & X25519_MASK) + 19 * c;
	r[1] = (x25519_u64)t1 & X25519_MASK;
	r[2] = (x25519_u64)t2 & X25519_MASK;
	r[3] = (x25519_u64)t3 & X25519_MASK;
	r[4] = (x25519_u64)t4 & X25519_MASK;
	r[1] += r[0] >> 51;
	r[0] &= X25519_MASK;
}

static void x25519_mul_small(x25519_fe r, const x25519_fe a, x25519_u64 k)
{
	x25519_u128 t;
	x25519_u64 c = 0;

	for (int i = 0; i < 5; i++) {
		t = (x25519_u128)a[i] * k + c;
		r[i] = (x25519_u64)t & X25519_MASK;
		c = (x25519_u64)(t >> 51);
	}
	r[0] += 19 * c;
	r[1] += r[0] >> 51;
	r[0] &= X25519_MASK;
}

/* From a bignum below 2^256 (mbedTLS keeps these reduced mod p). */
static void x25519_from_mpi(x25519_fe r, const mbedtls_mpi *X)
{
	x25519_u64 w[4] = { 0, 0, 0, 0 };
	size_t n = X->MBEDTLS_PRIVATE(n) < 4 ? X->MBEDTLS_PRIVATE(n) : 4;

	for (size_t i = 0; i < n; i++)
		w[i] = X->MBEDTLS_PRIVATE(p)[i];
	r[0] = w[0] & X25519_MASK;
	r[1] = ((w[0] >> 51) | (w[1] << 13)) & X25519_MASK;
	r[2] = ((w[1] >> 38) | (w[2] << 26)) & X25519_MASK;
	r[3] = ((w[2] >> 25) | (w[3] << 39)) & X25519_MASK;
	r[4] = w[3] >> 12;	/* up to 52 bits: x25519_mul takes it */
	x25519_carry(r);
}

/* Fully reduced into [0, p), then into X as four 64-bit limbs. */
static int x25519_to_mpi(mbedtls_mpi *X, const x25519_fe a)
{
	x25519_fe t = { a[0], a[1], a[2], a[3], a[4] };
	x25519_u64 q;
	int ret;

	x25519_carry(t);
	x25519_carry(t);
	/* q = 1 when t >= p, i.e. when t + 19 reaches 2^255. */
	q = (t[0] + 19) >> 51;
	q = (t[1] + q) >> 51;
	q = (t[2] + q) >> 51;
	q = (t[3] + q) >> 51;
	q = (t[4] + q) >> 51;
	t[0] += 19 * q;
	t[1] += t[0] >> 51; t[0] &= X25519_MASK;
	t[2] += t[1] >> 51; t[1] &= X25519_MASK;
	t[3] += t[2] >> 51; t[2] &= X25519_MASK;
	t[4] += t[3] >> 51; t[3] &= X25519_MASK;
	t[4] &= X25519_MASK;

	ret = mbedtls_mpi_grow(X, 4);
	if (ret != 0)
		return ret;
	mbedtls_mpi_uint *p = X->MBEDTLS_PRIVATE(p);
	p[0] = t[0] | (t[1] << 51);
	p[1] = (t[1] >> 13) | (t[2] << 38);
	p[2] = (t[2] >> 26) | (t[3] << 25);
	p[3] = (t[3] >> 39) | (t[4] << 12);
	for (size_t i = 4; i < X->MBEDTLS_PRIVATE(n); i++)
		p[i] = 0;
	X->MBEDTLS_PRIVATE(s) = 1;
	return 0;
}

unsigned char mbedtls_internal_ecp_grp_capable(const mbedtls_ecp_group *grp)
{
	return grp->id == MBEDTLS_ECP_DP_CURVE25519;
}

int mbedtls_internal_ecp_init(const mbedtls_ecp_group *grp)
{
	(void)grp;
	return 0;
}

void mbedtls_internal_ecp_free(const mbedtls_ecp_group *grp)
{
	(void)grp;
}

/* R = 2P, S = P + Q, d = X(P - Q); R may be P and S may be Q (the ladder
 * passes them so), so every input is read before anything is written. */
int mbedtls_internal_ecp_double_add_mxz(const mbedtls_ecp_group *grp, mbedtls_ecp_point *R, mbedtls_ecp_point *S,
					const mbedtls_ecp_point *P, const mbedtls_ecp_point *Q,
					const mbedtls_mpi *d)
{
	x25519_fe px, pz, qx, qz, xd, pp, pm, qp, qm, rx, rz, sx, sz, t;
	int ret;

	(void)grp;
	x25519_from_mpi(px, &P->MBEDTLS_PRIVATE(X));
	x25519_from_mpi(pz, &P->MBEDTLS_PRIVATE(Z));
	x25519_from_mpi(qx, &Q->MBEDTLS_PRIVATE(X));
	x25519_from_mpi(qz, &Q->MBEDTLS_PRIVATE(Z));
	x25519_from_mpi(xd, d);

	x25519_add(pp, px, pz);		/* Pp = PX + PZ */
	x25519_sub(pm, px, pz);		/* Pm = PX - PZ */
	x25519_add(qp, qx, qz);		/* Qp = QX + QZ */
	x25519_sub(qm, qx, qz);		/* Qm = QX - QZ */
	x25519_mul(qm, qm, pp);		/* Qm * Pp */
	x25519_mul(qp, qp, pm);		/* Qp * Pm */
	x25519_mul(pp, pp, pp);		/* Pp^2 */
	x25519_mul(pm, pm, pm);		/* Pm^2 */
	x25519_mul(rx, pp, pm);		/* RX = Pp^2 Pm^2 */
	x25519_sub(t, pp, pm);		/* E = Pp^2 - Pm^2 */
	x25519_mul_small(rz, t, 121666);	/* a24 E */
	x25519_add(rz, rz, pm);		/* a24 E + Pm^2 */
	x25519_mul(rz, rz, t);		/* RZ = E (a24 E + Pm^2) */
	x25519_add(sx, qm, qp);
	x25519_mul(sx, sx, sx);		/* SX = (Qm Pp + Qp Pm)^2 */
	x25519_sub(sz, qm, qp);
	x25519_mul(sz, sz, sz);
	x25519_mul(sz, sz, xd);		/* SZ = d (Qm Pp - Qp Pm)^2 */

	if ((ret = x25519_to_mpi(&R->MBEDTLS_PRIVATE(X), rx)) != 0 ||
	    (ret = x25519_to_mpi(&R->MBEDTLS_PRIVATE(Z), rz)) != 0 ||
	    (ret = x25519_to_mpi(&S->MBEDTLS_PRIVATE(X), sx)) != 0 ||
	    (ret = x25519_to_mpi(&S->MBEDTLS_PRIVATE(Z), sz)) != 0)
		return ret;
	return 0;
}

/* X = X / Z, Z = 1, with 1/Z = Z^(p-2), p - 2 = 2^255 - 21. */
int mbedtls_internal_ecp_normalize_mxz(const mbedtls_ecp_group *grp, mbedtls_ecp_point *P)
{
	x25519_fe x, z, z2, z9, z11, a, b, c;
	x25519_u64 nz;
	int ret, i;

	(void)grp;
	x25519_from_mpi(x, &P->MBEDTLS_PRIVATE(X));
	x25519_from_mpi(z, &P->MBEDTLS_PRIVATE(Z));

	/* Z = 0 mod p (a low-order peer point): no inverse, as mbedTLS says. */
	if ((ret = x25519_to_mpi(&P->MBEDTLS_PRIVATE(Z), z)) != 0)
		return ret;
	nz = 0;
	for (i = 0; i < 4; i++)
		nz |= P->MBEDTLS_PRIVATE(Z).MBEDTLS_PRIVATE(p)[i];
	if (nz == 0)
		return MBEDTLS_ERR_MPI_NOT_ACCEPTABLE;

	/* The usual addition chain: z^(2^k - 1) for k = 5, 10, 20, 40, 50,
	 * 100, 200, 250, then five squarings and z^11. */
	x25519_mul(z2, z, z);			/* z^2 */
	x25519_mul(a, z2, z2);
	x25519_mul(a, a, a);			/* z^8 */
	x25519_mul(z9, a, z);			/* z^9 */
	x25519_mul(z11, z9, z2);		/* z^11 */
	x25519_mul(a, z11, z11);		/* z^22 */
	x25519_mul(a, a, z9);			/* z^31 = z^(2^5 - 1) */
	x25519_mul(b, a, a);
	for (i = 1; i < 5; i++)
		x25519_mul(b, b, b);
	x25519_mul(a, b, a);			/* z^(2^10 - 1) */
	x25519_mul(b, a, a);
	for (i = 1; i < 10; i++)
		x25519_mul(b, b, b);
	x25519_mul(b, b, a);			/* z^(2^20 - 1) */
	x25519_mul(c, b, b);
	for (i = 1; i < 20; i++)
		x25519_mul(c, c, c);
	x25519_mul(b, c, b);			/* z^(2^40 - 1) */
	for (i = 0; i < 10; i++)
		x25519_mul(b, b, b);
	x25519_mul(a, b, a);			/* z^(2^50 - 1) */
	x25519_mul(b, a, a);
	for (i = 1; i < 50; i++)
		x25519_mul(b, b, b);
	x25519_mul(b, b, a);			/* z^(2^100 - 1) */
	x25519_mul(c, b, b);
	for (i = 1; i < 100; i++)
		x25519_mul(c, c, c);
	x25519_mul(b, c, b);			/* z^(2^200 - 1) */
	for (i = 0; i < 50; i++)
		x25519_mul(b, b, b);
	x25519_mul(a, b, a);			/* z^(2^250 - 1) */
	for (i = 0; i < 5; i++)
		x25519_mul(a, a, a);		/* z^(2^255 - 32) */
	x25519_mul(a, a, z11);			/* z^(2^255 - 21) */

	x25519_mul(x, x, a);
	if ((ret = x25519_to_mpi(&P->MBEDTLS_PRIVATE(X), x)) != 0)
		return ret;
	return mbedtls_mpi_lset(&P->MBEDTLS_PRIVATE(Z), 1);
}
