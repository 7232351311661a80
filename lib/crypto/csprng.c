/* Fast key erasure: a refill runs ChaCha20 under the current key over
 * CSPRNG_REFILL_BLOCKS blocks (nonce 0), keeps the first 32 bytes as the
 * next key and serves the rest. Whoever reads the state later learns
 * nothing about output already handed out (its key is gone, its bytes are
 * wiped), which is the property a kernel generator needs for long-lived
 * secrets like the ISN and SYN-cookie keys.
 *
 * Mixing entropy: input is taken 32 bytes at a time (the last chunk
 * zero-padded) and XORed into the key, and the key is replaced by the first
 * half of ChaCha20(key, counter = chunk index, nonce = "mix" + length). The
 * block function's feed-forward makes that step one-way, so new input
 * cannot cancel what the key already holds, and the length in the nonce
 * keeps inputs that differ only by trailing zeros apart. */
#include "lib/crypto/csprng.h"
#include "lib/string.h"

static void csprng_wipe(void *p, size_t n)
{
	volatile u8 *v = p;

	while (n--)
		*v++ = 0;
}

void csprng_init(struct csprng *g)
{
	csprng_wipe(g, sizeof(*g));
}

void csprng_mix(struct csprng *g, const void *in, size_t len)
{
	const u8 *p = in;
	u8 nonce[CHACHA20_NONCE_BYTES] = { 'm', 'i', 'x', 0 };
	u8 block[CHACHA20_BLOCK_BYTES];
	size_t off = 0, i;
	u32 chunk = 0;
	u64 l = len;

	for (i = 0; i < 8; i++)
		nonce[4 + i] = (u8)(l >> (8 * i));
	do {
		for (i = 0; i < CHACHA20_KEY_BYTES && off + i < len; i++)
			g->key[i] ^= p[off + i];
		chacha20_block(g->key, chunk++, nonce, block);
		memcpy(g->key, block, CHACHA20_KEY_BYTES);
		off += CHACHA20_KEY_BYTES;
	} while (off < len);
	csprng_wipe(block, sizeof(block));

	csprng_wipe(g->buf, sizeof(g->buf));
	g->avail = 0;
	g->mixes++;
}

static void csprng_refill(struct csprng *g)
{
	static const u8 zero_nonce[CHACHA20_NONCE_BYTES];
	u8 block[CHACHA20_BLOCK_BYTES];
	u8 *dst = g->buf;
	u32 i;

	chacha20_block(g->key, 0, zero_nonce, block);
	for (i = 1; i < CSPRNG_REFILL_BLOCKS; i++) {
		chacha20_block(g->key, i, zero_nonce, dst);
		dst += CHACHA20_BLOCK_BYTES;
	}
	/* The old key is overwritten before any of its output is served. */
	memcpy(g->key, block, CHACHA20_KEY_BYTES);
	memcpy(dst, block + CHACHA20_KEY_BYTES, CHACHA20_BLOCK_BYTES - CHACHA20_KEY_BYTES);
	csprng_wipe(block, sizeof(block));
	g->avail = CSPRNG_BUF_BYTES;
	g->refills++;
}

void csprng_bytes(struct csprng *g, void *out, size_t len)
{
	u8 *o = out;

	while (len) {
		size_t n, at;

		if (!g->avail)
			csprng_refill(g);
		n = MIN(len, g->avail);
		at = CSPRNG_BUF_BYTES - g->avail;
		memcpy(o, g->buf + at, n);
		csprng_wipe(g->buf + at, n);
		g->avail -= n;
		o += n;
		len -= n;
	}
}
