/* apps/proxy's access log line: pxlog.h. */
#include "pxlog.h"
#include "vireo/string.h"

size_t px_log_escape(const char *s, char *out, size_t room)
{
	static const char hex[] = "0123456789abcdef";
	size_t w = 0;

	if (!room)
		return 0;
	for (; *s; s++) {
		u8 c = (u8)*s;

		if (c == '"' || c == '\\') {
			if (w + 2 > room - 1)
				break;
			out[w++] = '\\';
			out[w++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			if (w + 4 > room - 1)
				break;
			out[w++] = '\\';
			out[w++] = 'x';
			out[w++] = hex[c >> 4];
			out[w++] = hex[c & 15];
		} else {
			if (w + 1 > room - 1)
				break;
			out[w++] = (char)c;
		}
	}
	out[w] = '\0';
	return w;
}

/* Days since 1970-01-01 to the civil date (proleptic Gregorian): eras of
 * 400 years (146,097 days) from 0000-03-01, so the leap day ends a year. */
static void px_civil(u64 days, u64 *y, unsigned *m, unsigned *d)
{
	u64 z = days + 719468;	/* days from 0000-03-01 */
	u64 era = z / 146097, doe = z - era * 146097;
	u64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	u64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	u64 mp = (5 * doy + 2) / 153;

	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

void px_log_time(u64 unix_s, char out[27])
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	u64 y, sod = unix_s % 86400;
	unsigned m, d;
	char *o = out;

	px_civil(unix_s / 86400, &y, &m, &d);
	if (y > 9999)
		y = 9999;	/* the field's width */
	*o++ = (char)('0' + d / 10);
	*o++ = (char)('0' + d % 10);
	*o++ = '/';
	__builtin_memcpy(o, months + (m - 1) * 3, 3);
	o += 3;
	*o++ = '/';
	*o++ = (char)('0' + y / 1000);
	*o++ = (char)('0' + y / 100 % 10);
	*o++ = (char)('0' + y / 10 % 10);
	*o++ = (char)('0' + y % 10);
	for (unsigned i = 0; i < 3; i++) {
		unsigned v = i == 0 ? (unsigned)(sod / 3600) : i == 1 ? (unsigned)(sod / 60 % 60) : (unsigned)(sod % 60);

		*o++ = ':';
		*o++ = (char)('0' + v / 10);
		*o++ = (char)('0' + v % 10);
	}
	__builtin_memcpy(o, " +0000", 7);
}

/* Appends s whole (a part the line's arithmetic counts). */
static size_t px_put(char *out, size_t w, const char *s)
{
	size_t n = strlen(s);

	if (w + n >= PX_LOG_LINE)
		n = PX_LOG_LINE - 1 - w;	/* never: PX_LOG_FIXED says so */
	__builtin_memcpy(out + w, s, n);
	return w + n;
}

/* Appends the decimal v. */
static size_t px_put_u(char *out, size_t w, u64 v)
{
	char d[21];
	unsigned i = sizeof d - 1;

	d[i] = '\0';
	do {
		d[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return px_put(out, w, d + i);
}

/* Appends s escaped, at most max bytes; "-" for NULL when dash. */
static size_t px_put_esc(char *out, size_t w, const char *s, size_t max)
{
	return w + px_log_escape(s, out + w, max + 1);
}

size_t px_log_format(const struct px_log_entry *e, char out[PX_LOG_LINE])
{
	char t[27], req[PX_LOG_REQ_MAX + 1];
	size_t w = 0, rl = 0;
	int st = e->status < 100 || e->status > 999 ? 0 : e->status;

	w = e->addr && *e->addr ? px_put_esc(out, w, e->addr, PX_LOG_ADDR_MAX) : px_put(out, w, "-");
	w = px_put(out, w, " - - [");
	if (e->have_time) {
		px_log_time(e->unix_s, t);
		w = px_put(out, w, t);
	} else {
		w = px_put(out, w, "-");
	}
	w = px_put(out, w, "] \"");
	/* the request line's parts, escaped together under one cap */
	rl += px_log_escape(e->method ? e->method : "-", req + rl, sizeof req - rl);
	if (rl < PX_LOG_REQ_MAX)
		req[rl++] = ' ';
	rl += px_log_escape(e->target ? e->target : "-", req + rl, sizeof req - rl);
	if (e->version && rl < PX_LOG_REQ_MAX) {
		req[rl++] = ' ';
		rl += px_log_escape(e->version, req + rl, sizeof req - rl);
	}
	req[rl] = '\0';
	w = px_put(out, w, req);
	w = px_put(out, w, "\" ");
	w = px_put_u(out, w, (u64)st);
	w = px_put(out, w, " ");
	w = px_put_u(out, w, e->bytes);
	w = px_put(out, w, " \"");
	w = e->referer ? px_put_esc(out, w, e->referer, PX_LOG_REF_MAX) : px_put(out, w, "-");
	w = px_put(out, w, "\" \"");
	w = e->agent ? px_put_esc(out, w, e->agent, PX_LOG_UA_MAX) : px_put(out, w, "-");
	w = px_put(out, w, "\" upstream=");
	w = e->upstream ? px_put_esc(out, w, e->upstream, PX_LOG_UP_MAX) : px_put(out, w, "-");
	w = px_put(out, w, " upstream_ms=");
	w = e->upstream_ms >= 0 ? px_put_u(out, w, (u64)e->upstream_ms) : px_put(out, w, "-");
	out[w] = '\0';
	return w;
}
