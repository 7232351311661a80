/* apps/kv/kv.c's HTTP mapping on the host, against a stand-in for the
 * application API (the handful of vireo_* calls kv.c makes, recording what
 * it answers): statuses, ETag and Allow headers, JSON bodies, query
 * parameters, the metrics it counts. The real runtime is exercised by
 * tests/qemu/test_kv.py; this pins kv.c's own decisions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "vireo/vireo.h"
#include "apps/kv/kv_store.h"

/* ---- the stand-in API ---- */
struct fake_req {
	enum vireo_method method;
	const char *subpath, *query;
	const char *hdr_name[4], *hdr_val[4];
	const void *body;
	size_t body_len;
	/* the answer */
	int status;
	char type[64];
	char body_out[(1 << 16) + 1];
	size_t out_len, content_length;
	char resp_hdrs[512];
	int answers;
};

static struct fake_req Q;
static struct vireo_route route;
static int routes;
static size_t mem_used, mem_limit = VIREO_APP_MEM_DEFAULT;
static unsigned fail_alloc;

int vireo_http_route_add(const struct vireo_route *r)
{
	route = *r;
	routes++;
	return 0;
}

void vireo_http_bodies(void)
{
}

const char *vireo_req_subpath(vireo_req r)
{
	return Q.subpath;
}

enum vireo_method vireo_req_method(vireo_req r)
{
	return Q.method;
}

const char *vireo_req_header(vireo_req r, const char *name)
{
	for (int i = 0; i < 4; i++)
		if (Q.hdr_name[i] && !strcasecmp(Q.hdr_name[i], name))
			return Q.hdr_val[i];
	return NULL;
}

const void *vireo_req_body(vireo_req r, size_t *len)
{
	*len = Q.body_len;
	return Q.body;
}

static int hexv(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* As the header describes it: first match, percent-decoded, '+' a space. */
int vireo_req_query_param(vireo_req r, const char *name, char *buf, size_t size)
{
	const char *p = Q.query ? Q.query : "";
	size_t nl = strlen(name);

	while (*p) {
		const char *end = strchr(p, '&');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len > nl && !strncmp(p, name, nl) && p[nl] == '=') {
			size_t w = 0;
			for (size_t i = nl + 1; i < len; i++) {
				int c = (u8)p[i];
				if (c == '%' && i + 2 < len + 1 && hexv(p[i + 1]) >= 0 && hexv(p[i + 2]) >= 0) {
					c = hexv(p[i + 1]) << 4 | hexv(p[i + 2]);
					i += 2;
				} else if (c == '+') {
					c = ' ';
				}
				if (c == 0)
					return -EINVAL;
				if (w + 1 >= size) {
					buf[0] = 0;
					return -E2BIG;
				}
				buf[w++] = (char)c;
			}
			buf[w] = 0;
			return (int)w;
		}
		p += len + (end ? 1 : 0);
	}
	return -ENOENT;
}

int vireo_resp_header(vireo_req r, const char *name, const char *value)
{
	size_t n = strlen(Q.resp_hdrs);

	snprintf(Q.resp_hdrs + n, sizeof Q.resp_hdrs - n, "%s: %s\n", name, value);
	return 0;
}

int vireo_resp_send(vireo_req r, int status, const char *type, const void *body, size_t len)
{
	if ((len && !body) || (status == 204 && len))
		return -EINVAL;
	Q.answers++;
	Q.status = status;
	Q.content_length = len;
	if (status == 304 || Q.method == VIREO_HEAD)	/* the length; no body */
		len = 0;
	assert_true(len < sizeof Q.body_out);
	snprintf(Q.type, sizeof Q.type, "%s", type ? type : "");
	if (len)
		memcpy(Q.body_out, body, len);
	Q.body_out[len] = 0;
	Q.out_len = len;
	return 0;
}

/* One streamed response at a time, kept apart from Q so other requests can
 * run while it is open: the test opens the window and calls on_writable. */
static struct {
	bool open, ended;
	u64 length;
	size_t window;		/* bytes the next write may take */
	u8 buf[1 << 17];
	size_t len;
	void (*writable)(vireo_req r, void *arg);
	void *writable_arg;
	void (*done)(vireo_req r, bool done, void *arg);
	void *done_arg;
} ST;

int vireo_req_on_done(vireo_req r, void (*fn)(vireo_req r, bool done, void *arg), void *arg)
{
	ST.done = fn;
	ST.done_arg = arg;
	return 0;
}

int vireo_resp_on_writable(vireo_req r, void (*fn)(vireo_req r, void *arg), void *arg)
{
	ST.writable = fn;
	ST.writable_arg = arg;
	return 0;
}

int vireo_resp_start(vireo_req r, int status, const char *type, u64 length)
{
	assert_false(ST.open);
	Q.answers++;
	Q.status = status;
	snprintf(Q.type, sizeof Q.type, "%s", type ? type : "");
	ST.open = true;
	ST.ended = false;
	ST.length = length;
	ST.len = 0;
	return 0;
}

int vireo_resp_write(vireo_req r, const void *data, size_t len)
{
	size_t n = len < ST.window ? len : ST.window;

	assert_true(ST.open && !ST.ended);
	assert_true(ST.len + len <= ST.length);
	memcpy(ST.buf + ST.len, data, n);
	ST.len += n;
	ST.window -= n;
	return (int)n;
}

/* The exchange ends: on_done once, then the handle is gone. */
static void stream_finish(bool done)
{
	void (*fn)(vireo_req, bool, void *) = ST.done;

	ST.open = false;
	ST.done = NULL;
	ST.writable = NULL;
	if (fn)
		fn((vireo_req){2}, done, ST.done_arg);
}

int vireo_resp_end(vireo_req r)
{
	assert_true(ST.open && !ST.ended);
	ST.ended = true;
	stream_finish(ST.len == ST.length);
	return 0;
}

