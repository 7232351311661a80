/* The app API's durable store (include/vireo/store.h) over storage/. */
#include "kernel/loop.h"
#include "lib/string.h"
#include "runtime/store_rt.h"
#include "storage/disk.h"
#include "storage/store_log.h"
#include "vireo/store.h"

/* Who waits for the open: the app (vireo_store_open) and the runtime
 * (store_rt_open), each told once. */
struct api_waiter {
	void (*ready)(int err, void *arg);
	void *arg;
	bool asked;
	struct work w;		/* the callback, when the open was over before the ask */
};

static struct {
	struct store *s;
	struct st_log log;
	int err;
	bool opening, opened;
	struct api_waiter app, rt;
} api;

static void api_tell(void *arg)
{
	struct api_waiter *w = arg;

	if (w->ready)
		w->ready(api.err, w->arg);
}

static void api_opened(struct store *s, int err, void *arg)
{
	(void)arg;
	api.s = err ? NULL : s;
	if (api.s)
		st_log_init(&api.log, s);
	api.err = err ? err : s->state == ST_READY ? 0 : -EROFS;
	api.opened = true;
	api_tell(&api.app);
	api_tell(&api.rt);
}

static void api_tell_later(struct api_waiter *w)
{
	work_init(&w->w, api_tell, w);
	work_queue(&w->w);
}

static int api_start(void)
{
	api.opening = true;
	api.opened = false;
	api.err = -EAGAIN;
	return disk_store_open(api_opened, NULL);
}

/* The app's first call waits for the runtime's open when that came first;
 * otherwise (and on every later call: the host tests' boots) it opens. */
int vireo_store_open(void (*ready)(int err, void *arg), void *arg)
{
	bool again = api.app.asked;

	api.app.ready = ready;
	api.app.arg = arg;
	api.app.asked = true;
	if (!again && api.rt.asked && api.opening) {
		if (api.opened)
			api_tell_later(&api.app);
		return 0;
	}
	return api_start();
}

int store_rt_open(void (*ready)(int err, void *arg), void *arg)
{
	if (api.rt.asked)
		return -EALREADY;
	api.rt.ready = ready;
	api.rt.arg = arg;
	api.rt.asked = true;
	if (api.opened)
		api_tell_later(&api.rt);
	else if (!api.opening)
		return api_start();
	return 0;
}

/* Keys that start with a 0 byte are the record log's (store_log.h). */
static bool api_reserved(const void *key, size_t klen)
{
	return klen && !*(const u8 *)key;
}

static int api_state(void)
{
	return api.s ? 0 : api.err == -EAGAIN ? -EAGAIN : -ENODEV;
}

int vireo_store_put(const void *key, size_t klen, const void *val, size_t vlen, void (*done)(int err, void *arg),
		    void *arg)
{
	int err = api_state();

	if (err)
		return err;
	if (klen > ST_KEY_MAX || vlen > UINT32_MAX || api_reserved(key, klen))
		return -EINVAL;
	return st_put(api.s, key, (u32)klen, val, (u32)vlen, done, arg);
}

int vireo_store_del(const void *key, size_t klen, void (*done)(int err, void *arg), void *arg)
{
	int err = api_state();

	if (err)
		return err;
	if (klen > ST_KEY_MAX || api_reserved(key, klen))
		return -EINVAL;
	return st_del(api.s, key, (u32)klen, done, arg);
}

/* st_get's u32 length into the API's size_t: a small adapter per read. */
struct api_get {
	void (*got)(int err, const void *val, size_t vlen, void *arg);
	void *arg;
};

static struct api_get api_gets[ST_GETS_MAX];

static void api_got(int err, const void *val, u32 vlen, void *arg)
{
	struct api_get *g = arg;
	void (*got)(int, const void *, size_t, void *) = g->got;

	g->got = NULL;
	got(err, val, vlen, g->arg);
}

/* A get in a free slot of api_gets[] (the app's and the runtime's share
 * them): -EBUSY with all ST_GETS_MAX in flight. */
static int api_get_start(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
			 void *arg)
{
	struct api_get *g = NULL;
	int err;

	for (unsigned i = 0; i < ST_GETS_MAX && !g; i++)
		if (!api_gets[i].got)
			g = &api_gets[i];
	if (!g)
		return -EBUSY;
	g->got = got;
	g->arg = arg;
	err = st_get(api.s, key, (u32)klen, api_got, g);
	if (err)
		g->got = NULL;
	return err;
}

int vireo_store_get(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
		    void *arg)
{
	int err = api_state();

	if (err)
		return err;
	if (klen > ST_KEY_MAX || !got || api_reserved(key, klen))
		return -EINVAL;
	return api_get_start(key, klen, got, arg);
}

