/*
 * apps/proxy: an HTTP/1.1 reverse proxy on the app API's HTTP client
 * (apps/proxy/README.md). Every request to the appliance (but /healthz and
 * /metrics, the runtime's) goes to one of the upstreams of proxy.upstream=,
 * round-robin or (proxy.least_conn) to the one with the fewest requests on
 * it; bodies are streamed both ways with back-pressure: the client's
 * through the route's on_body into vireo_http_write(), held in the
 * client's receive buffer while the upstream connection is full; the
 * upstream's through the call's on_body into vireo_resp_write(), held in
 * the upstream connection's receive buffer while the client is slow.
 * Nothing is ever buffered whole.
 *
 * Failures: an upstream that cannot be connected to, resets before any
 * response byte, or breaks the framing rules is 502; one past a deadline
 * is 504. A request without a body whose method is idempotent is tried on
 * another upstream while nothing has gone to the client (the HTTP client
 * itself resends it once when a kept-alive connection was stale). After
 * proxy.fails failures in a row an upstream rests proxy.cooldown seconds
 * (unless every upstream does). A response cut midway is cut for the
 * client too (vireo_resp_abort()), never passed on as whole.
 *
 * Bounds: PX_MAX requests in flight (VIREO_HTTP_CALLS_MAX), each holding
 * its state and one allocation for its target (PX_TARGET_MAX, 4 KiB) and
 * header lines (PX_HDRS_MAX: the runtime's 8 KiB head plus the
 * X-Forwarded lines): 64 x ~12.6 KiB = ~810 KiB of app.mem's 4 MiB at
 * most; more are 503. Connections: the HTTP client's (at most
 * VIREO_TCP_OUT_MAX together, shared out among the upstreams).
 */
#include "vireo/vireo.h"

#include "pxhead.h"

VIREO_CONFIG_STR(px_upstream_cfg, "proxy.upstream", 512, "", "upstreams, host:port,... (names or addresses, at most 4)");
VIREO_CONFIG_STR(px_host_cfg, "proxy.host", 254, "", "the Host sent upstream (empty: the client's, passed on)");
VIREO_CONFIG_BOOL(px_least_cfg, "proxy.least_conn", false, "least connections instead of round-robin");
VIREO_CONFIG_UINT(px_fails_cfg, "proxy.fails", 3, 1, 1000, "failures in a row that eject an upstream");
VIREO_CONFIG_UINT(px_cool_cfg, "proxy.cooldown", 10, 1, 3600, "seconds an ejected upstream rests");
VIREO_CONFIG_UINT(px_connect_cfg, "proxy.connect_timeout", 5, 1, 60, "seconds to connect to an upstream");
VIREO_CONFIG_UINT(px_timeout_cfg, "proxy.timeout", 30, 1, 600,
		  "seconds for an upstream's head, and between its body bytes (then 504)");
VIREO_CONFIG_UINT(px_idle_cfg, "proxy.idle_timeout", 4, 1, 3600,
		  "seconds an idle upstream connection is kept (below the upstream's own)");
VIREO_CONFIG_UINT(px_body_cfg, "proxy.max_body", 1073741824, 0, 0, "request body bytes at most (0: no cap; 413)");
VIREO_CONFIG_UINT(px_resp_body_cfg, "proxy.max_resp_body", 0, 0, 0, "response body bytes at most (0: no cap; 502 when its length says so, else the body is cut)");

VIREO_COUNTER(px_requests, "proxy_requests_total", "Requests proxied (each try on an upstream counts once).");
VIREO_COUNTER(px_retries, "proxy_retries_total", "Requests tried again on another upstream.");
VIREO_COUNTER(px_bad_gateway, "proxy_502_total", "Requests answered 502 (upstream failed).");
VIREO_COUNTER(px_timeouts, "proxy_504_total", "Requests answered 504 (upstream deadline).");
VIREO_COUNTER(px_cut, "proxy_cut_total", "Responses cut midway: the upstream failed after the head went out.");
VIREO_COUNTER(px_busy, "proxy_503_total", "Requests refused: too many in flight.");
VIREO_COUNTER(px_no_length, "proxy_411_total", "Chunked request bodies refused (411).");

#define PX_MAX VIREO_HTTP_CALLS_MAX
#define PX_TARGET_MAX 4096	/* the runtime's request line is 2 KiB: 3x for re-encoding */
#define PX_HDRS_MAX (8192 + 512)