int vireo_resp_error(vireo_req r, int status)
{
	Q.answers++;
	Q.status = status;
	return 0;
}

void *vireo_alloc(size_t size)
{
	void *p;

	if (fail_alloc) {
		fail_alloc--;
		return NULL;
	}
	if (mem_used + size + VIREO_ALLOC_OVERHEAD > mem_limit)
		return NULL;
	p = calloc(1, size + 16);
	assert_non_null(p);
	*(size_t *)p = size;
	mem_used += size + VIREO_ALLOC_OVERHEAD;
	return (char *)p + 16;
}

void vireo_free(void *p)
{
	if (!p)
		return;
	p = (char *)p - 16;
	mem_used -= *(size_t *)p + VIREO_ALLOC_OVERHEAD;
	free(p);
}

size_t vireo_mem_limit(void)
{
	return mem_limit;
}

static char last_log[256];

void vireo_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_log, sizeof last_log, fmt, ap);
	va_end(ap);
}

void vireo_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_log, sizeof last_log, fmt, ap);
	va_end(ap);
}

void vireo_counter_vec_add(struct vireo_counter_vec *c, u32 i, u64 n)
{
	if (i < c->n)
		c->v[i] += n;
}

void vireo_random(void *buf, size_t len)
{
	memset(buf, 0x5c, len);
}

/* The data disk (vireo/store.h): kv asks for it at init and the answer
 * comes later, from the loop: here setup() gives it, no disk (memory only).
 * The rest is never reached without a disk. */
static unsigned store_opens;
static void (*store_ready)(int err, void *arg);
static void *store_ready_arg;

int vireo_store_open(void (*ready)(int err, void *arg), void *arg)
{
	if (store_opens++)
		return -EALREADY;	/* as the real one: once per boot */
	store_ready = ready;
	store_ready_arg = arg;
	return 0;
}

/* test_key_not_loaded boots kv again on a read-only disk of its own
 * (ro_keys, sorted), whose reads complete when ro_run() says. */
struct ro_key {
	const char *key, *val;
	int err;	/* what a read of it completes with */
};
static const struct ro_key *ro_keys;
static unsigned ro_nkeys;
static const struct ro_key *ro_read;	/* the read in flight */
static void (*ro_got)(int err, const void *val, size_t vlen, void *arg);
static void *ro_got_arg;

static const struct ro_key *ro_find(const void *key, size_t klen)
{
	for (unsigned i = 0; i < ro_nkeys; i++)
		if (strlen(ro_keys[i].key) == klen && !memcmp(ro_keys[i].key, key, klen))
			return &ro_keys[i];
	return NULL;
}

/* The data disk, once a test attaches it (disk_attach): a model that
 * holds what is durable (disk[]), queues each put or delete (ops[]) until
 * the test completes it (complete(): durable, or failed as the store fails
 * them), and refuses the next write at once when refuse_next is set. */
struct dent {
	u8 key[256], val[32768];
	size_t klen, vlen;
	bool used;
};
struct fop {
	bool put;
	u8 key[256], val[32768];
	size_t klen, vlen;
	void (*done)(int err, void *arg);
	void *arg;
};
static struct dent disk[32];
static struct fop ops[16];
static unsigned nops;
static bool disk_on;
static int refuse_next;

static struct dent *disk_find(const void *key, size_t klen)
{
	for (unsigned i = 0; i < 32; i++)
		if (disk[i].used && disk[i].klen == klen && !memcmp(disk[i].key, key, klen))
			return &disk[i];
	return NULL;
}

static int store_queue(bool put, const void *key, size_t klen, const void *val, size_t vlen,
		       void (*done)(int err, void *arg), void *arg)
{
	struct fop *o;

	if (!disk_on)
		fail_msg("a write without a disk");
	if (refuse_next) {
		int err = refuse_next;

		refuse_next = 0;
		return err;
	}
	assert_true(nops < 16 && klen < 256 && vlen <= sizeof o->val);
	o = &ops[nops++];
	o->put = put;
	memcpy(o->key, key, klen);
	o->klen = klen;
	if (vlen)
		memcpy(o->val, val, vlen);
	o->vlen = vlen;
	o->done = done;
	o->arg = arg;
	return 0;
}

int vireo_store_put(const void *key, size_t klen, const void *val, size_t vlen, void (*done)(int err, void *arg),
		    void *arg)
{
	if (ro_keys)
		fail_msg("vireo_store_put without a writable disk");
	return store_queue(true, key, klen, val, vlen, done, arg);
}

int vireo_store_del(const void *key, size_t klen, void (*done)(int err, void *arg), void *arg)
{
	bool queued = false;

	if (ro_keys)
		fail_msg("vireo_store_del without a writable disk");
	for (unsigned i = 0; i < nops; i++)
		queued |= ops[i].klen == klen && !memcmp(ops[i].key, key, klen);
	if (disk_on && !refuse_next && !queued && !disk_find(key, klen))
		return -ENOENT;	/* as the store: nothing durable or pending */
	return store_queue(false, key, klen, NULL, 0, done, arg);
}

/* The oldest queued write completes: durable (err 0, the model disk takes
 * it) or failed. Returns the status kv answered it with. */
static int complete(int err)
{
	struct fop o;

	assert_true(nops > 0);
	o = ops[0];
	memmove(ops, ops + 1, --nops * sizeof ops[0]);
	if (!err) {
		struct dent *d = disk_find(o.key, o.klen);

		if (!o.put) {
			if (d)
				d->used = false;
		} else {
			for (unsigned i = 0; !d && i < 32; i++)
				if (!disk[i].used)
					d = &disk[i];
			assert_non_null(d);
			d->used = true;
			memcpy(d->key, o.key, o.klen);
			d->klen = o.klen;
			memcpy(d->val, o.val, o.vlen);
			d->vlen = o.vlen;
		}
	}
	memset(&Q, 0, sizeof Q);
	o.done(err, o.arg);
	assert_int_equal(Q.answers, 1);
	return Q.status;
}

