/*
 * The smallest vireo app, for copying (apps/template/README.md): one route
 * answering a greeting, one taking a body, a configuration key and a
 * metric, a lookup answered later (GET /resolve: vireo_resolve()), a
 * connection out (GET /connect), an upstream asked through the HTTP client
 * (GET /fetch), an upload of any size read as it arrives (POST /sum: a
 * streamed body) and, in make TLS=1 images, a verified TLS connection (GET
 * /tls). Build and boot it with `make run APP=apps/template`, then
 * `curl localhost:8080/hello?name=you`.
 */
#include "vireo/vireo.h"

/* template.greeting=... in vireo.cfg or on the command line. */
VIREO_CONFIG_STR(greeting, "template.greeting", 32, "hello", "the word GET /hello greets with");

VIREO_COUNTER(hellos, "template_hello_total", "Greetings sent by GET /hello.");

/* GET /hello[?name=someone] -> "hello, someone!" */
static void template_hello(vireo_req r, void *arg)
{
	char name[64], text[128];
	int n;

	(void)arg;
	if (vireo_req_query_param(r, "name", name, sizeof name) < 0)
		strlcpy(name, "world", sizeof name);
	n = vireo_snprintf(text, sizeof text, "%s, %s!\n", greeting, name);
	vireo_counter_inc(&hellos);
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, (size_t)n);
}

/* POST /echo with a body of up to 4 KiB -> the same bytes back. */
static void template_echo(vireo_req r, void *arg)
{
	size_t len;
	const void *body = vireo_req_body(r, &len);

	(void)arg;
	vireo_resp_send(r, 200, "application/octet-stream", body, len);
}

/*
 * POST /sum with a body of any length (Content-Length or chunked) ->
 * "bytes N fnv1a HHHHHHHH": the body is streamed (on_body), never held
 * whole, so it may be far larger than memory. One sum per request, kept in
 * a slot of its own (a few uploads at once; more are 503).
 */
#define TEMPLATE_SUMS 4
static struct template_sum {
	u32 id;		/* the request's, 0 when free */
	u32 fnv;
	u64 bytes;
} template_sums[TEMPLATE_SUMS];

static struct template_sum *template_sum_of(vireo_req r)
{
	for (unsigned i = 0; i < TEMPLATE_SUMS; i++)
		if (template_sums[i].id == r.id)
			return &template_sums[i];
	return NULL;
}

/* The exchange ended (answered, or the client left): the slot is free. */
static void template_sum_done(vireo_req r, bool done, void *arg)
{
	struct template_sum *s = arg;

	(void)r;
	(void)done;
	s->id = 0;
}

/* The head: a slot for the sum, before any byte of the body. */
static void template_sum_head(vireo_req r, void *arg)
{
	struct template_sum *s = template_sum_of((vireo_req){ 0 });

	(void)arg;
	if (!s) {
		vireo_resp_error(r, 503);
		return;
	}
	*s = (struct template_sum){ .id = r.id, .fnv = 2166136261u };
	vireo_req_on_done(r, template_sum_done, s);
}

/* Body bytes as they arrive: all taken (return less to hold the client
 * back, and vireo_req_body_resume() later). */
static size_t template_sum_body(vireo_req r, const void *data, size_t len, void *arg)
{
	struct template_sum *s = template_sum_of(r);
	const u8 *d = data;

	(void)arg;
	if (!s)
		return len;
	for (size_t i = 0; i < len; i++)
		s->fnv = (s->fnv ^ d[i]) * 16777619u;
	s->bytes += len;
	return len;
}

static void template_sum_end(vireo_req r, void *arg)
{
	struct template_sum *s = template_sum_of(r);
	char text[64];
	int n;

	(void)arg;
	if (!s)
		return;
	n = vireo_snprintf(text, sizeof text, "bytes %llu fnv1a %08x\n", (unsigned long long)s->bytes,
			   s->fnv);
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, (size_t)n);
}

/* The end of a GET /resolve lookup: the addresses, one a line, and the
 * TTL; or 502 with the error. ctx is the request's id (a stale handle,
 * if the client left, is refused by vireo_resp_send). */
