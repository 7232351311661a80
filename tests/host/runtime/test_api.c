/* The application API (include/vireo/) against the runtime's host build:
 * the HTTP server, the route table, TCP and UDP services, timers and
 * metrics over the real lwIP core on the test wire (lwip_wire.c). Routes
 * are registered once, as an app's init would; after every test all
 * connections, handles and buffers must be gone and lwIP's pools, its heap
 * and the kernel heap shim back to where they started. */
#define _GNU_SOURCE	/* memmem */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/memp.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"
#include "lwip/priv/tcp_priv.h"
#include "runtime/api.h"
#include "runtime/egress.h"
#include "runtime/http/chunked.h"
#include "runtime/http/http.h"
#include "lib/metrics.h"
#include "runtime/http/conn.h"
#include "runtime/http/https.h"
#include "net/port/netmem.h"
#include "runtime/http/server.h"
#include "runtime/site.h"
#include "net/tcp/rxmem.h"
#include "net/port/lwip_port.h"
#include "kernel/time/time.h"
#include "kernel/boot_info.h"
#include "kernel/time/wallclock.h"
#include "tests/host/lwip/lwip_wire.h"
#include "vireo/vireo.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define HTTP_PORT 80
#define TCP_SVC_PORT 9000
#define UDP_SVC_PORT 5353
#define UDP_REFL_PORT 6000
#define V4 false
#define V6 true

/* ---- the app under test: its routes, services and metrics ---- */

VIREO_COUNTER(t_hits, "t_hits_total", "Handler calls.");
VIREO_GAUGE(t_level, "t_level", "A signed gauge.");
VIREO_HISTOGRAM(t_sizes, "t_sizes_bytes", "Body sizes.", 10, 100, 1000);
VIREO_COUNTER_VEC(t_kinds, "t_kinds_total", "By kind.", "kind", "a", "b");
VIREO_COUNTER(t_bad, "vireo_t_bad", "A name of the runtime's: refused.");
VIREO_CONFIG_UINT(t_knob, "t.knob", 7, 1, 10, "a test key");

static struct {
	unsigned calls;
	char subpath[64], raw[64], query_a[32], xhdr[32], fields[128];
	bool xhdr_null;
	vireo_req kept;		/* a deferred exchange */
	unsigned done_true, done_false;
	struct vireo_timer timer;
	/* streaming */
	size_t stream_total, stream_sent;
	size_t stream_chunk;	/* bytes a vireo_resp_write(): 3000 if 0 */
	int first_write;	/* what the first one took */
	unsigned writable_calls, short_writes;
	bool chunk_unknown;
	/* TCP service */
	unsigned accepts, closes, eofs;
	bool tcp_hold;		/* on_recv consumes nothing */
	vireo_tcp last_tcp;
	/* UDP */
	unsigned udp_in;
	struct vireo_addr udp_src;
	vireo_udp udp;
} t;

static void t_on_done(vireo_req r, bool done, void *arg)
{
	(void)r;
	(void)arg;
	if (done)
		t.done_true++;
	else
		t.done_false++;
}

static void h_exact(vireo_req r, void *arg)
{
	char buf[64];
	int n;
	const char *x;

	t.calls++;
	vireo_counter_inc(&t_hits);
	vireo_req_on_done(r, t_on_done, NULL);
	if (vireo_req_query_param(r, "a", t.query_a, sizeof t.query_a) < 0)
		t.query_a[0] = '\0';
	x = vireo_req_header(r, "X-Test");
	t.xhdr_null = x == NULL;
	{
		/* every field in order, repeated ones each (vireo_req_field) */
		const char *name, *value;
		size_t nl, w = 0;
		unsigned i;

		for (i = 0; vireo_req_field(r, i, &name, &nl, &value) == 0; i++)
			w += (size_t)snprintf(t.fields + w, sizeof t.fields - w, "%.*s=%s;", (int)nl, name, value);
		assert_int_equal(vireo_req_field(r, i, &name, &nl, &value), -ENOENT);
		assert_int_equal(vireo_req_field(r, 0, NULL, &nl, &value), -ENOENT);
	}
	snprintf(t.xhdr, sizeof t.xhdr, "%s", x ? x : "");
	n = snprintf(buf, sizeof buf, "exact %s\n", vireo_req_method(r) == VIREO_HEAD ? "head" : "get");
	assert_int_equal(vireo_resp_header(r, "X-App", "yes"), 0);
	/* The runtime's own fields, in any case, and names that are not
	 * tokens are refused; a longer name that starts like one is not. */
	assert_int_equal(vireo_resp_header(r, "Content-Length", "5"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "TRANSFER-ENCODING", "x"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "date", "x"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "Server", "x"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "Bad Name", "x"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "X:Colon", "x"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "", "x"), -EINVAL);
	assert_int_equal(vireo_resp_header(r, "Connection-Id", "7"), 0);
	/* A content type with CR, LF or another control byte is refused like
	 * a header value: nothing is sent. */
	assert_int_equal(vireo_resp_send(r, 200, "text/plain\r\nX-Injected: 1", buf, (size_t)n), -EINVAL);
	assert_int_equal(vireo_resp_send_static(r, 200, "text/plain\nX-Injected: 1", buf, (size_t)n), -EINVAL);
	assert_int_equal(vireo_resp_start(r, 200, "text/\x7fplain", (u64)n), -EINVAL);
	assert_int_equal(vireo_resp_send(r, 200, "text/plain", buf, (size_t)n), 0);
	/* Misuse after the answer: refused, nothing breaks. */
	assert_int_equal(vireo_resp_send(r, 200, "text/plain", "x", 1), -EALREADY);
	assert_int_equal(vireo_resp_header(r, "X-Late", "1"), -EALREADY);
}

/* /t/abort: "partial" then vireo_resp_abort(): chunked (arg NULL) or
 * with a declared length of 100. */
static void h_abort(vireo_req r, void *arg)
{
	vireo_req_on_done(r, t_on_done, NULL);
	assert_int_equal(vireo_resp_abort(r), -EINVAL);	/* not started */
	assert_int_equal(vireo_resp_start(r, 200, "text/plain", arg ? 100 : VIREO_LENGTH_UNKNOWN), 0);
	assert_int_equal(vireo_resp_write(r, "partial", 7), 7);
	assert_int_equal(vireo_resp_abort(r), 0);
	assert_int_equal(vireo_resp_write(r, "more", 4), -EINVAL);	/* ended */
	assert_int_equal(vireo_resp_end(r), -EINVAL);
	assert_int_equal(vireo_resp_abort(r), -EINVAL);
}

static void h_prefix(vireo_req r, void *arg)
{
	snprintf(t.subpath, sizeof t.subpath, "%s", vireo_req_subpath(r));
	snprintf(t.raw, sizeof t.raw, "%s", vireo_req_raw_path(r) ? vireo_req_raw_path(r) : "(null)");
	vireo_resp_send(r, 200, "text/plain", (const char *)arg, strlen(arg));
}

static void h_body(vireo_req r, void *arg)
{
	size_t len;
	const void *b = vireo_req_body(r, &len);

	vireo_histogram_observe(&t_sizes, len);
	vireo_resp_send(r, 201, "application/octet-stream", b, len);
}

/* A streamed body (on_body): counted and hashed; takes at most take_max
 * bytes a call (0: all), none while hold; answers at the end "n hash". */
static struct {
	u64 n, calls, ends, biggest;
	u32 hash;
	size_t take_max;
	bool hold;
	vireo_req r;
} sink;

static void h_sink(vireo_req r, void *arg)
{
	sink.n = sink.calls = sink.biggest = 0;
	sink.hash = 2166136261u;
	sink.r = r;
	assert_null(vireo_req_body(r, &(size_t){ 0 }));
}

static size_t sink_body(vireo_req r, const void *data, size_t len, void *arg)
{
	const u8 *d = data;
	size_t take = sink.hold ? 0 : sink.take_max ? MIN(len, sink.take_max) : len;

	assert_int_equal(r.id, sink.r.id);
	sink.calls++;
	sink.biggest = MAX(sink.biggest, (u64)len);
	for (size_t i = 0; i < take; i++)
		sink.hash = (sink.hash ^ d[i]) * 16777619u;
	sink.n += take;
	return take;
}

static void sink_end(vireo_req r, void *arg)
{
	char out[64];
	int n = snprintf(out, sizeof out, "%llu %08x", (unsigned long long)sink.n, sink.hash);

	sink.ends++;
	vireo_resp_send(r, 200, "text/plain", out, (size_t)n);
}

/* A baked file (the subpath names it): by vireo_resp_send_file() (arg
 * NULL), or the long way it stands for (arg not NULL). ?h=V adds X-Before
 * first; ?lie=1 changes the copy's fields before sending. */
static void h_file(vireo_req r, void *arg)
{
	char path[128], q[16];
	struct vireo_file f;
	int nm;

	snprintf(path, sizeof path, "/%s", vireo_req_subpath(r));
	if (!vireo_file_find(path, &f)) {
		vireo_resp_error(r, 404);
		return;
	}
	if (vireo_req_query_param(r, "h", q, sizeof q) > 0)
		assert_int_equal(vireo_resp_header(r, "X-Before", q), 0);
	if (!arg) {
		if (vireo_req_query_param(r, "lie", q, sizeof q) > 0) {
			f.data = (const u8 *)"x";
			f.len = 1;
			f.etag = "\"lie\"";
			f.content_type = "text/lie";
		}
		assert_int_equal(vireo_resp_send_file(r, &f), 0);
		assert_int_equal(vireo_resp_send_file(r, &f), -EALREADY);
		return;
	}
	assert_int_equal(vireo_resp_header(r, "ETag", f.etag), 0);
	vireo_resp_last_modified(r, f.mtime);
	nm = vireo_req_not_modified(r, f.etag, f.mtime);
	if (!nm)	/* a 200 of vireo_resp_send_file() says ranges are served */
		assert_int_equal(vireo_resp_header(r, "Accept-Ranges", "bytes"), 0);
	assert_int_equal(vireo_resp_send_static(r, nm ? 304 : 200, f.content_type, f.data, f.len), 0);
}

/* vireo_resp_send_file() misused: each refused and logged, then a real
 * answer. */
static void h_file_misuse(vireo_req r, void *arg)
{
	struct vireo_file f, forged;

	assert_true(vireo_file_find("/index.html", &f));
	assert_int_equal(vireo_resp_send_file(r, NULL), -EINVAL);
	forged = f;
	forged.priv = &forged;			/* not the runtime's entry */
	assert_int_equal(vireo_resp_send_file(r, &forged), -EINVAL);
	forged.priv = (const char *)f.priv + 8;	/* inside one, not at its start */
	assert_int_equal(vireo_resp_send_file(r, &forged), -EINVAL);
	forged.priv = NULL;
	assert_int_equal(vireo_resp_send_file(r, &forged), -EINVAL);
	assert_int_equal(vireo_resp_send_file(r, &f), 0);
}

static void t_timer_fire(struct vireo_timer *tm, void *arg)
{
	(void)tm;
	(void)arg;
	assert_int_equal(vireo_resp_send(t.kept, 200, "text/plain", "later\n", 6), 0);
}

static void h_later(vireo_req r, void *arg)
{
	t.kept = r;
	vireo_req_on_done(r, t_on_done, NULL);
	vireo_timer_init(&t.timer, t_timer_fire, NULL);
	assert_int_equal(vireo_timer_start(&t.timer, 200), 0);
}

static void h_never(vireo_req r, void *arg)
{
	t.kept = r;
	vireo_req_on_done(r, t_on_done, NULL);
}

static u8 stream_byte(size_t i)
{
	return (u8)(i * 7 + (i >> 8));
}

static void stream_fill(vireo_req r, void *arg)
{
	t.writable_calls++;
	while (t.stream_sent < t.stream_total) {
		static u8 chunk[65536];
		size_t n = MIN(t.stream_chunk ? t.stream_chunk : 3000, t.stream_total - t.stream_sent), i;
		int w;

		for (i = 0; i < n; i++)
			chunk[i] = stream_byte(t.stream_sent + i);
		w = vireo_resp_write(r, chunk, n);
		assert_true(w >= 0);
		if (!t.stream_sent)
			t.first_write = w;
		t.stream_sent += (size_t)w;
		if ((size_t)w < n) {
			t.short_writes++;
			return;	/* on_writable comes back */
		}
	}
	assert_int_equal(vireo_resp_end(r), 0);
	assert_int_equal(vireo_resp_write(r, "x", 1), -EINVAL);	/* after the end */
}

/* /t/headlen: a stream that declares 100 bytes and ends with none: whole
 * for HEAD (no body goes out), short (closed) for GET. */
static void h_headlen(vireo_req r, void *arg)
{
	(void)arg;
	assert_int_equal(vireo_resp_start(r, 200, "text/plain", 100), 0);
	assert_int_equal(vireo_resp_end(r), 0);
}

static void h_stream(vireo_req r, void *arg)
{
	vireo_req_on_done(r, t_on_done, NULL);
	assert_int_equal(vireo_resp_write(r, "x", 1), -EINVAL);	/* before the start */
	assert_int_equal(vireo_resp_start(r, 200, "application/octet-stream",
					  t.chunk_unknown ? VIREO_LENGTH_UNKNOWN : t.stream_total), 0);
	if (!t.chunk_unknown) {
		u8 big[16] = { 0 };

		/* More than declared: refused whole. */
		assert_int_equal(vireo_resp_write(r, big, 0), 0);
		if (t.stream_total < sizeof big)
			assert_int_equal(vireo_resp_write(r, big, sizeof big), -EINVAL);
	}
	vireo_resp_on_writable(r, stream_fill, NULL);
	stream_fill(r, NULL);
}

/* TCP service: answers each line upper-cased; "hold" makes on_recv take
 * nothing until recv_again. */
static void svc_accept_cb(vireo_tcp c, void *arg)
{
	t.accepts++;
	t.last_tcp = c;
	vireo_tcp_set_ctx(c, &t);
}

static size_t svc_recv_cb(vireo_tcp c, const void *data, size_t len, void *arg)
{
	char out[256];
	size_t i, n = MIN(len, sizeof out);

	assert_ptr_equal(vireo_tcp_ctx(c), &t);
	if (t.tcp_hold)
		return 0;
	for (i = 0; i < n; i++) {
		char ch = ((const char *)data)[i];

		out[i] = (ch >= 'a' && ch <= 'z') ? (char)(ch - 32) : ch;
	}
	if (n >= 4 && !memcmp(data, "quit", 4)) {
		vireo_tcp_close(c);
		return n;
	}
	return (size_t)vireo_tcp_send(c, out, n);
}

static void svc_eof_cb(vireo_tcp c, void *arg)
{
	t.eofs++;
	vireo_tcp_close(c);
}

static void svc_close_cb(vireo_tcp c, void *arg)
{
	t.closes++;
	assert_int_equal(vireo_tcp_send(c, "x", 1), -EPIPE);	/* stale during the call */
	assert_ptr_equal(vireo_tcp_ctx(c), &t);			/* but its context is there to free */
}

static void udp_recv_cb(vireo_udp u, const struct vireo_addr *src, const void *data, size_t len, void *arg)
{
	char out[64];
	int n;

	t.udp_in++;
	t.udp_src = *src;
	n = snprintf(out, sizeof out, "got %zu", len);
	assert_int_equal(vireo_udp_send(u, src, out, (size_t)n), 0);
}

/* Written at scrape time: a counter, a labelled gauge, and two families
 * refused (a name of the runtime's from an app not built with
 * VIREO_BUILTIN; a bad name), each left out and counted. */
