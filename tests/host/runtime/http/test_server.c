/* runtime/http/ (the server in its four files) and metrics.c driven through the real lwIP core:
 * one in-process netif whose output queues IP packets on a "wire" that the
 * test delivers back to ip_input(), raw-API TCP and UDP clients talking to
 * the servers over IPv4 and IPv6, and a fake clock that moves lwIP's timers.
 * After every test all connections must be gone and every lwIP pool, lwIP's
 * heap and the kernel heap shim must be back to where they started. */
/* lwIP's headers first: the port's cc.h defines BYTE_ORDER as lwIP wants, and
 * the C library's later definition, in a system header, passes quietly. */
#define _GNU_SOURCE	/* memmem, asprintf */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/ip_addr.h"
#include "lwip/memp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "lwip/priv/tcp_priv.h"
#include "runtime/api.h"
#include "runtime/conntab.h"
#include "runtime/http/allow.h"
#include "runtime/http/conn.h"
#include "runtime/http/http.h"
#include "lib/metrics.h"
#include "runtime/http/server.h"
#include "runtime/site.h"
#include "kernel/cmdline.h"
#include "lib/linkset.h"
#include "net/port/lwip_port.h"
#include "net/tcp/rxmem.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "tests/host/lwip/lwip_wire.h"
#include "tests/host/shim/hostk.h"

#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>


#define HTTP_PORT 80
#define V4 false
#define V6 true

/* ---- fixtures: baseline, server start, leak checks ---- */

static long base_kmem;	/* kernel heap blocks after the apps started */

static int group_setup(void **state)
{
	assert_int_equal(vireo_lwip_init(), 0);
	site_synth_boot();	/* /64k.bin, as at boot */
	/* As netif_vnet does, for the bulk send grants; no bulk receive
	 * window (test_rxmem and apps/echo's test have those). */
	rxmem_init();
	rxmem_limits.bulk_max = 0;
	wire_netif_up();
	assert_int_equal(api_apps_start(), 0);	/* the static-site app's route */
	base_kmem = hk_kmem_live();
	return 0;
}

static int setup(void **state)
{
	wire_snapshot();
	assert_int_equal(http_server_start(HTTP_PORT, NULL), 0);
	return 0;
}

/* Stop the servers, wait out TIME_WAIT (2 MSL) and check nothing is left. */
static int teardown(void **state)
{
	http_server_set_redirect(0);	/* a failed redirect test leaves no 301 behind */
	http_server_stop();
	run_step(2 * TCP_MSL + 10000, 250);
	wire_check_idle();
	assert_null(wire_head);
	assert_int_equal(hk_kmem_live(), base_kmem);	/* the API's tables stay */
	return 0;
}

static void restart(const struct http_server_cfg *cfg)
{
	http_server_stop();
	assert_int_equal(http_server_start(HTTP_PORT, cfg), 0);
}

static const char *GET_INDEX = "GET / HTTP/1.1\r\nHost: vireo\r\n\r\n";

/* The head the server must send for f, byte for byte. */
static void expect_file_head(const struct resp *r, const struct site_file *f, bool keep)
{
	char want[1024];

	snprintf(want, sizeof want,
		 "HTTP/1.1 200 OK\r\nServer: vireo\r\nContent-Type: %s\r\nContent-Length: %llu\r\n"
		 "Connection: %s\r\nETag: %s\r\nAccept-Ranges: bytes\r\n\r\n",
		 f->content_type, (unsigned long long)f->len, keep ? "keep-alive" : "close", f->etag);
	assert_string_equal(r->head, want);
}

/* ---- HTTP ---- */

static void get_index(bool v6)
{
	const struct site_file *f = site_lookup("/index.html");
	struct client c;
	struct resp r;

	assert_non_null(f);
	cl_open(&c, v6, HTTP_PORT);
	assert_true(c.connected);
	cl_send_str(&c, GET_INDEX);
	assert_true(cl_response(&c, false, &r));
	expect_file_head(&r, f, true);
	assert_int_equal(r.body_len, f->len);
	assert_memory_equal(r.body, f->data, f->len);
	run_ms(200);
	assert_int_equal(c.len, c.off);	/* nothing after the body */
	assert_false(c.eof);
	assert_int_equal(http_server_stats.conns_active, 1);
	cl_close(&c);
	run_ms(100);
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.requests, 1);
	assert_int_equal(http_server_stats.responses[2], 1);
}

static void test_index_v4(void **state)
{
	get_index(V4);
}

static void test_index_v6(void **state)
{
	get_index(V6);
}

static void test_head(void **state)
{
	const struct site_file *f = site_lookup("/index.html");
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "HEAD /index.html HTTP/1.1\r\nHost: vireo\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	expect_file_head(&r, f, true);
	run_ms(200);
	assert_int_equal(c.len, r.head_len);	/* no body */
	cl_close(&c);
}

static void test_not_modified(void **state)
{
	const struct site_file *f = site_lookup("/index.html");
	struct client c;
	struct resp r;
	char req[256];

	cl_open(&c, V4, HTTP_PORT);
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: v\r\nIf-None-Match: W/\"x\", %s\r\n\r\n",
		 f->etag);
	cl_send_str(&c, req);
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 304);
	assert_string_equal(hdr(&r, "ETag"), f->etag);
	assert_null(hdr(&r, "Content-Type"));
	run_ms(100);
	assert_int_equal(c.len, r.head_len);
	/* A different tag: the whole file. */
	cl_send_str(&c, "GET / HTTP/1.1\r\nHost: v\r\nIf-None-Match: \"nope\"\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, f->data, f->len);
	cl_close(&c);
	assert_int_equal(http_server_stats.responses[3], 1);
}

/* Last-Modified once the clock is set (the build's time), If-Modified-Since
 * without If-None-Match. */
static void test_last_modified(void **state)
{
	const struct site_file *f = site_lookup("/index.html");
	struct client c;
	struct resp r;
	char req[256], date[40], early[40];

	if (f->mtime < WALLCLOCK_MIN_S)
		skip();	/* built without SOURCE_DATE_EPOCH */
	wallclock_reset();
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, GET_INDEX);
	assert_true(cl_response(&c, false, &r));
	assert_null(hdr(&r, "Last-Modified"));	/* no clock yet */
	assert_int_equal(wallclock_set((f->mtime + 86400) * NSEC_PER_SEC, time_ns()), 0);
	cl_send_str(&c, GET_INDEX);
	assert_true(cl_response(&c, false, &r));
	wallclock_http_date(f->mtime, date, sizeof date);
	wallclock_http_date(f->mtime - 1, early, sizeof early);
	assert_non_null(hdr(&r, "Last-Modified"));
	assert_string_equal(hdr(&r, "Last-Modified"), date);
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: v\r\nIf-Modified-Since: %s\r\n\r\n", date);
	cl_send_str(&c, req);
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 304);
	assert_string_equal(hdr(&r, "ETag"), f->etag);
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: v\r\nIf-Modified-Since: %s\r\n\r\n", early);
	cl_send_str(&c, req);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	/* If-None-Match decides alone when present */
	snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: v\r\nIf-None-Match: \"x\"\r\nIf-Modified-Since: %s\r\n\r\n",
		 date);
	cl_send_str(&c, req);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	/* a clock behind the file's time: Last-Modified is now, not later */
	assert_int_equal(wallclock_set((f->mtime - 3600) * NSEC_PER_SEC, time_ns()), 0);
	cl_send_str(&c, GET_INDEX);
	assert_true(cl_response(&c, false, &r));
	wallclock_http_date(f->mtime - 3600, date, sizeof date);
	assert_string_equal(hdr(&r, "Last-Modified"), date);
	cl_close(&c);
	wallclock_reset();
}

/* The listener moves to another port (cloud metadata's http=): the new
 * port accepts, the old one refuses, a connection already open goes on; a
 * port that cannot be bound leaves the listener where it was. */
static void test_rebind(void **state)
{
	struct client c, d, e;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	assert_true(c.connected);
	assert_int_equal(http_server_rebind(HTTP_PORT + 1), 0);
	cl_send_str(&c, GET_INDEX);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	cl_open(&d, V4, HTTP_PORT);
	assert_false(d.connected);
	cl_open(&e, V6, HTTP_PORT + 1);
	assert_true(e.connected);
	cl_send_str(&e, GET_INDEX);
	assert_true(cl_response(&e, false, &r));
	assert_int_equal(r.status, 200);
	/* the port in use by our own listener: refused, still listening */
	assert_int_equal(http_server_rebind(HTTP_PORT + 1), -EIO);
	cl_close(&e);
	cl_open(&e, V4, HTTP_PORT + 1);
	assert_true(e.connected);
	cl_close(&e);
	cl_close(&c);
	if (!d.dead)
		cl_abort(&d);
	run_ms(100);
}

static void test_healthz(void **state)
{
	u64 app_requests = api_http_stats.requests;
	struct client c;
	struct resp r;

	cl_open(&c, V6, HTTP_PORT);
	cl_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Type"), "text/plain; charset=utf-8");
	assert_string_equal(hdr(&r, "Cache-Control"), "no-store");
	assert_int_equal(r.body_len, 3);
	assert_memory_equal(r.body, "ok\n", 3);
	/* Byte for byte what the server always sent (no clock: no Date). */
	assert_string_equal(r.head, "HTTP/1.1 200 OK\r\nServer: vireo\r\nContent-Type: text/plain; charset=utf-8\r\n"
				    "Content-Length: 3\r\nConnection: keep-alive\r\nCache-Control: no-store\r\n\r\n");
	/* Any method, as before: the runtime's routes are not an app's. */
	cl_send_str(&c, "FOO /healthz HTTP/1.1\r\nHost: v\r\nConnection: close\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(r.head, "HTTP/1.1 200 OK\r\nServer: vireo\r\nContent-Type: text/plain; charset=utf-8\r\n"
				    "Content-Length: 3\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n");
	assert_int_equal(api_http_stats.requests, app_requests);	/* not an app's request */
	cl_close(&c);
}

/* http.redirect: 301 to https with the Host's name, the HTTPS port unless
 * 443, the path percent-encoded and the query kept; /healthz still served;
 * no Host: the address the connection came in on; a path and query too
 * long for the line: "/". */