static void template_resolved(void *ctx, int err, const struct vireo_addr *a, unsigned n, u32 ttl)
{
	vireo_req r = { .id = (u32)(uintptr_t)ctx };
	char text[VIREO_RESOLVE_MAX * VIREO_ADDR_STRLEN + 32];
	size_t len = 0;

	if (err) {
		len = (size_t)vireo_snprintf(text, sizeof text, "error %d\n", err);
		vireo_resp_send(r, 502, "text/plain; charset=utf-8", text, len);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		len += vireo_addr_str(&a[i], text + len, sizeof text - len - 1);
		text[len++] = '\n';
	}
	len += (size_t)vireo_snprintf(text + len, sizeof text - len, "ttl %u\n", ttl);
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, len);
}

/* GET /resolve?name=host[&family=4|6] -> its addresses, answered later
 * (vireo_resolve() calls back from the loop: a deferred response). */
static void template_resolve(vireo_req r, void *arg)
{
	char name[254], fam[4] = "";
	unsigned families = VIREO_RESOLVE_ANY;
	int err;

	(void)arg;
	if (vireo_req_query_param(r, "name", name, sizeof name) < 0) {
		vireo_resp_send(r, 400, "text/plain; charset=utf-8", "name?\n", 6);
		return;
	}
	if (vireo_req_query_param(r, "family", fam, sizeof fam) >= 0)
		families = fam[0] == '4' ? VIREO_RESOLVE_A : fam[0] == '6' ? VIREO_RESOLVE_AAAA : VIREO_RESOLVE_ANY;
	err = vireo_resolve(name, families, 0, template_resolved, (void *)(uintptr_t)r.id);
	if (err)
		template_resolved((void *)(uintptr_t)r.id, err, NULL, 0, 0);
}

/* GET /connect?name=host&port=N -> "connected ADDR" or "failed REASON":
 * vireo_tcp_connect_name(), the egress policy on every address. */
static vireo_tcp_out template_client;

static void template_connected(vireo_tcp c, void *arg)
{
	vireo_req r = { .id = (u32)(uintptr_t)vireo_tcp_ctx(c) };
	struct vireo_addr a;
	char text[80];
	size_t n = 10;

	(void)arg;
	__builtin_memcpy(text, "connected ", 10);
	if (vireo_tcp_peer(c, &a) == 0)
		n += vireo_addr_str(&a, text + n, sizeof text - n - 1);
	text[n++] = '\n';
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, n);
	vireo_tcp_close(c);
}

static void template_failed(vireo_tcp c, enum vireo_tcp_fail why, void *arg)
{
	vireo_req r = { .id = (u32)(uintptr_t)vireo_tcp_ctx(c) };
	char text[40];
	int n = vireo_snprintf(text, sizeof text, "failed %s\n", vireo_tcp_fail_str(why));

	(void)arg;
	vireo_resp_send(r, 502, "text/plain; charset=utf-8", text, (size_t)n);
}

static size_t template_upstream_recv(vireo_tcp c, const void *data, size_t len, void *arg)
{
	(void)c;
	(void)data;
	(void)arg;
	return len;
}

/* The query's port=N: 1 to 65535, else 0. */
static u32 template_port(vireo_req r)
{
	char port[8];
	u32 p = 0;

	if (vireo_req_query_param(r, "port", port, sizeof port) >= 0)
		for (const char *d = port; *d >= '0' && *d <= '9' && p <= 65535; d++)
			p = p * 10 + (u32)(*d - '0');
	return p <= 65535 ? p : 0;
}

static void template_connect(vireo_req r, void *arg)
{
	char name[254];
	vireo_tcp c;
	u32 p = template_port(r);
	int err;

	(void)arg;
	if (vireo_req_query_param(r, "name", name, sizeof name) < 0 || p == 0) {
		vireo_resp_send(r, 400, "text/plain; charset=utf-8", "name? port?\n", 12);
		return;
	}
	if (!template_client.id &&
	    vireo_tcp_client(&(struct vireo_tcp_client){ .name = "template", .connect_timeout_ms = 5000,
							  .on_connected = template_connected, .on_fail = template_failed,
							  .on_recv = template_upstream_recv }, &template_client) < 0) {
		vireo_resp_send(r, 503, "text/plain; charset=utf-8", "no client\n", 10);
		return;
	}
	err = vireo_tcp_connect_name(template_client, name, (u16)p, (void *)(uintptr_t)r.id, &c);
	if (err) {
		char text[32];
		int n = vireo_snprintf(text, sizeof text, "error %d\n", err);

		vireo_resp_send(r, 502, "text/plain; charset=utf-8", text, (size_t)n);
	}
}

