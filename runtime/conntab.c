/*
 * Per-source connection accounting for the HTTP server and the apps' TCP
 * services (echo's included).
 *
 * Every accept costs O(1): the source's node is found through a keyed hash,
 * the number of distinct sources is a counter and the source holding the
 * most heads the list of sources with heavy_n connections (by_n[]), so a
 * table of 20,000 connections admits as fast as one of 64. Only the
 * victim's search walks, and only the heaviest source's own connections
 * (at most max_per_src), only when the table is full.
 *
 * Memory: the index is (2^k + max_per_src + 1) pointers, 2^k the power of
 * two >= max_conns (64 connections: 64 + 65 pointers, 1 KiB), allocated once;
 * a node per source (96 bytes), at most one per connection, freed with its
 * source's last connection.
 */
#include "lib/types.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "lib/crypto/siphash.h"
#include "lwip/ip_addr.h"
#include "lwip/altcp.h"
#include "runtime/conntab.h"

static struct siphash_key conntab_key;
static bool conntab_keyed;

void conntab_src_of(const ip_addr_t *addr, struct conntab_src *src)
{
	src->w[0] = src->w[1] = 0;
	src->v6 = IP_IS_V6(addr);
	if (src->v6) {
		src->w[0] = ip_2_ip6(addr)->addr[0];
		src->w[1] = ip_2_ip6(addr)->addr[1];
	} else {
		src->w[0] = ip4_addr_get_u32(ip_2_ip4(addr));
	}
}

bool conntab_src_equal(const struct conntab_src *a, const struct conntab_src *b)
{
	return a->v6 == b->v6 && a->w[0] == b->w[0] && a->w[1] == b->w[1];
}

static u32 conntab_hash(const struct conntab *t, const struct conntab_src *src)
{
	u32 key[3] = { src->w[0], src->w[1], src->v6 };

	return (u32)siphash24(&conntab_key, key, sizeof key) & t->hash_mask;
}

struct conntab_node *conntab_node_find(const struct conntab *t, const struct conntab_src *src)
{
	struct conntab_node *n;

	if (!t->hash)
		return NULL;
	for (n = t->hash[conntab_hash(t, src)]; n; n = n->hnext)
		if (conntab_src_equal(&n->src, src))
			return n;
	return NULL;
}

u32 conntab_src_count(const struct conntab *t, const struct conntab_src *src)
{
	const struct conntab_node *n = conntab_node_find(t, src);

	return n ? n->n : 0;
}

/* node in or out of by_n[node->n]: in at the tail, so the head is the
 * source that has held that many longest. */
static void conntab_by_n_out(struct conntab *t, struct conntab_node *n)
{
	struct conntab_nlist *l = &t->by_n[n->n];

	*(n->bprev ? &n->bprev->bnext : &l->head) = n->bnext;
	*(n->bnext ? &n->bnext->bprev : &l->tail) = n->bprev;
	n->bnext = n->bprev = NULL;
}

static void conntab_by_n_in(struct conntab *t, struct conntab_node *n)
{
	struct conntab_nlist *l = &t->by_n[n->n];

	n->bnext = NULL;
	n->bprev = l->tail;
	*(l->tail ? &l->tail->bnext : &l->head) = n;
	l->tail = n;
}

bool conntab_init(struct conntab *t)
{
	u32 size = 1;

	if (t->hash && !t->head && (t->hash_mask + 1 < t->max_conns || t->by_n_max != t->max_per_src))
		conntab_release(t);	/* resized while empty */
	if (t->hash)
		return t->by_n_max >= t->max_per_src;
	if (!t->max_conns || !t->max_per_src)
		return false;
	while (size < t->max_conns)
		size <<= 1;
	if (!conntab_keyed) {
		conntab_key.k0 = random_u64();
		conntab_key.k1 = random_u64();
		conntab_keyed = true;
	}
	t->hash = kzalloc(size * sizeof *t->hash);
	t->by_n = kzalloc(((size_t)t->max_per_src + 1) * sizeof *t->by_n);
	if (!t->hash || !t->by_n) {
		kfree(t->hash);
		kfree(t->by_n);
		t->hash = NULL;
		t->by_n = NULL;
		return false;
	}
	t->hash_mask = size - 1;
	t->by_n_max = t->max_per_src;
	return true;
}

void conntab_release(struct conntab *t)
{
	if (t->head)
		return;
	kfree(t->hash);
	kfree(t->by_n);
	t->hash = NULL;
	t->by_n = NULL;
	t->sources = t->heavy_n = 0;
}

enum conntab_verdict conntab_admit(const struct conntab *t, const struct conntab_src *src,
				   bool (*is_idle)(const struct conntab_conn *c),
				   struct conntab_conn **victim)
{
	const struct conntab_node *heavy;
	struct conntab_conn *c, *oldest_idle = NULL;
	u32 mine = conntab_src_count(t, src), sources, share;

