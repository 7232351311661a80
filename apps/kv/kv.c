/* apps/kv: a key-value store over HTTP with a JSON listing, on vireo's
 * application API, in memory and, with a data disk, durable on it (below). The store and its bounds are apps/kv/kv_store.c;
 * this file maps HTTP onto it. apps/kv/README.md is the user's guide.
 *
 *   GET    /kv/<key>       the value (application/octet-stream), ETag
 *   PUT    /kv/<key>       body = value (Content-Length required): 201 new, 204 replaced
 *   DELETE /kv/<key>       204
 *   GET    /kv/?prefix=P&cursor=C&limit=N   a page of keys as JSON
 *
 * If-Match and If-None-Match work on all three (304/412). Refusals: 400 bad
 * key, cursor or limit; 404; 405 (other methods, and PUT/DELETE on /kv/);
 * 401 without kv.token's bearer token when one is set (below);
 * 411 PUT without Content-Length; 412; 413 value over kv.value_max (the
 * runtime's, from the route's max_body); 507 the store is full. Error bodies
 * are JSON: {"error":"...","status":N}.
 */
#include "vireo/vireo.h"
#include "vireo/store.h"
#include "kv_store.h"
#include "vireo/parse.h"
#include "vireo/string.h"

/*
 * Bounds. kv.max_bytes caps the store (kv_store.h's arithmetic). Everything
 * kv allocates comes from vireo_alloc() under app.mem=, so the appliance's
 * memory is bounded even if kv.max_bytes is set above it (vireo_alloc then
 * refuses and the put is 507 as well). With the defaults the store's worst
 * case fits app.mem=4 MiB: 2 MiB of entries + one replacement in flight
 * (kv_charge(250, 1 MiB) = 1,048,912) + the listing page (8 KiB + 16) =
 * 3,154,272 bytes, plus 32 bytes per streaming GET (its state and
 * vireo_alloc's header; entries a stream still reads stay inside
 * kv.max_bytes). init warns when the configured values do not fit.
 */
VIREO_CONFIG_UINT(kv_max_bytes, "kv.max_bytes", 2097152, 0, 1073741824,
		  "apps/kv: bytes the store may hold (keys + values + 80..95 B per entry: apps/kv/kv_store.h)");
VIREO_CONFIG_UINT(kv_value_max, "kv.value_max", 1048576, 0, 1048576,
		  "apps/kv: the largest value in bytes (a bigger PUT is 413)");

/*
 * kv.token=: a bearer token (RFC 6750) every /kv/ request must carry,
 * "Authorization: Bearer <token>", else 401 with "WWW-Authenticate: Bearer";
 * none (the default, or kv.token= empty): open to anyone, as before.
 * Compared in constant time (every byte of the token, whatever the request
 * sent). The value is never written anywhere: the key is .secret (the
 * configuration's origin log shows it hidden), and its parser never refuses,
 * since a refusal's warning would quote it; a token that is not up to
 * KV_TOKEN_MAX characters of RFC 6750's b64token is remembered as bad
 * instead, and kv refuses every request (401) with a boot warning that names
 * the rule, not the value: an operator who set a token meant kv closed.
 */
#define KV_TOKEN_MAX 128
static char kv_token[KV_TOKEN_MAX];
static size_t kv_token_len;
static bool kv_token_bad;

static int kv_token_parse(const char *val, void *dst, char *why, size_t why_len)
{
	size_t n = strlen(val), i = 0;

	(void)dst, (void)why, (void)why_len;
	while (i < n && ((val[i] >= 'a' && val[i] <= 'z') || (val[i] >= 'A' && val[i] <= 'Z') ||
			 (val[i] >= '0' && val[i] <= '9') || val[i] == '-' || val[i] == '.' || val[i] == '_' ||
			 val[i] == '~' || val[i] == '+' || val[i] == '/'))
		i++;
	while (i && i < n && val[i] == '=')	/* the padding, after at least one character */
		i++;
	kv_token_bad = i != n || n > KV_TOKEN_MAX;
	kv_token_len = kv_token_bad ? 0 : n;
	memset(kv_token, 0, sizeof kv_token);
	if (!kv_token_bad)
		memcpy(kv_token, val, n);
	return 0;
}
CMDLINE_PARAM(kv_token, .key = "kv.token", .type = CMDLINE_CUSTOM, .parse = kv_token_parse, .def = "none",
	      .secret = true, .values = "up to 128 of A-Z a-z 0-9 - . _ ~ + / then =s (empty: none)",
	      .help = "apps/kv: the bearer token every request must carry (else 401); never logged");

