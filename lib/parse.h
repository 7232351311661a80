/* Parsing helpers shared by the command line, the drivers' settings, the
 * formatter and the HTTP parser. Pure: the host tests link lib/parse.c
 * as it is. */
#ifndef VIREO_PARSE_H
#define VIREO_PARSE_H

#include "lib/types.h"

/* Decimal digits at *sp (at least one), value at most max. On success the
 * value goes to *out, *sp moves past the digits and 0 is returned; else
 * -EINVAL (no digit at *sp) or -ERANGE (above max, which also rules out
 * overflow), and *sp and *out are left alone. */
int parse_dec(const char **sp, u64 max, u64 *out);

/* A hexadecimal digit's value (either case), or -1. */
static inline int parse_hexdigit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