int vireo_store_get(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
		    void *arg)
{
	if (ro_keys) {
		const struct ro_key *k;

		if (!ro_keys)
			fail_msg("vireo_store_get without a disk");
		k = ro_find(key, klen);
		if (!k)
			return -ENOENT;
		assert_null(ro_read);	/* kv loads one key at a time */
		ro_read = k;
		ro_got = got;
		ro_got_arg = arg;
		return 0;
	}
	if (!disk_on)
		fail_msg("vireo_store_get without a disk");
	return disk_find(key, klen) ? -EIO : -ENOENT;	/* the tests start from a blank disk */
}

/* Completes the reads kv asks for, one after the other; how many. */
static unsigned ro_run(void)
{
	unsigned n = 0;

	while (ro_read) {
		const struct ro_key *k = ro_read;

		ro_read = NULL;
		ro_got(k->err, k->err ? NULL : k->val, k->err ? 0 : strlen(k->val), ro_got_arg);
		n++;
	}
	return n;
}

unsigned vireo_store_keys(const void *prefix, size_t plen, const void *after, size_t alen,
			  bool (*fn)(const void *key, size_t klen, size_t vlen, void *arg), void *arg)
{
	const struct dent *next = NULL;

	if (ro_keys) {
		unsigned n = 0;

		if (!ro_keys)
			fail_msg("vireo_store_keys without a disk");
		for (unsigned i = 0; i < ro_nkeys; i++) {
			const char *k = ro_keys[i].key;
			size_t kl = strlen(k), m = kl < alen ? kl : alen;

			if (kl < plen || (plen && memcmp(k, prefix, plen)))
				continue;
			if (alen) {
				int c = memcmp(k, after, m);

				if (c < 0 || (c == 0 && kl <= alen))
					continue;	/* not after `after` */
			}
			n++;
			if (!fn(k, kl, strlen(ro_keys[i].val), arg))
				break;
		}
		return n;
	}
	if (!disk_on)
		fail_msg("vireo_store_keys without a disk");
	/* Only what kv's load asks: the first key after `after`. */
	assert_int_equal(plen, 0);
	for (unsigned i = 0; i < 32; i++) {
		const struct dent *d = &disk[i];
		int c;

		if (!d->used)
			continue;
		c = memcmp(d->key, after, MIN(d->klen, alen));
		if (c < 0 || (c == 0 && d->klen <= alen))
			continue;
		if (next) {
			c = memcmp(d->key, next->key, MIN(d->klen, next->klen));
			if (c > 0 || (c == 0 && d->klen > next->klen))
				continue;
		}
		next = d;
	}
	if (!next)
		return 0;
	fn(next->key, next->klen, next->vlen, arg);
	return 1;
}

/* ---- driving kv.c ---- */
extern const struct vireo_app *const __start_vireo_apps[], *const __stop_vireo_apps[];
extern struct vireo_metric *const __start_vireo_metrics[], *const __stop_vireo_metrics[];

static const struct vireo_metric *metric(const char *name)
{
	for (struct vireo_metric *const *m = __start_vireo_metrics; m < __stop_vireo_metrics; m++)
		if (!strcmp((*m)->name, name))
			return *m;
	fail_msg("no metric %s", name);
	return NULL;
}

static s64 gauge(const char *name)
{
	return ((struct vireo_gauge *)metric(name)->value)->v;
}

static u64 vec(const char *name, const char *label)
{
	const struct vireo_counter_vec *v = metric(name)->value;

	for (u32 i = 0; i < v->n; i++)
		if (!strcmp(v->values[i], label))
			return v->v[i];
	fail_msg("no label %s", label);
	return 0;
}

static bool may_wait;	/* a write may wait for the disk (answers 0) */

static int req(enum vireo_method m, const char *subpath, const char *query, const void *body,
	       size_t len, ...)
{
	va_list ap;
	int i = 0;
	const char *n;

	memset(&Q, 0, sizeof Q);
	Q.method = m;
	Q.subpath = subpath;
	Q.query = query;
	Q.body = body;
	Q.body_len = len;
	va_start(ap, len);
	while ((n = va_arg(ap, const char *)) && i < 4) {
		Q.hdr_name[i] = n;
		Q.hdr_val[i++] = va_arg(ap, const char *);
	}
	va_end(ap);
	route.handler((vireo_req){1}, route.arg);
	if (may_wait && !Q.answers)
		return 0;	/* waits for the disk */
	assert_int_equal(Q.answers, 1);
	return Q.status;
}

