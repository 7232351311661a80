/*
 * Per-source connection accounting for the HTTP server and the apps' TCP
 * services (echo's included), with sources aggregated by prefix
 * (conntab.h's levels).
 *
 * Every accept costs O(1): a prefix's node is found through a keyed hash,
 * the number of distinct prefixes per level is a counter, the prefix
 * holding the most at each level heads the ring of nodes holding
 * heavy_n[level] (by_n[]), and idle connections wait in one list, longest
 * idle first. When the table is full an admission looks at no more than
 * CONNTAB_SCAN connections of one list, so a table of 20,000 connections
 * admits as fast as one of 64.
 *
 * Memory: the index is 2^k + (max_per_src + 1) + 2 (max_conns + 1)
 * pointers, 2^k the power of two >= max_conns (64 connections: 64 + 65 +
 * 130 pointers, 2 KiB; 20,000: 32,768 + 65 + 40,002 pointers, 568 KiB),
 * allocated once; a node per prefix and level (88 bytes), at most three
 * per connection, freed with the prefix's last connection.
 */
#include "lib/types.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "lib/crypto/siphash.h"
#include "lwip/def.h"
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

void conntab_prefix(const struct conntab_src *src, u32 level, struct conntab_src *p)
{
	/* In host order: IPv4's one word, IPv6's second (bits 32..63). */
	static const u32 v4_mask[CONNTAB_LEVELS] = { 0xffffffffu, 0xffffff00u, 0xffffff00u };
	static const u32 v6_mask[CONNTAB_LEVELS] = { 0xffffffffu, 0xffffff00u, 0xffff0000u };

	*p = *src;
	if (src->v6)
		p->w[1] &= lwip_htonl(v6_mask[level]);
	else
		p->w[0] &= lwip_htonl(v4_mask[level]);
}

static u32 conntab_hash(const struct conntab *t, const struct conntab_src *p, u32 level)
{
	u32 key[3] = { p->w[0], p->w[1], (u32)p->v6 | level << 8 };

	return (u32)siphash24(&conntab_key, key, sizeof key) & t->hash_mask;
}

/* The node of prefix p (already masked) at level. */
static struct conntab_node *conntab_find_prefix(const struct conntab *t, const struct conntab_src *p, u32 level)
{
	struct conntab_node *n;

	if (!t->hash)
		return NULL;
	for (n = t->hash[conntab_hash(t, p, level)]; n; n = n->hnext)
		if (n->level == level && conntab_src_equal(&n->src, p))
			return n;
	return NULL;
}

struct conntab_node *conntab_level_find(const struct conntab *t, const struct conntab_src *src, u32 level)
{
	struct conntab_src p;

	conntab_prefix(src, level, &p);
	return conntab_find_prefix(t, &p, level);
}

struct conntab_node *conntab_node_find(const struct conntab *t, const struct conntab_src *src)
{
	return conntab_find_prefix(t, src, 0);
}

u32 conntab_src_count(const struct conntab *t, const struct conntab_src *src)
{
	const struct conntab_node *n = conntab_node_find(t, src);

	return n ? n->n : 0;
}

/* node in or out of its level's ring for node->n: in at the tail, so the
 * head is the prefix that has held that many longest. */
static void conntab_by_n_out(struct conntab *t, struct conntab_node *n)
{
	struct conntab_node **head = &t->by_n[n->level][n->n];

	if (n->bnext == n) {
		*head = NULL;
	} else {
		n->bprev->bnext = n->bnext;
		n->bnext->bprev = n->bprev;
		if (*head == n)
			*head = n->bnext;
	}
	n->bnext = n->bprev = NULL;
}

static void conntab_by_n_in(struct conntab *t, struct conntab_node *n)
{
	struct conntab_node **head = &t->by_n[n->level][n->n];

	if (!*head) {
		n->bnext = n->bprev = n;
		*head = n;
		return;
	}
	n->bnext = *head;
	n->bprev = (*head)->bprev;
	n->bprev->bnext = n;
	(*head)->bprev = n;
}