static u64 t_written;
static void t_writer(struct vireo_metrics_out *o, void *arg)
{
	vireo_metrics_family(o, "t_written_total", VIREO_METRIC_COUNTER, "Scrapes seen by the writer.");
	vireo_metrics_sample(o, "t_written_total", NULL, NULL, ++t_written);
	vireo_metrics_family(o, "vireo_t_taken", VIREO_METRIC_GAUGE, "Not the app's.");
	vireo_metrics_sample(o, "vireo_t_taken", NULL, NULL, 1);
	vireo_metrics_family(o, "t_queue", VIREO_METRIC_GAUGE, "By queue.");
	vireo_metrics_sample(o, "t_queue", "q", "a\"b", 3);
	vireo_metrics_family(o, "9bad", VIREO_METRIC_COUNTER, "A bad name.");
	vireo_metrics_sample(o, "9bad", NULL, NULL, 1);
}

static int t_app_init(void)
{
	assert_int_equal(vireo_metrics_writer(t_writer, NULL), 0);
	assert_int_equal(vireo_metrics_writer(NULL, NULL), -EINVAL);
	static const char pre[] = "prefix\n", longer[] = "longer\n";

	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/exact", .methods = VIREO_GET,
								 .handler = h_exact }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/pre/", .prefix = true,
								 .methods = VIREO_GET, .handler = h_prefix,
								 .arg = (void *)pre }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/pre/long/", .prefix = true,
								 .methods = VIREO_GET, .handler = h_prefix,
								 .arg = (void *)longer }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/body", .methods = VIREO_POST | VIREO_PUT,
								 .max_body = VIREO_HTTP_BODY_MAX, .handler = h_body }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/small", .methods = VIREO_POST,
								 .max_body = 1000, .handler = h_body }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/sink", .methods = VIREO_POST | VIREO_PUT,
								 .handler = h_sink, .on_body = sink_body,
								 .on_body_end = sink_end }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/sinklim", .methods = VIREO_POST,
								 .handler = h_sink, .on_body = sink_body,
								 .on_body_end = sink_end, .body_limit = 1000 }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/bad", .methods = VIREO_POST,
								 .handler = h_sink, .on_body = sink_body,
								 .max_body = 10 }), -EINVAL);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/bad", .methods = VIREO_POST,
								 .handler = h_sink, .body_limit = 10 }), -EINVAL);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/later", .methods = VIREO_GET,
								 .handler = h_later }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/never", .methods = VIREO_GET,
								 .handler = h_never }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/stream", .methods = VIREO_GET,
								 .handler = h_stream }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/headlen", .methods = VIREO_GET,
								 .handler = h_headlen }), 0);
	vireo_http_raw_paths();
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/abort", .methods = VIREO_GET,
								 .handler = h_abort }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/abortlen", .methods = VIREO_GET,
								 .handler = h_abort, .arg = (void *)1 }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/file/", .prefix = true,
								 .methods = VIREO_GET, .handler = h_file }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/long/", .prefix = true,
								 .methods = VIREO_GET, .handler = h_file,
								 .arg = (void *)1 }), 0);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/filemisuse", .methods = VIREO_GET,
								 .handler = h_file_misuse }), 0);
	/* The same path for another method: a second route. */
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/exact", .methods = VIREO_DELETE,
								 .handler = h_prefix, .arg = (void *)pre }), 0);
	return 0;
}
VIREO_APP(t, .name = "t", .init = t_app_init, .help = "the API's host test");

static const struct vireo_tcp_service tcp_svc = {
	.name = "upper", .port = TCP_SVC_PORT, .max_conns = 4, .max_per_src = 2, .idle_timeout_ms = 5000,
	.on_accept = svc_accept_cb, .on_recv = svc_recv_cb, .on_eof = svc_eof_cb, .on_close = svc_close_cb,
};

/* ---- fixtures ---- */

static long base_kmem;	/* kernel heap blocks after the apps started */

static int group_setup(void **state)
{
	assert_int_equal(vireo_lwip_init(), 0);
	rxmem_init();	/* the bulk windows' bookkeeping, as netif_vnet's bring-up */
	wire_netif_up();
	/* As at boot (runtime/app.c), the server starts before the apps: its
	 * reserve of API handles sizes their table. */
	assert_int_equal(http_server_start(HTTP_PORT, NULL), 0);
	http_server_stop();
	/* The metric named vireo_*: refused at boot, one misuse. */
	assert_int_equal(api_apps_start(), 0);
	base_kmem = hk_kmem_live();
	assert_true(hk_log_contains("metric vireo_t_bad: vireo_ names are the runtime's"));
	return 0;
}

static int setup(void **state)
{
	memset(&t, 0, sizeof t);
	wire_snapshot();
	assert_int_equal(http_server_start(HTTP_PORT, NULL), 0);
	return 0;
}

static int teardown(void **state)
{
	http_server_stop();
	api_services_stop();
	run_step(2 * TCP_MSL + 10000, 250);
	wire_check_idle();
	assert_int_equal(api_handles_live(), 0);
	assert_int_equal(api_buf_held(), 0);
	assert_int_equal(hk_kmem_live(), base_kmem);	/* the API's tables stay */
	return 0;
}

static void get(struct client *c, const char *req, struct resp *r, bool head)
{
	cl_open(c, V4, HTTP_PORT);
	cl_send_str(c, req);
	run_ms(200);
	assert_true(cl_response(c, head, r));
}

/* ---- routes ---- */

/* Every request in progress holds a handle: past the 256 of the old
 * table (once 256 in all: at c1000 a quarter of the requests got 503). */
static void test_handles_past_floor(void **state)
{
	static u32 ids[API_HANDLE_SLOTS + 128];
	static int objs[API_HANDLE_SLOTS + 128];
	u32 n = API_HANDLE_SLOTS + 128, i, j;

	(void)state;
	for (i = 0; i < n; i++) {
		ids[i] = api_handle_new(API_H_TCP, &objs[i]);
		assert_int_not_equal(ids[i], 0);
		for (j = 0; j < i; j += 37)
			assert_int_not_equal(ids[i], ids[j]);
	}
	for (i = 0; i < n; i++) {
		assert_ptr_equal(api_handle_get(API_H_TCP, ids[i]), &objs[i]);
		assert_null(api_handle_get(API_H_REQ, ids[i]));
	}
	for (i = 0; i < n; i++)
		api_handle_free(ids[i]);
	for (i = 0; i < n; i++)
		assert_null(api_handle_get(API_H_TCP, ids[i]));	/* stale */
	/* a slot used again gets another generation: the old id stays stale */
	ids[0] = api_handle_new(API_H_TCP, &objs[0]);
	assert_int_not_equal(ids[0], 0);
	for (i = 1; i < n; i++)
		assert_int_not_equal(ids[0], ids[i]);
	api_handle_free(ids[0]);
}

static void test_exact_route(void **state)
{
	struct client c;
	struct resp r;

	get(&c, "GET /t/exact?a=x%20y&b=2 HTTP/1.1\r\nHost: h\r\nX-Test:  v1 \r\n\r\n", &r, false);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "X-App"), "yes");
	assert_null(hdr(&r, "X-Injected"));
	assert_string_equal(hdr(&r, "Content-Type"), "text/plain");
	assert_true(hk_log_contains("vireo_resp_send: a content type with a control character"));
	assert_true(hk_log_contains("vireo_resp_start: a content type with a control character"));
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_memory_equal(r.body, "exact get\n", 10);
	assert_string_equal(t.query_a, "x y");
	assert_string_equal(t.xhdr, "v1");
	assert_string_equal(t.fields, "Host=h;X-Test=v1;");
	/* HEAD: the same Content-Length, no body; a repeated header is NULL. */
	cl_send_str(&c, "HEAD /t/exact HTTP/1.1\r\nHost: h\r\nX-Test: 1\r\nx-test: 2\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Length"), "11");	/* "exact head\n" */
	assert_true(t.xhdr_null);
	assert_string_equal(t.fields, "Host=h;X-Test=1;x-test=2;");	/* each of a repeated one */
	run_ms(100);
	assert_int_equal(c.len, c.off);	/* no body followed */
	assert_int_equal(t.calls, 2);
	assert_int_equal(t.done_true, 2);
	assert_int_equal(t_hits.v, 2);
	cl_close(&c);
}

static void test_prefix_and_404_405(void **state)
{
	struct client c;
	struct resp r;

	get(&c, "GET /t/pre/a/b HTTP/1.1\r\nHost: h\r\n\r\n", &r, false);
	assert_memory_equal(r.body, "prefix\n", 7);
	assert_string_equal(t.subpath, "a/b");
	assert_string_equal(t.raw, "/t/pre/a/b");
	/* the raw path (vireo_http_raw_paths()): "%2F" as it came */
	cl_send_str(&c, "GET /t/pre/a%2Fb%20c?q=%2F HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(t.subpath, "a/b c");
	assert_string_equal(t.raw, "/t/pre/a%2Fb%20c");
	cl_send_str(&c, "GET http://h/t/pre/x%2fy HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(t.raw, "/t/pre/x%2fy");
	/* a proxied HEAD's declared length with no body: the connection stays */
	cl_send_str(&c, "HEAD /t/headlen HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_string_equal(hdr(&r, "Content-Length"), "100");
	run_ms(100);
	assert_false(c.eof);
	cl_send_str(&c, "GET /t/pre/long/z HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_memory_equal(r.body, "longer\n", 7);	/* the longest prefix */
	assert_string_equal(t.subpath, "z");
	cl_send_str(&c, "DELETE /t/exact HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_memory_equal(r.body, "prefix\n", 7);	/* the DELETE route of the same path */
	cl_send_str(&c, "GET /t/nothing HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 404);
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	cl_send_str(&c, "PUT /t/exact HTTP/1.1\r\nHost: h\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 405);
	assert_string_equal(hdr(&r, "Allow"), "GET, HEAD, DELETE");
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(200);
	assert_true(c.eof);
	cl_close(&c);
	assert_int_equal(api_http_stats.method_refusals, 1);
}

/* ---- bodies ---- */

static void test_body_round_trip(void **state)
{
	static u8 req[70000];
	size_t body = 60000, n, i;
	struct client c;
	struct resp r;

	n = (size_t)snprintf((char *)req, sizeof req, "PUT /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: %zu\r\n\r\n",
			     body);
	for (i = 0; i < body; i++)
		req[n + i] = (u8)(i * 13);
	cl_open(&c, V6, HTTP_PORT);
	cl_send(&c, req, n + body);
	run_ms(2000);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, body);
	assert_memory_equal(r.body, req + n, body);
	assert_int_equal(t_sizes.count, 1);
	assert_int_equal(t_sizes.counts[3], 1);	/* above every bound */
	cl_close(&c);
}

/* A request after a refused chunked body: never run. */
static const char smuggled_chunk[] = "GET /t/exact HTTP/1.1\r\nHost: h\r\n\r\n";

static void test_body_refusals(void **state)
{
	struct client c[5];
	struct resp r;
	char req[160];
	int i;

	/* A body to a route without max_body: 413, close. */
	get(&c[0], "GET /t/exact HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", &r, false);
	assert_int_equal(r.status, 413);
	cl_close(&c[0]);
	/* A coding other than chunked: 501. */
	get(&c[0], "POST /t/body HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", &r, false);
	assert_int_equal(r.status, 501);
	cl_close(&c[0]);
	/* Over the route's max_body (1 MiB): 413. */
	snprintf(req, sizeof req, "POST /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: %u\r\n\r\n",
		 VIREO_HTTP_BODY_MAX + 1);
	get(&c[0], req, &r, false);
	assert_int_equal(r.status, 413);
	cl_close(&c[0]);
	/* Four heads declaring 1 MiB bodies, the bodies not sent: nothing is
	 * held for them (a body is charged as it arrives), and another
	 * request's body goes through. */
	snprintf(req, sizeof req, "POST /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: %u\r\n\r\n",
		 VIREO_HTTP_BODY_MAX);
	for (i = 0; i < 4; i++) {
		cl_open(&c[i], V4, HTTP_PORT);
		cl_send_str(&c[i], req);
	}
	run_ms(200);
	assert_int_equal(api_buf_held(), 0);
	get(&c[4], "PUT /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", &r, false);
	assert_int_equal(r.status, 201);
	assert_memory_equal(r.body, "abc", 3);
	assert_int_equal(api_http_stats.budget_refusals, 0);
	cl_close(&c[4]);
	/* A body that never completes: 408 at the header timeout, budget back. */
	run_ms(HTTP_SERVER_HEADER_MS + 1000);
	for (i = 0; i < 4; i++) {
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.status, 408);
		cl_close(&c[i]);
	}
	assert_int_equal(api_buf_held(), 0);
}

/* Chunked request bodies: decoded into the body as they arrive (sizes in
 * any case, an extension, a trailer dropped), each followed at once by a
 * pipelined request on the same connection; past the route's max_body
 * 413 and close; bad framing 400 and close; the budget all given back. */
static void test_body_chunked(void **state)
{
	static u8 req[80000], want[60000];
	size_t n = 0, i, off = 0, sz;
	struct client c;
	struct resp r;
	char line[64];

	n += (size_t)snprintf((char *)req, sizeof req,
			      "PUT /t/body HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n");
	for (i = 0; i < sizeof want; i++)
		want[i] = (u8)(i * 7);
	for (sz = 1; off < sizeof want; sz = sz * 3 + 1) {
		size_t k = MIN(sz, sizeof want - off);

		n += (size_t)snprintf((char *)req + n, sizeof req - n, sz & 1 ? "%zx\r\n" : "%zX;x=\"y\"\r\n", k);
		memcpy(req + n, want + off, k);
		n += k;
		off += k;
		memcpy(req + n, "\r\n", 2);
		n += 2;
	}
	n += (size_t)snprintf((char *)req + n, sizeof req - n,
			      "0\r\nX-Sum: 1\r\n\r\n"
			      "POST /t/small HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
			      "3\r\nabc\r\n0\r\n\r\n"
			      "POST /t/small HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
			      "GET /t/pre/x HTTP/1.1\r\nHost: h\r\n\r\n");
	cl_open(&c, V6, HTTP_PORT);
	cl_send(&c, req, n);
	run_ms(2000);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, sizeof want);
	assert_memory_equal(r.body, want, sizeof want);
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, 3);
	assert_memory_equal(r.body, "abc", 3);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, 0);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, "prefix\n", 7);
	cl_close(&c);

	/* Over /t/small's 1000 bytes in 100-byte chunks: 413 as the 1001st
	 * byte arrives, closing; nothing after it is read. */
	n = (size_t)snprintf((char *)req, sizeof req,
			     "POST /t/small HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (i = 0; i < 11; i++) {
		n += (size_t)snprintf((char *)req + n, sizeof req - n, "64\r\n");
		memset(req + n, 'a', 100);
		n += 100;
		memcpy(req + n, "\r\n", 2);
		n += 2;
	}
	n += (size_t)snprintf((char *)req + n, sizeof req - n, "0\r\n\r\n%s", smuggled_chunk);
	i = api_http_stats.body_too_large;
	get(&c, (const char *)req, &r, false);
	assert_int_equal(r.status, 413);
	assert_string_equal(hdr(&r, "Connection"), "close");
	assert_int_equal(api_http_stats.body_too_large, i + 1);
	run_ms(200);
	assert_true(c.eof);
	assert_int_equal(c.len, c.off);
	cl_close(&c);

	/* Bad framing: a size past 2^60, a bare LF, a missing CRLF after the
	 * data, a size that is not hex: 400, closing. */
	static const char *const bad[] = { "10000000000000000\r\n", "3\nabc\r\n0\r\n\r\n",
					   "3\r\nabcd\r\n0\r\n\r\n", "x\r\n", " 3\r\nabc\r\n0\r\n\r\n" };
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(line, sizeof line, "%s", bad[i]);
		n = (size_t)snprintf((char *)req, sizeof req,
				     "POST /t/body HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n%s%s",
				     line, smuggled_chunk);
		get(&c, (const char *)req, &r, false);
		if (r.status != 400)
			fail_msg("%zu: %d, want 400", i, r.status);
		assert_string_equal(hdr(&r, "Connection"), "close");
		cl_close(&c);
	}
	/* A trailer section past CHUNKED_TRAILER_MAX (4 KiB): 400. */
	n = (size_t)snprintf((char *)req, sizeof req,
			     "POST /t/body HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ");
	memset(req + n, 't', CHUNKED_TRAILER_MAX);
	n += CHUNKED_TRAILER_MAX;
	snprintf((char *)req + n, sizeof req - n, "\r\n\r\n%s", smuggled_chunk);
	get(&c, (const char *)req, &r, false);
	assert_int_equal(r.status, 400);
	assert_string_equal(hdr(&r, "Connection"), "close");
	cl_close(&c);
	run_ms(100);
	assert_int_equal(api_buf_held(), 0);
}

