/*
 * The HTTP server's exchanges (runtime/http/conn.h): a request for a route,
 * an app's or the runtime's own, through a vireo_req handle
 * (runtime/api.h), and the application API's request and response calls
 * (include/vireo/http.h). Two states of the connection are the
 * exchange's: BODY (reading a Content-Length body into a buffer counted
 * against VIREO_HTTP_BUF_BUDGET) and APP (the handler has it and has not
 * answered yet). The calls never write to lwIP or free anything
 * themselves: they set up the response in the connection and kick its
 * pump (server.c), so the app is never re-entered from its own call.
 * A request body is charged as it arrives (conn.h HTTP_BODY_STEP and its
 * two shares), never on the length it declares.
 *
 * The runtime's own routes are registered here, through the same table as
 * the apps' (before any app's init, so no app can take them): /healthz
 * ("ok", for load balancers; served on plain HTTP even under
 * http.redirect=) and /metrics (every metrics source's text, generated per
 * request into a buffer of at most HTTP_METRICS_MAX bytes; 403, closing,
 * to a client outside metrics.allow=, runtime/http/allow.h).
 */
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lib/fmt.h"
#include "lib/outbuf.h"
#include "lib/types.h"
#include "lwip/altcp.h"
#include "net/tcp/tcpconn.h"
#include "runtime/http/allow.h"
#include "runtime/http/conn.h"
#include "runtime/acme.h"
#include "runtime/http/https.h"
#include "runtime/http/token.h"
#include "lib/metrics.h"
#include "runtime/site.h"
#include "vireo/files.h"

#define TYPE_TEXT "text/plain; charset=utf-8"

struct api_http_stats api_http_stats;

static size_t exchange_bodies;	/* request body bytes held, every connection's */
const struct reqbody_ops *reqbody;

/* ---- the app's exchange: its end and its memory ---- */

/* Frees the request body and the stream buffer and gives back the budget
 * they (and a copied response) held. */
void exchange_release(struct conn *c)
{
	kfree(c->req_body);
	c->req_body = NULL;
	c->req_body_len = c->req_body_need = 0;
	exchange_bodies -= c->req_body_cap;
	if (c->link.node)
		c->link.node->bodies -= c->req_body_cap;
	c->req_body_cap = 0;
	kfree(c->sbuf);
	c->sbuf = NULL;
	c->sbuf_off = c->sbuf_len = 0;
	api_buf_give(c->budget);
	c->budget = 0;
}

/* len bytes of the apps' shared buffer budget (api_buf_take), charged to
 * c until exchange_release(); NULL, nothing held, when the budget or the
 * heap refuses (a budget refusal counted). */
static void *exchange_alloc(struct conn *c, size_t len)
{
	void *p;

	if (!api_buf_take(len)) {
		api_http_stats.budget_refusals++;
		return NULL;
	}
	p = kmalloc(len);
	if (!p) {
		api_buf_give(len);
		return NULL;
	}
	c->budget += len;
	return p;
}

/* Cold: it runs when a body's buffer doubles, a few times per body. */
__cold bool exchange_body_room(struct conn *c, u32 n)
{
	u32 want = c->req_body_len + n, cap;
	size_t grow;
	u8 *p;

	if (want <= c->req_body_cap)
		return true;
	cap = MAX(want, MIN(MAX(2 * c->req_body_cap, (u32)HTTP_BODY_STEP), c->req_body_need));
	grow = cap - c->req_body_cap;
	if (exchange_bodies + grow > HTTP_BODIES_MAX || c->link.node->bodies + grow > HTTP_BODY_SRC_MAX ||
	    !api_buf_take(grow)) {
		api_http_stats.budget_refusals++;
		return false;
	}
	p = kmalloc(cap);
	if (!p) {
		api_buf_give(grow);
		return false;
	}
	if (c->req_body_len)
		__builtin_memcpy(p, c->req_body, c->req_body_len);
	kfree(c->req_body);
	c->req_body = p;
	c->req_body_cap = cap;
	c->budget += grow;
	exchange_bodies += grow;
	c->link.node->bodies += grow;
	return true;
}

/* The exchange ends: the handle goes stale, then on_done hears it. */
void exchange_end(struct conn *c, bool done)
{
	void (*fn)(vireo_req r, bool done, void *arg) = c->on_done;
	u32 id = c->xid;

	if (!id)
		return;
	c->xid = 0;
	c->on_done = NULL;
	c->on_writable = NULL;
	api_handle_free(id);
	if (!done)
		api_http_stats.lost++;
	if (fn)
		fn((vireo_req){ id }, done, c->done_arg);
}


/* ---- the apps' routes ---- */

static unsigned exchange_method_bit(enum http_method m)
{
	switch (m) {
	case HTTP_METHOD_GET: return VIREO_GET;
	case HTTP_METHOD_HEAD: return VIREO_HEAD;
	case HTTP_METHOD_POST: return VIREO_POST;
	case HTTP_METHOD_PUT: return VIREO_PUT;
	case HTTP_METHOD_DELETE: return VIREO_DELETE;
	case HTTP_METHOD_PATCH: return VIREO_PATCH;
	case HTTP_METHOD_OPTIONS: return VIREO_OPTIONS;
	default: return 0;
	}
}

/* Hand the request (head and body read) to its route's handler. It may
 * answer during the call (the state is SEND afterwards) or later. */