bool conntab_init(struct conntab *t)
{
	size_t top;
	u32 size = 1;

	if (!t->hash) {	/* empty: its lists too */
		list_init(&t->conns);
		list_init(&t->idle);
	}
	if (t->hash && !t->count &&
	    (t->hash_mask + 1 < t->max_conns || t->by_n_max != t->max_per_src || t->by_n_conns != t->max_conns))
		conntab_release(t);	/* resized while empty */
	if (t->hash)
		return t->by_n_max >= t->max_per_src && t->by_n_conns >= t->max_conns;
	if (!t->max_conns || !t->max_per_src)
		return false;
	while (size < t->max_conns)
		size <<= 1;
	if (!conntab_keyed) {
		conntab_key.k0 = random_u64();
		conntab_key.k1 = random_u64();
		conntab_keyed = true;
	}
	top = (size_t)t->max_conns + 1;
	t->hash = kzalloc(size * sizeof *t->hash);
	/* One block for the three levels' rings. */
	t->by_n[0] = kzalloc(((size_t)t->max_per_src + 1 + 2 * top) * sizeof *t->by_n[0]);
	if (!t->hash || !t->by_n[0]) {
		kfree(t->hash);
		kfree(t->by_n[0]);
		t->hash = NULL;
		t->by_n[0] = NULL;
		return false;
	}
	t->by_n[1] = t->by_n[0] + t->max_per_src + 1;
	t->by_n[2] = t->by_n[1] + top;
	t->hash_mask = size - 1;
	t->by_n_max = t->max_per_src;
	t->by_n_conns = t->max_conns;
	return true;
}

void conntab_release(struct conntab *t)
{
	if (t->count)
		return;
	kfree(t->hash);
	kfree(t->by_n[0]);
	t->hash = NULL;
	for (u32 l = 0; l < CONNTAB_LEVELS; l++) {
		t->by_n[l] = NULL;
		t->sources[l] = t->heavy_n[l] = 0;
	}
	/* the lists are empty: left as they are for conntab_init() */
}

/*
 * Whether evicting c for a newcomer whose nodes are mine[] (m[] their
 * counts) evens the counts out: at the coarsest level where c's prefix
 * and the newcomer's differ, c's holds at least two more. Below level
 * `below` only (the levels above are shared, or not looked at).
 */
static bool conntab_evens_out(const struct conntab_conn *c, u32 below, struct conntab_node *const mine[],
			      const u32 m[])
{
	for (u32 l = below; l-- > 0;)
		if (c->nodes[l] != mine[l])
			return c->nodes[l]->n >= m[l] + 2;
	return false;	/* the newcomer's own source */
}

/* The connection whose link at level l is p. */
static struct conntab_conn *conntab_lv_conn(struct list_node *p, u32 l)
{
	return list_entry(p - l, struct conntab_conn, lv[0]);
}

struct conntab_conn *conntab_idle_scan(const struct conntab *t, bool (*ok)(const struct conntab_conn *c))
{
	const struct list_node *p = t->idle.next;

	for (u32 k = 0; p != &t->idle && k < CONNTAB_SCAN; p = p->next, k++) {
		struct conntab_conn *c = list_entry(p, struct conntab_conn, in_idle);

		if (!ok || ok(c))
			return c;
	}
	return NULL;
}

/* Among the CONNTAB_SCAN oldest connections of n (at its level), the first
 * idle one that may make room (any, if mine is NULL; else one that evens
 * the counts out), else the first that may. */
static struct conntab_conn *conntab_scan(const struct conntab_node *n, bool (*is_idle)(const struct conntab_conn *c),
					 struct conntab_node *const mine[], const u32 m[])
{
	struct conntab_conn *c, *first = NULL;
	struct list_node *p;
	u32 k = 0;

	for (p = n->conns.next; p != &n->conns && k < CONNTAB_SCAN; p = p->next, k++) {
		c = conntab_lv_conn(p, n->level);
		if (mine && !conntab_evens_out(c, n->level, mine, m))
			continue;
		if (!is_idle || is_idle(c))
			return c;
		if (!first)
			first = c;
	}
	return first;
}

