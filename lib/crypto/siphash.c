/* SipHash-2-4: four 64-bit words of state, two SipRounds per 8-byte message
 * word, the final word carrying the length in its top byte, then four
 * rounds after the 0xff finalization constant. */
#include "lib/crypto/siphash.h"

static inline u64 siphash_rotl(u64 v, int n)
{
	return (v << n) | (v >> (64 - n));
}

static inline u64 siphash_le64(const u8 *p)
{
	u64 v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

struct sip_state {
	u64 v0, v1, v2, v3;
};

static void siphash_round(struct sip_state *s)
{
	s->v0 += s->v1;
	s->v1 = siphash_rotl(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = siphash_rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = siphash_rotl(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = siphash_rotl(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = siphash_rotl(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = siphash_rotl(s->v2, 32);
}

static void siphash_compress(struct sip_state *s, u64 m)
{
	s->v3 ^= m;
	siphash_round(s);
	siphash_round(s);
	s->v0 ^= m;
}

void siphash_key_from_bytes(struct siphash_key *k, const u8 bytes[16])
{
	k->k0 = siphash_le64(bytes);
	k->k1 = siphash_le64(bytes + 8);
}

u64 siphash24(const struct siphash_key *k, const void *in, size_t len)
{
	const u8 *p = in;
	struct sip_state s = {
		.v0 = k->k0 ^ 0x736f6d6570736575ULL,	/* "somepseu" */
		.v1 = k->k1 ^ 0x646f72616e646f6dULL,	/* "dorandom" */
		.v2 = k->k0 ^ 0x6c7967656e657261ULL,	/* "lygenera" */
		.v3 = k->k1 ^ 0x7465646279746573ULL,	/* "tedbytes" */
	};
	size_t i, full = len & ~(size_t)7;
	u64 last = (u64)(len & 0xff) << 56;

	for (i = 0; i < full; i += 8)
		siphash_compress(&s, siphash_le64(p + i));
	for (i = 0; i < (len & 7); i++)
		last |= (u64)p[full + i] << (8 * i);
	siphash_compress(&s, last);

	s.v2 ^= 0xff;
	siphash_round(&s);
	siphash_round(&s);
	siphash_round(&s);
	siphash_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
