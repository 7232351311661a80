/*
 * apps/proxy: an HTTP/1.1 reverse proxy on the app API's HTTP client
 * (apps/proxy/README.md). Every request to the appliance (but /healthz and
 * /metrics, the runtime's) goes to one of the upstreams of proxy.upstream=,
 * round-robin, to the one with the fewest requests on it (least_conn), or
 * by consistent hashing of the client's address or a header (hash:
 * pxhash.c); bodies are streamed both ways with back-pressure: the client's
 * through the route's on_body into vireo_http_write(), held in the
 * client's receive buffer while the upstream connection is full; the
 * upstream's through the call's on_body into vireo_resp_write(), held in
 * the upstream connection's receive buffer while the client is slow.
 * Nothing is ever buffered whole. A chunked request body is sent on
 * chunked (vireo_http_write() of a body of unknown length, its end
 * vireo_http_write_end() from on_body_end). A GET that asks to upgrade (a
 * WebSocket) answered 101 becomes a tunnel: vireo_resp_upgrade() and
 * vireo_http_tunnel(), bytes both ways through the same two paths; each
 * side's FIN is passed on as a FIN once the bytes before it are (the
 * client's: vireo_http_tunnel_close(); the upstream's, on_eof:
 * vireo_resp_end()), the other way still open, until both have closed or
 * proxy.timeout passes without a byte. Targets go upstream as they came
 * (vireo_req_raw_path(): %2F stays %2F).
 *
 * Failures: an upstream that cannot be connected to, resets before any
 * response byte, or breaks the framing rules is 502; one past a deadline
 * is 504. A request without a body whose method is idempotent is tried on
 * another upstream while nothing has gone to the client (the HTTP client
 * itself resends it once when a kept-alive connection was stale). After
 * proxy.fails failures in a row an upstream rests proxy.cooldown seconds
 * (unless every upstream does). A response cut midway is cut for the
 * client too (vireo_resp_abort()), never passed on as whole. Active health
 * checks (proxy.check=) take an upstream down after proxy.fall failed GETs
 * in a row and back after proxy.rise passed ones. proxy.access_log= writes
 * a line per request (pxlog.c) through vireo_log_stream().
 *
 * Bounds: PX_MAX requests in flight (VIREO_HTTP_CALLS_MAX), each holding
 * its state and one allocation for its target (PX_TARGET_MAX, 4 KiB) and
 * header lines (PX_HDRS_MAX: the runtime's 8 KiB head plus the
 * X-Forwarded lines and Forwarded): 64 x ~12.7 KiB (the state, with the
 * access log's 176 B, is ~400 B) = ~815 KiB of app.mem's 4 MiB at most;
 * more are 503. Health checks: one in flight per upstream at most, each
 * cancelled after 3/4 of proxy.check_interval. Connections: the HTTP client's (at most
 * VIREO_TCP_OUT_MAX together, shared out among the upstreams).
 */
#include "vireo/vireo.h"

#include "pxhash.h"
#include "pxhead.h"
#include "pxlog.h"

VIREO_CONFIG_STR(px_upstream_cfg, "proxy.upstream", 512, "",
		 "upstreams, host:port,... or https://host[:port] (TLS=1 images: verified), names or addresses, at most 4");
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

/* Active health checks (px_check_*): proxy.check= off by default. */
VIREO_CONFIG_STR(px_check_cfg, "proxy.check", 256, "",
		 "health check: GET this path on every upstream each proxy.check_interval (empty: off)");
