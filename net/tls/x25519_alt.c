/*
 * X25519 for mbedTLS in vireo's own Curve25519 arithmetic: the whole
 * Montgomery ladder (RFC 7748, 5) behind mbedtls_ecp_mul(), taken through
 * MBEDTLS_ECP_MUL_MXZ_ALT (net/tls/patches/0002; net/tls/mbedtls_config.h,
 * docs/https.md).
 *
 * Why: every TLS 1.3 handshake, resumed or not, makes two X25519 scalar
 * multiplications (our key share and the shared secret), and under QEMU's
 * TCG they were most of a resumed handshake's guest time. mbedTLS runs them
 * over its general bignum code. Its _ALT hooks for the ladder step and the
 * final normalisation (what this file implemented first) still left
 * mbedTLS's ladder around the step: each of its 255 steps converted five
 * bignums into limbs and four back (growing them on the heap), and swapped
 * bignums four times, which cost as much again as the field arithmetic
 * (QMP samples of a resumed handshake: the conversions, the bignum swaps
 * and mbedTLS's step wrapper next to x25519_mul). Here the ladder runs on
 * fixed-size field elements from the scalar's first bit to the inversion,
 * with one conversion in and one out.
 *
 * A field element mod p = 2^255 - 19 is five 51-bit limbs in 64-bit words,
 * products as unsigned __int128 (one mulq each), reduction by folding
 * 2^255 = 19. Squarings have their own routine (15 products instead of
 * 25): four of a ladder step's ten multiplications and 254 of the
 * inversion's 265 are squarings.
 *
 * Constant time: no branch or memory index depends on the scalar or the
 * values; the swaps are masks. The one branch is the end's Z = 0 test,
 * which is about the peer's public point (a low-order point gives Z = 0) and
 * fails the multiplication the way mbedTLS's own inversion does
 * (MBEDTLS_ERR_MPI_NOT_ACCEPTABLE); mbedtls_ecp_check_pubkey() refuses
 * Curve25519's low-order points before the ladder, so it is a second line. As mbedTLS's ladder does, the starting
 * point's projective coordinates are randomised (X, Z) = (u l, l) with l
 * from the caller's generator, so the values the ladder works on differ
 * from one multiplication to the next.
 *
 * tests/host/net/tls/test_x25519_alt.c checks the result through mbedtls_ecp_mul()
 * against RFC 7748's vectors, its 1,000-fold iteration and Diffie-Hellman
 * agreement over random keys; test_mbedtls_config handshakes with OpenSSL over
 * X25519 through it.
 */
#include "mbedtls/ecp.h"
#include "mbedtls/bignum.h"
#include "mbedtls/platform_util.h"

typedef unsigned __int128 x25519_u128;
typedef unsigned long long x25519_u64;
typedef x25519_u64 x25519_fe[5];

#define X25519_MASK ((1ull << 51) - 1)

_Static_assert(sizeof(mbedtls_mpi_uint) == 8, "64-bit bignum limbs");

/* The hook net/tls/patches/0002 adds to ecp.c (declared there). */
int mbedtls_ecp_mul_mxz_alt_capable(const mbedtls_ecp_group *grp);
int mbedtls_ecp_mul_mxz_alt(const mbedtls_ecp_group *grp, mbedtls_ecp_point *R, const mbedtls_mpi *m,
			    const mbedtls_ecp_point *P, int (*f_rng)(void *, unsigned char *, size_t), void *p_rng);

#ifdef HOST_TEST
unsigned long x25519_alt_ladders;	/* tests: the ladder here ran, not mbedTLS's */
#endif

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

/* Bounds. x25519_mul, x25519_sq, x25519_mul_small and x25519_carry leave
 * limbs below 2^51 (limb 1 below 2^51 + 2^13): "carried". A sum or a
 * difference of two carried elements (the difference offset by 2p, whose
 * limbs, 2^52 - 38 and 2^52 - 2, are above any carried limb, so nothing goes
 * negative) has limbs below 2^53 and is not carried again: in the ladder
 * they only feed x25519_mul, x25519_sq and x25519_mul_small, which take
 * limbs below 2^53 (a column is at most five products below 19 * 2^106,
 * under 2^113 in 128 bits; the top column's carry, below 2^58, times 19
 * still fits 64 bits). Eight carries fewer per ladder step. */