#define PUT(key, lit, ...) req(VIREO_PUT, key, NULL, lit, sizeof(lit) - 1, "Content-Length", "x", ##__VA_ARGS__, NULL)
#define GET(key, ...) req(VIREO_GET, key, NULL, NULL, 0, ##__VA_ARGS__, NULL)
#define DEL(key, ...) req(VIREO_DELETE, key, NULL, NULL, 0, ##__VA_ARGS__, NULL)
#define LIST(q) req(VIREO_GET, "", q, NULL, 0, NULL)
/* A write that must wait for the disk (queued, no answer yet). */
#define PUTW(key, lit, ...) do { \
		may_wait = true; \
		assert_int_equal(PUT(key, lit, ##__VA_ARGS__), 0); \
		may_wait = false; \
	} while (0)
#define DELW(key, ...) do { \
		may_wait = true; \
		assert_int_equal(DEL(key, ##__VA_ARGS__), 0); \
		may_wait = false; \
	} while (0)

static const char *resp_etag(char out[KV_ETAG_LEN + 1])
{
	const char *p = strstr(Q.resp_hdrs, "ETag: ");

	assert_non_null(p);
	memcpy(out, p + 6, KV_ETAG_LEN);
	out[KV_ETAG_LEN] = 0;
	return out;
}

static int setup(void **st)
{
	const struct vireo_app *const *a;

	assert_int_equal(__stop_vireo_apps - __start_vireo_apps, 1);
	a = __start_vireo_apps;
	assert_string_equal((*a)->name, "kv");
	routes = 0;
	assert_int_equal((*a)->init(), 0);
	assert_int_equal(routes, 1);
	assert_int_equal(store_opens, 1);
	{
		char init_log[sizeof last_log];

		memcpy(init_log, last_log, sizeof init_log);
		store_ready(-ENODEV, store_ready_arg);
		assert_non_null(strstr(last_log, "no data disk"));
		memcpy(last_log, init_log, sizeof init_log);
	}
	return 0;
}

static void test_route(void **st)
{
	assert_string_equal(route.path, "/kv/");
	assert_true(route.prefix);
	assert_int_equal(route.methods, VIREO_GET | VIREO_PUT | VIREO_DELETE);
	assert_int_equal(route.max_body, 1048576);	/* kv.value_max's default */
	assert_non_null(strstr(last_log, "max_bytes=2097152"));
	assert_int_equal(gauge("kv_bytes_max"), 2097152);
}

static void test_round_trip(void **st)
{
	char t1[KV_ETAG_LEN + 1], t2[KV_ETAG_LEN + 1];
	u64 puts = vec("kv_requests_total", "put");

	assert_int_equal(PUT("a/b", "hello"), 201);
	resp_etag(t1);
	assert_int_equal(Q.out_len, 0);
	assert_int_equal(gauge("kv_keys"), 1);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(3, 5));
	assert_int_equal(GET("a/b"), 200);
	assert_string_equal(Q.body_out, "hello");
	assert_string_equal(Q.type, "application/octet-stream");
	assert_string_equal(resp_etag(t2), t1);
	assert_int_equal(req(VIREO_HEAD, "a/b", NULL, NULL, 0, NULL), 200);
	assert_int_equal(PUT("a/b", "bye"), 204);
	assert_string_not_equal(resp_etag(t2), t1);
	assert_int_equal(DEL("a/b"), 204);
	assert_int_equal(GET("a/b"), 404);
	assert_string_equal(Q.type, "application/json");
	assert_string_equal(Q.body_out, "{\"error\":\"no such key\",\"status\":404}\n");
	assert_int_equal(DEL("a/b"), 404);
	assert_int_equal(gauge("kv_keys"), 0);
	assert_int_equal(gauge("kv_bytes_used"), 0);
	assert_int_equal(vec("kv_requests_total", "put"), puts + 2);
	assert_int_equal(mem_used, 0);
}

static void test_conditionals(void **st)
{
	char t[KV_ETAG_LEN + 1], t2[KV_ETAG_LEN + 1];

	assert_int_equal(PUT("c", "1"), 201);
	resp_etag(t);
	assert_int_equal(GET("c", "If-None-Match", t), 304);
	assert_int_equal(Q.out_len, 0);
	assert_int_equal(Q.content_length, 1);	/* the 200's, RFC 9110 8.6 */
	assert_string_equal(resp_etag(t2), t);
	assert_int_equal(GET("c", "If-Match", "\"x\""), 412);
	assert_int_equal(PUT("c", "2", "If-None-Match", "*"), 412);
	assert_int_equal(PUT("c", "2", "If-Match", t), 204);
	assert_int_equal(PUT("c", "3", "If-Match", t), 412);
	assert_int_equal(DEL("c", "If-Match", t), 412);
	assert_int_equal(DEL("c", "If-Match", "*"), 204);
	assert_true(vec("kv_refused_total", "precondition") >= 4);
}

static void test_refusals(void **st)
{
	static u8 big[1048577];

	assert_int_equal(PUT("a b", "x"), 400);
	assert_non_null(strstr(Q.body_out, "\"status\":400"));
	/* 411: no Content-Length */
	assert_int_equal(req(VIREO_PUT, "k", NULL, "x", 1, NULL), 411);
	assert_int_equal(vec("kv_refused_total", "length_required"), 1);
	/* 405 on the listing path, with Allow */
	assert_int_equal(req(VIREO_PUT, "", NULL, "x", 1, "Content-Length", "1", NULL), 405);
	assert_non_null(strstr(Q.resp_hdrs, "Allow: GET, HEAD\n"));
	assert_int_equal(req(VIREO_POST, "k", NULL, NULL, 0, NULL), 405);
	/* 413 if a body over the bound ever reaches kv.c */
	assert_int_equal(req(VIREO_PUT, "k", NULL, big, sizeof big, "Content-Length", "x", NULL), 413);
	assert_int_equal(mem_used, 0);
}

static void test_full_is_507(void **st)
{
	static u8 v[65536];
	char key[16];
	int i, st507 = 0;

	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof key, "f%02d", i);
		int s = req(VIREO_PUT, key, NULL, v, sizeof v, "Content-Length", "x", NULL);
		if (s == 507) {
			st507 = 1;
			break;
		}
		assert_int_equal(s, 201);
	}
	assert_true(st507);
	assert_int_equal(i, 2097152 / kv_charge(3, sizeof v));	/* 31 */
	assert_non_null(strstr(Q.body_out, "store full"));
	assert_int_equal(vec("kv_refused_total", "full"), 1);
	assert_true(gauge("kv_bytes_used") <= 2097152);
	/* app.mem refusing is 507 too, counted apart */
	fail_alloc = 1;
	assert_int_equal(req(VIREO_PUT, "f00", NULL, "x", 1, "Content-Length", "1", NULL), 507);
	assert_non_null(strstr(Q.body_out, "app.mem"));
	assert_int_equal(vec("kv_refused_total", "nomem"), 1);
	ST.window = sizeof v;	/* streamed (over 4 KiB), all in one write */
	assert_int_equal(GET("f00"), 200);
	assert_false(ST.open);
	assert_int_equal(ST.len, sizeof v);
	for (int j = 0; j < i; j++) {
		snprintf(key, sizeof key, "f%02d", j);
		assert_int_equal(DEL(key), 204);
	}
	assert_int_equal(mem_used, 0);
}