static void test_https_redirect(void **state)
{
	static char req[2200];
	struct client c;
	struct resp r;
	size_t n;

	http_server_set_redirect(8443);
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /a%20b/%7e%22y%25 HTTP/1.1\r\nHost: ex.org:80\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "https://ex.org:8443/a%20b/~%22y%25");
	assert_string_equal(hdr(&r, "Content-Length"), "0");
	/* The query is kept as it came (the parser took only well-formed ones). */
	cl_send_str(&c, "GET /q?a=1&b=%20c/d?e HTTP/1.1\r\nHost: ex.org\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "https://ex.org:8443/q?a=1&b=%20c/d?e");
	cl_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	cl_close(&c);

	cl_open(&c, V6, HTTP_PORT);
	cl_send_str(&c, "GET /x HTTP/1.0\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "https://[FD00::2]:8443/x");
	cl_close(&c);

	http_server_set_redirect(443);
	cl_open(&c, V4, HTTP_PORT);
	n = (size_t)snprintf(req, sizeof req, "GET /");
	while (n < 1500)
		req[n++] = 'p';
	n += (size_t)snprintf(req + n, sizeof req - n, " HTTP/1.1\r\nHost: [fd00::1]:99\r\n\r\n");
	cl_send(&c, req, n);
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "https://[fd00::1]/");
	n = (size_t)snprintf(req, sizeof req, "GET /short?");
	while (n < 1500)
		req[n++] = 'q';
	n += (size_t)snprintf(req + n, sizeof req - n, " HTTP/1.1\r\nHost: [fd00::1]:99\r\n\r\n");
	cl_send(&c, req, n);
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "https://[fd00::1]/");
	cl_close(&c);
	http_server_set_redirect(0);
}

/* The framing rule on the redirect (http.redirect=, docs/appliance.md
 * "Framing"): a 301 reads and drops the body it did not want (up to
 * HTTP_DISCARD_MAX), or closes after a longer one; the body is never
 * taken for a request. */
static void test_framing_redirect(void **state)
{
	static const char smuggled[] = "GET /healthz HTTP/1.1\r\nHost: v\r\nX: ";	/* takes the next line */
	static char req[512];
	struct client c;
	struct resp r;
	int n;

	http_server_set_redirect(8443);
	n = snprintf(req, sizeof req, "POST /x HTTP/1.1\r\nHost: v\r\nContent-Length: %zu\r\n\r\n%s"
		     "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n", strlen(smuggled), smuggled);
	cl_open(&c, V4, HTTP_PORT);
	cl_send(&c, req, (size_t)n);
	run_ms(300);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_true(cl_response(&c, false, &r));	/* the real /healthz, not the smuggled one */
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_memory_equal(r.body, "ok\n", 3);
	run_ms(200);
	assert_int_equal(c.len, c.off);
	assert_int_equal(http_server_stats.requests, 2);
	/* Past HTTP_DISCARD_MAX: the 301 closes. */
	n = snprintf(req, sizeof req, "PUT /x HTTP/1.1\r\nHost: v\r\nContent-Length: %d\r\n\r\n%s",
		     HTTP_HEAD_MAX + 1, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	cl_send(&c, req, (size_t)n);
	run_ms(300);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(200);
	assert_true(c.eof);
	assert_int_equal(c.len, c.off);
	assert_int_equal(http_server_stats.requests, 3);
	cl_close(&c);
	http_server_set_redirect(0);
}

/* 404 keeps the connection; the next request on it is served. */
static void test_not_found_keeps_alive(void **state)
{
	struct client c;
	struct resp r;
	char body[512];
	size_t n = http_error_body(body, sizeof body, 404);

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /no/such/file HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 404);
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_int_equal(r.body_len, n);
	assert_memory_equal(r.body, body, n);
	cl_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_false(c.eof);
	cl_close(&c);
	assert_int_equal(http_server_stats.conns_accepted, 1);
	assert_int_equal(http_server_stats.responses[4], 1);
}

/* An error the parser reports: that status, Connection: close, then FIN (not
 * RST, even with more bytes arriving after the bad head). */
static void expect_error(const char *req, size_t len, int status)
{
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send(&c, req, len);
	run_ms(500);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, status);
	assert_string_equal(hdr(&r, "Connection"), "close");
	if (status == 405)
		assert_string_equal(hdr(&r, "Allow"), "GET, HEAD");
	run_ms(200);
	assert_true(c.eof);
	assert_false(c.dead);
	assert_int_equal(c.len, c.off);
	cl_close(&c);
	run_ms(100);
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.conns_reset, 0);
}

static void test_bad_request(void **state)
{
	static const char req[] = "GET /a b HTTP/1.1\r\nHost: v\r\n\r\nGET / HTTP/1.1\r\nHost: v\r\n\r\n";

	expect_error(req, sizeof req - 1, 400);
}

/* A bare LF ends no line (docs/appliance.md): 400 and close, so a front
 * end that splits lines only at CRLF cannot see other headers than ours. */
static void test_bare_lf(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: v\r\nX-A: a\nContent-Length: 5\r\n\r\nGET / HTTP/1.1\r\n";

	expect_error(req, sizeof req - 1, 400);
	expect_error("GET / HTTP/1.1\nHost: v\n\n", 24, 400);
}

static void test_method_not_allowed(void **state)
{
	static const char req[] = "DELETE / HTTP/1.1\r\nHost: v\r\n\r\n";

	expect_error(req, sizeof req - 1, 405);
}

static void test_uri_too_long(void **state)
{
	static char req[4096];
	int n;

	n = snprintf(req, sizeof req, "GET /%0*d HTTP/1.1\r\nHost: v\r\n\r\n", 3000, 7);
	expect_error(req, (size_t)n, 414);
}

static void test_header_fields_too_large(void **state)
{
	static char req[32768];
	size_t n = 0;
	int i;

	/* More than HTTP_HEADERS_MAX lines. */
	n = (size_t)sprintf(req, "GET / HTTP/1.1\r\nHost: v\r\n");
	for (i = 0; i < HTTP_HEADERS_MAX + 1; i++)
		n += (size_t)sprintf(req + n, "X-%d: y\r\n", i);
	n += (size_t)sprintf(req + n, "\r\n");
	expect_error(req, n, 431);

	/* A head over HTTP_HEAD_MAX bytes: also more than one receive window. */
	n = (size_t)sprintf(req, "GET / HTTP/1.1\r\nHost: v\r\n");
	for (i = 0; i < 20; i++)
		n += (size_t)sprintf(req + n, "X-%d: %0500d\r\n", i, 0);
	n += (size_t)sprintf(req + n, "\r\n");
	assert_true(n > HTTP_HEAD_MAX && n > TCP_WND);
	expect_error(req, n, 431);
}

static void test_keep_alive(void **state)
{
	static const char *const paths[] = { "/", "/healthz", "/index.html", "/nope", "/" };
	struct client c;
	struct resp r;
	char req[128];
	size_t i;

	cl_open(&c, V6, HTTP_PORT);
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: v\r\n\r\n", paths[i]);
		cl_send_str(&c, req);
		assert_true(cl_response(&c, false, &r));
		assert_int_equal(r.status, strcmp(paths[i], "/nope") ? 200 : 404);
		assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	}
	assert_int_equal(http_server_stats.conns_accepted, 1);
	assert_int_equal(http_server_stats.requests, ARRAY_SIZE(paths));
	cl_close(&c);
}

/* Four requests in one write: four responses, in order, and the last one's
 * Connection: close is honoured. */
static void test_pipelined(void **state)
{
	static const char reqs[] =
		"GET / HTTP/1.1\r\nHost: v\r\n\r\n"
		"HEAD /healthz HTTP/1.1\r\nHost: v\r\n\r\n"
		"GET /nope HTTP/1.1\r\nHost: v\r\n\r\n"
		"GET /healthz HTTP/1.1\r\nHost: v\r\nConnection: close\r\n\r\n";
	const struct site_file *f = site_lookup("/");
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send(&c, reqs, sizeof reqs - 1);
	run_ms(200);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, f->data, f->len);
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Length"), "3");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 404);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Connection"), "close");
	assert_memory_equal(r.body, "ok\n", 3);
	assert_int_equal(c.len, c.off);
	assert_true(c.eof);
	assert_int_equal(http_server_stats.requests, 4);
	cl_close(&c);
}

/* Connection: close without the client closing: the server's linger ends
 * by itself. */
static void test_connection_close(void **state)
{
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET / HTTP/1.1\r\nHost: v\r\nConnection: close\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(100);
	assert_true(c.eof);
	assert_int_equal(http_server_stats.conns_active, 1);	/* lingering */
	run_ms(HTTP_SERVER_LINGER_MS + 1000);
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_false(c.dead);
	cl_close(&c);
}

static void test_http10(void **state)
{
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /healthz HTTP/1.0\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(100);
	assert_true(c.eof);
	cl_close(&c);

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	cl_send_str(&c, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_false(c.eof);
	cl_close(&c);
}

/* The client sends its request and shuts down its side: the response still
 * arrives whole, then the server closes. */
static void test_client_half_close(void **state)
{
	const struct site_file *f = site_lookup("/64k.bin");
	struct client c;
	struct resp r;

	cl_open(&c, V6, HTTP_PORT);
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_int_equal(tcp_shutdown(c.pcb, 0, 1), ERR_OK);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.body_len, f->len);
	assert_memory_equal(r.body, f->data, f->len);
	run_ms(100);
	assert_true(c.eof);
	cl_close(&c);
	assert_int_equal(http_server_stats.conns_active, 0);
}

static void test_64k(void **state)
{
	const struct site_file *f = site_lookup("/64k.bin");
	struct client c;
	struct resp r;
	size_t i;

	assert_non_null(f);
	assert_int_equal(f->len, 65536);
	lwip_stats.memp[MEMP_PBUF]->max = 0;
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	expect_file_head(&r, f, true);
	assert_int_equal(r.body_len, 65536);
	for (i = 0; i < 65536; i++)
		if (r.body[i] != (u8)(i % 251))
			fail_msg("byte %zu is %u", i, r.body[i]);
	/* The body went out as PBUF_ROM pbufs pointing into the site table. */
	assert_true(lwip_stats.memp[MEMP_PBUF]->max > 0);
	assert_true(http_server_stats.tx_bytes == r.head_len + 65536);
	cl_close(&c);
}

/* The server's end of c's connection. */
static struct tcp_pcb *server_pcb_of(const struct client *c)
{
	struct tcp_pcb *p;

	for (p = tcp_active_pcbs; p; p = p->next)
		if (p->local_port == HTTP_PORT && p->remote_port == c->pcb->local_port)
			return p;
	return NULL;
}

