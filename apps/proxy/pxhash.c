/* apps/proxy's consistent hashing: pxhash.h. */
#include "pxhash.h"
#include "vireo/string.h"

u64 px_hash_id(const struct siphash_key *k, const char *label)
{
	return siphash24(k, label, strlen(label));
}

u64 px_hash_score(const struct siphash_key *k, u64 id, const void *key, size_t len)
{
	u64 in[2] = { id, siphash24(k, key, len) };

	return siphash24(k, in, sizeof in);
}

int px_hash_choose(const struct siphash_key *k, const u64 *ids, const struct px_choice *up, unsigned n, u64 now,
		   const void *key, size_t len)
{
	int best = -1, rested = -1;
	u64 best_score = 0;

	for (unsigned i = 0; i < n; i++) {
		u64 s;

		if (!px_usable(up, i, now, &rested))
			continue;
		s = px_hash_score(k, ids[i], key, len);
		if (best < 0 || s > best_score) {
			best = (int)i;
			best_score = s;
		}
	}
	return best >= 0 ? best : rested;
}

void px_hash_seed(struct siphash_key *k, const char *seed)
{
	static const struct siphash_key k0 = { 0x7669726561707831ull, 0x6861736873656564ull },
					k1 = { 0x6861736873656564ull, 0x7669726561707831ull };
	size_t len = strlen(seed);

	k->k0 = siphash24(&k0, seed, len);
	k->k1 = siphash24(&k1, seed, len);
}
