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
#include "lib/list.h"
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

/* The CPU share handshake steps may take (hsgate.c asks before each step;
 * docs/appliance.md, "Handshake rates and CPU"). Pure too: the caller
 * passes the time (time_ns(), the calibrated TSC) and each step's length.
 *
 * Two bounds. Per pass: a step starts while less than pass_ns of steps ran
 * in the current pass of the event loop (so a pass does at most pass_ns
 * plus one step before other work). Per window: a token bucket on CPU
 * time, credit earned at share/100 of each nanosecond and capped at
 * share/100 x window_ns; a step starts only with credit > 0 and its length
 * is then taken off, the credit going negative (a debt repaid before the
 * next step) when a step outlasts it. So over any interval of L ns the
 * steps that start in it take at most share/100 x (L + window_ns) ns, plus
 * one step's overrun at the interval's end: in the long run the share,
 * over each window at most twice it plus one step. With 5 ms steps, share
 * 50% and 10 ms windows: a step, then nothing for 5 ms; not one step per
 * pass however short the passes are, as the pass bound alone allowed.
 * Units: credit in ns x 100 (ns of CPU times the percent), so integers
 * only; a step counted at most HSCPU_STEP_MAX_NS and the refill clamped to
 * the cap, so |credit| <= 100 x (HSCPU_STEP_MAX_NS + HSCPU_WINDOW_MAX_NS)
 * = 2 x 10^12: no overflow. */
#define HSCPU_WINDOW_MAX_NS	10000000000ULL	/* 10 s */
#define HSCPU_STEP_MAX_NS	10000000000ULL	/* a step counted as at most 10 s */

struct hscpu {
	u64 pass_ns;		/* 0: no pass bound */
	u64 window_ns;
	u32 share;		/* percent, 1-100; 100: no window bound */
	s64 credit;		/* ns x 100 */
	u64 last;		/* when credit was last brought up to date */
	u64 spent;		/* ns of steps in this pass */
};

/* The bounds: pass_ns (0: none), share percent of window_ns (share 0 or
 * >= 100, or window 0: none; window clamped to HSCPU_WINDOW_MAX_NS). The
 * credit starts full. */
void hscpu_set(struct hscpu *c, u64 pass_ns, u32 share, u64 window_ns, u64 now);
/* A new pass of the loop begins. */
void hscpu_new_pass(struct hscpu *c);
/* Whether a step may start at now: pass budget and credit left. */
bool hscpu_may_start(struct hscpu *c, u64 now);
/* Whether only the window's credit holds steps back at now. */
bool hscpu_share_out(struct hscpu *c, u64 now);
/* A step that started ran dt ns, ending at now. */
void hscpu_charge(struct hscpu *c, u64 now, u64 dt);
/* The earliest time at or after now the credit is positive again. */
u64 hscpu_ready_at(struct hscpu *c, u64 now);

/* Fair turns for handshake steps put off (hsgate.c; docs/appliance.md,
 * "Handshake rates and CPU"): the steps waiting for the CPU share are
 * served round robin across source prefixes (the prefixes of the buckets
 * above, IPv4 /24 and IPv6 /56), one step a prefix a turn, so a flood from
 * one prefix gets at most its turn of the handshake CPU and a client from
 * another prefix waits for at most one step of each prefix ahead of it in
 * the round, not for the flood's whole queue. Stochastic fairness: a
 * prefix's queue is one of HSFAIR_SLOTS, chosen by its keyed hash (the
 * bucket tag; a sender cannot aim at another's slot), and two prefixes in
 * one slot share its turns (for a client and one flooding prefix: a 1 in
 * HSFAIR_SLOTS chance, renewed at each boot). Memory: the queues are
 * linked through their connections (struct hsfair_node in each), the
 * slots are a fixed array (24 B each: 6 KiB) and the ring of active slots
 * is linked through them, so nothing grows with the queue. O(1) per push,
 * pop and removal: no walk over queued connections or slots. Turns count
 * steps, not their time: a prefix with dearer steps (P-256, a ClientHello)
 * gets that much more CPU a turn, at most the dearest step. */
#define HSFAIR_SLOTS		256
#define HSFAIR_NONE		0xffff

/* Two pointers: the caller keeps whether it is queued and in which slot
 * (struct conn has room for those in its padding, not for a larger node). */
struct hsfair_node {
	struct list_node link;			/* its slot's queue */
};

struct hsfair_slot {
	struct list_node q;			/* its queue, oldest first */
	u16 rprev, rnext;			/* the ring of non-empty slots */
};

struct hsfair {
	u16 cur;		/* the slot whose turn is next; HSFAIR_NONE: empty */
	u32 queued;		/* nodes queued */
	struct hsfair_slot s[HSFAIR_SLOTS];
};

/* The slot of addr's prefix (4 or 16 bytes): r's key, so a fixed mapping
 * for one boot. */
u16 hsrate_slot(const struct hsrate *r, const u8 *addr, size_t alen);
void hsfair_init(struct hsfair *f);
/* n (not queued) waits at the back of slot's queue; a slot that was empty
 * joins the ring last, its turn after every slot waiting now. */
void hsfair_push(struct hsfair *f, struct hsfair_node *n, u16 slot);
/* The front node of the slot whose turn it is, off the queue; the turn
 * passes to the next slot. NULL when nothing waits. */
struct hsfair_node *hsfair_pop(struct hsfair *f);
/* n, queued in slot, off it wherever it is. */
void hsfair_remove(struct hsfair *f, struct hsfair_node *n, u16 slot);

#endif