/* Whether r may use the store: no token configured, or r's Authorization
 * is "Bearer <token>" (the scheme in any case, RFC 9110 11.1). */
static bool kv_authorized(vireo_req r)
{
	const char *h;
	size_t n;
	u8 diff;

	if (!kv_token_len && !kv_token_bad)
		return true;
	h = vireo_req_header(r, "Authorization");
	if (kv_token_bad || !h || strlen(h) < 7 || (h[0] | 0x20) != 'b' || (h[1] | 0x20) != 'e' ||
	    (h[2] | 0x20) != 'a' || (h[3] | 0x20) != 'r' || (h[4] | 0x20) != 'e' || (h[5] | 0x20) != 'r' ||
	    h[6] != ' ')
		return false;
	for (h += 7; *h == ' '; h++)
		;
	n = strlen(h);
	diff = n != kv_token_len;
	for (size_t i = 0; i < kv_token_len; i++)
		diff |= (u8)(kv_token[i] ^ (i < n ? h[i] : 0));
	return !diff;
}

#define KV_LIST_BUF 8192	/* one page of JSON; >= KV_LIST_MIN_CAP */
_Static_assert(KV_LIST_BUF >= KV_LIST_MIN_CAP, "a page must hold the longest key");
_Static_assert(KV_VALUE_CEIL <= VIREO_HTTP_BODY_MAX, "a value is one request body");

VIREO_GAUGE(kv_keys_g, "kv_keys", "Keys in the store.");
VIREO_GAUGE(kv_used_g, "kv_bytes_used", "Bytes the store holds (keys, values, per-entry overhead).");
VIREO_GAUGE(kv_max_g, "kv_bytes_max", "The store's bound (kv.max_bytes).");
VIREO_GAUGE(kv_durable_g, "kv_durable", "1: PUT and DELETE are durable on the data disk; 0: values are in memory only.");
VIREO_COUNTER_VEC(kv_requests, "kv_requests_total", "Requests by operation.", "op",
		  "get", "put", "delete", "list");
VIREO_COUNTER_VEC(kv_refused, "kv_refused_total", "Requests refused, by reason.", "reason",
		  "full", "nomem", "too_large", "bad_request", "not_found", "precondition",
		  "length_required", "method", "busy", "unauthorized");
enum { KV_OP_GET, KV_OP_PUT, KV_OP_DELETE, KV_OP_LIST };
enum {
	KV_R_FULL, KV_R_NOMEM, KV_R_TOO_LARGE, KV_R_BAD, KV_R_NOT_FOUND, KV_R_PRECOND,
	KV_R_LENGTH, KV_R_METHOD, KV_R_BUSY, KV_R_AUTH,
};

static struct kv_store kv_store;

enum { KV_DISK_NONE, KV_DISK_WAIT, KV_DISK_READY };
static int kv_disk = KV_DISK_NONE;
/* Some key on the data disk was not loaded into memory (a read error, or
 * past kv.max_bytes): kv_unloaded() then asks the store's index. */
static bool kv_skipped_any;

static void kv_gauges(void)
{
	vireo_gauge_set(&kv_keys_g, (s64)kv_store.count);
	vireo_gauge_set(&kv_used_g, (s64)kv_store.used);
	vireo_gauge_set(&kv_max_g, (s64)kv_store.max_bytes);
	vireo_gauge_set(&kv_durable_g, kv_disk == KV_DISK_READY);
}

/* A JSON error body; the connection stays up (vireo_resp_send). */
static void kv_fail(vireo_req r, int status, const char *why, int reason)
{
	char body[160];
	struct outbuf o = {body, sizeof body, 0};

	if (reason >= 0)
		vireo_counter_vec_add(&kv_refused, (u32)reason, 1);
	outbuf_str(&o, "{\"error\":");
	kv_json_string(&o, (const u8 *)why, strlen(why));
	outbuf_str(&o, ",\"status\":");
	outbuf_u64(&o, (u64)status);
	outbuf_str(&o, "}\n");
	if (o.len > sizeof body) {	/* our own strings are short; never happens */
		vireo_resp_error(r, status);
		return;
	}
	if (vireo_resp_send(r, status, "application/json", body, o.len) < 0)
		vireo_resp_error(r, 503);
}