static bool api_rt_key(const void *key, size_t klen)
{
	return klen > 2 && klen <= ST_KEY_MAX && !memcmp(key, STORE_RT_PREFIX, 2);
}

int store_rt_put(const void *key, size_t klen, const void *val, size_t vlen, void (*done)(int err, void *arg),
		 void *arg)
{
	int err = api_state();

	if (err)
		return err;
	if (!api_rt_key(key, klen) || vlen > UINT32_MAX)
		return -EINVAL;
	return st_put(api.s, key, (u32)klen, val, (u32)vlen, done, arg);
}

int store_rt_get(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
		 void *arg)
{
	int err = api_state();

	if (err)
		return err;
	if (!api_rt_key(key, klen) || !got)
		return -EINVAL;
	return api_get_start(key, klen, got, arg);
}

struct api_walk {
	bool (*fn)(const void *key, size_t klen, size_t vlen, void *arg);
	void *arg;
	unsigned calls;
};

static bool api_walk_fn(const struct st_ent *e, void *arg)
{
	struct api_walk *w = arg;

	if (e->seg == ST_NO_SEG || api_reserved(e->key, e->klen))
		return true;	/* a key with its first write pending, the log's */
	w->calls++;
	return w->fn(e->key, e->klen, e->vlen, w->arg);
}

unsigned vireo_store_keys(const void *prefix, size_t plen, const void *after, size_t alen,
			  bool (*fn)(const void *key, size_t klen, size_t vlen, void *arg), void *arg)
{
	static u8 past_log[ST_KEY_MAX];	/* 0x00 then 0xff...: no log key sorts after it */
	struct api_walk w = { fn, arg, 0 };

	if (!api.s || plen > ST_KEY_MAX || alen > ST_KEY_MAX || api_reserved(prefix, plen))
		return 0;
	if (!plen && (!alen || !*(const u8 *)after)) {
		/* Start past the log's keys rather than step over each. */
		memset(past_log + 1, 0xff, sizeof past_log - 1);
		after = past_log;
		alen = sizeof past_log;
	}
	st_index_walk(&api.s->index, prefix, (u32)plen, after, (u32)alen, api_walk_fn, &w);
	return w.calls;
}

/* vireo_store_next: the key found, kept for its read. */
struct api_next {
	void (*got)(int err, const void *key, size_t klen, const void *val, size_t vlen, void *arg);
	void *arg;
	u32 klen;
	u8 key[ST_KEY_MAX];
};

static struct api_next api_nexts[ST_GETS_MAX];

static bool api_pick(const void *key, size_t klen, size_t vlen, void *arg)
{
	struct api_next *n = arg;

	memcpy(n->key, key, klen);
	n->klen = (u32)klen;
	return false;
}

static void api_next_got(int err, const void *val, u32 vlen, void *arg)
{
	struct api_next *n = arg;
	void (*got)(int, const void *, size_t, const void *, size_t, void *) = n->got;

	n->got = NULL;
	got(err, n->key, n->klen, val, vlen, n->arg);
}

int vireo_store_next(const void *prefix, size_t plen, const void *after, size_t alen,
		     void (*got)(int err, const void *key, size_t klen, const void *val, size_t vlen, void *arg),
		     void *arg)
{
	struct api_next *n = NULL;
	int err = api_state();

	if (err)
		return err;
	if (plen > ST_KEY_MAX || alen > ST_KEY_MAX || !got)
		return -EINVAL;
	for (unsigned i = 0; i < ST_GETS_MAX && !n; i++)
		if (!api_nexts[i].got)
			n = &api_nexts[i];
	if (!n)
		return -EBUSY;
	if (!vireo_store_keys(prefix, plen, after, alen, api_pick, n))
		return -ENOENT;
	n->got = got;
	n->arg = arg;
	err = st_get(api.s, n->key, n->klen, api_next_got, n);
	if (err)
		n->got = NULL;
	return err;
}

/* The record log (store_log.h). */
int vireo_log_append(const void *data, size_t len, void (*done)(int err, u64 seq, void *arg), void *arg)
{
	int err = api_state();

	return err ? err : st_log_append(&api.log, data, len, done, arg);
}

int vireo_log_read(u64 from, void (*got)(int err, u64 seq, const void *data, size_t len, void *arg), void *arg)
{
	int err = api_state();

	return err ? err : st_log_read(&api.log, from, got, arg);
}

int vireo_log_trim(u64 upto, void (*done)(int err, void *arg), void *arg)
{
	int err = api_state();

	return err ? err : st_log_trim(&api.log, upto, done, arg);
}

u64 vireo_log_first(void)
{
	return api.s ? st_log_first(&api.log) : 0;
}

u64 vireo_log_last(void)
{
	return api.s ? st_log_last(&api.log) : 0;
}
