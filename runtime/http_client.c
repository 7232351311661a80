/*
 * The app API's HTTP/1.1 client (include/vireo/http_client.h): pools of
 * keep-alive connections per upstream over the app API's outbound TCP
 * (vireo/net.h, or a transport with its contract), responses read with
 * runtime/http/response.c. In a file of its own, reached only through the
 * API's functions, so an image whose apps never call it links none of it
 * (gc-sections); its /metrics families chain onto the TCP clients' hook
 * (svc_out_metrics), which the pool's TCP client sets first.
 *
 * A call is started, cancelled and retried from its work item, so no
 * callback runs inside an API function. A connection holds at most one
 * call; the call holds the response parser (8.8 KiB) only while it is on
 * a connection, so memory is bounded by VIREO_TCP_OUT_MAX parsers plus
 * VIREO_HTTP_CALLS_MAX requests of at most VIREO_HTTP_REQ_MAX bytes: all
 * of it the app's own doing, none a remote party's (a response is parsed
 * in the parser's fixed buffer and its body handed on span by span, held
 * back in the connection's receive buffer when the app is slow). The
 * pools' TCP clients are bulk ones (vireo/net.h): a response body comes
 * through a window of VIREO_TCP_BULK_RXBUF, 32 segments a round trip, not
 * 4 (a proxied 64 KiB body: 5 packets from the upstream instead of 23,
 * docs/benchmarks.md), or 48 (70,080 B: a 64 KiB body and its head in one
 * flight) when the boot's plan has the memory (net/port/netmem.h out_wnd).
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/fmt.h"
#include "lib/metrics.h"
#include "lib/types.h"
#include "lwip/ip_addr.h"
#include "runtime/api.h"
#include "runtime/http/response.h"
#include "runtime/http/token.h"
#include "runtime/services.h"
#include "vireo/app.h"
#include "vireo/http_client.h"
#include "vireo/net.h"

#define HC_TICK_MS 250

enum { HC_FREE = 0, HC_CONNECTING, HC_BUSY, HC_IDLE, HC_CLOSING };

struct hc_pool;
struct hc_call;

struct hc_conn {
	vireo_tcp tcp;
	struct hc_pool *pool;
	struct hc_call *call;
	u8 state;
	u64 t_idle;
};

struct hc_pool {
	struct vireo_http_pool_cfg cfg;
	char name[32], host[254], host_hdr[264];
	struct vireo_addr addr;		/* an address literal's */
	bool literal;
	vireo_tcp_out tcp;
	struct hc_conn conns[VIREO_TCP_OUT_MAX];
	struct hc_call *wait_head, *wait_tail;	/* calls waiting for a connection */
	u32 nwait;
	struct vireo_http_stats st;
};

struct hc_call {
	u32 id;
	struct hc_pool *pool;
	struct hc_conn *conn;
	struct hc_call *next;		/* in the pool's wait queue */
	struct vireo_http_request rq;	/* the callbacks and ctx (the strings are in req) */
	struct work work;
	struct http_resp_parser *rp;	/* while on a connection */
	u8 *req;
	size_t req_len, sent;
	u64 stream_left;		/* a streamed body's bytes not written yet */
	u64 t_head, t_last;		/* the head deadline's start, the last body byte */
	bool idempotent, head_req, got_byte, retried, fresh, reused, waiting;
	bool head_armed, head_done, paused, started, cancelled;
	bool tunnel;			/* vireo_http_tunnel(): raw bytes both ways */
	bool up_eof;			/* a tunnel's upstream FIN, told to on_eof */
	u8 why;				/* enum vireo_tcp_fail: its connection never was */
	/* A chunked body (body_len VIREO_LENGTH_UNKNOWN, stream_left too
	 * until its last chunk is out): chunk_left bytes of the chunk
	 * declared last are still to come; fr[fr_off..fr_len) is framing (a
	 * chunk's size line, its CRLF, the last chunk) the connection has
	 * not taken yet. Only vireo_http_write() and vireo_http_write_end()
	 * touch them: the rest of the client runs as for any streamed body. */
	u8 fr_off, fr_len;
	bool end_req;
	u64 chunk_left;
	char fr[16];
};

#define HC_CHUNKED VIREO_LENGTH_UNKNOWN
#define HC_CHUNK_MAX 0x100000u	/* a chunk's size at most (its line: 6 hex digits) */

static struct hc_pool *hc_pools[VIREO_HTTP_POOLS_MAX];
static u32 hc_npools;
static struct hc_call *hc_calls[VIREO_HTTP_CALLS_MAX];
static u8 hc_gen[VIREO_HTTP_CALLS_MAX];
static struct vireo_timer hc_tick;
static void (*hc_prev_metrics)(struct metrics_buf *b);
static void (*hc_prev_stop)(void);
static bool hc_stopping;	/* power off: every call ends, none starts */
static u32 hc_done_id;		/* the call in on_done, and its connection's failure */
static u8 hc_done_why;

static const char *const hc_err_names[] = { "connect", "timeout", "framing", "too_large", "closed", "aborted" };
_Static_assert(ARRAY_SIZE(hc_err_names) == VIREO_HTTP_EABORTED, "a name for every enum vireo_http_err");

const char *vireo_http_err_str(int err)
{
	if (err < 0)
		err = -err;
	return err >= VIREO_HTTP_ECONNECT && err <= VIREO_HTTP_EABORTED ? hc_err_names[err - 1] : "?";
}

/* ---- /metrics ---- */