/* The JSON error bodies; a 304 has no body at all. e: the entry for a 304. */
static void kv_answer_status(vireo_req r, enum kv_status st, const struct kv_entry *e)
{
	char tag[KV_ETAG_LEN + 1];

	switch (st) {
	case KV_NOT_MODIFIED:
		/* ETag, and the 200's Content-Length (RFC 9110 8.6): the
		 * runtime sends no body and copies none for a 304. */
		kv_entry_etag(e, tag);
		vireo_resp_header(r, "ETag", tag);
		vireo_resp_send(r, 304, NULL, kv_entry_value(e), e->vlen);
		return;
	case KV_PRECONDITION_FAILED:
		kv_fail(r, 412, "precondition failed", KV_R_PRECOND);
		return;
	case KV_NOT_FOUND:
		kv_fail(r, 404, "no such key", KV_R_NOT_FOUND);
		return;
	case KV_BAD_KEY:
		kv_fail(r, 400, "bad key: 1..250 bytes of printable ASCII, no space", KV_R_BAD);
		return;
	case KV_TOO_LARGE:
		kv_fail(r, 413, "value too large (kv.value_max)", KV_R_TOO_LARGE);
		return;
	case KV_FULL:
		kv_fail(r, 507, "store full (kv.max_bytes)", KV_R_FULL);
		return;
	case KV_NO_MEMORY:
		kv_fail(r, 507, "out of memory (app.mem)", KV_R_NOMEM);
		return;
	default:
		kv_fail(r, 500, "internal error", -1);
		return;
	}
}

/*
 * Values above KV_STREAM_MIN bytes are streamed from the entry itself
 * through the runtime's stream buffer (VIREO_RESP_STREAM_BUF) instead of
 * being copied whole into its response budget: the entry is pinned
 * (kv_store.h) so a put or delete of the key meanwhile leaves these bytes
 * alone, still charged, until the response ends. Per stream kv holds a
 * 16-byte state from vireo_alloc().
 */
#define KV_STREAM_MIN 4096

struct kv_stream {
	const struct kv_entry *e;
	u32 off;
	bool ended;
};

static void kv_stream_pump(vireo_req r, void *arg)
{
	struct kv_stream *st = arg;
	const struct kv_entry *e = st->e;

	while (!st->ended && st->off < e->vlen) {
		int n = vireo_resp_write(r, kv_entry_value(e) + st->off, e->vlen - st->off);

		if (n <= 0)
			return;	/* 0: full, on_writable calls again; < 0: over */
		st->off += (u32)n;
	}
	if (!st->ended) {
		st->ended = true;
		vireo_resp_end(r);
	}
}

static void kv_stream_done(vireo_req r, bool done, void *arg)
{
	struct kv_stream *st = arg;

	kv_unpin(&kv_store, st->e);
	kv_gauges();
	vireo_free(st);
}

/* Streams e's value as the 200; false if it could not start (copy instead). */
static bool kv_stream(vireo_req r, const struct kv_entry *e)
{
	struct kv_stream *st = vireo_alloc(sizeof *st);

	if (!st)
		return false;
	if (!kv_pin(&kv_store, e)) {
		vireo_free(st);
		return false;
	}
	st->e = e;
	if (vireo_req_on_done(r, kv_stream_done, st) < 0) {
		kv_unpin(&kv_store, e);
		vireo_free(st);
		return false;
	}
	/* From here on_done releases st, whatever happens to the exchange. */
	if (vireo_resp_start(r, 200, "application/octet-stream", e->vlen) < 0) {
		vireo_resp_error(r, 503);
		return true;
	}
	vireo_resp_on_writable(r, kv_stream_pump, st);
	kv_stream_pump(r, st);
	return true;
}

struct kv_probe {
	size_t klen;
	bool found;
};

static bool kv_probe_fn(const void *key, size_t klen, size_t vlen, void *arg)
{
	struct kv_probe *p = arg;

	(void)key;
	(void)vlen;
	p->found = klen == p->klen;	/* the first key with this prefix: the key itself, if there */
	return false;
}

/*
 * Whether key is on the data disk but not in memory: kv could not load it
 * at boot (the console names it). Its value and tag are unknown here, so a
 * GET, a DELETE or a conditional PUT of it is 503, never a 404 for a key
 * the disk holds (a DELETE answered 404 would leave it there, to come back
 * at the next boot). A plain PUT replaces it as usual. Asked only after a
 * load skipped a key: until then memory holds every key the disk does.
 */
