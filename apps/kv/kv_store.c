/* apps/kv's store; see kv_store.h for the bounds and their arithmetic. */
#include "kv_store.h"
#include "vireo/parse.h"
#include "vireo/string.h"

/* The tag hashes the length byte, the key and the value as one run. */
_Static_assert(offsetof(struct kv_entry, data) == offsetof(struct kv_entry, klen) + 1,
	       "klen must sit just before the key");
_Static_assert(KV_KEY_MAX <= 255, "klen is a byte");
_Static_assert(KV_VALUE_CEIL <= 0xffffffffu, "vlen is 32 bits");

int kv_store_init(struct kv_store *s, const struct kv_config *c)
{
	if (c->value_max > KV_VALUE_CEIL || !c->alloc || !c->free)
		return -EINVAL;
	memset(s, 0, sizeof *s);
	list_init(&s->held_list);
	s->max_bytes = c->max_bytes;
	s->value_max = c->value_max;
	s->alloc = c->alloc;
	s->free = c->free;
	siphash_key_from_bytes(&s->tagkey, c->secret);
	return 0;
}

static void kv_free_tree(struct kv_store *s, struct kv_entry *e)
{
	while (e) {
		struct kv_entry *r = e->right;

		kv_free_tree(s, e->left);	/* depth bounded by the height */
		s->free(e);
		e = r;
	}
}

void kv_store_clear(struct kv_store *s)
{
	kv_free_tree(s, s->root);
	struct list_node *n;

	while ((n = list_pop_front(&s->held_list)))
		s->free(list_entry(n, struct kv_entry, held));
	s->root = NULL;
	s->used = 0;
	s->count = 0;
	s->held = 0;
	s->held_bytes = 0;
}

/* An entry leaving the tree: freed, or kept on the held list while pinned. */
static void kv_release(struct kv_store *s, struct kv_entry *e)
{
	size_t charge = kv_charge(e->klen, e->vlen);

	if (!e->pins) {
		s->used -= charge;
		s->free(e);
		return;
	}
	e->height = 0;
	list_push_front(&s->held_list, &e->held);
	s->held++;
	s->held_bytes += charge;
}

bool kv_pin(struct kv_store *s, const struct kv_entry *ce)
{
	struct kv_entry *e = (struct kv_entry *)ce;

	if (e->pins == 0xffff)
		return false;
	e->pins++;
	return true;
}

/* Takes e off the held list; returns its charge, no longer counted as
 * held. */
static size_t kv_held_unlink(struct kv_store *s, struct kv_entry *e)
{
	size_t charge = kv_charge(e->klen, e->vlen);

	list_unlink(&e->held);
	s->held--;
	s->held_bytes -= charge;
	return charge;
}

void kv_unpin(struct kv_store *s, const struct kv_entry *ce)
{
	struct kv_entry *e = (struct kv_entry *)ce;

	if (!e->pins || --e->pins || e->height)
		return;	/* still pinned, or still in the tree */
	s->used -= kv_held_unlink(s, e);
	s->free(e);
}

void kv_store_set_max(struct kv_store *s, size_t max_bytes)
{
	s->max_bytes = max_bytes;
}

bool kv_key_valid(const u8 *key, size_t klen)
{
	size_t i;

	if (klen == 0 || klen > KV_KEY_MAX)
		return false;
	for (i = 0; i < klen; i++)
		if (key[i] < 0x21 || key[i] > 0x7e)
			return false;
	return true;
}

size_t kv_charge(size_t klen, size_t vlen)
{
	return KV_BLOCK_HDR + ALIGN_UP(KV_ENTRY_HDR + klen + vlen, (size_t)16);
}

