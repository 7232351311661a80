/* The store's memory index (index.h): an AVL tree by key bytes. */
#include "lib/string.h"
#include "storage/index.h"

static int st_cmp(const u8 *a, u32 alen, const u8 *b, u32 blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

static int st_h(const struct st_ent *e)
{
	return e ? e->height : 0;
}

static void st_fix(struct st_ent *e)
{
	e->height = (u8)(1 + MAX(st_h(e->left), st_h(e->right)));
}

static struct st_ent *st_rot_right(struct st_ent *e)
{
	struct st_ent *l = e->left;

	e->left = l->right;
	l->right = e;
	st_fix(e);
	st_fix(l);
	return l;
}

static struct st_ent *st_rot_left(struct st_ent *e)
{
	struct st_ent *r = e->right;

	e->right = r->left;
	r->left = e;
	st_fix(e);
	st_fix(r);
	return r;
}

static struct st_ent *st_balance(struct st_ent *e)
{
	int bf;

	st_fix(e);
	bf = st_h(e->left) - st_h(e->right);
	if (bf > 1) {
		if (st_h(e->left->left) < st_h(e->left->right))
			e->left = st_rot_left(e->left);
		return st_rot_right(e);
	}
	if (bf < -1) {
		if (st_h(e->right->right) < st_h(e->right->left))
			e->right = st_rot_right(e->right);
		return st_rot_left(e);
	}
	return e;
}

struct st_ent *st_index_find(const struct st_index *x, const u8 *key, u32 klen)
{
	struct st_ent *e = x->root;

	while (e) {
		int c = st_cmp(key, klen, e->key, e->klen);

		if (c == 0)
			return e;
		e = c < 0 ? e->left : e->right;
	}
	return NULL;
}

static struct st_ent *st_insert(struct st_ent *e, struct st_ent *n, bool *dup)
{
	int c;

	if (!e)
		return n;
	c = st_cmp(n->key, n->klen, e->key, e->klen);
	if (c == 0) {
		*dup = true;
		return e;
	}
	if (c < 0)
		e->left = st_insert(e->left, n, dup);
	else
		e->right = st_insert(e->right, n, dup);
	return *dup ? e : st_balance(e);
}

int st_index_insert(struct st_index *x, struct st_ent *n)
{
	bool dup = false;

	n->left = n->right = NULL;
	n->height = 1;
	x->root = st_insert(x->root, n, &dup);
	if (dup)
		return -EEXIST;
	x->count++;
	x->bytes += st_ent_charge(n->klen);
	return 0;
}

static struct st_ent *st_remove_min(struct st_ent *e, struct st_ent **min)
{
	if (!e->left) {
		*min = e;
		return e->right;
	}
	e->left = st_remove_min(e->left, min);
	return st_balance(e);
}

static struct st_ent *st_remove(struct st_ent *e, const u8 *key, u32 klen, struct st_ent **out)
{
	int c;

	if (!e)
		return NULL;
	c = st_cmp(key, klen, e->key, e->klen);
	if (c < 0) {
		e->left = st_remove(e->left, key, klen, out);
	} else if (c > 0) {
		e->right = st_remove(e->right, key, klen, out);
	} else {
		struct st_ent *min;

		*out = e;
		if (!e->right)
			return e->left;
		e->right = st_remove_min(e->right, &min);
		min->left = e->left;
		min->right = e->right;
		e = min;
	}
	return *out ? st_balance(e) : e;
}

struct st_ent *st_index_remove(struct st_index *x, const u8 *key, u32 klen)
{
	struct st_ent *out = NULL;

	x->root = st_remove(x->root, key, klen, &out);
	if (out) {
		x->count--;
		x->bytes -= st_ent_charge(out->klen);
		out->left = out->right = NULL;
	}
	return out;
}

struct st_walk {
	const u8 *prefix, *after;
	u32 plen, alen;
	bool (*fn)(const struct st_ent *e, void *arg);
	void *arg;
	unsigned calls;
	bool stop;
};

/* Whether e's key is at or past the walk's start (after `after` and not
 * before the prefix). */
static int st_walk_lo(const struct st_walk *w, const struct st_ent *e)
{
	if (w->alen)
		return st_cmp(e->key, e->klen, w->after, w->alen) > 0;
	return st_cmp(e->key, e->klen, w->prefix, w->plen) >= 0;
}

static bool st_has_prefix(const struct st_walk *w, const struct st_ent *e)
{
	return e->klen >= w->plen && memcmp(e->key, w->prefix, w->plen) == 0;
}

/* True when e's key sorts past every key with the prefix. */
static bool st_past_prefix(const struct st_walk *w, const struct st_ent *e)
{
	return !st_has_prefix(w, e) && st_cmp(e->key, MIN((u32)e->klen, w->plen), w->prefix, w->plen) > 0;
}

static void st_walk(struct st_walk *w, const struct st_ent *e)
{
	if (!e || w->stop)
		return;
	if (st_walk_lo(w, e)) {
		st_walk(w, e->left);
		if (w->stop)
			return;
		if (st_past_prefix(w, e)) {
			w->stop = true;
			return;
		}
		if (st_has_prefix(w, e)) {
			w->calls++;
			if (!w->fn(e, w->arg)) {
				w->stop = true;
				return;
			}
		}
	}
	st_walk(w, e->right);
}

unsigned st_index_walk(const struct st_index *x, const u8 *prefix, u32 plen, const u8 *after, u32 alen,
		       bool (*fn)(const struct st_ent *e, void *arg), void *arg)
{
	struct st_walk w = { prefix, after, plen, alen, fn, arg, 0, false };

	st_walk(&w, x->root);
	return w.calls;
}

static void st_clear(struct st_ent *e, void (*fn)(struct st_ent *e, void *arg), void *arg)
{
	while (e) {
		struct st_ent *r = e->right;

		st_clear(e->left, fn, arg);
		fn(e, arg);
		e = r;
	}
}

void st_index_clear(struct st_index *x, void (*fn)(struct st_ent *e, void *arg), void *arg)
{
	st_clear(x->root, fn, arg);
	x->root = NULL;
	x->count = 0;
	x->bytes = 0;
}

struct st_check {
	const struct st_ent *prev;
	u64 count, bytes;
	bool bad;
};

static int st_check_tree(const struct st_ent *e, struct st_check *c)
{
	int hl, hr;

	if (!e)
		return 0;
	hl = st_check_tree(e->left, c);
	if (c->prev && st_cmp(c->prev->key, c->prev->klen, e->key, e->klen) >= 0)
		c->bad = true;
	c->prev = e;
	c->count++;
	c->bytes += st_ent_charge(e->klen);
	hr = st_check_tree(e->right, c);
	if (e->height != 1 + MAX(hl, hr) || hl - hr > 1 || hr - hl > 1 || e->klen == 0)
		c->bad = true;
	return e->height;
}

int st_index_check(const struct st_index *x)
{
	struct st_check c = { NULL, 0, 0, false };

	st_check_tree(x->root, &c);
	return c.bad || c.count != x->count || c.bytes != x->bytes ? -EBADMSG : 0;
}
