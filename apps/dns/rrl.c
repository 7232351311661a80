/* Response-rate limiting (see rrl.h). */
#include "apps/dns/rrl.h"
#include "lib/string.h"

_Static_assert(RRL_BUCKETS % RRL_WAYS == 0 && (RRL_BUCKETS & (RRL_BUCKETS - 1)) == 0, "RRL table shape");

void rrl_init(struct rrl *r, const u8 key[16], u32 rate, u32 slip)
{
	memset(r, 0, sizeof *r);
	siphash_key_from_bytes(&r->key, key);
	r->rate = MIN(rate, RRL_RATE_MAX);
	r->slip = slip;
	r->v4_prefix = 24;
	r->v6_prefix = 56;
}

/* One second's worth: the burst a quiet prefix may send at once. */
static u32 rrl_cap(const struct rrl *r)
{
	return r->rate * 1000u;
}

enum rrl_verdict rrl_check(struct rrl *r, const u8 *addr, size_t alen, u64 now_ns)
{
	u8 pfx[17] = { 0 };
	unsigned bits = alen == 4 ? r->v4_prefix : r->v6_prefix;
	struct rrl_bucket *set, *bk = NULL;
	u64 h;

	if (r->rate == 0) {
		r->passed++;
		return RRL_PASS;
	}
	alen = MIN(alen, 16);
	pfx[0] = (u8)alen;	/* IPv4 and IPv6 prefixes never share a hash */
	for (unsigned i = 0; i < alen && i * 8 < bits; i++)
		pfx[1 + i] = (u8)(addr[i] & (bits - i * 8 >= 8 ? 0xff : (0xff00 >> (bits - i * 8))));
	h = siphash24(&r->key, pfx, 1 + alen) | 1;	/* never 0, the unused tag */
	set = &r->b[(h >> 32) & (RRL_BUCKETS - RRL_WAYS)];
	for (unsigned i = 0; i < RRL_WAYS; i++)
		if (set[i].tag == h)
			bk = &set[i];
	if (!bk) {
		/* Refill each way first, then take the fullest (unused ones are
		 * full): a prefix being limited is the last to be replaced. */
		for (unsigned i = 0; i < RRL_WAYS; i++) {
			struct rrl_bucket *c = &set[i];
			u64 el = now_ns - c->last_ns;

			if (c->tag == 0 || el >= 1000000000ULL)
				c->tokens = rrl_cap(r);
			if (!bk || c->tokens > bk->tokens)
				bk = c;
		}
		bk->tag = h;
		bk->tokens = rrl_cap(r);
		bk->last_ns = now_ns;
		bk->over = 0;
	} else if (now_ns > bk->last_ns) {
		/* el <= 1 s here, so el * rate <= 1e9 * 1e5 fits easily. */
		u64 el = MIN(now_ns - bk->last_ns, 1000000000ULL);
		u64 add = el * r->rate / 1000000ULL;

		/* While less than a thousandth has come in, the time keeps
		 * adding up instead of being rounded away at every query. */
		if (add) {
			bk->tokens = (u32)MIN(bk->tokens + add, (u64)rrl_cap(r));
			bk->last_ns = now_ns;
		}
	}
	if (bk->tokens >= 1000) {
		bk->tokens -= 1000;
		bk->over = 0;
		r->passed++;
		return RRL_PASS;
	}
	bk->over++;
	if (r->slip && bk->over % r->slip == 0) {
		r->slipped++;
		return RRL_SLIP;
	}
	r->dropped++;
	return RRL_DROP;
}