/* The expected "n hash" of a streamed body of n bytes (i * 7 + (i >> 9)). */
static void sink_want(char *out, size_t size, size_t n)
{
	u32 h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (u8)(i * 7 + (i >> 9))) * 16777619u;
	snprintf(out, size, "%zu %08x", n, h);
}

/* A streamed body: 3 MiB chunked (past VIREO_HTTP_BODY_MAX and the budget's
 * per-source share) goes through holding nothing against the budget, with
 * a pipelined request behind it; then a Content-Length body under
 * back-pressure: held, the client's bytes stop at about a window, resumed,
 * all of it arrives. */
static void test_body_stream(void **state)
{
	static u8 req[3 * 1024 * 1024 + 4096];
	const size_t total = 3 * 1024 * 1024, chunk = 50000;
	size_t n, off, i, k;
	struct client c;
	struct resp r;
	char want[64];

	n = (size_t)snprintf((char *)req, 128, "POST /t/sink HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (off = 0; off < total; off += k) {
		k = MIN(chunk, total - off);
		n += (size_t)snprintf((char *)req + n, 32, "%zx\r\n", k);
		for (i = 0; i < k; i++)
			req[n + i] = (u8)((off + i) * 7 + ((off + i) >> 9));
		n += k;
		memcpy(req + n, "\r\n", 2);
		n += 2;
	}
	n += (size_t)snprintf((char *)req + n, 128, "0\r\n\r\nGET /t/pre/x HTTP/1.1\r\nHost: h\r\n\r\n");
	memset(&sink, 0, sizeof sink);
	cl_open(&c, V4, HTTP_PORT);
	cl_send(&c, req, n);
	for (i = 0; i < 200 && c.tx_off < n; i++) {
		run_ms(100);
		assert_int_equal(api_buf_held(), 0);	/* nothing copied, nothing charged */
	}
	run_ms(500);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	sink_want(want, sizeof want, total);
	assert_int_equal(r.body_len, strlen(want));
	assert_memory_equal(r.body, want, strlen(want));
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_int_equal(sink.ends, 1);
	assert_true(sink.biggest <= TCP_WND);	/* spans of the receive buffer */
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, "prefix\n", 7);

	/* Back-pressure: 400 KB by Content-Length, held after the first call. */
	n = (size_t)snprintf((char *)req, 128, "PUT /t/sink HTTP/1.1\r\nHost: h\r\nContent-Length: 400000\r\n\r\n");
	for (i = 0; i < 400000; i++)
		req[n + i] = (u8)(i * 7 + (i >> 9));
	memset(&sink, 0, sizeof sink);
	sink.take_max = 1000;
	cl_send(&c, req, n + 400000);
	run_ms(50);
	sink.hold = true;
	run_ms(2000);
	assert_true(sink.n < 400000);
	k = c.tx_off;
	run_ms(2000);
	assert_int_equal(c.tx_off, k);	/* the window closed: the client stopped */
	/* At most a window in rx[] and the client's send buffer on top. */
	if (k - sink.n > TCP_WND + TCP_SND_BUF + 128)
		fail_msg("sent %zu, taken %llu", k, (unsigned long long)sink.n);
	sink.hold = false;
	sink.take_max = 0;
	vireo_req_body_resume(sink.r);
	run_ms(3000);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	sink_want(want, sizeof want, 400000);
	assert_memory_equal(r.body, want, strlen(want));
	vireo_req_body_resume(sink.r);	/* stale: nothing */
	cl_close(&c);

	/* An empty body: on_body_end at once. */
	memset(&sink, 0, sizeof sink);
	get(&c, "POST /t/sink HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n", &r, false);
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, "0 811c9dc5", 10);
	cl_close(&c);
}

/* A streamed body's limits and framing: a Content-Length past body_limit
 * 413 at the head (the handler never runs); a chunked one 413 as it
 * passes it, bad chunk framing 400, each ending the exchange lost. */
static void test_body_stream_refusals(void **state)
{
	static char req[4096];
	struct client c;
	struct resp r;
	size_t n;
	int i;

	memset(&sink, 0, sizeof sink);
	get(&c, "POST /t/sinklim HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n", &r, false);
	assert_int_equal(r.status, 413);
	assert_int_equal(sink.calls, 0);
	assert_null(sink.r.id ? "ran" : NULL);
	cl_close(&c);
	n = (size_t)snprintf(req, sizeof req, "POST /t/sinklim HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (i = 0; i < 11; i++) {
		n += (size_t)snprintf(req + n, sizeof req - n, "64\r\n");
		memset(req + n, 'z', 100);
		n += 100;
		n += (size_t)snprintf(req + n, sizeof req - n, "\r\n");
	}
	snprintf(req + n, sizeof req - n, "0\r\n\r\n");
	i = (int)api_http_stats.lost;
	get(&c, req, &r, false);
	assert_int_equal(r.status, 413);
	assert_string_equal(hdr(&r, "Connection"), "close");
	assert_int_equal(sink.n, 1000);
	assert_int_equal(sink.ends, 0);
	assert_int_equal((int)api_http_stats.lost, i + 1);
	assert_false(vireo_req_live(sink.r));
	cl_close(&c);
	get(&c, "POST /t/sink HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", &r, false);
	assert_int_equal(r.status, 400);
	assert_int_equal(sink.n, 3);
	assert_int_equal(sink.ends, 0);
	cl_close(&c);
}

/* ---- framing (docs/appliance.md "Framing") ---- */

/* A request whose Content-Length body is a whole request of its own (for
 * /t/exact, which counts its calls), then a real one that asks to close:
 * the first is answered with status, then either the connection closes
 * (keep false) or the real request is answered; the smuggled request never
 * runs, whatever route answered the first. te: a chunked body instead. */
static const char smuggled[] = "GET /t/exact HTTP/1.1\r\nHost: h\r\n\r\n";

static void framing_check(const char *head, const char *extra, int status, bool keep)
{
	static const char real[] = "GET /t/pre/x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
	unsigned calls = t.calls;
	struct client c;
	struct resp r;
	char req[512];
	int n;

	if (extra)
		n = snprintf(req, sizeof req, "%s\r\nHost: h\r\n%s\r\n%s%s", head, extra, smuggled, real);
	else
		n = snprintf(req, sizeof req, "%s\r\nHost: h\r\nContent-Length: %zu\r\n\r\n%s%s", head,
			     strlen(smuggled), smuggled, real);
	cl_open(&c, V4, HTTP_PORT);
	cl_send(&c, req, (size_t)n);
	run_ms(500);
	if (!cl_response(&c, !strncmp(head, "HEAD", 4), &r))
		fail_msg("%s: no response", head);
	if (r.status != status || strcmp(hdr(&r, "Connection"), keep ? "keep-alive" : "close"))
		fail_msg("%s: %d %s, want %d %s", head, r.status, hdr(&r, "Connection"), status,
			 keep ? "keep-alive" : "close");
	if (keep) {
		assert_true(cl_response(&c, false, &r));
		assert_int_equal(r.status, 200);
		assert_memory_equal(r.body, "prefix\n", 7);	/* the real one's */
	}
	run_ms(200);
	if (c.len != c.off)
		fail_msg("%s: %zu bytes more: %.*s", head, c.len - c.off, (int)(c.len - c.off), c.buf + c.off);
	assert_true(c.eof);
	assert_int_equal(t.calls, calls);	/* the smuggled request never ran */
	cl_close(&c);
}

/* Every kind of answer the runtime or an app gives to a request with a
 * body: the runtime's 404 (no route) reads and drops the body it did not
 * want; the app's route reads it as its body; refusals close. */
static void test_framing_every_route(void **state)
{
	framing_check("GET /t/nothing HTTP/1.1", NULL, 404, true);
	framing_check("POST /t/nothing HTTP/1.1", NULL, 404, true);
	framing_check("HEAD /t/nothing HTTP/1.1", NULL, 404, true);
	framing_check("PUT /t/body HTTP/1.1", NULL, 201, true);	/* the app's body */
	framing_check("GET /t/exact HTTP/1.1", NULL, 413, false);	/* no max_body */
	framing_check("POST /t/exact HTTP/1.1", NULL, 405, false);
	framing_check("GET /healthz HTTP/1.1", NULL, 413, false);
	framing_check("GET /metrics HTTP/1.1", NULL, 413, false);
	/* Expect: the client may hold the body back, so what follows is not
	 * known to be it: close. */
	framing_check("PUT /t/nothing HTTP/1.1", "Expect: 100-continue\r\nContent-Length: 34\r\n", 404, false);
	framing_check("GET /t/nothing HTTP/1.1", "Content-Length: 40\r\nContent-Length: 40\r\n", 400, false);
	framing_check("GET /t/nothing HTTP/1.1", "Content-Length: 40\r\nTransfer-Encoding: chunked\r\n", 400, false);
	/* A chunked body that is not chunked: 400; one nobody reads (its
	 * length unknown): the answer closes. Other codings: 501. */
	framing_check("POST /t/body HTTP/1.1", "Transfer-Encoding: chunked\r\n", 400, false);
	framing_check("POST /t/nothing HTTP/1.1", "Transfer-Encoding: chunked\r\n", 404, false);
	framing_check("POST /healthz HTTP/1.1", "Transfer-Encoding: chunked\r\n", 413, false);
	framing_check("POST /t/body HTTP/1.1", "Transfer-Encoding: chunked, chunked\r\n", 400, false);
	framing_check("POST /t/body HTTP/1.1", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
		      400, false);
	framing_check("POST /t/body HTTP/1.1", "Transfer-Encoding: xchunked\r\n", 501, false);
	framing_check("POST /t/body HTTP/1.0", "Transfer-Encoding: chunked\r\n", 400, false);
	assert_int_equal(t.calls, 0);
}

/* A body past HTTP_DISCARD_MAX the answer did not want: Connection:
 * close, and nothing after the answer is read as a request. */
static void test_framing_large_body_closes(void **state)
{
	static char req[256];
	struct client c;
	struct resp r;
	int n;

	n = snprintf(req, sizeof req, "POST /t/nothing HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n%s",
		     HTTP_HEAD_MAX + 1, smuggled);
	cl_open(&c, V6, HTTP_PORT);
	cl_send(&c, req, (size_t)n);
	run_ms(500);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 404);
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(200);
	assert_true(c.eof);
	assert_int_equal(c.len, c.off);
	assert_int_equal(t.calls, 0);
	cl_close(&c);
}

/* Pipelined requests with bodies, the bodies split from their heads and
 * arriving after the answers: each body dropped, each request answered. */
static void test_framing_pipelined(void **state)
{
	static const char three[] = "POST /t/nothing HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nabcde"
				    "DELETE /t/none HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
				    "PUT /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nok";
	struct client c;
	struct resp r;
	int i;

	cl_open(&c, V4, HTTP_PORT);
	cl_send(&c, three, sizeof three - 1);
	run_ms(300);
	for (i = 0; i < 2; i++) {
		assert_true(cl_response(&c, false, &r));
		assert_int_equal(r.status, 404);
		assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	}
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 201);
	assert_memory_equal(r.body, "ok", 2);
	/* The head now, the body later, in pieces: 404 at once, then the
	 * body dropped as it comes, then the next request. */
	cl_send_str(&c, "GET /t/nothing HTTP/1.1\r\nHost: h\r\nContent-Length: 34\r\n\r\n");
	run_ms(200);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 404);
	cl_send_str(&c, "GET /t/exact HTTP/1.1\r\n");
	run_ms(200);
	cl_send_str(&c, "Host: h\r\n\r\n");	/* its last byte */
	run_ms(200);
	assert_int_equal(c.len, c.off);	/* the body was not a request */
	cl_send_str(&c, "GET /t/pre/y HTTP/1.1\r\nHost: h\r\n\r\n");
	run_ms(200);
	assert_true(cl_response(&c, false, &r));
	assert_memory_equal(r.body, "prefix\n", 7);
	assert_int_equal(t.calls, 0);
	assert_false(c.eof);
	cl_close(&c);
}

/* One source's bodies hold at most HTTP_BODY_SRC_MAX (conn.h): with one
 * megabyte body arriving, a second body from the same source is 503 and
 * closes, another source's goes through, and the first completes whole. */
static void test_body_source_share(void **state)
{
	static u8 big[VIREO_HTTP_BODY_MAX + 128], small[10000 + 128];
	size_t hb, hs, part = 600000, i;
	struct client a, b;
	struct resp r;

	hb = (size_t)snprintf((char *)big, 128, "PUT /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: %u\r\n\r\n",
			      VIREO_HTTP_BODY_MAX);
	for (i = 0; i < VIREO_HTTP_BODY_MAX; i++)
		big[hb + i] = (u8)(i * 7 + (i >> 9));
	hs = (size_t)snprintf((char *)small, 128, "PUT /t/body HTTP/1.1\r\nHost: h\r\nContent-Length: 10000\r\n\r\n");
	memset(small + hs, 's', 10000);

	cl_open(&a, V4, HTTP_PORT);
	cl_send(&a, big, hb + part);
	run_ms(3000);
	/* Charged as it came: at least what arrived, at most the declared length. */
	assert_true(api_buf_held() >= part && api_buf_held() <= VIREO_HTTP_BODY_MAX);
	cl_open(&b, V4, HTTP_PORT);
	cl_send(&b, small, hs + 10000);
	run_ms(500);
	assert_true(cl_response(&b, false, &r));
	assert_int_equal(r.status, 503);
	assert_string_equal(hdr(&r, "Connection"), "close");
	assert_int_equal(api_http_stats.budget_refusals, 1);
	cl_close(&b);
	cl_open(&b, V6, HTTP_PORT);	/* another source */
	cl_send(&b, small, hs + 10000);
	run_ms(500);
	assert_true(cl_response(&b, false, &r));
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, 10000);
	cl_close(&b);
	cl_send(&a, big + hb + part, VIREO_HTTP_BODY_MAX - part);
	run_ms(4000);
	assert_true(cl_response(&a, false, &r));
	assert_int_equal(r.status, 201);
	assert_int_equal(r.body_len, VIREO_HTTP_BODY_MAX);
	assert_memory_equal(r.body, big + hb, VIREO_HTTP_BODY_MAX);
	cl_close(&a);
}

/* ---- finishing later ---- */

static void test_finish_from_timer(void **state)
{
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /t/later HTTP/1.1\r\nHost: h\r\n\r\n");
	run_ms(100);
	assert_int_equal(c.len, 0);	/* nothing before the timer */
	assert_true(vireo_req_live(t.kept));
	run_ms(200);
	assert_true(cl_response(&c, false, &r));
	assert_memory_equal(r.body, "later\n", 6);
	assert_int_equal(t.done_true, 1);
	assert_false(vireo_req_live(t.kept));
	assert_int_equal(vireo_resp_send(t.kept, 200, NULL, NULL, 0), -EPIPE);	/* stale */
	cl_close(&c);
}

