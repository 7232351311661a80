/* Parsing helpers shared by the command line, the drivers' settings, the
 * formatter and the HTTP parser: the app API's (include/vireo/parse.h),
 * implemented in lib/parse.c. Pure: the host tests link it as it is. */
#ifndef VIREO_PARSE_H
#define VIREO_PARSE_H

#include "lib/types.h"
#include "vireo/parse.h"

/* A base64 digit's value, or -1: A-Z a-z 0-9 are 0..61, c62 and c63 the
 * last two ('+' '/' in RFC 4648's alphabet, '-' '_' in base64url). */
static inline int parse_b64digit(char c, char c62, char c63)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == c62 ? 62 : c == c63 ? 63 : -1;
}

#endif