struct px_up {
	struct px_upstream_addr a;
	char label[PX_HOST_MAX + 8];
	vireo_http_pool pool;
	u32 active, fails;
	u64 down_until;
	u64 requests, errors, ejections;
	u64 lat[PX_LAT_BUCKETS];
};

static struct px_up px_ups[PX_UPSTREAMS_MAX];
static unsigned px_nups;
static u32 px_rr;

struct px {
	vireo_req r;
	vireo_http_call h;
	struct px_up *up;
	u64 t0, body_len;
	bool req_live, call_live, has_body, started, idempotent;
	u8 tried;		/* a bit per upstream */
	char method[8];
	char *target, *hdrs;	/* one allocation */
};

static struct px *px_slots[PX_MAX];

static struct px *px_of(vireo_req r)
{
	for (unsigned i = 0; i < PX_MAX; i++)
		if (px_slots[i] && px_slots[i]->r.id == r.id)
			return px_slots[i];
	return NULL;
}

static void px_free(struct px *p)
{
	if (p->req_live || p->call_live)
		return;
	for (unsigned i = 0; i < PX_MAX; i++)
		if (px_slots[i] == p)
			px_slots[i] = NULL;
	vireo_free(p->target);
	vireo_free(p);
}

static void px_fail(struct px *p, int status, const char *why)
{
	char text[96];
	int n = vireo_snprintf(text, sizeof text, "%d %s\n", status, why);

	if (status == 502)
		vireo_counter_inc(&px_bad_gateway);
	else if (status == 504)
		vireo_counter_inc(&px_timeouts);
	vireo_resp_send(p->r, status, "text/plain; charset=utf-8", text, (size_t)n);
}

/* ---- the response, upstream to client ---- */

static void px_client_writable(vireo_req r, void *arg)
{
	struct px *p = arg;

	(void)r;
	if (p->call_live)
		vireo_http_resume(p->h);
}

static void px_on_head(vireo_http_call h, const struct vireo_http_response *resp, void *ctx)
{
	struct px *p = ctx;
	const char *name, *value, *conn = vireo_http_header(h, "Connection"), *type = NULL;
	char conns[512];
	size_t nl, cl = 0;
	u64 len;
	int err;

	if (!p->req_live) {
		vireo_http_cancel(h);
		return;
	}
	/* every Connection field's tokens, joined */
	conns[0] = '\0';
	for (unsigned i = 0; !conn && vireo_http_field(h, i, &name, &nl, &value) == 0; i++)
		if (px_name_is(name, nl, "connection"))
			cl += (size_t)vireo_snprintf(conns + cl, sizeof conns - cl, "%s,", value);
	if (!conn)
		conn = conns;
	if (resp->status < 200 || resp->status > 599) {	/* 101: we never ask to upgrade */
		vireo_http_cancel(h);
		return;
	}
	for (unsigned i = 0; vireo_http_field(h, i, &name, &nl, &value) == 0; i++) {
		char nm[64];

		if (px_hop_by_hop(name, nl, conn) || nl >= sizeof nm)
			continue;
		__builtin_memcpy(nm, name, nl);
		nm[nl] = '\0';
		if (px_name_is(name, nl, "content-length") || px_name_is(name, nl, "server") ||
		    px_name_is(name, nl, "date"))
			continue;	/* the runtime's */
		if (px_name_is(name, nl, "content-type")) {
			type = value;
			continue;
		}
		if (vireo_resp_header(p->r, nm, value) < 0) {
			vireo_http_cancel(h);	/* over VIREO_RESP_HEADERS_MAX: 502 from on_done */
			return;
		}
	}
	len = resp->has_length ? resp->content_length : VIREO_LENGTH_UNKNOWN;
	if (resp->status == 204 || resp->status == 304)
		len = 0;
	err = vireo_resp_start(p->r, resp->status, type, len);
	if (err) {
		vireo_http_cancel(h);
		return;
	}
	p->started = true;
	vireo_resp_on_writable(p->r, px_client_writable, p);
}

static size_t px_on_resp_body(vireo_http_call h, const void *data, size_t len, void *ctx)
{
	struct px *p = ctx;
	int n;

	if (!p->started) {
		vireo_http_cancel(h);
		return len;
	}
	n = vireo_resp_write(p->r, data, len);
	if (n < 0) {
		vireo_http_cancel(h);	/* the client left */
		return len;
	}
	return (size_t)n;	/* less: held upstream until px_client_writable */
}

static int px_start(struct px *p);

