/*
 * The static site: every GET (and HEAD) is answered from the baked files
 * (APP_ROOT, tools/mksite.py) or the ESP's EFI/vireo/site/, zero-copy, with
 * the file's ETag, Last-Modified once the clock is set, and a 304 when
 * If-None-Match matches (or, without it, If-Modified-Since is not older
 * than the file), a single byte range (206, 416, If-Range) as nginx serves
 * it, NAME.gz for clients taking gzip (gzip_static), all by
 * vireo_resp_send_file(). As nginx does, a directory asked for
 * without its slash (/dir, when /dir/index.html is a file) is a 301 to
 * /dir/ with the query kept; a path with no file is 404 with the site's
 * own /404.html when it has one, or (site.fallback=, a single-page app)
 * the fallback file with 200; site.cache= adds Cache-Control by path.
 * The default appliance (make, or make APP=apps/site).
 */
#include "vireo/vireo.h"

/* site.fallback=: a file served (200) for a path with no file, as a
 * single-page app's router wants (nginx: try_files $uri /index.html). */
VIREO_CONFIG_STR(site_fallback, "site.fallback", 128, "",
		 "a site file served (200) for a path with no file, e.g. /index.html for a single-page app; empty: none (404)");

/*
 * site.cache=: Cache-Control per path pattern, "PAT:VALUE;PAT:VALUE...",
 * the first pattern that matches a served file's path wins: a PAT starting
 * with '/' is a path prefix ("/assets/"), one starting with '.' a name's
 * ending (".html"). VALUE is the header's value, printable ASCII but ';'
 * and spaces ("max-age=31536000,immutable", "no-cache"). 255 bytes in all.
 */
static char site_cache[256];

static int site_cache_check(const void *val, char *why, size_t why_len)
{
	const char *s = val;

	while (*s) {
		const char *p = s;

		if (*p != '/' && *p != '.')
			goto bad;
		while (*p && *p != ':' && *p != ';')
			p++;
		if (*p != ':' || p[1] == ';' || !p[1])
			goto bad;
		for (p++; *p && *p != ';'; p++)
			if ((unsigned char)*p <= ' ' || *p == 0x7f)
				goto bad;
		if (*p == ';' && !p[1])
			goto bad;	/* nothing after the last ';' */
		s = *p ? p + 1 : p;
	}
	return 0;
bad:
	vireo_snprintf(why, why_len, "want /prefix:value or .ending:value, ';' between; no Cache-Control");
	return -EINVAL;
}
CMDLINE_PARAM(site_cache, .key = "site.cache", .type = CMDLINE_STR, .dst = site_cache,
	      .dst_size = sizeof site_cache, .validate = site_cache_check, .def = "",
	      .values = "PAT:VALUE;... (PAT /prefix or .ending)",
	      .help = "Cache-Control per path, the first match wins, e.g. /assets/:max-age=31536000,immutable;.html:no-cache");

/* The Cache-Control site.cache= gives path, if any, added to r. */
static __attribute__((cold, noinline)) void site_cache_header(vireo_req r, const char *path)
{
	const char *s = site_cache;
	size_t plen = 0;

	while (path[plen])
		plen++;
	while (*s) {
		const char *c = s, *v, *e;
		size_t n;
		bool hit;

		while (*c != ':')
			c++;	/* site_cache_check() made sure of it */
		n = (size_t)(c - s);
		v = c + 1;
		for (e = v; *e && *e != ';'; e++)
			;
		if (s[0] == '/')
			hit = plen >= n && !__builtin_memcmp(path, s, n);
		else
			hit = plen >= n && !__builtin_memcmp(path + plen - n, s, n);
		if (hit) {
			char val[sizeof site_cache];

			__builtin_memcpy(val, v, (size_t)(e - v));
			val[e - v] = '\0';
			vireo_resp_header(r, "Cache-Control", val);
			return;
		}
		s = *e ? e + 1 : e;
	}
}

/*
 * site.headers=: response headers of the operator's on every file the site
 * serves (200, 206, 304; nginx's add_header without "always"), e.g.
 * "X-Frame-Options:DENY|Referrer-Policy:no-referrer".
 * Entries "Name:value" separated by '|'; a name is an RFC 9110 token and
 * not one the runtime or the site sets itself (below; Cache-Control is
 * site.cache='s, Strict-Transport-Security https.hsts='s, which the
 * runtime sends only while the certificate is CA-issued); a value printable ASCII, spaces allowed inside. At most
 * 8 entries and 200 bytes, so the lines (each name, ": ", value, CRLF: the
 * text plus 2 bytes an entry, <= 216) and site.cache='s (<= 270) fit the
 * 512 bytes of extra headers a response carries (VIREO_RESP_HEADERS_MAX).
 */
#define SITE_HEADERS_MAX 8
static char site_headers[201];

static bool site_name_is(const char *s, size_t n, const char *lower)
{
	size_t i;

	for (i = 0; i < n && lower[i]; i++)
		if ((s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]) != lower[i])
			return false;
	return i == n && !lower[i];
}

/* ch is a letter, a digit or one of other. */
static bool site_alnum_or(unsigned char ch, const char *other)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
		return true;
	for (const char *o = other; *o; o++)
		if (ch == (unsigned char)*o)
			return true;
	return false;
}

/* An RFC 9110 token character. */
static bool site_tchar(unsigned char ch)
{
	return site_alnum_or(ch, "!#$%&'*+-.^_`|~");
}

