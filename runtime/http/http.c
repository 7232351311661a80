/*
 * HTTP/1.1 (RFC 9110, RFC 9112) request heads in, response heads out.
 *
 * The parser works in two steps. http_parse() copies bytes into p->buf until
 * it sees the empty line that ends the head, enforcing the size limits and
 * rejecting control bytes on the way, so a head split anywhere gives the same
 * result as one delivered whole. http_finish() then parses the complete head in
 * place. Nothing here trusts the peer: every length is bounded by buf.
 *
 * Decisions beyond the RFCs' MUSTs: single SP between request-line parts;
 * raw bytes outside RFC 3986's sets in the target are 400; HTTP/1.x with
 * x >= 1 is served as 1.1 (RFC 9110 2.5) while any other major is 505; a
 * repeated Host or Content-Length is 400 even if identical; a line ends in
 * CRLF only (a bare LF is 400, like a bare CR); request bodies are refused
 * (Content-Length > 0: 413 without ext, Transfer-Encoding: 501); with ext
 * a body comes with Content-Length or "Transfer-Encoding: chunked" alone
 * (http_parse_te(): one other coding is 501, a list 400, both fields or TE
 * in HTTP/1.0 400: the body's end must be beyond doubt).
 */
#include "lib/types.h"
#include "lib/outbuf.h"
#include "lib/parse.h"
#include "runtime/http/http.h"
#include "runtime/http/token.h"

enum { ST_HEAD = 0, ST_DONE, ST_ERROR };	/* ST_HEAD is 0: a zeroed parser is ready */

#define TYPE_HTML "text/html; charset=utf-8"

/* ---- byte classes (the shared ones are runtime/http/token.h's) ---- */

/* RFC 3986 pchar minus pct-encoded (handled by the callers). */
static bool http_is_pchar(u8 c)
{
	return http_is_alpha(c) || http_is_digit(c) || http_in_set(c, "-._~!$&'()*+,;=:@");
}

/* RFC 3986 authority without userinfo: reg-name, IP-literal, port. */
static bool http_is_host_char(u8 c)
{
	return http_is_alpha(c) || http_is_digit(c) || http_in_set(c, "-._~!$&'()*+,;=:[]%");
}

static bool http_all_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!http_is_digit((u8)s[i]))
			return false;
	return true;
}

/* host [":" port]: an IP-literal in balanced brackets (hex digits, ':' and
 * '.' inside) or a name without brackets; the port, if any, is digits. */
static bool http_authority_ok(const char *a, size_t n)
{
	size_t i, end;

	if (n == 0)
		return false;
	if (a[0] == '[') {
		for (end = 1; end < n && a[end] != ']'; end++)
			if (parse_hexdigit(a[end]) < 0 && a[end] != ':' && a[end] != '.')
				return false;
		if (end == n || end == 1)
			return false;	/* unclosed or empty */
		i = end + 1;
		return i == n || (a[i] == ':' && http_all_digits(a + i + 1, n - i - 1));
	}
	for (i = 0; i < n && a[i] != ':'; i++)
		if (a[i] == '[' || a[i] == ']')
			return false;
	if (i == 0)
		return false;
	return i == n || http_all_digits(a + i + 1, n - i - 1);
}

/* ---- request parsing ---- */

/* What a request sets, as before any request (and after a failed one). */
static void http_clear_req(struct http_req_parser *p)
{
	p->method = HTTP_METHOD_NONE;
	p->keep_alive = false;
	p->path = NULL;
	p->path_len = 0;
	p->if_none_match = NULL;
	p->if_modified_since = NULL;
	p->host = NULL;
	p->query = NULL;
	p->content_length = 0;
	p->chunked = false;
	p->expect = false;
	p->nfields = 0;
}

void http_parser_reset(struct http_req_parser *p)
{
	p->status = 0;
	http_clear_req(p);
	p->version_minor = 0;
	p->has_host = false;
	p->state = ST_HEAD;
	p->seen_reqline = false;
	p->nheaders = 0;
	p->len = 0;
	p->line_start = 0;
	p->req_start = 0;
}

static int http_fail(struct http_req_parser *p, int status)
{
	p->status = status;
	p->state = ST_ERROR;
	http_clear_req(p);
	return HTTP_ERROR;
}