enum conntab_verdict conntab_admit(const struct conntab *t, const struct conntab_src *src,
				   bool (*is_idle)(const struct conntab_conn *c),
				   struct conntab_conn **victim)
{
	struct conntab_node *mine[CONNTAB_LEVELS];
	u32 m[CONNTAB_LEVELS], l, share;

	*victim = NULL;
	for (l = 0; l < CONNTAB_LEVELS; l++) {
		mine[l] = conntab_level_find(t, src, l);
		m[l] = mine[l] ? mine[l]->n : 0;
	}
	if (m[0] >= t->max_per_src)
		return CONNTAB_REFUSE_SOURCE;
	if (t->count < t->max_conns)
		return CONNTAB_ADMIT;

	/* Full. The caps, coarsest first: a prefix's share is its parent's
	 * split among the parent's prefixes at its level (the newcomer's
	 * counted); at its share, a prefix makes room only from its own. */
	for (l = CONNTAB_LEVELS, share = t->max_conns; l-- > 0;) {
		u32 d = l + 1 == CONNTAB_LEVELS ? t->sources[l] : mine[l + 1] ? mine[l + 1]->kids : 0;

		share = MAX(share / (d + !m[l]), 1u);
		if (m[l] < share)
			continue;
		if (l)
			*victim = conntab_scan(mine[l], is_idle, mine, m);
		return *victim ? CONNTAB_EVICT : CONNTAB_REFUSE_FULL;
	}
	/* Under every cap: whoever has been idle longest. */
	*victim = conntab_idle_scan(t, is_idle);
	if (*victim)
		return CONNTAB_EVICT;
	/* Nobody idle: the prefix holding the most, coarsest level first. */
	for (l = CONNTAB_LEVELS; l-- > 0;)
		if (t->heavy_n[l] >= m[l] + 2) {
			*victim = conntab_scan(t->by_n[l][t->heavy_n[l]], is_idle, NULL, NULL);
			return CONNTAB_EVICT;
		}
	return CONNTAB_REFUSE_FULL;
}

struct conntab_conn *conntab_accept(struct conntab *t, struct altcp_pcb *pcb, size_t size,
				    bool (*is_idle)(const struct conntab_conn *c), struct conntab_conn **victim,
				    enum conntab_verdict *verdict)
{
	struct conntab_conn *c;
	struct conntab_src src;

	conntab_src_of(altcp_get_ip(pcb, 0), &src);
	*verdict = conntab_admit(t, &src, is_idle, victim);	/* NULL unless CONNTAB_EVICT */
	if (*verdict == CONNTAB_REFUSE_SOURCE || *verdict == CONNTAB_REFUSE_FULL)
		return NULL;
	c = kzalloc(size);
	if (!c)
		return NULL;
	c->src = src;
	if (!conntab_insert(t, c)) {	/* its nodes: before the victim goes */
		kfree(c);
		return NULL;
	}
	return c;
}

/* The node of prefix p at level, made if it has none (counted in sources,
 * holding 0). */
static struct conntab_node *conntab_node_get(struct conntab *t, const struct conntab_src *p, u32 level)
{
	struct conntab_node *n = conntab_find_prefix(t, p, level);
	u32 h;

	if (n)
		return n;
	n = kzalloc(sizeof *n);
	if (!n)
		return NULL;
	n->src = *p;
	n->level = level;
	list_init(&n->conns);
	h = conntab_hash(t, p, level);
	n->hnext = t->hash[h];
	t->hash[h] = n;
	t->sources[level]++;
	return n;
}

/* n out of the hash and freed (it holds nothing). */
static void conntab_node_free(struct conntab *t, struct conntab_node *n)
{
	struct conntab_node **pp;

	for (pp = &t->hash[conntab_hash(t, &n->src, n->level)]; *pp != n; pp = &(*pp)->hnext)
		;
	*pp = n->hnext;
	t->sources[n->level]--;
	kfree(n);
}

/* src's nodes at every level into nodes[], made where missing: false, and
 * none made, if one cannot be allocated. */
