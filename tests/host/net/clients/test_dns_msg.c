/* net/clients/dns_msg.c: the query's bytes, and responses as an attacker
 * would write them (other ids, questions and names, compression loops,
 * truncated records, counts the message cannot hold) next to the real
 * shapes (aliases, negative answers with their SOA, TTL rules). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/clients/dns_msg.h"

/* A response under construction. */
struct msg {
	u8 b[1024];
	size_t n;
};

static void put8(struct msg *m, unsigned v)
{
	m->b[m->n++] = (u8)v;
}

static void put16(struct msg *m, unsigned v)
{
	put8(m, v >> 8);
	put8(m, v);
}

static void put32(struct msg *m, u32 v)
{
	put16(m, v >> 16);
	put16(m, v & 0xffff);
}

/* A name in labels ("" the root), uncompressed. */
static void putname(struct msg *m, const char *s)
{
	while (*s) {
		const char *d = strchr(s, '.');
		size_t l = d ? (size_t)(d - s) : strlen(s);

		put8(m, (unsigned)l);
		memcpy(m->b + m->n, s, l);
		m->n += l;
		s += l + (d != NULL);
	}
	put8(m, 0);
}

/* Header (id 0x1234, QR RD RA, rcode) and the question. */
static void head(struct msg *m, unsigned rcode, unsigned an, unsigned ns, const char *q, unsigned qtype)
{
	m->n = 0;
	put16(m, 0x1234);
	put16(m, 0x8180 | rcode);
	put16(m, 1);
	put16(m, an);
	put16(m, ns);
	put16(m, 0);
	putname(m, q);
	put16(m, qtype);
	put16(m, 1);
}

static void rr_a(struct msg *m, const char *owner, u32 ttl, u8 last)
{
	putname(m, owner);
	put16(m, DNS_TYPE_A);
	put16(m, 1);
	put32(m, ttl);
	put16(m, 4);
	put8(m, 192);
	put8(m, 0);
	put8(m, 2);
	put8(m, last);
}

static void rr_soa(struct msg *m, const char *owner, u32 ttl, u32 minimum)
{
	putname(m, owner);
	put16(m, DNS_TYPE_SOA);
	put16(m, 1);
	put32(m, ttl);
	put16(m, 1 + 1 + 20);	/* two root names, five numbers */
	putname(m, "");
	putname(m, "");
	for (int i = 0; i < 4; i++)
		put32(m, 100);
	put32(m, minimum);
}

static int parse(const struct msg *m, const char *q, unsigned qtype, struct dns_answer *a, const char **why)
{
	u8 *copy = malloc(m->n ? m->n : 1);	/* exactly sized: ASan sees an over-read */
	int r;

	memcpy(copy, m->b, m->n);
	r = dns_msg_parse(copy, m->n, 0x1234, q, qtype, a, why);
	free(copy);
	return r;
}