/* A 64 KiB file and its head are handed to lwIP in one go, before any ACK:
 * with TCP_SND_BUF at 44 MSS (64240 bytes) the last 1,443 bytes waited a
 * round trip for the ACK of the first 44 segments on every keep-alive
 * request. The client offers window scaling (lwIP does with
 * LWIP_WND_SCALE), which a peer's window needs to reach past 65,535 bytes,
 * and the server takes it. Pure ACKs from the client are lost meanwhile,
 * so nothing queued is freed before the check. */
static void test_64k_one_flight(void **state)
{
	const struct site_file *f = site_lookup("/64k.bin");
	struct tcp_pcb *srv;
	struct client c;
	struct resp r;
	u64 tx0;
	u32 queued;

	assert_non_null(f);
	cl_open(&c, V4, HTTP_PORT);
	srv = server_pcb_of(&c);
	assert_non_null(srv);
	assert_true(srv->flags & TF_WND_SCALE);
	assert_int_equal(srv->rcv_scale, TCP_RCV_SCALE);	/* net/port/lwipopts.h */
	bh_lo = c.pcb->local_port;
	bh_hi = (u16)(bh_lo + 1);
	tx0 = http_server_stats.tx_bytes;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	run_ms(20);
	queued = srv->snd_lbb - srv->lastack;
	assert_int_equal(queued, http_server_stats.tx_bytes - tx0);
	if (queued <= 65536)
		fail_msg("only %u bytes of the response queued before an ACK", queued);
	bh_lo = bh_hi = 0;
	assert_true(cl_response(&c, false, &r));
	expect_file_head(&r, f, true);
	assert_int_equal(r.body_len, 65536);
	assert_int_equal(queued, r.head_len + 65536);
	cl_close(&c);
}

/* Bodies past TCP_SND_BUF ask for the bulk send buffer (VIREO_SND_BULK_BUF
 * bytes, VIREO_SND_BULK_QUEUELEN pbufs): one more client than
 * VIREO_SND_BULK_MAX fetches /256k.bin while its ACKs are lost. The first
 * VIREO_SND_BULK_MAX queue more than TCP_SND_BUF (and at most the bulk
 * buffer), the last is refused and keeps TCP_SND_BUF; the grants end with
 * the PCBs. /64k.bin (head and body within TCP_SND_BUF) asks for none. */
#define SNDBULK_PORT 41000
static void test_snd_bulk_grants_bounded(void **state)
{
	enum { N = VIREO_SND_BULK_MAX + 1 };
	static const char req[] = "GET /256k.bin HTTP/1.1\r\nHost: v\r\n\r\n";
	static struct client c[N];
	const struct site_file *f = site_lookup("/256k.bin");
	u64 refused0 = rxmem_stats.snd_bulk_refused;
	struct resp r;
	int i;

	assert_non_null(f);
	assert_int_equal(rxmem_stats.snd_bulk_grants, 0);
	bh_lo = SNDBULK_PORT;
	bh_hi = (u16)(SNDBULK_PORT + N);
	for (i = 0; i < N; i++) {
		struct tcp_pcb *srv;
		u32 queued;

		cl_open_from(&c[i], false, HTTP_PORT, (u16)(SNDBULK_PORT + i));
		assert_true(c[i].connected);
		c[i].tx = (const u8 *)req;
		c[i].tx_len = sizeof req - 1;
		cl_push(&c[i]);
		run_ms(20);
		srv = server_pcb_of(&c[i]);
		assert_non_null(srv);
		queued = srv->snd_lbb - srv->lastack;
		if (i < VIREO_SND_BULK_MAX) {
			if (queued <= TCP_SND_BUF || queued > VIREO_SND_BULK_BUF)
				fail_msg("granted client %d: %u bytes queued", i, queued);
			assert_true(srv->snd_queuelen <= VIREO_SND_BULK_QUEUELEN);
			assert_int_equal(rxmem_snd_queuelen_max(srv), VIREO_SND_BULK_QUEUELEN);
		} else {
			if (queued > TCP_SND_BUF)
				fail_msg("refused client: %u bytes queued", queued);
			assert_true(srv->snd_queuelen <= TCP_SND_QUEUELEN);
			assert_int_equal(rxmem_snd_queuelen_max(srv), TCP_SND_QUEUELEN);
		}
		assert_int_equal(rxmem_stats.snd_bulk_grants, MIN(i + 1, VIREO_SND_BULK_MAX));
	}
	assert_int_equal(rxmem_stats.snd_bulk_refused, refused0 + 1);
	assert_int_equal(rxmem_stats.snd_bulk_peak, VIREO_SND_BULK_MAX);
	/* ACKs flow again: every client gets its whole body. */
	bh_lo = bh_hi = 0;
	for (i = 0; i < N; i++) {
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.body_len, 262144);
		cl_close(&c[i]);
	}
	run_step(2 * TCP_MSL + 10000, 250);	/* lwIP frees the PCBs */
	assert_int_equal(rxmem_stats.snd_bulk_grants, 0);
	/* A 64 KiB body fits TCP_SND_BUF: no grant asked for. */
	refused0 = rxmem_stats.snd_bulk_refused;
	cl_open(&c[0], V4, HTTP_PORT);
	cl_send_str(&c[0], "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c[0], false, &r));
	assert_int_equal(r.body_len, 65536);
	assert_int_equal(rxmem_stats.snd_bulk_grants, 0);
	assert_int_equal(rxmem_stats.snd_bulk_refused, refused0);
	cl_close(&c[0]);
}

/* Every line is a comment (# HELP / # TYPE) or "name{labels} value", and
 * every sample's family was declared before it. */
static void check_exposition(const char *text, size_t len)
{
	char declared[128][96] = { { 0 } };
	size_t ndecl = 0, pos = 0, samples = 0;

	assert_true(len > 0 && text[len - 1] == '\n');
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		char name[96];
		size_t n, i = 0, k;

		assert_non_null(nl);
		n = (size_t)(nl - line);
		pos += n + 1;
		if (n >= 7 && memcmp(line, "# HELP ", 7) == 0)
			continue;
		if (n >= 7 && memcmp(line, "# TYPE ", 7) == 0) {
			const char *sp = memchr(line + 7, ' ', n - 7);

			assert_non_null(sp);
			assert_true(strncmp(sp, " counter\n", 9) == 0 || strncmp(sp, " gauge\n", 7) == 0);
			assert_true(ndecl < 128 && (size_t)(sp - line - 7) < 96);
			memcpy(declared[ndecl], line + 7, (size_t)(sp - line - 7));
			ndecl++;
			continue;
		}
		assert_true(n > 0 && line[0] != '#');
		while (i < n && (isalnum((unsigned char)line[i]) || line[i] == '_' || line[i] == ':'))
			i++;
		assert_true(i > 0 && i < sizeof name && !isdigit((unsigned char)line[0]));
		memcpy(name, line, i);
		name[i] = '\0';
		for (k = 0; k < ndecl && strcmp(declared[k], name); k++)
			;
		if (k == ndecl)
			fail_msg("sample %s without # TYPE", name);
		if (line[i] == '{') {
			for (i++;;) {
				size_t s = i;

				while (i < n && (isalnum((unsigned char)line[i]) || line[i] == '_'))
					i++;
				assert_true(i > s && i + 1 < n && line[i] == '=' && line[i + 1] == '"');
				for (i += 2; i < n && line[i] != '"'; i++)
					if (line[i] == '\\')
						i++;
				assert_true(i < n);
				i++;
				if (line[i] == ',') {
					i++;
					continue;
				}
				assert_true(line[i] == '}');
				i++;
				break;
			}
		}
		assert_true(i < n && line[i] == ' ');
		for (i++, k = i; i < n; i++)
			assert_true(isdigit((unsigned char)line[i]));
		assert_true(i > k);
		samples++;
	}
	assert_true(samples > 100);
}

static bool has_line(const u8 *body, size_t len, const char *line)
{
	char *want;
	bool found;

	assert_true(asprintf(&want, "\n%s\n", line) > 0);
	found = memmem(body, len, want, strlen(want)) != NULL;
	free(want);
	return found;
}

/* The send-slot budget (runtime/http/conn.h http_srv.sends), cut to 2 for
 * the test: 4 clients whose ACKs are dropped ask for /64k.bin; 2 take the
 * slots and queue their bodies, the other 2 wait with nothing queued in
 * lwIP (no more than S connections' queues, whatever the readers do); once
 * ACKs flow every client gets its whole body, in turn. */
#define SLOTS_PORT 42000
static void test_send_slots_bounded(void **state)
{
	enum { N = 4 };
	static const char req[] = "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n";
	static struct client c[N];
	u32 max0 = http_srv.sends.max;
	u64 waits0 = http_srv.sends.waits_total;
	struct resp r;
	int i, queued = 0;

	http_srv.sends.max = 2;
	bh_lo = SLOTS_PORT;
	bh_hi = (u16)(SLOTS_PORT + N);
	for (i = 0; i < N; i++) {
		cl_open_from(&c[i], false, HTTP_PORT, (u16)(SLOTS_PORT + i));
		assert_true(c[i].connected);
		c[i].tx = (const u8 *)req;
		c[i].tx_len = sizeof req - 1;
		cl_push(&c[i]);
	}
	run_ms(200);
	for (i = 0; i < N; i++) {
		struct tcp_pcb *srv = server_pcb_of(&c[i]);

		assert_non_null(srv);
		if (srv->snd_lbb != srv->lastack)
			queued++;
	}
	assert_int_equal(queued, 2);
	assert_int_equal(http_srv.sends.used, 2);
	assert_int_equal(http_srv.sends.waiting, 2);
	assert_int_equal(http_srv.sends.waits_total, waits0 + 2);
	bh_lo = bh_hi = 0;
	for (i = 0; i < N; i++) {
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.status, 200);
		assert_int_equal(r.body_len, 65536);
	}
	run_ms(500);
	assert_int_equal(http_srv.sends.used, 0);
	assert_int_equal(http_srv.sends.waiting, 0);
	for (i = 0; i < N; i++)
		cl_close(&c[i]);
	run_ms(100);
	http_srv.sends.max = max0;
}

/* The buffer-set pool (conn.h), cut to 2 for the test: 4 connections each
 * send half a head; 2 hold the sets, 2 wait (their bytes in land[], the
 * window cut); a fifth, idle since its response, keeps nothing once the
 * sets are taken. With the heads' second halves every one is answered, in
 * turn, and a head longer than land[] (the cut window) still arrives whole. */