static void test_never_answered_and_lost(void **state)
{
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /t/never HTTP/1.1\r\nHost: h\r\n\r\n");
	run_ms(1000);
	assert_int_equal(c.len, 0);
	assert_true(vireo_req_live(t.kept));
	cl_abort(&c);
	assert_int_equal(t.done_false, 1);	/* the client reset: lost */
	assert_false(vireo_req_live(t.kept));
	assert_int_equal(vireo_resp_error(t.kept, 500), -EPIPE);

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /t/never HTTP/1.1\r\nHost: h\r\n\r\n");
	run_ms(VIREO_HTTP_DEFER_MS + 1000);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 503);
	assert_int_equal(t.done_false, 2);
	assert_int_equal(api_http_stats.deferred_timeouts, 1);
	cl_close(&c);
}

/* ---- streaming ---- */

/* The body of a chunked response at c->off, decoded into out. */
static size_t read_chunked(struct client *c, u8 *out, size_t cap)
{
	const u8 *s = c->buf + c->off, *end = c->buf + c->len;
	size_t n = 0;

	for (;;) {
		char *e;
		unsigned long sz = strtoul((const char *)s, &e, 16);

		assert_true((const u8 *)e < end && e[0] == '\r' && e[1] == '\n');
		s = (const u8 *)e + 2;
		if (!sz)
			break;
		assert_true(n + sz <= cap && s + sz + 2 <= end);
		memcpy(out + n, s, sz);
		n += sz;
		s += sz;
		assert_true(s[0] == '\r' && s[1] == '\n');
		s += 2;
	}
	assert_true(s + 2 <= end && s[0] == '\r' && s[1] == '\n');
	c->off = (size_t)(s + 2 - c->buf);
	return n;
}

static void stream_case(bool unknown, bool http10)
{
	static u8 got[300000];
	struct client c;
	size_t i, n;
	const u8 *head_end;

	t.stream_total = 200000;
	t.chunk_unknown = unknown;
	cl_open(&c, V4, HTTP_PORT);
	c.hold = true;	/* a slow reader: the window closes */
	cl_send_str(&c, http10 ? "GET /t/stream HTTP/1.0\r\n\r\n" : "GET /t/stream HTTP/1.1\r\nHost: h\r\n\r\n");
	run_ms(500);
	assert_true(t.short_writes >= 1);	/* back-pressure reached the app */
	assert_true(t.stream_sent < t.stream_total);
	assert_true(c.len < 60000);
	cl_resume(&c);
	for (i = 0; i < 200 && t.done_true == 0; i++)
		run_ms(50), cl_resume(&c);
	assert_int_equal(t.done_true, 1);
	assert_int_equal(t.stream_sent, t.stream_total);
	assert_true(t.writable_calls >= 2);
	run_ms(200);
	head_end = memmem(c.buf, c.len, "\r\n\r\n", 4);
	assert_non_null(head_end);
	c.off = (size_t)(head_end + 4 - c.buf);
	if (unknown && !http10) {
		assert_non_null(memmem(c.buf, c.off, "Transfer-Encoding: chunked\r\n", 28));
		n = read_chunked(&c, got, sizeof got);
	} else {
		if (!unknown)
			assert_non_null(memmem(c.buf, c.off, "Content-Length: 200000\r\n", 24));
		n = c.len - c.off;
		memcpy(got, c.buf + c.off, n);
		c.off = c.len;
	}
	assert_int_equal(n, t.stream_total);
	for (i = 0; i < n; i++)
		if (got[i] != stream_byte(i))
			fail_msg("byte %zu: %u, want %u", i, got[i], stream_byte(i));
	if (http10) {
		run_ms(200);
		assert_true(c.eof);	/* HTTP/1.0 without a length: the end is the FIN */
	}
	cl_close(&c);
}

static void test_stream_chunked(void **state)
{
	stream_case(true, false);
}

static void test_stream_declared_length(void **state)
{
	stream_case(false, false);
}

static void test_stream_http10(void **state)
{
	stream_case(true, true);
}

/* A streamed body past HTTP_COPY_INFLIGHT to a client whose ACKs are lost
 * takes a copy bulk grant: more than 8 KiB of it is unacknowledged, never
 * more than HTTP_COPY_BULK_INFLIGHT (and the head); with every grant held
 * elsewhere it keeps 8 KiB and the refusal is counted. Once ACKs flow the
 * whole body arrives and the grant is given back. */
#define COPYBULK_PORT 42000
static struct tcp_pcb *api_server_pcb(u16 client_port)
{
	for (struct tcp_pcb *p = tcp_active_pcbs; p; p = p->next)
		if (p->local_port == HTTP_PORT && p->remote_port == client_port)
			return p;
	return NULL;
}

static void test_stream_copy_bulk(void **state)
{
	for (int held = 0; held < 2; held++) {
		struct client c;
		struct tcp_pcb *srv;
		u64 refused0 = http_server_stats.copy_bulk_refused;
		u32 unacked, i;

		t.stream_total = 200000;
		t.chunk_unknown = false;
		t.stream_sent = 0;
		t.done_true = 0;
		/* held: every grant taken by others (as two streaming clients would) */
		http_server_stats.copy_bulk_grants = held ? HTTP_COPY_BULK_MAX : 0;
		bh_lo = (u16)(COPYBULK_PORT + held);
		bh_hi = (u16)(bh_lo + 1);
		cl_open_from(&c, V4, HTTP_PORT, bh_lo);
		cl_send_str(&c, "GET /t/stream HTTP/1.1\r\nHost: h\r\n\r\n");
		run_ms(300);
		srv = api_server_pcb(bh_lo);
		assert_non_null(srv);
		unacked = srv->snd_lbb - srv->lastack;
		if (!held) {
			if (unacked <= HTTP_COPY_INFLIGHT || unacked > HTTP_COPY_BULK_INFLIGHT + 1024)
				fail_msg("granted: %u bytes unacknowledged", unacked);
			assert_int_equal(http_server_stats.copy_bulk_grants, 1);
			assert_int_equal(http_server_stats.copy_bulk_refused, refused0);
		} else {
			if (unacked > HTTP_COPY_INFLIGHT + 1024)
				fail_msg("refused: %u bytes unacknowledged", unacked);
			assert_int_equal(http_server_stats.copy_bulk_grants, HTTP_COPY_BULK_MAX);
			assert_true(http_server_stats.copy_bulk_refused > refused0);
			http_server_stats.copy_bulk_grants = 0;	/* the others' end */
		}
		bh_lo = bh_hi = 0;
		for (i = 0; i < 400 && !t.done_true; i++)
			run_ms(50), cl_resume(&c);
		assert_int_equal(t.done_true, 1);
		run_ms(500);
		assert_int_equal(c.len - (size_t)((const u8 *)memmem(c.buf, c.len, "\r\n\r\n", 4) + 4 - c.buf),
				 t.stream_total);
		assert_int_equal(http_server_stats.copy_bulk_grants, 0);	/* all acknowledged */
		cl_close(&c);
	}
}

/* A 1 MiB stream to a reader at 300 B/s (above the 4096 B per 30 s window
 * floor). With a bulk grant: marked slow after HTTP_BULK_RATE_MS, it must
 * drain to HTTP_COPY_INFLIGHT within HTTP_BULK_DRAIN_MS and cannot, so it
 * is reset about 12 s in, the grant back. Without one (both held
 * elsewhere): the response's deadline, send_timeout + bytes taken at 1
 * KiB/s, resets it (about 75 s: the body grows at 300 B/s, the deadline
 * at 0.3 s a second). Before these bounds it held the slot for the hour
 * the body takes. */
static void test_stream_slow_reader(void **state)
{
	for (int held = 0; held < 2; held++) {
		u64 timeouts0 = http_server_stats.timeouts_send, slow0 = http_server_stats.bulk_slow;
		struct client c;
		int i;

		t.stream_total = 1 << 20;
		t.chunk_unknown = false;
		t.stream_sent = 0;
		t.done_true = 0;
		http_server_stats.copy_bulk_grants = held ? HTTP_COPY_BULK_MAX : 0;
		cl_open(&c, false, HTTP_PORT);
		c.hold = true;
		cl_send_str(&c, "GET /t/stream HTTP/1.1\r\nHost: h\r\n\r\n");
		for (i = 0; i < 2000 && http_server_stats.timeouts_send == timeouts0; i++) {
			cl_window(&c, 30);
			run_ms(100);
			if (!held && i == 30) {
				/* too slow for its grant: on the idle list, the
				 * first a full table would end */
				assert_int_equal(http_server_stats.bulk_slow, slow0 + 1);
				assert_false(list_empty(&http_srv.tab.idle));
				assert_true(list_entry(http_srv.tab.idle.next, struct conn, link.in_idle)->bulk_slow);
			}
		}
		if (!held) {
			if (i < 110 || i > 140)
				fail_msg("granted: reset after %d ms", i * 100);
			assert_int_equal(http_server_stats.copy_bulk_grants, 0);
		} else {
			if (i < 400 || i > 1200)
				fail_msg("no grant: reset after %d ms", i * 100);
			assert_int_equal(http_server_stats.bulk_slow, slow0);
			http_server_stats.copy_bulk_grants = 0;	/* the others' end */
		}
		assert_true(t.stream_sent < t.stream_total);
		cl_abort(&c);
		run_ms(100);
	}
}

/* A write with nothing ahead of it in the stream buffer is copied into
 * lwIP's queue at once, the head first, as far as the copy room goes
 * (server_stream_direct()), and only the rest through the buffer: one
 * 40,000-byte vireo_resp_write() takes more than VIREO_RESP_STREAM_BUF with
 * a grant free (the buffer alone took at most that), never more than the
 * room and the buffer; with every grant held, at most 8 KiB direct and the
 * buffer. The body arrives whole and in order either way. */
static void test_stream_direct(void **state)
{
	static u8 got[100000];

	for (int held = 0; held < 2; held++) {
		struct client c;
		const u8 *head_end;
		size_t i, n, cap = (held ? HTTP_COPY_INFLIGHT : HTTP_COPY_BULK_INFLIGHT) + VIREO_RESP_STREAM_BUF;

		t.stream_total = 90000;
		t.stream_chunk = 40000;
		t.chunk_unknown = false;
		t.stream_sent = 0;
		t.done_true = 0;
		t.first_write = -1;
		http_server_stats.copy_bulk_grants = held ? HTTP_COPY_BULK_MAX : 0;
		cl_open(&c, V4, HTTP_PORT);
		cl_send_str(&c, "GET /t/stream HTTP/1.1\r\nHost: h\r\n\r\n");
		for (i = 0; i < 400 && !t.done_true; i++)
			run_ms(50), cl_resume(&c);
		assert_int_equal(t.done_true, 1);
		if (!held && t.first_write <= VIREO_RESP_STREAM_BUF)
			fail_msg("granted: the first write took %d bytes", t.first_write);
		if (t.first_write <= 0 || (size_t)t.first_write > cap)
			fail_msg("the first write took %d bytes, over %zu", t.first_write, cap);
		run_ms(300);
		head_end = memmem(c.buf, c.len, "\r\n\r\n", 4);
		assert_non_null(head_end);
		if (!memmem(c.buf, (size_t)(head_end + 4 - c.buf), "Content-Length: 90000\r\n", 23))
			fail_msg("head: %.*s", (int)(head_end - c.buf), (const char *)c.buf);
		n = c.len - (size_t)(head_end + 4 - c.buf);
		assert_int_equal(n, t.stream_total);
		memcpy(got, head_end + 4, n);
		for (i = 0; i < n; i++)
			if (got[i] != stream_byte(i))
				fail_msg("byte %zu: %u, want %u", i, got[i], stream_byte(i));
		if (held)
			http_server_stats.copy_bulk_grants = 0;	/* the others' end */
		run_ms(300);
		assert_int_equal(http_server_stats.copy_bulk_grants, 0);
		cl_close(&c);
	}
	t.stream_chunk = 0;
}

/* vireo_resp_abort(): what was written goes out, then the connection
 * closes with the body unfinished: no last chunk, short of the length. */
static void test_stream_abort(void **state)
{
	static const char *const paths[] = { "/t/abort", "/t/abortlen" };

	for (unsigned k = 0; k < 2; k++) {
		struct client c;
		char req[64];

		cl_open(&c, V4, HTTP_PORT);
		snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", paths[k]);
		cl_send_str(&c, req);
		run_ms(300);
		assert_true(c.eof);
		assert_non_null(memmem(c.buf, c.len, k ? "Content-Length: 100\r\n" : "Transfer-Encoding: chunked\r\n",
				       k ? 21 : 28));
		assert_non_null(memmem(c.buf, c.len, k ? "\r\n\r\npartial" : "\r\n\r\n7\r\npartial\r\n",
				       k ? 11 : 16));
		assert_null(memmem(c.buf, c.len, "0\r\n\r\n", 5));	/* never the last chunk */
		assert_true(c.len < 200);
		cl_close(&c);
	}
}

/* ---- misuse ---- */

static void test_misuse_refused(void **state)
{
	u64 before;
	struct vireo_timer tm;
	struct vireo_defer d;
	void *p;

	before = api_http_stats.requests;
	(void)before;
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/exact", .methods = VIREO_GET,
								 .handler = h_exact }), -EEXIST);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/t/exact", .methods = VIREO_HEAD,
								 .handler = h_exact }), -EEXIST);	/* GET has HEAD */
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/metrics", .methods = VIREO_GET,
								 .handler = h_exact }), -EEXIST);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "nope", .methods = VIREO_GET,
								 .handler = h_exact }), -EINVAL);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/a b", .methods = VIREO_GET,
								 .handler = h_exact }), -EINVAL);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/x", .methods = 0x100,
								 .handler = h_exact }), -EINVAL);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/x", .methods = VIREO_GET }), -EINVAL);
	assert_int_equal(vireo_http_route(&(struct vireo_route){ .path = "/x", .methods = VIREO_POST,
								 .handler = h_exact,
								 .max_body = VIREO_HTTP_BODY_MAX + 1 }), -EINVAL);
	assert_int_equal(vireo_http_route(NULL), -EINVAL);
	/* Handles that were never live. */
	assert_int_equal(vireo_resp_send((vireo_req){ 0 }, 200, NULL, NULL, 0), -EPIPE);
	assert_int_equal(vireo_resp_write((vireo_req){ 12345 }, "x", 1), -EPIPE);
	assert_string_equal(vireo_req_path((vireo_req){ 7 }), "");
	assert_int_equal(vireo_tcp_send((vireo_tcp){ 99 }, "x", 1), -EPIPE);
	assert_int_equal(vireo_udp_send((vireo_udp){ 3 }, &t.udp_src, "x", 1), -EPIPE);
	/* Timers and work never initialised. */
	memset(&tm, 0xa5, sizeof tm);
	memset(&d, 0, sizeof d);
	assert_int_equal(vireo_timer_start(&tm, 10), -EINVAL);
	assert_false(vireo_timer_stop(&tm));
	assert_int_equal(vireo_defer(&d), -EINVAL);
	/* Memory: a foreign pointer and a double free are refused. */
	p = vireo_alloc(100);
	assert_non_null(p);
	assert_int_equal(vireo_mem_used(), 100 + VIREO_ALLOC_OVERHEAD);
	vireo_free(p);
	assert_int_equal(vireo_mem_used(), 0);
	vireo_free((char *)&tm + 16);
	assert_null(vireo_alloc(vireo_mem_limit() + 1));
	/* A counter-vec index out of range is ignored. */
	vireo_counter_vec_add(&t_kinds, 5, 1);
	vireo_counter_vec_add(&t_kinds, 1, 2);
	assert_int_equal(t_kinds.v[1], 2);
	assert_true(hk_log_contains("warning: app API: vireo_counter_vec_add: index 5 of 2: ignored"));
	/* Services: bad arguments, a port taken twice. */
	assert_int_equal(vireo_tcp_listen(&(struct vireo_tcp_service){ .name = "x", .port = 1 }), -EINVAL);
	assert_int_equal(vireo_tcp_listen(&(struct vireo_tcp_service){ .name = "Bad!", .port = 1,
									.on_recv = svc_recv_cb }), -EINVAL);
	assert_int_equal(vireo_tcp_listen(&tcp_svc), 0);
	assert_int_equal(vireo_tcp_listen(&tcp_svc), -EEXIST);
	assert_int_equal(vireo_udp_bind(&(struct vireo_udp_service){ .name = "u", .port = 9,
								     .max_datagram = VIREO_UDP_MAX + 1,
								     .on_recv = udp_recv_cb }, NULL), -EINVAL);
}