static bool conntab_nodes_get(struct conntab *t, const struct conntab_src *src,
			      struct conntab_node *nodes[CONNTAB_LEVELS])
{
	struct conntab_src p;
	u32 l;

	for (l = 0; l < CONNTAB_LEVELS; l++) {
		conntab_prefix(src, l, &p);
		nodes[l] = conntab_node_get(t, &p, l);
		if (!nodes[l])
			break;
	}
	if (l == CONNTAB_LEVELS)
		return true;
	while (l-- > 0)
		if (!nodes[l]->n)
			conntab_node_free(t, nodes[l]);
	return false;
}

/* c joins n, its node at level l (parent: its node at l + 1, or NULL): n's
 * list, count and ring, and n's place in parent's kids if n is new. */
static void conntab_level_join(struct conntab *t, struct conntab_node *n, struct conntab_conn *c, u32 l,
			       struct conntab_node *parent)
{
	if (n->n)
		conntab_by_n_out(t, n);
	else if (parent)
		parent->kids++;
	n->n++;
	conntab_by_n_in(t, n);
	t->heavy_n[l] = MAX(t->heavy_n[l], n->n);
	c->nodes[l] = n;
	list_push_back(&n->conns, &c->lv[l]);
}

/* c leaves its node at level l; the node goes with its last connection. */
static void conntab_level_leave(struct conntab *t, struct conntab_conn *c, u32 l)
{
	struct conntab_node *n = c->nodes[l], *parent = l + 1 < CONNTAB_LEVELS ? c->nodes[l + 1] : NULL;

	list_unlink(&c->lv[l]);
	c->nodes[l] = NULL;

	conntab_by_n_out(t, n);
	/* The heaviest count drops only when its last node leaves it, and
	 * then by one: n moves to heavy_n - 1, which is then not empty. */
	if (n->n == t->heavy_n[l] && !t->by_n[l][n->n])
		t->heavy_n[l]--;
	if (--n->n) {
		conntab_by_n_in(t, n);
		return;
	}
	if (parent)
		parent->kids--;
	conntab_node_free(t, n);
}

bool conntab_insert(struct conntab *t, struct conntab_conn *c)
{
	struct conntab_node *nodes[CONNTAB_LEVELS];

	if (!conntab_init(t) || !conntab_nodes_get(t, &c->src, nodes))
		return false;
	for (u32 l = 0; l < CONNTAB_LEVELS; l++)
		conntab_level_join(t, nodes[l], c, l, l + 1 < CONNTAB_LEVELS ? nodes[l + 1] : NULL);
	c->src = nodes[0]->src;
	list_push_front(&t->conns, &c->in_tab);
	t->count++;
	return true;
}

void conntab_idle(struct conntab *t, struct conntab_conn *c, bool idle)
{
	if (c->idle == idle)
		return;
	c->idle = idle;
	if (idle)
		list_push_back(&t->idle, &c->in_idle);
	else
		list_unlink(&c->in_idle);
}

void conntab_remove(struct conntab *t, struct conntab_conn *c)
{
	conntab_idle(t, c, false);
	list_unlink(&c->in_tab);
	t->count--;
	for (u32 l = 0; l < CONNTAB_LEVELS; l++)
		conntab_level_leave(t, c, l);
}

bool conntab_rekey(struct conntab *t, struct conntab_conn *c, const struct conntab_src *src)
{
	struct conntab_node *nodes[CONNTAB_LEVELS];

	if (conntab_src_equal(&c->src, src))
		return true;
	if (!conntab_nodes_get(t, src, nodes))	/* first: a failure changes nothing */
		return false;
	for (u32 l = 0; l < CONNTAB_LEVELS; l++)
		if (nodes[l] != c->nodes[l]) {	/* a prefix both share stays */
			conntab_level_leave(t, c, l);
			conntab_level_join(t, nodes[l], c, l, l + 1 < CONNTAB_LEVELS ? nodes[l + 1] : NULL);
		}
	c->src = nodes[0]->src;
	return true;
}