static bool kv_unloaded(vireo_req r, const char *key, size_t klen)
{
	struct kv_probe p = { klen, false };

	if (!kv_skipped_any)
		return false;
	vireo_store_keys(key, klen, NULL, 0, kv_probe_fn, &p);
	if (p.found)
		kv_fail(r, 503, "this key is on the data disk but could not be loaded (see the console)", KV_R_BUSY);
	return p.found;
}

static bool kv_on_its_way(const char *key, size_t klen, const struct kv_entry **durable);

static void kv_get_one(vireo_req r, const char *key, size_t klen)
{
	const struct kv_entry *e;
	enum kv_status st;
	char tag[KV_ETAG_LEN + 1];

	vireo_counter_vec_add(&kv_requests, KV_OP_GET, 1);
	if (kv_on_its_way(key, klen, &e)) {
		/* As kv_get, on the state the disk holds. */
		st = kv_cond_check(e, vireo_req_header(r, "If-Match"), vireo_req_header(r, "If-None-Match"), true);
		if (st == KV_OK && !e)
			st = KV_NOT_FOUND;
		if (st != KV_OK && st != KV_NOT_MODIFIED)
			e = NULL;
	} else {
		st = kv_get(&kv_store, (const u8 *)key, klen, vireo_req_header(r, "If-Match"),
			    vireo_req_header(r, "If-None-Match"), &e);
	}
	if (st == KV_NOT_FOUND && kv_unloaded(r, key, klen))
		return;
	if (st != KV_OK) {
		kv_answer_status(r, st, e);
		return;
	}
	kv_entry_etag(e, tag);
	vireo_resp_header(r, "ETag", tag);
	if (e->vlen > KV_STREAM_MIN && vireo_req_method(r) == VIREO_GET && kv_stream(r, e))
		return;
	/* Copied: the entry may be replaced while the response is in flight. */
	if (vireo_resp_send(r, 200, "application/octet-stream", kv_entry_value(e), e->vlen) < 0) {
		vireo_counter_vec_add(&kv_refused, KV_R_BUSY, 1);
		vireo_resp_error(r, 503);
	}
}

/*
 * The data disk (vireo/store.h, docs/storage.md). While it is being opened
 * and loaded every request is 503; then PUT and DELETE answer only once
 * their record is durable on it, and each boot loads every key back. The
 * ETag secret is kept on the disk too (under a key no client can name:
 * 0x01 is not a key byte), so tags survive restarts.
 *
 * A PUT or DELETE changes the memory copy at once, so conditional writes
 * and the listing see the writes on their way (of two PUTs with If-Match on
 * one tag, the second is 412), while a GET or HEAD answers what the disk
 * holds: what the oldest write to the key on its way replaced. Each
 * write on its way keeps, in its kv_wait, what it replaced: the previous
 * entry (pinned, kv_store.h) or the key's absence. When the disk refuses
 * the write (at once: full, busy, out of memory, read-only) or fails it (by
 * callback: a failed write or flush), the memory copy goes back to that, so
 * it always ends up holding what the disk holds: a 507 or 503 leaves the
 * value, its ETag or its absence as before. The store completes the writes
 * in the order they were made, and a failure fails every write after it as
 * well, so when a failed write has a later write to its key still on its
 * way, it hands that one what it replaced, and the last one restores it.
 * (After a failed flush, whether the record reached the disk is not known:
 * the memory copy shows the last acknowledged state, which is also what a
 * restart shows unless the failed batch did reach the disk.)
 *
 * Memory: the entry a write replaced stays charged to kv.max_bytes until
 * the write is durable, so an overwrite on its way holds both values within
 * the bound (a PUT that needs room for both is 507, as without a disk a PUT
 * that needs room for its own value). Beyond the bound, each write on its
 * way holds a kv_wait (KV_WAIT_MAX: at most 368 bytes of heap with the
 * allocators' headers), one per request whose answer waits for the disk: at
 * most one per connection, and the HTTP server holds 64 at most
 * (HTTP_SERVER_MAX_CONNS): 64 x 368 = 23,552 bytes.
 */
static struct kv_config kv_cfg;
static const char kv_secret_key[] = "\x01kv-etag-secret";
#define KV_SECRET_KLEN (sizeof kv_secret_key - 1)

