/* Token buckets on TLS handshakes started (docs/appliance.md, "Handshake
 * rates"): one per source prefix (IPv4 /24, IPv6 /56) and one for all, so
 * a client replaying ClientHellos from one network gets at most its
 * prefix's rate of ECDHEs and signatures, and all of them together at most
 * the global rate. Pure code: the caller passes the time; host-tested.
 *
 * Each bucket is one number, its theoretical arrival time (GCRA, the
 * virtual-scheduling form of a token bucket): with T = 10^9 / rate ns
 * between handshakes and a burst of B, the bucket is full while tat <= now,
 * and a handshake is admitted when max(tat, now) + T <= now + B x T, after
 * which tat = max(tat, now) + T. A refused handshake changes nothing, so a
 * flood stops costing the prefix anything once it is over, and the bucket
 * is full again B x T after the flood's last admitted handshake. Integer
 * arithmetic only: tat never exceeds now + B x T <= now + HSRATE_SPAN_MAX
 * (10^14 ns, about 28 hours), so nothing overflows before time_ns() does
 * (2^64 ns: 584 years of uptime).
 *
 * The prefix table is bounded: HSRATE_BUCKETS buckets (16 B each: 16 KiB)
 * in sets of HSRATE_WAYS, a prefix's set chosen by SipHash-2-4 under a
 * boot-time key (a sender cannot aim its prefixes at another's set). A
 * prefix not in its set takes the set's bucket that limits least: a full
 * one (tat <= now: the same as no state, nothing is lost), else the one
 * with the earliest tat (the most tokens left). A busy prefix, one being
 * limited, holds the latest tat of its set, so it is replaced last: to
 * replace it a sprayer needs the other HSRATE_WAYS - 1 buckets of that set
 * further in debt than it, each bought with handshakes its own prefix and
 * the global bucket admit. And a prefix gets a bucket only with an admitted
 * handshake, so the buckets in use at once (tat > now) are at most the
 * handshakes the global bucket admits in one prefix span, B x T of the
 * per-prefix setting (docs/appliance.md has the figures). O(1) per
 * handshake: one hash and HSRATE_WAYS compares.
 */
#ifndef VIREO_RUNTIME_HTTP_HSRATE_H
#define VIREO_RUNTIME_HTTP_HSRATE_H

#include "lib/crypto/siphash.h"
#include "lib/types.h"

#define HSRATE_WAYS		4
#define HSRATE_BUCKETS		1024
#define HSRATE_V4_PREFIX	24	/* bits of an IPv4 source a prefix keeps */
#define HSRATE_V6_PREFIX	56	/* of an IPv6 one: a site (RFC 6177) */
#define HSRATE_RATE_MAX		100000	/* handshakes a second, either bucket */
#define HSRATE_BURST_MAX	100000
/* The most a bucket runs ahead of now: HSRATE_BURST_MAX x 10^9 ns (rate 1). */
#define HSRATE_SPAN_MAX		(100000ULL * 1000000000ULL)

struct hsrate_bucket {
	u64 tag;	/* the prefix's hash, 0 for an unused bucket */
	u64 tat;	/* full again (and free to replace) at this time */
};

/* One bucket's setting: 0 interval means no limit. */
struct hsrate_limit {
	u64 interval_ns;	/* T = 10^9 / rate */
	u64 span_ns;		/* B x T */
};

enum hsrate_verdict {
	HSRATE_PASS,		/* admitted, both buckets charged */
	HSRATE_PREFIX,		/* refused: the prefix's bucket is empty */
	HSRATE_GLOBAL,		/* refused: the global one is */
};

struct hsrate {
	struct siphash_key key;
	struct hsrate_limit prefix, global;
	u64 global_tat;
	u64 replaced;		/* buckets given to a new prefix while still in use */
	struct hsrate_bucket b[HSRATE_BUCKETS];
};

/* Empty table, no limits; key from the CSPRNG. */
void hsrate_init(struct hsrate *r, const u8 key[16]);
/* The per-prefix and global rates (handshakes a second, 0: no limit) and
 * bursts (handshakes at once from a full bucket, at least 1), each clamped
 * to 1-HSRATE_RATE_MAX/HSRATE_BURST_MAX. Buckets in use keep their tat. */
void hsrate_set(struct hsrate *r, u32 rate, u32 burst, u32 global_rate, u32 global_burst);
/* A handshake from addr (4 or 16 bytes) at now_ns: admitted and charged to
 * both buckets, or refused (nothing charged; a refusal by the global
 * bucket leaves the prefix's token, and no bucket is taken for it). */
enum hsrate_verdict hsrate_take(struct hsrate *r, const u8 *addr, size_t alen, u64 now_ns);
/* Buckets in use (tat > now) now: for tests and /metrics. O(HSRATE_BUCKETS). */
u32 hsrate_in_use(const struct hsrate *r, u64 now_ns);

#endif