/* GET /fetch?host=H&port=N&path=/p[&method=POST] -> "STATUS\nBODY" from
 * an upstream through the HTTP client (vireo/http_client.h): one pool
 * (keep-alive) per host and port, made at first use; the whole body at
 * most 4 KiB (vireo_http_fetch()); 502 "error REASON" if it failed. */
static vireo_http_pool template_pool;
static char template_pool_host[64];
static u32 template_pool_port;

static void template_fetched(void *ctx, int err, int status, const void *body, size_t len)
{
	vireo_req r = { .id = (u32)(uintptr_t)ctx };
	char text[4200];
	int n;

	if (err) {
		n = vireo_snprintf(text, sizeof text, "error %s\n", vireo_http_err_str(err));
		vireo_resp_send(r, 502, "text/plain; charset=utf-8", text, (size_t)n);
		return;
	}
	n = vireo_snprintf(text, sizeof text, "%d\n", status);
	__builtin_memcpy(text + n, body, len);
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, (size_t)n + len);
}

static void template_fetch(vireo_req r, void *arg)
{
	char host[64], path[128], method[8] = "GET";
	u32 p = template_port(r);
	int err;

	(void)arg;
	if (vireo_req_query_param(r, "method", method, sizeof method) < 0)
		strlcpy(method, "GET", sizeof method);
	if (vireo_req_query_param(r, "host", host, sizeof host) < 0 || p == 0 ||
	    vireo_req_query_param(r, "path", path, sizeof path) < 0) {
		vireo_resp_send(r, 400, "text/plain; charset=utf-8", "host? port? path?\n", 18);
		return;
	}
	if (!template_pool.id || strcmp(host, template_pool_host) || p != template_pool_port) {
		err = vireo_http_pool_new(&(struct vireo_http_pool_cfg){ .name = "upstream", .host = host,
									  .port = (u16)p, .max_conns = 2,
									  .idle_timeout_ms = 20000 },
					  &template_pool);
		if (err) {
			vireo_resp_send(r, 503, "text/plain; charset=utf-8", "no pool\n", 8);
			return;
		}
		strlcpy(template_pool_host, host, sizeof template_pool_host);
		template_pool_port = p;
	}
	err = vireo_http_fetch(template_pool,
			       &(struct vireo_http_request){ .method = method, .target = path,
							     .body = "ping", .body_len = strcmp(method, "POST") ? 0 : 4 },
			       4096, template_fetched, (void *)(uintptr_t)r.id);
	if (err) {
		char text[32];
		int n = vireo_snprintf(text, sizeof text, "error %d\n", err);

		vireo_resp_send(r, 502, "text/plain; charset=utf-8", text, (size_t)n);
	}
}

/* GET /tls?name=host&port=N[&addr=A.B.C.D] (make TLS=1 images) -> a TLS
 * connection verified for name (the address's, or the name's addresses),
 * offering ALPN "vireo-test" and "http/1.1"; once verified it sends a GET
 * and answers "connected ADDR alpn=PROTO\n" and the first line the server
 * sent back, or "failed REASON" (cert_name, cert_expired, cert_untrusted,
 * noclock, noca, ...). */
static vireo_tcp_out template_tls_client;
static const char *const template_alpn[] = { "vireo-test", "http/1.1", NULL };

static void template_tls_connected(vireo_tcp c, void *arg)
{
	static const char get[] = "GET / HTTP/1.0\r\n\r\n";

	(void)arg;
	if (vireo_tcp_send(c, get, sizeof get - 1) != (int)(sizeof get - 1))
		vireo_tcp_abort(c);
}

