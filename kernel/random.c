/* xoshiro256** seeded from the CPU's hardware generator (if any) and the
 * TSC; device entropy is folded in with a splitmix64 step per word. */
#include "kernel/io.h"
#include "kernel/random.h"

static u64 s[4];
static const char *source = "tsc";
u64 random_entropy_bytes;

static u64 rotl(u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static u64 splitmix(u64 *x)
{
	u64 z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

u64 random_u64(void)
{
	u64 r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

u32 random_u32(void)
{
	return (u32)(random_u64() >> 32);
}

static bool hw_random(bool seed, u64 *out)
{
	int i;
	u8 ok;

	for (i = 0; i < 10; i++) {
		if (seed)
			__asm__ __volatile__("rdseed %0; setc %1" : "=r"(*out), "=qm"(ok));
		else
			__asm__ __volatile__("rdrand %0; setc %1" : "=r"(*out), "=qm"(ok));
		if (ok)
			return true;
	}
	return false;
}

static void mix(u64 v)
{
	u64 x = v;
	int i;

	for (i = 0; i < 4; i++)
		s[i] ^= splitmix(&x);
	if (!(s[0] | s[1] | s[2] | s[3]))
		s[0] = 1;	/* the all-zero state is a fixed point */
	random_u64();
}

void random_init(void)
{
	u32 a, b, c, d;
	bool rdrand, rdseed = false;
	u64 v;
	int i;

	cpuid(1, 0, &a, &b, &c, &d);
	rdrand = (c >> 30) & 1;
	cpuid(0, 0, &a, &b, &c, &d);
	if (a >= 7) {
		cpuid(7, 0, &a, &b, &c, &d);
		rdseed = (b >> 18) & 1;
	}
	mix(rdtsc());
	for (i = 0; i < 4; i++) {
		if (rdseed && hw_random(true, &v)) {
			mix(v);
			source = "rdseed";
		} else if (rdrand && hw_random(false, &v)) {
			mix(v);
			if (source[0] == 't')
				source = "rdrand";
		}
		mix(rdtsc());
	}
}

void random_add_entropy(const void *buf, size_t len)
{
	const u8 *p = buf;
	size_t i;

	for (i = 0; i < len; i += 8) {
		u64 v = 0;
		size_t k;

		for (k = 0; k < 8 && i + k < len; k++)
			v |= (u64)p[i + k] << (8 * k);
		mix(v);
	}
	mix(rdtsc());
	random_entropy_bytes += len;
}

const char *random_source(void)
{
	return source;
}
