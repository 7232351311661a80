/* The LZ77 decoder of boot/lz.h: every length is checked against what is
 * left of the input and the output before it is used. */
#include "boot/lz.h"

/* Eight bytes at once (a fixed-size copy GCC turns into one load and one
 * store), inside [0, n) of both; the rest byte by byte. */
static void lz_copy(u8 *d, const u8 *s, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		u64 w;

		__builtin_memcpy(&w, s + i, 8);
		__builtin_memcpy(d + i, &w, 8);
	}
	for (; i < n; i++)
		d[i] = s[i];
}

/* A length nibble of 15 continues: add bytes until one below 255. The sum
 * is bounded by cap + 1 so that no count can wrap. */
static bool lz_more(const u8 **p, const u8 *end, size_t *n, size_t cap)
{
	u8 b;

	do {
		if (*p == end)
			return false;
		b = *(*p)++;
		*n += b;
		if (*n > cap)
			return false;
	} while (b == 255);
	return true;
}

int lz_decode(u8 *dst, size_t dst_len, const u8 *src, size_t src_len)
{
	const u8 *p = src, *end = src + src_len;
	size_t o = 0;

	while (p < end) {
		u8 tok = *p++;
		size_t lit = tok >> 4, len = tok & 15, dist;

		if (lit == 15 && !lz_more(&p, end, &lit, dst_len))
			return -1;
		if (lit > (size_t)(end - p) || lit > dst_len - o)
			return -1;
		lz_copy(dst + o, p, lit);
		p += lit;
		o += lit;
		if (p == end)
			return len == 0 && o == dst_len ? 0 : -1;
		if (end - p < 2)
			return -1;
		dist = (size_t)p[0] | (size_t)p[1] << 8;
		p += 2;
		len += LZ_MIN_MATCH;
		if (len == 15 + LZ_MIN_MATCH && !lz_more(&p, end, &len, dst_len))
			return -1;
		if (dist == 0 || dist > o || len > dst_len - o)
			return -1;
		/* A match may overlap the bytes it writes: eight at a time
		 * only when each chunk's source is already written. */
		if (dist >= 8)
			lz_copy(dst + o, dst + o - dist, len);
		else
			for (size_t i = 0; i < len; i++)
				dst[o + i] = dst[o + i - dist];
		o += len;
	}
	return -1;	/* empty, or no literals-only sequence at the end */
}
