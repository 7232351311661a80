/* HTTP's byte classes and token comparisons (RFC 9110 5.6), shared by the
 * request parser (http.c), the response parser (response.c) and the
 * chunked decoder (chunked.c): static inline, so each keeps the code it
 * had and none grows for the others. Pure. */
#ifndef VIREO_HTTP_TOKEN_H
#define VIREO_HTTP_TOKEN_H

#include "lib/types.h"

static inline u8 http_to_lower(u8 c)
{
	return (c >= 'A' && c <= 'Z') ? (u8)(c + ('a' - 'A')) : c;
}

/* s[0..n) equals the lower-case literal lit, ignoring the case of s. */
static inline bool http_eq_nocase(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!lit[i] || http_to_lower((u8)s[i]) != (u8)lit[i])
			return false;
	return lit[n] == '\0';
}

static inline bool http_is_digit(u8 c)
{
	return c >= '0' && c <= '9';
}

static inline bool http_is_alpha(u8 c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static inline bool http_in_set(u8 c, const char *set)
{
	for (; *set; set++)
		if ((u8)*set == c)
			return true;
	return false;
}

/* RFC 9110 5.6.2 tchar. */
static inline bool http_is_tchar(u8 c)
{
	return http_is_alpha(c) || http_is_digit(c) || http_in_set(c, "!#$%&'*+-.^_`|~");
}

static inline bool http_is_ows(u8 c)
{
	return c == ' ' || c == '\t';
}

/* A byte a field value may hold (RFC 9110 5.5: VCHAR, SP, HTAB, obs-text). */
static inline bool http_is_field_byte(u8 c)
{
	return c >= 0x20 ? c != 0x7f : c == '\t';
}

#endif