static int defer_runs;

static void defer_fn(void *arg)
{
	defer_runs += *(int *)arg;
}

static unsigned timer_fires;

static void count_fire(struct vireo_timer *tm, void *arg)
{
	timer_fires++;
	if (timer_fires < 3)
		vireo_timer_start(tm, 100);	/* periodic: again from the callback */
}

static void test_deferred_work_and_timer(void **state)
{
	static struct vireo_defer d;
	static struct vireo_timer tm;
	static int one = 1;

	defer_runs = 0;
	timer_fires = 0;
	vireo_defer_init(&d, defer_fn, &one);
	assert_int_equal(vireo_defer(&d), 0);
	assert_int_equal(vireo_defer(&d), 0);	/* queued once */
	run_ms(10);
	assert_int_equal(defer_runs, 1);
	assert_int_equal(vireo_defer(&d), 0);
	assert_true(vireo_defer_cancel(&d));
	run_ms(10);
	assert_int_equal(defer_runs, 1);

	vireo_timer_init(&tm, count_fire, NULL);
	assert_false(vireo_timer_armed(&tm));
	assert_int_equal(vireo_timer_start(&tm, 100), 0);
	assert_true(vireo_timer_armed(&tm));
	run_ms(90);
	assert_int_equal(timer_fires, 0);
	run_ms(500);
	assert_int_equal(timer_fires, 3);
	assert_false(vireo_timer_armed(&tm));
	assert_int_equal(vireo_timer_start(&tm, 100), 0);
	assert_true(vireo_timer_stop(&tm));
	run_ms(300);
	assert_int_equal(timer_fires, 3);
}

/* ---- TCP service ---- */

static void test_tcp_service(void **state)
{
	struct client a, b, c3, big;
	u8 line[] = "hello\n";
	int i;

	assert_int_equal(vireo_tcp_listen(&tcp_svc), 0);
	cl_open(&a, V4, TCP_SVC_PORT);
	cl_send(&a, line, 6);
	run_ms(100);
	assert_int_equal(a.len, 6);
	assert_memory_equal(a.buf, "HELLO\n", 6);
	assert_int_equal(t.accepts, 1);
	/* Per source: 2; a third from the same address is reset. */
	cl_open(&b, V4, TCP_SVC_PORT);
	cl_open(&c3, V4, TCP_SVC_PORT);
	run_ms(100);
	assert_true(c3.dead);
	assert_false(b.dead);
	cl_abort(&c3);
	/* Holding: on_recv takes nothing, the window closes at what one
	 * connection may hold, recv_again hands it over later. */
	t.tcp_hold = true;
	{
		static u8 lots[20000];

		memset(lots, 'a', sizeof lots);
		cl_send(&b, lots, sizeof lots);
		run_ms(500);
		assert_int_equal(b.len, 0);
		assert_true(b.pcb->unsent || b.pcb->unacked);	/* the window closed on it */
		t.tcp_hold = false;
		assert_int_equal(vireo_tcp_recv_again(t.last_tcp), 0);
		for (i = 0; i < 100 && b.len < sizeof lots; i++)
			run_ms(50);
		assert_int_equal(b.len, sizeof lots);
		assert_int_equal(b.buf[0], 'A');
	}
	/* The peer's FIN: on_eof closes; on_close follows; the app's close. */
	cl_send_str(&a, "quit");
	run_ms(200);
	assert_true(a.eof);
	cl_close(&a);
	cl_close(&b);
	run_ms(200);
	assert_int_equal(t.closes, 2);
	/* Idle timeout. */
	cl_open(&big, V6, TCP_SVC_PORT);
	run_ms(6000);
	assert_true(big.eof || big.dead);
	assert_int_equal(t.closes, 3);
	cl_abort(&big);
	{
		struct vireo_tcp_stats st;

		assert_int_equal(vireo_tcp_stats(TCP_SVC_PORT, &st), 0);
		assert_int_equal(st.accepted, 3);
		assert_int_equal(st.refused, 1);
		assert_int_equal(st.refused_source, 1);
		assert_int_equal(st.timeouts_idle, 1);
		assert_int_equal(st.active, 0);
		assert_int_equal(st.rx_bytes, 6 + 20000 + 4);
		assert_int_equal(vireo_tcp_stats(TCP_SVC_PORT + 1, &st), -ENOENT);
	}
}

/* ---- TCP clients (connecting out) ---- */

static struct {
	unsigned connected, closes, eofs, writable;
	unsigned fails[VIREO_TCP_FAIL_ABORTED + 1];
	vireo_tcp last;
	bool hold;		/* on_recv consumes nothing */
	u8 buf[32768];
	size_t len;
	void *ctx_seen;		/* vireo_tcp_ctx() during on_fail/on_close */
} oc;

static void oc_connected(vireo_tcp c, void *arg)
{
	oc.connected++;
	oc.last = c;
	assert_ptr_equal(vireo_tcp_ctx(c), &oc);
}

static void oc_fail(vireo_tcp c, enum vireo_tcp_fail why, void *arg)
{
	assert_true(why >= VIREO_TCP_FAIL_REFUSED && why <= VIREO_TCP_FAIL_ABORTED);
	oc.fails[why]++;
	oc.ctx_seen = vireo_tcp_ctx(c);
	assert_int_equal(vireo_tcp_send(c, "x", 1), -EPIPE);	/* stale */
}

static size_t oc_recv(vireo_tcp c, const void *data, size_t len, void *arg)
{
	size_t n = MIN(len, sizeof oc.buf - oc.len);

	if (oc.hold)
		return 0;
	memcpy(oc.buf + oc.len, data, n);
	oc.len += n;
	return n;
}

static void oc_eof(vireo_tcp c, void *arg)
{
	oc.eofs++;
	vireo_tcp_close(c);
}

static void oc_writable(vireo_tcp c, void *arg)
{
	oc.writable++;
}

static void oc_close(vireo_tcp c, void *arg)
{
	oc.closes++;
	oc.ctx_seen = vireo_tcp_ctx(c);
}

static const struct vireo_tcp_client oc_cfg = {
	.name = "up", .max_conns = 2, .connect_timeout_ms = 1000, .idle_timeout_ms = 5000,
	.on_connected = oc_connected, .on_fail = oc_fail, .on_recv = oc_recv, .on_eof = oc_eof,
	.on_writable = oc_writable, .on_close = oc_close,
};

static struct vireo_addr oc_addr(bool v6, u16 port)
{
	struct vireo_addr a = { .family = v6 ? VIREO_AF_INET6 : VIREO_AF_INET, .port = port };

	if (v6)
		memcpy(a.ip, ip_2_ip6(&addr6)->addr, 16);
	else
		memcpy(a.ip, &ip_2_ip4(&addr4)->addr, 4);
	return a;
}

static void oc_allow(const char *list)
{
	char why[64];

	if (!list) {
		egress_allow.n = 0;
		return;
	}
	assert_int_equal(allow_parse(list, &egress_allow, why, sizeof why), 0);
}

/* A raw lwIP server for the client to talk to: sends srv_n bytes of
 * stream_byte() on accept, reads nothing while srv_hold. */
static struct {
	struct tcp_pcb *listen, *conn;
	size_t n, sent;
	bool hold;
	size_t got;
	size_t on_fin;	/* at the client's FIN: send this many bytes, then ours */
	bool fin_seen;
} srv;

static void srv_push(void)
{
	while (srv.conn && srv.sent < srv.n) {
		u8 chunk[1024];
		size_t k = MIN(MIN(sizeof chunk, srv.n - srv.sent), (size_t)tcp_sndbuf(srv.conn)), i;

		if (!k)
			break;
		for (i = 0; i < k; i++)
			chunk[i] = stream_byte(srv.sent + i);
		if (tcp_write(srv.conn, chunk, (u16_t)k, TCP_WRITE_FLAG_COPY) != ERR_OK)
			break;
		srv.sent += k;
	}
	if (srv.conn)
		tcp_output(srv.conn);
}

static err_t srv_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	srv_push();
	return ERR_OK;
}

static err_t srv_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	if (!p && srv.on_fin) {
		/* the client half-closed: the other way still flows */
		srv.fin_seen = true;
		srv.n = srv.on_fin;
		srv.on_fin = 0;
		srv_push();
	}
	if (!p) {
		tcp_arg(pcb, NULL);
		tcp_recv(pcb, NULL);
		tcp_sent(pcb, NULL);
		tcp_err(pcb, NULL);
		srv.conn = NULL;
		tcp_close(pcb);
		return ERR_OK;
	}
	if (srv.hold)
		return ERR_MEM;	/* refused: lwIP offers it again */
	srv.got += p->tot_len;
	tcp_recved(pcb, p->tot_len);
	pbuf_free(p);
	return ERR_OK;
}

static void srv_err(void *arg, err_t err)
{
	srv.conn = NULL;
}

static err_t srv_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	srv.conn = pcb;
	tcp_recv(pcb, srv_recv);
	tcp_sent(pcb, srv_sent);
	tcp_err(pcb, srv_err);
	srv_push();
	return ERR_OK;
}

static void srv_start(u16 port, size_t n)
{
	struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);

	memset(&srv, 0, sizeof srv);
	srv.n = n;
	assert_int_equal(tcp_bind(pcb, IP_ANY_TYPE, port), ERR_OK);
	srv.listen = tcp_listen(pcb);
	assert_non_null(srv.listen);
	tcp_accept(srv.listen, srv_accept);
}

static void srv_stop(void)
{
	if (srv.conn) {
		tcp_arg(srv.conn, NULL);
		tcp_recv(srv.conn, NULL);
		tcp_sent(srv.conn, NULL);
		tcp_err(srv.conn, NULL);
		tcp_abort(srv.conn);
	}
	tcp_close(srv.listen);
	memset(&srv, 0, sizeof srv);
}

/* Connect, talk to the app's own service, close: both sides see it. */
static void test_tcp_client_round_trip(void **state)
{
	vireo_tcp_out cl;
	vireo_tcp c;
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT);
	struct vireo_tcp_stats st;

	memset(&oc, 0, sizeof oc);
	oc_allow("192.168.7.0/24,fd00::/64");
	assert_int_equal(vireo_tcp_listen(&tcp_svc), 0);
	assert_int_equal(vireo_tcp_client(&oc_cfg, &cl), 0);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	assert_int_not_equal(c.id, 0);
	/* Not yet connected: nothing to send to, no peer. */
	assert_int_equal(vireo_tcp_send(c, "x", 1), -ENOTCONN);
	assert_int_equal(vireo_tcp_peer(c, &a), -ENOTCONN);
	run_ms(100);
	assert_int_equal(oc.connected, 1);
	assert_int_equal(t.accepts, 1);
	assert_int_equal(vireo_tcp_peer(c, &a), 0);
	assert_int_equal(a.port, TCP_SVC_PORT);
	assert_int_equal(vireo_tcp_send(c, "hello\n", 6), 6);
	run_ms(100);
	assert_int_equal(oc.len, 6);
	assert_memory_equal(oc.buf, "HELLO\n", 6);
	/* The service closes on "quit": the client hears the FIN, closes. */
	assert_int_equal(vireo_tcp_send(c, "quit", 4), 4);
	run_ms(200);
	assert_int_equal(oc.eofs, 1);
	assert_int_equal(oc.closes, 1);
	assert_ptr_equal(oc.ctx_seen, &oc);
	assert_int_equal(t.closes, 1);
	/* The same over IPv6. */
	a = oc_addr(V6, TCP_SVC_PORT);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	run_ms(100);
	assert_int_equal(oc.connected, 2);
	assert_int_equal(vireo_tcp_send(c, "v6\n", 3), 3);
	run_ms(100);
	assert_memory_equal(oc.buf + 6, "V6\n", 3);
	assert_int_equal(vireo_tcp_close(c), 0);
	run_ms(200);
	assert_int_equal(oc.closes, 2);
	assert_int_equal(vireo_tcp_client_stats(cl, &st), 0);
	assert_int_equal(st.connected, 2);
	assert_int_equal(st.active, 0);
	assert_int_equal(st.tx_bytes, 6 + 4 + 3);
	assert_int_equal(st.rx_bytes, 6 + 3);
	oc_allow(NULL);
}

/* vireo_tcp_shutdown(): the peer gets our bytes and our FIN, and its
 * bytes sent after it still come (on_recv, then on_eof); sends refused. */
static void test_tcp_client_half_close(void **state)
{
	vireo_tcp_out cl;
	vireo_tcp c;
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 102);
	size_t i;

	memset(&oc, 0, sizeof oc);
	oc_allow("192.168.7.2");
	srv_start(TCP_SVC_PORT + 102, 0);
	srv.on_fin = 20000;
	assert_int_equal(vireo_tcp_client(&oc_cfg, &cl), 0);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	assert_int_equal(vireo_tcp_shutdown(c), -EPIPE);	/* not connected yet */
	run_ms(200);
	assert_int_equal(oc.connected, 1);
	assert_int_equal(vireo_tcp_send(c, "abc", 3), 3);
	assert_int_equal(vireo_tcp_shutdown(c), 0);
	assert_int_equal(vireo_tcp_send(c, "d", 1), -EPIPE);
	for (i = 0; i < 100 && oc.len < 20000; i++)
		run_ms(50);
	assert_true(srv.fin_seen);
	assert_int_equal(srv.got, 3);
	assert_int_equal(oc.len, 20000);
	for (i = 0; i < 20000; i++)
		if (oc.buf[i] != stream_byte(i))
			fail_msg("byte %zu differs", i);
	run_ms(200);
	assert_int_equal(oc.eofs, 1);	/* the peer's FIN after its bytes; on_eof closed */
	assert_int_equal(oc.closes, 1);
	srv_stop();
	oc_allow(NULL);
}

/* Refused by the peer, by the policy (no packet, logged, counted), by the
 * deadline, by the caps; the app's abort while connecting. */