/* Byte order, a shorter key first when one is a prefix of the other. */
static int kv_cmp(const u8 *a, size_t alen, const u8 *b, size_t blen)
{
	int c = memcmp(a, b, MIN(alen, blen));

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

static int kv_cmp_entry(const struct kv_entry *e, const u8 *key, size_t klen)
{
	return kv_cmp(e->data, e->klen, key, klen);
}

/* ---- the AVL tree ---- */
static int kv_h(const struct kv_entry *e)
{
	return e ? e->height : 0;
}

static void kv_fix_height(struct kv_entry *e)
{
	e->height = (u8)(MAX(kv_h(e->left), kv_h(e->right)) + 1);
}

static struct kv_entry *kv_rot_right(struct kv_entry *e)
{
	struct kv_entry *l = e->left;

	e->left = l->right;
	l->right = e;
	kv_fix_height(e);
	kv_fix_height(l);
	return l;
}

static struct kv_entry *kv_rot_left(struct kv_entry *e)
{
	struct kv_entry *r = e->right;

	e->right = r->left;
	r->left = e;
	kv_fix_height(e);
	kv_fix_height(r);
	return r;
}

static struct kv_entry *kv_balance(struct kv_entry *e)
{
	int b;

	kv_fix_height(e);
	b = kv_h(e->left) - kv_h(e->right);
	if (b > 1) {
		if (kv_h(e->left->left) < kv_h(e->left->right))
			e->left = kv_rot_left(e->left);
		return kv_rot_right(e);
	}
	if (b < -1) {
		if (kv_h(e->right->right) < kv_h(e->right->left))
			e->right = kv_rot_right(e->right);
		return kv_rot_left(e);
	}
	return e;
}

/* Puts n in the subtree at e, in place of an entry with its key if there is
 * one (*old receives it). Returns the subtree's new root. */
static struct kv_entry *kv_insert(struct kv_entry *e, struct kv_entry *n, struct kv_entry **old)
{
	int c;

	if (!e) {
		n->left = n->right = NULL;
		n->height = 1;
		return n;
	}
	c = kv_cmp_entry(n, e->data, e->klen);
	if (c == 0) {
		n->left = e->left;
		n->right = e->right;
		n->height = e->height;
		*old = e;
		return n;
	}
	if (c < 0)
		e->left = kv_insert(e->left, n, old);
	else
		e->right = kv_insert(e->right, n, old);
	return kv_balance(e);
}

static struct kv_entry *kv_remove_min(struct kv_entry *e, struct kv_entry **min)
{
	if (!e->left) {
		*min = e;
		return e->right;
	}
	e->left = kv_remove_min(e->left, min);
	return kv_balance(e);
}

/* Unlinks the entry with key from the subtree at e (*gone receives it). */
static struct kv_entry *kv_remove(struct kv_entry *e, const u8 *key, size_t klen,
				  struct kv_entry **gone)
{
	int c;

	if (!e)
		return NULL;
	c = kv_cmp(key, klen, e->data, e->klen);
	if (c < 0) {
		e->left = kv_remove(e->left, key, klen, gone);
	} else if (c > 0) {
		e->right = kv_remove(e->right, key, klen, gone);
	} else {
		struct kv_entry *m;

		*gone = e;
		if (!e->left || !e->right)
			return e->left ? e->left : e->right;
		e->right = kv_remove_min(e->right, &m);
		m->left = e->left;
		m->right = e->right;
		return kv_balance(m);
	}
	return kv_balance(e);
}

const struct kv_entry *kv_find(const struct kv_store *s, const u8 *key, size_t klen)
{
	const struct kv_entry *e = s->root;

	while (e) {
		int c = kv_cmp(key, klen, e->data, e->klen);

		if (c == 0)
			return e;
		e = c < 0 ? e->left : e->right;
	}
	return NULL;
}

bool kv_restore(struct kv_store *s, const u8 *key, size_t klen, const struct kv_entry *ce)
{
	struct kv_entry *e = (struct kv_entry *)ce, *old = NULL;

	if (!e) {
		s->root = kv_remove(s->root, key, klen, &old);
		if (old) {
			s->count--;
			kv_release(s, old);
		}
		return true;
	}
	if (e->height || !e->pins || kv_cmp_entry(e, key, klen))
		return false;
	kv_held_unlink(s, e);	/* from here its charge is the tree's */
	s->root = kv_insert(s->root, e, &old);
	if (old)
		kv_release(s, old);
	else
		s->count++;
	return true;
}

/* ---- entity tags ---- */
static const char kv_hexdig[] = "0123456789abcdef";

void kv_entry_etag(const struct kv_entry *e, char etag[KV_ETAG_LEN + 1])
{
	int i;

	etag[0] = '"';
	for (i = 0; i < 16; i++)
		etag[1 + i] = kv_hexdig[(e->tag >> (60 - 4 * i)) & 15];
	etag[17] = '"';
	etag[18] = 0;
}

static bool kv_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* Does the header value h (a list of entity tags, or "*") name the entry's
 * tag? Strong comparison unless weak. Malformed: false. */
static bool kv_tag_listed(const char *h, const struct kv_entry *e, bool weak)
{
	char mine[KV_ETAG_LEN + 1];
	const char *p = h, *end;
	bool any = false, hit = false;

	while (kv_ows(*p))
		p++;
	end = p;
	while (*end)
		end++;
	while (end > p && kv_ows(end[-1]))
		end--;
	if (end - p == 1 && *p == '*')
		return e != NULL;
	if (e)
		kv_entry_etag(e, mine);
	for (;;) {
		const char *q;
		bool w = false;

		while (p < end && (kv_ows(*p) || *p == ','))
			p++;
		if (p == end)
			break;
		if (end - p >= 2 && p[0] == 'W' && p[1] == '/') {
			w = true;
			p += 2;
		}
		if (p == end || *p != '"')
			return false;
		for (q = p + 1; q < end && *q != '"'; q++)
			if ((u8)*q < 0x21 || *q == 0x7f)
				return false;
		if (q == end)
			return false;
		q++;	/* past the closing quote */
		if (e && (!w || weak) && q - p == KV_ETAG_LEN && !memcmp(p, mine, KV_ETAG_LEN))
			hit = true;
		any = true;
		p = q;
		while (p < end && kv_ows(*p))
			p++;
		if (p < end && *p != ',')
			return false;
	}
	return any && hit;
}

enum kv_status kv_cond_check(const struct kv_entry *e, const char *if_match,
			     const char *if_none_match, bool read)
{
	if (if_match && (!e || !kv_tag_listed(if_match, e, false)))
		return KV_PRECONDITION_FAILED;
	if (if_none_match && kv_tag_listed(if_none_match, e, true))
		return read ? KV_NOT_MODIFIED : KV_PRECONDITION_FAILED;
	return KV_OK;
}

/* ---- operations ---- */
enum kv_status kv_get(const struct kv_store *s, const u8 *key, size_t klen, const char *if_match,
		      const char *if_none_match, const struct kv_entry **out)
{
	const struct kv_entry *e;
	enum kv_status r;

	*out = NULL;
	if (!kv_key_valid(key, klen))
		return KV_BAD_KEY;
	e = kv_find(s, key, klen);
	r = kv_cond_check(e, if_match, if_none_match, true);
	if (r == KV_NOT_MODIFIED)
		*out = e;	/* a 304 carries the entry's ETag */
	if (r != KV_OK)
		return r;
	if (!e)
		return KV_NOT_FOUND;
	*out = e;
	return KV_OK;
}

enum kv_status kv_put(struct kv_store *s, const u8 *key, size_t klen, const void *value,
		      size_t vlen, const char *if_match, const char *if_none_match,
		      char etag[KV_ETAG_LEN + 1])
{
	const struct kv_entry *e;
	struct kv_entry *n, *old = NULL;
	enum kv_status r;
	size_t charge, next;

	if (!kv_key_valid(key, klen))
		return KV_BAD_KEY;
	if (vlen > s->value_max)
		return KV_TOO_LARGE;
	e = kv_find(s, key, klen);
	r = kv_cond_check(e, if_match, if_none_match, false);
	if (r != KV_OK)
		return r;
	charge = kv_charge(klen, vlen);
	/* A pinned old entry stays charged until its last unpin. */
	next = s->used - (e && !e->pins ? kv_charge(e->klen, e->vlen) : 0) + charge;
	if (next > s->max_bytes) {
		s->refused_full++;
		return KV_FULL;
	}
	n = s->alloc(sizeof *n + klen + vlen);
	if (!n) {
		s->refused_nomem++;
		return KV_NO_MEMORY;
	}
	n->klen = (u8)klen;
	n->vlen = (u32)vlen;
	memcpy(n->data, key, klen);
	if (vlen)
		memcpy(n->data + klen, value, vlen);
	n->tag = siphash24(&s->tagkey, &n->klen, 1 + klen + vlen);
	n->pins = 0;
	s->root = kv_insert(s->root, n, &old);
	s->used += charge;
	if (old)
		kv_release(s, old);
	else
		s->count++;
	if (etag)
		kv_entry_etag(n, etag);
	return old ? KV_OK : KV_CREATED;
}

enum kv_status kv_delete(struct kv_store *s, const u8 *key, size_t klen, const char *if_match,
			 const char *if_none_match)
{
	const struct kv_entry *e;
	struct kv_entry *gone = NULL;
	enum kv_status r;

	if (!kv_key_valid(key, klen))
		return KV_BAD_KEY;
	e = kv_find(s, key, klen);
	r = kv_cond_check(e, if_match, if_none_match, false);
	if (r != KV_OK)
		return r;
	if (!e)
		return KV_NOT_FOUND;
	s->root = kv_remove(s->root, key, klen, &gone);
	s->count--;
	kv_release(s, gone);
	return KV_OK;
}

/* ---- JSON and listings ---- */
void kv_json_string(struct outbuf *o, const u8 *s, size_t n)
{
	size_t i;

	outbuf_mem(o, "\"", 1);
	for (i = 0; i < n; i++) {
		u8 c = s[i];
		char esc[6] = {'\\', 'u', '0', '0', kv_hexdig[c >> 4], kv_hexdig[c & 15]};

		if (c == '"' || c == '\\') {
			esc[1] = (char)c;
			outbuf_mem(o, esc, 2);
		} else if (c >= 0x20 && c < 0x7f) {
			outbuf_mem(o, (const char *)&s[i], 1);
		} else if (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') {
			esc[1] = c == '\b' ? 'b' : c == '\f' ? 'f' : c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
			outbuf_mem(o, esc, 2);
		} else {
			outbuf_mem(o, esc, 6);
		}
	}
	outbuf_mem(o, "\"", 1);
}

int kv_cursor_decode(const char *hex, size_t n, u8 key[KV_KEY_MAX])
{
	size_t i;

	if (n == 0 || n % 2 || n > 2 * KV_KEY_MAX)
		return -EINVAL;
	for (i = 0; i < n; i += 2) {
		int hi = parse_hexdigit(hex[i]), lo = parse_hexdigit(hex[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		key[i / 2] = (u8)(hi << 4 | lo);
	}
	return (int)(n / 2);
}

/* The closing part at its longest: "more":true with the longest cursor, or
 * "more":false with null. */
#define KV_LIST_TAIL_MAX (KV_LIST_FRAME_MAX - (sizeof("{\"keys\":[") - 1))
_Static_assert(sizeof("],\"more\":false,\"cursor\":null}") - 1 <= KV_LIST_TAIL_MAX, "tail bound");

struct kv_walk {
	const u8 *prefix, *after;
	size_t plen, alen;
	unsigned limit, emitted;
	struct outbuf o;
	size_t cap;
	const struct kv_entry *last;
	bool stop, more;
};

/* At or past the page's lower bound: not before prefix, after `after`. Every
 * key below a key that fails this fails it too. */
static bool kv_walk_lo(const struct kv_walk *w, const struct kv_entry *e)
{
	if (w->alen && kv_cmp_entry(e, w->after, w->alen) <= 0)
		return false;
	return kv_cmp_entry(e, w->prefix, w->plen) >= 0;
}

static void kv_walk_entry(struct kv_walk *w, const struct kv_entry *e)
{
	char tag[KV_ETAG_LEN + 1];
	size_t mark = w->o.len;

	if (e->klen < w->plen || memcmp(e->data, w->prefix, w->plen)) {
		w->stop = true;	/* past every key with the prefix */
		return;
	}
	if (w->emitted == w->limit) {
		w->more = true;
		w->stop = true;
		return;
	}
	outbuf_str(&w->o, w->emitted ? ",{\"key\":" : "{\"key\":");
	kv_json_string(&w->o, e->data, e->klen);
	outbuf_str(&w->o, ",\"bytes\":");
	outbuf_u64(&w->o, e->vlen);
	outbuf_str(&w->o, ",\"etag\":");
	kv_entry_etag(e, tag);
	kv_json_string(&w->o, (const u8 *)tag, KV_ETAG_LEN);
	outbuf_str(&w->o, "}");
	if (w->o.len + KV_LIST_TAIL_MAX > w->cap) {
		w->o.len = mark;	/* does not fit: the next page starts here */
		w->more = true;
		w->stop = true;
		return;
	}
	w->emitted++;
	w->last = e;
}

static void kv_walk(struct kv_walk *w, const struct kv_entry *e)
{
	while (e && !w->stop) {
		if (kv_walk_lo(w, e)) {
			kv_walk(w, e->left);
			if (w->stop)
				return;
			kv_walk_entry(w, e);
		}
		e = e->right;
	}
}

size_t kv_list_json(const struct kv_store *s, const u8 *prefix, size_t plen, const u8 *after,
		    size_t alen, unsigned limit, char *buf, size_t cap)
{
	struct kv_walk w = {.prefix = prefix, .plen = plen, .after = after, .alen = after ? alen : 0,
			    .limit = limit, .cap = cap, .o = {buf, cap, 0}};

	if (cap < KV_LIST_MIN_CAP || limit == 0 || limit > KV_PAGE_MAX || plen > KV_KEY_MAX ||
	    w.alen > KV_KEY_MAX)
		return 0;
	if (!plen)
		w.prefix = (const u8 *)"";
	outbuf_str(&w.o, "{\"keys\":[");
	kv_walk(&w, s->root);
	if (w.more && w.last) {
		size_t i;

		outbuf_str(&w.o, "],\"more\":true,\"cursor\":\"");
		for (i = 0; i < w.last->klen; i++) {
			char h[2] = {kv_hexdig[w.last->data[i] >> 4], kv_hexdig[w.last->data[i] & 15]};

			outbuf_mem(&w.o, h, 2);
		}
		outbuf_str(&w.o, "\"}");
	} else {
		outbuf_str(&w.o, "],\"more\":false,\"cursor\":null}");
	}
	return w.o.len <= cap ? w.o.len : 0;
}

/* ---- checking, for tests ---- */
struct kv_check {
	size_t used, count;
	const struct kv_entry *prev;
	bool bad;
};

static int kv_check_tree(const struct kv_entry *e, struct kv_check *c)
{
	int hl, hr;

	if (!e)
		return 0;
	hl = kv_check_tree(e->left, c);
	if (c->prev && kv_cmp_entry(c->prev, e->data, e->klen) >= 0)
		c->bad = true;
	if (!kv_key_valid(e->data, e->klen))
		c->bad = true;
	c->prev = e;
	c->used += kv_charge(e->klen, e->vlen);
	c->count++;
	hr = kv_check_tree(e->right, c);
	if (e->height != MAX(hl, hr) + 1 || hl - hr > 1 || hr - hl > 1)
		c->bad = true;
	return MAX(hl, hr) + 1;
}

int kv_store_check(const struct kv_store *s)
{
	struct kv_check c = {0};
	const struct list_node *n, *prev = &s->held_list;
	size_t held = 0, held_bytes = 0;

	kv_check_tree(s->root, &c);
	list_for_each(n, &s->held_list) {
		const struct kv_entry *e = list_entry(n, const struct kv_entry, held);

		if (n->prev != prev || e->height || !e->pins || held > s->held)
			return -EBADMSG;
		prev = n;
		held++;
		held_bytes += kv_charge(e->klen, e->vlen);
	}
	if (c.bad || s->held_list.prev != prev || c.used + held_bytes != s->used || c.count != s->count ||
	    held != s->held || held_bytes != s->held_bytes)
		return -EBADMSG;
	return 0;
}
