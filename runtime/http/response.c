/*
 * HTTP/1.1 responses from an upstream (runtime/http/response.h). As the
 * request parser does (http.c), the head is copied into buf while it is
 * scanned (bounds, control bytes, line endings), so a head split anywhere
 * parses as one delivered whole, and is parsed in place once complete.
 */
#include "lib/parse.h"
#include "runtime/http/response.h"
#include "runtime/http/token.h"

enum { RS_HEAD = 0, RS_BODY, RS_END, RS_ERROR };

void http_resp_reset(struct http_resp_parser *p, bool head_req)
{
	p->status = 0;
	p->version_minor = 0;
	p->keep_alive = false;
	p->body = HTTP_BODY_NONE;
	p->content_length = 0;
	p->body_seen = 0;
	p->err = 0;
	p->nfields = 0;
	p->head_req = head_req;
	p->state = RS_HEAD;
	p->interim = 0;
	p->len = 0;
	p->line_start = 0;
	p->total = 0;
	chunked_init(&p->ch);
}

static int http_resp_fail(struct http_resp_parser *p, int err)
{
	p->err = err;
	p->state = RS_ERROR;
	p->keep_alive = false;
	return HTTP_RESP_ERROR;
}

/* What the fields said about framing. */
struct resp_info {
	bool clen, te, close, keep;
	u64 clen_val;
};

/* The complete head in buf[0..len): the status line and the fields. */
static int http_resp_finish(struct http_resp_parser *p)
{
	struct resp_info h = { 0 };
	char *s = p->buf, *end = p->buf + p->len;
	size_t n;

	/* HTTP-version SP 3DIGIT [SP reason-phrase]: the scanner checked the
	 * bytes (no controls but HTAB), so the reason needs no more. */
	for (n = 0; s[n] != '\r'; n++)
		;
	if (n < 12 || s[0] != 'H' || s[1] != 'T' || s[2] != 'T' || s[3] != 'P' || s[4] != '/' ||
	    s[5] != '1' || s[6] != '.' || !http_is_digit((u8)s[7]) || s[8] != ' ' ||
	    !http_is_digit((u8)s[9]) || !http_is_digit((u8)s[10]) || !http_is_digit((u8)s[11]) ||
	    (n > 12 && s[12] != ' ') || s[9] == '0')
		return http_resp_fail(p, HTTP_RESP_EFRAMING);
	p->version_minor = s[7] == '0' ? 0 : 1;
	p->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	s += n + 2;
	p->nfields = 0;

	/* field-line = field-name ":" OWS field-value OWS */
	while (s < end && *s != '\r') {
		char *v;
		size_t i, vl;

		for (n = 0; s[n] != '\r'; n++)
			;
		if (!http_field_split(s, n, &i, &v, &vl))
			return http_resp_fail(p, HTTP_RESP_EFRAMING);	/* obs-fold, space before ':' */
		if (http_eq_nocase(s, i, "content-length")) {
			const char *e = v;

			if (h.clen || parse_dec(&e, UINT64_MAX, &h.clen_val) || e != v + vl)
				return http_resp_fail(p, HTTP_RESP_EFRAMING);
			h.clen = true;
		} else if (http_eq_nocase(s, i, "transfer-encoding")) {
			if (h.te || !http_eq_nocase(v, vl, "chunked"))
				return http_resp_fail(p, HTTP_RESP_EFRAMING);	/* repeated, a list, unknown */
			h.te = true;
		} else if (http_eq_nocase(s, i, "connection")) {
			/* #token: close and keep-alive matter, others are ignored */
			for (size_t k = 0; k < vl;) {
				size_t e = k, b;

				while (e < vl && v[e] != ',')
					e++;
				for (b = k; b < e && http_is_ows((u8)v[b]); b++)
					;
				for (k = e; k > b && http_is_ows((u8)v[k - 1]); k--)
					;
				if (http_eq_nocase(v + b, k - b, "close"))
					h.close = true;
				else if (http_eq_nocase(v + b, k - b, "keep-alive"))
					h.keep = true;
				k = e + 1;
			}
		}
		if (p->nfields == HTTP_HEADERS_MAX)
			return http_resp_fail(p, HTTP_RESP_ETOO_LARGE);
		v[vl] = '\0';	/* over OWS or the CR: the line is behind us */
		p->fields[p->nfields++] = (struct http_field){ (u16)(s - p->buf), (u16)i, (u16)(v - p->buf) };
		s += n + 2;
	}

	if (h.clen && h.te)
		return http_resp_fail(p, HTTP_RESP_EFRAMING);	/* CL.TE: which one ends it? */
	if (h.te && p->version_minor == 0)
		return http_resp_fail(p, HTTP_RESP_EFRAMING);
	p->keep_alive = p->version_minor ? !h.close : h.keep && !h.close;
	if (p->status == 101) {
		p->body = HTTP_BODY_NONE;
		p->keep_alive = false;	/* the connection is another protocol's now */
	} else if (p->head_req || p->status == 204 || p->status == 304) {
		p->body = HTTP_BODY_NONE;
	} else if (h.te) {
		p->body = HTTP_BODY_CHUNKED;
	} else if (h.clen) {
		if (p->body_max && h.clen_val > p->body_max)
			return http_resp_fail(p, HTTP_RESP_ETOO_LARGE);
		p->body = HTTP_BODY_LENGTH;
		p->content_length = h.clen_val;
	} else {
		p->body = HTTP_BODY_CLOSE;
		p->keep_alive = false;
	}
	p->state = p->body == HTTP_BODY_NONE || (p->body == HTTP_BODY_LENGTH && !p->content_length) ? RS_END :
										  RS_BODY;
	return HTTP_RESP_HEAD;
}

