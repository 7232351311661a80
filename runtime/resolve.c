/*
 * The apps' resolver (include/vireo/net.h, vireo_resolve()): the engine
 * (net/clients/dns_client.c: cache, sharing, failover, deadlines) over one
 * UDP pcb on a random port, the servers from dns= and a DHCP lease
 * (net/clients/resolv.c), one lwIP timeout for its ticks. In a file of its
 * own, with its state allocated at the first lookup and its metrics hooked
 * in then (api_resolve_metrics), so an image whose apps never resolve links
 * none of it.
 *
 * Memory at the first lookup: the state (the engine's tables: 8 queries of
 * 548 B, 16 lookups of 624 B, about 15 KiB; 16 cached answers waiting for
 * the loop, 280 B each) and the cache (dns_cache_entries(): 408 B an entry,
 * one per MiB of memory within [16, 256]: 52 KiB at 128 MiB).
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "lib/metrics.h"
#include "lib/types.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "net/clients/dns_client.h"
#include "net/clients/resolv.h"
#include "runtime/api.h"
#include "runtime/resolve.h"
#include "runtime/services.h"
#include "vireo/net.h"

/* A cached answer waiting for the loop (vireo_resolve() never calls back
 * from inside itself). */
struct rs_hit {
	vireo_resolve_fn cb;	/* NULL: free */
	void *ctx;
	int err;
	struct dns_addrs r;
};

/* A lookup's own callback and context (the engine's ctx points here). */
struct rs_req {
	vireo_resolve_fn cb;	/* NULL: free */
	void *ctx;
};

static struct rs {
	struct dns_client dc;
	struct udp_pcb *pcb;
	ip_addr_t servers[DNS_SERVERS_MAX];
	struct rs_req req[DNS_LOOKUPS_MAX];
	struct rs_hit hits[VIREO_RESOLVE_PENDING];
	struct work work;
	u64 refused_egress;
	bool timer;
} *rs;

_Static_assert(VIREO_RESOLVE_MAX == DNS_RESULT_MAX && VIREO_RESOLVE_PENDING == DNS_LOOKUPS_MAX,
	       "the API's bounds are the engine's");

static void rs_deliver(vireo_resolve_fn cb, void *ctx, int err, const struct dns_addrs *r)
{
	struct vireo_addr a[DNS_RESULT_MAX];

	__builtin_memset(a, 0, sizeof a);
	for (unsigned i = 0; i < r->n; i++) {
		a[i].family = r->alen[i] == 4 ? VIREO_AF_INET : VIREO_AF_INET6;
		__builtin_memcpy(a[i].ip, r->addr[i], r->alen[i]);
	}
	cb(ctx, err, a, err ? 0 : r->n, err ? 0 : r->ttl);
}

static void rs_done(void *ctx, int err, const struct dns_addrs *r)
{
	struct rs_req *q = ctx;
	vireo_resolve_fn cb = q->cb;

	q->cb = NULL;
	rs_deliver(cb, q->ctx, err, r);
}

static void rs_tick(void *arg);

/* The timeout for the engine's next tick. */
static void rs_arm(u64 next)
{
	u64 now = svc_now_ms();

	if (rs->timer)
		sys_untimeout(rs_tick, NULL);
	rs->timer = next != UINT64_MAX;
	if (rs->timer)
		sys_timeout((u32)(next > now ? MIN(next - now, 60000u) : 1), rs_tick, NULL);
}

static void rs_tick(void *arg)
{
	(void)arg;
	rs->timer = false;
	rs_arm(dns_client_tick(&rs->dc, svc_now_ms()));
}

static int rs_send(void *arg, unsigned server, const u8 *msg, size_t len)
{
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16)len, PBUF_RAM);
	err_t err;

	(void)arg;
	if (!p)
		return -ENOMEM;
	pbuf_take(p, msg, (u16)len);
	err = udp_sendto(rs->pcb, p, &rs->servers[server], DNS_PORT);
	pbuf_free(p);
	return err == ERR_OK ? 0 : -EIO;
}

static u16 rs_rand16(void *arg)
{
	(void)arg;
	return (u16)random_u32();
}

static const struct dns_client_ops rs_ops = { rs_send, rs_rand16 };

/* A datagram: from a server, port 53, at most 512 bytes (no EDNS asked). */
static void rs_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16 port)
{
	u8 buf[DNS_UDP_MAX];
	unsigned i;

	(void)arg;
	(void)pcb;
	for (i = 0; i < rs->dc.nservers && !ip_addr_eq(&rs->servers[i], addr); i++)
		;
	if (i == rs->dc.nservers || port != DNS_PORT || p->tot_len > sizeof buf) {
		rs->dc.st.bad_responses++;
	} else {
		u16 n = pbuf_copy_partial(p, buf, p->tot_len, 0);

		dns_client_input(&rs->dc, i, buf, n, svc_now_ms());
		rs_arm(dns_client_tick(&rs->dc, svc_now_ms()));
	}
	pbuf_free(p);
}

/* Cached answers, to their callbacks from the loop. */
static void rs_work(void *arg)
{
	(void)arg;
	for (unsigned i = 0; i < VIREO_RESOLVE_PENDING; i++) {
		struct rs_hit *h = &rs->hits[i];
		vireo_resolve_fn cb = h->cb;

		if (!cb)
			continue;
		h->cb = NULL;
		rs_deliver(cb, h->ctx, h->err, &h->r);
	}
}