void exchange_dispatch(struct conn *c)
{
	c->xid = api_handle_new(API_H_REQ, c);
	if (!c->xid) {
		exchange_release(c);
		server_respond_error(c, 503, c->b->parser.method == HTTP_METHOD_HEAD);
		return;
	}
	c->state = C_APP;
	c->t_app = tcpconn_now_ms();
	c->stream = c->stream_ended = c->chunked = c->want_writable = false;
	c->close_after = false;
	c->stream_len = c->stream_taken = 0;
	c->xhdr_len = 0;
	c->b->xhdr[0] = '\0';
	c->on_writable = NULL;
	c->on_done = NULL;
	if (!c->route->runtime)
		api_http_stats.requests++;
	c->in_handler = true;
	c->route->r.handler((vireo_req){ c->xid }, c->route->r.arg);
	c->in_handler = false;
}

/* A request for a route: the method and the body checked, then the body
 * read (BODY) or the handler called. The runtime's own routes answer every
 * method and take no body. */
void exchange_request(struct conn *c, const struct api_route *rt)
{
	const struct http_req_parser *p = &c->b->parser;
	bool head_only = p->method == HTTP_METHOD_HEAD;
	unsigned m = exchange_method_bit(p->method);
	char allow[96];

	if (rt->runtime) {
		if (p->content_length || p->chunked) {
			server_respond_error(c, 413, head_only);
			return;
		}
		c->route = rt;
		exchange_dispatch(c);
		return;
	}
	if (m)
		rt = api_route_for_method(rt, m);
	if (!m || !api_route_allows(rt, m)) {
		api_http_stats.method_refusals++;
		server_respond_error_extra(c, 405, head_only, api_route_allow_header(rt, allow, sizeof allow));
		return;
	}
	if (rt->r.on_body || (p->chunked && rt->r.max_body)) {
		if (!reqbody) {	/* added around vireo_http_route() */
			server_respond_error(c, 501, head_only);
			return;
		}
		if (rt->r.on_body) {
			reqbody->stream_start(c, rt);
			return;
		}
	}
	if (p->content_length > rt->r.max_body || (p->chunked && !rt->r.max_body)) {
		api_http_stats.body_too_large++;	/* a chunked one: the route takes none */
		server_respond_error(c, 413, head_only);
		return;
	}
	c->route = rt;
	if (!p->content_length && !p->chunked) {
		exchange_dispatch(c);
		return;
	}
	/* Nothing is held for it yet: the body is charged as it arrives. A
	 * chunked one may grow to the route's max_body (413 past it, as its
	 * bytes arrive: reqbody_pump()). */
	c->req_body_need = p->chunked ? rt->r.max_body : (u32)p->content_length;
	c->req_body_len = 0;
	chunked_init(&c->dechunk);
	c->state = C_BODY;
}

/* ---- the application API's exchange calls (vireo/http.h) ---- */

/* The live exchange of r, or NULL. */
static struct conn *exchange_xc(vireo_req r)
{
	return api_handle_get(API_H_REQ, r.id);
}

bool vireo_req_live(vireo_req r)
{
	return exchange_xc(r) != NULL;
}

enum vireo_method vireo_req_method(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	return c ? (enum vireo_method)exchange_method_bit(c->b->parser.method) : (enum vireo_method)0;
}

const char *vireo_req_path(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	return c ? c->b->parser.path : "";
}

const char *vireo_req_subpath(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	if (!c || !c->route->r.prefix)
		return "";
	return c->b->parser.path + MIN(c->route->path_len, c->b->parser.path_len);
}

/* http_raw_keep for ext parsers (the server's): the request line's target
 * (between its first two spaces; the parser checks the line after this),
 * its path (an absolute-form's after its authority) copied after the
 * head, when it fits in the parser's buffer there. Cold: only an app
 * that passes targets on links it. */
__cold static void exchange_raw_keep(struct http_req_parser *p)
{
	const char *t = p->buf + p->req_start, *end = p->buf + p->len;
	size_t s = 0, q, n;
	char *raw;

	p->raw_path = NULL;
	if (!p->ext)
		return;
	while (t < end && *t != ' ' && *t != '\r')
		t++;
	if (t == end || *t++ != ' ')
		return;	/* the parser refuses it */
	for (n = 0; t + n < end && t[n] != ' ' && t[n] != '\r'; n++)
		;
	if (n >= 7 && (t[0] | 0x20) == 'h' && (t[1] | 0x20) == 't' && (t[2] | 0x20) == 't' && (t[3] | 0x20) == 'p' &&
	    t[4] == ':' && t[5] == '/' && t[6] == '/') {
		for (s = 7; s < n && t[s] != '/' && t[s] != '?'; s++)
			;
		if (s == n || t[s] == '?') {
			p->raw_path = "/";
			return;
		}
	}
	for (q = s; q < n && t[q] != '?'; q++)
		;
	if (p->len + (q - s) >= HTTP_HEAD_MAX)
		return;
	raw = p->buf + p->len;
	__builtin_memcpy(raw, t + s, q - s);
	raw[q - s] = '\0';
	p->raw_path = raw;
}

__cold void vireo_http_raw_paths(void)
{
	http_raw_keep = exchange_raw_keep;
}

const char *vireo_req_raw_path(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	return c && http_raw_keep ? c->b->parser.raw_path : NULL;
}

const char *vireo_req_query(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	return c && c->b->parser.query ? c->b->parser.query : "";
}