static void px_on_done(vireo_http_call h, int err, void *ctx)
{
	struct px *p = ctx;
	struct px_up *u = p->up;
	u64 ms = vireo_now_ms() - p->t0;

	(void)h;
	p->call_live = false;
	u->active--;
	u->lat[px_lat_bucket(ms)]++;
	if (!err) {
		u->fails = 0;
		vireo_resp_end(p->r);
		px_free(p);
		return;
	}
	if (err == -VIREO_HTTP_EABORTED && !p->req_live) {
		px_free(p);	/* we cancelled: the client went away */
		return;
	}
	u->errors++;
	if (err != -VIREO_HTTP_EABORTED && ++u->fails >= px_fails_cfg && !u->down_until) {
		u->down_until = vireo_now_ms() + px_cool_cfg * 1000;
		u->fails = 0;
		u->ejections++;
		vireo_warn("proxy: upstream %s ejected for %llu s after %llu failures (last: %s)", u->label,
			   (unsigned long long)px_cool_cfg, (unsigned long long)px_fails_cfg, vireo_http_err_str(err));
	}
	if (p->started) {
		vireo_counter_inc(&px_cut);
		vireo_resp_abort(p->r);
		px_free(p);
		return;
	}
	if (p->req_live && p->idempotent && !p->has_body &&
	    (err == -VIREO_HTTP_ECONNECT || err == -VIREO_HTTP_ECLOSED) && px_start(p) == 0) {
		vireo_counter_inc(&px_retries);
		return;
	}
	if (p->req_live)
		px_fail(p, err == -VIREO_HTTP_ETIMEOUT ? 504 : 502,
			err == -VIREO_HTTP_EABORTED ? "bad response" : vireo_http_err_str(err));
	px_free(p);
}

/* ---- the request, client to upstream ---- */

static void px_upstream_writable(vireo_http_call h, void *ctx)
{
	struct px *p = ctx;

	(void)h;
	if (p->req_live)
		vireo_req_body_resume(p->r);
}

static size_t px_on_req_body(vireo_req r, const void *data, size_t len, void *arg)
{
	struct px *p = px_of(r);
	int n;

	(void)arg;
	if (!p || !p->call_live)
		return len;	/* answered already: dropped */
	n = vireo_http_write(p->h, data, len);
	if (n == -EAGAIN)
		return 0;	/* not connected yet: px_upstream_writable */
	return n < 0 ? len : (size_t)n;
}

/* Tries p on the next upstream: 0, or -ENOENT (every one tried), or the
 * client's refusal. */
static int px_start(struct px *p)
{
	struct px_choice ch[PX_UPSTREAMS_MAX];
	u64 now = vireo_now_ms();
	int i, err;

	for (unsigned k = 0; k < px_nups; k++) {
		ch[k] = (struct px_choice){ .active = px_ups[k].active, .tried = (p->tried >> k) & 1 };
		if (px_ups[k].down_until && px_ups[k].down_until <= now)
			px_ups[k].down_until = 0;	/* rested: back in */
		ch[k].down_until = px_ups[k].down_until;
	}
	i = px_choose(ch, px_nups, now, px_least_cfg, &px_rr);
	if (i < 0)
		return -ENOENT;
	p->up = &px_ups[i];
	p->tried |= (u8)(1u << i);
	err = vireo_http_request(p->up->pool,
				 &(struct vireo_http_request){
					 .method = p->method, .target = p->target, .headers = p->hdrs,
					 .host = px_host_cfg[0] ? px_host_cfg : vireo_req_header(p->r, "Host"),
					 .body_stream = p->has_body, .body_len = p->body_len,
					 .max_body = px_resp_body_cfg ? px_resp_body_cfg : UINT64_MAX,
					 .on_head = px_on_head, .on_body = px_on_resp_body,
					 .on_writable = px_upstream_writable, .on_done = px_on_done, .ctx = p },
				 &p->h);
	if (err)
		return err;
	p->call_live = true;
	p->up->active++;
	p->up->requests++;
	p->t0 = now;
	vireo_counter_inc(&px_requests);
	return 0;
}

static void px_req_done(vireo_req r, bool done, void *arg)
{
	struct px *p = arg;

	(void)r;
	(void)done;
	p->req_live = false;
	if (p->call_live)
		vireo_http_cancel(p->h);	/* on_done(EABORTED) frees p */
	else
		px_free(p);
}

