/* Response-rate limiting (see rrl.h). */
#include "rrl.h"
#include "vireo/string.h"

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

void rrl_set_global(struct rrl *r, u32 rate)
{
	r->global_rate = MIN(rate, RRL_GLOBAL_MAX);
	r->global.tokens = r->global_rate * 1000u;
	r->global.last_ns = 0;
	r->global.tag = 0;
}

/* Refills bk at rate (answers a second) up to one second's worth. */
static void rrl_refill(struct rrl_bucket *bk, u32 rate, u64 now_ns)
{
	u64 el, add;

	if (now_ns <= bk->last_ns)
		return;
	/* el <= 1 s here, so el * rate <= 1e9 * 4e6 fits easily. */
	el = MIN(now_ns - bk->last_ns, 1000000000ULL);
	add = el * rate / 1000000ULL;
	/* While less than a thousandth has come in, the time keeps adding
	 * up instead of being rounded away at every query. */
	if (add) {
		bk->tokens = (u32)MIN(bk->tokens + add, (u64)rate * 1000u);
		bk->last_ns = now_ns;
	}
}

/* Over a limit: one in slip goes out as a slip, the rest are dropped. */
static enum rrl_verdict rrl_over(struct rrl *r, u32 *over)
{
	(*over)++;
	if (r->slip && *over % r->slip == 0) {
		r->slipped++;
		return RRL_SLIP;
	}
	r->dropped++;
	return RRL_DROP;
}

/* The global ceiling's verdict for an answer its prefix lets through. */
static bool rrl_global_ok(struct rrl *r, u64 now_ns)
{
	if (!r->global_rate)
		return true;
	rrl_refill(&r->global, r->global_rate, now_ns);
	if (r->global.tokens < 1000)
		return false;
	r->global.tokens -= 1000;
	return true;
}

enum rrl_verdict rrl_check(struct rrl *r, const u8 *addr, size_t alen, u64 now_ns)
{
	u8 pfx[17] = { 0 };
	unsigned bits = alen == 4 ? r->v4_prefix : r->v6_prefix;
	struct rrl_bucket *set, *bk = NULL;
	u64 h;

	if (r->rate == 0) {
		if (!rrl_global_ok(r, now_ns)) {
			r->global_limited++;
			return rrl_over(r, &r->global.over);
		}
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
	} else {
		rrl_refill(bk, r->rate, now_ns);
	}
	if (bk->tokens >= 1000) {
		if (!rrl_global_ok(r, now_ns)) {
			r->global_limited++;	/* the prefix keeps its token */
			return rrl_over(r, &r->global.over);
		}
		bk->tokens -= 1000;
		bk->over = 0;
		r->passed++;
		return RRL_PASS;
	}
	return rrl_over(r, &bk->over);
}
