/* Token buckets on handshakes started (see hsrate.h). */
#include "runtime/http/hsrate.h"
#include "lib/string.h"

_Static_assert((HSRATE_BUCKETS & (HSRATE_BUCKETS - 1)) == 0 && HSRATE_BUCKETS % HSRATE_WAYS == 0,
	       "sets are a power of two");
_Static_assert(HSRATE_SPAN_MAX == (u64)HSRATE_BURST_MAX * 1000000000ULL, "rate 1, largest burst");

void hsrate_init(struct hsrate *r, const u8 key[16])
{
	memset(r, 0, sizeof *r);
	siphash_key_from_bytes(&r->key, key);
}

static struct hsrate_limit hsrate_limit_of(u32 rate, u32 burst)
{
	struct hsrate_limit l = { 0, 0 };

	if (!rate)
		return l;
	rate = MIN(rate, HSRATE_RATE_MAX);
	burst = MIN(MAX(burst, 1u), HSRATE_BURST_MAX);
	l.interval_ns = 1000000000ULL / rate;	/* >= 10,000 ns: under 0.01% rounded away */
	l.span_ns = l.interval_ns * burst;	/* <= HSRATE_SPAN_MAX */
	return l;
}

void hsrate_set(struct hsrate *r, u32 rate, u32 burst, u32 global_rate, u32 global_burst)
{
	r->prefix = hsrate_limit_of(rate, burst);
	r->global = hsrate_limit_of(global_rate, global_burst);
}

/* Whether a bucket at tat admits one more at now; *next is its tat after. */
static bool hsrate_fits(const struct hsrate_limit *l, u64 tat, u64 now, u64 *next)
{
	u64 debt = tat > now ? tat - now : 0;	/* <= span_ns */

	if (debt + l->interval_ns > l->span_ns)
		return false;
	*next = now + debt + l->interval_ns;	/* <= now + HSRATE_SPAN_MAX */
	return true;
}

/* The prefix's key: the family, then the kept bits of the address. */
static u64 hsrate_tag(const struct hsrate *r, const u8 *addr, size_t alen)
{
	u8 k[1 + 16] = { 0 };
	unsigned bits = alen == 4 ? HSRATE_V4_PREFIX : HSRATE_V6_PREFIX;

	alen = alen == 4 ? 4 : 16;
	k[0] = (u8)alen;
	for (unsigned i = 0; i < bits / 8; i++)
		k[1 + i] = addr[i];
	_Static_assert(HSRATE_V4_PREFIX % 8 == 0 && HSRATE_V6_PREFIX % 8 == 0, "whole bytes");
	return siphash24(&r->key, k, 1 + alen) | 1;	/* never 0, the unused tag */
}

enum hsrate_verdict hsrate_take(struct hsrate *r, const u8 *addr, size_t alen, u64 now)
{
	struct hsrate_bucket *set, *bk = NULL;
	u64 tag, ptat = now, gtat = now;
	bool found = false;

	if (r->prefix.interval_ns) {
		tag = hsrate_tag(r, addr, alen);
		set = &r->b[(tag >> 32) & (HSRATE_BUCKETS - HSRATE_WAYS)];
		for (unsigned i = 0; i < HSRATE_WAYS; i++) {
			if (set[i].tag == tag) {
				bk = &set[i];
				found = true;
				break;
			}
			/* else the one that limits least: the earliest tat */
			if (!bk || set[i].tat < bk->tat)
				bk = &set[i];
		}
		if (!hsrate_fits(&r->prefix, found ? bk->tat : now, now, &ptat))
			return HSRATE_PREFIX;
	}
	if (r->global.interval_ns && !hsrate_fits(&r->global, r->global_tat, now, &gtat))
		return HSRATE_GLOBAL;
	if (r->global.interval_ns)
		r->global_tat = gtat;
	if (bk) {
		if (!found) {
			if (bk->tag && bk->tat > now)
				r->replaced++;
			bk->tag = tag;
		}
		bk->tat = ptat;
	}
	return HSRATE_PASS;
}

u32 hsrate_in_use(const struct hsrate *r, u64 now)
{
	u32 n = 0;

	for (unsigned i = 0; i < HSRATE_BUCKETS; i++)
		n += r->b[i].tag && r->b[i].tat > now;
	return n;
}

/* The CPU share of handshake steps (see hsrate.h). */
static bool hscpu_windowed(const struct hscpu *c)
{
	return c->share < 100;
}

static s64 hscpu_cap(const struct hscpu *c)
{
	return (s64)(c->window_ns * c->share);
}

/* Earns the credit of the time since last, up to the cap. */
static void hscpu_refill(struct hscpu *c, u64 now)
{
	u64 el;

	if (now <= c->last)
		return;
	el = now - c->last;
	c->last = now;
	/* 100 x (window + step max) ns earn at 1% more than the deepest debt
	 * (100 x step max) plus the cap (share x window): the cap then; below
	 * that el x share < 2 x 10^14, no overflow */
	if (el >= 100 * (HSCPU_WINDOW_MAX_NS + HSCPU_STEP_MAX_NS))
		c->credit = hscpu_cap(c);
	else
		c->credit = MIN(c->credit + (s64)(el * c->share), hscpu_cap(c));
}