/* What the header fields said; filled by one pass over them. */
struct head_info {
	bool host, clen, te, close, keep, inm, ims;
	int te_err;		/* a refused Transfer-Encoding: 400 or 501 */
	u64 clen_val;
};

/* One line of the complete head starting at *pos: its start and length
 * without the line ending. The scanner guaranteed the LF is there. */
static char *http_next_line(struct http_req_parser *p, u32 *pos, size_t *len)
{
	char *s = p->buf + *pos;
	size_t n = 0;

	while (s[n] != '\n')
		n++;
	*pos += (u32)n + 1;
	if (n && s[n - 1] == '\r')
		n--;
	*len = n;
	return s;
}

/* A %XX escape at s[0..n): s[0] is '%'. Returns the byte or -1. */
static int http_pct_decode(const char *s, size_t n)
{
	int hi, lo;

	if (n < 3)
		return -1;
	hi = parse_hexdigit(s[1]);
	lo = parse_hexdigit(s[2]);
	if (hi < 0 || lo < 0)
		return -1;
	return hi * 16 + lo;
}

/* Query: pchar / "/" / "?" with well-formed escapes. Ignored otherwise. */
static bool http_query_ok(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		u8 c = (u8)s[i];

		if (c == '%') {
			if (http_pct_decode(s + i, n - i) < 0)
				return false;
			i += 2;
		} else if (!http_is_pchar(c) && c != '/' && c != '?') {
			return false;
		}
	}
	return true;
}

/* True if the decoded path has a ".." segment. */
static bool http_has_dotdot(const char *s, size_t n)
{
	size_t i, seg = 0;	/* start of the current segment */

	for (i = 0; i <= n; i++) {
		if (i == n || s[i] == '/') {
			if (i - seg == 2 && s[seg] == '.' && s[seg + 1] == '.')
				return true;
			seg = i + 1;
		}
	}
	return false;
}

/* Reduce the request target t[0..n) to a decoded path, in place in p->buf.
 * Returns 0 or the error status. t[n] is the SP after the target, so the
 * decoded path (never longer than the raw one) always has room for its NUL. */
static int http_parse_target(struct http_req_parser *p, char *t, size_t n)
{
	size_t i, q, w;


	if (n >= 7 && http_eq_nocase(t, 7, "http://")) {
		/* absolute-form: keep only path and query (RFC 9112 3.2.2). */
		t += 7;
		n -= 7;
		for (i = 0; i < n && t[i] != '/' && t[i] != '?'; i++)
			if (!http_is_host_char((u8)t[i]))
				return 400;	/* includes userinfo '@' and '#' */
		if (!http_authority_ok(t, i))
			return 400;
		t += i;
		n -= i;
		if (n == 0 || t[0] == '?') {
			if (n && !http_query_ok(t + 1, n - 1))
				return 400;
			if (n) {
				t[n] = '\0';	/* the SP after the target */
				p->query = t + 1;
			}
			p->path = "/";
			p->path_len = 1;
			return 0;
		}
	} else if (t[0] != '/') {
		return 400;	/* asterisk-form, authority-form, other schemes */
	}

	for (q = 0; q < n && t[q] != '?'; q++)
		;
	if (q < n && !http_query_ok(t + q + 1, n - q - 1))
		return 400;
	if (q < n) {
		t[n] = '\0';	/* the SP after the target; the path ends before '?' */
		p->query = t + q + 1;
	}

	for (i = 0, w = 0; i < q; i++) {
		int c = (u8)t[i];

		if (c == '%') {
			c = http_pct_decode(t + i, q - i);
			if (c < 0 || c < 0x20 || c == 0x7f)
				return 400;	/* bad escape, NUL or control */
			i += 2;
		} else if (!http_is_pchar((u8)c) && c != '/') {
			return 400;
		}
		t[w++] = (char)c;
	}
	t[w] = '\0';
	if (http_has_dotdot(t, w))
		return 400;
	p->path = t;
	p->path_len = w;
	return 0;
}

