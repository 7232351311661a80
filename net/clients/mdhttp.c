/* The metadata client's HTTP/1.1 messages (see mdhttp.h). The response is
 * read into one buffer: the head (at most MDHTTP_HEAD_MAX bytes, the blank
 * line found by a search that resumes where it stopped, so a response
 * dripped one byte at a time costs linear time), then the body (at most
 * MDHTTP_BODY_MAX, its length from Content-Length or the close). */
#include "lib/string.h"
#include "net/clients/mdhttp.h"

#define MDHTTP_MIN(a, b) ((a) < (b) ? (a) : (b))

void mdhttp_init(struct mdhttp *h, char *buf, size_t cap)
{
	memset(h, 0, sizeof *h);
	h->buf = buf;
	h->cap = MDHTTP_MIN(cap, (size_t)MDHTTP_BUF);
}

static char mdhttp_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* name[0..n) is the header name want (ASCII, case-insensitive). */
static bool mdhttp_name_is(const char *name, size_t n, const char *want)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!want[i] || mdhttp_lower(name[i]) != want[i])
			return false;
	return want[i] == '\0';
}

/* RFC 9110's tchar. */
static bool mdhttp_tchar(char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	for (const char *t = "!#$%&'*+-.^_`|~"; *t; t++)
		if (c == *t)
			return true;
	return false;
}

static bool mdhttp_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int mdhttp_status_line(struct mdhttp *h, const char *l, size_t n)
{
	/* "HTTP/1.x NNN" then nothing or " reason" */
	if (n < 12 || memcmp(l, "HTTP/1.", 7) || !mdhttp_digit(l[7]) || l[8] != ' ' || !mdhttp_digit(l[9]) ||
	    !mdhttp_digit(l[10]) || !mdhttp_digit(l[11]) || (n > 12 && l[12] != ' '))
		return MDHTTP_E_STATUS;
	h->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
	/* 1xx: nothing we send asks for one; 6xx and up do not exist. */
	if (h->status < 200 || h->status > 599)
		return MDHTTP_E_STATUS;
	for (size_t i = 12; i < n; i++)
		if ((u8)l[i] < 0x20 && l[i] != '\t')
			return MDHTTP_E_STATUS;
	return 0;
}

static int mdhttp_header(struct mdhttp *h, const char *l, size_t n)
{
	size_t colon = 0, a, b;

	while (colon < n && mdhttp_tchar(l[colon]))
		colon++;
	if (colon == 0 || colon == n || l[colon] != ':')
		return MDHTTP_E_HEADER;	/* also an obs-fold line (starts with a space) */
	for (size_t i = colon + 1; i < n; i++)
		if (((u8)l[i] < 0x20 && l[i] != '\t') || l[i] == 0x7f)
			return MDHTTP_E_HEADER;
	a = colon + 1;
	b = n;
	while (a < b && (l[a] == ' ' || l[a] == '\t'))
		a++;
	while (b > a && (l[b - 1] == ' ' || l[b - 1] == '\t'))
		b--;
	if (mdhttp_name_is(l, colon, "transfer-encoding"))
		return MDHTTP_E_ENCODING;
	if (mdhttp_name_is(l, colon, "content-length")) {
		size_t v = 0;

		if (a == b)
			return MDHTTP_E_LENGTH;
		for (size_t i = a; i < b; i++) {
			if (!mdhttp_digit(l[i]))
				return MDHTTP_E_LENGTH;
			v = v * 10 + (size_t)(l[i] - '0');
			if (v > MDHTTP_BODY_MAX)
				return MDHTTP_E_BODY_BIG;	/* before v can overflow */
		}
		if (h->have_len && h->content_len != v)
			return MDHTTP_E_LENGTH;
		h->have_len = true;
		h->content_len = v;
	}
	return 0;
}

/* buf[0..head_end) is the head, ending "\r\n\r\n". */
static int mdhttp_parse_head(struct mdhttp *h)
{
	size_t pos = 0, end = h->head_end - 2;	/* the last line's CRLF stays in */
	bool first = true;

	while (pos < end) {
		size_t e = pos;
		int r;

		while (e < end && h->buf[e] != '\r' && h->buf[e] != '\n')
			e++;
		/* every line ends in CRLF: a bare CR or LF is refused */
		if (e + 1 >= h->head_end || h->buf[e] != '\r' || h->buf[e + 1] != '\n')
			return first ? MDHTTP_E_STATUS : MDHTTP_E_HEADER;
		r = first ? mdhttp_status_line(h, h->buf + pos, e - pos) : mdhttp_header(h, h->buf + pos, e - pos);
		if (r)
			return r;
		first = false;
		pos = e + 2;
	}
	return first ? MDHTTP_E_STATUS : 0;
}

/* Appends body bytes src[0..n) (src may be where they land: memmove);
 * returns how many were taken (the rest is past the announced length). */
