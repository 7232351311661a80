/* apps/proxy's pure parts: pxhead.h. */
#include "pxhead.h"
#include "vireo/string.h"

static char px_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

/* name[0..n) equals lit (lower case) ignoring case. */
bool px_name_is(const char *name, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n && lit[i]; i++)
		if (px_lower(name[i]) != lit[i])
			return false;
	return i == n && !lit[i];
}

int px_parse_upstreams(const char *s, struct px_upstream_addr *out, unsigned max)
{
	unsigned n = 0;

	for (;;) {
		const char *e = s, *colon = NULL, *h = s;
		size_t hl;
		u32 port = 0, def = 0;	/* a scheme's port when none is given */
		bool tls = false;

		if (!strncmp(s, "https://", 8)) {
			s += 8;
			def = 443;
			tls = true;
		} else if (!strncmp(s, "http://", 7)) {
			s += 7;
			def = 80;
		}
		h = e = s;
		while (*e && *e != ',')
			e++;
		if (*s == '[') {	/* [v6]:port */
			const char *b = s + 1;

			while (b < e && *b != ']')
				b++;
			if (b >= e || (b + 1 < e && b[1] != ':') || (b + 1 == e && !def))
				return -EINVAL;
			h = s + 1;
			hl = (size_t)(b - h);
			colon = b + 1 < e ? b + 1 : NULL;
		} else {
			for (const char *p = s; p < e; p++)
				if (*p == ':')
					colon = p;
			if (!colon && !def)
				return -EINVAL;
			hl = (size_t)((colon ? colon : e) - s);
		}
		if (!hl || hl > PX_HOST_MAX || (colon && colon + 1 == e))
			return -EINVAL;
		for (size_t i = 0; i < hl; i++) {
			char c = h[i];

			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
			      c == '-' || (c == ':' && *s == '[')))
				return -EINVAL;
		}
		for (const char *p = colon ? colon + 1 : e; p < e; p++) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			port = port * 10 + (u32)(*p - '0');
			if (port > 65535)
				return -EINVAL;
		}
		if (!colon)
			port = def;
		if (!port)
			return -EINVAL;
		if (n == max)
			return -E2BIG;
		__builtin_memcpy(out[n].host, h, hl);
		out[n].host[hl] = '\0';
		out[n].port = (u16)port;
		out[n].tls = tls;
		n++;
		if (!*e)
			return (int)n;
		s = e + 1;
	}
}

/* Whether the comma-separated list conn names name[0..n). */
static bool px_named(const char *conn, const char *name, size_t n)
{
	while (conn && *conn) {
		const char *t, *e;

		while (*conn == ' ' || *conn == '\t' || *conn == ',')
			conn++;
		t = conn;
		while (*conn && *conn != ',')
			conn++;
		e = conn;
		while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - t) == n) {
			size_t i;

			for (i = 0; i < n && px_lower(t[i]) == px_lower(name[i]); i++)
				;
			if (i == n)
				return true;
		}
	}
	return false;
}

bool px_hop_by_hop(const char *name, size_t n, const char *conn)
{
	static const char *const hop[] = { "connection", "keep-alive", "te", "trailer", "transfer-encoding",
					   "upgrade" };

	for (unsigned i = 0; i < ARRAY_SIZE(hop); i++)
		if (px_name_is(name, n, hop[i]))
			return true;
	if (n >= 6 && px_name_is(name, 6, "proxy-"))
		return true;
	return px_named(conn, name, n);
}

bool px_upgrade(const char *conn, const char *upgrade)
{
	if (!px_named(conn, "upgrade", 7) || !upgrade || !*upgrade)
		return false;
	for (; *upgrade; upgrade++)	/* protocol names: tokens, '/', ',' and spaces */
		if ((u8)*upgrade < 0x20 || (u8)*upgrade >= 0x7f || *upgrade == '"' || *upgrade == ';')
			return false;
	return true;
}

/* RFC 3986 pchar but pct-encoded, and '/'. */
static bool px_keep(u8 c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	for (const char *o = "-._~!$&'()*+,;=:@/"; *o; o++)
		if (c == (u8)*o)
			return true;
	return false;
}

static size_t px_target_of(const char *path, bool raw, const char *query, char *out, size_t size)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t w = 0;

	for (const char *p = path; *p; p++) {
		u8 c = (u8)*p;

		/* a raw path's escapes are the client's: kept as they came */
		if (px_keep(c) || (raw && c == '%')) {
			if (w + 1 >= size)
				return 0;
			out[w++] = (char)c;
		} else {
			if (w + 3 >= size)
				return 0;
			out[w++] = '%';
			out[w++] = hex[c >> 4];
			out[w++] = hex[c & 15];
		}
	}
	if (query && *query) {
		size_t ql = strlen(query);

		if (w + 1 + ql >= size)
			return 0;
		out[w++] = '?';
		__builtin_memcpy(out + w, query, ql);
		w += ql;
	}
	if (!w || w >= size)
		return 0;
	out[w] = '\0';
	return w;
}