static void rs_metrics(struct metrics_buf *b)
{
	static const struct {
		const char *name, *help;
		u8 off;
	} m[] = {
#define RS_M(f, h) { "vireo_resolve_" #f "_total", h, offsetof(struct dns_client_stats, f) / 8 }
		RS_M(lookups, "Host names apps looked up."),
		RS_M(cache_hits, "Lookups answered from the cache with addresses."),
		RS_M(negative_hits, "Lookups answered from the cache: no such name or address (RFC 2308)."),
		RS_M(shared, "Lookups that waited on a query already in flight."),
		RS_M(queries, "DNS queries sent, retries included."),
		RS_M(timeouts, "Lookups ended by their deadline."),
		RS_M(failovers, "Queries moved to another server (a timeout or a server failure)."),
		RS_M(bad_responses, "DNS responses dropped: another id, question or server, or malformed."),
		RS_M(refused, "Lookups refused at once: the bounds, or no server."),
#undef RS_M
	};

	for (unsigned i = 0; i < ARRAY_SIZE(m); i++)
		metrics_simple(b, m[i].name, METRICS_COUNTER, m[i].help, ((const u64 *)&rs->dc.st)[m[i].off]);
	metrics_simple(b, "vireo_resolve_refused_egress_total", METRICS_COUNTER,
		       "Resolved addresses refused by the egress policy (egress.allow=).", rs->refused_egress);
}

static int rs_start(void)
{
	struct mm_stats ms;
	struct dns_cache_entry *cache;
	u32 n;

	mm_get_stats(&ms);
	n = dns_cache_entries(ms.total_frames * PAGE_SIZE);
	rs = kzalloc(sizeof *rs);
	cache = rs ? kzalloc((size_t)n * sizeof *cache) : NULL;
	if (rs)
		rs->pcb = udp_new_ip_type(IPADDR_TYPE_ANY);
	if (!cache || !rs->pcb) {
		if (rs && rs->pcb)
			udp_remove(rs->pcb);
		kfree(cache);
		kfree(rs);
		rs = NULL;
		return -ENOMEM;
	}
	/* A random port of the dynamic range (RFC 6335), with the random id:
	 * about 30 bits a forger has to guess. */
	for (int i = 0; i < 8; i++)
		if (udp_bind(rs->pcb, IP_ANY_TYPE, (u16)(49152 + random_u32() % 16384)) == ERR_OK)
			break;
	udp_recv(rs->pcb, rs_recv, NULL);
	dns_client_init(&rs->dc, &rs_ops, NULL, cache, n);
	work_init(&rs->work, rs_work, NULL);
	api_resolve_metrics = rs_metrics;
	return 0;
}

int vireo_resolve(const char *name, unsigned families, u32 timeout_ms, vireo_resolve_fn cb, void *ctx)
{
	struct rs_req *q = NULL;
	struct rs_hit *h = NULL;
	int r, err;
	struct dns_addrs res;

	if (!name || !cb || !families || (families & ~VIREO_RESOLVE_ANY)) {
		api_misuse("vireo_resolve: needs a name, a callback and VIREO_RESOLVE_* families: refused");
		return -EINVAL;
	}
	if (!rs && rs_start() < 0)
		return -ENOMEM;
	for (unsigned i = 0; i < DNS_QUERIES_MAX; i++)
		if (rs->dc.q[i].name[0])
			goto keep;	/* queries in flight: the servers' indices stay */
	dns_client_servers(&rs->dc, resolv_servers_list(rs->servers, DNS_SERVERS_MAX));
keep:
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX && !q; i++)
		if (!rs->req[i].cb)
			q = &rs->req[i];
	for (unsigned i = 0; i < VIREO_RESOLVE_PENDING && !h; i++)
		if (!rs->hits[i].cb)
			h = &rs->hits[i];
	if (!q || !h) {
		rs->dc.st.refused++;
		return -ENOSPC;
	}
	r = dns_client_lookup(&rs->dc, name, families, timeout_ms, svc_now_ms(), rs_done, q, &err, &res);
	if (r < 0)
		return r;
	if (r == 1) {
		h->cb = cb;
		h->ctx = ctx;
		h->err = err;
		h->r = res;
		work_queue(&rs->work);
		return 0;
	}
	q->cb = cb;
	q->ctx = ctx;
	rs_arm(dns_client_tick(&rs->dc, svc_now_ms()));
	return 0;
}

int vireo_resolve_stats(struct vireo_resolve_stats *st)
{
	const struct dns_client_stats *s;

	if (!rs || !st)
		return -ENOENT;
	s = &rs->dc.st;
	*st = (struct vireo_resolve_stats){
		.lookups = s->lookups, .cache_hits = s->cache_hits, .negative_hits = s->negative_hits,
		.shared = s->shared, .queries = s->queries, .timeouts = s->timeouts, .failovers = s->failovers,
		.bad_responses = s->bad_responses, .refused = s->refused, .refused_egress = rs->refused_egress,
	};
	return 0;
}

void resolve_refused_egress(void)
{
	if (rs)
		rs->refused_egress++;
}