/* Connection: #token. Records close / keep-alive; other tokens are ignored. */
static int http_parse_connection(struct head_info *h, const char *v, size_t n)
{
	size_t i = 0, s, e;

	while (i < n) {
		for (s = i; s < n && v[s] != ','; s++)
			;
		e = s;	/* element is v[i..e), then trim OWS */
		while (i < e && http_is_ows((u8)v[i]))
			i++;
		while (e > i && http_is_ows((u8)v[e - 1]))
			e--;
		for (size_t k = i; k < e; k++)
			if (!http_is_tchar((u8)v[k]))
				return 400;
		if (http_eq_nocase(v + i, e - i, "close"))
			h->close = true;
		else if (http_eq_nocase(v + i, e - i, "keep-alive"))
			h->keep = true;
		i = s + 1;
	}
	return 0;
}

/*
 * A Transfer-Encoding value, trimmed: 0 for exactly the one coding
 * "chunked" (any case), the only one served; 501 for one other coding
 * ("gzip", "xchunked": RFC 9112 6.1); 400 for anything else: a list (chunked
 * twice, not last, or after another coding), an empty or quoted value, where
 * the body's end would be in doubt.
 */
static int http_parse_te(const char *v, size_t n)
{
	if (http_eq_nocase(v, n, "chunked"))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!http_is_tchar((u8)v[i]))
			return 400;
	return n ? 501 : 400;
}

/* One field line, name and value already split and the value trimmed. */
static int http_parse_field(struct http_req_parser *p, struct head_info *h, const char *name,
		       size_t nlen, char *v, size_t vlen)
{
	size_t i;

	if (http_eq_nocase(name, nlen, "host")) {
		if (h->host)
			return 400;	/* RFC 9112 3.2: more than one Host */
		for (i = 0; i < vlen; i++)
			if (!http_is_host_char((u8)v[i]))
				return 400;
		h->host = true;
		v[vlen] = '\0';	/* overwrites OWS, CR or LF of this line */
		p->host = v;
	} else if (http_eq_nocase(name, nlen, "connection")) {
		if (http_parse_connection(h, v, vlen))
			return 400;	/* else listed too: an app passing the head on reads it */
	} else if (http_eq_nocase(name, nlen, "content-length")) {
		const char *end = v;
		u64 val;

		/* v[vlen] ends the value (OWS, CR or LF): not a digit. */
		if (h->clen || parse_dec(&end, UINT64_MAX, &val) || end != v + vlen)
			return 400;
		h->clen = true;
		h->clen_val = val;
	} else if (http_eq_nocase(name, nlen, "transfer-encoding")) {
		h->te_err = h->te ? 400 : http_parse_te(v, vlen);	/* twice: a split list */
		h->te = true;
	} else if (http_eq_nocase(name, nlen, "expect")) {
		p->expect = true;
	} else if (http_eq_nocase(name, nlen, "if-none-match")) {
		if (h->inm) {
			p->if_none_match = NULL;	/* split list: ignore, serve 200 */
		} else {
			v[vlen] = '\0';	/* overwrites OWS, CR or LF of this line */
			p->if_none_match = v;
		}
		h->inm = true;
	} else if (http_eq_nocase(name, nlen, "if-modified-since")) {
		if (h->ims) {
			p->if_modified_since = NULL;	/* twice: ignore, serve 200 */
		} else {
			v[vlen] = '\0';	/* overwrites OWS, CR or LF of this line */
			p->if_modified_since = v;
		}
		h->ims = true;
	}
	if (p->ext && p->nfields < HTTP_HEADERS_MAX) {
		struct http_field *f = &p->fields[p->nfields++];

		v[vlen] = '\0';	/* as above: the line is behind the scanner */
		f->name = (u16)(name - p->buf);
		f->name_len = (u16)nlen;
		f->value = (u16)(v - p->buf);
	}
	return 0;
}

/* The method token s[0..m) (case-sensitive, RFC 9110 9.1) with ext. */
static enum http_method http_method_of(const char *s, size_t m)
{
	static const struct {
		const char *name;
		enum http_method method;
	} names[] = {
		{ "POST", HTTP_METHOD_POST },     { "PUT", HTTP_METHOD_PUT },
		{ "DELETE", HTTP_METHOD_DELETE }, { "PATCH", HTTP_METHOD_PATCH },
		{ "OPTIONS", HTTP_METHOD_OPTIONS },
	};
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		for (k = 0; k < m && names[i].name[k] == s[k]; k++)
			;
		if (k == m && names[i].name[k] == '\0')
			return names[i].method;
	}
	return HTTP_METHOD_OTHER;
}

