/* apps/dns: the engine (dnsmsg.c) against the example zone compiled by
 * apps/dns/mkzone.py at build time, the TCP framing, and the response-rate
 * limiter (rrl.c). Responses are read back by a decoder of this file's own
 * that follows compression pointers (backwards only) and checks every length. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apps/dns/dnsmsg.h"
#include "apps/dns/rrl.h"
#include "lib/byteorder.h"
#include "apps/dns/tests/dnsq.h"

/* The example zone's image (mkzone.py's C output), opened in main(). */
static struct dns_zone zone;
static struct dns_server srv = { .zone = &zone };
static const u8 peer_addr[4] = { 192, 0, 2, 9 };
static struct dns_peer peer = { .addr = peer_addr, .alen = 4, .now_s = 1000 };
#define Z (&srv), (&peer)

/* ---- building queries ---- */

struct qopt {
	u16 id;
	u8 flags2;	/* byte 2: opcode and RD */
	int edns;	/* UDP size, -1 for no OPT */
	u8 edns_version;
};

static size_t mkq(u8 *q, const char *name, u16 qtype, const struct qopt *o)
{
	struct qopt def = { .id = 0x1234, .flags2 = 0x01, .edns = -1 };
	size_t n;

	if (!o)
		o = &def;
	memset(q, 0, 12);
	put_be16(q, o->id);
	q[2] = o->flags2;
	put_be16(q + 4, 1);
	n = 12 + dnsq_put_name(q + 12, name);
	put_be16(q + n, qtype);
	put_be16(q + n + 2, 1);
	n += 4;
	if (o->edns >= 0) {
		put_be16(q + 10, 1);
		q[n] = 0;
		put_be16(q + n + 1, DNS_TYPE_OPT);
		put_be16(q + n + 3, (u16)o->edns);
		q[n + 5] = 0;
		q[n + 6] = o->edns_version;
		q[n + 7] = 0;
		q[n + 8] = 0;
		put_be16(q + n + 9, 0);
		n += 11;
	}
	return n;
}

/* ---- reading responses ---- */

struct rrv {
	char name[300];
	u16 type, cls;
	u32 ttl;
	u16 rdlen;
	size_t rdoff;
	char target[300];	/* the name in NS, CNAME, MX rdata */
};

struct msgv {
	u16 id, qd, an, ns, ar;
	u8 b2, b3;
	char qname[300];
	u16 qtype;
	struct rrv rr[64];
	unsigned nrr;
	size_t len;
};

/* Reads a name at off; returns the offset after it in the message. */
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
			assert_true(to < o);	/* backwards only */
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
		memcpy(out + n, m + o + 1, l);
		n += l;
		out[n++] = '.';
		assert_true(n < 270);
		o += l + 1u;
	}
	out[n] = 0;
	return end ? end : o + 1;
}

static void decode(const u8 *m, size_t len, struct msgv *v)
{
	size_t o;

	memset(v, 0, sizeof *v);
	assert_true(len >= 12);
	v->len = len;
	v->id = get_be16(m);
	v->b2 = m[2];
	v->b3 = m[3];
	v->qd = get_be16(m + 4);
	v->an = get_be16(m + 6);
	v->ns = get_be16(m + 8);
	v->ar = get_be16(m + 10);
	o = 12;
	if (v->qd) {
		assert_int_equal(v->qd, 1);
		o = rdname(m, len, o, v->qname);
		assert_true(o + 4 <= len);
		v->qtype = get_be16(m + o);
		o += 4;
	}
	for (unsigned i = 0; i < (unsigned)v->an + v->ns + v->ar; i++) {
		struct rrv *r = &v->rr[v->nrr++];

		assert_true(v->nrr <= 64);
		o = rdname(m, len, o, r->name);
		assert_true(o + 10 <= len);
		r->type = get_be16(m + o);
		r->cls = get_be16(m + o + 2);
		r->ttl = get_be32(m + o + 4);
		r->rdlen = get_be16(m + o + 8);
		o += 10;
		r->rdoff = o;
		assert_true(o + r->rdlen <= len);
		if (r->type == DNS_TYPE_NS || r->type == DNS_TYPE_CNAME)
			assert_int_equal(rdname(m, len, o, r->target), o + r->rdlen);
		if (r->type == DNS_TYPE_MX)
			assert_int_equal(rdname(m, len, o + 2, r->target), o + r->rdlen);
		o += r->rdlen;
	}
	assert_int_equal(o, len);	/* nothing after the last record */
}

