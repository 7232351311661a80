/* ChaCha20 block function per RFC 8439 section 2.3: a 4x4 matrix of 32-bit
 * words (constants, key, counter, nonce), 20 rounds as 10 column/diagonal
 * double rounds, then the input added back in (which makes the function
 * one-way in the key: the fast-key-erasure generator relies on it). */
#include "lib/byteorder.h"
#include "lib/crypto/chacha20.h"

static inline u32 chacha20_rotl(u32 v, int n)
{
	return (v << n) | (v >> (32 - n));
}

#define CHACHA_QR(a, b, c, d) do {					\
	a += b; d ^= a; d = chacha20_rotl(d, 16);				\
	c += d; b ^= c; b = chacha20_rotl(b, 12);				\
	a += b; d ^= a; d = chacha20_rotl(d, 8);				\
	c += d; b ^= c; b = chacha20_rotl(b, 7);				\
} while (0)

void chacha20_block(const u8 key[CHACHA20_KEY_BYTES], u32 counter,
		    const u8 nonce[CHACHA20_NONCE_BYTES], u8 out[CHACHA20_BLOCK_BYTES])
{
	u32 in[16], x[16];
	int i;

	/* "expand 32-byte k", little-endian words */
	in[0] = 0x61707865;
	in[1] = 0x3320646e;
	in[2] = 0x79622d32;
	in[3] = 0x6b206574;
	for (i = 0; i < 8; i++)
		in[4 + i] = get_le32(key + 4 * i);
	in[12] = counter;
	for (i = 0; i < 3; i++)
		in[13 + i] = get_le32(nonce + 4 * i);

	for (i = 0; i < 16; i++)
		x[i] = in[i];
	for (i = 0; i < 10; i++) {
		CHACHA_QR(x[0], x[4], x[8], x[12]);	/* columns */
		CHACHA_QR(x[1], x[5], x[9], x[13]);
		CHACHA_QR(x[2], x[6], x[10], x[14]);
		CHACHA_QR(x[3], x[7], x[11], x[15]);
		CHACHA_QR(x[0], x[5], x[10], x[15]);	/* diagonals */
		CHACHA_QR(x[1], x[6], x[11], x[12]);
		CHACHA_QR(x[2], x[7], x[8], x[13]);
		CHACHA_QR(x[3], x[4], x[9], x[14]);
	}
	for (i = 0; i < 16; i++) {
		u32 v = x[i] + in[i];

		out[4 * i] = (u8)v;
		out[4 * i + 1] = (u8)(v >> 8);
		out[4 * i + 2] = (u8)(v >> 16);
		out[4 * i + 3] = (u8)(v >> 24);
	}
	/* The key schedule words must not outlive the call on the stack. */
	for (i = 0; i < 16; i++) {
		((volatile u32 *)in)[i] = 0;
		((volatile u32 *)x)[i] = 0;
	}
}