static void hc_write_metrics(struct metrics_buf *b)
{
	static const struct {
		const char *name, *help;
		size_t off;
		bool gauge;
	} fams[] = {
		{ "vireo_app_http_out_requests_total", "HTTP client requests started.",
		  offsetof(struct vireo_http_stats, requests), false },
		{ "vireo_app_http_out_reused_total", "HTTP client requests sent on a kept-alive connection.",
		  offsetof(struct vireo_http_stats, reused), false },
		{ "vireo_app_http_out_retries_total",
		  "HTTP client requests sent again: the kept-alive connection was closed before any response byte.",
		  offsetof(struct vireo_http_stats, retries), false },
		{ "vireo_app_http_out_connections_total", "HTTP client connections opened.",
		  offsetof(struct vireo_http_stats, connections), false },
		{ "vireo_app_http_out_connections_idle", "HTTP client connections kept alive now.",
		  offsetof(struct vireo_http_stats, idle), true },
	};
	char labels[96];

	if (hc_prev_metrics)
		hc_prev_metrics(b);
	for (u32 f = 0; f < ARRAY_SIZE(fams); f++) {
		metrics_family(b, fams[f].name, fams[f].gauge ? METRICS_GAUGE : METRICS_COUNTER, fams[f].help);
		for (u32 i = 0; i < hc_npools; i++) {
			ksnprintf(labels, sizeof labels, "pool=\"%s\"", hc_pools[i]->name);
			metrics_sample(b, fams[f].name, labels, *(const u64 *)((const u8 *)&hc_pools[i]->st + fams[f].off));
		}
	}
	metrics_family(b, "vireo_app_http_out_failures_total", METRICS_COUNTER,
		       "HTTP client requests failed, by reason (connect, timeout, framing, too_large, closed, aborted).");
	for (u32 i = 0; i < hc_npools; i++)
		for (u32 r = 0; r < ARRAY_SIZE(hc_err_names); r++) {
			ksnprintf(labels, sizeof labels, "pool=\"%s\",reason=\"%s\"", hc_pools[i]->name, hc_err_names[r]);
			metrics_sample(b, "vireo_app_http_out_failures_total", labels, hc_pools[i]->st.failed[r]);
		}
}

/* ---- calls ---- */

static struct hc_call *hc_call_of(vireo_http_call h)
{
	u32 slot = (h.id & 0xff) - 1;

	return h.id && slot < VIREO_HTTP_CALLS_MAX && hc_calls[slot] && hc_calls[slot]->id == h.id ? hc_calls[slot] : NULL;
}