static size_t template_tls_recv(vireo_tcp c, const void *data, size_t len, void *arg)
{
	vireo_req r = { .id = (u32)(uintptr_t)vireo_tcp_ctx(c) };
	const char *d = data, *alpn = vireo_tls_alpn(c);
	struct vireo_addr a;
	char text[192], peer[VIREO_ADDR_STRLEN] = "?";
	size_t line = 0;
	int n;

	(void)arg;
	if (!r.id)
		return len;	/* answered already */
	while (line < len && line < 64 && d[line] != '\r' && d[line] != '\n')
		line++;
	if (line == len && line < 64)
		return 0;	/* the rest of the line first */
	if (vireo_tcp_peer(c, &a) == 0)
		vireo_addr_str(&a, peer, sizeof peer);
	n = vireo_snprintf(text, sizeof text, "connected %s alpn=%s\n%.*s\n", peer, alpn ? alpn : "none",
			   (int)line, d);
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, (size_t)n);
	vireo_tcp_set_ctx(c, NULL);
	vireo_tcp_close(c);
	return len;
}

static void template_tls_closed(vireo_tcp c, void *arg)
{
	vireo_req r = { .id = (u32)(uintptr_t)vireo_tcp_ctx(c) };

	(void)arg;
	if (r.id)
		vireo_resp_send(r, 502, "text/plain; charset=utf-8", "closed before a line\n", 21);
}

/* A dotted IPv4 address into *a: true when s is one. */
static bool template_ipv4(const char *s, struct vireo_addr *a)
{
	u32 part = 0, parts = 0, digits = 0;

	__builtin_memset(a, 0, sizeof *a);
	for (;; s++) {
		if (*s >= '0' && *s <= '9' && digits < 3) {
			part = part * 10 + (u32)(*s - '0');
			digits++;
		} else if ((*s == '.' || !*s) && digits && part <= 255 && parts < 4) {
			a->ip[parts++] = (u8)part;
			part = digits = 0;
			if (!*s)
				break;
		} else {
			return false;
		}
	}
	a->family = VIREO_AF_INET;
	return parts == 4;
}

static void template_tls(vireo_req r, void *arg)
{
	char name[254], addr[16];
	struct vireo_addr a;
	vireo_tcp c;
	u32 p = template_port(r);
	int err;

	(void)arg;
	if (vireo_req_query_param(r, "name", name, sizeof name) < 0 || p == 0) {
		vireo_resp_send(r, 400, "text/plain; charset=utf-8", "name? port?\n", 12);
		return;
	}
	if (!template_tls_client.id &&
	    vireo_tcp_client(&(struct vireo_tcp_client){ .name = "template_tls", .connect_timeout_ms = 5000,
							  .on_connected = template_tls_connected,
							  .on_fail = template_failed, .on_recv = template_tls_recv,
							  .on_close = template_tls_closed, .tls = true,
							  .alpn = template_alpn }, &template_tls_client) < 0) {
		vireo_resp_send(r, 503, "text/plain; charset=utf-8", "no TLS client\n", 14);
		return;
	}
	if (vireo_req_query_param(r, "addr", addr, sizeof addr) >= 0) {
		if (!template_ipv4(addr, &a)) {
			vireo_resp_send(r, 400, "text/plain; charset=utf-8", "addr?\n", 6);
			return;
		}
		a.port = (u16)p;
		err = vireo_tls_connect(template_tls_client, &a, name, (void *)(uintptr_t)r.id, &c);
	} else {
		err = vireo_tcp_connect_name(template_tls_client, name, (u16)p, (void *)(uintptr_t)r.id, &c);
	}
	if (err) {
		char text[32];
		int n = vireo_snprintf(text, sizeof text, "error %d\n", err);

		vireo_resp_send(r, 502, "text/plain; charset=utf-8", text, (size_t)n);
	}
}

static int template_init(void)
{
	int err;

	err = vireo_http_route(&(struct vireo_route){ .path = "/hello", .methods = VIREO_GET,
						      .handler = template_hello });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/echo", .methods = VIREO_POST,
							      .max_body = 4096, .handler = template_echo });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/sum", .methods = VIREO_POST | VIREO_PUT,
							      .handler = template_sum_head,
							      .on_body = template_sum_body,
							      .on_body_end = template_sum_end });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/resolve", .methods = VIREO_GET,
							      .handler = template_resolve });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/connect", .methods = VIREO_GET,
							      .handler = template_connect });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/fetch", .methods = VIREO_GET,
							      .handler = template_fetch });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/tls", .methods = VIREO_GET,
							      .handler = template_tls });
	return err;
}

VIREO_APP(template, .name = "template", .init = template_init, .help = "GET /hello, POST /echo, POST /sum: copy me");