#define PX_CHECK_MS_MIN 100
#define PX_CHECK_MS_MAX 3600000
static u64 px_check_ms = 2000;
static int px_check_ms_parse(const char *val, void *dst, char *why, size_t why_len)
{
	(void)dst;
	if (px_parse_ms(val, PX_CHECK_MS_MIN, PX_CHECK_MS_MAX, &px_check_ms) == 0)
		return 0;
	vireo_snprintf(why, why_len, "want N or Nms (milliseconds) or Ns (seconds), 100 ms to 3600 s");
	return -EINVAL;
}
CMDLINE_PARAM(px_check_interval, .key = "proxy.check_interval", .type = CMDLINE_CUSTOM, .parse = px_check_ms_parse,
	      .def = "2s", .values = "N or Nms (milliseconds), Ns (seconds): 100 ms to 3600 s",
	      .help = "time between two health checks of an upstream (each times out after 3/4 of it)");
VIREO_CONFIG_UINT(px_rise_cfg, "proxy.rise", 2, 1, 100, "checks passed in a row that bring a down upstream back");
VIREO_CONFIG_UINT(px_fall_cfg, "proxy.fall", 3, 1, 100, "checks failed in a row that take an upstream down");

/* Balancing. */
enum { PX_RR, PX_LEAST, PX_HASH };
static int px_balance_cfg = PX_RR;
static const char *const px_balances[] = { "round_robin", "least_conn", "hash", NULL };
CMDLINE_PARAM(px_balance, .key = "proxy.balance", .type = CMDLINE_ENUM, .dst = &px_balance_cfg,
	      .choices = px_balances, .def = "round_robin",
	      .help = "how an upstream is chosen (hash: by proxy.hash_key, consistent)");
VIREO_CONFIG_STR(px_hash_key_cfg, "proxy.hash_key", 72, "client",
		 "proxy.balance=hash's key: client (its address) or header:NAME (absent, empty or repeated: round-robin)");
static char px_hash_seed_cfg[64];
CMDLINE_PARAM(px_hash_seed, .key = "proxy.hash_seed", .type = CMDLINE_STR, .dst = px_hash_seed_cfg,
	      .dst_size = 64, .def = "", .secret = true,
	      .help = "the hash's secret, the same on proxies that must agree (empty: random at boot)");

VIREO_CONFIG_BOOL(px_forwarded_cfg, "proxy.forwarded", false,
		  "add a Forwarded element (RFC 7239: for, proto, host) to the client's");

/* The access log. */
static int px_alog_cfg;	/* its index is its VIREO_LOG_* bits */
static const char *const px_alogs[] = { "off", "console", "syslog", "both", NULL };
CMDLINE_PARAM(px_access_log, .key = "proxy.access_log", .type = CMDLINE_ENUM, .dst = &px_alog_cfg,
	      .choices = px_alogs, .def = "off",
	      .help = "one line per request (combined format and the upstream) to the console, syslog= or both");
VIREO_COUNTER(px_alog_lines, "proxy_access_log_lines_total", "Access log lines written (to any destination).");
VIREO_COUNTER_VEC(px_alog_dropped, "proxy_access_log_dropped_total",
		  "Access log lines a destination could not take (console rate, syslog ring full or off).", "to",
		  "console", "syslog");

VIREO_COUNTER(px_requests, "proxy_requests_total", "Requests proxied (each try on an upstream counts once).");
VIREO_COUNTER(px_retries, "proxy_retries_total", "Requests tried again on another upstream.");
VIREO_COUNTER(px_bad_gateway, "proxy_502_total", "Requests answered 502 (upstream failed).");
VIREO_COUNTER(px_timeouts, "proxy_504_total", "Requests answered 504 (upstream deadline).");
VIREO_COUNTER(px_cut, "proxy_cut_total", "Responses cut midway: the upstream failed after the head went out.");
VIREO_COUNTER(px_busy, "proxy_503_total", "Requests refused: too many in flight.");

#define PX_MAX VIREO_HTTP_CALLS_MAX
#define PX_TARGET_MAX 4096	/* the runtime's request line is 2 KiB: 3x for re-encoding */
#define PX_HDRS_MAX (8192 + 512)

