/* apps/dns: the engine (dnsmsg.c) against apps/dns/tests/rfc.zone, the zone
 * the differential test also gives NSD: RFC 4592 wildcards (its own example,
 * section 2.2.1, query by query), RFC 9471 glue (all in-domain glue or TC),
 * the DO bit copied (RFC 3225), CNAME loops and the chain bound, DS at a
 * delegation (RFC 4035 3.1.4.1), a CNAME into a delegation, SRV, PTR, CAA,
 * SVCB/HTTPS, DS and RFC 3597 types, EDNS sizes, NSID (RFC 5001), cookies
 * (RFC 7873/9018) and CHAOS; and zone images that must be refused
 * (zone.c). Responses are read back by a decoder of this file's own. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apps/dns/dnsmsg.h"
#include "apps/dns/zone.h"
#include "lib/byteorder.h"
#include "apps/dns/tests/dnsq.h"
#include "lib/crypto/siphash.h"

static struct dns_zone zone;
static struct dns_server srv;
static u8 peer_addr[4] = { 198, 51, 100, 7 };
static struct dns_peer peer = { .addr = peer_addr, .alen = 4, .now_s = 100000 };

static void reset_server(void)
{
	static const u8 key[16] = "cookie secret 16";

	memset(&srv, 0, sizeof srv);
	srv.zone = &zone;
	siphash_key_from_bytes(&srv.cookie_key, key);
	srv.version = "vireo";
	srv.id = "vireo";
	peer.addr = peer_addr;
	peer.now_s = 100000;
}

static int setup(void **state)
{
	reset_server();
	return 0;
}

/* ---- queries ---- */

struct qopt {
	int edns;		/* UDP size, -1: no OPT */
	bool do_bit;
	const u8 *opts;		/* EDNS options, raw */
	size_t opts_len;
	u16 qclass;		/* 0: IN */
};

static size_t mkq(u8 *q, const char *name, u16 qtype, const struct qopt *o)
{
	static const struct qopt def = { .edns = -1 };
	size_t n;

	if (!o)
		o = &def;
	memset(q, 0, 12);
	put_be16(q, 0x5151);
	put_be16(q + 4, 1);
	n = 12 + dnsq_put_name(q + 12, name);
	put_be16(q + n, qtype);
	put_be16(q + n + 2, o->qclass ? o->qclass : DNS_CLASS_IN);
	n += 4;
	if (o->edns >= 0) {
		put_be16(q + 10, 1);
		q[n] = 0;
		put_be16(q + n + 1, DNS_TYPE_OPT);
		put_be16(q + n + 3, (u16)o->edns);
		q[n + 5] = 0;
		q[n + 6] = 0;
		q[n + 7] = o->do_bit ? 0x80 : 0;
		q[n + 8] = 0;
		put_be16(q + n + 9, (u16)o->opts_len);
		if (o->opts_len)
			memcpy(q + n + 11, o->opts, o->opts_len);
		n += 11 + o->opts_len;
	}
	return n;
}

/* ---- responses ---- */

struct rrv {
	char name[300];
	u16 type, cls;
	u32 ttl;
	u16 rdlen;
	size_t rdoff;
	char target[300];	/* the name in NS, CNAME, PTR, MX rdata */
	int section;		/* 0 answer, 1 authority, 2 additional */
};

struct msgv {
	u8 b2, b3;
	u16 an, ns, ar;
	struct rrv rr[80];
	unsigned nrr;
	size_t len;
	const u8 *m;
	int opt;		/* index of the OPT, -1 */
};