static void test_bufsets_bounded(void **state)
{
	enum { N = 4 };
	static const char req[] = "GET / HTTP/1.1\r\nHost: v\r\n\r\n";
	static char big[2048];
	static struct client c[N], d;
	u32 max0 = http_srv.bufs.max;
	u64 waits0 = http_srv.bufs.waits_total;
	struct resp r;
	size_t half = (sizeof req - 1) / 2;
	int i, n;

	http_srv.bufs.max = 2;
	cl_open(&d, V4, HTTP_PORT);	/* served, then idle keeping its set */
	cl_send_str(&d, req);
	assert_true(cl_response(&d, false, &r));
	assert_int_equal(r.status, 200);
	for (i = 0; i < N; i++) {
		cl_open(&c[i], V4, HTTP_PORT);
		cl_send(&c[i], req, half);
	}
	run_ms(200);
	assert_int_equal(http_srv.bufs.used, 2);
	assert_int_equal(http_srv.bufs.waiting, 2);
	assert_int_equal(http_srv.bufs.waits_total, waits0 + 2);
	for (i = 0; i < N; i++)
		cl_send(&c[i], req + half, sizeof req - 1 - half);
	for (i = 0; i < N; i++) {
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.status, 200);
		assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	}
	/* d lost its set to them: a head past land[] reaches it whole */
	n = snprintf(big, sizeof big, "GET / HTTP/1.1\r\nHost: v\r\nX-Pad: ");
	memset(big + n, 'p', 1500);
	n += 1500;
	n += snprintf(big + n, sizeof big - (size_t)n, "\r\n\r\n");
	assert_true(n > HTTP_LAND);
	cl_send(&d, big, (size_t)n);
	assert_true(cl_response(&d, false, &r));
	assert_int_equal(r.status, 200);
	for (i = 0; i < N; i++)
		cl_close(&c[i]);
	cl_close(&d);
	run_ms(100);
	assert_true(http_srv.bufs.used <= 2);
	assert_int_equal(http_srv.bufs.waiting, 0);
	http_srv.bufs.max = max0;
}

static void test_metrics(void **state)
{
	struct client c, u;
	struct resp r;
	char line[256];

	cl_open(&c, V4, HTTP_PORT);
	cl_open(&u, V6, HTTP_PORT);	/* a second, idle connection */
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	snprintf(line, sizeof line, "HTTP/1.1 200 OK\r\nServer: vireo\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		 "Connection: keep-alive\r\nCache-Control: no-store\r\n\r\n", METRICS_CONTENT_TYPE, r.body_len);
	assert_string_equal(r.head, line);
	assert_string_equal(hdr(&r, "Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
	assert_string_equal(hdr(&r, "Cache-Control"), "no-store");
	check_exposition((const char *)r.body, r.body_len);
	assert_true(r.body_len < HTTP_METRICS_MAX / 2);
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "/metrics: %zu bytes\n", r.body_len);
	assert_true(has_line(r.body, r.body_len, "vireo_http_connections_active 2"));
	assert_true(has_line(r.body, r.body_len, "vireo_http_requests_total 1"));
	assert_true(has_line(r.body, r.body_len, "vireo_http_connections_accepted_total 2"));
	assert_true(has_line(r.body, r.body_len, "vireo_http_responses_total{code=\"2xx\"} 0"));
	snprintf(line, sizeof line, "vireo_lwip_memp_avail{pool=\"TCP_PCB\"} %u", (unsigned)MEMP_NUM_TCP_PCB);
	assert_true(has_line(r.body, r.body_len, line));
	assert_true(has_line(r.body, r.body_len, "vireo_lwip_orphans 0"));
	assert_true(has_line(r.body, r.body_len, "vireo_lwip_heap_bytes 4194304"));
	assert_non_null(memmem(r.body, r.body_len, "\nvireo_lwip_recv_total{proto=\"tcp\"} ", 36));
	/* Sources are the linker set of what the test links: the port's and
	 * receive accounting's (net/), the runtime's; not the kernel's. */
	assert_non_null(memmem(r.body, r.body_len, "\nvireo_rxmem_copied_frames_total ", 33));
	assert_null(memmem(r.body, r.body_len, "vireo_uptime_seconds", 20));
	assert_int_equal(http_server_stats.metrics_truncated, 0);

	/* HEAD: the same head, no body. */
	cl_send_str(&c, "HEAD /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 200);
	run_ms(100);
	assert_int_equal(c.len, c.off);
	cl_close(&c);
	cl_close(&u);
}

/* metrics.allow=: a client outside the list gets 403 (and the connection
 * closes, the framing rule); one inside gets the page; /healthz stays open. */
static void test_metrics_allow(void **state)
{
	struct allow_list keep = metrics_allow;
	struct client c;
	struct resp r;
	char why[64];

	assert_int_equal(allow_parse("fd00::/64", &metrics_allow, why, sizeof why), 0);
	cl_open(&c, V4, HTTP_PORT);	/* 192.168.7.2: outside */
	cl_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 403);
	assert_null(memmem(r.body, r.body_len, "vireo_", 6));
	run_ms(100);
	assert_true(c.eof);
	assert_string_equal(hdr(&r, "Connection"), "close");
	cl_close(&c);
	cl_open(&c, V6, HTTP_PORT);	/* fd00::2: inside */
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_non_null(memmem(r.body, r.body_len, "vireo_http_requests_total", 25));
	cl_close(&c);
	/* The IPv4 client's own /32 lets it in. */
	assert_int_equal(allow_parse("192.168.7.2/32", &metrics_allow, why, sizeof why), 0);
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	cl_close(&c);
	metrics_allow = keep;
}

/* proxy.trusted=: a trusted peer's connection starts with a PROXY header
 * (v1 or v2) and the client it names is the connection's peer from then on
 * (metrics.allow= judges it, the table counts it), or with HTTP whose
 * X-Forwarded-For names each request's client; a trusted peer with a bad
 * header is reset; anyone else's "PROXY" line is HTTP, its
 * X-Forwarded-For ignored. */
static void test_proxy_protocol(void **state)
{
	static const u8 v2[] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a,
				 0x21, 0x11, 0x00, 0x0c, 198, 51, 100, 9, 192, 168, 7, 1, 0x13, 0x88, 0x00, 0x50 };
	struct allow_list keep_m = metrics_allow, keep_p = proxy_trusted;
	struct conntab_src client, proxy;
	struct client c, d;
	struct resp r;
	char why[64];
	ip_addr_t a;

	assert_int_equal(allow_parse("192.168.7.0/24", &proxy_trusted, why, sizeof why), 0);
	assert_int_equal(allow_parse("192.0.2.0/24", &metrics_allow, why, sizeof why), 0);
	IP_ADDR4(&a, 192, 0, 2, 7);
	conntab_src_of(&a, &client);
	IP_ADDR4(&a, 192, 168, 7, 2);
	conntab_src_of(&a, &proxy);

	/* Version 1, then a request: the client's, as /metrics' allow-list sees it. */
	cl_open(&c, V4, HTTP_PORT);	/* 192.168.7.2: trusted */
	cl_send_str(&c, "PROXY TCP4 192.0.2.7 192.168.7.1 40000 80\r\n");
	run_ms(50);
	assert_int_equal(conntab_src_count(&http_srv.tab, &client), 1);
	assert_int_equal(conntab_src_count(&http_srv.tab, &proxy), 0);
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_non_null(memmem(r.body, r.body_len, "vireo_http_proxy_headers_total 1", 32));
	cl_close(&c);

	/* Version 2 naming a client outside metrics.allow=: 403; in one segment. */
	cl_open(&d, V4, HTTP_PORT);
	cl_send(&d, v2, sizeof v2);
	cl_send_str(&d, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&d, false, &r));
	assert_int_equal(r.status, 403);
	cl_close(&d);
	assert_int_equal(http_server_stats.proxy_headers, 2);

	/* A trusted peer without a header speaks HTTP: each request's
	 * X-Forwarded-For names the client (the rightmost untrusted entry;
	 * 10.9.9.9 is what the client wrote itself), metrics.allow= judges
	 * it, the table counts it; without one, the proxy is the peer again. */
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\nX-Forwarded-For: 10.9.9.9, 192.0.2.7\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_non_null(memmem(r.body, r.body_len, "vireo_http_forwarded_total 1", 28));
	assert_int_equal(conntab_src_count(&http_srv.tab, &client), 1);
	assert_int_equal(conntab_src_count(&http_srv.tab, &proxy), 0);
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 403);
	cl_close(&c);
	/* The client's own field before the proxy's: the proxy's entry counts. */
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /metrics HTTP/1.1\r\nHost: v\r\nX-Forwarded-For: 192.0.2.7\r\n"
			"X-Forwarded-For: 203.0.113.5\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 403);
	cl_close(&c);
	assert_int_equal(http_server_stats.forwarded, 2);

	/* A trusted peer with a malformed header: reset, counted. */
	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "PROXY TCP9 192.0.2.7 192.168.7.1 40000 80\r\n");
	run_ms(100);
	assert_true(c.dead);
	assert_int_equal(c.err, ERR_RST);
	assert_int_equal(http_server_stats.proxy_refused, 1);
	cl_abort(&c);

	/* Anyone else's X-Forwarded-For is nobody's word. */
	cl_open(&d, V6, HTTP_PORT);	/* fd00::2: not trusted */
	cl_send_str(&d, "GET /metrics HTTP/1.1\r\nHost: v\r\nX-Forwarded-For: 192.0.2.7\r\n\r\n");
	assert_true(cl_response(&d, false, &r));
	assert_int_equal(r.status, 403);
	cl_close(&d);
	assert_int_equal(http_server_stats.forwarded, 2);

	/* Anyone else's PROXY line is a bad request, not a header. */
	cl_open(&d, V6, HTTP_PORT);	/* fd00::2: not trusted */
	cl_send_str(&d, "PROXY TCP4 192.0.2.7 192.168.7.1 40000 80\r\nGET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&d, false, &r));
	assert_int_equal(r.status, 400);
	cl_close(&d);
	assert_int_equal(http_server_stats.proxy_headers, 2);
	metrics_allow = keep_m;
	proxy_trusted = keep_p;
}