struct kv_wait {
	struct kv_wait *older, *newer;	/* the writes on their way, oldest first */
	vireo_req r;
	const struct kv_entry *was;	/* what it replaced, pinned; NULL: the key was absent */
	int status;
	char tag[KV_ETAG_LEN + 1];
	u8 klen;
	u8 key[];
};
/* Its heap block at the longest key, as kv_charge() counts an entry's. */
#define KV_WAIT_MAX (KV_BLOCK_HDR + ALIGN_UP(sizeof(struct kv_wait) + KV_KEY_MAX, 16))
_Static_assert(KV_WAIT_MAX <= 368, "the bound written above");

static struct kv_wait *kv_oldest, *kv_newest;

/* Whether a write to key is on its way; if so, *durable is the state the
 * disk holds (the entry, or NULL: absent). One pass over the writes on
 * their way, at most one per connection. */
static bool kv_on_its_way(const char *key, size_t klen, const struct kv_entry **durable)
{
	for (const struct kv_wait *w = kv_oldest; w; w = w->newer)
		if (w->klen == klen && !memcmp(w->key, key, klen)) {
			*durable = w->was;
			return true;
		}
	return false;
}

/* w's write did not happen: the memory copy goes back to what it replaced,
 * or the next write to its key on its way takes that over. */
static void kv_undo(struct kv_wait *w)
{
	struct kv_wait *n;

	for (n = w->newer; n; n = n->newer)
		if (n->klen == w->klen && !memcmp(n->key, w->key, w->klen))
			break;
	if (n) {
		/* n replaced what w wrote, which is nowhere now. */
		if (n->was)
			kv_unpin(&kv_store, n->was);
		n->was = w->was;	/* the pin moves with it */
		w->was = NULL;
		return;
	}
	kv_restore(&kv_store, w->key, w->klen, w->was);
}

static void kv_wait_end(struct kv_wait *w)
{
	if (w->older)
		w->older->newer = w->newer;
	else
		kv_oldest = w->newer;
	if (w->newer)
		w->newer->older = w->older;
	else
		kv_newest = w->older;
	if (w->was)
		kv_unpin(&kv_store, w->was);
	vireo_free(w);
	kv_gauges();
}

static void kv_durable(int err, void *arg)
{
	struct kv_wait *w = arg;

	if (err)
		kv_undo(w);
	if (!err) {
		if (w->tag[0])
			vireo_resp_header(w->r, "ETag", w->tag);
		vireo_resp_send(w->r, w->status, NULL, NULL, 0);
	} else if (err == -ENOSPC) {
		kv_fail(w->r, 507, "the data disk is full", KV_R_FULL);
	} else {
		kv_fail(w->r, 503, "the data disk failed: read-only", KV_R_BUSY);
	}
	kv_wait_end(w);
}

/* A PUT (put) or DELETE with a data disk: the memory copy changes now, the
 * answer comes once the record is durable, and a refusal or failure puts
 * the memory copy back (above). */
static void kv_write_durable(vireo_req r, bool put, const char *key, size_t klen, const void *val, size_t vlen)
{
	const struct kv_entry *prev;
	struct kv_wait *w;
	enum kv_status st;
	int err;

	if (!kv_key_valid((const u8 *)key, klen)) {
		kv_answer_status(r, KV_BAD_KEY, NULL);
		return;
	}
	/* a DELETE or a precondition about a value kv does not have */
	if ((!put || vireo_req_header(r, "If-Match") || vireo_req_header(r, "If-None-Match")) &&
	    !kv_find(&kv_store, (const u8 *)key, klen) && !kv_on_its_way(key, klen, &prev) &&
	    kv_unloaded(r, key, klen))
		return;
	w = vireo_alloc(sizeof *w + klen);
	if (!w) {
		kv_fail(r, 507, "out of memory (app.mem)", KV_R_NOMEM);
		return;
	}
	memset(w, 0, sizeof *w);
	w->r = r;
	w->klen = (u8)klen;
	memcpy(w->key, key, klen);
	w->was = kv_find(&kv_store, (const u8 *)key, klen);
	if (w->was && !kv_pin(&kv_store, w->was)) {
		vireo_free(w);
		kv_fail(r, 503, "the key is busy: retry", KV_R_BUSY);
		return;
	}
	w->older = kv_newest;
	if (kv_newest)
		kv_newest->newer = w;
	else
		kv_oldest = w;
	kv_newest = w;
	if (put)
		st = kv_put(&kv_store, (const u8 *)key, klen, val, vlen, vireo_req_header(r, "If-Match"),
			    vireo_req_header(r, "If-None-Match"), w->tag);
	else
		st = kv_delete(&kv_store, (const u8 *)key, klen, vireo_req_header(r, "If-Match"),
			       vireo_req_header(r, "If-None-Match"));
	if (st != KV_OK && st != KV_CREATED) {
		kv_wait_end(w);	/* nothing changed */
		kv_answer_status(r, st, NULL);
		return;
	}
	w->status = st == KV_CREATED ? 201 : 204;
	kv_gauges();
	err = put ? vireo_store_put(key, klen, val, vlen, kv_durable, w) : vireo_store_del(key, klen, kv_durable, w);
	if (err == -ENOENT && !put) {
		kv_durable(0, w);	/* never reached the disk: nothing to delete there */
		return;
	}
	if (!err)
		return;
	kv_undo(w);	/* the newest write: no later one to hand over to */
	kv_wait_end(w);
	if (err == -ENOSPC || err == -ENOMEM)
		kv_fail(r, 507, "the data disk is full", KV_R_FULL);
	else
		kv_fail(r, 503, err == -EBUSY ? "the data disk is busy: retry" : "the data disk cannot be written",
			KV_R_BUSY);
}

