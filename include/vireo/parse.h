/*
 * vireo's application API: number parsing, the kernel's own (lib/parse.c:
 * the command line, the drivers' settings and the HTTP parser use it).
 */
#ifndef VIREO_API_PARSE_H
#define VIREO_API_PARSE_H

#include "vireo/types.h"

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