int vireo_req_query_param(vireo_req r, const char *name, char *buf, size_t size)
{
	struct conn *c = exchange_xc(r);

	if (!c) {
		if (buf && size)
			buf[0] = '\0';
		return -EPIPE;
	}
	if (!name || !buf || !size) {
		api_misuse("vireo_req_query_param: no name or buffer: refused");
		return -EINVAL;
	}
	return http_query_param(c->b->parser.query, name, buf, size);
}

const char *vireo_req_header(vireo_req r, const char *name)
{
	struct conn *c = exchange_xc(r);

	return c && name ? http_header(&c->b->parser, name) : NULL;
}

int vireo_req_field(vireo_req r, unsigned i, const char **name, size_t *name_len, const char **value)
{
	struct conn *c = exchange_xc(r);
	const struct http_field *f;

	if (!c)
		return -EPIPE;
	if (i >= c->b->parser.nfields || !name || !name_len || !value)
		return -ENOENT;
	f = &c->b->parser.fields[i];
	*name = c->b->parser.buf + f->name;
	*name_len = f->name_len;
	*value = c->b->parser.buf + f->value;
	return 0;
}

const void *vireo_req_body(vireo_req r, size_t *len)
{
	struct conn *c = exchange_xc(r);
	size_t n = c && c->req_body ? c->req_body_len : 0;

	if (len)
		*len = n;
	return n ? c->req_body : NULL;
}

int vireo_req_peer(vireo_req r, struct vireo_addr *a)
{
	struct conn *c = exchange_xc(r);

	if (!c)
		return -EPIPE;
	api_addr_of(&c->peer, c->peer_port, a);
	return 0;
}

bool vireo_req_tls(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	return c && c->tc.tls;
}

bool vireo_req_http10(vireo_req r)
{
	struct conn *c = exchange_xc(r);

	return c && c->b->parser.version_minor == 0;
}

bool vireo_req_etag_match(vireo_req r, const char *etag)
{
	struct conn *c = exchange_xc(r);

	return c && http_etag_match(c->b->parser.if_none_match, etag);
}

/* mtime as a Last-Modified may give it: never later than now (RFC 9110
 * 8.8.2.1) by the clock the Date header uses (the firmware's until SNTP
 * sets one); 0 with no clock at all or without a time. */
static u64 exchange_lm(u64 mtime)
{
	u64 now;

	if (!mtime || wallclock_best(&now) == WALLCLOCK_NONE)
		return 0;
	return MIN(mtime, now / NSEC_PER_SEC);
}

u64 vireo_resp_last_modified(vireo_req r, u64 mtime)
{
	char date[32];
	u64 lm = exchange_lm(mtime);

	if (!lm || !wallclock_http_date(lm, date, sizeof date) || vireo_resp_header(r, "Last-Modified", date) < 0)
		return 0;
	return lm;
}

/* If-None-Match decides when present; otherwise If-Modified-Since (RFC
 * 9110 13.1.3, 13.2.2), where a date we cannot read is no condition. */
static bool exchange_not_modified(const struct conn *c, const char *etag, u64 lm)
{
	u64 since;

	if (c->b->parser.if_none_match)
		return etag && http_etag_match(c->b->parser.if_none_match, etag);
	return lm && c->b->parser.if_modified_since && wallclock_parse_http_date(c->b->parser.if_modified_since, &since) &&
	       lm <= since;
}

bool vireo_req_not_modified(vireo_req r, const char *etag, u64 mtime)
{
	struct conn *c = exchange_xc(r);

	return c && exchange_not_modified(c, etag, exchange_lm(mtime));
}

/* How much of an app's header value (a vireo_resp_header() value, a
 * content type) is good: it stops at a control character but HTAB (CR and
 * LF would end the line and start one of the app's choosing: RFC 9110
 * 5.5), at DEL, or past VIREO_RESP_HEADERS_MAX; v[result] != '\0' means
 * refuse. */
static size_t exchange_value_len(const char *v)
{
	size_t n;

	for (n = 0; v[n] && n <= VIREO_RESP_HEADERS_MAX; n++)
		if (((u8)v[n] < 0x20 && v[n] != '\t') || v[n] == 0x7f)
			break;
	return n;
}

/* A content type an app gives: NULL (none) or a good value. */
static bool exchange_type_ok(const char *type, const char *fn)
{
	if (type && type[exchange_value_len(type)]) {
		api_misuse("%s: a content type with a control character or over %u bytes: refused", fn,
			   VIREO_RESP_HEADERS_MAX);
		return false;
	}
	return true;
}

/* The exchange of r waiting for its answer, or NULL after a refusal
 * (*err says which, logged for misuse). */
static struct conn *exchange_unanswered(vireo_req r, const char *fn, int *err)
{
	struct conn *c = exchange_xc(r);

	if (!c) {
		*err = -EPIPE;
		return NULL;
	}
	if (c->state != C_APP) {
		api_misuse("%s: the response has started already: refused", fn);
		*err = -EALREADY;
		return NULL;
	}
	return c;
}