const char *http_header(const struct http_req_parser *p, const char *name)
{
	return p->state == ST_DONE ? http_field_find(p->buf, p->fields, p->nfields, name) : NULL;
}

/* Decodes s[0..n) (percent escapes, '+' as space) into buf[size] with a
 * NUL, or compares it with want (buf NULL). Returns the length, -EINVAL
 * for a bad escape or a NUL byte, -E2BIG when it does not fit, 1 / 0 as
 * "equal" / "differs" when comparing. */
static int http_form_decode(const char *s, size_t n, char *buf, size_t size, const char *want)
{
	size_t i, w = 0;

	for (i = 0; i < n; i++) {
		int c = (u8)s[i];

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			c = http_pct_decode(s + i, n - i);
			if (c < 0)
				return -EINVAL;
			i += 2;
		}
		if (c == 0)
			return -EINVAL;
		if (want) {
			if ((u8)want[w] != c)
				return 0;
		} else {
			if (w + 1 >= size)
				return -E2BIG;
			buf[w] = (char)c;
		}
		w++;
	}
	if (want)
		return want[w] == '\0';
	buf[w] = '\0';
	return (int)w;
}

int http_query_param(const char *query, const char *name, char *buf, size_t size)
{
	const char *s = query;

	if (buf && size)
		buf[0] = '\0';
	if (!s || !buf || !size)
		return -ENOENT;
	while (*s) {
		size_t n = 0, eq;
		int r;

		while (s[n] && s[n] != '&')
			n++;
		for (eq = 0; eq < n && s[eq] != '='; eq++)
			;
		r = http_form_decode(s, eq, NULL, 0, name);
		if (r == 1) {
			r = eq < n ? http_form_decode(s + eq + 1, n - eq - 1, buf, size, NULL) : 0;
			if (r < 0)
				buf[0] = '\0';
			return r;
		}
		s += n;
		if (*s == '&')
			s++;
	}
	return -ENOENT;
}

/* Parse the complete head in p->buf[req_start..len). */
void (*http_raw_keep)(struct http_req_parser *p);

static int http_finish(struct http_req_parser *p)
{
	struct head_info h = { 0 };
	u32 pos = p->req_start;
	size_t n, m, tl, vl, i;
	char *s, *t, *v;
	int err;

	if (http_raw_keep)
		http_raw_keep(p);	/* the raw target, before it is decoded in place */
	/* request-line = method SP request-target SP HTTP-version */
	s = http_next_line(p, &pos, &n);
	for (m = 0; m < n && s[m] != ' '; m++)
		if (!http_is_tchar((u8)s[m]))
			return http_fail(p, 400);
	if (m == 0 || m == n)
		return http_fail(p, 400);
	t = s + m + 1;
	for (tl = 0; m + 1 + tl < n && t[tl] != ' '; tl++)
		;
	if (tl == 0 || m + 1 + tl == n)
		return http_fail(p, 400);
	v = t + tl + 1;
	vl = n - m - tl - 2;
	if (vl != 8 || v[0] != 'H' || v[1] != 'T' || v[2] != 'T' || v[3] != 'P' || v[4] != '/' ||
	    !http_is_digit((u8)v[5]) || v[6] != '.' || !http_is_digit((u8)v[7]))
		return http_fail(p, 400);
	if (v[5] != '1')
		return http_fail(p, 505);
	p->version_minor = v[7] == '0' ? 0 : 1;

	/* field-line = field-name ":" OWS field-value OWS */
	for (;;) {
		char *f = http_next_line(p, &pos, &n);
		char *val;

		if (n == 0)
			break;	/* the empty line that ends the head */
		if (http_is_ows((u8)f[0]))
			return http_fail(p, 400);	/* obs-fold, or whitespace before a field */
		if (!http_field_split(f, n, &i, &val, &vl))
			return http_fail(p, 400);	/* also whitespace before the colon */
		err = http_parse_field(p, &h, f, i, val, vl);
		if (err)
			return http_fail(p, err);
	}

	if (p->version_minor == 1 && !h.host)
		return http_fail(p, 400);
	if (m == 3 && s[0] == 'G' && s[1] == 'E' && s[2] == 'T')
		p->method = HTTP_METHOD_GET;
	else if (m == 4 && s[0] == 'H' && s[1] == 'E' && s[2] == 'A' && s[3] == 'D')
		p->method = HTTP_METHOD_HEAD;
	else if (!p->ext)
		return http_fail(p, 405);
	else
		p->method = http_method_of(s, m);
	err = http_parse_target(p, t, tl);
	if (err)
		return http_fail(p, err);
	if (h.te && !p->ext)
		return http_fail(p, h.clen ? 400 : 501);	/* both at once: smuggling attempt */
	if (h.te && (h.clen || p->version_minor == 0))
		return http_fail(p, 400);	/* the same; 1.0 has no Transfer-Encoding */
	if (h.te && h.te_err)
		return http_fail(p, h.te_err);
	if (h.clen && h.clen_val && !p->ext)
		return http_fail(p, 413);
	p->content_length = h.clen ? h.clen_val : 0;
	p->chunked = h.te;

	p->has_host = h.host;
	if (p->version_minor == 1)
		p->keep_alive = !h.close;
	else
		p->keep_alive = h.keep && !h.close;
	p->status = 0;
	p->state = ST_DONE;
	return HTTP_DONE;
}