static size_t ask(const char *name, u16 qtype, const struct qopt *o, bool tcp, u8 *resp, size_t cap,
		  struct msgv *v, struct dns_result *res)
{
	u8 q[600];
	size_t ql = mkq(q, name, qtype, o), n;
	struct dns_result r;

	n = dns_respond(Z, q, ql, resp, cap, tcp, res ? res : &r);
	if (n)
		decode(resp, n, v);
	return n;
}

#define RCODE(v) ((v)->b3 & 0xf)
#define AA(v) (((v)->b2 & 0x04) != 0)
#define TC(v) (((v)->b2 & 0x02) != 0)

static unsigned count_type(const struct msgv *v, unsigned from, unsigned n, u16 type)
{
	unsigned c = 0;

	for (unsigned i = from; i < from + n; i++)
		c += v->rr[i].type == type;
	return c;
}

/* ---- the tests ---- */

static void test_a_at_apex(void **state)
{
	u8 resp[512];
	struct msgv v;
	struct qopt o = { .id = 0xbeef, .flags2 = 0x01, .edns = -1 };

	assert_true(ask("ViReO.TeSt", DNS_TYPE_A, &o, false, resp, sizeof resp, &v, NULL) > 0);
	assert_int_equal(v.id, 0xbeef);
	assert_int_equal(v.b2, 0x80 | 0x04 | 0x01);	/* QR, AA, RD copied */
	assert_int_equal(v.b3, 0);			/* RA clear, NOERROR */
	assert_string_equal(v.qname, "ViReO.TeSt.");	/* the question as asked */
	assert_int_equal(v.an, 1);
	assert_int_equal(v.ns, 0);
	assert_int_equal(v.rr[0].type, DNS_TYPE_A);
	assert_int_equal(v.rr[0].ttl, 3600);
	assert_int_equal(v.rr[0].rdlen, 4);
	assert_memory_equal(resp + v.rr[0].rdoff, "\xc0\x00\x02\x01", 4);
	/* The owner is a pointer to the question. */
	assert_int_equal(get_be16(resp + 12 + 12 + 4), 0xc00c);

	o.flags2 = 0;	/* RD clear stays clear */
	assert_true(ask("vireo.test", DNS_TYPE_A, &o, false, resp, sizeof resp, &v, NULL) > 0);
	assert_int_equal(v.b2, 0x80 | 0x04);
}