int vireo_resp_header(vireo_req r, const char *name, const char *value)
{
	static const char *const runtime[] = { "content-length", "transfer-encoding", "connection", "server",
					       "date" };
	size_t nl = 0, vl = 0, i;
	struct conn *c;
	int err;

	c = exchange_unanswered(r, "vireo_resp_header", &err);
	if (!c)
		return err;
	if (!name || !value) {
		api_misuse("vireo_resp_header: no name or value: refused");
		return -EINVAL;
	}
	for (nl = 0; name[nl]; nl++)
		if (!http_is_tchar((u8)name[nl]) || nl > VIREO_RESP_HEADERS_MAX)
			break;
	for (i = 0; i < ARRAY_SIZE(runtime); i++)
		if (http_eq_nocase(name, nl, runtime[i]))
			nl = 0;
	vl = exchange_value_len(value);
	if (!nl || name[nl] || value[vl]) {
		api_misuse("vireo_resp_header %.32s: not a token, a runtime header, or a bad value: refused", name);
		return -EINVAL;
	}
	if (c->xhdr_len + nl + 2 + vl + 2 > VIREO_RESP_HEADERS_MAX) {
		api_misuse("vireo_resp_header %.32s: over %u bytes of headers: refused", name,
			   VIREO_RESP_HEADERS_MAX);
		return -ENOSPC;
	}
	__builtin_memcpy(c->b->xhdr + c->xhdr_len, name, nl);
	c->xhdr_len += (u16)nl;
	c->b->xhdr[c->xhdr_len++] = ':';
	c->b->xhdr[c->xhdr_len++] = ' ';
	__builtin_memcpy(c->b->xhdr + c->xhdr_len, value, vl);
	c->xhdr_len += (u16)vl;
	c->b->xhdr[c->xhdr_len++] = '\r';
	c->b->xhdr[c->xhdr_len++] = '\n';
	c->b->xhdr[c->xhdr_len] = '\0';
	return 0;
}

/* The head into out[] and SEND; the pump is queued. length: the
 * Content-Length, or NULL for none. */
/* HTTPS responses' Strict-Transport-Security line (https.hsts=), or none. */
static size_t exchange_hsts(const struct conn *c, const char **line)
{
	*line = "";
	return c->tc.tls ? https_hsts_line(line) : 0;
}

static int exchange_head(struct conn *c, int status, const char *type, const u64 *length, const char *te)
{
	char extra[VIREO_RESP_HEADERS_MAX + 32 + HTTPS_HSTS_LINE_MAX];
	bool keep = server_keep_alive(c);
	size_t n = c->xhdr_len, i;
	const char *sts;
	size_t sl = exchange_hsts(c, &sts);

	__builtin_memcpy(extra, c->b->xhdr, n);
	__builtin_memcpy(extra + n, sts, sl);
	n += sl;
	for (i = 0; te && te[i]; i++)
		extra[n++] = te[i];
	extra[n] = '\0';
	n = http_response_head_len(c->b->out, sizeof c->b->out, status, type, length, keep, extra);
	if (!n) {
		api_misuse("vireo_resp: status %d with its headers does not fit: 500 sent", status);
		server_respond_error(c, 500, c->b->parser.method == HTTP_METHOD_HEAD);
		server_kick(c);
		return -EINVAL;
	}
	c->out_len = (u16)n;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
	server_kick(c);
	return 0;
}

static bool exchange_status_ok(int status, const char *fn)
{
	if (status < 200 || status > 599) {
		api_misuse("%s: status %d: refused", fn, status);
		return false;
	}
	return true;
}

static int exchange_send(vireo_req r, int status, const char *type, const void *body, size_t len, bool copy)
{
	const char *fn = copy ? "vireo_resp_send" : "vireo_resp_send_static";
	struct conn *c;
	bool head_only;
	int err;

	c = exchange_unanswered(r, fn, &err);
	if (!c)
		return err;
	head_only = c->b->parser.method == HTTP_METHOD_HEAD || status == 304;
	if (!exchange_status_ok(status, fn) || !exchange_type_ok(type, fn))
		return -EINVAL;
	if ((len && !body) || (status == 204 && len)) {
		api_misuse("%s: %s: refused", fn, len && !body ? "a length without a body" : "204 has no body");
		return -EINVAL;
	}
	c->body = body;
	c->body_len = len;
	c->body_copy = false;
	if (copy && len && !head_only) {
		c->dyn = exchange_alloc(c, len);
		if (!c->dyn)
			return -ENOMEM;
		__builtin_memcpy(c->dyn, body, len);
		c->body = (const u8 *)c->dyn;
		c->body_copy = true;
	}
	/* 304: Content-Length stays the 200's (RFC 9110 8.6), no body. */
	err = exchange_head(c, status, status == 304 ? NULL : type, &(u64){ len }, NULL);
	if (head_only)
		c->body_len = 0;
	return err;
}

int vireo_resp_send(vireo_req r, int status, const char *type, const void *body, size_t len)
{
	return exchange_send(r, status, type, body, len, true);
}

int vireo_resp_send_static(vireo_req r, int status, const char *type, const void *body, size_t len)
{
	return exchange_send(r, status, type, body, len, false);
}

/* "Last-Modified: <date>\r\n" for lm (not 0) and its length; one line is
 * kept, since the baked files share the build's time. 0 if the date does
 * not format. */
static size_t exchange_lm_line(u64 lm, const char **line)
{
	static struct {
		u64 lm;
		size_t len;
		char line[48];
	} k;
	size_t n;

	if (lm != k.lm) {
		k.lm = lm;
		k.len = 0;
		__builtin_memcpy(k.line, "Last-Modified: ", 15);
		n = wallclock_http_date(lm, k.line + 15, sizeof k.line - 17);
		if (n) {
			k.line[15 + n] = '\r';
			k.line[16 + n] = '\n';
			k.len = 17 + n;
		}
	}
	*line = k.line;
	return k.len;
}

