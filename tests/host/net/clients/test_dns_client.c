/* net/clients/dns_client.c over a scripted network: answers and the cache,
 * two lookups sharing a query, failover from a silent or failing server,
 * negative caching, deadlines, forged responses, the bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/clients/dns_client.h"

/* What was sent. */
static struct sent {
	unsigned server;
	u8 msg[DNS_QUERY_MAX];
	size_t len;
} sent[64];
static unsigned nsent;
static u16 next_id = 0x100;

static int fake_send(void *arg, unsigned server, const u8 *msg, size_t len)
{
	assert_true(nsent < 64);
	sent[nsent].server = server;
	memcpy(sent[nsent].msg, msg, len);
	sent[nsent++].len = len;
	return 0;
}

/* Ids in sequence from 0x100 (each test), but the second draw is 0x100
 * again: a clash with the first query when it is still in flight. */
static u16 fake_rand16(void *arg)
{
	return next_id == 0x101 ? 0x100 + (next_id++ - 0x101) : next_id++;
}

static const struct dns_client_ops ops = { fake_send, fake_rand16 };

/* What was delivered. */
static struct done {
	int calls, err;
	struct dns_addrs r;
} dn[4];

static void on_done(void *ctx, int err, const struct dns_addrs *r)
{
	struct done *d = ctx;

	d->calls++;
	d->err = err;
	d->r = *r;
}

static struct dns_client cl;
static struct dns_cache_entry cache[DNS_CACHE_MIN];

static int setup(void **state)
{
	dns_client_init(&cl, &ops, NULL, cache, DNS_CACHE_MIN);
	dns_client_servers(&cl, 2);
	nsent = 0;
	next_id = 0x100;
	memset(dn, 0, sizeof dn);
	return 0;
}

/* The response to sent[k]: its question, rcode, one address (last byte
 * `last`) or an SOA (negative), TTL ttl. */
static size_t reply(unsigned k, unsigned rcode, u8 last, u32 ttl, u8 *out)
{
	size_t n = sent[k].len;
	u16 qtype = (u16)(sent[k].msg[n - 4] << 8 | sent[k].msg[n - 3]);
	unsigned alen = qtype == DNS_TYPE_AAAA ? 16 : 4;

	memcpy(out, sent[k].msg, n);
	out[2] = 0x81;
	out[3] = (u8)(0x80 | rcode);
	if (rcode == 0 && last) {
		out[7] = 1;
		u8 rr[] = { 0xc0, 12, 0, (u8)qtype, 0, 1, (u8)(ttl >> 24), (u8)(ttl >> 16), (u8)(ttl >> 8), (u8)ttl, 0,
			    (u8)alen };
		memcpy(out + n, rr, sizeof rr);
		n += sizeof rr;
		memset(out + n, 0, alen);
		out[n + alen - 1] = last;
		n += alen;
	} else if (rcode == 0 || rcode == 3) {
		out[9] = 1;
		u8 soa[] = { 0, 0, 6, 0, 1, (u8)(ttl >> 24), (u8)(ttl >> 16), (u8)(ttl >> 8), (u8)ttl, 0, 22, 0, 0 };
		memcpy(out + n, soa, sizeof soa);
		n += sizeof soa;
		memset(out + n, 0, 16);
		n += 16;
		out[n++] = (u8)(ttl >> 24);
		out[n++] = (u8)(ttl >> 16);
		out[n++] = (u8)(ttl >> 8);
		out[n++] = (u8)ttl;
	}
	return n;
}

static void deliver(unsigned k, unsigned from, unsigned rcode, u8 last, u32 ttl, u64 now)
{
	u8 m[600];
	size_t n = reply(k, rcode, last, ttl, m);
	u8 *copy = malloc(n);

	memcpy(copy, m, n);
	dns_client_input(&cl, from, copy, n, now);
	free(copy);
}

static int lookup(const char *name, unsigned want, u64 now, struct done *d, int *err, struct dns_addrs *r)
{
	return dns_client_lookup(&cl, name, want, 0, now, on_done, d, err, r);
}

static void test_answer_then_cache(void **state)
{
	int err = 1;
	struct dns_addrs r;

	assert_int_equal(lookup("Host.Example", DNS_WANT_A, 1000, &dn[0], &err, &r), 0);
	assert_int_equal(nsent, 1);
	assert_int_equal(sent[0].server, 0);
	assert_int_equal(dn[0].calls, 0);
	deliver(0, 0, 0, 7, 60, 1100);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].err, 0);
	assert_int_equal(dn[0].r.n, 1);
	assert_int_equal(dn[0].r.alen[0], 4);
	assert_int_equal(dn[0].r.addr[0][3], 7);
	assert_int_equal(dn[0].r.ttl, 60);
	/* Again: from the cache, at once, nothing sent, the TTL counting down. */
	assert_int_equal(lookup("host.example.", DNS_WANT_A, 31100, &dn[1], &err, &r), 1);
	assert_int_equal(nsent, 1);
	assert_int_equal(err, 0);
	assert_int_equal(r.addr[0][3], 7);
	assert_int_equal(r.ttl, 30);
	assert_int_equal(cl.st.cache_hits, 1);
	assert_int_equal(cl.st.lookups, 2);
	/* Past its TTL: asked again (with another id). */
	next_id = 0x200;
	assert_int_equal(lookup("host.example", DNS_WANT_A, 61100, &dn[1], &err, &r), 0);
	assert_int_equal(nsent, 2);
	/* A late duplicate of the first answer (its id is done): dropped. */
	deliver(0, 0, 0, 9, 60, 61200);
	assert_int_equal(cl.st.bad_responses, 1);
	assert_int_equal(dn[1].calls, 0);
}