static void test_listing(void **st)
{
	char q[600];
	const char *c;

	assert_int_equal(PUT("p/1", "x"), 201);
	assert_int_equal(PUT("p/2", "xy"), 201);
	assert_int_equal(PUT("p\"3", "x"), 201);
	assert_int_equal(PUT("q", "x"), 201);
	assert_int_equal(LIST("prefix=p%2F&limit=1"), 200);
	assert_string_equal(Q.type, "application/json");
	assert_non_null(strstr(Q.body_out, "{\"keys\":[{\"key\":\"p/1\",\"bytes\":1,"));
	c = strstr(Q.body_out, "\"more\":true,\"cursor\":\"");
	assert_non_null(c);
	assert_int_equal(Q.body_out[Q.out_len - 1], '\n');
	snprintf(q, sizeof q, "prefix=p/&limit=1&cursor=%.*s", (int)strcspn(c + 22, "\""), c + 22);
	assert_int_equal(LIST(q), 200);
	assert_non_null(strstr(Q.body_out, "\"key\":\"p/2\",\"bytes\":2"));
	assert_non_null(strstr(Q.body_out, "\"more\":false,\"cursor\":null}"));
	assert_int_equal(LIST("prefix=p%22"), 200);
	assert_non_null(strstr(Q.body_out, "\"key\":\"p\\\"3\""));
	assert_int_equal(LIST(""), 200);
	assert_non_null(strstr(Q.body_out, "\"key\":\"q\""));
	assert_int_equal(vec("kv_requests_total", "list") >= 4, 1);
	DEL("p/1");
	DEL("p/2");
	DEL("p\"3");
	DEL("q");
	assert_int_equal(mem_used, 0);
}

static void test_listing_refusals(void **st)
{
	static const char *const bad[] = {"cursor=zz", "cursor=616", "cursor=", "limit=0",
					  "limit=1001", "limit=", "limit=12345", "limit=-1", "limit=1x",
					  "prefix=%00"};
	char longp[300];

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(LIST(bad[i]), 400);
		assert_non_null(strstr(Q.body_out, "\"status\":400"));
	}
	memset(longp, 'a', sizeof longp);
	memcpy(longp, "prefix=", 7);
	longp[7 + 251] = 0;
	assert_int_equal(LIST(longp), 400);
	longp[7 + 250] = 0;
	assert_int_equal(LIST(longp), 200);
	assert_int_equal(LIST("limit=1000"), 200);
	/* app.mem refusing the page buffer: 503 */
	fail_alloc = 1;
	assert_int_equal(LIST(""), 503);
	assert_int_equal(mem_used, 0);
}

/* A value over 4 KiB streams from the pinned entry with back-pressure; a put
 * and a delete of its key meanwhile leave the streamed bytes alone, still
 * charged until the response ends; a lost connection releases them too. */
static void test_streamed_get(void **st)
{
	static u8 v1[70000], v2[5000];
	char t[KV_ETAG_LEN + 1];
	unsigned turns = 0;

	for (size_t i = 0; i < sizeof v1; i++)
		v1[i] = (u8)(i * 7 + 3);
	memset(v2, 'z', sizeof v2);
	assert_int_equal(req(VIREO_PUT, "big", NULL, v1, sizeof v1, "Content-Length", "x", NULL), 201);
	resp_etag(t);
	ST.window = 1000;
	assert_int_equal(GET("big"), 200);
	assert_true(ST.open && ST.len == 1000 && ST.length == sizeof v1);
	assert_non_null(strstr(Q.resp_hdrs, t));
	/* Replaced, then deleted, while the response is half sent. */
	assert_int_equal(req(VIREO_PUT, "big", NULL, v2, sizeof v2, "Content-Length", "x", NULL), 204);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(3, sizeof v1) + kv_charge(3, sizeof v2));
	assert_int_equal(DEL("big"), 204);
	assert_int_equal(gauge("kv_keys"), 0);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(3, sizeof v1));
	while (ST.open) {
		assert_true(++turns < 1000);
		ST.window = 4096;
		ST.writable(((vireo_req){2}), ST.writable_arg);
	}
	assert_int_equal(ST.len, sizeof v1);
	assert_memory_equal(ST.buf, v1, sizeof v1);
	assert_int_equal(gauge("kv_bytes_used"), 0);
	assert_int_equal(mem_used, 0);

	/* A HEAD is never streamed; a 4 KiB value neither. */
	assert_int_equal(req(VIREO_PUT, "big", NULL, v1, sizeof v1, "Content-Length", "x", NULL), 201);
	assert_int_equal(req(VIREO_HEAD, "big", NULL, NULL, 0, NULL), 200);
	assert_false(ST.open);
	assert_int_equal(Q.content_length, sizeof v1);
	assert_int_equal(req(VIREO_PUT, "4k", NULL, v1, 4096, "Content-Length", "x", NULL), 201);
	assert_int_equal(GET("4k"), 200);
	assert_false(ST.open);
	assert_int_equal(Q.out_len, 4096);
	/* The connection lost mid-stream: on_done(false) releases the pin. */
	ST.window = 10;
	assert_int_equal(GET("big"), 200);
	assert_true(ST.open);
	assert_int_equal(DEL("big"), 204);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(3, sizeof v1) + kv_charge(2, 4096));
	stream_finish(false);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(2, 4096));
	assert_int_equal(DEL("4k"), 204);
	assert_int_equal(mem_used, 0);
}

