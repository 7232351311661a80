/* Parsing helpers; see parse.h. */
#include "lib/parse.h"

int parse_dec(const char **sp, u64 max, u64 *out)
{
	const char *s = *sp;
	u64 v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		u64 d = (u64)(*s - '0');

		if (v > (max - d) / 10 || d > max)
			return -ERANGE;
		v = v * 10 + d;
	}
	*sp = s;
	*out = v;
	return 0;
}