static void test_tcp_client_failures(void **state)
{
	vireo_tcp_out cl, bad;
	vireo_tcp c, c2, c3;
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 77);	/* nobody listens */
	struct vireo_addr meta = { .family = VIREO_AF_INET, .ip = { 169, 254, 169, 254 }, .port = 80 };
	struct vireo_addr lo6 = { .family = VIREO_AF_INET6, .ip = { [15] = 1 }, .port = 80 };
	struct vireo_addr nohost = { .family = VIREO_AF_INET, .ip = { 192, 168, 7, 9 }, .port = 80 };
	struct vireo_tcp_stats st;
	struct client m;
	struct resp r;
	char *body;
	u32 segs;

	memset(&oc, 0, sizeof oc);
	oc_allow("192.168.7.0/24");
	assert_int_equal(vireo_tcp_client(&oc_cfg, &cl), 0);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	run_ms(100);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_REFUSED], 1);
	assert_ptr_equal(oc.ctx_seen, &oc);
	/* The policy: the appliance's own address once the list is empty,
	 * the metadata service, IPv6 loopback. No segment leaves. */
	oc_allow(NULL);
	segs = lwip_stats.tcp.xmit;
	a = oc_addr(V4, TCP_SVC_PORT);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_POLICY], 0);	/* never inside the call */
	run_ms(10);
	assert_int_equal(vireo_tcp_connect(cl, &meta, &oc, &c), 0);
	assert_int_equal(vireo_tcp_connect(cl, &lo6, &oc, &c2), 0);
	run_ms(10);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_POLICY], 3);
	assert_int_equal(lwip_stats.tcp.xmit, segs);
	assert_true(hk_log_contains("169.254.169.254 port 80 is link-local: refused by the egress policy"));
	assert_true(hk_log_contains("::1 port 80 is loopback: refused by the egress policy"));
	/* The deadline: a host that never answers (its ARP neither). */
	oc_allow("192.168.7.0/24");
	assert_int_equal(vireo_tcp_connect(cl, &nohost, &oc, &c), 0);
	run_ms(900);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_TIMEOUT], 0);
	run_ms(700);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_TIMEOUT], 1);
	/* The client's cap (2), then the app's abort while connecting. */
	assert_int_equal(vireo_tcp_connect(cl, &nohost, &oc, &c), 0);
	assert_int_equal(vireo_tcp_connect(cl, &nohost, &oc, &c2), 0);
	assert_int_equal(vireo_tcp_connect(cl, &nohost, &oc, &c3), -ENOSPC);
	assert_int_equal(c3.id, 0);
	assert_int_equal(vireo_tcp_abort(c), 0);
	assert_int_equal(vireo_tcp_close(c2), 0);
	run_ms(10);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_ABORTED], 2);
	assert_int_equal(oc.connected, 0);
	assert_int_equal(oc.closes, 0);
	/* No route (the link down): unreachable, from the loop. */
	netif_set_link_down(&nif);
	assert_int_equal(vireo_tcp_connect(cl, &nohost, &oc, &c), 0);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_UNREACHABLE], 0);
	run_ms(10);
	assert_int_equal(oc.fails[VIREO_TCP_FAIL_UNREACHABLE], 1);
	netif_set_link_up(&nif);
	run_ms(100);
	/* An IPv4-mapped IPv6 address is judged as the IPv4 one it carries. */
	oc_allow(NULL);
	{
		struct vireo_addr m6 = { .family = VIREO_AF_INET6,
					 .ip = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 }, .port = 80 };

		assert_int_equal(vireo_tcp_connect(cl, &m6, &oc, &c), 0);
		run_ms(10);
		assert_int_equal(oc.fails[VIREO_TCP_FAIL_POLICY], 4);
	}
	/* Misuse. */
	assert_int_equal(vireo_tcp_connect((vireo_tcp_out){ 99 }, &nohost, &oc, &c), -EINVAL);
	nohost.port = 0;
	assert_int_equal(vireo_tcp_connect(cl, &nohost, &oc, &c), -EINVAL);
	assert_int_equal(vireo_tcp_client(&(struct vireo_tcp_client){ .name = "x", .on_recv = oc_recv,
								      .max_conns = VIREO_TCP_OUT_MAX + 1 }, &bad),
			 -EINVAL);
	assert_int_equal(vireo_tcp_client_stats(cl, &st), 0);
	assert_int_equal(st.failed_refused, 1);
	assert_int_equal(st.failed_policy, 4);
	assert_int_equal(st.failed_timeout, 1);
	assert_int_equal(st.failed_unreachable, 1);
	assert_int_equal(st.failed_aborted, 2);
	assert_int_equal(st.refused, 1);
	assert_int_equal(st.active, 0);
	assert_string_equal(vireo_tcp_fail_str(VIREO_TCP_FAIL_POLICY), "policy");
	/* On /metrics. */
	get(&m, "GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n", &r, false);
	assert_int_equal(r.status, 200);
	body = strndup((const char *)r.body, r.body_len);
	assert_non_null(strstr(body, "vireo_app_tcp_out_failures_total{client=\"up\",reason=\"policy\"} 4\n"));
	assert_non_null(strstr(body, "vireo_app_tcp_out_failures_total{client=\"up\",reason=\"timeout\"} 1\n"));
	assert_non_null(strstr(body, "vireo_app_tcp_out_refused_total{client=\"up\"} 1\n"));
	assert_non_null(strstr(body, "vireo_app_tcp_out_connections_active{client=\"up\"} 0\n"));
	free(body);
	cl_close(&m);
	oc_allow(NULL);
}

/* The accepted side's contract: a held receive closes the peer's window at
 * VIREO_TCP_RXBUF, recv_again hands it over; sends stop at
 * VIREO_TCP_INFLIGHT unacknowledged and on_writable says when to go on. */
static void test_tcp_client_back_pressure(void **state)
{
	vireo_tcp_out cl;
	vireo_tcp c;
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 100);
	static u8 lots[20000];
	size_t i, sent = 0;
	int n;

	memset(&oc, 0, sizeof oc);
	oc_allow("192.168.7.2");
	srv_start(TCP_SVC_PORT + 100, sizeof lots);
	srv.hold = true;
	oc.hold = true;
	assert_int_equal(vireo_tcp_client(&oc_cfg, &cl), 0);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	run_ms(500);
	assert_int_equal(oc.connected, 1);
	assert_int_equal(oc.len, 0);
	assert_true(srv.sent > VIREO_TCP_RXBUF);
	assert_non_null(srv.conn);
	assert_true(srv.conn->unacked || srv.conn->unsent);	/* the window closed */
	assert_true(srv.conn->snd_wnd == 0);
	/* Sends: the in-flight bound, then more once acknowledged. */
	memset(lots, 'q', sizeof lots);
	n = vireo_tcp_send(c, lots, sizeof lots);
	assert_int_equal(n, VIREO_TCP_INFLIGHT);
	sent = (size_t)n;
	assert_int_equal(vireo_tcp_send(c, lots, sizeof lots), 0);
	srv.hold = false;
	for (i = 0; i < 100 && sent < sizeof lots; i++) {
		run_ms(50);
		n = vireo_tcp_send(c, lots + sent, sizeof lots - sent);
		assert_true(n >= 0 && n <= VIREO_TCP_INFLIGHT);
		sent += (size_t)n;
	}
	assert_int_equal(sent, sizeof lots);
	assert_true(oc.writable >= 1);
	oc.hold = false;
	assert_int_equal(vireo_tcp_recv_again(c), 0);
	for (i = 0; i < 100 && oc.len < sizeof lots; i++)
		run_ms(50);
	assert_int_equal(oc.len, sizeof lots);
	for (i = 0; i < sizeof lots; i++)
		if (oc.buf[i] != stream_byte(i))
			fail_msg("byte %zu differs", i);
	assert_int_equal(srv.got, sizeof lots);
	assert_int_equal(vireo_tcp_close(c), 0);
	run_ms(200);
	assert_int_equal(oc.closes, 1);
	srv_stop();
	oc_allow(NULL);
}

/* A bulk client (downloads): a held receive lets the peer fill exactly
 * VIREO_TCP_BULK_RXBUF, 8 x a plain connection's window, then closes it;
 * every byte arrives in order once taken; sends keep VIREO_TCP_INFLIGHT. */
static struct {
	size_t len;
	bool hold;
} ob;

static size_t ob_recv(vireo_tcp c, const void *data, size_t len, void *arg)
{
	const u8 *d = data;

	if (ob.hold)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (d[i] != stream_byte(ob.len + i))
			fail_msg("byte %zu differs", ob.len + i);
	ob.len += len;
	return len;
}

static void test_tcp_client_bulk_window(void **state)
{
	struct vireo_tcp_client cfg = oc_cfg;
	vireo_tcp_out cl;
	vireo_tcp c;
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 101);
	struct vireo_tcp_stats st;
	static u8 lots[20000];
	size_t i;

	memset(&oc, 0, sizeof oc);
	memset(&ob, 0, sizeof ob);
	oc_allow("192.168.7.2");
	srv_start(TCP_SVC_PORT + 101, 200000);
	srv.hold = true;
	ob.hold = true;
	cfg.name = "bulk";
	cfg.bulk = true;
	cfg.on_recv = ob_recv;
	assert_int_equal(vireo_tcp_client(&cfg, &cl), 0);
	assert_int_equal(vireo_tcp_connect(cl, &a, &oc, &c), 0);
	run_ms(500);
	assert_int_equal(oc.connected, 1);
	assert_int_equal(ob.len, 0);
	/* The peer filled the bulk window and no more: held, its window shut. */
	assert_int_equal(vireo_tcp_client_stats(cl, &st), 0);
	assert_int_equal(st.rx_bytes, VIREO_TCP_BULK_RXBUF);
	assert_true(VIREO_TCP_BULK_RXBUF >= 8 * TCP_WND);
	assert_true(srv.sent > VIREO_TCP_BULK_RXBUF);
	assert_true(srv.conn->snd_wnd == 0);
	/* Sends: still the app's bound. */
	memset(lots, 'q', sizeof lots);
	assert_int_equal(vireo_tcp_send(c, lots, sizeof lots), VIREO_TCP_INFLIGHT);
	ob.hold = false;
	assert_int_equal(vireo_tcp_recv_again(c), 0);
	for (i = 0; i < 200 && ob.len < 200000; i++)
		run_ms(50);
	assert_int_equal(ob.len, 200000);
	assert_int_equal(vireo_tcp_close(c), 0);
	run_ms(200);
	assert_int_equal(oc.closes, 1);
	srv_stop();
	oc_allow(NULL);
}

/* ---- HTTP client ---- */

/* A raw lwIP HTTP server: answers each request head with hs.resp (unless
 * silent), as fast as its send buffer allows. */
static struct {
	struct tcp_pcb *listen, *conn;
	const u8 *resp;
	size_t resp_len, sent;
	unsigned accepts, requests;
	bool silent;
	char req[1024];
	size_t req_len;
	size_t body_need, body_got;	/* a request body to read before answering */
	bool in_body;
	bool close_after;		/* close once the answer is sent (close-delimited) */
} hs;

static void hs_push(void)
{
	while (hs.conn && hs.sent < hs.resp_len) {
		size_t k = MIN(MIN((size_t)tcp_sndbuf(hs.conn), hs.resp_len - hs.sent), (size_t)1000);

		if (!k || tcp_write(hs.conn, hs.resp + hs.sent, (u16_t)k, TCP_WRITE_FLAG_COPY) != ERR_OK)
			break;
		hs.sent += k;
	}
	if (hs.conn)
		tcp_output(hs.conn);
	if (hs.conn && hs.close_after && hs.sent == hs.resp_len) {
		struct tcp_pcb *pcb = hs.conn;

		tcp_recv(pcb, NULL);
		tcp_sent(pcb, NULL);
		tcp_err(pcb, NULL);
		hs.conn = NULL;
		tcp_close(pcb);
	}
}

static err_t hs_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	hs_push();
	return ERR_OK;
}

static err_t hs_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	size_t n, prev;

	if (!p) {
		tcp_recv(pcb, NULL);
		tcp_sent(pcb, NULL);
		tcp_err(pcb, NULL);
		hs.conn = NULL;
		tcp_close(pcb);
		return ERR_OK;
	}
	tcp_recved(pcb, p->tot_len);
	if (hs.in_body) {
		hs.body_got += p->tot_len;
		pbuf_free(p);
		if (hs.body_got >= hs.body_need) {
			hs.in_body = false;
			hs.sent = 0;
			hs_push();
		}
		return ERR_OK;
	}
	n = MIN((size_t)p->tot_len, sizeof hs.req - 1 - hs.req_len);
	pbuf_copy_partial(p, hs.req + hs.req_len, (u16_t)n, 0);
	prev = hs.req_len;
	hs.req_len += n;
	hs.req[hs.req_len] = '\0';
	if (strstr(hs.req, "\r\n\r\n")) {
		/* the pbuf's bytes after the head are body */
		hs.requests++;
		hs.body_got = p->tot_len - (size_t)(strstr(hs.req, "\r\n\r\n") + 4 - hs.req - prev);
		hs.req_len = 0;
		pbuf_free(p);
		if (hs.body_got < hs.body_need) {
			hs.in_body = true;
			return ERR_OK;
		}
		if (!hs.silent) {
			hs.sent = 0;
			hs_push();
		}
		return ERR_OK;
	}
	pbuf_free(p);
	return ERR_OK;
}

static void hs_err(void *arg, err_t err)
{
	hs.conn = NULL;
}

static err_t hs_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	hs.conn = pcb;
	hs.accepts++;
	tcp_recv(pcb, hs_recv);
	tcp_sent(pcb, hs_sent);
	tcp_err(pcb, hs_err);
	return ERR_OK;
}

static struct {
	unsigned heads, done;
	int err, status;
	bool hold;
	size_t len;
	u8 body[70000];
} hcl;

static void hcl_head(vireo_http_call h, const struct vireo_http_response *r, void *ctx)
{
	hcl.heads++;
	hcl.status = r->status;
	assert_true(r->chunked);
	assert_string_equal(vireo_http_header(h, "transfer-encoding"), "chunked");
}

static size_t hcl_body(vireo_http_call h, const void *data, size_t len, void *ctx)
{
	if (hcl.hold)
		return 0;
	assert_true(hcl.len + len <= sizeof hcl.body);
	memcpy(hcl.body + hcl.len, data, len);
	hcl.len += len;
	return len;
}

static void hcl_done(vireo_http_call h, int err, void *ctx)
{
	hcl.done++;
	hcl.err = err;
}

/* A chunked body streamed with back-pressure (held past the body
 * timeout: not counted while held), the connection kept and reused, a
 * silent upstream timed out at the head, requests refused. */
static void test_http_client(void **state)
{
	static u8 resp[70000];
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 200);
	struct vireo_http_stats st;
	struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
	char host[VIREO_ADDR_STRLEN];
	vireo_http_pool pool;
	vireo_http_call h;
	size_t n, i, body = 0;
	struct vireo_http_request rq = { .method = "GET", .target = "/big", .on_head = hcl_head,
					 .on_body = hcl_body, .on_done = hcl_done };

	memset(&hs, 0, sizeof hs);
	memset(&hcl, 0, sizeof hcl);
	assert_int_equal(tcp_bind(pcb, IP_ANY_TYPE, a.port), ERR_OK);
	hs.listen = tcp_listen(pcb);
	tcp_accept(hs.listen, hs_accept);
	n = (size_t)snprintf((char *)resp, sizeof resp, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	/* past the connection's bulk window (VIREO_TCP_BULK_RXBUF): held back */
	for (int k = 0; k < 60; k++) {
		n += (size_t)snprintf((char *)resp + n, sizeof resp - n, "3e8\r\n");
		for (i = 0; i < 1000; i++)
			resp[n++] = stream_byte(body++);
		memcpy(resp + n, "\r\n", 2);
		n += 2;
	}
	n += (size_t)snprintf((char *)resp + n, sizeof resp - n, "0\r\n\r\n");
	hs.resp = resp;
	hs.resp_len = n;

	oc_allow("192.168.7.2");
	vireo_addr_str(&a, host, sizeof host);
	assert_int_equal(vireo_http_pool_new(&(struct vireo_http_pool_cfg){ .name = "hc", .host = host, .port = a.port,
									 .head_timeout_ms = 1000, .body_timeout_ms = 1000 },
					     &pool),
			 0);
	hcl.hold = true;
	assert_int_equal(vireo_http_request(pool, &rq, &h), 0);
	run_ms(500);
	assert_int_equal(hcl.heads, 1);
	assert_int_equal(hcl.status, 200);
	assert_int_equal(hcl.len, 0);
	assert_non_null(hs.conn);
	assert_true(hs.conn->snd_wnd == 0);	/* the window closed: the upstream waits */
	run_ms(2500);				/* past the body timeout, held */
	assert_int_equal(hcl.done, 0);
	hcl.hold = false;
	assert_int_equal(vireo_http_resume(h), 0);
	for (i = 0; i < 100 && !hcl.done; i++)
		run_ms(50);
	assert_int_equal(hcl.done, 1);
	assert_int_equal(hcl.err, 0);
	assert_int_equal(hcl.len, body);
	for (i = 0; i < body; i++)
		if (hcl.body[i] != stream_byte(i))
			fail_msg("byte %zu differs", i);
	/* again: the same connection */
	memset(&hcl, 0, sizeof hcl);
	assert_int_equal(vireo_http_request(pool, &rq, &h), 0);
	for (i = 0; i < 100 && !hcl.done; i++)
		run_ms(50);
	assert_int_equal(hcl.err, 0);
	assert_int_equal(hcl.len, body);
	assert_int_equal(hs.accepts, 1);
	/* a silent upstream: the head's deadline */
	memset(&hcl, 0, sizeof hcl);
	hs.silent = true;
	assert_int_equal(vireo_http_request(pool, &rq, &h), 0);
	run_ms(900);
	assert_int_equal(hcl.done, 0);
	run_ms(700);
	assert_int_equal(hcl.done, 1);
	assert_int_equal(hcl.err, -VIREO_HTTP_ETIMEOUT);
	assert_string_equal(vireo_http_err_str(hcl.err), "timeout");
	assert_int_equal(vireo_http_pool_stats(pool, &st), 0);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.reused, 2);
	assert_int_equal(st.connections, 1);
	assert_int_equal(st.failed[VIREO_HTTP_ETIMEOUT - 1], 1);
	assert_int_equal(hs.requests, 3);
	/* refused at once: header injection, our own fields, a bad method or target */
	rq.headers = "X: a\r\nb";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.headers = "Host: elsewhere\r\n";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.headers = "Transfer-Encoding: chunked\r\n";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.headers = NULL;
	rq.method = "G T";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.method = "GET";
	rq.target = "/a b";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.target = "http://x/";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	if (hs.conn) {
		tcp_recv(hs.conn, NULL);
		tcp_sent(hs.conn, NULL);
		tcp_err(hs.conn, NULL);
		tcp_abort(hs.conn);
	}
	tcp_close(hs.listen);
	oc_allow(NULL);
}