static void test_query(void **state)
{
	static const u8 want[] = { 0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'w', 'w', 'w', 7, 'e', 'x', 'a',
				   'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0, 0, 28, 0, 1 };
	u8 buf[DNS_QUERY_MAX];
	char long_label[80], long_name[300];

	assert_int_equal(dns_msg_query(buf, sizeof buf, 0xabcd, "WWW.Example.com.", DNS_TYPE_AAAA), sizeof want);
	assert_memory_equal(buf, want, sizeof want);
	assert_int_equal(dns_msg_query(buf, sizeof want - 1, 0xabcd, "www.example.com", DNS_TYPE_AAAA), -ENOSPC);
	static const char *const bad[] = { "", ".", "..", "a..b", ".a", "a b", "a/b", "caf\xc3\xa9.fr", "a.b.." };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(dns_msg_query(buf, sizeof buf, 1, bad[i], DNS_TYPE_A), -EINVAL);
	memset(long_label, 'a', 64);
	long_label[64] = '\0';
	assert_int_equal(dns_msg_query(buf, sizeof buf, 1, long_label, DNS_TYPE_A), -EINVAL);
	long_label[63] = '\0';
	assert_int_equal(dns_msg_query(buf, sizeof buf, 1, long_label, DNS_TYPE_A), 12 + 65 + 4);
	/* 253 characters is the longest name; 254 is refused. */
	for (int i = 0; i < 254; i++)
		long_name[i] = i % 2 ? '.' : 'x';
	long_name[253] = '\0';
	assert_int_equal(dns_msg_query(buf, sizeof buf, 1, long_name, DNS_TYPE_A), DNS_QUERY_MAX);
	long_name[253] = 'y';
	long_name[254] = '\0';
	assert_int_equal(dns_msg_query(buf, sizeof buf, 1, long_name, DNS_TYPE_A), -EINVAL);
}

static void test_answer(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;

	head(&m, 0, 3, 0, "Host.Example.com", DNS_TYPE_A);
	rr_a(&m, "host.example.com", 300, 1);
	rr_a(&m, "evil.example.net", 9999, 66);	/* another name's: ignored */
	rr_a(&m, "HOST.example.com", 120, 2);
	assert_int_equal(parse(&m, "host.example.COM.", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.result, DNS_ANSWER);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.alen, 4);
	assert_int_equal(a.addr[0][3], 1);
	assert_int_equal(a.addr[1][3], 2);
	assert_int_equal(a.ttl, 120);	/* the least of those used */
}

/* An alias chain, the alias compressed; records before the alias are for
 * the name asked, after it for the alias's target. */
static void test_cname(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;

	head(&m, 0, 3, 0, "www.example.com", DNS_TYPE_A);
	rr_a(&m, "cdn.example.net", 60, 9);	/* before the alias: not yet the target */
	putname(&m, "www.example.com");
	put16(&m, DNS_TYPE_CNAME);
	put16(&m, 1);
	put32(&m, 30);
	put16(&m, 6);
	put8(&m, 3);
	memcpy(m.b + m.n, "cdn", 3);
	m.n += 3;
	put16(&m, 0xc000 | (12 + 17 + 4 + 4));	/* "example.net" inside the first answer */
	rr_a(&m, "cdn.example.net", 600, 7);
	assert_int_equal(parse(&m, "www.example.com", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.n, 1);
	assert_int_equal(a.addr[0][3], 7);
	assert_int_equal(a.ttl, 30);	/* the alias's is less */
}

/* Nine aliases in a row (a loop of two names): refused past DNS_CNAME_MAX. */
static void test_cname_loop(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;

	head(&m, 0, 9, 0, "a.example", DNS_TYPE_A);
	for (int i = 0; i < 9; i++) {
		putname(&m, i % 2 ? "b.example" : "a.example");
		put16(&m, DNS_TYPE_CNAME);
		put16(&m, 1);
		put32(&m, 30);
		put16(&m, 11);
		putname(&m, i % 2 ? "a.example" : "b.example");
	}
	assert_int_equal(parse(&m, "a.example", DNS_TYPE_A, &a, &why), -EBADMSG);
	assert_string_equal(why, "too many aliases");
}

static void expect_bad_at(int line, struct msg *m, const char *q, const char *want_why)
{
	struct dns_answer a;
	const char *why = NULL;

	if (parse(m, q, DNS_TYPE_A, &a, &why) != -EBADMSG || strcmp(why, want_why) != 0)
		fail_msg("line %d: want \"%s\", got \"%s\"", line, want_why, why ? why : "(accepted)");
}
#define expect_bad(m, q, w) expect_bad_at(__LINE__, m, q, w)

static void test_spoofed(void **state)
{
	struct msg m;

	head(&m, 0, 1, 0, "host.example", DNS_TYPE_A);
	rr_a(&m, "host.example", 60, 1);
	m.b[1] ^= 1;
	expect_bad(&m, "host.example", "another id");
	m.b[1] ^= 1;
	m.b[2] &= 0x7f;
	expect_bad(&m, "host.example", "not a response");
	m.b[2] |= 0x80 | 0x10;
	expect_bad(&m, "host.example", "another opcode");
	m.b[2] &= ~0x10;
	expect_bad(&m, "other.example", "another name's answer");
	expect_bad(&m, "host.example.com", "another name's answer");
	m.b[5] = 2;
	expect_bad(&m, "host.example", "not one question");
	m.b[5] = 1;
	m.b[12 + 14 + 1] = DNS_TYPE_AAAA;
	expect_bad(&m, "host.example", "another type or class");
	m.b[12 + 14 + 1] = DNS_TYPE_A;
	m.b[12 + 14 + 3] = 3;	/* CH */
	expect_bad(&m, "host.example", "another type or class");
	m.b[12 + 14 + 3] = 1;
	m.b[3] = 0x81;	/* FORMERR back: not a response to this query */
	expect_bad(&m, "host.example", "an unknown response code");
}

static void test_truncated(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;
	size_t full;

	head(&m, 0, 1, 0, "host.example", DNS_TYPE_A);
	rr_a(&m, "host.example", 60, 1);
	full = m.n;
	assert_int_equal(parse(&m, "host.example", DNS_TYPE_A, &a, &why), 0);
	/* Every shorter prefix is refused, none read past its end. */
	for (m.n = 0; m.n < full; m.n++)
		assert_int_equal(parse(&m, "host.example", DNS_TYPE_A, &a, &why), -EBADMSG);
	/* An rdlength past the end. */
	m.n = full;
	m.b[full - 5] = 5;
	expect_bad(&m, "host.example", "an answer runs past the end");
	m.b[full - 5] = 3;
	expect_bad(&m, "host.example", "an address of the wrong length");
}

static void test_counts(void **state)
{
	struct msg m;

	head(&m, 0, 1, 0, "host.example", DNS_TYPE_A);
	rr_a(&m, "host.example", 60, 1);
	m.b[6] = m.b[7] = 0xff;
	expect_bad(&m, "host.example", "counts the message cannot hold");
	m.b[6] = 0;
	m.b[7] = 1;
	m.b[8] = m.b[9] = 0xff;
	expect_bad(&m, "host.example", "counts the message cannot hold");
	/* Two answers counted, one present: room for the count, not the record. */
	m.b[8] = m.b[9] = 0;
	m.b[7] = 2;
	expect_bad(&m, "host.example", "an answer runs past the end");
}

/* Compression pointers: to itself, forwards, a loop of two, and the
 * bound on a name's length through pointers. */
static void test_pointers(void **state)
{
	struct msg m;
	size_t owner;

	head(&m, 0, 1, 0, "host.example", DNS_TYPE_A);
	owner = m.n;
	put16(&m, 0xc000 | owner);	/* points at itself */
	put16(&m, DNS_TYPE_A);
	put16(&m, 1);
	put32(&m, 60);
	put16(&m, 4);
	put32(&m, 0x01020304);
	expect_bad(&m, "host.example", "an answer runs past the end");
	m.b[owner + 1] = (u8)(owner + 2);	/* forwards */
	expect_bad(&m, "host.example", "an answer runs past the end");
	m.b[owner + 1] = 12;	/* to the question's name: valid */
	struct dns_answer a;
	const char *why;
	assert_int_equal(parse(&m, "host.example", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.n, 1);

	/* A loop of two: label "x", then a pointer back to a pointer that
	 * leads to the label again. */
	head(&m, 0, 1, 0, "host.example", DNS_TYPE_A);
	owner = m.n;
	put8(&m, 1);
	put8(&m, 'x');
	put16(&m, 0xc000 | owner);	/* back to "x": not before the labels it ends */
	put16(&m, DNS_TYPE_A);
	put16(&m, 1);
	put32(&m, 60);
	put16(&m, 4);
	put32(&m, 0x01020304);
	expect_bad(&m, "host.example", "an answer runs past the end");

	/* n labels "a" chained by backwards pointers (each ends in a pointer
	 * to the one before, the first to the question's root byte) in the
	 * data of a record of an unknown type, the next answer's owner
	 * pointing at the last: 127 labels are 255 wire bytes (another name's
	 * answer, ignored), 128 are 257, refused. */
	for (int n = 127; n <= 128; n++) {
		head(&m, 0, 2, 0, "a", DNS_TYPE_A);
		size_t prev = 12 + 2;	/* the question's root */

		putname(&m, "");
		put16(&m, 99);
		put16(&m, 1);
		put32(&m, 60);
		put16(&m, 4 * n);

		for (int i = 0; i < n; i++) {
			size_t here = m.n;

			put8(&m, 1);
			put8(&m, 'a');
			put16(&m, 0xc000 | prev);
			prev = here;
		}
		put16(&m, 0xc000 | prev);
		put16(&m, DNS_TYPE_A);
		put16(&m, 1);
		put32(&m, 60);
		put16(&m, 4);
		put32(&m, 0x01020304);
		if (n == 127) {
			assert_int_equal(parse(&m, "a", DNS_TYPE_A, &a, &why), 0);
			assert_int_equal(a.result, DNS_NODATA);
		} else {
			expect_bad(&m, "a", "an answer runs past the end");
		}
	}
}

static void test_negative(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;

	head(&m, 3, 0, 1, "nope.example.com", DNS_TYPE_A);
	rr_soa(&m, "example.com", 3600, 900);
	assert_int_equal(parse(&m, "nope.example.com", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.result, DNS_NXDOMAIN);
	assert_true(a.has_soa);
	assert_int_equal(a.ttl, 900);	/* min(TTL, MINIMUM): RFC 2308 section 5 */

	/* NODATA: no error, no address; the SOA's TTL the lesser. */
	head(&m, 0, 0, 1, "v4only.example.com", DNS_TYPE_AAAA);
	rr_soa(&m, "example.com", 60, 900);
	assert_int_equal(parse(&m, "v4only.example.com", DNS_TYPE_AAAA, &a, &why), 0);
	assert_int_equal(a.result, DNS_NODATA);
	assert_int_equal(a.ttl, 60);

	/* An SOA of a zone the name is not in is not taken; nor a root-
	 * looking prefix match ("ample.com" is not an ancestor). */
	head(&m, 3, 0, 2, "nope.example.com", DNS_TYPE_A);
	rr_soa(&m, "example.org", 3600, 3600);
	rr_soa(&m, "ample.com", 3600, 3600);
	assert_int_equal(parse(&m, "nope.example.com", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.result, DNS_NXDOMAIN);
	assert_false(a.has_soa);

	/* A short SOA. */
	head(&m, 3, 0, 1, "nope.example.com", DNS_TYPE_A);
	rr_soa(&m, "com", 3600, 3600);
	m.b[m.n - 22 - 1] = 21;
	m.n -= 1;
	expect_bad(&m, "nope.example.com", "a short SOA");
}

static void test_failures(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;

	head(&m, 2, 0, 0, "host.example", DNS_TYPE_A);	/* SERVFAIL */
	assert_int_equal(parse(&m, "host.example", DNS_TYPE_A, &a, &why), -EAGAIN);
	head(&m, 5, 0, 0, "host.example", DNS_TYPE_A);	/* REFUSED */
	assert_int_equal(parse(&m, "host.example", DNS_TYPE_A, &a, &why), -EAGAIN);
	head(&m, 0, 0, 0, "host.example", DNS_TYPE_A);
	m.b[2] |= 0x02;	/* TC */
	assert_int_equal(parse(&m, "host.example", DNS_TYPE_A, &a, &why), -EAGAIN);
	assert_string_equal(why, "truncated");
}

/* RFC 2181 section 8: a TTL with the top bit set counts as 0; more than
 * DNS_ADDRS_MAX addresses keep the first ones; AAAA's length. */
static void test_ttl_and_bounds(void **state)
{
	struct msg m;
	struct dns_answer a;
	const char *why;

	head(&m, 0, 12, 0, "many.example", DNS_TYPE_A);
	for (int i = 0; i < 12; i++)
		rr_a(&m, "many.example", i == 10 ? 0x80000000u : 1000, (u8)i);
	assert_int_equal(parse(&m, "many.example", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.n, DNS_ADDRS_MAX);
	assert_int_equal(a.addr[7][3], 7);
	assert_int_equal(a.ttl, 1000);	/* the ignored ones do not count */
	head(&m, 0, 1, 0, "big.example", DNS_TYPE_A);
	rr_a(&m, "big.example", 0xffffffffu, 1);
	assert_int_equal(parse(&m, "big.example", DNS_TYPE_A, &a, &why), 0);
	assert_int_equal(a.ttl, 0);

	head(&m, 0, 1, 0, "six.example", DNS_TYPE_AAAA);
	putname(&m, "six.example");
	put16(&m, DNS_TYPE_AAAA);
	put16(&m, 1);
	put32(&m, 50);
	put16(&m, 16);
	for (int i = 0; i < 16; i++)
		put8(&m, (unsigned)i);
	assert_int_equal(parse(&m, "six.example", DNS_TYPE_AAAA, &a, &why), 0);
	assert_int_equal(a.alen, 16);
	assert_int_equal(a.addr[0][15], 15);

	/* A label holding a dot would read as another name: refused. */
	head(&m, 0, 1, 0, "host.example", DNS_TYPE_A);
	put8(&m, 3);
	memcpy(m.b + m.n, "a.b", 3);
	m.n += 3;
	put8(&m, 0);
	put16(&m, DNS_TYPE_A);
	put16(&m, 1);
	put32(&m, 1);
	put16(&m, 4);
	put32(&m, 1);
	expect_bad(&m, "host.example", "an answer runs past the end");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query),	     cmocka_unit_test(test_answer),
		cmocka_unit_test(test_cname),	     cmocka_unit_test(test_cname_loop),
		cmocka_unit_test(test_spoofed),	     cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_counts),	     cmocka_unit_test(test_pointers),
		cmocka_unit_test(test_negative),     cmocka_unit_test(test_failures),
		cmocka_unit_test(test_ttl_and_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