extern const struct cmdline_opt *const __start_vireo_cmdline[], *const __stop_vireo_cmdline[];

/* kv.token= through its registration, as the boot's parser sets it. */
static void set_token(const char *val)
{
	char why[64] = "";

	for (const struct cmdline_opt *const *o = __start_vireo_cmdline; o < __stop_vireo_cmdline; o++)
		if (!strcmp((*o)->key, "kv.token")) {
			assert_true((*o)->secret);
			assert_int_equal((*o)->type, CMDLINE_CUSTOM);
			assert_int_equal((*o)->parse(val, (*o)->dst, why, sizeof why), 0);	/* never refuses */
			assert_string_equal(why, "");
			return;
		}
	fail_msg("no kv.token key");
}

/* kv.token=: without "Authorization: Bearer <token>" every request is 401
 * with WWW-Authenticate: Bearer and the store untouched; with it, served.
 * The token never reaches the log. */
static void test_bearer_token(void **st)
{
	const struct vireo_app *const *a = __start_vireo_apps;
	u64 refused = vec("kv_refused_total", "unauthorized");

	set_token("s3cr3t-T0ken_~+/==");
	last_log[0] = 0;
	assert_int_equal((*a)->init(), 0);
	assert_null(strstr(last_log, "s3cr3t"));
	assert_int_equal(PUT("k", "v"), 401);
	assert_non_null(strstr(Q.resp_hdrs, "WWW-Authenticate: Bearer"));
	assert_string_equal(Q.type, "application/json");
	assert_int_equal(GET("k"), 401);
	assert_int_equal(DEL("k"), 401);
	assert_int_equal(LIST(NULL), 401);
	assert_int_equal(GET("k", "Authorization", "Bearer s3cr3t-T0ken_~+/="), 401);	/* one short */
	assert_int_equal(GET("k", "Authorization", "Bearer s3cr3t-T0ken_~+/===x"), 401);	/* longer */
	assert_int_equal(GET("k", "Authorization", "Bearer S3cr3t-T0ken_~+/=="), 401);	/* case matters */
	assert_int_equal(GET("k", "Authorization", "Basic s3cr3t-T0ken_~+/=="), 401);
	assert_int_equal(GET("k", "Authorization", "Bearer"), 401);
	assert_int_equal(GET("k", "Authorization", "Bearer "), 401);
	assert_int_equal(GET("k", "Authorization", "Bearers3cr3t-T0ken_~+/=="), 401);
	assert_int_equal(gauge("kv_keys"), 0);
	assert_int_equal(vec("kv_refused_total", "unauthorized"), refused + 11);
	/* The scheme in any case, as RFC 9110 11.1 has it. */
	assert_int_equal(PUT("k", "v", "Authorization", "bEaReR s3cr3t-T0ken_~+/=="), 201);
	assert_null(strstr(Q.resp_hdrs, "WWW-Authenticate"));
	assert_int_equal(GET("k", "Authorization", "Bearer s3cr3t-T0ken_~+/=="), 200);
	assert_string_equal(Q.body_out, "v");
	assert_int_equal(DEL("k", "Authorization", "Bearer s3cr3t-T0ken_~+/=="), 204);
	assert_null(strstr(last_log, "s3cr3t"));

	/* A token kv cannot honour (a space, a quote, too long, padding first):
	 * kv stays closed, and the warning names the rule, not the value. */
	{
		static const char *const bad[] = { "two words", "quo\"te", "=abc", "a=b" };
		char big[130];

		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			set_token(bad[i]);
			last_log[0] = 0;
			assert_int_equal((*a)->init(), 0);
			assert_non_null(strstr(last_log, "kv.token is not"));
			assert_null(strstr(last_log, bad[i]));
			assert_int_equal(GET("k", "Authorization", "Bearer x"), 401);
		}
		memset(big, 'a', 129);
		big[129] = 0;
		set_token(big);
		assert_int_equal((*a)->init(), 0);
		assert_int_equal(GET("k", "Authorization", "Bearer x"), 401);
		big[128] = 0;	/* 128: the longest that is taken */
		set_token(big);
		assert_int_equal((*a)->init(), 0);
		assert_int_equal(GET("k", "Authorization", "Bearer x"), 401);
		assert_int_equal(GET("k"), 401);
		{
			char auth[140];

			snprintf(auth, sizeof auth, "Bearer %s", big);
			assert_int_equal(GET("k", "Authorization", auth), 404);
		}
	}
	/* Empty: open again, as without the key. */
	set_token("");
	assert_int_equal((*a)->init(), 0);
	assert_int_equal(GET("k"), 404);
	assert_int_equal(mem_used, 0);
}

/* kv.max_bytes above what app.mem= leaves: a boot warning, and puts that
 * vireo_alloc() refuses are 507 (test_full_is_507). */
static void test_init_warns_over_app_mem(void **st)
{
	const struct vireo_app *const *a = __start_vireo_apps;

	mem_limit = 2 * 1024 * 1024;
	last_log[0] = 0;
	assert_int_equal((*a)->init(), 0);
	assert_non_null(strstr(last_log, "over app.mem (2097152)"));
	mem_limit = VIREO_APP_MEM_DEFAULT;
	last_log[0] = 0;
	assert_int_equal((*a)->init(), 0);
	assert_non_null(strstr(last_log, "kv: /kv/ serving"));
}

/* The data disk comes up (blank): kv saves its ETag secret, loads nothing
 * and from then on writes through. Once per run. */
static void disk_attach(void)
{
	if (disk_on)
		return;
	disk_on = true;
	store_ready(0, store_ready_arg);
	assert_int_equal(nops, 1);	/* the ETag secret */
	ops[0].done(0, ops[0].arg);
	nops = 0;
	assert_non_null(strstr(last_log, "0 keys loaded from the data disk"));
	assert_int_equal(gauge("kv_durable"), 1);
}