/* Over max_conns: reset on accept, counted, and the others unaffected. */
static void test_connection_limit(void **state)
{
	struct http_server_cfg cfg = { .max_conns = 3 };
	struct client c[5];
	struct resp r;
	int i;

	restart(&cfg);
	for (i = 0; i < 3; i++) {
		cl_open(&c[i], i & 1, HTTP_PORT);
		assert_true(c[i].connected);
	}
	assert_int_equal(http_server_stats.conns_active, 3);
	cl_open(&c[3], V4, HTTP_PORT);
	run_ms(100);
	assert_true(c[3].dead);
	assert_int_equal(c[3].err, ERR_RST);
	assert_int_equal(http_server_stats.conns_refused, 1);
	for (i = 0; i < 3; i++) {
		cl_send_str(&c[i], "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.status, 200);
	}
	cl_close(&c[0]);
	run_ms(100);
	cl_open(&c[4], V6, HTTP_PORT);
	assert_false(c[4].dead);
	cl_send_str(&c[4], "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c[4], false, &r));
	for (i = 1; i < 5; i++)
		i == 3 ? cl_abort(&c[i]) : cl_close(&c[i]);

	/* No memory for the connection state: refused the same way. */
	hk_fail_kmem(0, 1);
	cl_open(&c[0], V4, HTTP_PORT);
	run_ms(100);
	assert_true(c[0].dead);
	assert_int_equal(http_server_stats.conns_refused, 2);
	cl_abort(&c[0]);
	assert_int_equal(http_server_stats.conns_accepted, 4);
}

/* A full table, and a newcomer of another source that would take the
 * place of the one idle longest, but its source's nodes in the table
 * cannot be allocated: it is refused, and nobody was evicted for it
 * (admission.c: every check, the table's insertion included, before any
 * eviction). */
static void test_refused_newcomer_evicts_nobody(void **state)
{
	struct http_server_cfg cfg = { .max_conns = 2 };
	struct client c[3];
	struct resp r;
	int i;

	restart(&cfg);
	for (i = 0; i < 2; i++) {
		cl_open(&c[i], V4, HTTP_PORT);
		assert_true(c[i].connected);
	}
	run_ms(100);
	hk_fail_kmem(1, 1);	/* the connection's state, then its first node */
	cl_open(&c[2], V6, HTTP_PORT);
	run_ms(100);
	assert_true(c[2].dead);
	assert_int_equal(http_server_stats.conns_refused, 1);
	assert_int_equal(http_server_stats.conns_evicted, 0);
	for (i = 0; i < 2; i++) {
		assert_false(c[i].dead);
		cl_send_str(&c[i], "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.status, 200);
	}
	/* with memory, the same newcomer evicts the one idle longest */
	cl_abort(&c[2]);
	cl_open(&c[2], V6, HTTP_PORT);
	run_ms(100);
	assert_false(c[2].dead);
	assert_int_equal(http_server_stats.conns_evicted, 1);
	for (i = 0; i < 3; i++)
		cl_abort(&c[i]);
}

static void test_idle_timeout(void **state)
{
	struct client c;
	struct resp r;

	cl_open(&c, V4, HTTP_PORT);
	cl_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	run_step(HTTP_SERVER_IDLE_MS - 1000, 50);
	assert_false(c.eof);
	run_step(1600, 50);
	assert_true(c.eof);
	assert_false(c.dead);
	assert_int_equal(c.len, c.off);	/* closed quietly, no 408 */
	assert_int_equal(http_server_stats.timeouts_idle, 1);
	assert_int_equal(http_server_stats.conns_active, 0);
	cl_close(&c);
}

static void test_header_timeout(void **state)
{
	struct client c;
	struct resp r;
	int i;

	/* Connected, nothing sent: closed after the header timeout. */
	cl_open(&c, V4, HTTP_PORT);
	run_step(HTTP_SERVER_HEADER_MS - 1000, 50);
	assert_false(c.eof);
	run_step(1600, 50);
	assert_true(c.eof);
	assert_int_equal(c.len, 0);
	cl_close(&c);

	/* A head dribbled one byte a second: 408, then close. */
	cl_open(&c, V6, HTTP_PORT);
	for (i = 0; i < 12 && !c.eof; i++) {
		cl_send(&c, &"GET / HTTP/1.1\r\nHost: v\r\n"[i], 1);
		run_ms(950);
	}
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 408);
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(100);
	assert_true(c.eof);
	assert_int_equal(http_server_stats.timeouts_header, 2);
	cl_close(&c);
}

/* A client that stops reading: the server waits send_timeout without ACK
 * progress, then resets. */
static void test_send_timeout(void **state)
{
	struct http_server_cfg cfg = { .send_timeout_ms = 5000 };
	struct client c;

	restart(&cfg);
	cl_open(&c, V4, HTTP_PORT);
	c.hold = true;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	run_step(4000, 50);
	assert_int_equal(http_server_stats.conns_active, 1);
	assert_true(c.len <= TCP_WND);
	run_step(2000, 50);
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.timeouts_send, 1);
	/* The RST's sequence number is past the client's closed window (the
	 * server's zero-window probe), so the client rightly ignores it. */
	cl_abort(&c);
}

/* Graceful drain (power off): idle connections close at once, new ones are
 * refused, a response in progress completes byte for byte and its pipelined
 * successor is dropped, a request half read is answered with Connection:
 * close; then nothing is left. */
static void test_drain(void **state)
{
	/* Two 64 KiB responses overflow TCP_SND_BUF: the second is being
	 * written when the drain starts; /healthz after it waits in rx[]. */
	static const char three[] = "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n"
				    "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n"
				    "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n";
	const struct site_file *f = site_lookup("/64k.bin");
	struct client kept, fresh, slow, half, late;
	u32 idle = 99, busy = 99;
	struct resp r;

	cl_open(&kept, V4, HTTP_PORT);
	cl_send_str(&kept, GET_INDEX);
	assert_true(cl_response(&kept, false, &r));	/* now keep-alive idle */
	cl_open(&fresh, V6, HTTP_PORT);			/* nothing sent yet */
	cl_open(&slow, V4, HTTP_PORT);
	slow.hold = true;
	cl_send(&slow, three, sizeof three - 1);
	run_ms(200);
	assert_true(slow.len > 0 && slow.len < 65536);
	cl_open(&half, V6, HTTP_PORT);
	cl_send_str(&half, "GET /healthz HTTP/1.1\r\nHo");
	assert_int_equal(http_server_stats.conns_active, 4);

	http_server_drain(&idle, &busy);
	assert_int_equal(idle, 2);
	assert_int_equal(busy, 2);
	run_ms(200);
	assert_true(kept.eof);
	assert_true(fresh.eof);
	assert_int_equal(kept.len, kept.off);	/* a FIN, no stray bytes */
	assert_int_equal(fresh.len, 0);
	assert_int_equal(http_server_stats.conns_active, 2);

	cl_open(&late, V4, HTTP_PORT);			/* the listener is gone */
	run_ms(200);
	assert_true(late.dead || !late.connected);

	cl_send_str(&half, "st: v\r\n\r\n");
	assert_true(cl_response(&half, false, &r));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Connection"), "close");
	run_ms(100);
	assert_true(half.eof);

	cl_resume(&slow);
	assert_true(cl_response(&slow, false, &r));
	assert_int_equal(r.body_len, f->len);
	assert_memory_equal(r.body, f->data, f->len);
	assert_true(cl_response(&slow, false, &r));
	assert_int_equal(r.body_len, f->len);
	assert_memory_equal(r.body, f->data, f->len);
	run_ms(200);
	assert_true(slow.eof);
	assert_int_equal(slow.len, slow.off);	/* /healthz was not answered */

	cl_close(&kept);
	cl_close(&fresh);
	cl_close(&slow);
	cl_close(&half);
	cl_abort(&late);
	run_ms(200);
	assert_int_equal(http_server_stats.conns_active, 0);
	http_server_drain(&idle, &busy);		/* already draining: no-op */
	assert_int_equal(idle + busy, 0);
}

/* The grace period ends with a response still held up (handed to lwIP
 * whole, unacknowledged: busy, not idle): stop cuts it. */
static void test_drain_then_cut(void **state)
{
	struct client c;
	u32 idle, busy;

	cl_open(&c, V4, HTTP_PORT);
	c.hold = true;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	run_ms(200);
	http_server_drain(&idle, &busy);
	assert_int_equal(idle, 0);
	assert_int_equal(busy, 1);
	run_ms(1000);
	assert_int_equal(http_server_stats.conns_active, 1);	/* still held up */
	http_server_stop();
	assert_int_equal(http_server_stats.conns_active, 0);
	cl_abort(&c);
}

/* The client resets in the middle of a response: the state is freed. */
static void test_client_abort(void **state)
{
	struct client c;

	cl_open(&c, V6, HTTP_PORT);
	c.hold = true;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	run_ms(200);
	assert_true(c.len > 0 && c.len < 65536);
	assert_int_equal(http_server_stats.conns_active, 1);
	cl_abort(&c);
	run_ms(100);
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.conns_reset, 1);
}

/* Many connections at once, each with a pipelined pair. */
static void test_many_connections(void **state)
{
	static struct client c[HTTP_SERVER_MAX_CONNS];
	static const char reqs[] = "GET / HTTP/1.1\r\nHost: v\r\n\r\nGET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n";
	struct resp r;
	int i;

	for (i = 0; i < HTTP_SERVER_MAX_CONNS; i++) {
		cl_open(&c[i], i & 1, HTTP_PORT);
		c[i].tx = (const u8 *)reqs;
		c[i].tx_len = sizeof reqs - 1;
		cl_push(&c[i]);
	}
	assert_int_equal(http_server_stats.conns_active, HTTP_SERVER_MAX_CONNS);
	run_ms(2000);
	for (i = 0; i < HTTP_SERVER_MAX_CONNS; i++) {
		assert_true(cl_response(&c[i], false, &r));
		assert_true(cl_response(&c[i], false, &r));
		assert_int_equal(r.body_len, 65536);
		cl_close(&c[i]);
	}
	assert_int_equal(http_server_stats.responses[2], 2 * HTTP_SERVER_MAX_CONNS);
	assert_int_equal(http_server_stats.conns_refused, 0);
}

static void test_start_twice(void **state)
{
	assert_int_equal(http_server_start(HTTP_PORT, NULL), -EBUSY);
}

/* ---- per-source limits and fair share ---- */

static const char *GET_HEALTHZ = "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n";