static void hc_unwait(struct hc_call *c)
{
	struct hc_pool *p = c->pool;
	struct hc_call **pp;

	if (!c->waiting)
		return;
	for (pp = &p->wait_head; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	p->wait_tail = NULL;
	for (struct hc_call *w = p->wait_head; w; w = w->next)
		p->wait_tail = w;
	c->next = NULL;
	c->waiting = false;
	p->nwait--;
}

static void hc_pump(struct hc_pool *p);
static void hc_conn_release(struct hc_conn *k, bool keep);

/* The end of c: on_done once, then c is freed. Its connection (if any)
 * is the caller's to release or close. */
static void hc_done(struct hc_call *c, int err)
{
	struct hc_pool *p = c->pool;
	u32 slot = (c->id & 0xff) - 1;

	hc_unwait(c);
	if (c->conn && c->conn->call == c)
		c->conn->call = NULL;
	c->conn = NULL;
	if (err && hc_stopping)
		err = VIREO_HTTP_EABORTED;
	if (err)
		p->st.failed[err - 1]++;
	hc_calls[slot] = NULL;
	work_cancel(&c->work);
	hc_done_id = c->id;
	hc_done_why = c->why;
	c->rq.on_done((vireo_http_call){ c->id }, err ? -err : 0, c->rq.ctx);
	hc_done_id = 0;
	kfree(c->rp);
	kfree(c->req);
	kfree(c);
}

/* Ends the call on connection k (its bytes can no longer be trusted or
 * used) with err, and the connection with it. */
static void hc_fail_conn(struct hc_conn *k, int err)
{
	struct hc_call *c = k->call;

	if (k->state == HC_BUSY || k->state == HC_CONNECTING) {
		k->state = HC_CLOSING;
		vireo_tcp_abort(k->tcp);	/* on_close or on_fail frees the slot */
	}
	if (c)
		hc_done(c, err);
}

static void hc_send(struct hc_call *c);

/* c onto connection k (idle or just opened). */
static void hc_attach(struct hc_call *c, struct hc_conn *k)
{
	k->call = c;
	c->conn = k;
	c->sent = 0;
	c->got_byte = c->head_done = c->head_armed = c->paused = false;
	c->rp->head_max = c->pool->cfg.max_head;
	c->rp->body_max = c->rq.max_body ? c->rq.max_body : c->pool->cfg.max_body;
	if (c->rp->body_max == UINT64_MAX)
		c->rp->body_max = 0;
	http_resp_reset(c->rp, c->head_req);
}

static int hc_connect(struct hc_pool *p, struct hc_conn *k)
{
	int err;

	/* a literal through the default transport (a TLS pool's: verified
	 * as the certificate's IP address); a pool with its own
	 * connect_name gets it as a name */
	if (p->literal && p->cfg.connect_name == vireo_tcp_connect_name && p->cfg.tls)
		err = vireo_tls_connect(p->tcp, &p->addr, p->host, k, &k->tcp);
	else if (p->literal && p->cfg.connect_name == vireo_tcp_connect_name)
		err = vireo_tcp_connect(p->tcp, &p->addr, k, &k->tcp);
	else
		err = p->cfg.connect_name(p->tcp, p->host, p->cfg.port, k, &k->tcp);
	if (!err) {
		k->state = HC_CONNECTING;
		p->st.connections++;
	}
	return err;
}

/* Puts c on a connection: an idle one (unless it must be fresh), else a
 * new one, else it waits. 0, or -ENOSPC/-ENOMEM (no connection now:
 * waiting), or a connect's error. */
static int hc_place(struct hc_call *c)
{
	struct hc_pool *p = c->pool;
	struct hc_conn *idle = NULL, *free = NULL;
	int err;

	for (u32 i = 0; i < p->cfg.max_conns; i++) {
		struct hc_conn *k = &p->conns[i];

		if (k->state == HC_IDLE && !idle)
			idle = k;
		else if (k->state == HC_FREE && !free)
			free = k;
	}
	if (idle && !c->fresh) {
		idle->state = HC_BUSY;
		p->st.idle--;
		p->st.reused++;
		c->reused = true;
		hc_attach(c, idle);
		hc_send(c);
		return 0;
	}
	if (!free && idle) {
		/* a retry wants a fresh connection: make room */
		idle->state = HC_CLOSING;
		p->st.idle--;
		vireo_tcp_close(idle->tcp);
		return -ENOSPC;
	}
	if (!free)
		return -ENOSPC;
	c->reused = false;
	hc_attach(c, free);
	err = hc_connect(p, free);
	if (err) {
		free->call = NULL;
		c->conn = NULL;
	}
	return err;
}

static void hc_wait(struct hc_call *c, bool front)
{
	struct hc_pool *p = c->pool;

	c->waiting = true;
	p->nwait++;
	if (front) {
		c->next = p->wait_head;
		p->wait_head = c;
		if (!p->wait_tail)
			p->wait_tail = c;
	} else {
		c->next = NULL;
		if (p->wait_tail)
			p->wait_tail->next = c;
		else
			p->wait_head = c;
		p->wait_tail = c;
	}
}

/* Starts waiting calls while connections allow. */
static void hc_pump(struct hc_pool *p)
{
	while (p->wait_head && !hc_stopping) {
		struct hc_call *c = p->wait_head;
		int err;

		hc_unwait(c);
		err = hc_place(c);
		if (err == -ENOSPC || err == -ENOMEM) {
			hc_wait(c, true);
			return;
		}
		if (err)
			hc_done(c, VIREO_HTTP_ECONNECT);
	}
}

/* A call's start, cancel or retry, from the loop. */
static void hc_call_work(void *arg)
{
	struct hc_call *c = arg;
	int err;

	if (c->cancelled) {
		struct hc_conn *k = c->conn;

		if (k)
			hc_fail_conn(k, VIREO_HTTP_EABORTED);
		else
			hc_done(c, VIREO_HTTP_EABORTED);
		return;
	}
	if (c->up_eof && c->end_req) {
		hc_done(c, 0);	/* a tunnel closed both ways: its connection closes */
		return;
	}
	if (c->started)
		return;
	c->started = true;
	if (c->pool->wait_head) {
		hc_wait(c, false);	/* behind those already waiting */
		hc_pump(c->pool);
		return;
	}
	err = hc_place(c);
	if (err == -ENOSPC || err == -ENOMEM)
		hc_wait(c, false);
	else if (err)
		hc_done(c, VIREO_HTTP_ECONNECT);
}

/* Writes what fits of the request; once the whole of it (and a streamed
 * body) is out, the head's deadline starts. */
static void hc_send(struct hc_call *c)
{
	struct hc_conn *k = c->conn;

	while (c->sent < c->req_len) {
		int n = vireo_tcp_send(k->tcp, c->req + c->sent, c->req_len - c->sent);

		if (n <= 0)
			return;	/* on_writable, or the connection's end, follows */
		c->sent += (size_t)n;
	}
	if (c->stream_left) {
		if (c->rq.on_writable)
			c->rq.on_writable((vireo_http_call){ c->id }, c->rq.ctx);
		return;
	}
	if (!c->head_armed) {
		c->head_armed = true;
		c->t_head = vireo_now_ms();
	}
}

/* The response is whole: c ends well, k is kept alive or closed. */
static void hc_complete(struct hc_call *c, struct hc_conn *k, bool keep)
{
	hc_done(c, 0);
	hc_conn_release(k, keep);
	hc_pump(k->pool);
}

static void hc_conn_release(struct hc_conn *k, bool keep)
{
	struct hc_pool *p = k->pool;
	u32 idle = 0;

	if (k->state != HC_BUSY)
		return;
	for (u32 i = 0; i < p->cfg.max_conns; i++)
		idle += p->conns[i].state == HC_IDLE;
	if (keep && idle < p->cfg.max_idle) {
		k->state = HC_IDLE;
		k->t_idle = vireo_now_ms();
		p->st.idle++;
		return;
	}
	k->state = HC_CLOSING;
	vireo_tcp_close(k->tcp);
}

/* The connection ended (EOF or reset) with c on it and no whole response:
 * sent again once on a fresh connection if that is safe, else closed. */
static void hc_lost(struct hc_call *c)
{
	if (c->reused && !c->got_byte && c->idempotent && !c->rq.body_stream && !c->retried && !hc_stopping) {
		c->conn->call = NULL;
		c->conn = NULL;
		c->retried = true;
		c->fresh = true;
		c->pool->st.retries++;
		hc_wait(c, true);
		return;	/* the pump runs once the slot is free */
	}
	hc_done(c, VIREO_HTTP_ECLOSED);
}

/* ---- the connection's callbacks ---- */

static void hc_on_connected(vireo_tcp t, void *arg)
{
	struct hc_conn *k = vireo_tcp_ctx(t);

	(void)arg;
	k->state = HC_BUSY;
	if (k->call)
		hc_send(k->call);
	else
		hc_conn_release(k, true);	/* its call was cancelled meanwhile */
}

static void hc_on_fail(vireo_tcp t, enum vireo_tcp_fail why, void *arg)
{
	struct hc_conn *k = vireo_tcp_ctx(t);
	struct hc_pool *p = k->pool;

	(void)arg;
	k->state = HC_FREE;
	if (k->call) {
		k->call->why = (u8)why;	/* vireo_http_connect_why() */
		hc_done(k->call, why == VIREO_TCP_FAIL_TIMEOUT ? VIREO_HTTP_ETIMEOUT :
				 k->call->cancelled ? VIREO_HTTP_EABORTED : VIREO_HTTP_ECONNECT);
	}
	hc_pump(p);
}

static size_t hc_on_recv(vireo_tcp t, const void *data, size_t len, void *arg)
{
	struct hc_conn *k = vireo_tcp_ctx(t);
	struct hc_call *c = k->call;
	const u8 *d = data;
	size_t off = 0, used, avail;
	int r;

	(void)arg;
	if (!c || c->cancelled || k->state != HC_BUSY) {
		if (k->state == HC_IDLE) {	/* bytes nobody asked for: the stream is lost */
			k->pool->st.idle--;
			k->state = HC_CLOSING;
			vireo_tcp_abort(t);
		}
		return len;
	}
	c->got_byte = true;
	c->paused = false;	/* offered again: taken, or held anew below */
	c->t_last = vireo_now_ms();
	if (!c->head_done) {
		r = http_resp_head(c->rp, d, len, &used);
		off = used;
		if (r == HTTP_RESP_MORE)
			return len;
		if (r == HTTP_RESP_ERROR) {
			hc_fail_conn(k, c->rp->err == HTTP_RESP_ETOO_LARGE ? VIREO_HTTP_ETOO_LARGE : VIREO_HTTP_EFRAMING);
			return len;
		}
		c->head_done = true;
		if (c->rq.on_head) {
			struct vireo_http_response resp = {
				.status = c->rp->status,
				.version_minor = c->rp->version_minor,
				.chunked = c->rp->body == HTTP_BODY_CHUNKED,
				.has_length = c->rp->body == HTTP_BODY_LENGTH,
				.content_length = c->rp->content_length,
			};

			c->rq.on_head((vireo_http_call){ c->id }, &resp, c->rq.ctx);
			if (k->call != c || c->cancelled)
				return len;
		}
	}
	for (;;) {
		size_t took;

		r = http_resp_body(c->rp, d + off, len - off, &used, &avail);
		off += used;
		if (r == HTTP_RESP_MORE)
			return len;
		if (r == HTTP_RESP_END) {
			/* bytes after the response: the upstream's error; a request
			 * not sent whole (an early answer): neither is kept */
			hc_complete(c, k, c->rp->keep_alive && off == len && c->sent == c->req_len && !c->stream_left);
			return len;
		}
		if (r == HTTP_RESP_ERROR) {
			hc_fail_conn(k, c->rp->err == HTTP_RESP_ETOO_LARGE ? VIREO_HTTP_ETOO_LARGE : VIREO_HTTP_EFRAMING);
			return len;
		}
		took = c->rq.on_body ? c->rq.on_body((vireo_http_call){ c->id }, d + off, avail, c->rq.ctx) : avail;
		if (k->call != c || c->cancelled)
			return len;
		if (took > avail)
			took = avail;
		http_resp_take(c->rp, took);
		off += took;
		if (took < avail) {
			c->paused = true;	/* held: vireo_http_resume() */
			return off;
		}
	}
}

static void hc_on_eof(vireo_tcp t, void *arg)
{
	struct hc_conn *k = vireo_tcp_ctx(t);
	struct hc_call *c = k->call;

	(void)arg;
	if (c && !c->cancelled && c->tunnel && c->rq.on_eof && !c->end_req && k->state == HC_BUSY) {
		/* the upstream half-closed a tunnel: ours stays open for the
		 * app's bytes until vireo_http_tunnel_close() */
		c->up_eof = true;
		c->rq.on_eof((vireo_http_call){ c->id }, c->rq.ctx);
		return;
	}
	if (k->state == HC_IDLE)
		k->pool->st.idle--;
	if (k->state == HC_BUSY || k->state == HC_IDLE) {
		k->state = HC_CLOSING;
		vireo_tcp_close(t);
	}
	if (!c || c->cancelled)
		return;
	/* on_eof comes once every byte before the FIN was taken */
	if (c->head_done && http_resp_eof(c->rp) == HTTP_RESP_END) {
		hc_done(c, 0);	/* close-delimited */
		return;
	}
	hc_lost(c);
}

static void hc_on_close(vireo_tcp t, void *arg)
{
	struct hc_conn *k = vireo_tcp_ctx(t);
	struct hc_pool *p = k->pool;
	struct hc_call *c = k->call;

	(void)arg;
	if (k->state == HC_IDLE)
		p->st.idle--;
	k->state = HC_FREE;
	if (c) {
		if (c->cancelled)
			hc_done(c, VIREO_HTTP_EABORTED);
		else if (c->head_done && c->rp->body == HTTP_BODY_CLOSE && http_resp_eof(c->rp) == HTTP_RESP_END)
			hc_done(c, 0);
		else
			hc_lost(c);
	}
	hc_pump(p);
}

static void hc_on_writable(vireo_tcp t, void *arg)
{
	struct hc_conn *k = vireo_tcp_ctx(t);

	(void)arg;
	if (k->call && k->state == HC_BUSY && !k->call->cancelled)
		hc_send(k->call);
}

/* Deadlines: the head's, the body's between bytes, idle connections'. */
static void hc_tick_fn(struct vireo_timer *t, void *arg)
{
	u64 now = vireo_now_ms();

	(void)arg;
	for (u32 i = 0; i < hc_npools; i++) {
		struct hc_pool *p = hc_pools[i];

		for (u32 j = 0; j < p->cfg.max_conns; j++) {
			struct hc_conn *k = &p->conns[j];
			struct hc_call *c = k->call;

			if (k->state == HC_IDLE && now - k->t_idle >= p->cfg.idle_timeout_ms) {
				p->st.idle--;
				k->state = HC_CLOSING;
				vireo_tcp_close(k->tcp);
			} else if (k->state == HC_BUSY && c && !c->cancelled &&
				   ((!c->head_done && c->head_armed && now - c->t_head >= p->cfg.head_timeout_ms) ||
				    (c->head_done && !c->paused && now - c->t_last >= p->cfg.body_timeout_ms))) {
				hc_fail_conn(k, VIREO_HTTP_ETIMEOUT);
			}
		}
	}
	vireo_timer_start(t, HC_TICK_MS);
}

/* Power off (api_services_stop(), after the TCP clients' own stop, which
 * aborts every connection: their calls end there): the calls left end
 * with VIREO_HTTP_EABORTED and the pools go. */
static void hc_stop(void)
{
	hc_stopping = true;
	if (hc_prev_stop)
		hc_prev_stop();
	for (u32 i = 0; i < VIREO_HTTP_CALLS_MAX; i++)
		if (hc_calls[i])
			hc_done(hc_calls[i], VIREO_HTTP_EABORTED);
	vireo_timer_stop(&hc_tick);
	for (u32 i = 0; i < hc_npools; i++) {
		kfree(hc_pools[i]);
		hc_pools[i] = NULL;
	}
	hc_npools = 0;
	hc_prev_stop = NULL;
	hc_prev_metrics = NULL;
	hc_stopping = false;
}

/* ---- the API ---- */

int vireo_http_pool_new(const struct vireo_http_pool_cfg *cfg, vireo_http_pool *out)
{
	struct hc_pool *p;
	ip_addr_t ip;
	size_t hl;
	int err;

	if (out)
		out->id = 0;
	if (!cfg || !out || !cfg->host || !cfg->port || !api_name_ok(cfg->name, 31, false) ||
	    (hl = __builtin_strlen(cfg->host)) == 0 || hl > 253 || cfg->max_conns > VIREO_TCP_OUT_MAX ||
	    cfg->max_waiting > VIREO_HTTP_CALLS_MAX || cfg->max_head > VIREO_HTTP_HEAD_MAX ||
	    (cfg->host_header && __builtin_strlen(cfg->host_header) > 253)) {
		api_misuse("vireo_http_pool_new %.32s: needs a name of 1..31 [a-z0-9_-], a host, a port, "
			   "max_conns <= %u, max_waiting <= %u, max_head <= %u: refused",
			   cfg && cfg->name ? cfg->name : "(null)", VIREO_TCP_OUT_MAX, VIREO_HTTP_CALLS_MAX,
			   VIREO_HTTP_HEAD_MAX);
		return -EINVAL;
	}
	if (hc_npools == VIREO_HTTP_POOLS_MAX) {
		api_misuse("vireo_http_pool_new %s: %u pools already: refused", cfg->name, VIREO_HTTP_POOLS_MAX);
		return -ENOSPC;
	}
	p = kzalloc(sizeof *p);
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	/* lengths checked above: name <= 31, host <= 253, host_header <= 253 */
	__builtin_memcpy(p->name, cfg->name, __builtin_strlen(cfg->name) + 1);
	__builtin_memcpy(p->host, cfg->host, hl + 1);
	p->cfg.name = p->name;
	p->cfg.host = p->host;
	p->literal = ipaddr_aton(p->host, &ip);
	if (p->literal)
		api_addr_of(&ip, cfg->port, &p->addr);
	if (cfg->host_header)
		__builtin_memcpy(p->host_hdr, cfg->host_header, __builtin_strlen(cfg->host_header) + 1);
	else if (cfg->port == (cfg->tls ? 443 : 80))
		ksnprintf(p->host_hdr, sizeof p->host_hdr, p->literal && IP_IS_V6(&ip) ? "[%s]" : "%s", p->host);
	else
		ksnprintf(p->host_hdr, sizeof p->host_hdr, p->literal && IP_IS_V6(&ip) ? "[%s]:%u" : "%s:%u", p->host,
			  cfg->port);
	for (const char *s = p->host_hdr; *s; s++)
		if ((u8)*s <= 0x20 || *s == 0x7f) {
			api_misuse("vireo_http_pool_new %s: a Host with a space or control byte: refused", cfg->name);
			kfree(p);
			return -EINVAL;
		}
	p->cfg.host_header = p->host_hdr;
	if (!p->cfg.max_conns)
		p->cfg.max_conns = VIREO_TCP_OUT_DEFAULT;
	if (!p->cfg.max_idle)
		p->cfg.max_idle = VIREO_HTTP_IDLE_DEFAULT;
	if (p->cfg.max_idle > p->cfg.max_conns)
		p->cfg.max_idle = p->cfg.max_conns;
	if (!p->cfg.max_waiting)
		p->cfg.max_waiting = VIREO_HTTP_WAITING_DEFAULT;
	if (!p->cfg.head_timeout_ms)
		p->cfg.head_timeout_ms = VIREO_HTTP_HEAD_MS_DEFAULT;
	if (!p->cfg.body_timeout_ms)
		p->cfg.body_timeout_ms = VIREO_HTTP_BODY_MS_DEFAULT;
	if (!p->cfg.idle_timeout_ms)
		p->cfg.idle_timeout_ms = VIREO_HTTP_IDLE_MS_DEFAULT;
	if (!p->cfg.max_head)
		p->cfg.max_head = VIREO_HTTP_HEAD_MAX;
	if (!p->cfg.max_body)
		p->cfg.max_body = VIREO_HTTP_BODY_DEFAULT;
	if (!p->cfg.client)
		p->cfg.client = vireo_tcp_client;
	if (!p->cfg.connect_name)
		p->cfg.connect_name = vireo_tcp_connect_name;
	for (u32 i = 0; i < VIREO_TCP_OUT_MAX; i++)
		p->conns[i].pool = p;
	{
		u32 longest = p->cfg.head_timeout_ms > p->cfg.body_timeout_ms ? p->cfg.head_timeout_ms :
										    p->cfg.body_timeout_ms;

		if (longest < p->cfg.idle_timeout_ms)
			longest = p->cfg.idle_timeout_ms;
		/* the TCP client's own idle reset comes after every deadline of ours */
		err = p->cfg.client(&(struct vireo_tcp_client){
					    .name = p->name, .max_conns = p->cfg.max_conns,
					    .connect_timeout_ms = cfg->connect_timeout_ms,
					    .idle_timeout_ms = longest + 2 * HC_TICK_MS,
					    .on_connected = hc_on_connected, .on_fail = hc_on_fail, .on_recv = hc_on_recv,
					    .on_eof = hc_on_eof, .on_writable = hc_on_writable, .on_close = hc_on_close,
					    .arg = p, .bulk = true, .tls = p->cfg.tls, .alpn = p->cfg.alpn },
				    &p->tcp);
	}
	if (err) {
		kfree(p);
		return err;
	}
	if (!hc_npools) {
		vireo_timer_init(&hc_tick, hc_tick_fn, NULL);
		vireo_timer_start(&hc_tick, HC_TICK_MS);
	}
	if (svc_out_metrics != hc_write_metrics) {
		hc_prev_metrics = svc_out_metrics;	/* the TCP clients' (set by the client above) */
		svc_out_metrics = hc_write_metrics;
	}
	if (svc_out_stop != hc_stop) {
		hc_prev_stop = svc_out_stop;
		svc_out_stop = hc_stop;
	}
	hc_pools[hc_npools++] = p;
	out->id = hc_npools;
	return 0;
}

static struct hc_pool *hc_pool_of(vireo_http_pool h)
{
	return h.id && h.id <= hc_npools ? hc_pools[h.id - 1] : NULL;
}

int vireo_http_pool_stats(vireo_http_pool h, struct vireo_http_stats *st)
{
	struct hc_pool *p = hc_pool_of(h);

	if (!p || !st)
		return -EINVAL;
	*st = p->st;
	return 0;
}

/* "Name: value\r\n" lines, none of them ours. */
static bool hc_headers_ok(const char *s)
{
	while (*s) {
		size_t n = 0;

		while (http_is_tchar((u8)s[n]))
			n++;
		if (!n || s[n] != ':' || http_eq_nocase(s, n, "host") || http_eq_nocase(s, n, "content-length") ||
		    http_eq_nocase(s, n, "transfer-encoding"))
			return false;
		s += n + 1;
		while (http_is_field_byte((u8)*s))
			s++;
		if (s[0] != '\r' || s[1] != '\n')
			return false;
		s += 2;
	}
	return true;
}

static bool hc_method_is(const char *m, size_t n, const char *lit)
{
	return __builtin_strlen(lit) == n && __builtin_memcmp(m, lit, n) == 0;
}

int vireo_http_request(vireo_http_pool ph, const struct vireo_http_request *rq, vireo_http_call *out)
{
	struct hc_pool *p = hc_pool_of(ph);
	struct hc_call *c;
	size_t ml = 0, tl = 0, hl, need, hh = 0;
	const char *host;
	u64 blen;
	u32 slot;
	bool with_len;
	int n;

	if (out)
		out->id = 0;
	if (rq && rq->method)
		while (ml <= 16 && http_is_tchar((u8)rq->method[ml]))
			ml++;
	if (rq && rq->target && rq->target[0] == '/')
		while (tl <= VIREO_HTTP_REQ_MAX && (u8)rq->target[tl] > 0x20 && (u8)rq->target[tl] < 0x7f)
			tl++;
	if (rq && rq->host)
		while (hh <= 253 && (u8)rq->host[hh] > 0x20 && (u8)rq->host[hh] < 0x7f)
			hh++;
	if (!p || !rq || !out || !rq->on_done || !ml || ml > 16 || rq->method[ml] || !tl || rq->target[tl] ||
	    (rq->headers && !hc_headers_ok(rq->headers)) || (rq->body_len && !rq->body && !rq->body_stream) ||
	    (rq->host && (!hh || hh > 253 || rq->host[hh]))) {
		api_misuse("vireo_http_request: a bad pool, method, target (origin-form), host or header lines, or "
			   "no on_done: refused");
		return -EINVAL;
	}
	blen = rq->body_len;
	with_len = blen || rq->body_stream || hc_method_is(rq->method, ml, "POST") ||
		   hc_method_is(rq->method, ml, "PUT") || hc_method_is(rq->method, ml, "PATCH");
	host = rq->host ? rq->host : p->host_hdr;
	hl = rq->headers ? __builtin_strlen(rq->headers) : 0;
	need = ml + 1 + tl + 17 + 8 + __builtin_strlen(host) + hl + 40 + (rq->body_stream ? 0 : rq->body_len);
	if (need > VIREO_HTTP_REQ_MAX)
		return -E2BIG;
	if (p->nwait >= p->cfg.max_waiting) {
		p->st.failed[VIREO_HTTP_ECONNECT - 1]++;
		return -ENOSPC;
	}
	for (slot = 0; slot < VIREO_HTTP_CALLS_MAX && hc_calls[slot]; slot++)
		;
	if (slot == VIREO_HTTP_CALLS_MAX)
		return -ENOSPC;
	c = kzalloc(sizeof *c);
	if (c) {
		c->req = kmalloc(need);
		c->rp = kmalloc(sizeof *c->rp);
	}
	if (!c || !c->req || !c->rp) {
		if (c) {
			kfree(c->req);
			kfree(c->rp);
		}
		kfree(c);
		return -ENOMEM;
	}
	n = ksnprintf((char *)c->req, need, "%s %s HTTP/1.1\r\nHost: %s\r\n%s", rq->method, rq->target, host,
		      rq->headers ? rq->headers : "");
	if (with_len)
		n += ksnprintf((char *)c->req + n, need - (size_t)n,
			       blen == HC_CHUNKED ? "Transfer-Encoding: chunked\r\n" : "Content-Length: %llu\r\n",
			       (unsigned long long)blen);
	n += ksnprintf((char *)c->req + n, need - (size_t)n, "\r\n");
	c->req_len = (size_t)n;
	if (!rq->body_stream && rq->body_len) {
		__builtin_memcpy(c->req + c->req_len, rq->body, rq->body_len);
		c->req_len += rq->body_len;
	}
	c->stream_left = rq->body_stream ? blen : 0;
	c->rq = *rq;
	c->rq.method = c->rq.target = c->rq.headers = c->rq.host = NULL;
	c->rq.body = NULL;
	c->pool = p;
	c->head_req = hc_method_is(rq->method, ml, "HEAD");
	c->idempotent = c->head_req || hc_method_is(rq->method, ml, "GET") || hc_method_is(rq->method, ml, "PUT") ||
			hc_method_is(rq->method, ml, "DELETE") || hc_method_is(rq->method, ml, "OPTIONS") ||
			hc_method_is(rq->method, ml, "TRACE");
	if (!++hc_gen[slot])
		hc_gen[slot] = 1;
	c->id = (u32)hc_gen[slot] << 8 | (slot + 1);
	hc_calls[slot] = c;
	work_init(&c->work, hc_call_work, c);
	work_queue(&c->work);
	p->st.requests++;
	out->id = c->id;
	return 0;
}

const char *vireo_http_header(vireo_http_call h, const char *name)
{
	struct hc_call *c = hc_call_of(h);

	return c && c->conn && c->head_done && name ? http_resp_header(c->rp, name) : NULL;
}

int vireo_http_field(vireo_http_call h, unsigned i, const char **name, size_t *name_len, const char **value)
{
	struct hc_call *c = hc_call_of(h);
	const struct http_field *f;

	if (!c || !c->conn || !c->head_done || i >= c->rp->nfields || !name || !name_len || !value)
		return -ENOENT;
	f = &c->rp->fields[i];
	*name = c->rp->buf + f->name;
	*name_len = f->name_len;
	*value = c->rp->buf + f->value;
	return 0;
}

int vireo_http_resume(vireo_http_call h)
{
	struct hc_call *c = hc_call_of(h);

	if (!c)
		return -EINVAL;
	if (c->paused && c->conn) {
		c->paused = false;
		c->t_last = vireo_now_ms();
		vireo_tcp_recv_again(c->conn->tcp);
	}
	return 0;
}

/* A chunked body's framing held: out first. 1 when all of it is out, 0 when
 * the connection took less (on_writable follows), -EAGAIN when it is
 * ending. */
static int hc_chunk_flush(struct hc_call *c)
{
	while (c->fr_off < c->fr_len) {
		int n = vireo_tcp_send(c->conn->tcp, c->fr + c->fr_off, c->fr_len - c->fr_off);

		if (n < 0)
			return -EAGAIN;
		if (!n)
			return 0;
		c->fr_off += (u8)n;
	}
	return 1;
}

static void hc_chunk_frame(struct hc_call *c, const char *s, size_t n)
{
	__builtin_memcpy(c->fr, s, n);
	c->fr_off = 0;
	c->fr_len = (u8)n;
}

/* A chunked body's bytes: a chunk is declared for what is offered (at most
 * HC_CHUNK_MAX); the bytes the connection did not take are the first of
 * the next offer (the app offers the rest again), which fill the chunk
 * before a new one starts. */
static int hc_chunk_write(struct hc_call *c, const u8 *data, size_t len)
{
	size_t total = 0;
	char line[12];
	int r, n;

	while (len) {
		r = hc_chunk_flush(c);
		if (r <= 0)
			return r < 0 && !total ? r : (int)total;
		if (!c->chunk_left) {
			c->chunk_left = MIN(len, (size_t)HC_CHUNK_MAX);
			hc_chunk_frame(c, line, (size_t)ksnprintf(line, sizeof line, "%llx\r\n",
								  (unsigned long long)c->chunk_left));
			continue;
		}
		n = vireo_tcp_send(c->conn->tcp, data, (size_t)MIN((u64)len, c->chunk_left));
		if (n <= 0)
			return n < 0 && !total ? -EAGAIN : (int)total;
		total += (size_t)n;
		data += n;
		len -= (size_t)n;
		c->chunk_left -= (u64)n;
		if (!c->chunk_left)
			hc_chunk_frame(c, "\r\n", 2);
	}
	hc_chunk_flush(c);	/* the CRLF, if it fits now: else with the next write */
	return (int)total;
}

int vireo_http_write_end(vireo_http_call h)
{
	struct hc_call *c = hc_call_of(h);
	int r;

	if (!c || !c->rq.body_stream || c->rq.body_len != HC_CHUNKED || c->chunk_left || c->cancelled) {
		api_misuse("vireo_http_write_end: not a chunked body, or a chunk left short: refused");
		return -EINVAL;
	}
	if (c->stream_left != HC_CHUNKED)
		return 0;	/* out already */
	if (!c->conn || c->conn->state != HC_BUSY || c->sent < c->req_len)
		return -EAGAIN;
	r = hc_chunk_flush(c);
	if (r > 0 && !c->end_req) {
		c->end_req = true;
		hc_chunk_frame(c, "0\r\n\r\n", 5);	/* the last chunk, no trailers */
		r = hc_chunk_flush(c);
	}
	if (r <= 0)
		return -EAGAIN;
	c->stream_left = 0;
	c->head_armed = true;	/* the head's deadline from the body's end */
	c->t_head = vireo_now_ms();
	return 0;
}

int vireo_http_write(vireo_http_call h, const void *data, size_t len)
{
	struct hc_call *c = hc_call_of(h);
	int n;

	if (!c || (!c->rq.body_stream && !c->tunnel) || len > c->stream_left || c->cancelled || c->end_req)
		return -EINVAL;
	if (!c->conn || c->conn->state != HC_BUSY || c->sent < c->req_len)
		return -EAGAIN;
	if (c->rq.body_stream && c->rq.body_len == HC_CHUNKED)
		return hc_chunk_write(c, data, len);
	n = vireo_tcp_send(c->conn->tcp, data, len);
	if (n < 0)
		return -EAGAIN;	/* the connection is ending: on_done follows */
	if (c->tunnel) {
		if (n)
			c->t_last = vireo_now_ms();	/* the idle bound counts both ways */
		return n;
	}
	c->stream_left -= (u64)n;
	if (!c->stream_left && !c->head_armed) {
		c->head_armed = true;
		c->t_head = vireo_now_ms();
	}
	return n;
}

enum vireo_tcp_fail vireo_http_connect_why(vireo_http_call h)
{
	return h.id && h.id == hc_done_id ? (enum vireo_tcp_fail)hc_done_why : 0;
}

int vireo_http_tunnel(vireo_http_call h)
{
	struct hc_call *c = hc_call_of(h);

	if (!c || !c->conn || !c->head_done || c->rp->status != 101 || c->rq.body_stream || c->tunnel) {
		api_misuse("vireo_http_tunnel: not during a 101's on_head: refused");
		return -EINVAL;
	}
	c->tunnel = true;
	http_resp_tunnel(c->rp);	/* on_body gets every byte after the head, until the FIN */
	c->stream_left = HC_CHUNKED;	/* hc_send() passes on_writable on */
	return 0;
}

int vireo_http_tunnel_close(vireo_http_call h)
{
	struct hc_call *c = hc_call_of(h);

	if (!c || !c->tunnel || !c->conn) {
		api_misuse("vireo_http_tunnel_close: not a tunnel: refused");
		return -EINVAL;
	}
	if (c->conn->state == HC_BUSY && !c->end_req) {
		/* half-close: FIN after what was written, the upstream's bytes
		 * still come to on_body; its FIN (hc_on_eof) ends the call as a
		 * close-delimited body: on_done(0) */
		c->end_req = true;	/* vireo_http_write() refused from here */
		if (c->up_eof) {
			/* closed both ways: FIN after what was written, then
			 * on_done(0) from the work item */
			c->conn->state = HC_CLOSING;
			vireo_tcp_close(c->conn->tcp);
			work_queue(&c->work);
		} else if (vireo_tcp_shutdown(c->conn->tcp) < 0) {
			c->conn->state = HC_CLOSING;
			vireo_tcp_close(c->conn->tcp);
		}
	}
	return 0;
}

int vireo_http_cancel(vireo_http_call h)
{
	struct hc_call *c = hc_call_of(h);

	if (!c)
		return -EINVAL;
	c->cancelled = true;
	work_queue(&c->work);
	return 0;
}

/* ---- the whole body in one buffer ---- */

struct hc_fetch {
	vireo_http_fetch_fn done;
	void *ctx;
	u8 *buf;
	size_t len, cap, max;
	int status;
};

static void hc_fetch_head(vireo_http_call h, const struct vireo_http_response *r, void *ctx)
{
	struct hc_fetch *f = ctx;

	(void)h;
	f->status = r->status;
}

static size_t hc_fetch_body(vireo_http_call h, const void *data, size_t len, void *ctx)
{
	struct hc_fetch *f = ctx;

	if (f->len + len > f->cap) {
		size_t cap = f->cap ? f->cap : 1024;
		u8 *b;

		while (cap < f->len + len)
			cap *= 2;
		if (cap > f->max)
			cap = f->max;
		b = kmalloc(cap);
		if (!b) {
			vireo_http_cancel(h);
			return len;
		}
		if (f->len)
			__builtin_memcpy(b, f->buf, f->len);
		kfree(f->buf);
		f->buf = b;
		f->cap = cap;
	}
	__builtin_memcpy(f->buf + f->len, data, len);	/* max_body keeps len + n <= max */
	f->len += len;
	return len;
}

static void hc_fetch_done(vireo_http_call h, int err, void *ctx)
{
	struct hc_fetch *f = ctx;

	(void)h;
	f->done(f->ctx, err, err ? 0 : f->status, f->buf, err ? 0 : f->len);
	kfree(f->buf);
	kfree(f);
}

int vireo_http_fetch(vireo_http_pool p, const struct vireo_http_request *rq, size_t max, vireo_http_fetch_fn done,
		     void *ctx)
{
	struct vireo_http_request r;
	struct hc_fetch *f;
	vireo_http_call h;
	int err;

	if (!rq || !done || !max)
		return -EINVAL;
	f = kzalloc(sizeof *f);
	if (!f)
		return -ENOMEM;
	f->done = done;
	f->ctx = ctx;
	f->max = max;
	r = *rq;
	r.body_stream = false;
	r.max_body = max;
	r.on_head = hc_fetch_head;
	r.on_body = hc_fetch_body;
	r.on_writable = NULL;
	r.on_done = hc_fetch_done;
	r.ctx = f;
	err = vireo_http_request(p, &r, &h);
	if (err)
		kfree(f);
	return err;
}
