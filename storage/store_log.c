/* The record log on the store (storage/store_log.h). */
#include "lib/string.h"
#include "storage/store_int.h"
#include "storage/store_log.h"

static void sl_key(u8 *k, u8 kind, u64 seq)
{
	k[0] = 0;
	k[1] = kind;
	for (int i = 0; i < 8; i++)
		k[2 + i] = (u8)(seq >> (56 - 8 * i));
}

static u64 sl_seq(const u8 *k)
{
	u64 v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | k[2 + i];
	return v;
}

static const u8 sl_rec_prefix[2] = { 0, 'L' };
static const u8 sl_trim_prefix[2] = { 0, 'T' };

/* ---- finding keys ---- */

struct sl_find {
	u64 max, limit;		/* the largest seq seen; stop past limit (collect) */
	u64 seqs[SL_SWEEP];
	unsigned n, cap;
	bool first_only;
};

static bool sl_find_fn(const struct st_ent *e, void *arg)
{
	struct sl_find *f = arg;
	u64 seq;

	if (st_ghost(e) || e->klen != SL_KLEN)
		return true;	/* an append or trim not durable yet */
	seq = sl_seq(e->key);
	if (seq > f->limit)
		return false;
	f->max = MAX(f->max, seq);
	if (f->n < f->cap)
		f->seqs[f->n++] = seq;
	return !f->first_only && f->n < f->cap + (f->cap == 0);
}

/* ---- deleting what trims dropped ---- */

static void sl_sweep(struct st_log *l);

static void sl_swept(int err, void *arg)
{
	struct st_log *l = arg;

	l->sweeping--;
	if (!l->sweeping && (!err || l->sweep_again)) {
		l->sweep_again = false;
		sl_sweep(l);	/* the next round: what this one deleted is gone */
	}
}

/* Deletes up to SL_SWEEP records at or below the trim, and trim keys below
 * it, one round at a time (the next when all of a round's are durable, so
 * no key is deleted twice). A failed delete stops it (the store is
 * read-only then) until the next trim. */
static void sl_sweep(struct st_log *l)
{
	struct sl_find f = { .limit = l->trimmed, .cap = SL_SWEEP };
	u8 key[SL_KLEN];
	unsigned i;

	if (l->sweeping) {
		l->sweep_again = true;
		return;
	}
	if (!l->trimmed || l->s->state != ST_READY)
		return;
	st_index_walk(&l->s->index, sl_rec_prefix, 2, NULL, 0, sl_find_fn, &f);
	for (i = 0; i < f.n; i++) {
		sl_key(key, 'L', f.seqs[i]);
		if (st_del(l->s, key, SL_KLEN, sl_swept, l) == 0)
			l->sweeping++;
	}
	if (f.n < SL_SWEEP) {
		struct sl_find t = { .limit = l->trimmed - 1, .cap = SL_SWEEP - f.n };

		st_index_walk(&l->s->index, sl_trim_prefix, 2, NULL, 0, sl_find_fn, &t);
		for (i = 0; i < t.n; i++) {
			sl_key(key, 'T', t.seqs[i]);
			if (st_del(l->s, key, SL_KLEN, sl_swept, l) == 0)
				l->sweeping++;
		}
	}
}

void st_log_init(struct st_log *l, struct store *s)
{
	struct sl_find r = { .limit = ~0ull }, t = { .limit = ~0ull };

	memset(l, 0, sizeof *l);
	l->s = s;
	st_index_walk(&s->index, sl_rec_prefix, 2, NULL, 0, sl_find_fn, &r);
	st_index_walk(&s->index, sl_trim_prefix, 2, NULL, 0, sl_find_fn, &t);
	l->last = r.max;
	l->trimmed = t.max;
	l->next = MAX(r.max, t.max) + 1;
	sl_sweep(l);
}

/* ---- appends ---- */

static void sl_appended(int err, void *arg)
{
	struct sl_append *a = arg;
	void (*done)(int, u64, void *) = a->done;

	a->done = NULL;
	if (!err)
		a->l->last = MAX(a->l->last, a->seq);
	done(err, err ? 0 : a->seq, a->arg);
}