int http_parse(struct http_req_parser *p, const u8 *data, size_t len, size_t *consumed)
{
	size_t i;

	*consumed = 0;
	if (p->state == ST_DONE)
		return HTTP_DONE;
	if (p->state == ST_ERROR)
		return HTTP_ERROR;

	for (i = 0; i < len; i++) {
		u8 c = data[i];
		u32 line_len;

		if (p->len == HTTP_HEAD_MAX) {
			*consumed = i;
			return http_fail(p, 431);
		}
		p->buf[p->len++] = (char)c;
		*consumed = i + 1;

		if (c != '\n') {
			/* CR, LF and NUL are never allowed inside a line (RFC 9110
			 * 5.5); other controls are not valid anywhere either. */
			if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
				return http_fail(p, 400);
			if (p->len - p->line_start >= 2 && p->buf[p->len - 2] == '\r')
				return http_fail(p, 400);	/* bare CR */
			/* +1: the line may still end in CRLF. */
			if (!p->seen_reqline && p->len - p->line_start > HTTP_REQLINE_MAX + 1)
				return http_fail(p, 414);
			continue;
		}

		/* Only CRLF ends a line: a bare LF is 400 (RFC 9112 2.2 lets a
		 * server take it; a front end that does not could then disagree
		 * with us on where a header ends, and hide one). */
		line_len = p->len - 1 - p->line_start;
		if (!line_len || p->buf[p->len - 2] != '\r')
			return http_fail(p, 400);
		line_len--;
		if (!p->seen_reqline) {
			if (line_len == 0) {
				/* RFC 9112 2.2: ignore empty lines before the request */
				p->line_start = p->req_start = p->len;
				continue;
			}
			if (line_len > HTTP_REQLINE_MAX)
				return http_fail(p, 414);
			p->seen_reqline = true;
		} else if (line_len == 0) {
			return http_finish(p);
		} else if (++p->nheaders > HTTP_HEADERS_MAX) {
			return http_fail(p, 431);
		}
		p->line_start = p->len;
	}
	return HTTP_NEED_MORE;
}

/* ---- responses ---- */

const char *http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 415: return "Unsupported Media Type";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Content";
	case 428: return "Precondition Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	default: return "";
	}
}

static size_t (*http_date_source)(char *buf, size_t size);

void http_set_date_source(size_t (*fn)(char *buf, size_t size))
{
	http_date_source = fn;
}

size_t http_date(char *buf, size_t size)
{
	size_t n;

	if (!http_date_source || !size)
		return 0;
	n = http_date_source(buf, size);
	if (!n)
		return 0;
	buf[size - 1] = '\0';
	if (n >= size || buf[n] != '\0')	/* not the length it said: measure */
		for (n = 0; buf[n]; n++)
			;
	return n;
}

size_t http_response_head(char *buf, size_t size, int status, const char *content_type,
			  u64 content_length, bool keep_alive, const char *extra_headers)
{
	return http_response_head_len(buf, size, status, content_type, &content_length, keep_alive,
				      extra_headers);
}

