/* The output builder; see outbuf.h. */
#include "kernel/outbuf.h"

void outbuf_mem(struct outbuf *o, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++, o->len++)
		if (o->len < o->size)
			o->buf[o->len] = s[i];
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