static void kv_put_one(vireo_req r, const char *key, size_t klen)
{
	const struct kv_entry *had;
	const void *body;
	size_t len;
	enum kv_status st;
	char tag[KV_ETAG_LEN + 1];

	vireo_counter_vec_add(&kv_requests, KV_OP_PUT, 1);
	if (!vireo_req_header(r, "Content-Length")) {
		kv_fail(r, 411, "PUT needs a Content-Length", KV_R_LENGTH);
		return;
	}
	body = vireo_req_body(r, &len);
	if (kv_disk == KV_DISK_READY) {
		kv_write_durable(r, true, key, klen, body, len);
		return;
	}
	if ((vireo_req_header(r, "If-Match") || vireo_req_header(r, "If-None-Match")) &&
	    kv_get(&kv_store, (const u8 *)key, klen, NULL, NULL, &had) == KV_NOT_FOUND &&
	    kv_unloaded(r, key, klen))
		return;	/* the precondition is about a value kv does not have */
	st = kv_put(&kv_store, (const u8 *)key, klen, body, len, vireo_req_header(r, "If-Match"),
		    vireo_req_header(r, "If-None-Match"), tag);
	kv_gauges();
	if (st != KV_OK && st != KV_CREATED) {
		kv_answer_status(r, st, NULL);
		return;
	}
	vireo_resp_header(r, "ETag", tag);
	vireo_resp_send(r, st == KV_CREATED ? 201 : 204, NULL, NULL, 0);
}

static void kv_delete_one(vireo_req r, const char *key, size_t klen)
{
	enum kv_status st;

	vireo_counter_vec_add(&kv_requests, KV_OP_DELETE, 1);
	if (kv_disk == KV_DISK_READY) {
		kv_write_durable(r, false, key, klen, NULL, 0);
		return;
	}
	st = kv_delete(&kv_store, (const u8 *)key, klen, vireo_req_header(r, "If-Match"),
		       vireo_req_header(r, "If-None-Match"));
	kv_gauges();
	if (st == KV_NOT_FOUND && kv_unloaded(r, key, klen))
		return;
	if (st != KV_OK) {
		kv_answer_status(r, st, NULL);
		return;
	}
	vireo_resp_send(r, 204, NULL, NULL, 0);
}