struct px_up {
	struct px_upstream_addr a;
	char label[PX_HOST_MAX + 16];	/* "[host]:port", "https://[host]:port" */
	vireo_http_pool pool;
	u32 active, fails;
	u64 down_until;
	u64 requests, errors, ejections;
	u64 lat[PX_LAT_BUCKETS];
	u64 hash_id;		/* px_hash_id() of the label */
	/* active checks */
	struct vireo_timer check_timer, check_deadline;
	vireo_http_call check_call;
	bool check_live;
	struct px_health health;	/* down while the checks say so */
	int check_status;	/* the live check's status, 0 before its head */
	u64 check_failures, check_downs;
};

static struct px_up px_ups[PX_UPSTREAMS_MAX];
static unsigned px_nups;
static u32 px_rr;
static struct siphash_key px_hkey;
static const char *px_hash_header;	/* proxy.hash_key=header:NAME's NAME, or NULL */

struct px {
	vireo_req r;
	vireo_http_call h;
	struct px_up *up;
	u64 t0, body_len;
	bool req_live, call_live, has_body, started, idempotent;
	bool upgrade, tunnel;	/* asks to switch protocols; the 101 came: a tunnel */
	bool up_eof, closing;	/* the tunnel's upstream FIN came; then the client's too */
	bool chunked, body_ended;	/* a chunked request body; its end came (vireo_http_write_end()) */
	u8 tried;		/* a bit per upstream */
	char method[8];
	char *target, *hdrs;	/* one allocation */
	u64 hkey;		/* proxy.balance=hash: the key's hash ... */
	bool has_hkey;		/* ... if the request has one (else round-robin) */
	/* for the access log */
	int status;		/* what the client got, 0 before */
	u64 sent, unix_s;	/* body bytes to the client; the wall clock at the start */
	s64 up_ms;		/* the last upstream try's time, -1: none */
	bool have_time;
	char addr[VIREO_ADDR_STRLEN];
	char referer[PX_LOG_REF_MAX + 1], agent[PX_LOG_UA_MAX + 1];
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