size_t http_response_head_len(char *buf, size_t size, int status, const char *content_type,
			      const u64 *content_length, bool keep_alive, const char *extra_headers)
{
	struct outbuf o = { buf, size, 0 };
	char date[40];
	size_t dl;

	if (status < 100 || status > 599)
		return 0;
	outbuf_lit(&o, "HTTP/1.1 ");
	outbuf_u64(&o, (u64)status);
	outbuf_lit(&o, " ");
	outbuf_str(&o, http_reason(status));
	outbuf_lit(&o, "\r\nServer: vireo\r\n");
	dl = http_date(date, sizeof date);
	if (dl) {
		outbuf_lit(&o, "Date: ");
		outbuf_mem(&o, date, dl);
		outbuf_lit(&o, "\r\n");
	}
	if (content_type) {
		outbuf_lit(&o, "Content-Type: ");
		outbuf_str(&o, content_type);
		outbuf_lit(&o, "\r\n");
	}
	if (content_length) {
		outbuf_lit(&o, "Content-Length: ");
		outbuf_u64(&o, *content_length);
		outbuf_lit(&o, "\r\n");
	}
	if (keep_alive)
		outbuf_lit(&o, "Connection: keep-alive\r\n");
	else
		outbuf_lit(&o, "Connection: close\r\n");
	if (extra_headers)
		outbuf_str(&o, extra_headers);
	outbuf_lit(&o, "\r\n");
	return o.len <= size ? o.len : 0;
}

size_t http_error_body(char *buf, size_t size, int status)
{
	struct outbuf o = { buf, buf ? size : 0, 0 };
	const char *reason = http_reason(status);

	if (status < 400 || status > 599 || !reason[0])
		return 0;
	outbuf_str(&o, "<!DOCTYPE html>\n<html><head><title>");
	outbuf_u64(&o, (u64)status);
	outbuf_str(&o, " ");
	outbuf_str(&o, reason);
	outbuf_str(&o, "</title></head>\n<body><h1>");
	outbuf_u64(&o, (u64)status);
	outbuf_str(&o, " ");
	outbuf_str(&o, reason);
	outbuf_str(&o, "</h1>\n<p>vireo</p></body></html>\n");
	if (!buf)
		return o.len;
	return o.len <= size ? o.len : 0;
}

size_t http_error_response(char *buf, size_t size, int status, bool keep_alive, bool head_only)
{
	size_t body = http_error_body(NULL, 0, status), head;

	if (!body)
		return 0;
	head = http_response_head(buf, size, status, TYPE_HTML, body, keep_alive,
				  status == 405 ? "Allow: GET, HEAD\r\n" : NULL);
	if (!head)
		return 0;
	if (head_only)
		return head;
	if (http_error_body(buf + head, size - head, status) != body)
		return 0;
	return head + body;
}

/* ---- validators (content types: mime.c) ---- */

/* Skip a leading W/ (weak indicator). */
static const char *http_strip_weak(const char *s)
{
	return (s[0] == 'W' && s[1] == '/') ? s + 2 : s;
}

/* Length of the quoted opaque-tag at s (quotes included), or 0 if malformed. */
static size_t http_opaque_len(const char *s)
{
	size_t n = 1;

	if (s[0] != '"')
		return 0;
	for (; s[n] != '"'; n++) {
		u8 c = (u8)s[n];

		if (c < 0x21 || c == 0x7f)	/* also the terminating NUL */
			return 0;
	}
	return n + 1;
}

bool http_etag_match(const char *if_none_match, const char *etag)
{
	const char *s = if_none_match, *want;
	size_t want_len, n, i;
	bool matched = false;

	if (!s || !etag)
		return false;
	want = http_strip_weak(etag);
	want_len = http_opaque_len(want);
	if (!want_len)
		return false;

	while (http_is_ows((u8)*s))
		s++;
	if (*s == '*') {
		for (s++; http_is_ows((u8)*s); s++)
			;
		return *s == '\0';
	}
	for (;;) {
		while (http_is_ows((u8)*s) || *s == ',')
			s++;	/* empty list elements are allowed */
		if (!*s)
			return matched;
		s = http_strip_weak(s);
		n = http_opaque_len(s);
		if (!n)
			return false;
		if (n == want_len) {
			for (i = 0; i < n && s[i] == want[i]; i++)
				;
			if (i == n)
				matched = true;
		}
		for (s += n; http_is_ows((u8)*s); s++)
			;
		if (*s && *s != ',')
			return false;
	}
}
