/* The app API's durable store (include/vireo/store.h) over storage/. */
#include "storage/disk.h"
#include "vireo/store.h"

static struct {
	struct store *s;
	int err;
	void (*ready)(int err, void *arg);
	void *arg;
} api;

static void api_opened(struct store *s, int err, void *arg)
{
	api.s = err ? NULL : s;
	api.err = err ? err : s->state == ST_READY ? 0 : -EROFS;
	if (api.ready)
		api.ready(api.err, api.arg);
}

int vireo_store_open(void (*ready)(int err, void *arg), void *arg)
{
	api.ready = ready;
	api.arg = arg;
	api.err = -EAGAIN;
	return disk_store_open(api_opened, NULL);
}

size_t vireo_store_value_max(void)
{
	return api.s ? st_value_max(api.s) : 0;
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
	if (klen > ST_KEY_MAX || vlen > UINT32_MAX)
		return -EINVAL;
	return st_put(api.s, key, (u32)klen, val, (u32)vlen, done, arg);
}

int vireo_store_del(const void *key, size_t klen, void (*done)(int err, void *arg), void *arg)
{
	int err = api_state();

	if (err)
		return err;
	if (klen > ST_KEY_MAX)
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

int vireo_store_get(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
		    void *arg)
{
	struct api_get *g = NULL;
	int err = api_state();

	if (err)
		return err;
	if (klen > ST_KEY_MAX || !got)
		return -EINVAL;
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

struct api_walk {
	bool (*fn)(const void *key, size_t klen, size_t vlen, void *arg);
	void *arg;
};

static bool api_walk_fn(const struct st_ent *e, void *arg)
{
	struct api_walk *w = arg;

	if (e->seg == ST_NO_SEG)
		return true;	/* a key with its first write pending */
	return w->fn(e->key, e->klen, e->vlen, w->arg);
}

unsigned vireo_store_keys(const void *prefix, size_t plen, const void *after, size_t alen,
			  bool (*fn)(const void *key, size_t klen, size_t vlen, void *arg), void *arg)
{
	struct api_walk w = { fn, arg };

	if (!api.s || plen > ST_KEY_MAX || alen > ST_KEY_MAX)
		return 0;
	return st_index_walk(&api.s->index, prefix, (u32)plen, after, (u32)alen, api_walk_fn, &w);
}