int http_resp_head(struct http_resp_parser *p, const u8 *data, size_t len, size_t *used)
{
	u32 max = p->head_max && p->head_max < HTTP_RESP_HEAD_MAX ? p->head_max : HTTP_RESP_HEAD_MAX;
	size_t i;
	int r;

	*used = 0;
	if (p->state == RS_ERROR)
		return HTTP_RESP_ERROR;
	if (p->state != RS_HEAD)
		return HTTP_RESP_HEAD;
	for (i = 0; i < len; i++) {
		u8 c = data[i];

		if (p->total == max) {
			*used = i;
			return http_resp_fail(p, HTTP_RESP_ETOO_LARGE);
		}
		p->total++;
		p->buf[p->len++] = (char)c;
		*used = i + 1;
		if (p->len >= 2 && p->buf[p->len - 2] == '\r' && c != '\n')
			return http_resp_fail(p, HTTP_RESP_EFRAMING);	/* bare CR */
		if (c != '\n') {
			if (!http_is_field_byte(c) && c != '\r')
				return http_resp_fail(p, HTTP_RESP_EFRAMING);
			continue;
		}
		if (p->len < 2 || p->buf[p->len - 2] != '\r')
			return http_resp_fail(p, HTTP_RESP_EFRAMING);	/* bare LF */
		if (p->len - p->line_start == 2 && p->line_start) {
			r = http_resp_finish(p);
			if (r != HTTP_RESP_HEAD || p->status >= 200 || p->status == 101)
				return r;
			/* an interim head (100 Continue, 103): the real one follows */
			if (++p->interim > HTTP_RESP_INTERIM_MAX)
				return http_resp_fail(p, HTTP_RESP_EFRAMING);
			p->state = RS_HEAD;
			p->len = 0;
			p->nfields = 0;
			p->line_start = 0;
			continue;
		}
		if (p->len - p->line_start == 2)
			return http_resp_fail(p, HTTP_RESP_EFRAMING);	/* an empty first line */
		p->line_start = p->len;
	}
	return HTTP_RESP_MORE;
}

int http_resp_body(struct http_resp_parser *p, const u8 *data, size_t len, size_t *used, size_t *avail)
{
	u64 left;
	int r;

	*used = 0;
	*avail = 0;
	if (p->state == RS_END)
		return HTTP_RESP_END;
	if (p->state != RS_BODY)
		return HTTP_RESP_ERROR;	/* an error, or no head yet */
	switch (p->body) {
	case HTTP_BODY_LENGTH:
		left = p->content_length - p->body_seen;
		if (!left) {
			p->state = RS_END;
			return HTTP_RESP_END;
		}
		if (!len)
			return HTTP_RESP_MORE;
		*avail = len < left ? len : (size_t)left;
		return HTTP_RESP_DATA;
	case HTTP_BODY_CLOSE:
		if (!len)
			return HTTP_RESP_MORE;
		*avail = len;
		break;
	default:
		r = chunked_step(&p->ch, data, len, used, avail);
		if (r == CHUNKED_END) {
			p->state = RS_END;
			return HTTP_RESP_END;
		}
		if (r == CHUNKED_ERROR)
			return http_resp_fail(p, HTTP_RESP_EFRAMING);
		if (r == CHUNKED_MORE)
			return HTTP_RESP_MORE;
		break;
	}
	if (p->body_max && *avail > p->body_max - p->body_seen) {
		*avail = 0;
		return http_resp_fail(p, HTTP_RESP_ETOO_LARGE);
	}
	return HTTP_RESP_DATA;
}

void http_resp_tunnel(struct http_resp_parser *p)
{
	p->body = HTTP_BODY_CLOSE;
	p->body_max = 0;
	p->keep_alive = false;
	p->state = RS_BODY;
}

void http_resp_take(struct http_resp_parser *p, size_t n)
{
	if (p->state != RS_BODY)
		return;
	if (p->body == HTTP_BODY_CHUNKED)
		chunked_take(&p->ch, n);
	p->body_seen += n;
	if (p->body == HTTP_BODY_LENGTH && p->body_seen == p->content_length)
		p->state = RS_END;
}

int http_resp_eof(struct http_resp_parser *p)
{
	if (p->state == RS_END)
		return HTTP_RESP_END;
	if (p->state == RS_BODY && p->body == HTTP_BODY_CLOSE) {
		p->state = RS_END;
		return HTTP_RESP_END;
	}
	if (p->state != RS_ERROR)
		http_resp_fail(p, HTTP_RESP_ETRUNCATED);
	return HTTP_RESP_ERROR;
}

const char *http_resp_header(const struct http_resp_parser *p, const char *name)
{
	if (p->state == RS_HEAD || p->state == RS_ERROR)
		return NULL;
	return http_field_find(p->buf, p->fields, p->nfields, name);
}