int st_log_append(struct st_log *l, const void *data, size_t len, void (*done)(int err, u64 seq, void *arg),
		  void *arg)
{
	struct sl_append *a = NULL;
	u8 key[SL_KLEN];
	int err;

	if (!l->s)
		return -EAGAIN;
	if (!done || len > st_value_max(l->s))
		return -EINVAL;
	for (unsigned i = 0; i < SL_APPENDS && !a; i++)
		if (!l->ap[i].done)
			a = &l->ap[i];
	if (!a)
		return -EBUSY;
	sl_key(key, 'L', l->next);
	err = st_put(l->s, key, SL_KLEN, data, (u32)len, sl_appended, a);
	if (err)
		return err;
	*a = (struct sl_append){ .l = l, .seq = l->next++, .done = done, .arg = arg };
	return 0;
}

/* ---- reads ---- */

static void sl_got(int err, const void *val, u32 vlen, void *arg)
{
	struct sl_read *r = arg;
	void (*got)(int, u64, const void *, size_t, void *) = r->got;

	r->got = NULL;
	got(err, r->seq, err ? NULL : val, err ? 0 : vlen, r->arg);
}

int st_log_read(struct st_log *l, u64 from, void (*got)(int err, u64 seq, const void *data, size_t len, void *arg),
		void *arg)
{
	struct sl_find f = { .limit = ~0ull, .cap = 1, .first_only = true };
	struct sl_read *r = NULL;
	u8 after[SL_KLEN], key[SL_KLEN];
	int err;

	if (!l->s)
		return -EAGAIN;
	if (!got)
		return -EINVAL;
	from = MAX(from, l->trimmed + 1);
	sl_key(after, 'L', from - 1);
	st_index_walk(&l->s->index, sl_rec_prefix, 2, after, from > 1 ? SL_KLEN : 0, sl_find_fn, &f);
	if (!f.n)
		return -ENOENT;
	for (unsigned i = 0; i < ST_GETS_MAX && !r; i++)
		if (!l->rd[i].got)
			r = &l->rd[i];
	if (!r)
		return -EBUSY;
	*r = (struct sl_read){ .l = l, .seq = f.seqs[0], .got = got, .arg = arg };
	sl_key(key, 'L', r->seq);
	err = st_get(l->s, key, SL_KLEN, sl_got, r);
	if (err)
		r->got = NULL;
	return err;
}

/* ---- trims ---- */

static void sl_trimmed(int err, void *arg)
{
	struct st_log *l = arg;
	void (*done)(int, void *) = l->trim_done;

	if (!err)
		l->trimmed = MAX(l->trimmed, l->trim_to);
	l->trim_to = 0;
	l->trim_done = NULL;
	if (!err)
		sl_sweep(l);
	done(err, l->trim_arg);
}

int st_log_trim(struct st_log *l, u64 upto, void (*done)(int err, void *arg), void *arg)
{
	u8 key[SL_KLEN];
	int err;

	if (!l->s)
		return -EAGAIN;
	if (!done || upto > l->last)
		return -EINVAL;
	if (l->trim_to)
		return -EBUSY;
	if (upto <= l->trimmed)
		return -EALREADY;
	/* The trim key before any delete: the two are one step at a crash. */
	sl_key(key, 'T', upto);
	err = st_put(l->s, key, SL_KLEN, NULL, 0, sl_trimmed, l);
	if (err)
		return err;
	l->trim_to = upto;
	l->trim_done = done;
	l->trim_arg = arg;
	return 0;
}

u64 st_log_first(const struct st_log *l)
{
	struct sl_find f = { .limit = ~0ull, .cap = 1, .first_only = true };
	u8 after[SL_KLEN];

	if (!l->s)
		return 0;
	sl_key(after, 'L', l->trimmed);
	st_index_walk(&l->s->index, sl_rec_prefix, 2, after, l->trimmed ? SL_KLEN : 0, sl_find_fn, &f);
	return f.n ? f.seqs[0] : 0;
}

u64 st_log_last(const struct st_log *l)
{
	return l->s ? l->last : 0;
}