/* While the table has room a source may hold max_per_src; others are served. */
static void test_per_source_cap(void **state)
{
	struct http_server_cfg cfg = { .max_conns = 4, .max_per_src = 2 };
	struct client c[4];
	struct resp r;
	int i;

	restart(&cfg);
	cl_open(&c[0], V4, HTTP_PORT);
	cl_open(&c[1], V4, HTTP_PORT);
	cl_open(&c[2], V4, HTTP_PORT);
	run_ms(100);
	assert_false(c[0].dead);
	assert_false(c[1].dead);
	assert_true(c[2].dead);
	assert_int_equal(c[2].err, ERR_RST);
	assert_int_equal(http_server_stats.conns_refused_source, 1);
	assert_int_equal(http_server_stats.conns_refused, 1);
	cl_open(&c[3], V6, HTTP_PORT);	/* another source */
	cl_send_str(&c[3], GET_HEALTHZ);
	assert_true(cl_response(&c[3], false, &r));
	assert_int_equal(r.status, 200);
	for (i = 0; i < 4; i++)
		i == 2 ? cl_abort(&c[i]) : cl_close(&c[i]);
}

/* The table is full of one source: a newcomer from another source below its
 * fair share takes the oldest idle slot of the heaviest source; at its share
 * it is refused like everyone. */
static void test_fair_share(void **state)
{
	struct http_server_cfg cfg = { .max_conns = 4 };
	struct client a[5], b[3];
	struct resp r;
	int i;

	restart(&cfg);
	for (i = 0; i < 4; i++)
		cl_open(&a[i], V4, HTTP_PORT);
	cl_send_str(&a[1], "GET / HT");	/* a[1] is mid-request: not idle */
	assert_int_equal(http_server_stats.conns_active, 4);

	/* Sources 1 (v4, 4 slots) and the newcomer: share 2. */
	cl_open(&b[0], V6, HTTP_PORT);
	run_ms(100);
	assert_false(b[0].dead);
	assert_true(a[0].dead);		/* the oldest idle one */
	assert_int_equal(a[0].err, ERR_RST);
	cl_open(&b[1], V6, HTTP_PORT);
	run_ms(100);
	assert_false(b[1].dead);
	assert_false(a[1].dead);	/* busy: skipped */
	assert_true(a[2].dead);
	assert_int_equal(http_server_stats.conns_evicted, 2);
	/* Each source at its share now. */
	cl_open(&b[2], V6, HTTP_PORT);
	cl_open(&a[4], V4, HTTP_PORT);
	run_ms(100);
	assert_true(b[2].dead);
	assert_true(a[4].dead);
	assert_int_equal(http_server_stats.conns_evicted, 2);
	assert_int_equal(http_server_stats.conns_refused, 2);
	assert_int_equal(http_server_stats.conns_active, 4);
	/* The survivors are served. */
	cl_send_str(&a[1], "TP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&a[1], false, &r));
	cl_send_str(&b[0], GET_HEALTHZ);
	assert_true(cl_response(&b[0], false, &r));
	assert_int_equal(r.status, 200);
	for (i = 0; i < 5; i++)
		(i == 1 || i == 3) ? cl_close(&a[i]) : cl_abort(&a[i]);
	cl_close(&b[0]);
	cl_close(&b[1]);
	cl_abort(&b[2]);
}

/* ---- send stall judged by bytes ---- */

/* A reader that opens its window one byte at a time and ACKs every byte:
 * ACKs keep coming (the old "any ACK" rule never fires), but less than
 * send_min_bytes per window gets it reset. Windows of 3 s: the stall ends
 * it before the throughput floor's first period (8 s) would. */
static void test_tiny_window_stall(void **state)
{
	struct http_server_cfg cfg = { .send_timeout_ms = 3000 };
	struct client c;
	size_t at_2s = 0;
	int t;

	restart(&cfg);
	cl_open(&c, V4, HTTP_PORT);
	c.hold = true;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	for (t = 0; t < 200 && http_server_stats.conns_active; t++) {
		cl_window(&c, 1);
		run_ms(100);
		if (t == 20)
			at_2s = c.len;
	}
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.timeouts_send, 1);
	assert_int_equal(http_server_stats.timeouts_slow, 0);
	assert_true(c.len > at_2s + 3);	/* progress, a byte at a time */
	assert_true(t >= 30 && t <= 66);	/* within two windows */
	cl_abort(&c);
}

/* A slow reader that acks more than send_min_bytes per window is not reset. */
static void test_slow_reader_served(void **state)
{
	struct http_server_cfg cfg = { .send_timeout_ms = 5000 };
	struct client c;
	struct resp r;
	int t;

	restart(&cfg);
	cl_open(&c, V6, HTTP_PORT);
	c.hold = true;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	for (t = 0; t < 60 && c.len < 65536; t++) {
		cl_window(&c, TCP_MSS);
		run_ms(1000);
	}
	assert_true(t > 3 * 5);		/* it took several windows */
	assert_int_equal(http_server_stats.timeouts_send, 0);
	cl_resume(&c);
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.body_len, 65536);
	cl_close(&c);
}

/* The throughput floor (tcpconn.h, HTTP_COPY_INFLIGHT its threshold), the policy alone: a
 * period passes when what was acknowledged would drain what was
 * outstanding at its start within 64 s; 8 KiB or less outstanding has no
 * floor. */
static bool floor_met(u32 out, u32 acked, u32 elapsed_ms)
{
	return tcpconn_floor_met(out, acked, elapsed_ms, HTTP_COPY_INFLIGHT);
}

static void test_send_floor_policy(void **state)
{
	(void)state;
	assert_true(floor_met(HTTP_COPY_INFLIGHT, 0, TCPCONN_FLOOR_MS));
	assert_false(floor_met(HTTP_COPY_INFLIGHT + 1, 0, TCPCONN_FLOOR_MS));
	/* 48 KiB (/metrics' size on a booted appliance): 6 KiB per 8 s */
	assert_false(floor_met(48 * 1024, 6 * 1024 - 1, 8000));
	assert_true(floor_met(48 * 1024, 6 * 1024, 8000));
	/* 300 B/s over 8 s */
	assert_false(floor_met(48 * 1024, 2400, 8000));
	/* 1 MiB: 128 KiB per 8 s; a longer period asks for more */
	assert_true(floor_met(1 << 20, 128 * 1024, 8000));
	assert_false(floor_met(1 << 20, 128 * 1024, 8500));
	/* no overflow at the largest */
	assert_false(floor_met(UINT32_MAX, UINT32_MAX / 9, 8000));
}

/* A reader that keeps its window open 300 B a second fetches /64k.bin:
 * above the stall's 4096 B per window, and the whole body is handed to
 * lwIP at once (the bulk send buffer), so the connection is back in READ
 * with no bulk grant. The throughput floor resets it within two of its
 * periods; before, nothing did until the body was read (over 200 s). */
static void test_slow_reader_floor(void **state)
{
	struct client c, o;
	struct resp r;
	int t;

	cl_open(&c, V4, HTTP_PORT);
	c.hold = true;
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	for (t = 0; t < 60 && http_server_stats.conns_active; t++) {
		cl_window(&c, 300);
		run_ms(1000);
	}
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.timeouts_slow, 1);
	assert_int_equal(http_server_stats.timeouts_send, 0);
	assert_true(t >= TCPCONN_FLOOR_MS / 1000 && t <= 2 * TCPCONN_FLOOR_MS / 1000 + 1);
	assert_true(c.len < 65536);
	cl_abort(&c);
	/* another is served */
	cl_open(&o, V6, HTTP_PORT);
	cl_send_str(&o, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&o, false, &r));
	assert_int_equal(r.status, 200);
	cl_close(&o);
}

/* ---- orphans ---- */

#define ORPHAN_PORT 40000

/* n clients send a request and FIN, then never ACK again: the server answers,
 * closes, and its PCBs wait in LAST_ACK for ACKs that never come. */
static void orphan_flood(struct client *c, int n)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n";
	int i;

	bh_lo = ORPHAN_PORT;
	bh_hi = (u16)(ORPHAN_PORT + n);
	for (i = 0; i < n; i++) {
		cl_open_from(&c[i], i & 1, HTTP_PORT, (u16)(ORPHAN_PORT + i));
		assert_true(c[i].connected);
		c[i].tx = (const u8 *)req;
		c[i].tx_len = sizeof req - 1;
		cl_push(&c[i]);
		assert_int_equal(tcp_shutdown(c[i].pcb, 0, 1), ERR_OK);
		run_ms(20);
	}
	run_ms(500);
}

static void orphans_end(struct client *c, int n)
{
	int i;

	bh_lo = bh_hi = 0;
	for (i = 0; i < n; i++)
		cl_abort(&c[i]);
}

/* More orphans than the cap: the oldest are aborted, the count stays at the
 * cap, and the heap they hold stays within the budget per orphan. */
static void test_orphans_cap(void **state)
{
	enum { N = VIREO_LWIP_ORPHANS_MAX + 40 };
	static struct client c[N];
	u64 capped0 = vireo_lwip_stats.orphans_capped;
	mem_size_t used0 = lwip_stats.mem.used;
	u32 count, bytes;

	orphan_flood(c, N);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, VIREO_LWIP_ORPHANS_MAX);
	assert_true(bytes <= VIREO_LWIP_ORPHANS_BYTES);
	assert_int_equal(vireo_lwip_stats.orphans_capped - capped0, N - VIREO_LWIP_ORPHANS_MAX);
	assert_int_equal(http_server_stats.conns_active, 0);
	assert_int_equal(http_server_stats.responses[2], N);
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "orphans: %u holding ~%u bytes (estimate), heap +%u\n", count, bytes,
			(unsigned)(lwip_stats.mem.used - used0));
	/* The heap holds the capped orphans (bytes is their estimate from
	 * above) and one PCB per client (288 with its block header, 16 of
	 * them lwIP's 4-tuple index's links, patch 0010); 40 uncapped orphans
	 * more would be ~28 KiB beyond that. */
	assert_true(lwip_stats.mem.used - used0 <= (mem_size_t)(bytes + N * 288));
	orphans_end(c, N);
}

/* Closes the peers complete (request, FIN, every ACK): no orphan is left
 * counted once lwIP has freed the PCBs or moved them to TIME_WAIT (the
 * port's queue, net/port/lwip_port.c, loses each one as lwIP unlinks it),
 * also when the application closes only after lwIP moved the PCB to
 * TIME_WAIT (the server's lingering close: its EOF comes in TIME_WAIT). */
static void test_orphans_gone_when_acked(void **state)
{
	enum { N = 8 };
	static struct client c[N];
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: v\r\nConnection: close\r\n\r\n";
	u32 count, bytes;
	int i;

	for (i = 0; i < N; i++) {
		cl_open_from(&c[i], i & 1, HTTP_PORT, (u16)(ORPHAN_PORT + 100 + i));
		assert_true(c[i].connected);
		c[i].tx = (const u8 *)req;
		c[i].tx_len = sizeof req - 1;
		cl_push(&c[i]);
		if (i & 2)
			assert_int_equal(tcp_shutdown(c[i].pcb, 0, 1), ERR_OK);
		run_ms(20);
	}
	run_ms(500);
	for (i = 0; i < N; i++)
		if (!(i & 2))
			assert_int_equal(tcp_shutdown(c[i].pcb, 0, 1), ERR_OK);
	run_ms(500);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, 0);
	assert_int_equal(bytes, 0);
	orphans_end(c, N);
}