/* A response's fields in order (vireo_http_field), and a request's own
 * Host (rq.host) instead of the pool's. */
static char hfl_fields[128];

static void hfl_head(vireo_http_call h, const struct vireo_http_response *r, void *ctx)
{
	const char *name, *value;
	size_t nl, w = 0;
	unsigned i;

	for (i = 0; vireo_http_field(h, i, &name, &nl, &value) == 0; i++)
		w += (size_t)snprintf(hfl_fields + w, sizeof hfl_fields - w, "%.*s=%s;", (int)nl, name, value);
	assert_int_equal(vireo_http_field(h, i, &name, &nl, &value), -ENOENT);
	assert_int_equal(vireo_http_field(h, 0, &name, NULL, &value), -ENOENT);
	hcl.heads++;
	hcl.status = r->status;
}

static void test_http_client_fields(void **state)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nX-A: 1\r\nSet-Cookie: a\r\nset-cookie:  b \r\n"
				 "Content-Length: 2\r\n\r\nok";
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 202);
	struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
	char host[VIREO_ADDR_STRLEN], longhost[300];
	const char *name, *value;
	size_t nl;
	vireo_http_pool pool;
	vireo_http_call h;
	struct vireo_http_request rq = { .method = "GET", .target = "/f", .host = "site.example:8080",
					 .on_head = hfl_head, .on_done = hcl_done };

	memset(&hs, 0, sizeof hs);
	memset(&hcl, 0, sizeof hcl);
	hfl_fields[0] = '\0';
	assert_int_equal(tcp_bind(pcb, IP_ANY_TYPE, a.port), ERR_OK);
	hs.listen = tcp_listen(pcb);
	tcp_accept(hs.listen, hs_accept);
	hs.resp = (const u8 *)ok;
	hs.resp_len = sizeof ok - 1;
	oc_allow("192.168.7.2");
	vireo_addr_str(&a, host, sizeof host);
	assert_int_equal(vireo_http_pool_new(&(struct vireo_http_pool_cfg){ .name = "hfl", .host = host, .port = a.port },
					     &pool),
			 0);
	assert_int_equal(vireo_http_request(pool, &rq, &h), 0);
	assert_int_equal(vireo_http_field(h, 0, &name, &nl, &value), -ENOENT);	/* no head yet */
	for (int i = 0; i < 100 && !hcl.done; i++)
		run_ms(50);
	assert_int_equal(hcl.done, 1);
	assert_int_equal(hcl.err, 0);
	assert_string_equal(hfl_fields, "X-A=1;Set-Cookie=a;set-cookie=b;Content-Length=2;");
	assert_non_null(strstr(hs.req, "GET /f HTTP/1.1\r\nHost: site.example:8080\r\n"));
	assert_int_equal(vireo_http_field(h, 0, &name, &nl, &value), -ENOENT);	/* stale */
	/* a Host with a space or control byte, empty, or too long: refused */
	rq.host = "a b";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.host = "a\r\nX: 1";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	rq.host = "";
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	memset(longhost, 'h', 254);
	longhost[254] = '\0';
	rq.host = longhost;
	assert_int_equal(vireo_http_request(pool, &rq, &h), -EINVAL);
	longhost[253] = '\0';
	memset(&hcl, 0, sizeof hcl);
	assert_int_equal(vireo_http_request(pool, &rq, &h), 0);
	for (int i = 0; i < 100 && !hcl.done; i++)
		run_ms(50);
	assert_int_equal(hcl.err, 0);
	if (hs.conn) {
		tcp_recv(hs.conn, NULL);
		tcp_sent(hs.conn, NULL);
		tcp_err(hs.conn, NULL);
		tcp_abort(hs.conn);
	}
	tcp_close(hs.listen);
	oc_allow(NULL);
}

/* A streamed request body: written as on_writable allows, the upstream
 * answers once it has all of it; the whole-body fetch of the answer. */
static struct {
	vireo_http_call h;
	size_t written, total;
	unsigned writable;
} hst;

static void hst_writable(vireo_http_call h, void *ctx)
{
	static u8 chunk[1500];
	int n;

	hst.writable++;
	memset(chunk, 'w', sizeof chunk);
	while (hst.written < hst.total) {
		n = vireo_http_write(h, chunk, MIN(sizeof chunk, hst.total - hst.written));
		assert_true(n >= 0);
		if (!n)
			return;	/* on_writable follows */
		hst.written += (size_t)n;
	}
}

static struct {
	unsigned n;
	int err, status;
	size_t len;
	char body[64];
} hf;

static void hf_done(void *ctx, int err, int status, const void *body, size_t len)
{
	hf.n++;
	hf.err = err;
	hf.status = status;
	hf.len = len;
	if (len)
		memcpy(hf.body, body, MIN(len, sizeof hf.body));
}

static void test_http_client_stream(void **state)
{
	static const char ok[] = "HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\nstored!";
	struct vireo_addr a = oc_addr(V4, TCP_SVC_PORT + 201);
	struct tcp_pcb *pcb = tcp_new_ip_type(IPADDR_TYPE_ANY);
	char host[VIREO_ADDR_STRLEN];
	vireo_http_pool pool;
	size_t i;

	memset(&hs, 0, sizeof hs);
	memset(&hcl, 0, sizeof hcl);
	memset(&hst, 0, sizeof hst);
	memset(&hf, 0, sizeof hf);
	assert_int_equal(tcp_bind(pcb, IP_ANY_TYPE, a.port), ERR_OK);
	hs.listen = tcp_listen(pcb);
	tcp_accept(hs.listen, hs_accept);
	hs.resp = (const u8 *)ok;
	hs.resp_len = sizeof ok - 1;
	hst.total = hs.body_need = 20000;
	oc_allow("192.168.7.2");
	vireo_addr_str(&a, host, sizeof host);
	assert_int_equal(vireo_http_pool_new(&(struct vireo_http_pool_cfg){ .name = "hs", .host = host, .port = a.port },
					     &pool),
			 0);
	assert_int_equal(vireo_http_request(pool,
					    &(struct vireo_http_request){ .method = "PUT", .target = "/up",
									  .body_stream = true, .body_len = hst.total,
									  .on_writable = hst_writable,
									  .on_done = hcl_done },
					    &hst.h),
			 0);
	/* nothing to write to before the connection */
	assert_int_equal(vireo_http_write(hst.h, "x", 1), -EAGAIN);
	for (i = 0; i < 200 && !hcl.done; i++)
		run_ms(50);
	assert_int_equal(hcl.done, 1);
	assert_int_equal(hcl.err, 0);
	assert_int_equal(hst.written, hst.total);
	assert_true(hst.writable > 1);	/* past the send bound: room came back */
	assert_int_equal(hs.body_got, hst.total);
	assert_non_null(strstr(hs.req, "Content-Length: 20000\r\n"));
	/* the answer whole, on the same connection */
	hs.body_need = 0;
	assert_int_equal(vireo_http_fetch(pool, &(struct vireo_http_request){ .method = "GET", .target = "/" }, 64,
					  hf_done, NULL),
			 0);
	for (i = 0; i < 100 && !hf.n; i++)
		run_ms(50);
	assert_int_equal(hf.n, 1);
	assert_int_equal(hf.err, 0);
	assert_int_equal(hf.status, 201);
	assert_int_equal(hf.len, 7);
	assert_memory_equal(hf.body, "stored!", 7);
	assert_int_equal(hs.accepts, 1);
	/* a body over the fetch's cap */
	assert_int_equal(vireo_http_fetch(pool, &(struct vireo_http_request){ .method = "GET", .target = "/" }, 6,
					  hf_done, NULL),
			 0);
	for (i = 0; i < 100 && hf.n < 2; i++)
		run_ms(50);
	assert_int_equal(hf.n, 2);
	assert_int_equal(hf.err, -VIREO_HTTP_ETOO_LARGE);
	/* a close-delimited body held by the app when the FIN comes: whole
	 * after the resume, and ended by that FIN */
	{
		static const char old[] = "HTTP/1.0 200 OK\r\n\r\nuntil the upstream closes";
		vireo_http_call h;

		memset(&hcl, 0, sizeof hcl);
		hs.resp = (const u8 *)old;
		hs.resp_len = sizeof old - 1;
		hs.close_after = true;
		hcl.hold = true;
		assert_int_equal(vireo_http_request(pool,
						    &(struct vireo_http_request){ .method = "GET", .target = "/old",
										  .on_body = hcl_body,
										  .on_done = hcl_done },
						    &h),
				 0);
		run_ms(500);
		assert_int_equal(hcl.done, 0);
		assert_null(hs.conn);	/* the upstream closed */
		hcl.hold = false;
		assert_int_equal(vireo_http_resume(h), 0);
		for (i = 0; i < 100 && !hcl.done; i++)
			run_ms(50);
		assert_int_equal(hcl.done, 1);
		assert_int_equal(hcl.err, 0);
		assert_int_equal(hcl.len, strlen("until the upstream closes"));
		assert_memory_equal(hcl.body, "until the upstream closes", hcl.len);
	}
	if (hs.conn) {
		tcp_recv(hs.conn, NULL);
		tcp_sent(hs.conn, NULL);
		tcp_err(hs.conn, NULL);
		tcp_abort(hs.conn);
	}
	tcp_close(hs.listen);
	oc_allow(NULL);
}

/* ---- UDP service ---- */

static struct {
	unsigned n;
	char last[64];
} udp_client;

static void udp_client_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	size_t n = MIN((size_t)p->tot_len, sizeof udp_client.last - 1);

	pbuf_copy_partial(p, udp_client.last, (u16_t)n, 0);
	udp_client.last[n] = '\0';
	udp_client.n++;
	pbuf_free(p);
}

static void udp_send_len(struct udp_pcb *pcb, bool v6, size_t len, u16 port)
{
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);

	assert_non_null(p);
	memset(p->payload, 'u', len);
	assert_int_equal(udp_sendto(pcb, p, v6 ? &addr6 : &addr4, port), ERR_OK);
	pbuf_free(p);
	run_ms(50);
}

static void test_udp_service(void **state)
{
	struct udp_pcb *cl4 = udp_new_ip_type(IPADDR_TYPE_V4), *cl6 = udp_new_ip_type(IPADDR_TYPE_V6);
	vireo_udp u;

	memset(&udp_client, 0, sizeof udp_client);
	assert_int_equal(vireo_udp_bind(&(struct vireo_udp_service){ .name = "q", .port = UDP_SVC_PORT,
								     .max_datagram = 1000, .on_recv = udp_recv_cb },
					&u), 0);
	assert_int_not_equal(u.id, 0);
	assert_int_equal(vireo_udp_bind(&(struct vireo_udp_service){ .name = "q2", .port = UDP_SVC_PORT,
								     .on_recv = udp_recv_cb }, NULL), -EEXIST);
	assert_int_equal(udp_bind(cl4, IP4_ADDR_ANY, 40001), ERR_OK);
	assert_int_equal(udp_bind(cl6, IP6_ADDR_ANY, 40002), ERR_OK);
	udp_recv(cl4, udp_client_recv, NULL);
	udp_recv(cl6, udp_client_recv, NULL);
	udp_send_len(cl4, V4, 1000, UDP_SVC_PORT);
	assert_int_equal(udp_client.n, 1);
	assert_string_equal(udp_client.last, "got 1000");
	assert_int_equal(t.udp_src.family, VIREO_AF_INET);
	assert_int_equal(t.udp_src.port, 40001);
	udp_send_len(cl6, V6, 12, UDP_SVC_PORT);
	assert_int_equal(udp_client.n, 2);
	assert_int_equal(t.udp_src.family, VIREO_AF_INET6);
	{
		char s[VIREO_ADDR_STRLEN];

		assert_int_equal(vireo_addr_str(&t.udp_src, s, sizeof s), 7);
		assert_string_equal(s, "fd00::2");
	}
	/* Over max_datagram: dropped, never seen by the app. */
	udp_send_len(cl4, V4, 1001, UDP_SVC_PORT);
	assert_int_equal(t.udp_in, 2);
	assert_int_equal(udp_client.n, 2);
	{
		struct vireo_udp_stats st;

		assert_int_equal(vireo_udp_stats(u, &st), 0);
		assert_int_equal(st.datagrams, 2);
		assert_int_equal(st.bytes, 1012);
		assert_int_equal(st.dropped_size, 1);
		assert_int_equal(st.sent, 2);
		assert_int_equal(vireo_udp_stats((vireo_udp){ 99 }, &st), -EPIPE);
	}
	udp_remove(cl4);
	udp_remove(cl6);
}

/* A datagram from a port some service answers on (chargen's 19 here) gets
 * no answer by default: it is how a spoofed source starts a loop between
 * two services that each answer anything. Counted, by reason; a service
 * that opts out answers it. */
static void udp_send_from(u16 from, u16 to)
{
	struct udp_pcb *pcb = udp_new_ip_type(IPADDR_TYPE_V4);
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, 4, PBUF_RAM);

	assert_non_null(pcb);
	assert_non_null(p);
	if (udp_bind(pcb, IP4_ADDR_ANY, from) != ERR_OK)
		pcb->local_port = from;	/* a service's own: sends, never hears */
	udp_recv(pcb, udp_client_recv, NULL);
	pbuf_take(p, "loop", 4);
	assert_int_equal(udp_sendto(pcb, p, &addr4, to), ERR_OK);
	pbuf_free(p);
	run_ms(50);
	udp_remove(pcb);
}

