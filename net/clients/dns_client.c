/*
 * The resolver's engine (dns_client.h). Pure. Cold: once per lookup,
 * datagram or tick. The tables are scanned (at most DNS_QUERIES_MAX and
 * DNS_LOOKUPS_MAX entries).
 */
#include "net/clients/dns_client.h"

static const u16 dns_types[2] = { DNS_TYPE_A, DNS_TYPE_AAAA };

void dns_client_init(struct dns_client *c, const struct dns_client_ops *ops, void *arg,
		     struct dns_cache_entry *cache, u32 cache_entries)
{
	__builtin_memset(c, 0, sizeof *c);
	c->ops = ops;
	c->arg = arg;
	dns_cache_init(&c->cache, cache, cache_entries);
}

void dns_client_servers(struct dns_client *c, unsigned n)
{
	c->nservers = (u8)(n > DNS_SERVERS_MAX ? DNS_SERVERS_MAX : n);
	if (c->good >= c->nservers)
		c->good = 0;
}

/* The lookup's addresses (IPv4 first) into *r. */
static void dns_result_of(const struct dns_lookup *l, struct dns_addrs *r)
{
	u32 ttl = DNS_TTL_MAX;

	__builtin_memset(r, 0, sizeof *r);
	for (unsigned t = 0; t < 2; t++) {
		const struct dns_answer *a = &l->a[t];

		if (a->result != DNS_ANSWER)
			continue;
		for (unsigned i = 0; i < a->n && r->n < DNS_RESULT_MAX; i++) {
			r->alen[r->n] = a->alen;
			__builtin_memcpy(r->addr[r->n++], a->addr[i], a->alen);
		}
		ttl = MIN(ttl, a->ttl);
	}
	r->ttl = r->n ? ttl : 0;
}

/* Ends l: with its addresses if any came, else err (or its first
 * non-answer). The slot is free before done runs (done may look up). */
static void dns_lookup_end(struct dns_lookup *l, int err)
{
	struct dns_addrs r;
	dns_done_fn done = l->done;
	void *ctx = l->ctx;

	dns_result_of(l, &r);
	if (r.n)
		err = 0;
	else if (!err)
		err = l->err ? l->err : -ENOENT;
	l->done = NULL;
	done(ctx, err, &r);
}

static void dns_query_send(struct dns_client *c, struct dns_query *q)
{
	q->asked |= (u8)(1u << q->server);
	c->st.queries++;
	c->ops->send(c->arg, q->server, q->msg, q->msg_len);	/* a failure is a timeout */
}

/* A query's answer (a) or failure (err) to the lookups waiting on it. */
static void dns_query_end(struct dns_client *c, struct dns_query *q, const struct dns_answer *a, int err)
{
	unsigned t = q->qtype == DNS_TYPE_AAAA;
	u32 waiting = 0;

	/* Those waiting now: a done callback may start lookups, not of these. */
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX; i++)
		if (c->l[i].done && (c->l[i].pending & (1u << t)) && __builtin_strcmp(c->l[i].name, q->name) == 0)
			waiting |= 1u << i;
	q->name[0] = '\0';
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX; i++) {
		struct dns_lookup *l = &c->l[i];

		if (!(waiting & (1u << i)))
			continue;
		l->pending &= (u8)~(1u << t);
		if (a)
			l->a[t] = *a;
		if (!l->err)
			l->err = a ? (a->result == DNS_ANSWER ? 0 : -ENOENT) : err;
		if (a && a->result == DNS_ANSWER)
			l->err = 0;
		if (!l->pending)
			dns_lookup_end(l, 0);
	}
}

static struct dns_query *dns_query_find(struct dns_client *c, const char *name, u16 qtype)
{
	for (unsigned i = 0; i < DNS_QUERIES_MAX; i++)
		if (c->q[i].name[0] && c->q[i].qtype == qtype && __builtin_strcmp(c->q[i].name, name) == 0)
			return &c->q[i];
	return NULL;
}