static int site_headers_check(const void *val, char *why, size_t why_len)
{
	static const char *const own[] = { "content-length", "transfer-encoding", "connection", "server", "date",
					   "content-type", "etag", "last-modified", "content-range", "accept-ranges",
					   "content-encoding", "vary", "location", "strict-transport-security",
					   "cache-control" };
	const char *s = val;
	int entries = 0;

	while (*s) {
		const char *p = s, *v;

		while (*p && *p != ':' && *p != '|' && site_tchar((unsigned char)*p))
			p++;
		if (p == s || *p != ':')
			goto bad;
		for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
			if (site_name_is(s, (size_t)(p - s), own[i])) {
				vireo_snprintf(why, why_len, "%.*s is the server's own header%s", (int)(p - s), s,
					       i == sizeof own / sizeof own[0] - 1 ? " (site.cache= sets it)" :
					       i == sizeof own / sizeof own[0] - 2 ? " (https.hsts= sets it)" : "");
				return -EINVAL;
			}
		for (v = ++p; *p && *p != '|'; p++)
			if ((unsigned char)*p < ' ' || (unsigned char)*p > '~')
				goto bad;
		if (p == v || *v == ' ' || p[-1] == ' ' || ++entries > SITE_HEADERS_MAX || (*p == '|' && !p[1]))
			goto bad;
		s = *p ? p + 1 : p;
	}
	return 0;
bad:
	vireo_snprintf(why, why_len, "want Name:value entries, '|' between, at most %d", SITE_HEADERS_MAX);
	return -EINVAL;
}
CMDLINE_PARAM(site_headers, .key = "site.headers", .type = CMDLINE_STR, .dst = site_headers,
	      .dst_size = sizeof site_headers, .validate = site_headers_check, .def = "",
	      .values = "Name:value|... (at most 8, 200 bytes)",
	      .help = "headers added to every site file served, e.g. X-Frame-Options:DENY|Referrer-Policy:no-referrer");

/* site.headers='s lines, added to r. */
static __attribute__((cold, noinline)) void site_headers_add(vireo_req r)
{
	const char *s = site_headers;

	while (*s) {
		char name[sizeof site_headers], value[sizeof site_headers];
		size_t n = 0, m = 0;

		while (*s != ':')
			name[n++] = *s++;	/* site_headers_check() made sure of it */
		name[n] = '\0';
		for (s++; *s && *s != '|'; s++)
			value[m++] = *s;
		value[m] = '\0';
		vireo_resp_header(r, name, value);
		if (*s)
			s++;
	}
}

/* An RFC 3986 path character that needs no escape (unreserved, sub-delims,
 * ':', '@', '/'). */
static bool site_plain(unsigned char ch)
{
	return site_alnum_or(ch, "-._~!$&'()*+,;=:@/");
}

/* /dir -> 301 /dir/?query when /dir/ has an index. The Location is the
 * path re-escaped, relative to this host (RFC 9110 10.2.2), so a proxy's
 * or a forwarded port's address stays the client's. False if path is no
 * such directory or the Location would not fit the headers. Cold: only a
 * miss comes here (built for size, off the hit's path). */
static __attribute__((cold, noinline)) bool site_redirect_dir(vireo_req r, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	char loc[VIREO_RESP_HEADERS_MAX - 16];
	const char *q = vireo_req_query(r);
	struct vireo_file f;
	size_t n = 0, i;

	for (i = 0; path[i]; i++)
		;
	if (!i || path[i - 1] == '/' || i + 2 > sizeof loc)
		return false;
	for (i = 0; path[i]; i++)
		loc[i] = path[i];
	loc[i] = '/';
	loc[i + 1] = '\0';
	if (!vireo_file_find(loc, &f))
		return false;
	for (i = 0; path[i]; i++) {
		unsigned char ch = (unsigned char)path[i];

		if (n + 4 > sizeof loc)
			return false;
		if (site_plain(ch)) {
			loc[n++] = (char)ch;
		} else {
			loc[n++] = '%';
			loc[n++] = hex[ch >> 4];
			loc[n++] = hex[ch & 15];
		}
	}
	loc[n++] = '/';
	if (q[0]) {
		loc[n++] = '?';
		for (i = 0; q[i]; i++) {	/* already checked and escaped by the parser */
			if (n + 2 > sizeof loc)
				return false;
			loc[n++] = q[i];
		}
	}
	loc[n] = '\0';
	if (vireo_resp_header(r, "Location", loc) < 0)
		return false;
	vireo_resp_send_static(r, 301, NULL, NULL, 0);
	return true;
}

static void site_get(vireo_req r, void *arg)
{
	const char *path = vireo_req_path(r);
	struct vireo_file f;

	(void)arg;
	if (vireo_file_find(path, &f)) {
		/* ETag, Last-Modified, 304, 206/416 or 200, zero-copy: the same
		 * bytes as vireo_resp_header(r, "ETag", f.etag),
		 * vireo_resp_last_modified(r, f.mtime) and vireo_resp_send_static(),
		 * with the file's head lines made when the site was instead of
		 * formatted and checked per request. */
		if (site_cache[0])
			site_cache_header(r, f.path);
		if (site_headers[0])
			site_headers_add(r);
		vireo_resp_send_file(r, &f);
		return;
	}
	if (site_redirect_dir(r, path))
		return;
	if (site_fallback[0] && vireo_file_find(site_fallback, &f)) {
		if (site_cache[0])
			site_cache_header(r, f.path);
		if (site_headers[0])
			site_headers_add(r);
		vireo_resp_send_file(r, &f);
		return;
	}
	if (vireo_file_find("/404.html", &f)) {
		vireo_resp_send_static(r, 404, f.content_type, f.data, f.len);
		return;
	}
	vireo_resp_error(r, 404);
}

static int site_init(void)
{
	return vireo_http_route(&(struct vireo_route){ .path = "/", .prefix = true, .methods = VIREO_GET,
						       .handler = site_get });
}

VIREO_APP(site, .name = "site", .init = site_init, .help = "the static site baked into the image (APP_ROOT)");