static void test_shared(void **state)
{
	int err;
	struct dns_addrs r;

	assert_int_equal(lookup("x.example", DNS_WANT_A, 0, &dn[0], &err, &r), 0);
	assert_int_equal(lookup("X.example", DNS_WANT_A, 10, &dn[1], &err, &r), 0);
	assert_int_equal(nsent, 1);	/* one query for both */
	assert_int_equal(cl.st.shared, 1);
	/* Another name while one is in flight never gets its id. */
	assert_int_equal(lookup("y.example", DNS_WANT_A, 10, &dn[2], &err, &r), 0);
	assert_int_equal(nsent, 2);
	assert_true((sent[0].msg[0] << 8 | sent[0].msg[1]) != (sent[1].msg[0] << 8 | sent[1].msg[1]));
	deliver(0, 0, 0, 3, 60, 20);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[1].calls, 1);
	assert_int_equal(dn[1].r.addr[0][3], 3);
}

static void test_failover(void **state)
{
	int err;
	struct dns_addrs r;
	u64 next;

	assert_int_equal(lookup("f.example", DNS_WANT_A, 0, &dn[0], &err, &r), 0);
	next = dns_client_tick(&cl, 500);
	assert_int_equal(next, DNS_TRY_MS);
	assert_int_equal(nsent, 1);
	dns_client_tick(&cl, DNS_TRY_MS);	/* server 0 silent: server 1 asked */
	assert_int_equal(nsent, 2);
	assert_int_equal(sent[1].server, 1);
	assert_int_equal(cl.st.failovers, 1);
	/* The answer from a server never asked this query is not taken. */
	dns_client_servers(&cl, 3);
	deliver(1, 2, 0, 4, 60, 1100);
	assert_int_equal(dn[0].calls, 0);
	deliver(1, 1, 0, 4, 60, 1200);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].err, 0);
	/* The server that answered is asked first from now on. */
	assert_int_equal(lookup("g.example", DNS_WANT_A, 2000, &dn[1], &err, &r), 0);
	assert_int_equal(sent[2].server, 1);
}

/* SERVFAIL moves on at once; every server failing ends the lookup -EIO. */
static void test_servfail(void **state)
{
	int err;
	struct dns_addrs r;

	assert_int_equal(lookup("s.example", DNS_WANT_A, 0, &dn[0], &err, &r), 0);
	deliver(0, 0, 2, 0, 0, 10);
	assert_int_equal(nsent, 2);
	assert_int_equal(sent[1].server, 1);
	deliver(1, 1, 5, 0, 0, 20);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].err, -EIO);
}

static void test_negative(void **state)
{
	int err;
	struct dns_addrs r;

	assert_int_equal(lookup("nope.example", DNS_WANT_A, 0, &dn[0], &err, &r), 0);
	deliver(0, 0, 3, 0, 60, 10);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].err, -ENOENT);
	assert_int_equal(lookup("nope.example", DNS_WANT_A, 59000, &dn[1], &err, &r), 1);
	assert_int_equal(err, -ENOENT);
	assert_int_equal(cl.st.negative_hits, 1);
	assert_int_equal(nsent, 1);
	assert_int_equal(lookup("nope.example", DNS_WANT_A, 60010, &dn[1], &err, &r), 0);
	assert_int_equal(nsent, 2);
}

/* A and AAAA together: IPv4 first whatever order they come in; a NODATA
 * for one family still gives the other's addresses. */
static void test_both(void **state)
{
	int err;
	struct dns_addrs r;

	assert_int_equal(lookup("two.example", DNS_WANT_A | DNS_WANT_AAAA, 0, &dn[0], &err, &r), 0);
	assert_int_equal(nsent, 2);
	deliver(1, 0, 0, 6, 300, 10);	/* AAAA first */
	assert_int_equal(dn[0].calls, 0);
	deliver(0, 0, 0, 4, 100, 20);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].r.n, 2);
	assert_int_equal(dn[0].r.alen[0], 4);
	assert_int_equal(dn[0].r.alen[1], 16);
	assert_int_equal(dn[0].r.addr[1][15], 6);
	assert_int_equal(dn[0].r.ttl, 100);

	assert_int_equal(lookup("four.example", DNS_WANT_A | DNS_WANT_AAAA, 100, &dn[1], &err, &r), 0);
	deliver(3, 0, 0, 0, 60, 110);	/* AAAA: NODATA */
	deliver(2, 0, 0, 8, 60, 120);
	assert_int_equal(dn[1].err, 0);
	assert_int_equal(dn[1].r.n, 1);
	/* Both cached now: one from each family's entry. */
	assert_int_equal(lookup("four.example", DNS_WANT_A | DNS_WANT_AAAA, 200, &dn[2], &err, &r), 1);
	assert_int_equal(r.n, 1);
}

