/* The resolver's cache: answers and negative answers (RFC 2308) by name and
 * type, each kept for its TTL within a floor and a ceiling. Pure: the
 * caller gives the entries' memory and the time. Bounded: a fixed number
 * of fixed-size entries (sizeof(struct dns_cache_entry), 408 B on x86_64),
 * so the bytes are entries x 408; when full, an expired entry or else the
 * least recently used one is replaced. Lookups scan the entries (at most
 * DNS_CACHE_MAX, once per lookup: cold). */
#ifndef VIREO_NET_DNS_CACHE_H
#define VIREO_NET_DNS_CACHE_H

#include "lib/types.h"
#include "net/clients/dns_msg.h"

/* TTLs, seconds. A positive answer is kept at least the floor (a TTL of 0
 * would send every lookup to the servers: 5 s bounds that to one query per
 * name and type per 5 s) and at most the ceiling (an answer an attacker
 * spoofed, or a stale one, lives an hour at most). A negative answer takes
 * the least of its SOA's TTL and MINIMUM (RFC 2308 section 5) within
 * [DNS_NEG_TTL_FLOOR_S, DNS_NEG_TTL_CEIL_S]; one without an SOA the floor
 * (RFC 2308 section 5: it should not be cached; the floor only shares it
 * with the lookups of the next seconds). RFC 2308 suggests 1 to 3 hours as
 * a negative ceiling; 5 minutes keeps a name that comes into being usable
 * soon. */
#define DNS_TTL_FLOOR_S 5
#define DNS_TTL_CEIL_S 3600
#define DNS_NEG_TTL_FLOOR_S 5
#define DNS_NEG_TTL_CEIL_S 300

/* Entries: one per MiB of memory, within [DNS_CACHE_MIN, DNS_CACHE_MAX]:
 * 128 MiB gives 128 entries, 52 KiB (0.04% of it); the most, 256, take
 * 104 KiB. */
#define DNS_CACHE_MIN 16
#define DNS_CACHE_MAX 256

struct dns_cache_entry {
	u64 expires_ms;			/* 0: free */
	u64 used_ms;			/* the last hit or fill: the LRU's order */
	u16 qtype;
	u8 result;			/* enum dns_result */
	u8 n, alen;			/* addresses of alen bytes (DNS_ANSWER) */
	char name[DNS_NAME_MAX + 1];	/* normalised (dns_msg_name_norm()) */
	u8 addr[DNS_ADDRS_MAX][16];
};

struct dns_cache {
	struct dns_cache_entry *e;
	u32 n;
	u64 evicted;			/* live entries replaced for room */
};

/* Entries for mem_bytes of memory (the rule above). */
u32 dns_cache_entries(u64 mem_bytes);
void dns_cache_init(struct dns_cache *c, struct dns_cache_entry *e, u32 n);
/* The seconds an answer is kept (the rules above). */
u32 dns_cache_ttl(const struct dns_answer *a);
/* The live entry for name (normalised) and qtype at now_ms, its use
 * noted; NULL when none (an expired one is freed). */
const struct dns_cache_entry *dns_cache_get(struct dns_cache *c, const char *name, u16 qtype, u64 now_ms);
/* Keeps a (a result of dns_msg_parse()) for name and qtype from now_ms,
 * replacing the entry for the same name and type, a free or expired one,
 * or the least recently used. */
void dns_cache_put(struct dns_cache *c, const char *name, u16 qtype, const struct dns_answer *a, u64 now_ms);
/* The seconds e has left at now_ms (0 when expired). */
u32 dns_cache_ttl_left(const struct dns_cache_entry *e, u64 now_ms);

#endif
