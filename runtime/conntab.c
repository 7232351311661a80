/*
 * Per-source connection accounting for the HTTP server and the apps' TCP
 * services (echo's included).
 *
 * The table is a list, newest first; it holds at most max_conns (64 for HTTP,
 * 16 for a TCP service), so the O(n^2) walk conntab_admit() does when the table is
 * full is 64 x 64 key compares at most, once per refused-or-evicting accept.
 */
#include "lib/types.h"
#include "kernel/mm/mm.h"
#include "lwip/ip_addr.h"
#include "lwip/altcp.h"
#include "runtime/conntab.h"

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

u32 conntab_src_count(const struct conntab *t, const struct conntab_src *src)
{
	const struct conntab_conn *c;
	u32 n = 0;

	for (c = t->head; c; c = c->next)
		if (conntab_src_equal(&c->src, src))
			n++;
	return n;
}

/* Distinct sources in the table; *heavy is one connection of the source with
 * the most (the first such source met), *heavy_n its count. */
static u32 conntab_census(const struct conntab *t, const struct conntab_conn **heavy, u32 *heavy_n)
{
	const struct conntab_conn *c, *d;
	u32 sources = 0;

	*heavy = NULL;
	*heavy_n = 0;
	for (c = t->head; c; c = c->next) {
		bool first = true;
		u32 n = 0;

		for (d = t->head; d != c; d = d->next) {
			if (conntab_src_equal(&c->src, &d->src)) {
				first = false;
				break;
			}
		}
		if (!first)
			continue;
		sources++;
		n = conntab_src_count(t, &c->src);
		if (n > *heavy_n) {
			*heavy_n = n;
			*heavy = c;
		}
	}
	return sources;
}

enum conntab_verdict conntab_admit(const struct conntab *t, const struct conntab_src *src,
				   bool (*is_idle)(const struct conntab_conn *c),
				   struct conntab_conn **victim)
{
	const struct conntab_conn *heavy, *c;
	struct conntab_conn *oldest = NULL, *oldest_idle = NULL;
	u32 mine = conntab_src_count(t, src), sources, heavy_n, share;

	*victim = NULL;
	if (mine >= t->max_per_src)
		return CONNTAB_REFUSE_SOURCE;
	if (t->count < t->max_conns)
		return CONNTAB_ADMIT;

	sources = conntab_census(t, &heavy, &heavy_n) + (mine == 0);
	share = t->max_conns / sources;
	/* At or above its share, or nobody above theirs (rounding): refuse. */
	if (!heavy || mine >= share || heavy_n <= share || heavy_n <= mine + 1)
		return CONNTAB_REFUSE_FULL;

	/* The list runs newest first: the last match is the oldest. */
	for (c = t->head; c; c = c->next) {
		if (!conntab_src_equal(&c->src, &heavy->src))
			continue;
		oldest = (struct conntab_conn *)c;
		if (is_idle && is_idle(c))
			oldest_idle = (struct conntab_conn *)c;
	}
	*victim = oldest_idle ? oldest_idle : oldest;
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
	conntab_insert(t, c);
	return c;
}

void conntab_insert(struct conntab *t, struct conntab_conn *c)
{
	c->prev = NULL;
	c->next = t->head;
	if (t->head)
		t->head->prev = c;
	t->head = c;
	t->count++;
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
}