/* What a GET of key answers is what the model disk holds: the value, or
 * 404, also while writes to key are on their way. */
static void same_as_disk(const char *key)
{
	const struct dent *d = disk_find(key, strlen(key));
	int st = GET(key);

	if (!d) {
		assert_int_equal(st, 404);
		return;
	}
	assert_int_equal(st, 200);
	assert_int_equal(Q.out_len, d->vlen);
	assert_memory_equal(Q.body_out, d->val, d->vlen);
}

/* The ETag the listing shows for the first key of a page (writes on their
 * way included). */
static const char *list_etag(const char *query, char out[KV_ETAG_LEN + 1])
{
	static const char mark[] = "\"etag\":\"\\\"";
	const char *p;

	assert_int_equal(LIST(query), 200);
	p = strstr(Q.body_out, mark);
	assert_non_null(p);
	out[0] = '"';
	memcpy(out + 1, p + sizeof mark - 1, 16);
	out[17] = '"';
	out[18] = 0;
	return out;
}

/* A write the disk refuses at once is 507 or 503 and leaves the memory
 * copy as it was: the old value and its ETag, or the key's absence. */
static void test_disk_refusal_keeps_memory(void **st)
{
	static const struct { int err, status; } refusals[] = {
		{-ENOSPC, 507}, {-ENOMEM, 507}, {-EBUSY, 503}, {-EROFS, 503},
	};
	char t1[KV_ETAG_LEN + 1], t[KV_ETAG_LEN + 1];

	disk_attach();
	PUTW("d1", "one");
	assert_int_equal(complete(0), 201);
	resp_etag(t1);
	for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
		refuse_next = refusals[i].err;
		assert_int_equal(PUT("d1", "two"), refusals[i].status);
		assert_int_equal(GET("d1"), 200);
		assert_string_equal(Q.body_out, "one");
		assert_string_equal(resp_etag(t), t1);
		refuse_next = refusals[i].err;
		assert_int_equal(PUT("d2", "new"), refusals[i].status);
		same_as_disk("d2");
		refuse_next = refusals[i].err;
		assert_int_equal(DEL("d1"), refusals[i].status);
		same_as_disk("d1");
		assert_int_equal(GET("d1", "If-None-Match", t1), 304);
	}
	assert_int_equal(gauge("kv_keys"), 1);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(2, 3));
	DELW("d1");
	assert_int_equal(complete(0), 204);
	same_as_disk("d1");
	assert_int_equal(mem_used, 0);
}

/* A write whose record or FLUSH fails (the callback's -EIO, or -EROFS for
 * what came after) is 503 and the memory copy goes back: a GET answers
 * what the disk holds. */
static void test_disk_failure_restores(void **st)
{
	char t1[KV_ETAG_LEN + 1], t[KV_ETAG_LEN + 1];

	disk_attach();
	PUTW("f1", "one");
	assert_int_equal(complete(0), 201);
	resp_etag(t1);
	PUTW("f1", "two", "If-Match", t1);
	same_as_disk("f1");	/* a GET answers what is durable */
	assert_int_equal(complete(-EIO), 503);
	assert_non_null(strstr(Q.body_out, "read-only"));
	same_as_disk("f1");
	assert_string_equal(resp_etag(t), t1);
	DELW("f1");
	assert_int_equal(complete(-EROFS), 503);
	same_as_disk("f1");
	PUTW("f2", "new");
	assert_int_equal(complete(-EIO), 503);
	same_as_disk("f2");
	PUTW("f2", "new");
	assert_int_equal(complete(-ENOSPC), 507);	/* no room even after compaction */
	same_as_disk("f2");
	/* The old tag still names the value: a conditional write takes it. */
	PUTW("f1", "two", "If-Match", t1);
	assert_int_equal(complete(0), 204);
	same_as_disk("f1");
	DELW("f1");
	assert_int_equal(complete(0), 204);
	assert_int_equal(gauge("kv_bytes_used"), 0);
	assert_int_equal(mem_used, 0);
}

/* Several writes to one key on their way: conditionals see the newest
 * taken; when they fail (the store fails every write after a failed one),
 * the memory copy ends as the disk is, whichever of them succeeded. */