static size_t mdhttp_take_body(struct mdhttp *h, const char *src, size_t n)
{
	size_t body = h->len - h->head_end;

	if (h->have_len)
		n = MDHTTP_MIN(n, h->content_len - body);
	if (body + n > MDHTTP_BODY_MAX || n > h->cap - h->len) {
		h->result = MDHTTP_E_BODY_BIG;
		return 0;
	}
	memmove(h->buf + h->len, src, n);
	h->len += n;
	if (h->have_len && h->len - h->head_end == h->content_len)
		h->result = MDHTTP_DONE;	/* anything after it is ignored */
	return n;
}

int mdhttp_feed(struct mdhttp *h, const void *data, size_t len)
{
	const char *p = data;

	while (len && !h->result) {
		size_t lim, n, i, extra;
		int r;

		if (h->head_end) {
			n = mdhttp_take_body(h, p, len);
			p += n;
			len -= n;
			continue;
		}
		lim = MDHTTP_MIN(h->cap, (size_t)MDHTTP_HEAD_MAX);
		if (h->len >= lim) {
			h->result = MDHTTP_E_HEAD_BIG;
			break;
		}
		n = MDHTTP_MIN(len, lim - h->len);
		memcpy(h->buf + h->len, p, n);
		h->len += n;
		p += n;
		len -= n;
		for (i = h->scan; i + 4 <= h->len; i++)
			if (!memcmp(h->buf + i, "\r\n\r\n", 4))
				break;
		if (i + 4 > h->len) {
			h->scan = h->len >= 3 ? h->len - 3 : 0;
			continue;
		}
		h->head_end = i + 4;
		r = mdhttp_parse_head(h);
		if (r) {
			h->result = r;
			break;
		}
		/* Body bytes copied with the head: taken again as body. */
		extra = h->len - h->head_end;
		h->len = h->head_end;
		if (h->have_len && h->content_len == 0)
			h->result = MDHTTP_DONE;
		else
			mdhttp_take_body(h, h->buf + h->head_end, extra);
	}
	return h->result;
}

int mdhttp_eof(struct mdhttp *h)
{
	if (h->result)
		return h->result;
	if (!h->head_end || h->have_len)
		h->result = MDHTTP_E_TRUNCATED;
	else
		h->result = MDHTTP_DONE;
	return h->result;
}

void mdhttp_body(const struct mdhttp *h, const char **body, size_t *len)
{
	*body = h->buf + h->head_end;
	*len = h->head_end ? h->len - h->head_end : 0;
}

const char *mdhttp_strerror(int result)
{
	switch (result) {
	case MDHTTP_MORE:
		return "incomplete";
	case MDHTTP_DONE:
		return "complete";
	case MDHTTP_E_HEAD_BIG:
		return "response head over 4096 bytes";
	case MDHTTP_E_BODY_BIG:
		return "body over 16384 bytes";
	case MDHTTP_E_STATUS:
		return "malformed status line";
	case MDHTTP_E_HEADER:
		return "malformed header line";
	case MDHTTP_E_LENGTH:
		return "bad Content-Length";
	case MDHTTP_E_ENCODING:
		return "Transfer-Encoding is not supported";
	case MDHTTP_E_TRUNCATED:
		return "connection closed before the response ended";
	default:
		return "unknown error";
	}
}

static size_t mdhttp_put(char *out, size_t size, size_t o, const char *s)
{
	if (o == 0 && size == 0)
		return (size_t)-1;
	for (; o != (size_t)-1 && *s; s++) {
		if (*s == '\r' || *s == '\n' || o >= size)
			return (size_t)-1;
		out[o++] = *s;
	}
	return o;
}

static size_t mdhttp_crlf(char *out, size_t size, size_t o)
{
	if (o == (size_t)-1 || size - o < 2)
		return (size_t)-1;
	out[o++] = '\r';
	out[o++] = '\n';
	return o;
}

size_t mdhttp_request(char *out, size_t size, const char *method, const char *path, const char *host,
		      const char *hdr1, const char *hdr2)
{
	size_t o = 0;

	o = mdhttp_put(out, size, o, method);
	o = mdhttp_put(out, size, o, " ");
	o = mdhttp_put(out, size, o, path);
	o = mdhttp_put(out, size, o, " HTTP/1.1");
	o = mdhttp_crlf(out, size, o);
	o = mdhttp_put(out, size, o, "Host: ");
	o = mdhttp_put(out, size, o, host);
	o = mdhttp_crlf(out, size, o);
	o = mdhttp_put(out, size, o, "User-Agent: vireo");
	o = mdhttp_crlf(out, size, o);
	o = mdhttp_put(out, size, o, "Connection: close");
	o = mdhttp_crlf(out, size, o);
	if (hdr1) {
		o = mdhttp_put(out, size, o, hdr1);
		o = mdhttp_crlf(out, size, o);
	}
	if (hdr2) {
		o = mdhttp_put(out, size, o, hdr2);
		o = mdhttp_crlf(out, size, o);
	}
	o = mdhttp_crlf(out, size, o);
	return o == (size_t)-1 ? 0 : o;
}

bool mdhttp_token_ok(const char *tok, size_t len)
{
	if (len == 0 || len > MDHTTP_TOKEN_MAX || tok[0] == ' ' || tok[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((u8)tok[i] < 0x20 || (u8)tok[i] >= 0x7f)
			return false;
	return true;
}
