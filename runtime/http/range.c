/*
 * Byte ranges (RFC 9110 14.2-14.4, 13.1.5) as nginx answers them for a
 * static file: one satisfiable range is a 206, none is a 416, more than one
 * is served whole (200: no multipart/byteranges here), a Range whose unit is
 * not "bytes" is ignored, and a malformed "bytes=" set is a 416 (nginx's
 * answer; RFC 9110 would also allow ignoring it). If-Range lets the range
 * apply only to the representation the client has: its strong ETag, or its
 * Last-Modified date exactly. And Accept-Encoding's gzip, for the files
 * stored compressed beside the originals (nginx's gzip_static).
 */
#include "kernel/time/wallclock.h"
#include "lib/types.h"
#include "runtime/http/http.h"

static const char *range_sp(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* Decimal digits at *p into *v; false on none or past UINT64_MAX. */
static bool range_num(const char **p, u64 *v)
{
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return false;
	for (*v = 0; *s >= '0' && *s <= '9'; s++) {
		if (*v > (UINT64_MAX - (u64)(*s - '0')) / 10)
			return false;
		*v = *v * 10 + (u64)(*s - '0');
	}
	*p = s;
	return true;
}

int http_byte_range(const char *v, u64 len, u64 *first, u64 *last)
{
	static const char unit[] = "bytes=";
	unsigned found = 0;
	const char *p = v;

	if (!v)
		return HTTP_RANGE_NONE;
	for (size_t i = 0; i < sizeof unit - 1; i++, p++)
		if ((*p | 0x20) != unit[i])	/* ASCII case-insensitive; '=' | 0x20 is '=' */
			return HTTP_RANGE_NONE;	/* another unit: ignored */
	for (;;) {
		u64 start = 0, end;	/* end: one past the last byte */
		bool suffix = false;

		p = range_sp(p);
		if (*p != '-') {
			if (!range_num(&p, &start))
				return HTTP_RANGE_BAD;
			p = range_sp(p);
			if (*p++ != '-')
				return HTTP_RANGE_BAD;
			p = range_sp(p);
			if (*p == ',' || *p == '\0') {
				end = len;	/* "a-": to the end */
				goto have;
			}
		} else {
			suffix = true;
			p++;
		}
		if (!range_num(&p, &end))
			return HTTP_RANGE_BAD;
		p = range_sp(p);
		if (*p != ',' && *p != '\0')
			return HTTP_RANGE_BAD;
		if (suffix) {	/* "-n": the last n bytes */
			start = end < len ? len - end : 0;
			end = len ? len - 1 : 0;
		}
		end = end >= len ? len : end + 1;
have:
		if (start < end) {
			if (found++)
				return HTTP_RANGE_NONE;	/* several: the whole file */
			*first = start;
			*last = end - 1;
		} else if (start == 0) {
			return HTTP_RANGE_NONE;	/* an empty file: served whole */
		}
		if (*p++ != ',')
			break;
	}
	return found ? HTTP_RANGE_ONE : HTTP_RANGE_BAD;
}

bool http_if_range(const char *v, const char *etag, u64 lm)
{
	u64 t;
	size_t i;

	if (!v)
		return true;
	if (v[0] == '"') {	/* an entity tag: strong comparison, so never a W/ */
		if (!etag || etag[0] != '"')
			return false;
		for (i = 0; v[i] && v[i] == etag[i]; i++)
			;
		return v[i] == '\0' && etag[i] == '\0';
	}
	return lm && wallclock_parse_http_date(v, &t) && t == lm;
}

/* Lower-case ASCII of c. */
static u8 range_lower(u8 c)
{
	return c >= 'A' && c <= 'Z' ? (u8)(c + 32) : c;
}

bool http_accepts_coding(const char *v, const char *coding)
{
	const char *p = v;

	if (!v)
		return false;
	while (*p) {
		const char *t, *e;
		size_t n;
		bool q0 = false;

		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		for (t = p; *p && *p != ',' && *p != ';' && *p != ' ' && *p != '\t'; p++)
			;
		n = (size_t)(p - t);
		for (e = p; *e && *e != ','; e++)	/* parameters: ;q=0 (0.0, 0.000) refuses */
			if (*e == '=' && (e[-1] | 0x20) == 'q' && e[1] == '0') {
				const char *d = e + 2;

				if (*d == '.')
					for (d++; *d == '0'; d++)
						;
				q0 = *d == '\0' || *d == ',' || *d == ' ' || *d == '\t' || *d == ';';
			}
		p = e;
		if (q0 || !n)
			continue;
		for (size_t i = 0; i <= n; i++) {
			if (i == n) {
				if (!coding[i])
					return true;
				break;
			}
			if (!coding[i] || range_lower((u8)t[i]) != (u8)coding[i])
				break;
		}
	}
	return false;
}