/* A Range on a file (runtime/http/range.c): 200 (serve it whole), 206
 * with its Content-Length and Content-Range lines in rng[80] (*rl bytes)
 * and the bytes [*first, *first + *count), or 416, answered here with
 * "Content-Range: bytes * /len" and the canned page. Cold: only a request
 * with Range comes here. */
static __cold int exchange_range(struct conn *c, const struct site_file *f, u64 lm, const char *rv, char *rng,
				 size_t *rl, u64 *first, u64 *count)
{
	struct outbuf o = { rng, 80, 0 };
	char cr[48];
	u64 last;
	bool keep, head_only = c->b->parser.method == HTTP_METHOD_HEAD;
	size_t n, body;

	if (!http_if_range(http_header(&c->b->parser, "if-range"), f->etag, lm))
		return 200;
	switch (http_byte_range(rv, f->len, first, &last)) {
	case HTTP_RANGE_ONE:
		*count = last - *first + 1;
		outbuf_lit(&o, "Content-Length: ");
		outbuf_u64(&o, *count);
		outbuf_lit(&o, "\r\nContent-Range: bytes ");
		outbuf_u64(&o, *first);
		outbuf_lit(&o, "-");
		outbuf_u64(&o, last);
		outbuf_lit(&o, "/");
		outbuf_u64(&o, f->len);
		outbuf_lit(&o, "\r\n");
		*rl = o.len;	/* at most 16 + 20 + 2 + 21 + 20 + 1 + 20 + 1 + 20 + 2 < 80 */
		return 206;
	case HTTP_RANGE_BAD:
		break;
	default:
		return 200;
	}
	o = (struct outbuf){ cr, sizeof cr, 0 };
	outbuf_lit(&o, "Content-Range: bytes */");
	outbuf_u64(&o, f->len);
	outbuf_lit(&o, "\r\n");
	outbuf_mem(&o, "", 1);
	keep = server_keep_alive(c);
	body = http_error_body(NULL, 0, 416);
	n = http_response_head(c->b->out, sizeof c->b->out, 416, "text/html; charset=utf-8", body, keep, cr);
	if (n && !head_only)
		n += http_error_body(c->b->out + n, sizeof c->b->out - n, 416);
	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->close_after = !keep;
	server_count_response(416);
	server_start_send(c);
	server_kick(c);
	return 416;
}

/* f has a compressed twin, br (brotli_static) or gz (gzip_static), or
 * both: the answer varies with Accept-Encoding (*enc: the lines to add); a
 * client taking br gets br's bytes and ETag with f's type (a copy in *tmp,
 * returned), else one taking gzip gz's, any other f. Brotli first: smaller,
 * and every browser that sends br takes it over gzip. */
static __cold const struct site_file *exchange_enc(struct conn *c, const struct site_file *f,
						   const struct site_file *gz, const struct site_file *br,
						   struct site_file *tmp, const char **enc, size_t *el)
{
	static const char vary[] = "Vary: Accept-Encoding\r\n";
	static const char with_gz[] = "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n";
	static const char with_br[] = "Content-Encoding: br\r\nVary: Accept-Encoding\r\n";
	const char *ae = http_header(&c->b->parser, "accept-encoding");

	if (br && http_accepts_coding(ae, "br")) {
		*tmp = *br;
		*enc = with_br;
		*el = sizeof with_br - 1;
	} else if (gz && http_accepts_coding(ae, "gzip")) {
		*tmp = *gz;
		*enc = with_gz;
		*el = sizeof with_gz - 1;
	} else {
		*enc = vary;
		*el = sizeof vary - 1;
		return f;
	}
	tmp->content_type = f->content_type;
	return tmp;
}