	*victim = NULL;
	if (mine >= t->max_per_src)
		return CONNTAB_REFUSE_SOURCE;
	if (t->count < t->max_conns)
		return CONNTAB_ADMIT;

	sources = t->sources + (mine == 0);
	share = t->max_conns / sources;
	heavy = t->heavy_n && t->by_n ? t->by_n[t->heavy_n].head : NULL;
	/* At or above its share, or nobody above theirs (rounding): refuse. */
	if (!heavy || mine >= share || t->heavy_n <= share || t->heavy_n <= mine + 1)
		return CONNTAB_REFUSE_FULL;

	for (c = heavy->oldest; c && !oldest_idle; c = c->snext)
		if (is_idle && is_idle(c))
			oldest_idle = c;
	*victim = oldest_idle ? oldest_idle : heavy->oldest;
	return CONNTAB_EVICT;
}

struct conntab_conn *conntab_accept(struct conntab *t, struct altcp_pcb *pcb, size_t size,
				    bool (*is_idle)(const struct conntab_conn *c),
				    void (*evict)(struct conntab_conn *c),
				    enum conntab_verdict *verdict)
{
	struct conntab_conn *victim, *c;
	struct conntab_src src;

	conntab_src_of(altcp_get_ip(pcb, 0), &src);
	*verdict = conntab_admit(t, &src, is_idle, &victim);
	if (*verdict == CONNTAB_REFUSE_SOURCE || *verdict == CONNTAB_REFUSE_FULL)
		return NULL;
	if (*verdict == CONNTAB_EVICT)
		evict(victim);
	c = kzalloc(size);
	if (!c)
		return NULL;
	c->src = src;
	if (!conntab_insert(t, c)) {
		kfree(c);
		return NULL;
	}
	return c;
}

/* src's node, made if it has none (counted in sources, holding 0). */
static struct conntab_node *conntab_node_get(struct conntab *t, const struct conntab_src *src)
{
	struct conntab_node *n = conntab_node_find(t, src);
	u32 h;

	if (n)
		return n;
	n = kzalloc(sizeof *n);
	if (!n)
		return NULL;
	n->src = *src;
	h = conntab_hash(t, src);
	n->hnext = t->hash[h];
	t->hash[h] = n;
	t->sources++;
	return n;
}

/* c joins n: its list, n's count and by_n[] place. */
static void conntab_node_join(struct conntab *t, struct conntab_node *n, struct conntab_conn *c)
{
	if (n->n)
		conntab_by_n_out(t, n);
	n->n++;
	conntab_by_n_in(t, n);
	t->heavy_n = MAX(t->heavy_n, n->n);
	c->node = n;
	c->src = n->src;
	c->snext = NULL;
	c->sprev = n->newest;
	*(n->newest ? &n->newest->snext : &n->oldest) = c;
	n->newest = c;
}

/* c leaves its node; the node goes with its last connection. */
static void conntab_node_leave(struct conntab *t, struct conntab_conn *c)
{
	struct conntab_node *n = c->node, **pp;

	*(c->sprev ? &c->sprev->snext : &n->oldest) = c->snext;
	*(c->snext ? &c->snext->sprev : &n->newest) = c->sprev;
	c->snext = c->sprev = NULL;
	c->node = NULL;

	conntab_by_n_out(t, n);
	/* The heaviest count drops only when its last source leaves it, and
	 * then by one: n moves to heavy_n - 1, which is then not empty. */
	if (n->n == t->heavy_n && !t->by_n[n->n].head)
		t->heavy_n--;
	if (--n->n) {
		conntab_by_n_in(t, n);
		return;
	}
	for (pp = &t->hash[conntab_hash(t, &n->src)]; *pp != n; pp = &(*pp)->hnext)
		;
	*pp = n->hnext;
	t->sources--;
	kfree(n);
}

bool conntab_insert(struct conntab *t, struct conntab_conn *c)
{
	struct conntab_node *n;

	if (!conntab_init(t) || !(n = conntab_node_get(t, &c->src)))
		return false;
	conntab_node_join(t, n, c);
	c->prev = NULL;
	c->next = t->head;
	if (t->head)
		t->head->prev = c;
	t->head = c;
	t->count++;
	return true;
}

void conntab_remove(struct conntab *t, struct conntab_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		t->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
	t->count--;
	conntab_node_leave(t, c);
}

bool conntab_rekey(struct conntab *t, struct conntab_conn *c, const struct conntab_src *src)
{
	struct conntab_node *n;

	if (conntab_src_equal(&c->src, src))
		return true;
	n = conntab_node_get(t, src);	/* first: a failure changes nothing */
	if (!n)
		return false;
	conntab_node_leave(t, c);
	conntab_node_join(t, n, c);
	return true;
}