	p->status = status;
	p->sent = (u64)n;

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
	if ((resp->status < 200 && !(resp->status == 101 && p->upgrade)) || resp->status > 599) {
		vireo_http_cancel(h);	/* 101 unasked for: 502 */
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
	if (resp->status == 101) {
		/* a tunnel: bytes both ways until either side closes */
		const char *up = vireo_http_header(h, "Upgrade");

		err = up ? vireo_resp_upgrade(p->r, up) : -EINVAL;
		if (!err)
			err = vireo_http_tunnel(h);
		p->tunnel = !err;
	} else {
		err = vireo_resp_start(p->r, resp->status, type, len);
	}
	if (err) {
		vireo_http_cancel(h);
		return;
	}
	p->status = resp->status;
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
	p->sent += (u64)n;
	return (size_t)n;	/* less: held upstream until px_client_writable */
}

/* A tunnel's upstream FIN, after its bytes: passed on as the client's
 * FIN; the client's bytes still go upstream until its own. */
static void px_on_up_eof(vireo_http_call h, void *ctx)
{
	struct px *p = ctx;

	(void)h;
	p->up_eof = true;
	if (p->req_live)
		vireo_resp_end(p->r);
}

static int px_start(struct px *p);

/* The 502/504 page's reason: the HTTP client's, or a TLS upstream's
 * refusal ("upstream TLS refused: cert_name"; the runtime's TLS client
 * logged it with mbedTLS's flags). */
static const char *px_why(vireo_http_call h, int err)
{
	static char why[48];
	enum vireo_tcp_fail f = vireo_http_connect_why(h);

	if (err == -VIREO_HTTP_EABORTED)
		return "bad response";
	if (f >= VIREO_TCP_FAIL_TLS) {
		vireo_snprintf(why, sizeof why, "upstream TLS refused: %s", vireo_tcp_fail_str(f));
		return why;
	}
	return vireo_http_err_str(err);
}

static void px_on_done(vireo_http_call h, int err, void *ctx)
{
	struct px *p = ctx;
	struct px_up *u = p->up;
	u64 ms = vireo_now_ms() - p->t0;

	(void)h;
	p->call_live = false;
	p->up_ms = (s64)ms;
	u->active--;
	if (!p->tunnel)
		u->lat[px_lat_bucket(ms)]++;	/* a tunnel's life is no latency */
	if (!err) {
		u->fails = 0;
		if (p->req_live && !p->up_eof)
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
		px_fail(p, err == -VIREO_HTTP_ETIMEOUT ? 504 : 502, px_why(h, err));
	px_free(p);
}

/* ---- the request, client to upstream ---- */

static void px_upstream_writable(vireo_http_call h, void *ctx)
{
	struct px *p = ctx;

	if (p->body_ended)
		vireo_http_write_end(h);	/* its last chunk, held before */
	else if (p->req_live)
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

/* A chunked body's end: its last chunk goes upstream. In a tunnel, the
 * client's FIN: the upstream's connection closes after what was relayed
 * (on_done(0) then closes the client's); before the upgrade (the empty
 * body's end) nothing. */
static void px_on_req_body_end(vireo_req r, void *arg)
{
	struct px *p = px_of(r);

	(void)arg;
	if (!p || !p->call_live)
		return;
	if (p->tunnel) {
		vireo_http_tunnel_close(p->h);	/* after on_eof: the call ends (on_done(0)) */
		p->closing = p->up_eof;
	} else if (p->chunked) {
		p->body_ended = true;
		vireo_http_write_end(p->h);	/* or again from on_writable */
	}
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
		ch[k].down_until = px_ups[k].health.down ? UINT64_MAX : px_ups[k].down_until;
	}
	if (px_balance_cfg == PX_HASH && p->has_hkey) {
		u64 ids[PX_UPSTREAMS_MAX];

		for (unsigned k = 0; k < px_nups; k++)
			ids[k] = px_ups[k].hash_id;
		i = px_hash_choose(&px_hkey, ids, ch, px_nups, now, &p->hkey, sizeof p->hkey);
	} else {
		i = px_choose(ch, px_nups, now, px_least_cfg || px_balance_cfg == PX_LEAST, &px_rr);
	}
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
					 .on_writable = px_upstream_writable, .on_eof = px_on_up_eof,
					 .on_done = px_on_done, .ctx = p },
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

static const char *px_method_name(enum vireo_method m);

/* ---- the access log ---- */

static void px_log_write(const struct px_log_entry *e)
{
	char line[PX_LOG_LINE];
	size_t n = px_log_format(e, line);
	unsigned to = (unsigned)px_alog_cfg, took = vireo_log_stream(to, line, n);

	if (took)
		vireo_counter_inc(&px_alog_lines);
	if ((to & VIREO_LOG_CONSOLE) && !(took & VIREO_LOG_CONSOLE))
		vireo_counter_vec_add(&px_alog_dropped, 0, 1);
	if ((to & VIREO_LOG_SYSLOG) && !(took & VIREO_LOG_SYSLOG))
		vireo_counter_vec_add(&px_alog_dropped, 1, 1);
}

/* The client-side parts of a line, while r is live. */
static void px_log_capture(vireo_req r, char addr[VIREO_ADDR_STRLEN], char *ref, char *ua, bool *have_time,
			   u64 *unix_s)
{
	const char *v;
	struct vireo_addr a;

	addr[0] = ref[0] = ua[0] = '\0';
	if (vireo_req_peer(r, &a) == 0)
		vireo_addr_str(&a, addr, VIREO_ADDR_STRLEN);
	v = vireo_req_header(r, "Referer");
	if (v)
		strlcpy(ref, v, PX_LOG_REF_MAX + 1);
	v = vireo_req_header(r, "User-Agent");
	if (v)
		strlcpy(ua, v, PX_LOG_UA_MAX + 1);
	*have_time = vireo_wallclock(unix_s);
}

/* A request answered before it had a struct px (no upstream, 411, busy). */
static void px_log_now(vireo_req r, int status, u64 bytes)
{
	char addr[VIREO_ADDR_STRLEN], ref[PX_LOG_REF_MAX + 1], ua[PX_LOG_UA_MAX + 1], target[PX_LOG_REQ_MAX + 1];
	struct px_log_entry e = { .status = status, .bytes = bytes, .upstream_ms = -1, .version = "HTTP/1.1" };

	if (!px_alog_cfg)
		return;
	px_log_capture(r, addr, ref, ua, &e.have_time, &e.unix_s);
	e.addr = addr;
	e.referer = vireo_req_header(r, "Referer") ? ref : NULL;
	e.agent = vireo_req_header(r, "User-Agent") ? ua : NULL;
	e.method = px_method_name(vireo_req_method(r));
	/* the log keeps PX_LOG_REQ_MAX bytes of it: a longer one is its path, cut there */
	e.target = px_target(vireo_req_path(r), vireo_req_query(r), target, sizeof target) ? target : vireo_req_path(r);
	px_log_write(&e);
}

static void px_log_done(struct px *p, bool done)
{
	struct px_log_entry e = {
		.addr = p->addr, .have_time = p->have_time, .unix_s = p->unix_s, .method = p->method,
		.target = p->target[0] ? p->target : "-", .version = "HTTP/1.1", .bytes = p->sent,
		.referer = p->referer[0] ? p->referer : NULL, .agent = p->agent[0] ? p->agent : NULL,
		.upstream = p->up ? p->up->label : NULL, .upstream_ms = p->up_ms,
	};

	/* the client left before any answer: nginx's 499 (0: the runtime
	 * answered for us, never seen) */
	e.status = p->status ? p->status : done ? 0 : 499;
	if (p->call_live)
		e.upstream_ms = (s64)(vireo_now_ms() - p->t0);
	px_log_write(&e);
}

static void px_req_done(vireo_req r, bool done, void *arg)
{
	struct px *p = arg;

	(void)r;
	if (px_alog_cfg)
		px_log_done(p, done);
	p->req_live = false;
	if (p->call_live && !p->closing)
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
	char xff[1024] = "", fwd[1024] = "", peer[VIREO_ADDR_STRLEN];
	struct vireo_addr a;
	size_t nl, w = 0, xl = 0, fl = 0;
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
		if (px_forwarded_cfg && px_name_is(name, nl, "forwarded")) {
			n = vireo_snprintf(fwd + fl, sizeof fwd - fl, "%s, ", value);
			if (n < 0 || (size_t)n >= sizeof fwd - fl)
				return 0;
			fl += (size_t)n;
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
	w += (size_t)n;
	if (p->upgrade) {
		/* hop-by-hop, removed above: asked again, of this hop */
		n = vireo_snprintf(out + w, size - w, "Connection: upgrade\r\nUpgrade: %s\r\n",
				   vireo_req_header(p->r, "Upgrade"));
		if (n < 0 || (size_t)n >= size - w)
			return 0;
		w += (size_t)n;
	}
	if (px_forwarded_cfg) {
		/* RFC 7239 section 4: our element after the client's list */
		if (!px_forwarded(peer, vireo_req_tls(p->r), vireo_req_header(p->r, "Host"), fwd + fl, sizeof fwd - fl))
			return 0;
		n = vireo_snprintf(out + w, size - w, "Forwarded: %s\r\n", fwd);
		if (n < 0 || (size_t)n >= size - w)
			return 0;
		w += (size_t)n;
	}
	return w;
}

/* proxy.balance=hash: the request's key, hashed into *key (the header's
 * value, or the client's address without its port); false when the header
 * is absent, empty or repeated (the request goes round-robin, as
 * HAProxy's balance hdr() does). */
static bool px_hash_key(vireo_req r, u64 *key)
{
	const char *v;
	struct vireo_addr a = { 0 };

	if (px_hash_header) {
		v = vireo_req_header(r, px_hash_header);
		if (!v || !*v)
			return false;
		*key = siphash24(&px_hkey, v, strlen(v));
		return true;
	}
	if (vireo_req_peer(r, &a))
		return false;
	*key = siphash24(&px_hkey, a.ip, a.family == VIREO_AF_INET ? 4 : 16);
	return true;
}

/* Every Connection field's values joined by "," into buf (scratch), or
 * NULL when there is none or they do not fit. */
static const char *px_conn_tokens(vireo_req r, char *buf, size_t size)
{
	const char *name, *value;
	size_t nl, w = 0;
	int n;

	for (unsigned i = 0; vireo_req_field(r, i, &name, &nl, &value) == 0; i++) {
		if (!px_name_is(name, nl, "connection"))
			continue;
		n = vireo_snprintf(buf + w, size - w, "%s,", value);
		if (n < 0 || (size_t)n >= size - w)
			return NULL;
		w += (size_t)n;
	}
	return w ? buf : NULL;
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
		px_log_now(r, 503, 34);
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
		px_log_now(r, 503, 0);
		return;
	}
	px_slots[slot] = p;
	p->up_ms = -1;
	if (px_alog_cfg)
		px_log_capture(r, p->addr, p->referer, p->agent, &p->have_time, &p->unix_s);
	if (px_balance_cfg == PX_HASH)
		p->has_hkey = px_hash_key(r, &p->hkey);
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
	} else if (vireo_req_header(r, "Transfer-Encoding")) {
		/* chunked (the runtime refused any other coding, 501, and both
		 * framings, 400): streamed on chunked, its end from on_body_end */
		p->body_len = VIREO_LENGTH_UNKNOWN;
		p->has_body = p->chunked = true;
	}
	/* a WebSocket: a GET without a body that asks to switch protocols
	 * (HTTP/1.1: an HTTP/1.0 request's Upgrade is ignored, RFC 9110 7.8,
	 * and it goes upstream as a plain GET, its answer passed on) */
	p->upgrade = vireo_req_method(r) == VIREO_GET && !p->has_body && !vireo_req_http10(r) &&
		     px_upgrade(px_conn_tokens(r, p->target, PX_TARGET_MAX), vireo_req_header(r, "Upgrade"));
	vireo_req_on_done(r, px_req_done, p);
	if (!vireo_req_raw_path(r) ||
	    !px_target_raw(vireo_req_raw_path(r), vireo_req_query(r), p->target, PX_TARGET_MAX) ||
	    !px_headers(p, p->hdrs, PX_HDRS_MAX)) {
		p->status = 431;
		p->sent = 25;
		p->target[0] = '\0';
		vireo_resp_send(r, 431, "text/plain; charset=utf-8", "431 too large to pass on\n", 25);
		return;
	}
	err = px_start(p);
	if (err == -ENOSPC) {
		vireo_counter_inc(&px_busy);
		p->status = 503;
		vireo_resp_error(r, 503);
	} else if (err) {
		px_fail(p, 502, "no upstream");
	}
}

/* ---- active health checks ---- */

#define PX_CHECK_BODY_MAX 65536	/* a check's answer body at most (else it failed) */

static void px_check_result(struct px_up *u, bool ok, const char *why)
{
	int t = px_health_step(&u->health, ok, (u32)px_rise_cfg, (u32)px_fall_cfg);

	if (!ok)
		u->check_failures++;
	if (t > 0) {
		vireo_log("proxy: upstream %s up: %llu health checks passed in a row", u->label,
			  (unsigned long long)px_rise_cfg);
	} else if (t < 0) {
		u->check_downs++;
		vireo_warn("proxy: upstream %s down: %llu health checks failed in a row (last: %s)", u->label,
			   (unsigned long long)px_fall_cfg, why);
	}
}

static void px_check_head(vireo_http_call h, const struct vireo_http_response *resp, void *ctx)
{
	struct px_up *u = ctx;

	(void)h;
	u->check_status = resp->status;
}

static size_t px_check_body(vireo_http_call h, const void *data, size_t len, void *ctx)
{
	(void)h;
	(void)data;
	(void)ctx;
	return len;	/* read and dropped: the connection stays usable */
}

static void px_check_done(vireo_http_call h, int err, void *ctx)
{
	struct px_up *u = ctx;
	char why[32];

	(void)h;
	u->check_live = false;
	vireo_timer_stop(&u->check_deadline);
	if (err)
		vireo_snprintf(why, sizeof why, "%s", err == -VIREO_HTTP_EABORTED ? "timeout" : vireo_http_err_str(err));
	else
		vireo_snprintf(why, sizeof why, "status %d", u->check_status);
	px_check_result(u, !err && u->check_status >= 200 && u->check_status < 400, why);
}

/* The check's time is up (3/4 of the interval): on_done(EABORTED) follows. */
static void px_check_timeout(struct vireo_timer *t, void *arg)
{
	struct px_up *u = arg;

	(void)t;
	if (u->check_live)
		vireo_http_cancel(u->check_call);
}

static void px_check_fire(struct vireo_timer *t, void *arg)
{
	struct px_up *u = arg;
	int err;

	vireo_timer_start(t, (u32)px_check_ms);
	if (u->check_live)
		return;	/* never: its deadline comes first */
	u->check_status = 0;
	err = vireo_http_request(u->pool,
				 &(struct vireo_http_request){
					 .method = "GET", .target = px_check_cfg,
					 .headers = "User-Agent: vireo-proxy-check\r\n", .max_body = PX_CHECK_BODY_MAX,
					 .on_head = px_check_head, .on_body = px_check_body, .on_done = px_check_done,
					 .ctx = u },
				 &u->check_call);
	if (err == -ENOSPC || err == -ENOMEM)
		return;	/* the proxy is full, not the upstream down: skipped */
	if (err) {
		px_check_result(u, false, "not sent");
		return;
	}
	u->check_live = true;
	vireo_timer_start(&u->check_deadline, (u32)(px_check_ms * 3 / 4));
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
		{ "proxy_upstream_up",
		  "1 while the upstream takes requests, 0 while it rests after failures or is down by health checks.",
		  true },
		{ "proxy_upstream_ejected", "1 while the upstream rests after proxy.fails failures (passive).", true },
		{ "proxy_upstream_check_up", "0 while health checks hold the upstream down, else 1.", true },
		{ "proxy_upstream_check_failures_total", "Health checks the upstream failed.", false },
		{ "proxy_upstream_check_downs_total", "Times health checks took the upstream down.", false },
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
			u64 v[] = { u->requests,
				    u->errors,
				    u->ejections,
				    !(u->down_until > now) && !u->health.down,
				    u->down_until > now,
				    !u->health.down,
				    u->check_failures,
				    u->check_downs,
				    u->active,
				    px_lat_quantile(u->lat, 500),
				    px_lat_quantile(u->lat, 990) };

			vireo_metrics_sample(o, fams[f].name, "upstream", u->label, v[f]);
		}
	}
}