size_t px_target(const char *path, const char *query, char *out, size_t size)
{
	return px_target_of(path, false, query, out, size);
}

size_t px_target_raw(const char *raw, const char *query, char *out, size_t size)
{
	return px_target_of(raw, true, query, out, size);
}

bool px_usable(const struct px_choice *up, unsigned i, u64 now, int *rested)
{
	if (up[i].tried)
		return false;
	if (up[i].down_until > now) {
		if (*rested < 0 || up[i].down_until < up[*rested].down_until)
			*rested = (int)i;
		return false;
	}
	return true;
}

int px_choose(const struct px_choice *up, unsigned n, u64 now, bool least, u32 *rr)
{
	int best = -1, rested = -1;

	for (unsigned k = 0; k < n; k++) {
		unsigned i = (*rr + k) % n;

		if (!px_usable(up, i, now, &rested))
			continue;
		if (best < 0 || (least && up[i].active < up[best].active))
			best = (int)i;
		if (!least)
			break;
	}
	if (best < 0)
		best = rested;
	if (best >= 0)
		*rr = ((u32)best + 1) % n;
	return best;
}

const u32 px_lat_bounds[PX_LAT_BUCKETS] = { 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000, 0xffffffffu };

unsigned px_lat_bucket(u64 ms)
{
	unsigned i = 0;

	while (i + 1 < PX_LAT_BUCKETS && ms > px_lat_bounds[i])
		i++;
	return i;
}

u32 px_lat_quantile(const u64 counts[PX_LAT_BUCKETS], unsigned permille)
{
	u64 total = 0, seen = 0, want;

	for (unsigned i = 0; i < PX_LAT_BUCKETS; i++)
		total += counts[i];
	if (!total)
		return 0;
	want = (total * permille + 999) / 1000;	/* the rank, rounded up */
	if (!want)
		want = 1;
	for (unsigned i = 0; i < PX_LAT_BUCKETS; i++) {
		seen += counts[i];
		if (seen >= want)
			return px_lat_bounds[i];
	}
	return px_lat_bounds[PX_LAT_BUCKETS - 1];
}

/* RFC 9110 5.6.2 tchar. */
static bool px_tchar(u8 c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	for (const char *o = "!#$%&'*+-.^_`|~"; *o; o++)
		if (c == (u8)*o)
			return true;
	return false;
}

size_t px_forwarded(const char *addr, bool https, const char *host, char *out, size_t size)
{
	size_t w = 0;
	bool v6 = false, token = true, ctl = false;

#define PX_PUT(c)                        \
	do {                             \
		if (w + 1 >= size)       \
			return 0;        \
		out[w++] = (char)(c);    \
	} while (0)
#define PX_PUTS(s)                                \
	do {                                      \
		for (const char *q_ = (s); *q_; q_++) \
			PX_PUT(*q_);              \
	} while (0)
	if (!size)
		return 0;
	PX_PUTS("for=");
	for (const char *a = addr; a && *a; a++) {
		bool hex = (*a >= '0' && *a <= '9') || (*a >= 'a' && *a <= 'f') || (*a >= 'A' && *a <= 'F');

		if (!hex && *a != '.' && *a != ':')
			addr = NULL;	/* not an address's text */
		else
			v6 |= *a == ':';
	}
	if (!addr || !*addr) {
		PX_PUTS("unknown");
	} else {
		if (v6)
			PX_PUTS("\"[");
		PX_PUTS(addr);
		if (v6)
			PX_PUTS("]\"");
	}
	PX_PUTS(https ? ";proto=https" : ";proto=http");
	if (host && *host) {
		for (const char *h = host; *h; h++) {
			token &= px_tchar((u8)*h);
			ctl |= (u8)*h < 0x20 || (u8)*h == 0x7f;
		}
		if (!ctl) {
			PX_PUTS(";host=");
			if (!token)
				PX_PUT('"');
			for (const char *h = host; *h; h++) {
				if (*h == '"' || *h == '\\')
					PX_PUT('\\');
				PX_PUT(*h);
			}
			if (!token)
				PX_PUT('"');
		}
	}
#undef PX_PUTS
#undef PX_PUT
	out[w] = '\0';
	return w;
}

int px_parse_ms(const char *s, u64 min_ms, u64 max_ms, u64 *ms)
{
	u64 v = 0, unit = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (u64)(*p - '0');
		if (v > max_ms)
			return -EINVAL;
	}
	if (p[0] == 's' && !p[1])
		unit = 1000;
	else if (!(p[0] == 'm' && p[1] == 's' && !p[2]) && *p)
		return -EINVAL;
	v *= unit;
	if (v < min_ms || v > max_ms)
		return -EINVAL;
	*ms = v;
	return 0;
}

int px_health_step(struct px_health *h, bool ok, u32 rise, u32 fall)
{
	if (ok != h->down) {
		h->run = 0;	/* agrees with the state: a run against it ends */
		return 0;
	}
	if (++h->run < (h->down ? rise : fall))
		return 0;
	h->down = !h->down;
	h->run = 0;
	return h->down ? -1 : 1;
}
