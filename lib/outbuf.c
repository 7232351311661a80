/* The output builder; see outbuf.h. */
#include "lib/outbuf.h"

char *outbuf_put(char *d, const char *s, size_t n)
{
	for (; n >= 8; n -= 8, d += 8, s += 8)
		__builtin_memcpy(d, s, 8);
	if (n & 4) {
		__builtin_memcpy(d, s, 4);
		d += 4;
		s += 4;
	}
	if (n & 2) {
		__builtin_memcpy(d, s, 2);
		d += 2;
		s += 2;
	}
	if (n & 1)
		*d++ = *s;
	return d;
}

void outbuf_mem(struct outbuf *o, const char *s, size_t n)
{
	if (o->len < o->size)
		outbuf_put(o->buf + o->len, s, MIN(n, o->size - o->len));
	o->len += n;
}

void outbuf_str(struct outbuf *o, const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	outbuf_mem(o, s, n);
}

void outbuf_u64(struct outbuf *o, u64 v)
{
	char tmp[20];	/* 18446744073709551615 */
	size_t n = sizeof tmp;

	do {
		tmp[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	outbuf_mem(o, tmp + n, sizeof tmp - n);
}