/* Orphans whose peer stays silent go after VIREO_LWIP_ORPHAN_TIMEOUT_MS. */
static void test_orphans_timeout(void **state)
{
	enum { N = 8 };
	static struct client c[N];
	u64 timedout0 = vireo_lwip_stats.orphans_timedout;
	u32 count, bytes;

	orphan_flood(c, N);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, N);
	run_step(VIREO_LWIP_ORPHAN_TIMEOUT_MS - 5000, 250);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, N);
	run_step(6000, 250);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, 0);
	assert_int_equal(vireo_lwip_stats.orphans_timedout - timedout0, N);
	orphans_end(c, N);
}

/* Source keys: an IPv4 address, an IPv6 /64. */
static void test_source_keys(void **state)
{
	static const char *const same64[] = { "fd00::1", "fd00::ffff:1", "fd00::1:2:3:4" };
	struct conntab_src a, b;
	ip_addr_t x;
	size_t i;

	assert_true(ipaddr_aton("fd00::2", &x));
	conntab_src_of(&x, &a);
	for (i = 0; i < ARRAY_SIZE(same64); i++) {
		assert_true(ipaddr_aton(same64[i], &x));
		conntab_src_of(&x, &b);
		assert_true(conntab_src_equal(&a, &b));
	}
	assert_true(ipaddr_aton("fd00:0:0:1::2", &x));	/* the next /64 */
	conntab_src_of(&x, &b);
	assert_false(conntab_src_equal(&a, &b));
	assert_true(ipaddr_aton("192.168.7.2", &x));
	conntab_src_of(&x, &a);
	assert_true(ipaddr_aton("192.168.7.3", &x));
	conntab_src_of(&x, &b);
	assert_false(conntab_src_equal(&a, &b));
	assert_true(ipaddr_aton("::ffff:192.168.7.2", &x));	/* an IPv6 address, not the IPv4 one */
	conntab_src_of(&x, &b);
	assert_false(conntab_src_equal(&a, &b));
}

/* ---- byte ranges, directories, 404.html, the fallback ---- */

LINKSET_DECLARE(cmdline, const struct cmdline_opt);

/* One request on a new connection, its response into *r (HEAD: no body). */
static void ask(struct client *c, const char *req, bool head, struct resp *r)
{
	cl_open(c, V4, HTTP_PORT);
	assert_true(c->connected);
	cl_send_str(c, req);
	assert_true(cl_response(c, head, r));
}

/* Range on /64k.bin (byte i is i % 251): 206 with Content-Range and the
 * bytes, a- and -n forms, HEAD, 416 with bytes * /len, several ranges and a
 * stale If-Range whole (200 with Accept-Ranges), a matching one 206. */