int dns_client_lookup(struct dns_client *c, const char *name, unsigned want, u32 timeout_ms, u64 now_ms,
		      dns_done_fn done, void *ctx, int *err, struct dns_addrs *r)
{
	struct dns_lookup tmp, *l = NULL;
	unsigned need = 0, free_q = 0, cached_neg = 0;

	if (!want || (want & ~(DNS_WANT_A | DNS_WANT_AAAA)) || !done)
		return -EINVAL;
	__builtin_memset(&tmp, 0, sizeof tmp);
	if (dns_msg_name_norm(name, tmp.name) < 0)
		return -EINVAL;
	c->st.lookups++;
	tmp.want = (u8)want;
	for (unsigned t = 0; t < 2; t++) {
		const struct dns_cache_entry *e;

		if (!(want & (1u << t)))
			continue;
		e = dns_cache_get(&c->cache, tmp.name, dns_types[t], now_ms);
		if (!e) {
			tmp.pending |= (u8)(1u << t);
			continue;
		}
		tmp.a[t].result = (enum dns_result)e->result;
		tmp.a[t].n = e->n;
		tmp.a[t].alen = e->alen;
		tmp.a[t].ttl = dns_cache_ttl_left(e, now_ms);
		__builtin_memcpy(tmp.a[t].addr, e->addr, sizeof e->addr);
		cached_neg += e->result != DNS_ANSWER;
	}
	if (!tmp.pending) {
		dns_result_of(&tmp, r);
		*err = r->n ? 0 : -ENOENT;
		if (r->n)
			c->st.cache_hits++;
		else
			c->st.negative_hits++;
		return 1;
	}
	if (!c->nservers) {
		c->st.refused++;
		return -ENETUNREACH;
	}
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX && !l; i++)
		if (!c->l[i].done)
			l = &c->l[i];
	for (unsigned i = 0; i < DNS_QUERIES_MAX; i++)
		free_q += !c->q[i].name[0];
	for (unsigned t = 0; t < 2; t++)
		need += (tmp.pending & (1u << t)) && !dns_query_find(c, tmp.name, dns_types[t]);
	if (!l || need > free_q) {
		c->st.refused++;
		return -ENOSPC;
	}
	(void)cached_neg;
	if (need < (unsigned)((tmp.pending & 1) + (tmp.pending >> 1)))	/* pending's bits: no libgcc */
		c->st.shared++;
	for (unsigned t = 0; t < 2; t++) {
		struct dns_query *q;
		int n;

		if (!(tmp.pending & (1u << t)) || dns_query_find(c, tmp.name, dns_types[t]))
			continue;
		for (q = c->q; q->name[0]; q++)
			;
		__builtin_memset(q, 0, sizeof *q);
		__builtin_memcpy(q->name, tmp.name, sizeof q->name);
		q->qtype = dns_types[t];
		/* An id no other query in flight has (a response is matched
		 * by id first): a few draws at most. */
		for (unsigned k = 0, clash = 1; clash && k < 16; k++) {
			q->id = c->ops->rand16(c->arg);
			clash = 0;
			for (unsigned j = 0; j < DNS_QUERIES_MAX; j++)
				clash |= &c->q[j] != q && c->q[j].name[0] && c->q[j].id == q->id;
		}
		n = dns_msg_query(q->msg, sizeof q->msg, q->id, q->name, q->qtype);
		q->msg_len = (u16)n;	/* the name was checked: n > 0 */
		q->server = c->good;
		q->next_ms = now_ms + DNS_TRY_MS;
		dns_query_send(c, q);
	}
	tmp.done = done;
	tmp.ctx = ctx;
	tmp.deadline_ms = now_ms + (timeout_ms ? timeout_ms : DNS_LOOKUP_MS_DEFAULT);
	*l = tmp;
	return 0;
}

/* The query's next server (round again after the last). */
static void dns_query_next(struct dns_client *c, struct dns_query *q, u64 now_ms)
{
	u8 prev = q->server;

	q->server = (u8)((q->server + 1) % c->nservers);
	if (q->server != prev)
		c->st.failovers++;
	q->next_ms = now_ms + DNS_TRY_MS;
	dns_query_send(c, q);
}

void dns_client_input(struct dns_client *c, unsigned server, const u8 *msg, size_t len, u64 now_ms)
{
	struct dns_query *q = NULL;
	struct dns_answer a;
	const char *why;
	int r;

	if (len >= 2 && server < c->nservers)
		for (unsigned i = 0; i < DNS_QUERIES_MAX && !q; i++)
			if (c->q[i].name[0] && c->q[i].id == (u16)(msg[0] << 8 | msg[1]) &&
			    (c->q[i].asked & (1u << server)))
				q = &c->q[i];
	if (!q) {
		c->st.bad_responses++;
		return;
	}
	r = dns_msg_parse(msg, len, q->id, q->name, q->qtype, &a, &why);
	if (r == -EBADMSG) {
		c->st.bad_responses++;	/* forged or broken: the real answer may follow */
		return;
	}
	if (r == -EAGAIN) {
		if (++q->servfails >= c->nservers) {
			dns_query_end(c, q, NULL, -EIO);
			return;
		}
		if (server == q->server)
			dns_query_next(c, q, now_ms);
		return;
	}
	c->good = (u8)server;
	dns_cache_put(&c->cache, q->name, q->qtype, &a, now_ms);
	dns_query_end(c, q, &a, 0);
}

u64 dns_client_tick(struct dns_client *c, u64 now_ms)
{
	u64 next = UINT64_MAX;

	for (unsigned i = 0; i < DNS_LOOKUPS_MAX; i++) {
		struct dns_lookup *l = &c->l[i];

		if (l->done && now_ms >= l->deadline_ms) {
			c->st.timeouts++;
			dns_lookup_end(l, -ETIMEDOUT);
		}
	}
	for (unsigned i = 0; i < DNS_QUERIES_MAX; i++) {
		struct dns_query *q = &c->q[i];
		bool waited = false;

		if (!q->name[0])
			continue;
		for (unsigned j = 0; j < DNS_LOOKUPS_MAX && !waited; j++)
			waited = c->l[j].done && (c->l[j].pending & (1u << (q->qtype == DNS_TYPE_AAAA))) &&
				 __builtin_strcmp(c->l[j].name, q->name) == 0;
		if (!waited) {
			q->name[0] = '\0';	/* nobody waits: asked no more */
			continue;
		}
		if (now_ms >= q->next_ms)
			dns_query_next(c, q, now_ms);
		next = MIN(next, q->next_ms);
	}
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX; i++)
		if (c->l[i].done)
			next = MIN(next, c->l[i].deadline_ms);
	return next;
}

void dns_client_stop(struct dns_client *c)
{
	for (unsigned i = 0; i < DNS_QUERIES_MAX; i++)
		c->q[i].name[0] = '\0';
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX; i++)
		if (c->l[i].done)
			dns_lookup_end(&c->l[i], -ECANCELED);
}