void hscpu_set(struct hscpu *c, u64 pass_ns, u32 share, u64 window_ns, u64 now)
{
	c->pass_ns = pass_ns;
	c->window_ns = MIN(window_ns, HSCPU_WINDOW_MAX_NS);
	c->share = share && c->window_ns ? MIN(share, 100u) : 100;
	c->credit = hscpu_cap(c);
	c->last = now;
	c->spent = 0;
}

void hscpu_new_pass(struct hscpu *c)
{
	c->spent = 0;
}

bool hscpu_share_out(struct hscpu *c, u64 now)
{
	if (!hscpu_windowed(c))
		return false;
	hscpu_refill(c, now);
	return c->credit <= 0;
}

bool hscpu_may_start(struct hscpu *c, u64 now)
{
	if (c->pass_ns && c->spent >= c->pass_ns)
		return false;
	return !hscpu_share_out(c, now);
}

void hscpu_charge(struct hscpu *c, u64 now, u64 dt)
{
	dt = MIN(dt, HSCPU_STEP_MAX_NS);
	c->spent += dt;
	if (!hscpu_windowed(c))
		return;
	/* up to the step's start, its cost, then what its time earned: the cap
	 * applies after the debit, so a step longer than the window still
	 * earns its share while it runs */
	hscpu_refill(c, now - MIN(dt, now));
	c->credit -= (s64)(dt * 100);
	hscpu_refill(c, now);
}

u64 hscpu_ready_at(struct hscpu *c, u64 now)
{
	if (!hscpu_share_out(c, now))
		return now;
	return now + (u64)(-c->credit) / c->share + 1;
}

/* Round robin across prefixes (see hsrate.h). */
_Static_assert((HSFAIR_SLOTS & (HSFAIR_SLOTS - 1)) == 0 && HSFAIR_SLOTS < HSFAIR_NONE, "slot index");
_Static_assert(sizeof(struct hsfair_slot) == 24 && sizeof(struct hsfair_node) == 2 * sizeof(void *),
	       "hsrate.h's figures: 24 B a slot, a node of two pointers");

u16 hsrate_slot(const struct hsrate *r, const u8 *addr, size_t alen)
{
	/* bit 0 is always set, the set index is bits 32 up: bits 1-8 */
	return (u16)((hsrate_tag(r, addr, alen) >> 1) & (HSFAIR_SLOTS - 1));
}

void hsfair_init(struct hsfair *f)
{
	memset(f, 0, sizeof *f);
	f->cur = HSFAIR_NONE;
	for (unsigned i = 0; i < HSFAIR_SLOTS; i++)
		list_init(&f->s[i].q);
}

/* Slot i joins the ring just before the current turn: last in the round. */
static void hsfair_ring_add(struct hsfair *f, u16 i)
{
	struct hsfair_slot *s = &f->s[i];

	if (f->cur == HSFAIR_NONE) {
		s->rprev = s->rnext = i;
		f->cur = i;
		return;
	}
	s->rnext = f->cur;
	s->rprev = f->s[f->cur].rprev;
	f->s[s->rprev].rnext = i;
	f->s[f->cur].rprev = i;
}

/* Slot i, now empty, leaves the ring; the turn goes on to its successor. */
static void hsfair_ring_del(struct hsfair *f, u16 i)
{
	struct hsfair_slot *s = &f->s[i];

	if (s->rnext == i) {
		f->cur = HSFAIR_NONE;
		return;
	}
	f->s[s->rprev].rnext = s->rnext;
	f->s[s->rnext].rprev = s->rprev;
	if (f->cur == i)
		f->cur = s->rnext;
}

void hsfair_push(struct hsfair *f, struct hsfair_node *n, u16 slot)
{
	struct hsfair_slot *s;

	slot &= HSFAIR_SLOTS - 1;
	s = &f->s[slot];
	if (list_empty(&s->q))
		hsfair_ring_add(f, slot);
	list_push_back(&s->q, &n->link);
	f->queued++;
}

void hsfair_remove(struct hsfair *f, struct hsfair_node *n, u16 slot)
{
	struct hsfair_slot *s;

	slot &= HSFAIR_SLOTS - 1;
	s = &f->s[slot];
	list_unlink(&n->link);
	f->queued--;
	if (list_empty(&s->q))
		hsfair_ring_del(f, slot);
}

struct hsfair_node *hsfair_pop(struct hsfair *f)
{
	u16 i = f->cur;
	struct hsfair_node *n;

	if (i == HSFAIR_NONE)
		return NULL;
	n = list_entry(f->s[i].q.next, struct hsfair_node, link);
	hsfair_remove(f, n, i);
	/* the slot still waiting: its next turn comes after the others' */
	if (f->cur == i)
		f->cur = f->s[i].rnext;
	return n;
}