static size_t rdname(const u8 *m, size_t len, size_t off, char *out)
{
	size_t end = 0, o = off, n = 0;
	unsigned hops = 0;

	out[0] = 0;
	for (;;) {
		u8 l;

		assert_true(o < len);
		l = m[o];
		if ((l & 0xc0) == 0xc0) {
			size_t to;

			assert_true(o + 1 < len);
			to = (size_t)(l & 0x3f) << 8 | m[o + 1];
			assert_true(to < o);
			if (!end)
				end = o + 2;
			o = to;
			assert_true(++hops < 64);
			continue;
		}
		assert_int_equal(l & 0xc0, 0);
		if (l == 0)
			break;
		assert_true(o + 1 + l <= len);
		for (unsigned i = 0; i < l; i++) {
			char c = (char)m[o + 1 + i];

			out[n++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
		}
		out[n++] = '.';
		assert_true(n < 270);
		o += l + 1u;
	}
	if (n == 0)
		out[n++] = '.';
	out[n] = 0;
	return end ? end : o + 1;
}

static void decode(const u8 *m, size_t len, struct msgv *v)
{
	size_t o = 12;
	char qn[300];

	memset(v, 0, sizeof *v);
	v->m = m;
	v->opt = -1;
	assert_true(len >= 12);
	v->len = len;
	v->b2 = m[2];
	v->b3 = m[3];
	v->an = get_be16(m + 6);
	v->ns = get_be16(m + 8);
	v->ar = get_be16(m + 10);
	if (get_be16(m + 4)) {
		o = rdname(m, len, o, qn);
		o += 4;
	}
	for (unsigned i = 0; i < (unsigned)v->an + v->ns + v->ar; i++) {
		struct rrv *r = &v->rr[v->nrr++];

		assert_true(v->nrr <= 80);
		o = rdname(m, len, o, r->name);
		assert_true(o + 10 <= len);
		r->type = get_be16(m + o);
		r->cls = get_be16(m + o + 2);
		r->ttl = get_be32(m + o + 4);
		r->rdlen = get_be16(m + o + 8);
		r->section = i < v->an ? 0 : i < (unsigned)v->an + v->ns ? 1 : 2;
		o += 10;
		r->rdoff = o;
		assert_true(o + r->rdlen <= len);
		if (r->type == DNS_TYPE_NS || r->type == DNS_TYPE_CNAME || r->type == DNS_TYPE_PTR)
			assert_int_equal(rdname(m, len, o, r->target), o + r->rdlen);
		if (r->type == DNS_TYPE_MX)
			assert_int_equal(rdname(m, len, o + 2, r->target), o + r->rdlen);
		if (r->type == DNS_TYPE_OPT)
			v->opt = (int)(v->nrr - 1);
		o += r->rdlen;
	}
	assert_int_equal(o, len);
}

static u8 resp[70000];

static size_t ask(const char *name, u16 qtype, const struct qopt *o, bool tcp, size_t cap, struct msgv *v,
		  struct dns_result *res)
{
	u8 q[600];
	struct dns_result r;
	size_t ql = mkq(q, name, qtype, o);
	size_t n = dns_respond(&srv, &peer, q, ql, resp, cap, tcp, res ? res : &r);

	if (n)
		decode(resp, n, v);
	return n;
}

#define RCODE(v) ((v)->b3 & 0xf)
#define AA(v) (((v)->b2 & 0x04) != 0)
#define TC(v) (((v)->b2 & 0x02) != 0)

static unsigned count(const struct msgv *v, int section, u16 type)
{
	unsigned c = 0;

	for (unsigned i = 0; i < v->nrr; i++)
		c += v->rr[i].section == section && (type == 0 || v->rr[i].type == type);
	return c;
}

/* The index of the first record of type with name in section, or -1. */
static int find(const struct msgv *v, int section, const char *name, u16 type)
{
	for (unsigned i = 0; i < v->nrr; i++)
		if (v->rr[i].section == section && v->rr[i].type == type && !strcmp(v->rr[i].name, name))
			return (int)i;
	return -1;
}

static void expect_soa_only(const struct msgv *v, int rcode)
{
	assert_int_equal(RCODE(v), rcode);
	assert_true(AA(v));
	assert_int_equal(v->an, 0);
	assert_int_equal(v->ns, 1);
	assert_int_equal(v->rr[0].type, DNS_TYPE_SOA);
	assert_string_equal(v->rr[0].name, "example.");
	assert_int_equal(v->rr[0].ttl, 300);
}

/* ---- RFC 4592 ---- */

/* Section 2.2.1's queries, each with the answer the RFC gives. */
static void test_rfc4592_examples(void **state)
{
	struct msgv v;
	int i;

	/* host3.example. MX: synthesized from *.example., owner host3. */
	assert_true(ask("host3.example", DNS_TYPE_MX, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_true(AA(&v));
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].name, "host3.example.");
	assert_string_equal(v.rr[0].target, "host1.example.");
	assert_true(find(&v, 2, "host1.example.", DNS_TYPE_A) >= 0);	/* its exchange's address */
	/* host3.example. A: the wildcard has no A: NODATA. */
	assert_true(ask("host3.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	/* foo.bar.example. TXT: two labels below, synthesized. */
	assert_true(ask("foo.bar.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].name, "foo.bar.example.");
	assert_memory_equal(resp + v.rr[0].rdoff, "\x12this is a wildcard", 19);
	/* host1.example. MX: the name exists, so no wildcard: NODATA. */
	assert_true(ask("host1.example", DNS_TYPE_MX, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	/* sub.*.example. MX: an ordinary name (a '*' not first): NODATA. */
	assert_true(ask("sub.*.example", DNS_TYPE_MX, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	assert_true(ask("sub.*.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL));
	assert_memory_equal(resp + v.rr[0].rdoff, "\x16this is not a wildcard", 23);
	/* _telnet._tcp.host1.example. SRV: closest encloser _tcp.host1, no
	 * wildcard there: NXDOMAIN. */
	assert_true(ask("_telnet._tcp.host1.example", DNS_TYPE_SRV, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NXDOMAIN);
	/* host.subdel.example. A: a referral, the wildcard plays no part. */
	assert_true(ask("host.subdel.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_false(AA(&v));
	assert_int_equal(v.an, 0);
	assert_int_equal(count(&v, 1, DNS_TYPE_NS), 2);
	/* ghost.*.example. MX: closest encloser *.example, which has no
	 * "*" child: NXDOMAIN. */
	assert_true(ask("ghost.*.example", DNS_TYPE_MX, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NXDOMAIN);
	/* The wildcard's own name is asked for like any other. */
	assert_true(ask("*.example", DNS_TYPE_MX, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].name, "*.example.");
	/* ANY over TCP: every RRset of the wildcard, synthesized. */
	assert_true(ask("any.example", DNS_TYPE_ANY, NULL, true, 4096, &v, NULL));
	assert_int_equal(v.an, 2);
	i = find(&v, 0, "any.example.", DNS_TYPE_TXT);
	assert_true(i >= 0 && find(&v, 0, "any.example.", DNS_TYPE_MX) >= 0);
}

static void test_wildcard_kinds(void **state)
{
	struct msgv v;

	/* A wildcard with addresses; the query's case kept in the question,
	 * the owner is the question's name (a pointer to it). */
	assert_true(ask("Some.Thing.W1.example", DNS_TYPE_AAAA, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].name, "some.thing.w1.example.");
	assert_int_equal(get_be16(resp + 12 + 23 + 4), 0xc00c);
	/* A wildcard CNAME followed in the zone. */
	assert_true(ask("a.wc.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 2);
	assert_string_equal(v.rr[0].name, "a.wc.example.");
	assert_string_equal(v.rr[0].target, "host1.example.");
	assert_string_equal(v.rr[1].name, "host1.example.");
	/* ...to another wildcard. */
	assert_true(ask("z.ww.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 2);
	assert_string_equal(v.rr[1].name, "next.w1.example.");
	assert_memory_equal(resp + v.rr[1].rdoff, "\xc0\x00\x02\x65", 4);
	/* ...and out of the zone: the CNAME alone. */
	assert_true(ask("q.wx.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].target, "www.elsewhere.test.");
	/* Asked for the CNAME type: the synthesized CNAME, not followed. */
	assert_true(ask("a.wc.example", DNS_TYPE_CNAME, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	/* *.w3 is an empty non-terminal (only x.*.w3 has data): it still
	 * covers names below w3, which get NODATA, not NXDOMAIN. */
	assert_true(ask("q.w3.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	assert_true(ask("r.q.w3.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	assert_true(ask("x.*.w3.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	/* Empty non-terminals: NODATA; below them, with no wildcard at the
	 * closest encloser (ent), NXDOMAIN even though *.example exists. */
	assert_true(ask("b.ent.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	assert_true(ask("ent.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	assert_true(ask("zz.ent.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NXDOMAIN);
	/* A name that does not exist directly below the apex: the apex's
	 * wildcard answers. */
	assert_true(ask("nope.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
}

/* ---- delegations ---- */

static void test_rfc9471_glue(void **state)
{
	struct msgv v;
	struct dns_result res;
	struct qopt e = { .edns = 1232 };

	/* 13 NS and 26 in-domain addresses do not fit 512 bytes: TC, not a
	 * referral with some servers' addresses missing. */
	assert_true(ask("www.big.example", DNS_TYPE_A, NULL, false, 512, &v, &res));
	assert_true(res.referral);
	assert_false(AA(&v));
	assert_true(TC(&v));
	assert_true(v.len <= 512);
	/* With EDNS 1232 it all fits: every server, both its addresses. */
	assert_true(ask("www.big.example", DNS_TYPE_A, &e, false, 1232, &v, &res));
	assert_false(TC(&v));
	assert_int_equal(count(&v, 1, DNS_TYPE_NS), 13);
	assert_int_equal(count(&v, 2, DNS_TYPE_A), 13);
	assert_int_equal(count(&v, 2, DNS_TYPE_AAAA), 13);
	for (char c = 'a'; c <= 'm'; c++) {
		char n[32];

		snprintf(n, sizeof n, "%c.ns.big.example.", c);
		assert_true(find(&v, 2, n, DNS_TYPE_A) >= 0);
		assert_true(find(&v, 2, n, DNS_TYPE_AAAA) >= 0);
	}
	/* Over TCP too. */
	assert_true(ask("big.example", DNS_TYPE_NS, NULL, true, 8192, &v, &res));
	assert_false(TC(&v));
	assert_int_equal(count(&v, 2, 0), 26);
	/* In-domain glue (ns.sec) and sibling glue (ns1, mail: in the zone,
	 * not below the cut) when it fits. */
	assert_true(ask("a.sec.example", DNS_TYPE_A, NULL, false, 512, &v, &res));
	assert_false(TC(&v));
	assert_int_equal(count(&v, 1, DNS_TYPE_NS), 3);
	assert_true(find(&v, 2, "ns.sec.example.", DNS_TYPE_A) >= 0);
	assert_true(find(&v, 2, "ns1.example.", DNS_TYPE_A) >= 0);
	assert_true(find(&v, 2, "ns1.example.", DNS_TYPE_AAAA) >= 0);
	assert_true(find(&v, 2, "mail.example.", DNS_TYPE_A) >= 0);
	/* No DS in a referral: nothing here is signed. */
	assert_int_equal(count(&v, 1, DNS_TYPE_DS), 0);
}

/* RFC 4035 3.1.4.1: DS at a delegation is the parent's, answered
 * authoritatively from this side; below the cut it is a referral. */
static void test_ds_at_delegation(void **state)
{
	struct msgv v;
	struct dns_result res;

	assert_true(ask("sec.example", DNS_TYPE_DS, NULL, false, 512, &v, &res));
	assert_false(res.referral);
	assert_int_equal(RCODE(&v), 0);
	assert_true(AA(&v));
	assert_int_equal(v.an, 1);
	assert_int_equal(v.rr[0].type, DNS_TYPE_DS);
	assert_int_equal(v.rr[0].rdlen, 4 + 32);
	assert_memory_equal(resp + v.rr[0].rdoff, "\x30\x39\x0d\x02\x49\xfd", 6);
	/* A delegation without DS: NODATA from the parent side. */
	assert_true(ask("big.example", DNS_TYPE_DS, NULL, false, 512, &v, &res));
	assert_false(res.referral);
	expect_soa_only(&v, DNS_RCODE_NOERROR);
	/* Below the cut, and other types at it: referrals. */
	assert_true(ask("ns.sec.example", DNS_TYPE_DS, NULL, false, 512, &v, &res));
	assert_true(res.referral);
	assert_true(ask("sec.example", DNS_TYPE_A, NULL, false, 512, &v, &res));
	assert_true(res.referral);
	assert_int_equal(count(&v, 1, DNS_TYPE_DS), 0);
	/* At the apex: this zone has no DS of its own (it is the parent's). */
	assert_true(ask("example", DNS_TYPE_DS, NULL, false, 512, &v, &res));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
}

/* ---- CNAME chains ---- */

static void test_cname_chains(void **state)
{
	struct msgv v;
	struct dns_result res;

	/* In the zone, to the address. */
	assert_true(ask("c1.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 4);
	assert_int_equal(v.rr[3].type, DNS_TYPE_A);
	/* Out of the zone: the CNAME, NOERROR, for the resolver to follow. */
	assert_true(ask("cx.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 1);
	assert_int_equal(v.ns, 0);
	/* To a name that does not exist: the CNAME and NXDOMAIN (RFC 6604). */
	assert_true(ask("cn.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_NXDOMAIN);
	assert_true(AA(&v));
	assert_int_equal(v.an, 1);
	assert_int_equal(count(&v, 1, DNS_TYPE_SOA), 1);
	/* A loop: each CNAME once, NOERROR (not written to the hop bound). */
	assert_true(ask("loop1.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 2);
	assert_int_equal(v.ns, 0);
	assert_true(ask("self.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].target, "self.example.");
	/* Ten links: the first DNS_CNAME_HOPS written, NOERROR, the resolver
	 * asks on from the last target (it used to be SERVFAIL). */
	assert_true(ask("l1.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, DNS_CNAME_HOPS);
	assert_int_equal(count(&v, 0, DNS_TYPE_CNAME), DNS_CNAME_HOPS);
	assert_string_equal(v.rr[DNS_CNAME_HOPS - 1].target, "l9.example.");
	assert_true(ask("l3.example", DNS_TYPE_A, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 9);	/* 8 links and the address */
	/* Into a delegation: the CNAME, then the child's referral; the CNAME
	 * is ours, so AA stays (as NSD and BIND answer). */
	assert_true(ask("cd.example", DNS_TYPE_A, &(struct qopt){ .edns = 1232 }, false, 1232, &v, &res));
	assert_int_equal(RCODE(&v), 0);
	assert_true(AA(&v));
	assert_true(res.referral);
	assert_int_equal(v.an, 1);
	assert_int_equal(count(&v, 1, DNS_TYPE_NS), 13);
	assert_int_equal(count(&v, 2, DNS_TYPE_A), 13);
}

/* ---- EDNS ---- */

static void test_do_bit_copied(void **state)
{
	struct msgv v;
	struct qopt e = { .edns = 1232, .do_bit = true };

	assert_true(ask("host1.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_true(v.opt >= 0);
	assert_int_equal(v.rr[v.opt].ttl & 0x8000, 0x8000);	/* DO: the TTL's bit 15 */
	assert_int_equal(v.rr[v.opt].cls, DNS_UDP_MAX);
	e.do_bit = false;
	assert_true(ask("host1.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_int_equal(v.rr[v.opt].ttl & 0x8000, 0);
	/* On negative answers and referrals too. */
	e.do_bit = true;
	assert_true(ask("zz.ent.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_int_equal(v.rr[v.opt].ttl & 0x8000, 0x8000);
	assert_true(ask("x.sec.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_int_equal(v.rr[v.opt].ttl & 0x8000, 0x8000);
}

static void test_edns_sizes(void **state)
{
	struct msgv v;
	struct qopt e = { .edns = 4096 };
	size_t n;

	/* Five 210-byte TXT records: over 512, within 1232. */
	n = ask("mid.example", DNS_TYPE_TXT, NULL, false, 512, &v, NULL);
	assert_true(TC(&v) && n <= 512);
	n = ask("mid.example", DNS_TYPE_TXT, &e, false, 1232, &v, NULL);
	assert_false(TC(&v));
	assert_int_equal(v.an, 5);
	assert_true(n > 512 && n <= 1232);
	/* Twelve 247-byte ones: over 1232, whole over TCP. */
	n = ask("big-txt.example", DNS_TYPE_TXT, &e, false, 1232, &v, NULL);
	assert_true(TC(&v) && n <= 1232);
	assert_true(ask("big-txt.example", DNS_TYPE_TXT, NULL, true, 8192, &v, NULL));
	assert_false(TC(&v));
	assert_int_equal(v.an, 12);
}

/* ---- record types ---- */

static void test_types(void **state)
{
	struct msgv v;
	int i;

	/* SRV: the in-zone target's address in additional, the other not;
	 * its target is not compressed (RFC 2782, RFC 3597 4). */
	assert_true(ask("_sip._udp.example", DNS_TYPE_SRV, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 2);
	assert_int_equal(count(&v, 2, DNS_TYPE_A), 1);
	assert_true(find(&v, 2, "mail.example.", DNS_TYPE_A) >= 0);
	i = find(&v, 0, "_sip._udp.example.", DNS_TYPE_SRV);
	assert_int_equal(get_be16(resp + v.rr[i].rdoff), 10);
	assert_int_equal(get_be16(resp + v.rr[i].rdoff + 4), 5060);
	assert_memory_equal(resp + v.rr[i].rdoff + 6, "\4mail\7example\0", 14);
	/* PTR: its name compressed. */
	assert_true(ask("10.2.0.192.in-addr.example", DNS_TYPE_PTR, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].target, "host1.example.");
	assert_true(v.rr[0].rdlen < 14);
	/* CAA: flags, tag, value. */
	assert_true(ask("example", 257, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 2);
	assert_memory_equal(resp + v.rr[0].rdoff, "\0\5issueca.example.net", 21);
	assert_memory_equal(resp + v.rr[1].rdoff, "\x80\3tbsUnknown", 12);
	/* HTTPS and SVCB: priority, target whole, parameters sorted by key. */
	assert_true(ask("example", 65, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_memory_equal(resp + v.rr[0].rdoff,
			    "\0\1\0" "\0\1\0\6\2h2\2h3" "\0\4\0\4\xc0\0\2\x0a" "\0\6\0\x10 \1\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x10",
			    3 + 10 + 8 + 20);
	assert_true(ask("svc.example", 64, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 2);
	assert_memory_equal(resp + v.rr[0].rdoff, "\0\1\5host1\7example\0" "\0\0\0\4\0\1\0\3", 2 + 15 + 8);
	assert_true(ask("alias.example", 65, NULL, false, 512, &v, NULL));
	assert_int_equal(v.rr[0].rdlen, 2 + 13);
	/* RFC 3597: unknown types served as written, an empty one too. */
	assert_true(ask("opaque.example", 65280, NULL, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_int_equal(v.rr[0].rdlen, 5);
	assert_memory_equal(resp + v.rr[0].rdoff, "\1\2\3\4\5", 5);
	assert_true(ask("opaque.example", 65281, NULL, false, 512, &v, NULL));
	assert_int_equal(v.rr[0].rdlen, 0);
	assert_true(ask("opaque.example", DNS_TYPE_ANY, NULL, true, 4096, &v, NULL));
	assert_int_equal(v.an, 2);
	/* A type the name does not have: NODATA. */
	assert_true(ask("opaque.example", 65282, NULL, false, 512, &v, NULL));
	expect_soa_only(&v, DNS_RCODE_NOERROR);
}

/* ---- operator features ---- */

static void test_nsid(void **state)
{
	struct msgv v;
	static const u8 nsid_opt[] = { 0, 3, 0, 0 };
	struct qopt e = { .edns = 1232, .opts = nsid_opt, .opts_len = 4 };
	const u8 *o;

	/* Off by default: asked for, not given. */
	assert_true(ask("host1.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_int_equal(v.rr[v.opt].rdlen, 0);
	srv.nsid = (const u8 *)"ns-a.example";
	srv.nsid_len = 12;
	assert_true(ask("host1.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_int_equal(v.rr[v.opt].rdlen, 4 + 12);
	o = resp + v.rr[v.opt].rdoff;
	assert_int_equal(get_be16(o), DNS_OPT_NSID);
	assert_int_equal(get_be16(o + 2), 12);
	assert_memory_equal(o + 4, "ns-a.example", 12);
	/* Not asked for: not given. */
	e.opts_len = 0;
	assert_true(ask("host1.example", DNS_TYPE_A, &e, false, 1232, &v, NULL));
	assert_int_equal(v.rr[v.opt].rdlen, 0);
	/* The answer is cut to leave its room: never past the limit. */
	e.opts_len = 4;
	assert_true(ask("big-txt.example", DNS_TYPE_TXT, &e, false, 1232, &v, NULL) <= 1232);
	assert_true(TC(&v));
	assert_int_equal(v.rr[v.opt].rdlen, 16);
}

static size_t cookie_query(u8 *q, const u8 *cookie, size_t len)
{
	u8 opt[64];
	struct qopt e = { .edns = 1232, .opts = opt, .opts_len = 4 + len };

	put_be16(opt, DNS_OPT_COOKIE);
	put_be16(opt + 2, (u16)len);
	memcpy(opt + 4, cookie, len);
	return mkq(q, "host1.example", DNS_TYPE_A, &e);
}

static void test_cookies(void **state)
{
	u8 q[600], cookie[40], server[24];
	struct dns_result res;
	struct msgv v;
	size_t n;
	const u8 *o;

	memcpy(cookie, "client!!", 8);
	/* Off by default: the option is ignored, none comes back. */
	n = dns_respond(&srv, &peer, q, cookie_query(q, cookie, 8), resp, 1232, false, &res);
	decode(resp, n, &v);
	assert_int_equal(res.cookie, DNS_COOKIE_NONE);
	assert_int_equal(v.rr[v.opt].rdlen, 0);
	srv.cookies = true;
	/* A client cookie alone: answered, with a server cookie (RFC 9018:
	 * version 1, reserved, the time, a hash). */
	n = dns_respond(&srv, &peer, q, cookie_query(q, cookie, 8), resp, 1232, false, &res);
	decode(resp, n, &v);
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 1);
	assert_int_equal(res.cookie, DNS_COOKIE_NEW);
	assert_int_equal(v.rr[v.opt].rdlen, 4 + 24);
	o = resp + v.rr[v.opt].rdoff;
	assert_int_equal(get_be16(o), DNS_OPT_COOKIE);
	assert_memory_equal(o + 4, "client!!", 8);
	assert_int_equal(o[12], 1);
	assert_int_equal(get_be32(o + 16), peer.now_s);
	memcpy(server, o + 4, 24);
	/* Sent back: good, and a fresh one comes back. */
	peer.now_s += 10;
	n = dns_respond(&srv, &peer, q, cookie_query(q, server, 24), resp, 1232, false, &res);
	decode(resp, n, &v);
	assert_int_equal(res.cookie, DNS_COOKIE_GOOD);
	assert_int_equal(get_be32(resp + v.rr[v.opt].rdoff + 16), peer.now_s);
	/* From another address, changed, or an hour and more old: not good,
	 * but still answered (RFC 7873 5.2.3). */
	peer_addr[3]++;
	n = dns_respond(&srv, &peer, q, cookie_query(q, server, 24), resp, 1232, false, &res);
	assert_int_equal(res.cookie, DNS_COOKIE_NEW);
	peer_addr[3]--;
	server[23] ^= 1;
	n = dns_respond(&srv, &peer, q, cookie_query(q, server, 24), resp, 1232, false, &res);
	assert_int_equal(res.cookie, DNS_COOKIE_NEW);
	server[23] ^= 1;
	peer.now_s += DNS_COOKIE_LIFE_S;
	n = dns_respond(&srv, &peer, q, cookie_query(q, server, 24), resp, 1232, false, &res);
	decode(resp, n, &v);
	assert_int_equal(res.cookie, DNS_COOKIE_NEW);
	assert_int_equal(v.an, 1);
	/* Minted a little ahead of this clock (another instance's): good. */
	peer.now_s = get_be32(server + 12) - 60;
	dns_respond(&srv, &peer, q, cookie_query(q, server, 24), resp, 1232, false, &res);
	assert_int_equal(res.cookie, DNS_COOKIE_GOOD);
	/* Malformed lengths: FORMERR (RFC 7873 5.2.2). */
	for (size_t len = 0; len <= 40; len++) {
		n = dns_respond(&srv, &peer, q, cookie_query(q, cookie, len), resp, 1232, false, &res);
		decode(resp, n, &v);
		if (len == 8 || (len >= 16 && len <= 40))
			assert_int_equal(RCODE(&v), 0);
		else
			assert_int_equal(RCODE(&v), DNS_RCODE_FORMERR);
	}
	/* No address to bind it to (a caller without one): never good. */
	peer.addr = NULL;
	dns_respond(&srv, &peer, q, cookie_query(q, server, 24), resp, 1232, false, &res);
	assert_int_equal(res.cookie, DNS_COOKIE_NEW);
	reset_server();
}

static void test_chaos(void **state)
{
	struct msgv v;
	struct qopt ch = { .edns = -1, .qclass = DNS_CLASS_CH };

	/* Off by default: REFUSED. */
	assert_true(ask("version.bind", DNS_TYPE_TXT, &ch, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	assert_false(AA(&v));
	srv.chaos = true;
	srv.id = "ns-a";
	assert_true(ask("VERSION.bind", DNS_TYPE_TXT, &ch, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_true(AA(&v));
	assert_int_equal(v.an, 1);
	assert_int_equal(v.rr[0].cls, DNS_CLASS_CH);
	assert_int_equal(v.rr[0].type, DNS_TYPE_TXT);
	assert_memory_equal(resp + v.rr[0].rdoff, "\5vireo", 6);
	assert_true(ask("id.server", DNS_TYPE_TXT, &ch, false, 512, &v, NULL));
	assert_memory_equal(resp + v.rr[0].rdoff, "\4ns-a", 5);
	assert_true(ask("hostname.bind", DNS_TYPE_ANY, &ch, false, 512, &v, NULL));
	assert_int_equal(v.an, 1);
	/* Other names and types in CH: REFUSED. */
	assert_true(ask("authors.bind", DNS_TYPE_TXT, &ch, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	assert_true(ask("version.bind", DNS_TYPE_A, &ch, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	/* The zone is not served in CH. */
	assert_true(ask("host1.example", DNS_TYPE_A, &ch, false, 512, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	reset_server();
}

/* ---- zone images ---- */

static u8 img[1 << 16] __attribute__((aligned(8)));

static void fix_checksum(u8 *b, size_t len)
{
	static const u8 k[16] = DNS_ZONE_CHECK_KEY;
	struct siphash_key key;

	siphash_key_from_bytes(&key, k);
	put_le64(b + 16, siphash24(&key, b + 24, len - 24));
}

static void expect_refused(size_t len, const char *why)
{
	struct dns_zone z;
	char err[128];

	assert_int_equal(dns_zone_open(&z, img, len, err, sizeof err), -1);
	if (!strstr(err, why))
		fail_msg("refused for '%s', expected '%s'", err, why);
}

static void test_zone_images_refused(void **state)
{
	size_t len = dns_zone_builtin_len;
	struct dns_zone z;
	char err[128];
	u32 nodes, rrs, data, nnodes;

	assert_true(len <= sizeof img);
	memcpy(img, dns_zone_builtin, len);
	assert_int_equal(dns_zone_open(&z, img, len, err, sizeof err), 0);
	assert_int_equal(z.serial, 2026120601);
	nodes = get_le32(img + 40);
	rrs = get_le32(img + 44);
	data = get_le32(img + 48);
	nnodes = get_le32(img + 32);
	/* The header. */
	expect_refused(10, "not a zone image");
	img[0] = 'X';
	expect_refused(len, "not a zone image");
	img[0] = 'V';
	put_le32(img + 8, 2);
	expect_refused(len, "format");
	put_le32(img + 8, 1);
	expect_refused(len - 8, "length");
	/* Any byte changed and the checksum does not match. */
	for (size_t i = 24; i < len; i += 97) {
		img[i] ^= 0x20;
		expect_refused(len, "checksum");
		img[i] ^= 0x20;
	}
	/* With the checksum made right, the structure is still checked. */
#define MUTATE(stmt, why)                            \
	do {                                         \
		memcpy(img, dns_zone_builtin, len);  \
		stmt;                                \
		fix_checksum(img, len);              \
		expect_refused(len, why);            \
	} while (0)
	MUTATE(put_le32(img + 32, nnodes + 1), "tables out of bounds");
	MUTATE(put_le32(img + 52, get_le32(img + 52) + 8), "tables out of bounds");
	MUTATE(put_le32(img + 28, nnodes), "apex out of range");
	/* node 1's name offset into the middle of another name */
	MUTATE(put_le32(img + nodes + 16, get_le32(img + nodes + 16) + 1), "node name");
	/* an uppercase letter in a name */
	for (u32 i = 0; i < nnodes; i++) {
		u8 c = dns_zone_builtin[data + get_le32(dns_zone_builtin + nodes + i * 16) + 1];

		if (c >= 'a' && c <= 'z') {
			MUTATE(img[data + get_le32(img + nodes + i * 16) + 1] -= 32, "node name");
			break;
		}
	}
	/* nodes 1 and 2 swapped */
	MUTATE({
		u8 t[16];
		memcpy(t, img + nodes + 16, 16);
		memcpy(img + nodes + 16, img + nodes + 32, 16);
		memcpy(img + nodes + 32, t, 16);
	}, "");
	/* a record range overlapping the next node's */
	MUTATE(put_le32(img + nodes + 12, get_le32(img + nodes + 12) + 1), "record ranges");
	/* flags that lie: the wildcard flag off a node, the delegation flag on */
	for (u32 i = 0; i < nnodes; i++) {
		u16 f = get_le16(img + nodes + i * 16 + 6);

		MUTATE(put_le16(img + nodes + i * 16 + 6, f ^ DNS_NODE_WILD), "wildcard flag");
		MUTATE(put_le16(img + nodes + i * 16 + 6, f ^ DNS_NODE_DELEG), "");
		MUTATE(put_le16(img + nodes + i * 16 + 6, f | 0x80), "unknown node flags");
	}
	/* records: data out of bounds, a name offset past the data, a meta
	 * type, a CNAME's type given to an A record */
	MUTATE(put_le32(img + rrs + 8, get_le32(img + 52)), "out of bounds");
	for (u32 i = 0; i < get_le32(img + 36); i++) {
		u8 *r = img + rrs + i * 16;

		if (get_le16(r + 12) != DNS_RR_NO_NAME)
			MUTATE(put_le16(img + rrs + i * 16 + 12, get_le16(r) == 6 ? 0 : (u16)(get_le16(r + 2) + 1)),
			       "");
		MUTATE(put_le16(img + rrs + i * 16, 41), "meta type");
		MUTATE(put_le16(img + rrs + i * 16 + 2, 0xffff), "");
	}
	/* Every header field but the serial and the reserved word matters. */
	for (unsigned off = 28; off < 56; off += 4)
		MUTATE(put_le32(img + off, get_le32(img + off) ^ 0x10000), "");
#undef MUTATE
}

int main(void)
{
	char err[128];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_rfc4592_examples, setup),
		cmocka_unit_test_setup(test_wildcard_kinds, setup),
		cmocka_unit_test_setup(test_rfc9471_glue, setup),
		cmocka_unit_test_setup(test_ds_at_delegation, setup),
		cmocka_unit_test_setup(test_cname_chains, setup),
		cmocka_unit_test_setup(test_do_bit_copied, setup),
		cmocka_unit_test_setup(test_edns_sizes, setup),
		cmocka_unit_test_setup(test_types, setup),
		cmocka_unit_test_setup(test_nsid, setup),
		cmocka_unit_test_setup(test_cookies, setup),
		cmocka_unit_test_setup(test_chaos, setup),
		cmocka_unit_test_setup(test_zone_images_refused, setup),
	};

	if (dns_zone_open(&zone, dns_zone_builtin, dns_zone_builtin_len, err, sizeof err)) {
		fprintf(stderr, "rfc.zone's image: %s\n", err);
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