static const char *px_method_name(enum vireo_method m)
{
	switch (m) {
	case VIREO_GET: return "GET";
	case VIREO_HEAD: return "HEAD";
	case VIREO_POST: return "POST";
	case VIREO_PUT: return "PUT";
	case VIREO_DELETE: return "DELETE";
	case VIREO_PATCH: return "PATCH";
	case VIREO_OPTIONS: return "OPTIONS";
	}
	return NULL;
}

/* The header lines passed on: the client's but hop-by-hop ones, Host and
 * the framing (the client's), Expect (the body is streamed anyway) and
 * X-Forwarded-*, then X-Forwarded-For (the client's list, then the
 * client) and X-Forwarded-Proto. The length, or 0 if they do not fit. */
static size_t px_headers(struct px *p, char *out, size_t size)
{
	const char *name, *value, *conn = vireo_req_header(p->r, "Connection");
	char xff[1024] = "", peer[VIREO_ADDR_STRLEN];
	struct vireo_addr a;
	size_t nl, w = 0, xl = 0;
	int n;

	for (unsigned i = 0; vireo_req_field(p->r, i, &name, &nl, &value) == 0; i++) {
		if (px_hop_by_hop(name, nl, conn) || px_name_is(name, nl, "host") ||
		    px_name_is(name, nl, "content-length") ||
		    px_name_is(name, nl, "expect") ||
		    px_name_is(name, nl, "x-forwarded-proto"))
			continue;
		if (px_name_is(name, nl, "x-forwarded-for")) {
			n = vireo_snprintf(xff + xl, sizeof xff - xl, "%s, ", value);
			if (n < 0 || (size_t)n >= sizeof xff - xl)
				return 0;
			xl += (size_t)n;
			continue;
		}
		n = vireo_snprintf(out + w, size - w, "%.*s: %s\r\n", (int)nl, name, value);
		if (n < 0 || (size_t)n >= size - w)
			return 0;
		w += (size_t)n;
	}
	peer[0] = '\0';
	if (vireo_req_peer(p->r, &a) == 0)
		vireo_addr_str(&a, peer, sizeof peer);
	n = vireo_snprintf(out + w, size - w, "X-Forwarded-For: %s%s\r\nX-Forwarded-Proto: %s\r\n", xff, peer,
			   vireo_req_tls(p->r) ? "https" : "http");
	if (n < 0 || (size_t)n >= size - w)
		return 0;
	return w + (size_t)n;
}

static void px_handle(vireo_req r, void *arg)
{
	const char *cl = vireo_req_header(r, "Content-Length");
	unsigned slot;
	struct px *p;
	int err;

	(void)arg;
	if (!px_nups) {
		vireo_resp_send(r, 503, "text/plain; charset=utf-8", "503 no upstream (proxy.upstream=)\n", 34);
		return;
	}
	if (vireo_req_header(r, "Transfer-Encoding")) {
		/* the client API sends a streamed body with its length only */
		vireo_counter_inc(&px_no_length);
		vireo_resp_send(r, 411, "text/plain; charset=utf-8", "411 a body needs a Content-Length\n", 34);
		return;
	}
	for (slot = 0; slot < PX_MAX && px_slots[slot]; slot++)
		;
	p = slot < PX_MAX ? vireo_alloc(sizeof *p) : NULL;
	if (p)
		p->target = vireo_alloc(PX_TARGET_MAX + PX_HDRS_MAX);
	if (!p || !p->target) {
		if (p)
			vireo_free(p);
		vireo_counter_inc(&px_busy);
		vireo_resp_error(r, 503);
		return;
	}
	px_slots[slot] = p;
	p->r = r;
	p->req_live = true;
	p->hdrs = p->target + PX_TARGET_MAX;
	strlcpy(p->method, px_method_name(vireo_req_method(r)), sizeof p->method);
	p->idempotent = vireo_req_method(r) & (VIREO_GET | VIREO_HEAD | VIREO_PUT | VIREO_DELETE | VIREO_OPTIONS);
	if (cl) {
		u64 v = 0;

		for (const char *d = cl; *d; d++)
			v = v * 10 + (u64)(*d - '0');	/* digits only: the runtime's parser checked it */
		p->body_len = v;
		p->has_body = v != 0;
	}
	vireo_req_on_done(r, px_req_done, p);
	if (!px_target(vireo_req_path(r), vireo_req_query(r), p->target, PX_TARGET_MAX) ||
	    !px_headers(p, p->hdrs, PX_HDRS_MAX)) {
		vireo_resp_send(r, 431, "text/plain; charset=utf-8", "431 too large to pass on\n", 25);
		return;
	}
	err = px_start(p);
	if (err == -ENOSPC) {
		vireo_counter_inc(&px_busy);
		vireo_resp_error(r, 503);
	} else if (err) {
		px_fail(p, 502, "no upstream");
	}
}