static void test_disk_writes_in_flight(void **st)
{
	char t0[KV_ETAG_LEN + 1], ta[KV_ETAG_LEN + 1], tb[KV_ETAG_LEN + 1];

	disk_attach();
	PUTW("w", "zero");
	assert_int_equal(complete(0), 201);
	resp_etag(t0);
	/* Two If-Match PUTs on one tag: the second is 412 at once. A GET
	 * meanwhile answers the durable value and tag; the listing shows the
	 * write on its way. */
	PUTW("w", "A", "If-Match", t0);
	list_etag("prefix=w", ta);
	assert_string_not_equal(ta, t0);
	assert_int_equal(GET("w", "If-None-Match", t0), 304);
	assert_int_equal(GET("w", "If-Match", ta), 412);
	assert_int_equal(PUT("w", "B", "If-Match", t0), 412);
	PUTW("w", "B", "If-Match", ta);
	assert_int_equal(complete(-EIO), 503);
	same_as_disk("w");	/* B still on its way */
	assert_int_equal(complete(-EROFS), 503);
	same_as_disk("w");
	assert_string_equal(resp_etag(tb), t0);
	/* The first durable, the second failed: the first's value. */
	PUTW("w", "A");
	PUTW("w", "B");
	assert_int_equal(complete(0), 204);
	assert_int_equal(complete(-EIO), 503);
	same_as_disk("w");
	assert_string_equal(resp_etag(tb), ta);
	/* A delete then a put, both failed; then a put then a delete. */
	DELW("w");
	PUTW("w", "C");
	assert_int_equal(complete(-EIO), 503);
	assert_int_equal(complete(-EROFS), 503);
	same_as_disk("w");
	PUTW("w", "C");
	DELW("w");
	assert_int_equal(complete(-EIO), 503);
	assert_int_equal(complete(-EROFS), 503);
	same_as_disk("w");
	/* Three on their way to a new key, all failed: absent again. */
	PUTW("n", "1");
	PUTW("n", "22");
	PUTW("n", "333");
	assert_int_equal(GET("n"), 404);	/* none durable yet */
	assert_int_equal(PUT("n", "x", "If-None-Match", "*"), 412);	/* but taken */
	for (int i = 0; i < 3; i++)
		assert_int_equal(complete(i ? -EROFS : -EIO), 503);
	same_as_disk("n");
	/* A refusal at once behind a write on its way, which then is
	 * durable. */
	PUTW("n", "1");
	refuse_next = -EBUSY;
	assert_int_equal(PUT("n", "2"), 503);
	same_as_disk("n");
	list_etag("prefix=n", ta);	/* the first write's, on its way */
	assert_int_equal(complete(0), 201);
	assert_string_equal(resp_etag(tb), ta);
	same_as_disk("n");
	/* Writes to other keys between them change nothing of this. */
	PUTW("w", "D");
	PUTW("x", "x");
	PUTW("w", "E");
	assert_int_equal(complete(0), 204);
	assert_int_equal(complete(-EIO), 503);
	assert_int_equal(complete(-EROFS), 503);
	same_as_disk("w");
	same_as_disk("x");
	DELW("w");
	DELW("n");
	assert_int_equal(complete(0), 204);
	assert_int_equal(complete(0), 204);
	assert_int_equal(gauge("kv_keys"), 0);
	assert_int_equal(gauge("kv_bytes_used"), 0);
	assert_int_equal(mem_used, 0);
}

/* The old value is held (charged) until its replacement is durable, so a
 * stream of it and a restore share it; the bound counts both values. */
static void test_disk_restore_while_streaming(void **st)
{
	static u8 v1[20000];
	unsigned turns = 0;

	disk_attach();
	for (size_t i = 0; i < sizeof v1; i++)
		v1[i] = (u8)(i * 13 + 1);
	may_wait = true;
	assert_int_equal(req(VIREO_PUT, "s", NULL, v1, sizeof v1, "Content-Length", "x", NULL), 0);
	may_wait = false;
	assert_int_equal(complete(0), 201);
	ST.window = 1000;
	assert_int_equal(GET("s"), 200);
	assert_true(ST.open);
	PUTW("s", "short");
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(1, sizeof v1) + kv_charge(1, 5));
	assert_int_equal(complete(-EIO), 503);
	assert_int_equal(gauge("kv_bytes_used"), kv_charge(1, sizeof v1));
	while (ST.open) {
		assert_true(++turns < 1000);
		ST.window = 4096;
		ST.writable(((vireo_req){2}), ST.writable_arg);
	}
	assert_memory_equal(ST.buf, v1, sizeof v1);
	assert_int_equal(req(VIREO_HEAD, "s", NULL, NULL, 0, NULL), 200);
	assert_int_equal(Q.content_length, sizeof v1);
	DELW("s");
	assert_int_equal(complete(0), 204);
	assert_int_equal(mem_used, 0);
}

/* A key on the disk that kv could not load at boot (a read error, or past
 * kv.max_bytes) is 503 for a GET, a DELETE and a conditional PUT, never
 * 404: the disk holds it. The old kv answered 404. Boots kv again, last. */
static void test_key_not_loaded(void **st)
{
	static const struct ro_key keys[] = {
		{ "a", "AA", 0 }, { "b", "BB", -EIO }, { "c", "CC", 0 },
	};
	const struct vireo_app *const *a = __start_vireo_apps;

	ro_keys = keys;
	ro_nkeys = 3;
	store_opens = 0;
	assert_int_equal((*a)->init(), 0);
	assert_int_equal(store_opens, 1);
	assert_int_equal(GET("a"), 503);	/* loading */
	store_ready(-EROFS, store_ready_arg);	/* opened read-only: no ETag secret written */
	assert_int_equal(ro_run(), 3);
	assert_non_null(strstr(last_log, "2 keys loaded from the data disk (1 skipped)"));

	assert_int_equal(GET("a"), 200);
	assert_int_equal(Q.out_len, 2);
	assert_memory_equal(Q.body_out, "AA", 2);
	assert_int_equal(GET("c"), 200);
	assert_int_equal(GET("b"), 503);
	assert_non_null(strstr(Q.body_out, "on the data disk but could not be loaded"));
	assert_int_equal(DEL("b"), 503);
	assert_int_equal(PUT("b", "x", "If-None-Match", "*"), 503);
	assert_int_equal(PUT("b", "x", "If-Match", "\"nope\""), 503);
	/* Keys the disk does not hold are absent as before; one a prefix of b
	 * or with b as its prefix is another key. */
	assert_int_equal(GET("d"), 404);
	assert_int_equal(GET("bb"), 404);
	assert_int_equal(DEL("d"), 404);
	assert_int_equal(PUT("d", "x", "If-None-Match", "*"), 201);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_conditionals),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_full_is_507),
		cmocka_unit_test(test_listing),
		cmocka_unit_test(test_listing_refusals),
		cmocka_unit_test(test_streamed_get),
		cmocka_unit_test(test_init_warns_over_app_mem),
		cmocka_unit_test(test_bearer_token),
		/* with the data disk attached from here on */
		cmocka_unit_test(test_disk_refusal_keeps_memory),
		cmocka_unit_test(test_disk_failure_restores),
		cmocka_unit_test(test_disk_writes_in_flight),
		cmocka_unit_test(test_disk_restore_while_streaming),
		cmocka_unit_test(test_key_not_loaded),	/* last: boots kv again, with a disk */
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
