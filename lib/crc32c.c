/* CRC-32C by slicing-by-8: eight 256-entry tables (8 KiB, built on first
 * use), eight bytes per step; and the CRC of a || b from a's and b's
 * (crc32c_extend, multiplying polynomials mod the CRC's). Software only: lib/ holds no CPU-specific
 * code (kernel/arch/ would, for the SSE4.2 instruction). */
#include "lib/crc32c.h"

#define CRC32C_POLY 0x82f63b78u

static u32 crc32c_tab[8][256];
static u32 crc32c_x8pow2[64];	/* x^(8 * 2^k) mod the polynomial */
static bool crc32c_ready;

/* a * b mod the polynomial, both held as the CRC holds its register:
 * reflected, bit 31 the coefficient of x^0 and bit 0 that of x^31. */
static u32 crc32c_mul(u32 a, u32 b)
{
	u32 p = 0;

	for (u32 m = 1u << 31; m && a; m >>= 1) {
		if (a & m) {
			p ^= b;
			a ^= m;
		}
		b = (b >> 1) ^ (CRC32C_POLY & (0u - (b & 1)));	/* b * x */
	}
	return p;
}

static void crc32c_init(void)
{
	for (u32 i = 0; i < 256; i++) {
		u32 c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (CRC32C_POLY & (0u - (c & 1)));
		crc32c_tab[0][i] = c;
	}
	for (u32 i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc32c_tab[t][i] = (crc32c_tab[t - 1][i] >> 8) ^ crc32c_tab[0][crc32c_tab[t - 1][i] & 0xff];
	crc32c_x8pow2[0] = 1u << (31 - 8);	/* x^8 */
	for (int k = 1; k < 64; k++)
		crc32c_x8pow2[k] = crc32c_mul(crc32c_x8pow2[k - 1], crc32c_x8pow2[k - 1]);
	crc32c_ready = true;
}

u32 crc32c(u32 crc, const void *p, size_t n)
{
	const u8 *b = p;
	u32 c = ~crc;

	if (!crc32c_ready)
		crc32c_init();
	while (n && ((uintptr_t)b & 7)) {
		c = (c >> 8) ^ crc32c_tab[0][(c ^ *b++) & 0xff];
		n--;
	}
	while (n >= 8) {
		u32 lo = c ^ ((u32)b[0] | (u32)b[1] << 8 | (u32)b[2] << 16 | (u32)b[3] << 24);
		u32 hi = (u32)b[4] | (u32)b[5] << 8 | (u32)b[6] << 16 | (u32)b[7] << 24;

		c = crc32c_tab[7][lo & 0xff] ^ crc32c_tab[6][(lo >> 8) & 0xff] ^ crc32c_tab[5][(lo >> 16) & 0xff] ^
		    crc32c_tab[4][lo >> 24] ^ crc32c_tab[3][hi & 0xff] ^ crc32c_tab[2][(hi >> 8) & 0xff] ^
		    crc32c_tab[1][(hi >> 16) & 0xff] ^ crc32c_tab[0][hi >> 24];
		b += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ crc32c_tab[0][(c ^ *b++) & 0xff];
	return ~c;
}

/* The register r run over n zero bytes is r * x^(8n); the CRC is linear in
 * its start and its data, so with L(b) the register b gives from zero,
 * crc32c(seed, b) = ~(~seed * x^(8n) ^ L(b)), and a || b gives
 * ~crc * x^(8n) ^ L(b). Together: (crc ^ seed) * x^(8n) ^ part. */
u32 crc32c_extend(u32 crc, u32 seed, u32 part, size_t n)
{
	u32 v = crc ^ seed;

	if (!crc32c_ready)
		crc32c_init();
	for (int k = 0; n && v; k++, n >>= 1)
		if (n & 1)
			v = crc32c_mul(v, crc32c_x8pow2[k]);
	return v ^ part;
}