static void test_each_type(void **state)
{
	u8 resp[512];
	struct msgv v;

	assert_true(ask("vireo.test", DNS_TYPE_AAAA, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_memory_equal(resp + v.rr[0].rdoff, "\x20\x01\x0d\xb8\0\0\0\0\0\0\0\0\0\0\0\x01", 16);

	/* MX: both, and the A of the in-zone exchange in additional. */
	assert_true(ask("vireo.test", DNS_TYPE_MX, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 2);
	assert_int_equal(get_be16(resp + v.rr[0].rdoff), 10);
	assert_string_equal(v.rr[0].target, "mail.vireo.test.");
	assert_string_equal(v.rr[1].target, "mail2.example.net.");
	assert_int_equal(v.ar, 1);
	assert_string_equal(v.rr[2].name, "mail.vireo.test.");
	assert_int_equal(v.rr[2].type, DNS_TYPE_A);

	/* NS: both, glue A/AAAA of ns1 and A of ns2 in additional. */
	assert_true(ask("vireo.test", DNS_TYPE_NS, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 2);
	assert_int_equal(v.ar, 3);
	assert_int_equal(count_type(&v, 2, 3, DNS_TYPE_A), 2);
	assert_int_equal(count_type(&v, 2, 3, DNS_TYPE_AAAA), 1);
	assert_int_equal(v.rr[2].ttl, 300);	/* ns1's A has its own TTL */

	/* TXT: strings with escapes as the zone file wrote them. */
	assert_true(ask("txt.vireo.test", DNS_TYPE_TXT, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 1);
	assert_memory_equal(resp + v.rr[0].rdoff, "\x05hello\x05world\x09" "bare-word", 22);
	assert_memory_equal(resp + v.rr[0].rdoff + 22, "\x19with \"quotes\" and \\ and A", 26);

	/* SOA: two names and five numbers. */
	assert_true(ask("vireo.test", DNS_TYPE_SOA, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 1);
	{
		char m[300], r[300];
		size_t o = rdname(resp, v.len, v.rr[0].rdoff, m);

		o = rdname(resp, v.len, o, r);
		assert_string_equal(m, "ns1.vireo.test.");
		assert_string_equal(r, "hostmaster.vireo.test.");
		assert_int_equal(get_be32(resp + o), 2026120401);
		assert_int_equal(get_be32(resp + o + 16), 300);
		assert_int_equal(o + 20, v.rr[0].rdoff + v.rr[0].rdlen);
	}
}

static void test_cname(void **state)
{
	u8 resp[512];
	struct msgv v;

	/* An in-zone chain, followed to the address. */
	assert_true(ask("WWW.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_true(AA(&v));
	assert_int_equal(v.an, 3);
	assert_int_equal(v.rr[0].type, DNS_TYPE_CNAME);
	assert_string_equal(v.rr[0].target, "web.vireo.test.");
	assert_int_equal(v.rr[1].type, DNS_TYPE_CNAME);
	assert_string_equal(v.rr[1].name, "web.vireo.test.");
	assert_int_equal(v.rr[2].type, DNS_TYPE_A);
	assert_string_equal(v.rr[2].name, "host.vireo.test.");

	/* Asked for the CNAME itself: not followed. */
	assert_true(ask("www.vireo.test", DNS_TYPE_CNAME, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 1);

	/* Out of the zone: the CNAME alone, NOERROR. */
	assert_true(ask("ext.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 1);
	assert_string_equal(v.rr[0].target, "www.example.net.");

	/* A loop ends where a name comes back: each CNAME once, NOERROR (RFC
	 * 2181 10.1.1; it used to be written out to the hop bound, SERVFAIL). */
	assert_true(ask("loop1.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_NOERROR);
	assert_true(AA(&v));
	assert_int_equal(v.an, 2);
	assert_string_equal(v.rr[0].name, "loop1.vireo.test.");
	assert_string_equal(v.rr[1].name, "loop2.vireo.test.");

	/* A chain to a name with no such type: NODATA with the SOA. */
	assert_true(ask("www.vireo.test", DNS_TYPE_MX, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 2);
	assert_int_equal(v.ns, 1);
	assert_int_equal(v.rr[2].type, DNS_TYPE_SOA);
}

static void test_negative(void **state)
{
	u8 resp[512];
	struct msgv v;

	/* NXDOMAIN: SOA in authority, TTL the SOA's minimum (300 < 3600). */
	assert_true(ask("nope.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_NXDOMAIN);
	assert_true(AA(&v));
	assert_int_equal(v.an, 0);
	assert_int_equal(v.ns, 1);
	assert_int_equal(v.rr[0].type, DNS_TYPE_SOA);
	assert_string_equal(v.rr[0].name, "vireo.test.");
	assert_int_equal(v.rr[0].ttl, 300);
	assert_true(ask("a.b.nope.vireo.test", DNS_TYPE_TXT, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_NXDOMAIN);

	/* NODATA: the name exists, not the type. */
	assert_true(ask("host.vireo.test", DNS_TYPE_MX, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 0);
	assert_int_equal(v.ns, 1);
	assert_int_equal(v.rr[0].type, DNS_TYPE_SOA);

	/* An empty non-terminal exists: NODATA, not NXDOMAIN. */
	assert_true(ask("sub.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), 0);
	assert_int_equal(v.an, 0);
	assert_int_equal(v.ns, 1);
	assert_true(ask("b.sub.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 1);
}

static void test_refused(void **state)
{
	u8 resp[512], q[600];
	struct msgv v;
	size_t n;

	assert_true(ask("example.com", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	assert_false(AA(&v));
	assert_int_equal(v.qd, 1);
	assert_int_equal(v.an + v.ns + v.ar, 0);
	/* A name that only ends like the zone is outside it. */
	assert_true(ask("xvireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	assert_true(ask("test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	/* No zone transfers. */
	assert_true(ask("vireo.test", DNS_TYPE_AXFR, NULL, true, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	assert_true(ask("vireo.test", DNS_TYPE_IXFR, NULL, true, resp, sizeof resp, &v, NULL));
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	/* Class CH. */
	n = mkq(q, "vireo.test", DNS_TYPE_TXT, NULL);
	put_be16(q + n - 2, 3);
	n = dns_respond(Z, q, n, resp, sizeof resp, false, &(struct dns_result){ 0 });
	decode(resp, n, &v);
	assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
}

static void test_referral(void **state)
{
	u8 resp[512];
	struct msgv v;
	struct dns_result res;

	assert_true(ask("www.child.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, &res));
	assert_true(res.referral);
	assert_int_equal(RCODE(&v), 0);
	assert_false(AA(&v));
	assert_int_equal(v.an, 0);
	assert_int_equal(v.ns, 2);
	assert_int_equal(v.rr[0].type, DNS_TYPE_NS);
	assert_string_equal(v.rr[0].name, "child.vireo.test.");
	assert_int_equal(v.ar, 2);	/* ns.child's A and AAAA; ns.elsewhere.example is not ours */
	assert_string_equal(v.rr[2].name, "ns.child.vireo.test.");
	/* The cut itself and the glue's name are referrals too. */
	assert_true(ask("child.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, &res));
	assert_true(res.referral);
	assert_true(ask("ns.child.vireo.test", DNS_TYPE_A, NULL, false, resp, sizeof resp, &v, &res));
	assert_true(res.referral);
	assert_int_equal(v.an, 0);
}

static void test_any(void **state)
{
	u8 resp[4096];
	struct msgv v;

	/* Over UDP one RRset (RFC 8482), over TCP all of them. */
	assert_true(ask("vireo.test", DNS_TYPE_ANY, NULL, false, resp, 512, &v, NULL));
	assert_int_equal(v.an, 1);	/* the A, the first type */
	assert_true(ask("vireo.test", DNS_TYPE_ANY, NULL, true, resp, sizeof resp, &v, NULL));
	assert_int_equal(v.an, 8);	/* A, NS x2, SOA, MX x2, TXT, AAAA */
}

static void test_truncation(void **state)
{
	u8 resp[70000];
	struct msgv v;
	struct dns_result res;
	struct qopt e = { .id = 1, .flags2 = 1, .edns = 4096 };
	size_t n;

	/* 12 TXT records of 240 bytes: 512 bytes holds 1, cut at a record. */
	n = ask("big.vireo.test", DNS_TYPE_TXT, NULL, false, resp, sizeof resp, &v, &res);
	assert_true(n <= 512);
	assert_true(TC(&v));
	assert_true(res.truncated);
	/* 12 + 20 of question + 252 a record (owner a pointer, 10, 240) */
	assert_int_equal(v.an, 1);
	/* EDNS: the size asked is clamped to 1232, the OPT included. */
	n = ask("big.vireo.test", DNS_TYPE_TXT, &e, false, resp, sizeof resp, &v, &res);
	assert_true(n <= DNS_UDP_MAX && n > 512);
	assert_true(TC(&v));
	assert_int_equal(v.an, 4);
	assert_int_equal(v.ar, 1);
	assert_int_equal(v.rr[v.nrr - 1].type, DNS_TYPE_OPT);
	assert_int_equal(v.rr[v.nrr - 1].cls, DNS_UDP_MAX);
	/* An EDNS size under 512 means 512. */
	e.edns = 100;
	n = ask("big.vireo.test", DNS_TYPE_TXT, &e, false, resp, sizeof resp, &v, &res);
	assert_true(n <= 512 && n == 12 + 20 + 252 + 11);
	/* TCP: whole. */
	n = ask("big.vireo.test", DNS_TYPE_TXT, NULL, true, resp, sizeof resp, &v, &res);
	assert_false(TC(&v));
	assert_int_equal(v.an, 12);
	assert_true(n > 2880);
	/* TCP into a small buffer: cut too, never past it. */
	n = ask("big.vireo.test", DNS_TYPE_TXT, NULL, true, resp, 1000, &v, &res);
	assert_true(n <= 1000);
	assert_true(TC(&v));
	/* Additional data is left out without TC when it does not fit. */
	n = ask("vireo.test", DNS_TYPE_NS, NULL, false, resp, 512, &v, &res);
	assert_false(TC(&v));
}

static void test_compression(void **state)
{
	u8 resp[512];
	struct msgv v;
	size_t n, plain = 12 + 12 + 4;

	n = ask("vireo.test", DNS_TYPE_NS, NULL, false, resp, sizeof resp, &v, NULL);
	for (unsigned i = 0; i < v.nrr; i++)
		plain += strlen(v.rr[i].name) + 1 + 10 + v.rr[i].rdlen +
			 (v.rr[i].type == DNS_TYPE_NS ? strlen(v.rr[i].target) + 1 - v.rr[i].rdlen : 0);
	/* Every owner and target after the first compresses to a pointer. */
	assert_true(n < plain - 40);
	assert_int_equal(v.rr[0].rdlen, 6);	/* "ns1" + a pointer */
}

static void test_malformed(void **state)
{
	u8 q[600], resp[512];
	struct msgv v;
	struct dns_result res;
	size_t n, base;

	/* Too short for a header, or a response: nothing. */
	for (size_t l = 0; l < 12; l++)
		assert_int_equal(dns_respond(Z, (const u8 *)"\x12\x34\x01\0\0\x01\0\0\0\0\0\0", l, resp, 512, false, &res), 0);
	n = mkq(q, "vireo.test", 1, NULL);
	q[2] |= 0x80;
	assert_int_equal(dns_respond(Z, q, n, resp, 512, false, &res), 0);

#define EXPECT(rc)                                                            \
	do {                                                                  \
		size_t m_ = dns_respond(Z, q, n, resp, 512, false, &res);     \
		assert_int_equal(m_, 12);                                     \
		decode(resp, m_, &v);                                         \
		assert_int_equal(RCODE(&v), (rc));                            \
		assert_int_equal(v.id, 0x1234);                               \
		assert_int_equal(v.qd + v.an + v.ns + v.ar, 0);               \
	} while (0)

	/* Opcodes other than QUERY: NOTIMP (STATUS, NOTIFY, UPDATE). */
	for (u8 op = 1; op < 16; op++) {
		n = mkq(q, "vireo.test", 1, NULL);
		q[2] = (u8)(op << 3 | 1);
		EXPECT(DNS_RCODE_NOTIMP);
	}
	base = mkq(q, "vireo.test", 1, NULL);
	/* Counts. */
	n = base;
	put_be16(q + 4, 0);
	EXPECT(DNS_RCODE_FORMERR);
	put_be16(q + 4, 2);
	EXPECT(DNS_RCODE_FORMERR);
	put_be16(q + 4, 1);
	put_be16(q + 6, 1);
	EXPECT(DNS_RCODE_FORMERR);
	put_be16(q + 6, 0);
	put_be16(q + 8, 1);
	EXPECT(DNS_RCODE_FORMERR);
	put_be16(q + 8, 0);
	put_be16(q + 10, 2);
	EXPECT(DNS_RCODE_FORMERR);
	put_be16(q + 10, 1);	/* an additional record that is not there */
	EXPECT(DNS_RCODE_FORMERR);
	put_be16(q + 10, 0);
	/* Every cut of the question. */
	for (n = 12; n < base; n++)
		EXPECT(DNS_RCODE_FORMERR);
	/* A byte too many. */
	n = base + 1;
	q[base] = 0;
	EXPECT(DNS_RCODE_FORMERR);
	/* A pointer in the question, and the reserved label types. */
	n = mkq(q, "vireo.test", 1, NULL);
	q[12 + 6] = 0xc0;
	q[12 + 7] = 12;
	EXPECT(DNS_RCODE_FORMERR);
	q[12 + 6] = 0x44;
	EXPECT(DNS_RCODE_FORMERR);
	q[12 + 6] = 0x84;
	EXPECT(DNS_RCODE_FORMERR);
	/* A name over 255 bytes: 5 labels of 63 (320 bytes). */
	{
		char name[400] = "";

		for (int i = 0; i < 5; i++)
			strcat(name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.");
		strcat(name, "vireo.test");
		n = mkq(q, name, 1, NULL);
		EXPECT(DNS_RCODE_FORMERR);
	}
	/* A name of exactly 255 bytes is fine (and outside the zone here). */
	{
		char name[400] = "";

		for (int i = 0; i < 3; i++)
			strcat(name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.");
		strcat(name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");	/* 3 x 64 + 62 + 1 */
		n = mkq(q, name, 1, NULL);
		assert_int_equal(n, 12 + 255 + 4);
		n = dns_respond(Z, q, n, resp, 512, false, &res);
		decode(resp, n, &v);
		assert_int_equal(RCODE(&v), DNS_RCODE_REFUSED);
	}
	/* OPT: not at the root, another type, options overrunning. */
	{
		struct qopt e = { .id = 0x1234, .flags2 = 1, .edns = 1232 };

		base = mkq(q, "vireo.test", 1, &e);
		n = base;
		q[base - 11] = 1;
		EXPECT(DNS_RCODE_FORMERR);
		q[base - 11] = 0;
		put_be16(q + base - 10, 250);	/* TSIG */
		EXPECT(DNS_RCODE_FORMERR);
		put_be16(q + base - 10, DNS_TYPE_OPT);
		put_be16(q + base - 2, 4);	/* RDLENGTH 4, nothing there */
		EXPECT(DNS_RCODE_FORMERR);
		memcpy(q + base, "\0\x0a\0\x08", 4);	/* a cookie option claiming 8 bytes */
		n = base + 4;
		EXPECT(DNS_RCODE_FORMERR);
		memcpy(q + base, "\0\x0a\0\x08" "12345678", 12);
		put_be16(q + base - 2, 12);
		n = base + 12;
		n = dns_respond(Z, q, n, resp, 512, false, &res);
		decode(resp, n, &v);
		assert_int_equal(RCODE(&v), 0);
		assert_int_equal(v.an, 1);
		assert_true(res.edns);
	}
	/* EDNS version 1: BADVERS (16 = 1 in the OPT's TTL, 0 in the header). */
	{
		struct qopt e = { .id = 0x1234, .flags2 = 1, .edns = 1232, .edns_version = 1 };

		n = ask("vireo.test", 1, &e, false, resp, 512, &v, &res);
		assert_int_equal(res.rcode, DNS_RCODE_BADVERS);
		assert_int_equal(RCODE(&v), 0);
		assert_int_equal(v.an, 0);
		assert_int_equal(v.rr[0].type, DNS_TYPE_OPT);
		assert_int_equal(v.rr[0].ttl >> 24, 1);
	}
#undef EXPECT
}

static void test_slip(void **state)
{
	u8 resp[512];
	struct msgv v;
	struct dns_result res;
	size_t n = ask("Big.vireo.test", DNS_TYPE_TXT, NULL, false, resp, sizeof resp, &v, &res);

	n = dns_slip(resp, n, &res);
	decode(resp, n, &v);
	assert_true(TC(&v));
	assert_int_equal(v.qd, 1);
	assert_string_equal(v.qname, "Big.vireo.test.");
	assert_int_equal(v.an + v.ns + v.ar, 0);
	/* A header-only answer has nothing to slip. */
	res.qlen = 0;
	assert_int_equal(dns_slip(resp, 12, &res), 0);
}

static void test_tcp_framing(void **state)
{
	struct dns_tcp_reader r = { 0 };
	u8 stream[3000];
	size_t m, off = 0;
	long took;

	/* Two messages of 5 and 3 bytes, fed one byte at a time. */
	memcpy(stream, "\0\x05" "abcde" "\0\x03" "xyz", 12);
	for (unsigned got = 0; off < 12;) {
		took = dns_tcp_feed(&r, stream + off, 1, &m);
		assert_true(took >= 0);
		off += (size_t)took;
		if (m) {
			assert_int_equal(m, got == 0 ? 5 : 3);
			assert_memory_equal(r.buf + 2, got == 0 ? "abcde" : "xyz", m);
			dns_tcp_next(&r);
			got++;
		}
	}
	/* Both at once: the first, then the rest. */
	took = dns_tcp_feed(&r, stream, 12, &m);
	assert_int_equal(took, 7);
	assert_int_equal(m, 5);
	took = dns_tcp_feed(&r, stream + 7, 5, &m);	/* not taken until dns_tcp_next */
	assert_int_equal(took, 0);
	assert_int_equal(m, 5);
	dns_tcp_next(&r);
	took = dns_tcp_feed(&r, stream + 7, 5, &m);
	assert_int_equal(took, 5);
	assert_int_equal(m, 3);
	dns_tcp_next(&r);
	/* A zero length, and one over the bound: the connection goes. */
	assert_int_equal(dns_tcp_feed(&r, (const u8 *)"\0\0", 2, &m), -1);
	dns_tcp_next(&r);
	put_be16(stream, DNS_TCP_QUERY_MAX + 1);
	assert_int_equal(dns_tcp_feed(&r, stream, 2000, &m), -1);
	dns_tcp_next(&r);
	put_be16(stream, DNS_TCP_QUERY_MAX);
	assert_int_equal(dns_tcp_feed(&r, stream, 2000, &m), 2 + DNS_TCP_QUERY_MAX);
	assert_int_equal(m, DNS_TCP_QUERY_MAX);
}

/* ---- rate limiting ---- */

static const u8 rrl_key[16] = "0123456789abcdef";

static void test_rrl_limits_a_prefix(void **state)
{
	static struct rrl r;
	const u8 victim[4] = { 192, 0, 2, 1 }, neighbour[4] = { 192, 0, 2, 77 }, other[4] = { 198, 51, 100, 1 };
	u64 t = 1000000000ULL;
	unsigned pass = 0, slip = 0, drop = 0;

	rrl_init(&r, rrl_key, 5, 2);
	/* A burst of 100 at one instant: 5 pass, then slip, drop, slip... */
	for (int i = 0; i < 100; i++) {
		enum rrl_verdict v = rrl_check(&r, victim, 4, t);

		pass += v == RRL_PASS;
		slip += v == RRL_SLIP;
		drop += v == RRL_DROP;
	}
	assert_int_equal(pass, 5);
	assert_int_equal(slip, 47);
	assert_int_equal(drop, 48);
	assert_int_equal(r.passed, 5);
	assert_int_equal(r.slipped, 47);
	assert_int_equal(r.dropped, 48);
	/* The same /24 shares the budget; another network does not. */
	assert_int_not_equal(rrl_check(&r, neighbour, 4, t), RRL_PASS);
	for (int i = 0; i < 5; i++)
		assert_int_equal(rrl_check(&r, other, 4, t), RRL_PASS);
	/* 200 ms later: one more (5 a second). */
	t += 200000000ULL;
	assert_int_equal(rrl_check(&r, victim, 4, t), RRL_PASS);
	assert_int_not_equal(rrl_check(&r, victim, 4, t), RRL_PASS);
	/* Time in small steps adds up (a query every 10 ms at 5/s: one in 20). */
	pass = 0;
	for (int i = 0; i < 200; i++) {
		t += 10000000ULL;
		pass += rrl_check(&r, victim, 4, t) == RRL_PASS;
	}
	assert_true(pass >= 9 && pass <= 11);
	/* After a quiet second: the full burst again. */
	t += 2000000000ULL;
	for (int i = 0; i < 5; i++)
		assert_int_equal(rrl_check(&r, victim, 4, t), RRL_PASS);
	assert_int_not_equal(rrl_check(&r, victim, 4, t), RRL_PASS);
}

static void test_rrl_v6_and_off(void **state)
{
	static struct rrl r;
	u8 a[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0x11 }, b[16];

	rrl_init(&r, rrl_key, 1, 0);
	assert_int_equal(rrl_check(&r, a, 16, 1), RRL_PASS);
	assert_int_equal(rrl_check(&r, a, 16, 1), RRL_DROP);	/* slip 0: drop only */
	/* Same /56 (byte 7 differs only in its low 8 bits): limited. */
	memcpy(b, a, 16);
	b[7] = 0x22;
	b[15] = 9;
	assert_int_equal(rrl_check(&r, b, 16, 1), RRL_DROP);
	/* Another /56. */
	b[6] = 1;
	assert_int_equal(rrl_check(&r, b, 16, 1), RRL_PASS);
	assert_int_equal(r.slipped, 0);
	/* rate 0: no limit. */
	rrl_init(&r, rrl_key, 0, 2);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(rrl_check(&r, a, 16, 1), RRL_PASS);
}

/* The table is bounded: 100,000 other prefixes come and go, the limited
 * victim keeps its (emptiest) bucket in its set. */
static void test_rrl_table_bound(void **state)
{
	static struct rrl r;
	const u8 victim[4] = { 203, 0, 113, 5 };
	u64 t = 5;

	rrl_init(&r, rrl_key, 10, 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(rrl_check(&r, victim, 4, t), RRL_PASS);
	for (u32 i = 0; i < 100000; i++) {
		u8 a[4] = { (u8)(10 + (i >> 16)), (u8)(i >> 8), (u8)i, 1 };	/* each its own /24 */

		assert_int_equal(rrl_check(&r, a, 4, t), RRL_PASS);
	}
	assert_int_equal(rrl_check(&r, victim, 4, t), RRL_DROP);
	assert_int_equal(sizeof r.b, RRL_BUCKETS * sizeof(struct rrl_bucket));
}

/* The global ceiling: many prefixes, each within its own budget, still get
 * at most the ceiling's worth in all; a limited prefix keeps its tokens. */
static void test_rrl_global_ceiling(void **state)
{
	static struct rrl r;
	u64 t = 1000000000ULL;
	unsigned pass = 0, slip = 0, drop = 0;

	rrl_init(&r, rrl_key, 5, 2);
	rrl_set_global(&r, 50);
	/* 200 prefixes, one query each at one instant: 50 pass, the other
	 * 150 alternate drop, slip. */
	for (u32 i = 0; i < 200; i++) {
		u8 a[4] = { 10, (u8)(i >> 8), (u8)i, 1 };
		enum rrl_verdict v = rrl_check(&r, a, 4, t);

		pass += v == RRL_PASS;
		slip += v == RRL_SLIP;
		drop += v == RRL_DROP;
	}
	assert_int_equal(pass, 50);
	assert_int_equal(slip, 75);
	assert_int_equal(drop, 75);
	assert_int_equal(r.global_limited, 150);
	/* 100 ms later, 5 more in all. */
	t += 100000000ULL;
	pass = 0;
	for (u32 i = 0; i < 20; i++) {
		u8 a[4] = { 11, 0, (u8)i, 1 };

		pass += rrl_check(&r, a, 4, t) == RRL_PASS;
	}
	assert_int_equal(pass, 5);
	/* A prefix held back by the ceiling alone still has its 5 a second
	 * once the ceiling refills: its bucket was not charged. */
	t += 2000000000ULL;
	{
		u8 a[4] = { 10, 0, 199, 1 };

		for (int i = 0; i < 5; i++)
			assert_int_equal(rrl_check(&r, a, 4, t), RRL_PASS);
		assert_int_not_equal(rrl_check(&r, a, 4, t), RRL_PASS);
	}
	/* Per-prefix limiting off, the ceiling still holds. */
	rrl_init(&r, rrl_key, 0, 0);
	rrl_set_global(&r, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(rrl_check(&r, (const u8 *)"\1\2\3\4", 4, t), RRL_PASS);
	assert_int_equal(rrl_check(&r, (const u8 *)"\5\6\7\10", 4, t), RRL_DROP);
	/* A ceiling of 0 is none. */
	rrl_set_global(&r, 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(rrl_check(&r, (const u8 *)"\1\2\3\4", 4, t), RRL_PASS);
}

int main(void)
{
	char err[128];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_at_apex),
		cmocka_unit_test(test_each_type),
		cmocka_unit_test(test_cname),
		cmocka_unit_test(test_negative),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_referral),
		cmocka_unit_test(test_any),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_compression),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_slip),
		cmocka_unit_test(test_tcp_framing),
		cmocka_unit_test(test_rrl_limits_a_prefix),
		cmocka_unit_test(test_rrl_v6_and_off),
		cmocka_unit_test(test_rrl_table_bound),
		cmocka_unit_test(test_rrl_global_ceiling),
	};

	if (dns_zone_open(&zone, dns_zone_builtin, dns_zone_builtin_len, err, sizeof err)) {
		fprintf(stderr, "the example zone's image: %s\n", err);
		return 1;
	}

	return cmocka_run_group_tests(tests, NULL, NULL);
}