static void test_udp_reflection_ports(void **state)
{
	struct vireo_udp_stats st;
	vireo_udp r, open;

	memset(&udp_client, 0, sizeof udp_client);
	assert_int_equal(vireo_udp_bind(&(struct vireo_udp_service){ .name = "r", .port = UDP_REFL_PORT,
								     .on_recv = udp_recv_cb }, &r), 0);
	assert_int_equal(vireo_udp_bind(&(struct vireo_udp_service){ .name = "ro", .port = UDP_REFL_PORT + 1,
								     .flags = VIREO_UDP_ANY_SOURCE_PORT,
								     .on_recv = udp_recv_cb }, &open), 0);
	udp_send_from(19, UDP_REFL_PORT);		/* chargen */
	udp_send_from(1023, UDP_REFL_PORT);		/* the last system port */
	udp_send_from(11211, UDP_REFL_PORT);		/* memcached */
	udp_send_from(UDP_REFL_PORT, UDP_REFL_PORT);	/* another host's same service */
	assert_int_equal(udp_client.n, 0);
	assert_int_equal(vireo_udp_stats(r, &st), 0);
	assert_int_equal(st.datagrams, 0);
	assert_int_equal(st.dropped_service_port, 3);
	assert_int_equal(st.dropped_own_port, 1);
	udp_send_from(1024, UDP_REFL_PORT);		/* the first that is not */
	assert_int_equal(udp_client.n, 1);
	assert_string_equal(udp_client.last, "got 4");
	/* The opt-out answers them all. */
	udp_send_from(19, UDP_REFL_PORT + 1);
	assert_int_equal(udp_client.n, 2);
	assert_int_equal(vireo_udp_stats(open, &st), 0);
	assert_int_equal(st.datagrams, 1);
	assert_int_equal(st.dropped_service_port + st.dropped_own_port, 0);
	assert_int_equal(vireo_udp_bind(&(struct vireo_udp_service){ .name = "rx", .port = UDP_REFL_PORT + 2,
								     .flags = 0x80, .on_recv = udp_recv_cb }, NULL),
			 -EINVAL);	/* an unknown flag */
}

/* ---- metrics ---- */

static void test_metrics(void **state)
{
	struct client c;
	struct resp r;
	char *body;

	t_sizes.count = t_sizes.sum = 0;
	memset(t_sizes.counts, 0, sizeof(u64) * (t_sizes.n + 1));
	vireo_gauge_set(&t_level, -5);
	vireo_histogram_observe(&t_sizes, 10);
	vireo_histogram_observe(&t_sizes, 11);
	get(&c, "GET /metrics HTTP/1.1\r\nHost: h\r\n\r\n", &r, false);
	assert_int_equal(r.status, 200);
	body = strndup((const char *)r.body, r.body_len);
	assert_non_null(strstr(body, "# TYPE t_hits_total counter\nt_hits_total "));
	assert_non_null(strstr(body, "\nt_level -5\n"));
	assert_non_null(strstr(body, "# TYPE t_sizes_bytes histogram\n"));
	assert_non_null(strstr(body, "t_sizes_bytes_bucket{le=\"10\"} 1\n"));
	assert_non_null(strstr(body, "t_sizes_bytes_bucket{le=\"100\"} 2\n"));
	assert_non_null(strstr(body, "t_sizes_bytes_bucket{le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(body, "t_sizes_bytes_sum 21\nt_sizes_bytes_count 2\n"));
	assert_non_null(strstr(body, "t_kinds_total{kind=\"a\"} "));
	assert_null(strstr(body, "vireo_t_bad"));
	assert_non_null(strstr(body, "vireo_app_misuse_total "));
	/* The writer's families, after the declared ones; the refused left out. */
	assert_non_null(strstr(body, "# HELP t_written_total Scrapes seen by the writer.\n"
				     "# TYPE t_written_total counter\nt_written_total "));
	assert_non_null(strstr(body, "# TYPE t_queue gauge\nt_queue{q=\"a\\\"b\"} 3\n"));
	assert_null(strstr(body, "vireo_t_taken"));
	assert_null(strstr(body, "9bad"));
	assert_true(strstr(body, "t_kinds_total") < strstr(body, "t_written_total"));
	assert_true(hk_log_contains("metric vireo_t_taken: vireo_ names are the runtime's: left out of /metrics"));
	free(body);
	cl_close(&c);
}

static void test_config_key(void **state)
{
	/* VIREO_CONFIG_UINT made a cmdline key with its default text. */
	assert_int_equal(t_knob, 7);
}

static void test_addr_str(void **state)
{
	struct vireo_addr a = { .family = VIREO_AF_INET6 };
	char s[VIREO_ADDR_STRLEN];

	a.ip[0] = 0x20, a.ip[1] = 0x01, a.ip[2] = 0x0d, a.ip[3] = 0xb8, a.ip[15] = 1;
	vireo_addr_str(&a, s, sizeof s);
	assert_string_equal(s, "2001:db8::1");
	memset(a.ip, 0, 16);
	vireo_addr_str(&a, s, sizeof s);
	assert_string_equal(s, "::");
	a.ip[5] = 1, a.ip[13] = 2;	/* 0:0:1:0:0:0:2:0: the longer run goes */
	vireo_addr_str(&a, s, sizeof s);
	assert_string_equal(s, "0:0:1::2:0");
	a = (struct vireo_addr){ .family = VIREO_AF_INET, .ip = { 192, 0, 2, 1 } };
	assert_int_equal(vireo_addr_str(&a, s, 9), 0);	/* does not fit */
	assert_string_equal(s, "");
	assert_int_equal(vireo_addr_str(&a, s, sizeof s), 9);
	assert_string_equal(s, "192.0.2.1");
}

/* ---- vireo_resp_send_file ---- */

/* One request (fmt has %s where the route goes) on a fresh connection to
 * /t/file/ and to /t/long/: the same bytes back, head and body. */
static void same_bytes(const char *fmt, bool head_only, int status)
{
	struct client c1, c2;
	struct resp r1, r2;
	char req[512];

	snprintf(req, sizeof req, fmt, "/t/file/");
	get(&c1, req, &r1, head_only || status == 304);
	snprintf(req, sizeof req, fmt, "/t/long/");
	get(&c2, req, &r2, head_only || status == 304);
	assert_int_equal(r1.status, status);
	assert_string_equal(r1.head, r2.head);
	assert_int_equal(r1.body_len, r2.body_len);
	if (r1.body_len)
		assert_memory_equal(r1.body, r2.body, r1.body_len);
	run_ms(100);
	assert_int_equal(c1.len - c1.off, c2.len - c2.off);	/* nothing more on either */
	assert_int_equal(c1.eof, c2.eof);
	cl_close(&c1);
	cl_close(&c2);
}

static void same_bytes_all(const struct site_file *f)
{
	char inm[256], ims[256], date[40];
	u64 now;

	snprintf(inm, sizeof inm, "GET %%sindex.html HTTP/1.1\r\nHost: h\r\nIf-None-Match: W/\"x\", %s\r\n\r\n",
		 f->etag);
	same_bytes("GET %sindex.html HTTP/1.1\r\nHost: h\r\n\r\n", false, 200);
	same_bytes("GET %s HTTP/1.1\r\nHost: h\r\n\r\n", false, 200);
	same_bytes("HEAD %sindex.html HTTP/1.1\r\nHost: h\r\n\r\n", true, 200);
	same_bytes("GET %sindex.html?h=yes HTTP/1.1\r\nHost: h\r\n\r\n", false, 200);
	same_bytes("GET %sindex.html HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", false, 200);
	same_bytes("GET %sindex.html HTTP/1.0\r\n\r\n", false, 200);
	same_bytes(inm, false, 304);
	same_bytes("GET %sindex.html?h=2 HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"nope\"\r\n\r\n", false, 200);
	if (!wallclock_now(&now))
		return;
	/* If-Modified-Since decides without If-None-Match. */
	wallclock_http_date(f->mtime, date, sizeof date);
	snprintf(ims, sizeof ims, "GET %%sindex.html HTTP/1.1\r\nHost: h\r\nIf-Modified-Since: %s\r\n\r\n", date);
	same_bytes(ims, false, 304);
	wallclock_http_date(f->mtime - 1, date, sizeof date);
	snprintf(ims, sizeof ims, "GET %%sindex.html HTTP/1.1\r\nHost: h\r\nIf-Modified-Since: %s\r\n\r\n", date);
	same_bytes(ims, false, 200);
}

static size_t fixed_date(char *buf, size_t size)
{
	return (size_t)snprintf(buf, size, "Sun, 06 Nov 1994 08:49:37 GMT");
}

/* The fast path writes what the long way writes, in every case: with and
 * without Date and Last-Modified, for the baked table's lines and for a
 * table without them (formatted per request). */
static void test_send_file_same_bytes(void **state)
{
	const struct site_file *f = site_lookup("/index.html");
	struct site_file tab[1];
	struct client c;
	struct resp r;

	assert_non_null(f);
	same_bytes_all(f);
	http_set_date_source(fixed_date);
	same_bytes_all(f);
	if (f->mtime >= WALLCLOCK_MIN_S) {	/* built with SOURCE_DATE_EPOCH (make does) */
		assert_int_equal(wallclock_set((f->mtime + 86400) * NSEC_PER_SEC, time_ns()), 0);
		same_bytes_all(f);
		get(&c, "GET /t/file/index.html HTTP/1.1\r\nHost: h\r\n\r\n", &r, false);
		assert_non_null(hdr(&r, "Last-Modified"));
		cl_close(&c);
	}
	tab[0] = *f;
	site_use(tab, 1);
	same_bytes_all(f);
	site_use(NULL, 0);
	http_set_date_source(NULL);
	wallclock_reset();
	/* The file the runtime found is served, whatever the copy says now. */
	get(&c, "GET /t/file/index.html?lie=1 HTTP/1.1\r\nHost: h\r\n\r\n", &r, false);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "ETag"), f->etag);
	assert_string_equal(hdr(&r, "Content-Type"), f->content_type);
	assert_int_equal(r.body_len, f->len);
	assert_memory_equal(r.body, f->data, f->len);
	cl_close(&c);
}

static void test_send_file_misuse(void **state)
{
	struct vireo_file f;
	struct client c;
	struct resp r;

	get(&c, "GET /t/filemisuse HTTP/1.1\r\nHost: h\r\n\r\n", &r, false);
	assert_int_equal(r.status, 200);
	assert_true(hk_log_contains("warning: app API: vireo_resp_send_file: not a file vireo_file_find() found: refused"));
	cl_close(&c);
	assert_true(vireo_file_find("/index.html", &f));
	assert_int_equal(vireo_resp_send_file((vireo_req){ 0 }, &f), -EPIPE);
	assert_int_equal(vireo_resp_send_file((vireo_req){ 12345 }, &f), -EPIPE);
}

/* vireo_esp_file(): a file of EFI/vireo/app/ by name, from the directory
 * table boot/esp.c leaves; every refusal state of the directory. */
static void test_esp_file(void **state)
{
	static struct boot_info bi;
	static struct {
		struct boot_dir_entry tab[BOOT_DIR_MAX_FILES];
		u8 bytes[32];
	} dir;
	struct boot_file *f = &bi.files[BOOT_FILE_APP];
	const void *data;
	size_t len;

	(void)state;
	memset(&bi, 0, sizeof bi);
	api_esp_boot(&bi);
	f->state = BOOT_FILE_NONE;	/* PVH: no ESP */
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -ENOENT);
	f->state = BOOT_FILE_ABSENT;
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -ENOENT);
	f->state = BOOT_FILE_TOO_BIG;
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -EOVERFLOW);
	f->state = BOOT_FILE_TOO_MANY;
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -EOVERFLOW);
	f->state = BOOT_FILE_ERROR;
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -EIO);

	memcpy(dir.bytes, "first...zone-bytes", 18);
	strcpy(dir.tab[0].path, "/a.txt");
	dir.tab[0].off = 0;
	dir.tab[0].len = 5;
	strcpy(dir.tab[1].path, "/zone.bin");
	dir.tab[1].off = 8;
	dir.tab[1].len = 10;
	f->state = BOOT_FILE_OK;
	f->base = (u64)(uintptr_t)&dir;
	f->len = sizeof dir;
	f->dir_max = BOOT_DIR_MAX_FILES;
	f->n = 2;
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), 0);
	assert_int_equal(len, 10);
	assert_memory_equal(data, "zone-bytes", 10);
	assert_int_equal(vireo_esp_file("a.txt", &data, &len), 0);
	assert_int_equal(len, 5);
	assert_int_equal(vireo_esp_file("zone.bi", &data, &len), -ENOENT);	/* whole names only */
	assert_int_equal(vireo_esp_file("zone.bin2", &data, &len), -ENOENT);
	assert_int_equal(vireo_esp_file("/zone.bin", &data, &len), -ENOENT);
	assert_int_equal(vireo_esp_file(NULL, &data, &len), -EIO);
	f->n = BOOT_DIR_MAX_FILES + 1;	/* a table boot/ cannot have left */
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -EIO);
	f->n = 2;
	f->dir_max = BOOT_DIR_MAX_FILES + 1;
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -EIO);
	f->dir_max = BOOT_DIR_MAX_FILES;
	f->len = sizeof dir.tab - 1;	/* shorter than its own table */
	assert_int_equal(vireo_esp_file("zone.bin", &data, &len), -EIO);
}

/* Handles: many more live at once than the table's first 256 slots (each
 * buffer set and HTTPS connection may hold one, and at -m 256 there are
 * 557 sets: the 20,000-connection sweep of make test-capacity answered
 * the rest 503), each finding its own object and no other kind, every one
 * stale once freed, and a slot's next id not the freed one. The table
 * stays grown (its one block). */
static void test_handles_grow(void **state)
{
	enum { N = 3000 };
	static u32 id[N];
	static int obj[N];
	u32 i, live = api_handles_live(), again;

	for (i = 0; i < N; i++) {
		id[i] = api_handle_new(i % 2 ? API_H_REQ : API_H_TCP, &obj[i]);
		assert_int_not_equal(id[i], 0);
	}
	assert_int_equal(api_handles_live(), live + N);
	for (i = 0; i < N; i++) {
		assert_ptr_equal(api_handle_get(i % 2 ? API_H_REQ : API_H_TCP, id[i]), &obj[i]);
		assert_null(api_handle_get(i % 2 ? API_H_TCP : API_H_REQ, id[i]));
	}
	for (i = 0; i < N; i++)
		api_handle_free(id[i]);
	assert_int_equal(api_handles_live(), live);
	for (i = 0; i < N; i++)
		assert_null(api_handle_get(i % 2 ? API_H_REQ : API_H_TCP, id[i]));
	again = api_handle_new(API_H_REQ, &obj[0]);
	assert_int_not_equal(again, 0);
	for (i = 0; i < N; i++)
		assert_int_not_equal(again, id[i]);
	api_handle_free(again);
	api_handle_free(again);	/* stale: nothing */
	assert_int_equal(api_handles_live(), live);
	base_kmem = hk_kmem_live();
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_handles_past_floor),
		T(test_exact_route),
		T(test_prefix_and_404_405),
		T(test_body_round_trip),
		T(test_body_refusals),
		T(test_body_chunked),
		T(test_body_stream),
		T(test_body_stream_refusals),
		T(test_body_source_share),
		T(test_framing_every_route),
		T(test_framing_large_body_closes),
		T(test_framing_pipelined),
		T(test_finish_from_timer),
		T(test_never_answered_and_lost),
		T(test_stream_chunked),
		T(test_stream_declared_length),
		T(test_stream_http10),
		T(test_stream_abort),
		T(test_stream_copy_bulk),
		T(test_stream_slow_reader),
		T(test_stream_direct),
		T(test_misuse_refused),
		T(test_deferred_work_and_timer),
		T(test_tcp_service),
		T(test_tcp_client_round_trip),
		T(test_tcp_client_failures),
		T(test_tcp_client_back_pressure),
		T(test_tcp_client_half_close),
		T(test_tcp_client_bulk_window),
		T(test_http_client),
		T(test_http_client_stream),
		T(test_http_client_fields),
		T(test_udp_service),
		T(test_udp_reflection_ports),
		T(test_metrics),
		T(test_config_key),
		T(test_addr_str),
		T(test_send_file_same_bytes),
		T(test_send_file_misuse),
		cmocka_unit_test(test_esp_file),
		cmocka_unit_test(test_handles_grow),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
