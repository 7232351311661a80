/*
 * The resolver's cache (dns_cache.h). Pure: host tests in
 * tests/host/net/clients/test_dns_cache.c.
 */
#include "net/clients/dns_cache.h"

u32 dns_cache_entries(u64 mem_bytes)
{
	u64 n = mem_bytes >> 20;

	return (u32)(n < DNS_CACHE_MIN ? DNS_CACHE_MIN : n > DNS_CACHE_MAX ? DNS_CACHE_MAX : n);
}

void dns_cache_init(struct dns_cache *c, struct dns_cache_entry *e, u32 n)
{
	c->e = e;
	c->n = n;
	c->evicted = 0;
	__builtin_memset(e, 0, (size_t)n * sizeof *e);
}

u32 dns_cache_ttl(const struct dns_answer *a)
{
	if (a->result == DNS_ANSWER)
		return a->ttl < DNS_TTL_FLOOR_S ? DNS_TTL_FLOOR_S : a->ttl > DNS_TTL_CEIL_S ? DNS_TTL_CEIL_S : a->ttl;
	if (!a->has_soa || a->ttl < DNS_NEG_TTL_FLOOR_S)
		return DNS_NEG_TTL_FLOOR_S;
	return a->ttl > DNS_NEG_TTL_CEIL_S ? DNS_NEG_TTL_CEIL_S : a->ttl;
}

static bool dns_cache_live(const struct dns_cache_entry *e, u64 now_ms)
{
	return e->expires_ms > now_ms;
}

const struct dns_cache_entry *dns_cache_get(struct dns_cache *c, const char *name, u16 qtype, u64 now_ms)
{
	for (u32 i = 0; i < c->n; i++) {
		struct dns_cache_entry *e = &c->e[i];

		if (!e->expires_ms || e->qtype != qtype || __builtin_strcmp(e->name, name) != 0)
			continue;
		if (!dns_cache_live(e, now_ms)) {
			e->expires_ms = 0;
			return NULL;
		}
		e->used_ms = now_ms;
		return e;
	}
	return NULL;
}

void dns_cache_put(struct dns_cache *c, const char *name, u16 qtype, const struct dns_answer *a, u64 now_ms)
{
	struct dns_cache_entry *e = NULL, *lru = NULL;
	size_t len = __builtin_strlen(name);

	if (c->n == 0 || len > DNS_NAME_MAX)
		return;
	for (u32 i = 0; i < c->n; i++) {
		struct dns_cache_entry *x = &c->e[i];

		if (x->expires_ms && x->qtype == qtype && __builtin_strcmp(x->name, name) == 0) {
			e = x;
			break;
		}
		if (!e && !dns_cache_live(x, now_ms))
			e = x;	/* free or expired: taken unless the same name is further on */
		else if (dns_cache_live(x, now_ms) && (!lru || x->used_ms < lru->used_ms))
			lru = x;
	}
	if (!e) {
		e = lru;
		c->evicted++;
	}
	__builtin_memset(e, 0, sizeof *e);
	__builtin_memcpy(e->name, name, len + 1);
	e->qtype = qtype;
	e->result = (u8)a->result;
	e->alen = a->alen;
	if (a->result == DNS_ANSWER) {
		e->n = a->n > DNS_ADDRS_MAX ? DNS_ADDRS_MAX : a->n;
		__builtin_memcpy(e->addr, a->addr, sizeof e->addr);
	}
	e->used_ms = now_ms;
	e->expires_ms = now_ms + (u64)dns_cache_ttl(a) * 1000;
}

u32 dns_cache_ttl_left(const struct dns_cache_entry *e, u64 now_ms)
{
	return dns_cache_live(e, now_ms) ? (u32)((e->expires_ms - now_ms + 999) / 1000) : 0;
}
