/* Response-rate limiting against reflection (apps/dns): a token bucket per
 * source prefix (IPv4 /24, IPv6 /56 by default), so a flood of queries with
 * a victim's spoofed address gets at most `rate` answers a second toward
 * that victim's network, while every other prefix keeps its own budget.
 *
 * The table is bounded: RRL_BUCKETS buckets in sets of RRL_WAYS, found by
 * SipHash-2-4 of the prefix under a random key (so a sender cannot choose
 * prefixes that collide with a victim's set); a new prefix takes the set's
 * fullest bucket (the one that limits nobody). Memory: RRL_BUCKETS x 24 B =
 * 24 KiB for 1024, whatever the number of sources.
 *
 * Besides the buckets, a global ceiling (rrl_set_global): at most that many
 * answers a second in all, a burst of one second's worth, so that a spoofer
 * spreading its queries over many prefixes, each within its own budget,
 * still cannot make the server send more than that toward anyone. A query
 * its prefix would let through but the ceiling does not is over the limit
 * like any other (and its prefix keeps the token).
 *
 * Over the limit, one answer in `slip` goes out as a "slip" (a truncated
 * answer, TC set: a real client retries over TCP, which a spoofer cannot
 * do) and the others are dropped; slip 0 drops all. Pure code: the caller
 * passes the time. */
#ifndef VIREO_DNS_RRL_H
#define VIREO_DNS_RRL_H

#include "vireo/siphash.h"
#include "vireo/types.h"

#define RRL_BUCKETS 1024
#define RRL_WAYS 4
#define RRL_RATE_MAX 100000	/* answers per second and prefix */
#define RRL_GLOBAL_MAX 4000000	/* answers per second in all (x 1000 fits a u32) */

enum rrl_verdict { RRL_PASS, RRL_DROP, RRL_SLIP };

struct rrl_bucket {
	u64 tag;	/* the prefix's hash, 0 for an unused bucket */
	u64 last_ns;	/* when tokens was last refilled */
	u32 tokens;	/* in thousandths of an answer */
	u32 over;	/* answers over the limit since it was last under */
};

struct rrl {
	struct siphash_key key;
	u32 rate;	/* answers per second and prefix; 0: no limit */
	u32 slip;
	u32 global_rate;	/* answers per second in all; 0: no ceiling */
	struct rrl_bucket global;	/* its bucket (tag unused) */
	u64 global_limited;	/* answers held back by the ceiling (a part of dropped + slipped) */
	u8 v4_prefix, v6_prefix;	/* bits kept of the source address */
	u64 passed, dropped, slipped;
	struct rrl_bucket b[RRL_BUCKETS];
};

/* rate 0 turns per-prefix limiting off; slip 0 drops everything over the
 * limit. No global ceiling until rrl_set_global. */
void rrl_init(struct rrl *r, const u8 key[16], u32 rate, u32 slip);
/* The ceiling: rate answers a second in all (at most RRL_GLOBAL_MAX); 0: none. */
void rrl_set_global(struct rrl *r, u32 rate);
/* The verdict for one UDP answer to addr (4 or 16 bytes) at now_ns. */
enum rrl_verdict rrl_check(struct rrl *r, const u8 *addr, size_t alen, u64 now_ns);

#endif