/* The deadline ends the lookup; the query stops being retried. */
static void test_deadline(void **state)
{
	int err;
	struct dns_addrs r;
	unsigned before;

	assert_int_equal(dns_client_lookup(&cl, "slow.example", DNS_WANT_A, 2500, 0, on_done, &dn[0], &err, &r), 0);
	for (u64 t = 0; t < 2500; t += 100)
		dns_client_tick(&cl, t);
	assert_int_equal(dn[0].calls, 0);
	assert_int_equal(nsent, 3);	/* 0, then 1 at 1 s, 0 again at 2 s */
	assert_int_equal(dns_client_tick(&cl, 2500), UINT64_MAX);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].err, -ETIMEDOUT);
	assert_int_equal(cl.st.timeouts, 1);
	before = nsent;
	dns_client_tick(&cl, 10000);
	assert_int_equal(nsent, before);
}

/* Forged answers (another id, another name, garbage) are dropped and the
 * real one still taken. */
static void test_forged(void **state)
{
	int err;
	struct dns_addrs r;
	u8 m[600];
	size_t n;

	assert_int_equal(lookup("bank.example", DNS_WANT_A, 0, &dn[0], &err, &r), 0);
	n = reply(0, 0, 66, 3600, m);
	m[1] ^= 0x55;
	dns_client_input(&cl, 0, m, n, 1);
	n = reply(0, 0, 66, 3600, m);
	m[13] = 'c';	/* "cank.example" */
	dns_client_input(&cl, 0, m, n, 2);
	n = reply(0, 0, 66, 3600, m);
	m[5] = 2;	/* two questions */
	dns_client_input(&cl, 0, m, n, 3);
	dns_client_input(&cl, 0, m, 1, 4);
	assert_int_equal(cl.st.bad_responses, 4);
	assert_int_equal(dn[0].calls, 0);
	deliver(0, 0, 0, 10, 60, 5);
	assert_int_equal(dn[0].calls, 1);
	assert_int_equal(dn[0].r.addr[0][3], 10);
}

static void test_bounds(void **state)
{
	static struct done many[DNS_LOOKUPS_MAX + 1];
	int err;
	struct dns_addrs r;
	char name[32];

	assert_int_equal(lookup("", DNS_WANT_A, 0, &dn[0], &err, &r), -EINVAL);
	assert_int_equal(lookup("a.example", 4, 0, &dn[0], &err, &r), -EINVAL);
	/* DNS_QUERIES_MAX names in flight; one more is refused. */
	for (unsigned i = 0; i < DNS_QUERIES_MAX; i++) {
		snprintf(name, sizeof name, "n%u.example", i);
		assert_int_equal(lookup(name, DNS_WANT_A, 0, &many[i], &err, &r), 0);
	}
	assert_int_equal(lookup("more.example", DNS_WANT_A, 0, &dn[0], &err, &r), -ENOSPC);
	/* Lookups of a name in flight share it, up to DNS_LOOKUPS_MAX. */
	for (unsigned i = DNS_QUERIES_MAX; i < DNS_LOOKUPS_MAX; i++)
		assert_int_equal(lookup("n0.example", DNS_WANT_A, 0, &many[i], &err, &r), 0);
	assert_int_equal(lookup("n0.example", DNS_WANT_A, 0, &many[DNS_LOOKUPS_MAX], &err, &r), -ENOSPC);
	assert_int_equal(cl.st.refused, 2);
	assert_int_equal(nsent, DNS_QUERIES_MAX);
	/* The deadline frees them all. */
	dns_client_tick(&cl, DNS_LOOKUP_MS_DEFAULT);
	for (unsigned i = 0; i < DNS_LOOKUPS_MAX; i++)
		assert_int_equal(many[i].err, -ETIMEDOUT);
	assert_int_equal(lookup("more.example", DNS_WANT_A, 6000, &dn[0], &err, &r), 0);
	dns_client_servers(&cl, 0);
	assert_int_equal(lookup("none.example", DNS_WANT_A, 6000, &dn[1], &err, &r), -ENETUNREACH);
	dns_client_stop(&cl);
	assert_int_equal(dn[0].err, -ECANCELED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_answer_then_cache, setup),
		cmocka_unit_test_setup(test_shared, setup),
		cmocka_unit_test_setup(test_failover, setup),
		cmocka_unit_test_setup(test_servfail, setup),
		cmocka_unit_test_setup(test_negative, setup),
		cmocka_unit_test_setup(test_both, setup),
		cmocka_unit_test_setup(test_deadline, setup),
		cmocka_unit_test_setup(test_forged, setup),
		cmocka_unit_test_setup(test_bounds, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