static void kv_list(vireo_req r)
{
	char prefix[KV_KEY_MAX + 1], cursor[2 * KV_KEY_MAX + 1], lim[8];
	u8 after[KV_KEY_MAX];
	int plen, clen, llen, alen = 0;
	u64 limit = KV_PAGE_DEFAULT;
	char *buf;
	size_t n;

	vireo_counter_vec_add(&kv_requests, KV_OP_LIST, 1);
	plen = vireo_req_query_param(r, "prefix", prefix, sizeof prefix);
	if (plen == -ENOENT) {
		plen = 0;
	} else if (plen < 0) {
		kv_fail(r, 400, "bad prefix: at most 250 bytes", KV_R_BAD);
		return;
	}
	clen = vireo_req_query_param(r, "cursor", cursor, sizeof cursor);
	if (clen >= 0) {
		alen = kv_cursor_decode(cursor, (size_t)clen, after);
		if (alen < 0) {
			kv_fail(r, 400, "bad cursor", KV_R_BAD);
			return;
		}
	} else if (clen != -ENOENT) {
		kv_fail(r, 400, "bad cursor", KV_R_BAD);
		return;
	}
	llen = vireo_req_query_param(r, "limit", lim, sizeof lim);
	if (llen != -ENOENT) {
		const char *p = lim;

		if (llen < 0 || parse_dec(&p, KV_PAGE_MAX, &limit) || *p || limit == 0) {
			kv_fail(r, 400, "bad limit: 1..1000", KV_R_BAD);
			return;
		}
	}
	buf = vireo_alloc(KV_LIST_BUF);
	if (!buf) {
		kv_fail(r, 503, "out of memory (app.mem)", KV_R_NOMEM);
		return;
	}
	n = kv_list_json(&kv_store, (const u8 *)prefix, (size_t)plen, after, (size_t)alen,
			 (unsigned)limit, buf, KV_LIST_BUF - 1);
	if (n == 0) {
		vireo_free(buf);
		kv_fail(r, 500, "listing failed", -1);
		return;
	}
	buf[n++] = '\n';
	if (vireo_resp_send(r, 200, "application/json", buf, n) < 0) {
		vireo_counter_vec_add(&kv_refused, KV_R_BUSY, 1);
		vireo_resp_error(r, 503);
	}
	vireo_free(buf);
}

static void kv_handler(vireo_req r, void *arg)
{
	const char *key = vireo_req_subpath(r);
	size_t klen = strlen(key);
	enum vireo_method m = vireo_req_method(r);

	if (!kv_authorized(r)) {
		vireo_resp_header(r, "WWW-Authenticate", "Bearer realm=\"kv\"");
		kv_fail(r, 401, "unauthorized: Authorization: Bearer <kv.token> required", KV_R_AUTH);
		return;
	}
	if (kv_disk == KV_DISK_WAIT) {
		vireo_resp_header(r, "Retry-After", "1");
		kv_fail(r, 503, "loading the data disk", KV_R_BUSY);
		return;
	}
	if (klen == 0) {
		if (m == VIREO_GET || m == VIREO_HEAD) {
			kv_list(r);
		} else {
			vireo_resp_header(r, "Allow", "GET, HEAD");
			kv_fail(r, 405, "/kv/ lists keys: GET only", KV_R_METHOD);
		}
		return;
	}
	switch (m) {
	case VIREO_GET:
	case VIREO_HEAD:
		kv_get_one(r, key, klen);
		break;
	case VIREO_PUT:
		kv_put_one(r, key, klen);
		break;
	case VIREO_DELETE:
		kv_delete_one(r, key, klen);
		break;
	default:	/* the route allows only the three */
		vireo_resp_header(r, "Allow", "GET, HEAD, PUT, DELETE");
		kv_fail(r, 405, "method not allowed", KV_R_METHOD);
		break;
	}
}

static struct {
	u8 key[KV_KEY_MAX], next[KV_KEY_MAX];
	size_t klen, nlen;
	unsigned loaded, skipped;
	bool rw;
} kv_ld;

static bool kv_load_pick(const void *key, size_t klen, size_t vlen, void *arg)
{
	if (klen > KV_KEY_MAX)
		return true;
	memcpy(kv_ld.next, key, klen);
	kv_ld.nlen = klen;
	return false;
}

static void kv_load_next(void);

static void kv_load_got(int err, const void *val, size_t vlen, void *arg)
{
	char tag[KV_ETAG_LEN + 1];
	enum kv_status st = KV_NO_MEMORY;

	if (!err)
		st = kv_put(&kv_store, kv_ld.key, kv_ld.klen, val, vlen, NULL, NULL, tag);
	if (err || (st != KV_OK && st != KV_CREATED)) {
		kv_ld.skipped++;
		kv_skipped_any = true;
		vireo_warn("kv: key %.*s from the data disk not loaded (%d/%d)", (int)kv_ld.klen, kv_ld.key, err,
			   (int)st);
	} else {
		kv_ld.loaded++;
	}
	kv_load_next();
}

