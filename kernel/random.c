/* The kernel instance of the ChaCha20 generator and its entropy sources.
 *
 * Boot seed, in one csprng_mix() call so nothing is served in between:
 *  - RDSEED (4 x 64 bits), else RDRAND (4 x 64 bits), when CPUID says the
 *    CPU has them (QEMU's TCG "qemu64" has neither; "-cpu max" has both);
 *  - JITTER_SAMPLES TSC deltas across a CPUID, which traps to the
 *    hypervisor or runs microcode and so varies by a few cycles even on a
 *    quiet machine (TCG: by the host's scheduling). Without RDSEED/RDRAND
 *    and before virtio-rng, this and the boot-time TSC are all there is: a
 *    weak seed that the log names as such;
 *  - the TSC itself.
 * Later, each virtio-rng completion is mixed in as it arrives
 * (random_add_entropy), so the key is fully seeded from the device within
 * the first completion. */
#include "kernel/console.h"
#include "lib/crypto/csprng.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/random.h"
#include "lib/string.h"

#define JITTER_SAMPLES	256
#define HW_WORDS	4	/* 256 bits */

static struct csprng rng;
static char source[48] = "unseeded";
static bool device_seen;
u64 random_entropy_bytes;

static bool random_hw(bool seed, u64 *out)
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

void random_init(void)
{
	struct {
		u64 tsc;
		u64 hw[HW_WORDS];
		u16 jitter[JITTER_SAMPLES];
	} seed = { 0 };
	u32 a, b, c, d;
	bool has_rdrand, has_rdseed = false;
	const char *hw = NULL;
	unsigned int i, got = 0;

	cpuid(1, 0, &a, &b, &c, &d);
	has_rdrand = (c >> 30) & 1;
	cpuid(0, 0, &a, &b, &c, &d);
	if (a >= 7) {
		cpuid(7, 0, &a, &b, &c, &d);
		has_rdseed = (b >> 18) & 1;
	}
	for (i = 0; i < HW_WORDS; i++) {
		if (has_rdseed && random_hw(true, &seed.hw[i])) {
			got++;
			hw = "rdseed";
		} else if (has_rdrand && random_hw(false, &seed.hw[i])) {
			got++;
			if (!hw)
				hw = "rdrand";
		}
	}
	for (i = 0; i < JITTER_SAMPLES; i++) {
		u64 t0 = rdtsc();

		cpuid(0, 0, &a, &b, &c, &d);
		seed.jitter[i] = (u16)(rdtsc() - t0);
	}
	seed.tsc = rdtsc();

	csprng_init(&rng);
	csprng_mix(&rng, &seed, sizeof(seed));
	for (i = 0; i < sizeof(seed); i++)
		((volatile u8 *)&seed)[i] = 0;

	ksnprintf(source, sizeof(source), "%s%stsc-jitter", hw ? hw : "", hw ? "+" : "");
	kprintf("random: chacha20 generator seeded from %s (%u bits from the CPU, %u jitter samples)%s\n",
		source, got * 64, JITTER_SAMPLES,
		hw ? "" : "; no RDSEED/RDRAND: weak until virtio-rng entropy arrives");
}

void random_add_entropy(const void *buf, size_t len)
{
	u64 tsc = rdtsc();

	csprng_mix(&rng, buf, len);
	csprng_mix(&rng, &tsc, sizeof(tsc));
	random_entropy_bytes += len;
	if (!device_seen) {
		size_t n = strnlen(source, sizeof(source));

		device_seen = true;
		ksnprintf(source + n, sizeof(source) - n, "+virtio-rng");
		kprintf("random: reseeded with %zu bytes from virtio-rng (now %s)\n", len, source);
	}
}

void random_bytes(void *buf, size_t len)
{
	csprng_bytes(&rng, buf, len);
}

u32 random_u32(void)
{
	u32 v;

	csprng_bytes(&rng, &v, sizeof(v));
	return v;
}

u64 random_u64(void)
{
	u64 v;

	csprng_bytes(&rng, &v, sizeof(v));
	return v;
}

const char *random_source(void)
{
	return source;
}