/* ---- /metrics ---- */

static void px_metrics(struct vireo_metrics_out *o, void *arg)
{
	static const struct {
		const char *name, *help;
		bool gauge;
	} fams[] = {
		{ "proxy_upstream_requests_total", "Requests sent to the upstream.", false },
		{ "proxy_upstream_errors_total", "Requests the upstream failed (connect, timeout, framing, reset).", false },
		{ "proxy_upstream_ejections_total", "Times the upstream was ejected after proxy.fails failures.", false },
		{ "proxy_upstream_up", "1 while the upstream takes requests, 0 while it rests after failures.", true },
		{ "proxy_upstream_active", "Requests on the upstream now.", true },
		{ "proxy_upstream_latency_p50_ms", "Median time to the response's end, as its bucket's bound (ms).", true },
		{ "proxy_upstream_latency_p99_ms", "99th percentile time to the response's end, its bucket's bound (ms).",
		  true },
	};
	u64 now = vireo_now_ms();

	(void)arg;
	for (unsigned f = 0; f < ARRAY_SIZE(fams); f++) {
		vireo_metrics_family(o, fams[f].name, fams[f].gauge ? VIREO_METRIC_GAUGE : VIREO_METRIC_COUNTER,
				     fams[f].help);
		for (unsigned i = 0; i < px_nups; i++) {
			struct px_up *u = &px_ups[i];
			u64 v[] = { u->requests, u->errors, u->ejections, !(u->down_until > now), u->active,
				    px_lat_quantile(u->lat, 500), px_lat_quantile(u->lat, 990) };

			vireo_metrics_sample(o, fams[f].name, "upstream", u->label, v[f]);
		}
	}
}

static bool px_v6(const char *host)
{
	while (*host && *host != ':')
		host++;
	return *host == ':';
}

static int px_init(void)
{
	struct px_upstream_addr a[PX_UPSTREAMS_MAX];
	int n, err;
	u32 per;

	if (!px_upstream_cfg[0]) {
		vireo_warn("proxy: no proxy.upstream=host:port,...: every request is 503");
	} else {
		n = px_parse_upstreams(px_upstream_cfg, a, PX_UPSTREAMS_MAX);
		if (n < 0) {
			vireo_warn("proxy: proxy.upstream=%s: %s", px_upstream_cfg,
				   n == -E2BIG ? "more than 4 upstreams" : "not host:port,...");
			n = 0;
		}
		per = n ? VIREO_TCP_OUT_MAX / (u32)n : 0;
		for (int i = 0; i < n; i++) {
			struct px_up *u = &px_ups[px_nups];
			char name[16];

			u->a = a[i];
			vireo_snprintf(u->label, sizeof u->label, px_v6(a[i].host) ? "[%s]:%u" : "%s:%u",
				       a[i].host, a[i].port);
			vireo_snprintf(name, sizeof name, "proxy%d", i);
			err = vireo_http_pool_new(&(struct vireo_http_pool_cfg){
							  .name = name, .host = a[i].host, .port = a[i].port,
							  .max_conns = per, .max_idle = per,
							  .connect_timeout_ms = (u32)px_connect_cfg * 1000,
							  .head_timeout_ms = (u32)px_timeout_cfg * 1000,
							  .body_timeout_ms = (u32)px_timeout_cfg * 1000,
							  .idle_timeout_ms = (u32)px_idle_cfg * 1000,
							  .max_waiting = VIREO_HTTP_CALLS_MAX / (u32)n,
							  .max_body = UINT64_MAX },
						  &u->pool);
			if (err) {
				vireo_warn("proxy: upstream %s: no pool (%d)", u->label, err);
				continue;
			}
			px_nups++;
			vireo_log("proxy: upstream %s", u->label);
		}
	}
	vireo_metrics_writer(px_metrics, NULL);
	return vireo_http_route(&(struct vireo_route){ .path = "/", .prefix = true, .methods = VIREO_METHODS_ALL,
						       .handler = px_handle, .on_body = px_on_req_body,
						       .body_limit = px_body_cfg });
}

VIREO_APP(proxy, .name = "proxy", .init = px_init, .help = "a reverse proxy to proxy.upstream=host:port,...");