static void x25519_add(x25519_fe r, const x25519_fe a, const x25519_fe b)
{
	for (int i = 0; i < 5; i++)
		r[i] = a[i] + b[i];
}

static void x25519_sub(x25519_fe r, const x25519_fe a, const x25519_fe b)
{
	r[0] = a[0] + 0xfffffffffffdaull - b[0];
	for (int i = 1; i < 5; i++)
		r[i] = a[i] + 0xffffffffffffeull - b[i];
}

/* The 128-bit columns of a product (mul and sq) carried into five limbs:
 * each column's excess moves up, the top one's comes back times 19
 * (2^255 = 19 mod p), and one more carry from limb 0 into limb 1 leaves
 * the result carried (the bounds above). */
static inline void x25519_carry_wide(x25519_fe r, x25519_u128 t0, x25519_u128 t1, x25519_u128 t2, x25519_u128 t3,
				     x25519_u128 t4)
{
	x25519_u64 c;

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

/* Inputs below 2^53 per limb (above); the result is carried. */
static void x25519_mul(x25519_fe r, const x25519_fe a, const x25519_fe b)
{
	x25519_u64 b1 = 19 * b[1], b2 = 19 * b[2], b3 = 19 * b[3], b4 = 19 * b[4];
	x25519_u128 t0, t1, t2, t3, t4;

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
	x25519_carry_wide(r, t0, t1, t2, t3, t4);
}

/* a^2: x25519_mul's columns with the symmetric products paired (15
 * multiplications instead of 25; the doubled and 38-fold factors stay below
 * 2^59, products below 2^112). Same input bound and the same carry. */
static void x25519_sq(x25519_fe r, const x25519_fe a)
{
	x25519_u64 a0_2 = 2 * a[0], a1_2 = 2 * a[1], a1_38 = 38 * a[1], a2_38 = 38 * a[2];
	x25519_u64 a3_19 = 19 * a[3], a3_38 = 38 * a[3], a4_19 = 19 * a[4];
	x25519_u128 t0, t1, t2, t3, t4;

	t0 = (x25519_u128)a[0] * a[0] + (x25519_u128)a1_38 * a[4] + (x25519_u128)a2_38 * a[3];
	t1 = (x25519_u128)a0_2 * a[1] + (x25519_u128)a2_38 * a[4] + (x25519_u128)a3_19 * a[3];
	t2 = (x25519_u128)a0_2 * a[2] + (x25519_u128)a[1] * a[1] + (x25519_u128)a3_38 * a[4];
	t3 = (x25519_u128)a0_2 * a[3] + (x25519_u128)a1_2 * a[2] + (x25519_u128)a4_19 * a[4];
	t4 = (x25519_u128)a0_2 * a[4] + (x25519_u128)a1_2 * a[3] + (x25519_u128)a[2] * a[2];
	x25519_carry_wide(r, t0, t1, t2, t3, t4);
}

/* n successive squarings of a into r. */
static void x25519_sqn(x25519_fe r, const x25519_fe a, int n)
{
	x25519_sq(r, a);
	while (--n > 0)
		x25519_sq(r, r);
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

/* From four 64-bit words, little-endian, a value below 2^256. */
static void x25519_from_words(x25519_fe r, const x25519_u64 w[4])
{
	r[0] = w[0] & X25519_MASK;
	r[1] = ((w[0] >> 51) | (w[1] << 13)) & X25519_MASK;
	r[2] = ((w[1] >> 38) | (w[2] << 26)) & X25519_MASK;
	r[3] = ((w[2] >> 25) | (w[3] << 39)) & X25519_MASK;
	r[4] = w[3] >> 12;	/* up to 52 bits: x25519_mul takes it */
	x25519_carry(r);
}

/* From a bignum below 2^256 (mbedtls_ecp_check_pubkey's bound). */
static void x25519_from_mpi(x25519_fe r, const mbedtls_mpi *X)
{
	x25519_u64 w[4] = { 0, 0, 0, 0 };
	size_t n = X->MBEDTLS_PRIVATE(n) < 4 ? X->MBEDTLS_PRIVATE(n) : 4;

	for (size_t i = 0; i < n; i++)
		w[i] = X->MBEDTLS_PRIVATE(p)[i];
	x25519_from_words(r, w);
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

/* Swaps a and b when swap is 1, leaves them when 0, by mask. */
static void x25519_cswap(x25519_fe a, x25519_fe b, x25519_u64 swap)
{
	x25519_u64 mask = 0 - swap, t;

	for (int i = 0; i < 5; i++) {
		t = mask & (a[i] ^ b[i]);
		a[i] ^= t;
		b[i] ^= t;
	}
}

/* r = z^(p-2) = 1/z (0 for z = 0), p - 2 = 2^255 - 21: the usual addition
 * chain, z^(2^k - 1) for k = 5, 10, 20, 40, 50, 100, 200, 250, then five
 * squarings and z^11. */
static void x25519_invert(x25519_fe r, const x25519_fe z)
{
	x25519_fe z2, z9, z11, a, b, c;

	x25519_sq(z2, z);			/* z^2 */
	x25519_sqn(a, z2, 2);			/* z^8 */
	x25519_mul(z9, a, z);			/* z^9 */
	x25519_mul(z11, z9, z2);		/* z^11 */
	x25519_sq(a, z11);			/* z^22 */
	x25519_mul(a, a, z9);			/* z^31 = z^(2^5 - 1) */
	x25519_sqn(b, a, 5);
	x25519_mul(a, b, a);			/* z^(2^10 - 1) */
	x25519_sqn(b, a, 10);
	x25519_mul(b, b, a);			/* z^(2^20 - 1) */
	x25519_sqn(c, b, 20);
	x25519_mul(b, c, b);			/* z^(2^40 - 1) */
	x25519_sqn(b, b, 10);
	x25519_mul(a, b, a);			/* z^(2^50 - 1) */
	x25519_sqn(b, a, 50);
	x25519_mul(b, b, a);			/* z^(2^100 - 1) */
	x25519_sqn(c, b, 100);
	x25519_mul(b, c, b);			/* z^(2^200 - 1) */
	x25519_sqn(b, b, 50);
	x25519_mul(a, b, a);			/* z^(2^250 - 1) */
	x25519_sqn(a, a, 5);			/* z^(2^255 - 32) */
	x25519_mul(r, a, z11);			/* z^(2^255 - 21) */
}

int mbedtls_ecp_mul_mxz_alt_capable(const mbedtls_ecp_group *grp)
{
	return grp->id == MBEDTLS_ECP_DP_CURVE25519;
}

/* R = m P, x-coordinates only (R->X affine, R->Z = 1, R->Y freed), as
 * ecp.c's ecp_mul_mxz() leaves it; m and P were checked by the caller
 * (mbedtls_ecp_check_privkey: m below 2^255; check_pubkey: P.X in 32
 * bytes). The ladder of RFC 7748, 5: x2/z2 = R, x3/z3 = R + P, over the
 * scalar's bits from grp->nbits (254, the clamped top bit) down to 0, the
 * bits mbedTLS's own ladder runs. */
int mbedtls_ecp_mul_mxz_alt(const mbedtls_ecp_group *grp, mbedtls_ecp_point *R, const mbedtls_mpi *m,
			    const mbedtls_ecp_point *P, int (*f_rng)(void *, unsigned char *, size_t), void *p_rng)
{
	x25519_fe x1, x2, z2, x3, z3, a, aa, b, bb, e, c, d, da, cb, l;
	x25519_u64 k[4] = { 0, 0, 0, 0 }, swap = 0, nz;
	unsigned char rnd[32];
	size_t n = m->MBEDTLS_PRIVATE(n) < 4 ? m->MBEDTLS_PRIVATE(n) : 4;
	int ret, i;

	if (f_rng == NULL)
		return MBEDTLS_ERR_ECP_BAD_INPUT_DATA;	/* as ecp_mul_mxz() */
	for (size_t j = 0; j < n; j++)
		k[j] = m->MBEDTLS_PRIVATE(p)[j];
	x25519_from_mpi(x1, &P->MBEDTLS_PRIVATE(X));

	/* l: a random nonzero field element below 2^254 (so nonzero limbs
	 * mean nonzero mod p; zero has probability 2^-254 and is drawn again,
	 * a branch on a random value, not on a secret). */
	do {
		x25519_u64 w[4] = { 0, 0, 0, 0 };

		if ((ret = f_rng(p_rng, rnd, sizeof(rnd))) != 0)
			goto out;
		rnd[31] &= 0x3f;
		for (i = 0; i < 32; i++)
			w[i / 8] |= (x25519_u64)rnd[i] << (8 * (i % 8));
		x25519_from_words(l, w);
		nz = l[0] | l[1] | l[2] | l[3] | l[4];
	} while (nz == 0);

	x2[0] = 1; x2[1] = x2[2] = x2[3] = x2[4] = 0;
	z2[0] = z2[1] = z2[2] = z2[3] = z2[4] = 0;
	x25519_mul(x3, x1, l);
	for (i = 0; i < 5; i++)
		z3[i] = l[i];

	for (i = (int)grp->nbits; i >= 0; i--) {
		x25519_u64 bit = (k[i / 64] >> (i % 64)) & 1;

		swap ^= bit;
		x25519_cswap(x2, x3, swap);
		x25519_cswap(z2, z3, swap);
		swap = bit;

		x25519_add(a, x2, z2);		/* A = x2 + z2 */
		x25519_sq(aa, a);		/* AA = A^2 */
		x25519_sub(b, x2, z2);		/* B = x2 - z2 */
		x25519_sq(bb, b);		/* BB = B^2 */
		x25519_sub(e, aa, bb);		/* E = AA - BB */
		x25519_add(c, x3, z3);		/* C = x3 + z3 */
		x25519_sub(d, x3, z3);		/* D = x3 - z3 */
		x25519_mul(da, d, a);		/* DA = D A */
		x25519_mul(cb, c, b);		/* CB = C B */
		x25519_add(x3, da, cb);
		x25519_sq(x3, x3);		/* x3 = (DA + CB)^2 */
		x25519_sub(z3, da, cb);
		x25519_sq(z3, z3);
		x25519_mul(z3, z3, x1);		/* z3 = x1 (DA - CB)^2 */
		x25519_mul(x2, aa, bb);		/* x2 = AA BB */
		x25519_mul_small(z2, e, 121665);
		x25519_add(z2, z2, aa);
		x25519_mul(z2, z2, e);		/* z2 = E (AA + a24 E) */
	}
	x25519_cswap(x2, x3, swap);
	x25519_cswap(z2, z3, swap);
#ifdef HOST_TEST
	x25519_alt_ladders++;
#endif

	/* Z = 0 mod p (a low-order peer point): no inverse, as mbedTLS says. */
	if ((ret = x25519_to_mpi(&R->MBEDTLS_PRIVATE(Z), z2)) != 0)
		goto out;
	nz = 0;
	for (i = 0; i < 4; i++)
		nz |= R->MBEDTLS_PRIVATE(Z).MBEDTLS_PRIVATE(p)[i];
	if (nz == 0) {
		ret = MBEDTLS_ERR_MPI_NOT_ACCEPTABLE;
		goto out;
	}
	x25519_invert(a, z2);
	x25519_mul(x2, x2, a);
	if ((ret = x25519_to_mpi(&R->MBEDTLS_PRIVATE(X), x2)) != 0)
		goto out;
	mbedtls_mpi_free(&R->MBEDTLS_PRIVATE(Y));
	ret = mbedtls_mpi_lset(&R->MBEDTLS_PRIVATE(Z), 1);
out:
	/* The scalar's copy and everything the ladder computed from it. */
	mbedtls_platform_zeroize(k, sizeof(k));
	mbedtls_platform_zeroize(rnd, sizeof(rnd));
	{
		x25519_u64 *fe[] = { x2, z2, x3, z3, a, aa, b, bb, e, c, d, da, cb, l };

		for (i = 0; i < (int)(sizeof(fe) / sizeof(fe[0])); i++)
			mbedtls_platform_zeroize(fe[i], sizeof(x25519_fe));
	}
	return ret;
}
