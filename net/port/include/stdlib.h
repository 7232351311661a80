/* <stdlib.h> for lwIP in the freestanding kernel. lwIP's core uses only atoi()
 * (netif_find() parses the number in names like "en0"). */
#ifndef VIREO_LWIP_STDLIB_H
#define VIREO_LWIP_STDLIB_H

/* Decimal digits after optional blanks and sign; stops at the first
 * non-digit. Saturates instead of overflowing. */
static inline int atoi(const char *s)
{
	int neg = 0;
	long v = 0;

	while (*s == ' ' || (*s >= '\t' && *s <= '\r'))
		s++;
	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	while (*s >= '0' && *s <= '9') {
		if (v < 0x80000000L)
			v = v * 10 + (*s - '0');
		s++;
	}
	if (neg)
		v = -v;
	if (v > 0x7fffffffL)
		v = 0x7fffffffL;
	if (v < -0x80000000L)
		v = -0x80000000L;
	return (int)v;
}

#endif