int vireo_resp_send_file(vireo_req r, const struct vireo_file *vf)
{
	static const char st200[] = "HTTP/1.1 200 OK\r\nServer: vireo\r\n";
	static const char st304[] = "HTTP/1.1 304 Not Modified\r\nServer: vireo\r\n";
	static const char st206[] = "HTTP/1.1 206 Partial Content\r\nServer: vireo\r\n";
	static const char ar[] = "Accept-Ranges: bytes\r\n";
	static const char ka[] = "Connection: keep-alive\r\n", cl[] = "Connection: close\r\n";
	const struct site_file *f, *gz, *br;
	const struct site_head *h;
	struct site_head made;
	struct site_file gzf;
	const char *head, *lm_line = NULL, *enc = NULL, *sts;
	char date[40], lines[SITE_LINES_MAX], rng[80];
	size_t dl, hl, ll = 0, rl = 0, el = 0, sl, total;
	const char *st, *rv;
	bool keep, nm;
	struct conn *c;
	u64 lm, first = 0, count;
	int status;
	char *p;
	int err;

	c = exchange_unanswered(r, "vireo_resp_send_file", &err);
	if (!c)
		return err;
	f = vf ? site_owned(vf->priv, &h) : NULL;
	if (!f) {
		api_misuse("vireo_resp_send_file: not a file vireo_file_find() found: refused");
		return -EINVAL;
	}
	gz = site_gz(f);
	br = site_br(f);
	if (gz || br) {
		f = exchange_enc(c, f, gz, br, &gzf, &enc, &el);
		if (f == &gzf)
			h = NULL;	/* its lines, with f's type, are made below */
	}
	if (!h) {
		/* No memory for the table's lines: the same bytes, made now. */
		if (site_head_lines(f, &made, lines, sizeof lines) > sizeof lines) {
			api_misuse("vireo_resp_send_file: %.64s: its head lines do not fit: refused", f->path);
			return -EINVAL;
		}
		h = &made;
	}
	lm = exchange_lm(f->mtime);
	nm = exchange_not_modified(c, f->etag, lm);
	status = nm ? 304 : 200;
	count = f->len;
	rv = nm ? NULL : http_header(&c->b->parser, "range");
	if (rv) {
		status = exchange_range(c, f, lm, rv, rng, &rl, &first, &count);
		if (status == 416)
			return 0;
	}
	/* 304 from Content-Length on; 206 with its own Content-Length. */
	head = h->head + (nm ? h->cl_off : 0);
	hl = status == 206 ? h->cl_off : h->head_len - (nm ? h->cl_off : 0);
	st = status == 200 ? st200 : status == 206 ? st206 : st304;
	if (lm)
		ll = exchange_lm_line(lm, &lm_line);
	dl = http_date(date, sizeof date);
	keep = server_keep_alive(c);
	sl = exchange_hsts(c, &sts);
	total = __builtin_strlen(st) + (dl ? dl + 8 : 0) + hl + rl + (keep ? sizeof ka : sizeof cl) - 1 + c->xhdr_len +
		sl + h->etag_line_len + ll + el + (status == 200 ? sizeof ar - 1 : 0) + 2;
	if (total > sizeof c->b->out) {
		api_misuse("vireo_resp_send_file: %.64s with its headers does not fit: 500 sent", f->path);
		server_respond_error(c, 500, c->b->parser.method == HTTP_METHOD_HEAD);
		server_kick(c);
		return -EINVAL;
	}
	/* The order of http_response_head(): status, Server, Date, Content-Type,
	 * Content-Length, Connection, then the extra lines. */
	p = outbuf_put(c->b->out, st, __builtin_strlen(st));
	if (dl) {
		p = outbuf_put(p, "Date: ", 6);
		p = outbuf_put(p, date, dl);
		p = outbuf_put(p, "\r\n", 2);
	}
	p = outbuf_put(p, head, hl);
	p = outbuf_put(p, rng, rl);
	p = keep ? outbuf_put(p, ka, sizeof ka - 1) : outbuf_put(p, cl, sizeof cl - 1);
	p = outbuf_put(p, c->b->xhdr, c->xhdr_len);
	p = outbuf_put(p, sts, sl);
	p = outbuf_put(p, h->etag_line, h->etag_line_len);
	p = outbuf_put(p, lm_line, ll);
	p = outbuf_put(p, enc, el);
	if (status == 200)
		p = outbuf_put(p, ar, sizeof ar - 1);	/* as nginx: ranges are served */
	p = outbuf_put(p, "\r\n", 2);
	c->out_len = (u16)(p - c->b->out);
	c->body = f->data + first;
	c->body_len = nm || c->b->parser.method == HTTP_METHOD_HEAD ? 0 : count;
	c->body_copy = false;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
	server_kick(c);
	return 0;
}

int vireo_resp_error(vireo_req r, int status)
{
	bool head_only, keep;
	struct conn *c;
	size_t n;
	int err;

	c = exchange_unanswered(r, "vireo_resp_error", &err);
	if (!c)
		return err;
	if (status < 400 || status > 599 || !http_error_body(NULL, 0, status)) {
		api_misuse("vireo_resp_error: status %d has no canned page: refused", status);
		return -EINVAL;
	}
	head_only = c->b->parser.method == HTTP_METHOD_HEAD;
	keep = status < 500 && server_keep_alive(c);
	n = http_error_response(c->b->out, sizeof c->b->out, status, keep, head_only);
	c->out_len = (u16)n;
	c->body = NULL;
	c->body_len = 0;
	c->close_after = !keep;
	server_count_response(status);
	server_start_send(c);
	server_kick(c);
	return 0;
}

int vireo_resp_start(vireo_req r, int status, const char *type, u64 length)
{
	struct conn *c;
	bool head_only;
	int err;

	c = exchange_unanswered(r, "vireo_resp_start", &err);
	if (!c)
		return err;
	if (!exchange_status_ok(status, "vireo_resp_start") || !exchange_type_ok(type, "vireo_resp_start"))
		return -EINVAL;
	if ((status == 204 || status == 304) && length) {
		api_misuse("vireo_resp_start: %d has no body: refused", status);
		return -EINVAL;
	}
	head_only = c->b->parser.method == HTTP_METHOD_HEAD || status == 204 || status == 304;
	if (!head_only) {
		c->sbuf = exchange_alloc(c, VIREO_RESP_STREAM_BUF);
		if (!c->sbuf)
			return -ENOMEM;
	}
	c->sbuf_off = c->sbuf_len = 0;
	c->stream_len = length;
	c->stream_taken = 0;
	c->stream_ended = false;
	c->chunked = false;
	c->body = NULL;
	c->body_len = 0;
	c->body_copy = false;
	if (length == VIREO_LENGTH_UNKNOWN && !head_only) {
		if (c->b->parser.version_minor >= 1)
			c->chunked = true;
		else
			c->close_after = true;	/* HTTP/1.0: the end is our FIN */
	}
	err = exchange_head(c, status, type, length == VIREO_LENGTH_UNKNOWN ? NULL : &length,
			      c->chunked ? "Transfer-Encoding: chunked\r\n" : NULL);
	if (!err)
		c->stream = true;
	return err;
}