/* One key at a time, in key order, from the index (each read from disk). */
static void kv_load_next(void)
{
	for (;;) {
		int err;

		kv_ld.nlen = 0;
		vireo_store_keys("", 0, kv_ld.key, kv_ld.klen, kv_load_pick, NULL);
		if (!kv_ld.nlen)
			break;
		memcpy(kv_ld.key, kv_ld.next, kv_ld.nlen);
		kv_ld.klen = kv_ld.nlen;
		if (!kv_key_valid(kv_ld.key, kv_ld.klen))
			continue;	/* the ETag secret, another app's keys */
		err = vireo_store_get(kv_ld.key, kv_ld.klen, kv_load_got, NULL);
		if (err == 0)
			return;
		kv_ld.skipped++;
		kv_skipped_any = true;
	}
	kv_disk = kv_ld.rw ? KV_DISK_READY : KV_DISK_NONE;
	kv_gauges();
	vireo_log("kv: %u keys loaded from the data disk (%u skipped); %s", kv_ld.loaded, kv_ld.skipped,
		  kv_ld.rw ? "PUT and DELETE answer once durable on it"
			   : "it is read-only: new values are kept in memory only");
}

static void kv_secret_saved(int err, void *arg)
{
	if (err) {
		vireo_warn("kv: cannot save the ETag secret on the data disk (%d): memory only", err);
		kv_ld.rw = false;
	}
	kv_load_next();
}

static void kv_secret_got(int err, const void *val, size_t vlen, void *arg)
{
	if (!err && vlen == sizeof kv_cfg.secret) {
		memcpy(kv_cfg.secret, val, vlen);
		kv_store_clear(&kv_store);
		kv_store_init(&kv_store, &kv_cfg);	/* empty: requests waited */
	} else {
		vireo_warn("kv: the ETag secret on the data disk is unreadable (%d): tags change", err);
	}
	kv_load_next();
}

static void kv_disk_ready(int err, void *arg)
{
	if (!err || err == -EROFS) {
		kv_ld.rw = !err;
		err = vireo_store_get(kv_secret_key, KV_SECRET_KLEN, kv_secret_got, NULL);
		if (err == -ENOENT && kv_ld.rw)
			err = vireo_store_put(kv_secret_key, KV_SECRET_KLEN, kv_cfg.secret, sizeof kv_cfg.secret,
					      kv_secret_saved, NULL);
		if (err) {
			if (err != -ENOENT)
				vireo_warn("kv: the ETag secret: %d", err);
			kv_load_next();
		}
		return;
	}
	kv_disk = KV_DISK_NONE;
	kv_gauges();
	if (err == -ENODEV)
		vireo_log("kv: no data disk: values are kept in memory only and lost at restart");
	else if (err)
		vireo_warn("kv: the data disk cannot be written (%d): values are kept in memory only", err);
}

static int kv_init(void)
{
	struct kv_config c = {.max_bytes = (size_t)kv_max_bytes, .value_max = (size_t)kv_value_max,
			      .alloc = vireo_alloc, .free = vireo_free};
	size_t worst;
	int err;

	vireo_random(c.secret, sizeof c.secret);
	kv_cfg = c;
	err = kv_store_init(&kv_store, &c);
	if (err)
		return err;
	kv_gauges();
	err = vireo_http_route(&(struct vireo_route){
		.path = "/kv/", .prefix = true,
		.methods = VIREO_GET | VIREO_PUT | VIREO_DELETE,
		.handler = kv_handler, .max_body = (u32)kv_value_max});
	if (err)
		return err;
	worst = kv_store.max_bytes + kv_charge(KV_KEY_MAX, kv_store.value_max) + KV_LIST_BUF +
		VIREO_ALLOC_OVERHEAD;
	if (vireo_store_open(kv_disk_ready, NULL) == 0)
		kv_disk = KV_DISK_WAIT;
	vireo_log("kv: /kv/ serving, max_bytes=%lu value_max=%lu", (unsigned long)kv_store.max_bytes,
		  (unsigned long)kv_store.value_max);
	if (kv_token_bad)
		vireo_warn("kv: kv.token is not 1..128 of A-Z a-z 0-9 - . _ ~ + / (then =): every request "
			   "is refused (401) until it is fixed");
	else if (kv_token_len)
		vireo_log("kv: requests need Authorization: Bearer <kv.token>");
	if (worst > vireo_mem_limit())
		vireo_warn("kv: kv.max_bytes + a %lu-byte replacement + the listing page (%lu) is over "
			   "app.mem (%lu): puts may be refused below kv.max_bytes",
			   (unsigned long)kv_charge(KV_KEY_MAX, kv_store.value_max),
			   (unsigned long)worst, (unsigned long)vireo_mem_limit());
	return 0;
}

VIREO_APP(kv, .name = "kv", .init = kv_init,
	  .help = "a key-value store (durable with a data disk): GET/PUT/DELETE /kv/<key>, listing at /kv/");