static void px_check_start(void)
{
	if (!px_check_cfg[0])
		return;
	for (const char *c = px_check_cfg; *c; c++)
		if ((u8)*c <= ' ' || (u8)*c >= 0x7f || px_check_cfg[0] != '/') {
			vireo_warn("proxy: proxy.check=%s: not a path (/..., no space or control byte): no health checks",
				   px_check_cfg);
			return;
		}
	for (unsigned i = 0; i < px_nups; i++) {
		struct px_up *u = &px_ups[i];

		vireo_timer_init(&u->check_timer, px_check_fire, u);
		vireo_timer_init(&u->check_deadline, px_check_timeout, u);
		/* spread over the first interval */
		vireo_timer_start(&u->check_timer, (u32)(px_check_ms / px_nups * i + px_check_ms / 8));
	}
	vireo_log("proxy: health checks GET %s every %llu ms (down after %llu failed, up after %llu passed)",
		  px_check_cfg, (unsigned long long)px_check_ms, (unsigned long long)px_fall_cfg,
		  (unsigned long long)px_rise_cfg);
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
	static const char *const px_alpn[] = { "http/1.1", NULL };
	int n, err, ntls = 0;
	u32 per, per_tls;

	if (px_hash_seed_cfg[0]) {
		px_hash_seed(&px_hkey, px_hash_seed_cfg);
	} else {
		u8 k[16];

		vireo_random(k, sizeof k);
		siphash_key_from_bytes(&px_hkey, k);
	}
	if (!strncmp(px_hash_key_cfg, "header:", 7) && px_hash_key_cfg[7]) {
		px_hash_header = px_hash_key_cfg + 7;
	} else if (strcmp(px_hash_key_cfg, "client")) {
		vireo_warn("proxy: proxy.hash_key=%s: want client or header:NAME; hashing the client's address",
			   px_hash_key_cfg);
	}

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
		/* TLS upstreams share the runtime's VIREO_TLS_OUT_MAX (4) TLS
		 * connections (40 KiB of the TLS heap each) */
		for (int i = 0; i < n; i++)
			ntls += a[i].tls;
		per_tls = ntls ? VIREO_TLS_OUT_MAX / (u32)ntls : 0;
		if (per_tls > per)
			per_tls = per;
		for (int i = 0; i < n; i++) {
			struct px_up *u = &px_ups[px_nups];
			char name[16];

			u->a = a[i];
			vireo_snprintf(u->label, sizeof u->label, px_v6(a[i].host) ? "%s[%s]:%u" : "%s%s:%u",
				       a[i].tls ? "https://" : "", a[i].host, a[i].port);
			vireo_snprintf(name, sizeof name, "proxy%d", i);
			err = vireo_http_pool_new(&(struct vireo_http_pool_cfg){
							  .name = name, .host = a[i].host, .port = a[i].port,
							  .max_conns = a[i].tls ? per_tls : per,
							  .max_idle = a[i].tls ? per_tls : per,
							  .tls = a[i].tls, .alpn = a[i].tls ? px_alpn : NULL,
							  .connect_timeout_ms = (u32)px_connect_cfg * 1000,
							  .head_timeout_ms = (u32)px_timeout_cfg * 1000,
							  .body_timeout_ms = (u32)px_timeout_cfg * 1000,
							  .idle_timeout_ms = (u32)px_idle_cfg * 1000,
							  .max_waiting = VIREO_HTTP_CALLS_MAX / (u32)n,
							  .max_body = UINT64_MAX },
						  &u->pool);
			if (err == -ENOTSUP) {
				vireo_warn("proxy: upstream %s: HTTPS upstreams need a TLS=1 image "
					   "(make APP=apps/proxy TLS=1): left out", u->label);
				continue;
			}
			if (err) {
				vireo_warn("proxy: upstream %s: no pool (%d)", u->label, err);
				continue;
			}
			u->hash_id = px_hash_id(&px_hkey, u->label);
			px_nups++;
			vireo_log("proxy: upstream %s", u->label);
		}
	}
	px_check_start();
	vireo_http_raw_paths();	/* targets passed on as they came: "%2F" is not "/" */
	vireo_metrics_writer(px_metrics, NULL);
	return vireo_http_route(&(struct vireo_route){ .path = "/", .prefix = true, .methods = VIREO_METHODS_ALL,
						       .handler = px_handle, .on_body = px_on_req_body,
						       .on_body_end = px_on_req_body_end,
						       .body_limit = px_body_cfg });
}

VIREO_APP(proxy, .name = "proxy", .init = px_init, .help = "a reverse proxy to proxy.upstream=host:port,...");