/*
 * 101 and a tunnel (vireo/http.h): cold, and linked only by an app that
 * calls it. The head is ours (Connection and Upgrade, then the app's
 * lines: no Content-Length, no framing); the exchange stays a stream of
 * unknown length that is never chunked and always closes at its end, and
 * the client's bytes go raw to the route's on_body (reqbody.c, in SEND
 * with body_stream) until its FIN (on_body_end).
 */
__cold int vireo_resp_upgrade(vireo_req r, const char *protocol)
{
	const char *fn = "vireo_resp_upgrade", *up;
	struct conn *c = exchange_unanswered(r, fn, &(int){ 0 });
	int n;

	if (!c)
		return -EPIPE;
	up = http_header(&c->b->parser, "upgrade");
	if (!protocol || !*protocol || protocol[exchange_value_len(protocol)] || !c->route->r.on_body || !up ||
	    c->b->parser.method != HTTP_METHOD_GET || c->b->parser.version_minor < 1 || c->b->parser.chunked ||
	    c->b->parser.content_length) {
		api_misuse("%s: not a GET with Upgrade and no body on a route with on_body, or a bad protocol: "
			   "refused", fn);
		return -EINVAL;
	}
	c->sbuf = exchange_alloc(c, VIREO_RESP_STREAM_BUF);
	if (!c->sbuf)
		return -ENOMEM;
	n = ksnprintf(c->b->out, sizeof c->b->out,
		      "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: %s\r\n%.*s\r\n", protocol,
		      (int)c->xhdr_len, c->b->xhdr);
	if (n <= 0 || (size_t)n >= sizeof c->b->out) {
		exchange_release(c);
		api_misuse("%s: the head does not fit: refused", fn);
		return -EINVAL;
	}
	c->out_len = (u16)n;
	c->sbuf_off = c->sbuf_len = 0;
	c->stream_len = VIREO_LENGTH_UNKNOWN;
	c->stream_taken = 0;
	c->stream_ended = c->chunked = false;
	c->body = NULL;
	c->body_len = 0;
	c->close_after = true;	/* the tunnel's end is the connection's */
	server_count_response(101);
	server_start_send(c);
	c->stream = true;
	c->body_stream = true;	/* after server_start_send(), which ends a body's delivery */
	c->body_paused = false;
	server_kick(c);
	return 0;
}

/* The stream of r, started and not ended, or NULL after a refusal. */
static struct conn *exchange_stream(vireo_req r, const char *fn, int *err)
{
	struct conn *c = exchange_xc(r);

	if (!c) {
		*err = -EPIPE;
		return NULL;
	}
	if (c->state != C_SEND || !c->stream) {
		api_misuse("%s: no vireo_resp_start() before: refused", fn);
		*err = -EINVAL;
		return NULL;
	}
	if (c->stream_ended) {
		api_misuse("%s: after vireo_resp_end(): refused", fn);
		*err = -EINVAL;
		return NULL;
	}
	return c;
}

#define CHUNK_TRAILER "0\r\n\r\n"

int vireo_resp_write(vireo_req r, const void *data, size_t len)
{
	struct conn *c;
	size_t room, n, over = 0, direct = 0;
	int err;

	c = exchange_stream(r, "vireo_resp_write", &err);
	if (!c)
		return err;
	if (len && !data) {
		api_misuse("vireo_resp_write: no data: refused");
		return -EINVAL;
	}
	len = MIN(len, (size_t)0x7fffffff);
	if (c->stream_len != VIREO_LENGTH_UNKNOWN && len > c->stream_len - c->stream_taken) {
		api_misuse("vireo_resp_write: past the declared length %llu: refused",
			   (unsigned long long)c->stream_len);
		return -EINVAL;
	}
	if (!c->sbuf) {		/* HEAD, 204, 304: no body goes out */
		c->stream_taken += len;
		return (int)len;
	}
	if (c->sbuf_off == c->sbuf_len) {
		/* Nothing ahead of data: what lwIP takes now skips sbuf. */
		size_t d = server_stream_direct(c, data, len);

		c->stream_taken += d;
		if (d == len)
			return (int)d;
		c->sbuf_off = c->sbuf_len = 0;
		data = (const u8 *)data + d;
		len -= d;
		direct = d;
	} else if (c->sbuf_off) {
		__builtin_memmove(c->sbuf, c->sbuf + c->sbuf_off, c->sbuf_len - c->sbuf_off);
		c->sbuf_len -= c->sbuf_off;
		c->sbuf_off = 0;
	}
	room = VIREO_RESP_STREAM_BUF - c->sbuf_len;
	if (c->chunked)
		over = 4 + 2 + 2 + sizeof CHUNK_TRAILER - 1;	/* hex size, CRLF, CRLF; the trailer */
	n = room > over ? MIN(len, room - over) : 0;
	/* After a direct write the buffer tops the call up to what it alone
	 * would have taken, no more: the rest waits upstream for on_writable
	 * and goes direct then, in one flight, rather than copied twice. */
	if (direct)
		n = MIN(n, direct < VIREO_RESP_STREAM_BUF ? VIREO_RESP_STREAM_BUF - direct : 0);
	if (n) {
		if (c->chunked)
			c->sbuf_len += (u32)ksnprintf((char *)c->sbuf + c->sbuf_len, 8, "%zx\r\n", n);
		__builtin_memcpy(c->sbuf + c->sbuf_len, data, n);
		c->sbuf_len += (u32)n;
		if (c->chunked) {
			c->sbuf[c->sbuf_len++] = '\r';
			c->sbuf[c->sbuf_len++] = '\n';
		}
		c->stream_taken += n;
		server_kick(c);
	}
	if (n < len)
		c->want_writable = true;
	return (int)(direct + n);
}

