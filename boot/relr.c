/* ELF RELR decoding: see boot/relr.h. */
#include "boot/relr.h"

void relr_apply(u64 base, const u64 *relr, size_t n)
{
	u64 *where = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		u64 e = relr[i];
		unsigned int bit;

		if (!(e & 1)) {
			where = (u64 *)(base + e);
			*where++ += base;
			continue;
		}
		if (!where)	/* a bitmap before any address: nothing to anchor it */
			continue;
		for (bit = 1; bit < 64; bit++)
			if (e >> bit & 1)
				where[bit - 1] += base;
		where += 63;
	}
}
