/* lib/crypto/chacha20.c against RFC 8439's block-function vectors (section
 * 2.3.2 and appendix A.1), lib/crypto/siphash.c against the SipHash-2-4
 * reference vectors (key 00..0f, messages 00..(n-1), n = 0..63), and the
 * fast-key-erasure generator in lib/crypto/csprng.c: its first output and next
 * key follow from the A.1 vectors, output is wiped as it is served, reads
 * split at any size give the same stream, and mixing changes everything
 * after it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/crypto/chacha20.h"
#include "lib/crypto/csprng.h"
#include "lib/crypto/siphash.h"

static void unhex(const char *hex, u8 *out, size_t n)
{
	size_t i;

	assert_int_equal(strlen(hex), 2 * n);
	for (i = 0; i < n; i++) {
		unsigned int v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (u8)v;
	}
}

struct block_vec {
	const char *key, *nonce;
	u32 counter;
	const char *out;
};

static const struct block_vec block_vecs[] = {
	/* RFC 8439 2.3.2 */
	{ "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
	  "000000090000004a00000000", 1,
	  "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
	  "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e" },
	/* RFC 8439 A.1 test vector #1 */
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  "000000000000000000000000", 0,
	  "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
	  "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586" },
	/* A.1 #2 */
	{ "0000000000000000000000000000000000000000000000000000000000000000",
	  "000000000000000000000000", 1,
	  "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
	  "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f" },
	/* A.1 #3 */
	{ "0000000000000000000000000000000000000000000000000000000000000001",
	  "000000000000000000000000", 1,
	  "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
	  "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0" },
};

static void test_chacha20_rfc8439(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(block_vecs) / sizeof(block_vecs[0]); i++) {
		u8 key[32], nonce[12], want[64], got[64];

		unhex(block_vecs[i].key, key, sizeof(key));
		unhex(block_vecs[i].nonce, nonce, sizeof(nonce));
		unhex(block_vecs[i].out, want, sizeof(want));
		chacha20_block(key, block_vecs[i].counter, nonce, got);
		assert_memory_equal(got, want, 64);
	}
}

/* SipHash-2-4 reference vectors (the paper's vectors.h), as 64-bit values. */
static const u64 sip_vecs[64] = {
	0x726fdb47dd0e0e31ULL, 0x74f839c593dc67fdULL, 0x0d6c8009d9a94f5aULL, 0x85676696d7fb7e2dULL,
	0xcf2794e0277187b7ULL, 0x18765564cd99a68dULL, 0xcbc9466e58fee3ceULL, 0xab0200f58b01d137ULL,
	0x93f5f5799a932462ULL, 0x9e0082df0ba9e4b0ULL, 0x7a5dbbc594ddb9f3ULL, 0xf4b32f46226bada7ULL,
	0x751e8fbc860ee5fbULL, 0x14ea5627c0843d90ULL, 0xf723ca908e7af2eeULL, 0xa129ca6149be45e5ULL,
	0x3f2acc7f57c29bdbULL, 0x699ae9f52cbe4794ULL, 0x4bc1b3f0968dd39cULL, 0xbb6dc91da77961bdULL,
	0xbed65cf21aa2ee98ULL, 0xd0f2cbb02e3b67c7ULL, 0x93536795e3a33e88ULL, 0xa80c038ccd5ccec8ULL,
	0xb8ad50c6f649af94ULL, 0xbce192de8a85b8eaULL, 0x17d835b85bbb15f3ULL, 0x2f2e6163076bcfadULL,
	0xde4daaaca71dc9a5ULL, 0xa6a2506687956571ULL, 0xad87a3535c49ef28ULL, 0x32d892fad841c342ULL,
	0x7127512f72f27cceULL, 0xa7f32346f95978e3ULL, 0x12e0b01abb051238ULL, 0x15e034d40fa197aeULL,
	0x314dffbe0815a3b4ULL, 0x027990f029623981ULL, 0xcadcd4e59ef40c4dULL, 0x9abfd8766a33735cULL,
	0x0e3ea96b5304a7d0ULL, 0xad0c42d6fc585992ULL, 0x187306c89bc215a9ULL, 0xd4a60abcf3792b95ULL,
	0xf935451de4f21df2ULL, 0xa9538f0419755787ULL, 0xdb9acddff56ca510ULL, 0xd06c98cd5c0975ebULL,
	0xe612a3cb9ecba951ULL, 0xc766e62cfcadaf96ULL, 0xee64435a9752fe72ULL, 0xa192d576b245165aULL,
	0x0a8787bf8ecb74b2ULL, 0x81b3e73d20b49b6fULL, 0x7fa8220ba3b2eceaULL, 0x245731c13ca42499ULL,
	0xb78dbfaf3a8d83bdULL, 0xea1ad565322a1a0bULL, 0x60e61c23a3795013ULL, 0x6606d7e446282b93ULL,
	0x6ca4ecb15c5f91e1ULL, 0x9f626da15c9625f3ULL, 0xe51b38608ef25f57ULL, 0x958a324ceb064572ULL,
};

