/*
 * The resolver's engine: lookups by name over DNS servers, with the cache
 * (dns_cache.h), the messages (dns_msg.h), in-flight sharing, failover and
 * deadlines. Pure: the caller sends (ops->send), delivers what arrives
 * (dns_client_input()), gives the time and ticks it (dns_client_tick());
 * host tests in tests/host/net/clients/test_dns_client.c. The glue over a
 * UDP pcb and the app API is runtime/resolve.c.
 *
 * Bounds: DNS_QUERIES_MAX queries in flight (one per name and type: a
 * second lookup of a name in flight waits on the same query, and counts
 * as shared), DNS_LOOKUPS_MAX lookups waiting (more are refused at once,
 * -ENOSPC), every lookup ended by its deadline. A query asks one server at
 * a time, DNS_TRY_MS each, moving to the next on a timeout or a server's
 * failure (SERVFAIL, REFUSED, truncated) and round again while a lookup
 * waits; the server that answered last is asked first. A response that
 * fails the checks (another id, question, a forged or broken message) is
 * dropped and counted; the query goes on waiting for the real one.
 */
#ifndef VIREO_NET_DNS_CLIENT_H
#define VIREO_NET_DNS_CLIENT_H

#include "lib/types.h"
#include "net/clients/dns_cache.h"
#include "net/clients/dns_msg.h"

#define DNS_SERVERS_MAX 4		/* dns= (two) and a DHCP lease's (two) */
#define DNS_QUERIES_MAX 8		/* in flight, every lookup's */
#define DNS_LOOKUPS_MAX 16		/* waiting for an answer */
#define DNS_TRY_MS 1000			/* one server's time before the next is asked */
#define DNS_LOOKUP_MS_DEFAULT 5000	/* a lookup's deadline unless it gives one */
#define DNS_RESULT_MAX (2 * DNS_ADDRS_MAX)	/* IPv4 and IPv6 together */

/* Families a lookup wants (bits). */
#define DNS_WANT_A 1u
#define DNS_WANT_AAAA 2u

struct dns_addrs {
	u8 n;
	u8 alen[DNS_RESULT_MAX];	/* 4 or 16 */
	u8 addr[DNS_RESULT_MAX][16];
	u32 ttl;			/* seconds the answer is good for (the least) */
};

/* err: 0 (r->n >= 1: IPv4 addresses first, then IPv6), -ENOENT (no such
 * name, or no address of the families asked), -ETIMEDOUT (no answer by
 * the deadline), -EIO (every server failed), -ECANCELED (dns_client_stop). */
typedef void (*dns_done_fn)(void *ctx, int err, const struct dns_addrs *r);

struct dns_client_ops {
	/* Send msg[0..len) to server i (< nservers): 0, or negative. */
	int (*send)(void *arg, unsigned server, const u8 *msg, size_t len);
	u16 (*rand16)(void *arg);
};

struct dns_client_stats {
	u64 lookups;		/* asked */
	u64 cache_hits;		/* answered from the cache with addresses */
	u64 negative_hits;	/* answered from the cache: no such name or address */
	u64 shared;		/* waited on a query already in flight */
	u64 queries;		/* sent, retries included */
	u64 timeouts;		/* lookups ended by their deadline */
	u64 failovers;		/* a query moved to another server */
	u64 bad_responses;	/* dropped: failed the checks */
	u64 refused;		/* lookups refused at once: bounds, no server */
};

struct dns_query {
	char name[DNS_NAME_MAX + 1];	/* "" when free */
	u16 qtype, id;
	u8 server, asked, servfails;	/* asked: a bit per server */
	u64 next_ms;		/* when the next server is asked */
	u8 msg[DNS_QUERY_MAX];
	u16 msg_len;
};

struct dns_lookup {
	dns_done_fn done;	/* NULL when free */
	void *ctx;
	char name[DNS_NAME_MAX + 1];
	u8 want, pending;	/* families asked, and still unanswered */
	int err;		/* the first non-answer */
	u64 deadline_ms;
	struct dns_answer a[2];	/* A's and AAAA's, as they come */
};

struct dns_client {
	const struct dns_client_ops *ops;
	void *arg;
	u8 nservers, good;	/* servers, the one that answered last */
	struct dns_cache cache;
	struct dns_query q[DNS_QUERIES_MAX];
	struct dns_lookup l[DNS_LOOKUPS_MAX];
	struct dns_client_stats st;
};

void dns_client_init(struct dns_client *c, const struct dns_client_ops *ops, void *arg,
		     struct dns_cache_entry *cache, u32 cache_entries);
/* The servers' count (their addresses are the glue's). */
void dns_client_servers(struct dns_client *c, unsigned n);
/*
 * Looks name up for want (DNS_WANT_*) with a deadline timeout_ms (0: the
 * default) from now_ms. 1: answered from the cache, *err and *r set, done
 * not called. 0: done follows from dns_client_input() or dns_client_tick()
 * (never from this call). -EINVAL (a bad name or want), -ENOSPC
 * (DNS_LOOKUPS_MAX or DNS_QUERIES_MAX), -ENETUNREACH (no server).
 */
int dns_client_lookup(struct dns_client *c, const char *name, unsigned want, u32 timeout_ms, u64 now_ms,
		      dns_done_fn done, void *ctx, int *err, struct dns_addrs *r);
/* A datagram from server i. */
void dns_client_input(struct dns_client *c, unsigned server, const u8 *msg, size_t len, u64 now_ms);
/* Failovers and deadlines due at now_ms; the next time it needs a tick
 * (UINT64_MAX: nothing pending). */
u64 dns_client_tick(struct dns_client *c, u64 now_ms);
/* Every lookup ended (-ECANCELED). */
void dns_client_stop(struct dns_client *c);

#endif