int vireo_resp_end(vireo_req r)
{
	struct conn *c;
	int err;

	c = exchange_stream(r, "vireo_resp_end", &err);
	if (!c)
		return err;
	if (c->chunked) {
		__builtin_memcpy(c->sbuf + c->sbuf_len, CHUNK_TRAILER, sizeof CHUNK_TRAILER - 1);
		c->sbuf_len += sizeof CHUNK_TRAILER - 1;
	}
	if (c->sbuf && c->stream_len != VIREO_LENGTH_UNKNOWN && c->stream_taken < c->stream_len)
		c->close_after = true;	/* short: the peer must not take it for whole (no
					 * sbuf: HEAD, 204, 304 send no body, whatever the length) */
	/* a tunnel's (body_stream in SEND) input stays open: the client's
	 * bytes go to on_body until its FIN (server_pump() sends ours) */
	c->stream_ended = true;
	server_kick(c);
	return 0;
}

int vireo_resp_abort(vireo_req r)
{
	struct conn *c;
	int err;

	c = exchange_xc(r);
	if (c && c->state == C_SEND && c->stream_ended && c->body_stream) {
		c->body_stream = false;	/* a half-closed tunnel: its input ends too */
		server_kick(c);
		return 0;
	}
	c = exchange_stream(r, "vireo_resp_abort", &err);
	if (!c)
		return err;
	c->close_after = true;	/* no last chunk, no more bytes: a cut body */
	c->stream_ended = true;
	c->body_stream = false;	/* a tunnel's input too */
	server_kick(c);
	return 0;
}

int vireo_resp_on_writable(vireo_req r, void (*fn)(vireo_req r, void *arg), void *arg)
{
	struct conn *c = exchange_xc(r);

	if (!c)
		return -EPIPE;
	c->on_writable = fn;
	c->writable_arg = arg;
	return 0;
}

int vireo_req_on_done(vireo_req r, void (*fn)(vireo_req r, bool done, void *arg), void *arg)
{
	struct conn *c = exchange_xc(r);

	if (!c)
		return -EPIPE;
	c->on_done = fn;
	c->done_arg = arg;
	return 0;
}

/* ---- the runtime's own routes ---- */

/* Their answer, as the server always gave it: 200, uncached, the body
 * zero-copy from rodata or from c->dyn (freed once written). Formatted
 * here rather than through vireo_resp_header() and vireo_resp_send(),
 * which the default image does not otherwise link. */
__cold static void exchange_own_reply(struct conn *c, const char *type, const void *body, size_t len)
{
	bool keep = server_keep_alive(c);
	size_t n = http_response_head(c->b->out, sizeof c->b->out, 200, type, len, keep, "Cache-Control: no-store\r\n");

	exchange_end(c, true);	/* the handle goes now: nothing of the app's to tell */
	if (!n) {
		server_respond_error(c, 500, c->b->parser.method == HTTP_METHOD_HEAD);
		return;
	}
	c->out_len = (u16)n;
	c->body = body;
	c->body_len = c->b->parser.method == HTTP_METHOD_HEAD ? 0 : len;
	c->body_copy = c->dyn != NULL;
	c->close_after = !keep;
	server_count_response(200);
	server_start_send(c);
}

__cold static void exchange_healthz(vireo_req r, void *arg)
{
	struct conn *c = exchange_xc(r);

	if (c)
		exchange_own_reply(c, TYPE_TEXT, "ok\n", 3);
}

/* /metrics into a fresh buffer, not counted against the apps' budget:
 * sized with a counting pass first, with some slack for counters that grow
 * a digit in between, at most HTTP_METRICS_MAX (cut at a line, counted). */
__cold static void exchange_metrics(vireo_req r, void *arg)
{
	struct conn *c = exchange_xc(r);
	struct metrics_buf b;
	size_t size;

	if (!c)
		return;
	size = 0;	/* stays 0 for a client outside metrics.allow=: 403 */
	if (allow_match_ip(&metrics_allow, &c->peer)) {
		metrics_buf_init(&b, NULL, 0);
		metrics_write_all(&b);
		size = MIN(b.len + 256, (size_t)HTTP_METRICS_MAX);
		c->dyn = kmalloc(size);
	}
	if (!c->dyn) {
		exchange_end(c, true);
		server_respond_error(c, size ? 503 : 403, c->b->parser.method == HTTP_METHOD_HEAD);
		return;
	}
	metrics_buf_init(&b, c->dyn, size);
	metrics_write_all(&b);
	if (b.overflow)
		http_server_stats.metrics_truncated++;
	exchange_own_reply(c, METRICS_CONTENT_TYPE, c->dyn, b.len);
}

__cold int http_server_routes(void)
{
	static const struct vireo_route healthz = { .path = "/healthz", .methods = VIREO_METHODS_ALL,
						    .handler = exchange_healthz };
	static const struct vireo_route metrics = { .path = "/metrics", .methods = VIREO_METHODS_ALL,
						    .handler = exchange_metrics };
	int err = api_route_add(&healthz, API_ROUTE_RUNTIME | API_ROUTE_PLAIN);

	err = err ? err : api_route_add(&metrics, API_ROUTE_RUNTIME);
#ifdef VIREO_TLS
	err = err ? err : acme_route_add();
#endif
	return err;
}