static void test_siphash_reference(void **state)
{
	struct siphash_key k;
	u8 key[16], msg[64];
	int i;

	for (i = 0; i < 16; i++)
		key[i] = (u8)i;
	for (i = 0; i < 64; i++)
		msg[i] = (u8)i;
	siphash_key_from_bytes(&k, key);
	assert_true(k.k0 == 0x0706050403020100ULL && k.k1 == 0x0f0e0d0c0b0a0908ULL);
	for (i = 0; i < 64; i++) {
		/* Unaligned input must not matter. */
		u8 shifted[65];

		memcpy(shifted + 1, msg, (size_t)i);
		assert_true(siphash24(&k, msg, (size_t)i) == sip_vecs[i]);
		assert_true(siphash24(&k, shifted + 1, (size_t)i) == sip_vecs[i]);
	}
}

static bool all_zero(const u8 *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/* With the all-zero key the first refill runs A.1 #1 (counter 0, the next
 * key) and A.1 #2 (counter 1, the first output). */
static void test_csprng_known_answer(void **state)
{
	struct csprng g;
	u8 out[64], want[64], next_key[64];

	csprng_init(&g);
	csprng_bytes(&g, out, sizeof(out));
	unhex(block_vecs[2].out, want, sizeof(want));
	assert_memory_equal(out, want, 64);
	unhex(block_vecs[1].out, next_key, sizeof(next_key));
	assert_memory_equal(g.key, next_key, 32);
	/* Fast key erasure: what was served is gone from the state. */
	assert_int_equal(g.avail, CSPRNG_BUF_BYTES - 64);
	assert_true(all_zero(g.buf, 64));
	assert_false(all_zero(g.buf + 64, CSPRNG_BUF_BYTES - 64));
}

static void test_csprng_split_reads(void **state)
{
	static const size_t sizes[] = { 1, 3, 4, 7, 8, 31, 64, 100, 191, 192, 193, 500 };
	struct csprng a, b;
	u8 whole[2048], parts[2048];
	size_t off = 0, i = 0;

	csprng_init(&a);
	csprng_init(&b);
	csprng_mix(&a, "seed", 4);
	csprng_mix(&b, "seed", 4);
	csprng_bytes(&a, whole, sizeof(whole));
	while (off < sizeof(parts)) {
		size_t n = sizes[i++ % (sizeof(sizes) / sizeof(sizes[0]))];

		n = n < sizeof(parts) - off ? n : sizeof(parts) - off;
		csprng_bytes(&b, parts + off, n);
		off += n;
	}
	assert_memory_equal(whole, parts, sizeof(whole));
	assert_true(a.refills > 1);
}

static void test_csprng_mix(void **state)
{
	struct csprng a, b, c;
	u8 x[32], y[32], z[32];
	u8 big[1000];

	csprng_init(&a);
	csprng_init(&b);
	csprng_init(&c);
	csprng_mix(&a, "a", 1);
	csprng_mix(&b, "a\0", 2);	/* differs only by a trailing zero */
	csprng_mix(&c, "", 0);
	csprng_bytes(&a, x, sizeof(x));
	csprng_bytes(&b, y, sizeof(y));
	csprng_bytes(&c, z, sizeof(z));
	assert_memory_not_equal(x, y, sizeof(x));
	assert_memory_not_equal(x, z, sizeof(x));
	assert_memory_not_equal(y, z, sizeof(x));

	/* Mixing drops buffered output: the next bytes are not the ones that
	 * were waiting. Input longer than one key chunk works too. */
	csprng_init(&a);
	csprng_init(&b);
	csprng_bytes(&a, x, 4);
	csprng_bytes(&b, x, 4);
	memset(big, 0x5a, sizeof(big));
	csprng_mix(&a, big, sizeof(big));
	assert_int_equal(a.avail, 0);
	assert_true(all_zero(a.buf, sizeof(a.buf)));
	csprng_bytes(&a, x, sizeof(x));
	csprng_bytes(&b, y, sizeof(y));
	assert_memory_not_equal(x, y, sizeof(x));
	big[999] ^= 1;	/* the last byte of the last chunk counts */
	csprng_init(&c);
	csprng_bytes(&c, z, 4);
	csprng_mix(&c, big, sizeof(big));
	csprng_bytes(&c, z, sizeof(z));
	assert_memory_not_equal(x, z, sizeof(x));
}

/* A sanity check, not a statistical test suite: over 1 MiBit the ones are
 * within 0.5% of half (the standard deviation is 0.05%), and no byte value
 * is missing. */
static void test_csprng_balance(void **state)
{
	struct csprng g;
	static u8 buf[131072];
	unsigned int seen[256] = { 0 };
	u64 ones = 0;
	size_t i;

	csprng_init(&g);
	csprng_mix(&g, "balance", 7);
	csprng_bytes(&g, buf, sizeof(buf));
	for (i = 0; i < sizeof(buf); i++) {
		ones += (u64)__builtin_popcount(buf[i]);
		seen[buf[i]]++;
	}
	assert_true(ones > sizeof(buf) * 8 * 0.495 && ones < sizeof(buf) * 8 * 0.505);
	for (i = 0; i < 256; i++)
		assert_true(seen[i] > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chacha20_rfc8439),
		cmocka_unit_test(test_siphash_reference),
		cmocka_unit_test(test_csprng_known_answer),
		cmocka_unit_test(test_csprng_split_reads),
		cmocka_unit_test(test_csprng_mix),
		cmocka_unit_test(test_csprng_balance),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