static void test_range(void **state)
{
	const struct site_file *f = site_lookup("/64k.bin");
	struct client c;
	struct resp r;
	char req[512];

	assert_non_null(f);
	ask(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=1000-1999\r\n\r\n", false, &r);
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Content-Range"), "bytes 1000-1999/65536");
	assert_string_equal(hdr(&r, "Content-Length"), "1000");
	assert_string_equal(hdr(&r, "ETag"), f->etag);
	assert_string_equal(hdr(&r, "Content-Type"), "application/octet-stream");
	assert_null(hdr(&r, "Accept-Ranges"));
	assert_int_equal(r.body_len, 1000);
	assert_memory_equal(r.body, f->data + 1000, 1000);
	/* The next request on the connection is served whole. */
	cl_send_str(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Accept-Ranges"), "bytes");
	assert_int_equal(r.body_len, 65536);
	cl_close(&c);

	ask(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=65000-\r\n\r\n", false, &r);
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Content-Range"), "bytes 65000-65535/65536");
	assert_int_equal(r.body_len, 536);
	assert_memory_equal(r.body, f->data + 65000, 536);
	cl_close(&c);

	ask(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=-10\r\n\r\n", false, &r);
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Content-Range"), "bytes 65526-65535/65536");
	assert_memory_equal(r.body, f->data + 65526, 10);
	cl_close(&c);

	ask(&c, "HEAD /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=0-9\r\n\r\n", true, &r);
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Content-Length"), "10");
	run_ms(200);
	assert_int_equal(c.len, r.head_len);	/* no body */
	cl_close(&c);

	ask(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=65536-\r\n\r\n", false, &r);
	assert_int_equal(r.status, 416);
	assert_string_equal(hdr(&r, "Content-Range"), "bytes */65536");
	assert_string_equal(hdr(&r, "Connection"), "keep-alive");
	assert_int_equal(r.body_len, http_error_body(NULL, 0, 416));
	cl_send_str(&c, "GET /healthz HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	cl_close(&c);

	ask(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=0-1,5-6\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 65536);
	cl_close(&c);

	ask(&c, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=0-1\r\nIf-Range: \"stale\"\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 65536);
	cl_close(&c);

	snprintf(req, sizeof req, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=2-3\r\nIf-Range: %s\r\n\r\n",
		 f->etag);
	ask(&c, req, false, &r);
	assert_int_equal(r.status, 206);
	assert_memory_equal(r.body, f->data + 2, 2);
	cl_close(&c);

	/* If-None-Match matching wins over Range: 304. */
	snprintf(req, sizeof req, "GET /64k.bin HTTP/1.1\r\nHost: v\r\nRange: bytes=2-3\r\nIf-None-Match: %s\r\n\r\n",
		 f->etag);
	ask(&c, req, true, &r);
	assert_int_equal(r.status, 304);
	cl_close(&c);
	assert_int_equal(http_server_stats.conns_reset, 0);
}

static const u8 t_index[] = "<p>dir</p>", t_404[] = "<p>custom 404</p>", t_root[] = "<p>root</p>";
static const struct site_file t_site[] = {
	{ "/404.html", t_404, sizeof t_404 - 1, "text/html; charset=utf-8", "\"a\"", 0 },
	{ "/d ir/index.html", t_index, sizeof t_index - 1, "text/html; charset=utf-8", "\"b\"", 0 },
	{ "/dir/index.html", t_index, sizeof t_index - 1, "text/html; charset=utf-8", "\"c\"", 0 },
	{ "/index.html", t_root, sizeof t_root - 1, "text/html; charset=utf-8", "\"d\"", 0 },
	{ "/logo@2x.png", t_root, sizeof t_root - 1, "image/png", "\"e\"", 0 },
};

/* /dir -> 301 /dir/ with the query, escaped as needed; a file or a path
 * with a slash is not redirected; a missing path gets /404.html with 404. */
static void test_dir_redirect_and_404(void **state)
{
	struct client c;
	struct resp r;

	ask(&c, "GET /dir HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);	/* the baked site: no /dir */
	assert_int_equal(r.status, 404);
	cl_close(&c);

	site_use(t_site, ARRAY_SIZE(t_site));
	ask(&c, "GET /dir?a=1&b=%20 HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "/dir/?a=1&b=%20");
	assert_string_equal(hdr(&r, "Content-Length"), "0");
	cl_send_str(&c, "HEAD /dir HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "/dir/");
	cl_send_str(&c, "GET /dir/ HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, t_index, sizeof t_index - 1);
	cl_close(&c);

	ask(&c, "GET /d%20ir HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 301);
	assert_string_equal(hdr(&r, "Location"), "/d%20ir/");
	cl_close(&c);

	ask(&c, "GET /logo@2x.png HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	cl_close(&c);

	ask(&c, "GET /nothing HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 404);
	assert_string_equal(hdr(&r, "Content-Type"), "text/html; charset=utf-8");
	assert_int_equal(r.body_len, sizeof t_404 - 1);
	assert_memory_equal(r.body, t_404, sizeof t_404 - 1);
	cl_send_str(&c, "HEAD /index.html/ HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 404);
	assert_string_equal(hdr(&r, "Content-Length"), "17");
	run_ms(200);
	assert_int_equal(c.len, c.off);	/* no body */
	cl_close(&c);
	site_use(NULL, 0);
}

/* site.fallback=/index.html: a path with no file gets it (200). */
static void test_fallback(void **state)
{
	const struct cmdline_opt *const *set = LINKSET_BEGIN(cmdline);
	struct client c;
	struct resp r;

	site_use(t_site, ARRAY_SIZE(t_site));
	assert_int_equal(cmdline_parse_set("site.fallback=/index.html", set, LINKSET_COUNT(cmdline), NULL, NULL), 0);
	ask(&c, "GET /app/route/42 HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_memory_equal(r.body, t_root, sizeof t_root - 1);
	cl_close(&c);
	ask(&c, "GET /dir HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);	/* the redirect comes first */
	assert_int_equal(r.status, 301);
	cl_close(&c);
	assert_int_equal(cmdline_parse_set("site.fallback=", set, LINKSET_COUNT(cmdline), NULL, NULL), 0);
	ask(&c, "GET /app/route/42 HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 404);
	cl_close(&c);
	site_use(NULL, 0);
}

/* gzip_static: /app.js.gz beside /app.js is served for /app.js to a client
 * taking gzip (Content-Encoding, the .gz's ETag, /app.js's type), with
 * Vary either way; ranges and 304 go by the representation served. */
static void test_gzip_static(void **state)
{
	static const u8 js[] = "console.log('plain');\n", jsgz[] = "\x1f\x8b fake gzip bytes";
	static const struct site_file tab[] = {
		{ "/app.js", js, sizeof js - 1, "text/javascript; charset=utf-8", "\"js\"", 0 },
		{ "/app.js.gz", jsgz, sizeof jsgz - 1, "application/gzip", "\"gz\"", 0 },
		{ "/index.html", t_root, sizeof t_root - 1, "text/html; charset=utf-8", "\"d\"", 0 },
	};
	struct client c;
	struct resp r;

	site_use(tab, ARRAY_SIZE(tab));
	ask(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: br, gzip\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Encoding"), "gzip");
	assert_string_equal(hdr(&r, "Vary"), "Accept-Encoding");
	assert_string_equal(hdr(&r, "Content-Type"), "text/javascript; charset=utf-8");
	assert_string_equal(hdr(&r, "ETag"), "\"gz\"");
	assert_int_equal(r.body_len, sizeof jsgz - 1);
	assert_memory_equal(r.body, jsgz, sizeof jsgz - 1);
	cl_send_str(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip\r\nRange: bytes=0-1\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Content-Range"), "bytes 0-1/18");
	assert_memory_equal(r.body, jsgz, 2);
	cl_send_str(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip\r\nIf-None-Match: \"gz\"\r\n\r\n");
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 304);
	assert_string_equal(hdr(&r, "Vary"), "Accept-Encoding");
	cl_send_str(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip;q=0, br\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 200);
	assert_null(hdr(&r, "Content-Encoding"));
	assert_string_equal(hdr(&r, "Vary"), "Accept-Encoding");
	assert_string_equal(hdr(&r, "ETag"), "\"js\"");
	assert_memory_equal(r.body, js, sizeof js - 1);
	cl_send_str(&c, "GET /app.js.gz HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Content-Type"), "application/gzip");
	assert_null(hdr(&r, "Content-Encoding"));
	assert_null(hdr(&r, "Vary"));
	cl_send_str(&c, "GET / HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_null(hdr(&r, "Vary"));	/* no twin */
	cl_close(&c);
	site_use(NULL, 0);
}

/* brotli_static: /app.js.br beside /app.js (and .gz) goes to a client
 * taking br, first; gzip to one taking gzip only; the plain file to the
 * rest, with Vary every time. */
static void test_brotli_static(void **state)
{
	static const u8 js[] = "console.log('plain');\n", jsgz[] = "\x1f\x8b fake gzip bytes",
			jsbr[] = "fake brotli";
	static const struct site_file tab[] = {
		{ "/app.js", js, sizeof js - 1, "text/javascript; charset=utf-8", "\"js\"", 0 },
		{ "/app.js.br", jsbr, sizeof jsbr - 1, "application/octet-stream", "\"br\"", 0 },
		{ "/app.js.gz", jsgz, sizeof jsgz - 1, "application/gzip", "\"gz\"", 0 },
		{ "/only.css", js, sizeof js - 1, "text/css; charset=utf-8", "\"c\"", 0 },
		{ "/only.css.br", jsbr, sizeof jsbr - 1, "application/octet-stream", "\"cb\"", 0 },
	};
	struct client c;
	struct resp r;

	site_use(tab, ARRAY_SIZE(tab));
	ask(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Content-Encoding"), "br");
	assert_string_equal(hdr(&r, "Vary"), "Accept-Encoding");
	assert_string_equal(hdr(&r, "Content-Type"), "text/javascript; charset=utf-8");
	assert_string_equal(hdr(&r, "ETag"), "\"br\"");
	assert_int_equal(r.body_len, sizeof jsbr - 1);
	assert_memory_equal(r.body, jsbr, sizeof jsbr - 1);
	cl_send_str(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Content-Encoding"), "gzip");
	assert_string_equal(hdr(&r, "ETag"), "\"gz\"");
	cl_send_str(&c, "GET /app.js HTTP/1.1\r\nHost: v\r\nAccept-Encoding: br;q=0, gzip\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Content-Encoding"), "gzip");
	cl_send_str(&c, "GET /only.css HTTP/1.1\r\nHost: v\r\nAccept-Encoding: gzip\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_null(hdr(&r, "Content-Encoding"));	/* no .gz twin: the plain file */
	assert_string_equal(hdr(&r, "Vary"), "Accept-Encoding");
	assert_string_equal(hdr(&r, "ETag"), "\"c\"");
	cl_send_str(&c, "GET /only.css HTTP/1.1\r\nHost: v\r\nAccept-Encoding: br\r\nRange: bytes=0-3\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Content-Encoding"), "br");
	assert_string_equal(hdr(&r, "Content-Range"), "bytes 0-3/11");
	assert_memory_equal(r.body, jsbr, 4);
	cl_send_str(&c, "GET /app.js.br HTTP/1.1\r\nHost: v\r\nAccept-Encoding: br\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_null(hdr(&r, "Content-Encoding"));	/* the twin itself, as it is */
	assert_null(hdr(&r, "Vary"));
	cl_close(&c);
	site_use(NULL, 0);
}

/* site.cache=: Cache-Control by prefix or ending, the first match; a bad
 * value is refused (the key keeps its value). */
static void test_cache_control(void **state)
{
	const struct cmdline_opt *const *set = LINKSET_BEGIN(cmdline);
	size_t n = LINKSET_COUNT(cmdline);
	struct client c;
	struct resp r;

	site_use(t_site, ARRAY_SIZE(t_site));
	assert_int_equal(cmdline_parse_set("site.cache=/dir/:max-age=60;.html:no-cache;/:public", set, n, NULL,
					   NULL), 0);
	ask(&c, "GET /dir/ HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "Cache-Control"), "max-age=60");
	cl_send_str(&c, "GET / HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_string_equal(hdr(&r, "Cache-Control"), "no-cache");
	cl_send_str(&c, "GET /logo@2x.png HTTP/1.1\r\nHost: v\r\nRange: bytes=0-1\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "Cache-Control"), "public");
	cl_close(&c);
	static const char *const bad[] = { "site.cache=assets:x", "site.cache=/a", "site.cache=/a:", "site.cache=/a:b\x7f",
					   "site.cache=/a:b;", "site.cache=/a:;.b:c" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (cmdline_parse_set(bad[i], set, n, NULL, NULL) != 1)
			fail_msg("%s accepted", bad[i]);
	ask(&c, "GET /dir/ HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_string_equal(hdr(&r, "Cache-Control"), "max-age=60");	/* kept */
	cl_close(&c);
	assert_int_equal(cmdline_parse_set("site.cache=", set, n, NULL, NULL), 0);
	ask(&c, "GET /dir/ HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_null(hdr(&r, "Cache-Control"));
	cl_close(&c);
	site_use(NULL, 0);
}

/* site.headers=: the operator's headers on every file served (200, 206,
 * 304), in order, none on a 404; names the server sets itself, bad tokens,
 * bad values and too many are refused at parse and the last good list kept. */
static void test_site_headers(void **state)
{
	const struct cmdline_opt *const *set = LINKSET_BEGIN(cmdline);
	size_t n = LINKSET_COUNT(cmdline);
	struct client c;
	struct resp r;
	const char *etag;

	site_use(t_site, ARRAY_SIZE(t_site));
	assert_int_equal(cmdline_parse_set("site.headers=\"X-Frame-Options:DENY|Content-Security-Policy:default-src "
					   "'self'; img-src *\"", set, n, NULL, NULL), 0);
	ask(&c, "GET / HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(hdr(&r, "X-Frame-Options"), "DENY");
	assert_string_equal(hdr(&r, "Content-Security-Policy"), "default-src 'self'; img-src *");
	etag = hdr(&r, "ETag");
	assert_non_null(etag);
	{
		char req[160];

		snprintf(req, sizeof req, "GET / HTTP/1.1\r\nHost: v\r\nIf-None-Match: %s\r\n\r\n", etag);
		cl_send_str(&c, req);
	}
	assert_true(cl_response(&c, true, &r));
	assert_int_equal(r.status, 304);
	assert_string_equal(hdr(&r, "X-Frame-Options"), "DENY");
	cl_send_str(&c, "GET /logo@2x.png HTTP/1.1\r\nHost: v\r\nRange: bytes=0-1\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 206);
	assert_string_equal(hdr(&r, "X-Frame-Options"), "DENY");
	cl_send_str(&c, "GET /nope HTTP/1.1\r\nHost: v\r\n\r\n");
	assert_true(cl_response(&c, false, &r));
	assert_int_equal(r.status, 404);
	assert_null(hdr(&r, "X-Frame-Options"));
	cl_close(&c);
	static const char *const bad[] = { "site.headers=Content-Type:text/x", "site.headers=cache-control:no-cache",
					   "site.headers=\"Bad Name:x\"", "site.headers=X:", "site.headers=\"X: v\"",
					   "site.headers=X:v|", "site.headers=X:a\x7f", "site.headers=:v",
					   "site.headers=Strict-Transport-Security:max-age=60",
					   "site.headers=A:1|B:2|C:3|D:4|E:5|F:6|G:7|H:8|I:9" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (cmdline_parse_set(bad[i], set, n, NULL, NULL) != 1)
			fail_msg("%s accepted", bad[i]);
	ask(&c, "GET / HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_string_equal(hdr(&r, "X-Frame-Options"), "DENY");	/* kept */
	cl_close(&c);
	assert_int_equal(cmdline_parse_set("site.headers=", set, n, NULL, NULL), 0);
	ask(&c, "GET / HTTP/1.1\r\nHost: v\r\n\r\n", false, &r);
	assert_null(hdr(&r, "X-Frame-Options"));
	cl_close(&c);
	site_use(NULL, 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_index_v4),
		T(test_index_v6),
		T(test_head),
		T(test_not_modified),
		T(test_last_modified),
		T(test_rebind),
		T(test_healthz),
		T(test_https_redirect),
		T(test_framing_redirect),
		T(test_not_found_keeps_alive),
		T(test_range),
		T(test_dir_redirect_and_404),
		T(test_fallback),
		T(test_cache_control),
		T(test_site_headers),
		T(test_gzip_static),
		T(test_brotli_static),
		T(test_bad_request),
		T(test_bare_lf),
		T(test_method_not_allowed),
		T(test_uri_too_long),
		T(test_header_fields_too_large),
		T(test_keep_alive),
		T(test_pipelined),
		T(test_connection_close),
		T(test_http10),
		T(test_client_half_close),
		T(test_64k),
		T(test_64k_one_flight),
		T(test_snd_bulk_grants_bounded),
		T(test_send_slots_bounded),
		T(test_bufsets_bounded),
		T(test_metrics),
		T(test_metrics_allow),
		T(test_proxy_protocol),
		T(test_connection_limit),
		T(test_refused_newcomer_evicts_nobody),
		T(test_idle_timeout),
		T(test_header_timeout),
		T(test_send_timeout),
		T(test_client_abort),
		T(test_many_connections),
		T(test_start_twice),
		T(test_per_source_cap),
		T(test_fair_share),
		T(test_tiny_window_stall),
		T(test_slow_reader_served),
		T(test_send_floor_policy),
		T(test_slow_reader_floor),
		T(test_orphans_cap),
		T(test_orphans_gone_when_acked),
		T(test_orphans_timeout),
		T(test_source_keys),
		T(test_drain),
		T(test_drain_then_cut),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
