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

/* Splits the field line f[0..n) (no CRLF): field-name ":" OWS field-value
 * OWS. The name is f[0..*name_len), all tchars (so no whitespace before
 * the colon); the value *val[0..*val_len) without its surrounding OWS.
 * False when there is no colon or no name: the request and the
 * upstream-response parsers refuse the line alike. */
static inline bool http_field_split(char *f, size_t n, size_t *name_len, char **val, size_t *val_len)
{
	size_t i, vl;
	char *v;

	for (i = 0; i < n && f[i] != ':'; i++)
		if (!http_is_tchar((u8)f[i]))
			return false;
	if (i == 0 || i == n)
		return false;
	v = f + i + 1;
	vl = n - i - 1;
	while (vl && http_is_ows((u8)v[0])) {
		v++;
		vl--;
	}
	while (vl && http_is_ows((u8)v[vl - 1]))
		vl--;
	*name_len = i;
	*val = v;
	*val_len = vl;
	return true;
}

/* A byte a field value may hold (RFC 9110 5.5: VCHAR, SP, HTAB, obs-text). */
static inline bool http_is_field_byte(u8 c)
{
	return c >= 0x20 ? c != 0x7f : c == '\t';
}

#endif
