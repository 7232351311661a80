/* runtime/http/proxyproto.c: both header versions as HAProxy sends them,
 * every prefix of a good header is "more", and the malformed and oversized
 * ones are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/http/allow.h"
#include "runtime/http/proxyproto.h"

static const u8 sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

static void mapped(u8 a[16], u8 b0, u8 b1, u8 b2, u8 b3)
{
	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	a[12] = b0, a[13] = b1, a[14] = b2, a[15] = b3;
}

/* Every strict prefix of a good header asks for more. */
static void assert_prefixes_need_more(const u8 *b, size_t n)
{
	struct proxyproto_hdr h;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(proxyproto_parse(b, i, &h), 0);
}

static void test_v1(void **state)
{
	static const char tcp4[] = "PROXY TCP4 192.0.2.7 198.51.100.1 56324 80\r\nGET / HTTP/1.1\r\n";
	static const char tcp6[] = "PROXY TCP6 2001:db8::7 2001:db8:0:1::ff 65535 0\r\n";
	struct proxyproto_hdr h;
	u8 a[16];
	size_t n4 = strlen("PROXY TCP4 192.0.2.7 198.51.100.1 56324 80\r\n");

	(void)state;
	assert_int_equal(proxyproto_parse((const u8 *)tcp4, strlen(tcp4), &h), (int)n4);
	assert_int_equal(h.family, 4);
	mapped(a, 192, 0, 2, 7);
	assert_memory_equal(h.src, a, 16);
	mapped(a, 198, 51, 100, 1);
	assert_memory_equal(h.dst, a, 16);
	assert_int_equal(h.sport, 56324);
	assert_int_equal(h.dport, 80);
	assert_prefixes_need_more((const u8 *)tcp4, n4);

	assert_int_equal(proxyproto_parse((const u8 *)tcp6, strlen(tcp6), &h), (int)strlen(tcp6));
	assert_int_equal(h.family, 6);
	assert_int_equal(h.src[0], 0x20);
	assert_int_equal(h.src[15], 7);
	assert_int_equal(h.dst[7], 1);
	assert_int_equal(h.sport, 65535);
	assert_int_equal(h.dport, 0);

	assert_int_equal(proxyproto_parse((const u8 *)"PROXY UNKNOWN\r\n", 15, &h), 15);
	assert_int_equal(h.family, 0);
	assert_int_equal(proxyproto_parse((const u8 *)"PROXY UNKNOWN ffff::1 ::1 1 2\r\n", 31, &h), 31);
	assert_int_equal(h.family, 0);
}

static void test_v1_refused(void **state)
{
	static const char *const bad[] = {
		"GET / HTTP/1.1\r\n",				/* not a header: HTTP */
		"PROXY TCP4 192.0.2.7 198.51.100.1 56324\r\n",	/* a port missing */
		"PROXY TCP4 192.0.2.7 198.51.100.1 56324 80 9\r\n",
		"PROXY TCP4 192.0.2.7  198.51.100.1 1 2\r\n",	/* two spaces */
		"PROXY TCP4 2001:db8::1 198.51.100.1 1 2\r\n",	/* the wrong family */
		"PROXY TCP6 192.0.2.7 ::1 1 2\r\n",
		"PROXY TCP4 192.0.2.256 198.51.100.1 1 2\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 65536 2\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 01 2\r\n",	/* a leading zero */
		"PROXY TCP4 192.0.2.7 198.51.100.1 -1 2\r\n",
		"PROXY UDP4 192.0.2.7 198.51.100.1 1 2\r\n",
		"PROXY TCP4 192.0.2.7 198.51.100.1 1 2\n",	/* bare LF */
		"PROXY TCP4 192.0.2.7 198.51.100.1 1 2\rX",
		"PROXY \r\n",
		"proxy TCP4 192.0.2.7 198.51.100.1 1 2\r\n",
	};
	static char longline[200];
	struct proxyproto_hdr h;

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(proxyproto_parse((const u8 *)bad[i], strlen(bad[i]), &h), -EINVAL);
	/* No CRLF within 107 bytes. */
	memcpy(longline, "PROXY TCP6 ", 11);
	memset(longline + 11, '1', sizeof longline - 11);
	assert_int_equal(proxyproto_parse((const u8 *)longline, 106, &h), 0);
	assert_int_equal(proxyproto_parse((const u8 *)longline, 107, &h), -EINVAL);
	assert_int_equal(proxyproto_parse((const u8 *)longline, sizeof longline, &h), -EINVAL);
}

static size_t v2(u8 *b, u8 ver_cmd, u8 fam, const u8 *addr, size_t alen, size_t tlv)
{
	memcpy(b, sig, 12);
	b[12] = ver_cmd;
	b[13] = fam;
	b[14] = (u8)((alen + tlv) >> 8);
	b[15] = (u8)(alen + tlv);
	if (alen)
		memcpy(b + 16, addr, alen);
	memset(b + 16 + alen, 0xee, tlv);
	return 16 + alen + tlv;
}

static void test_v2(void **state)
{
	static const u8 a4[12] = { 192, 0, 2, 7, 198, 51, 100, 1, 0xdc, 0x04, 0x00, 0x50 };
	u8 a6[36], b[600], want[16];
	struct proxyproto_hdr h;
	size_t n;

	(void)state;
	n = v2(b, 0x21, 0x11, a4, sizeof a4, 0);
	b[n] = 'G';	/* HTTP follows */
	assert_int_equal(proxyproto_parse(b, n + 1, &h), (int)n);
	assert_int_equal(h.family, 4);
	mapped(want, 192, 0, 2, 7);
	assert_memory_equal(h.src, want, 16);
	assert_int_equal(h.sport, 56324);
	assert_int_equal(h.dport, 80);
	assert_prefixes_need_more(b, n);

	for (int i = 0; i < 36; i++)
		a6[i] = (u8)i;
	n = v2(b, 0x21, 0x21, a6, sizeof a6, 40);	/* with TLVs, skipped */
	assert_int_equal(proxyproto_parse(b, n, &h), (int)n);
	assert_int_equal(h.family, 6);
	assert_memory_equal(h.src, a6, 16);
	assert_memory_equal(h.dst, a6 + 16, 16);
	assert_int_equal(h.sport, 32 << 8 | 33);
	assert_int_equal(h.dport, 34 << 8 | 35);

	n = v2(b, 0x20, 0x00, NULL, 0, 0);	/* LOCAL: a health check */
	assert_int_equal(proxyproto_parse(b, n, &h), 16);
	assert_int_equal(h.family, 0);
	n = v2(b, 0x20, 0x11, a4, sizeof a4, 0);	/* LOCAL with addresses: ignored */
	assert_int_equal(proxyproto_parse(b, n, &h), (int)n);
	assert_int_equal(h.family, 0);

	/* The longest taken, and one byte more. */
	n = v2(b, 0x21, 0x11, a4, sizeof a4, PROXYPROTO_MAX - 16 - sizeof a4);
	assert_int_equal(proxyproto_parse(b, n, &h), PROXYPROTO_MAX);
	n = v2(b, 0x21, 0x11, a4, sizeof a4, PROXYPROTO_MAX - 16 - sizeof a4 + 1);
	assert_int_equal(proxyproto_parse(b, 16, &h), -E2BIG);	/* known from the length alone */
}

static void test_v2_refused(void **state)
{
	static const u8 a4[12] = { 1 };
	u8 b[64];
	struct proxyproto_hdr h;
	size_t n;

	(void)state;
	n = v2(b, 0x11, 0x11, a4, sizeof a4, 0);	/* version 1 in a v2 header */
	assert_int_equal(proxyproto_parse(b, n, &h), -EINVAL);
	n = v2(b, 0x22, 0x11, a4, sizeof a4, 0);	/* command 2 */
	assert_int_equal(proxyproto_parse(b, n, &h), -EINVAL);
	n = v2(b, 0x21, 0x12, a4, sizeof a4, 0);	/* UDP */
	assert_int_equal(proxyproto_parse(b, n, &h), -EINVAL);
	n = v2(b, 0x21, 0x31, a4, sizeof a4, 0);	/* AF_UNIX */
	assert_int_equal(proxyproto_parse(b, n, &h), -EINVAL);
	n = v2(b, 0x21, 0x11, a4, 11, 0);	/* too short for IPv4 */
	assert_int_equal(proxyproto_parse(b, n, &h), -EINVAL);
	n = v2(b, 0x21, 0x21, a4, 12, 0);	/* too short for IPv6 */
	assert_int_equal(proxyproto_parse(b, n, &h), -EINVAL);
	memcpy(b, sig, 12);
	b[5] = 0;	/* a broken signature */
	assert_int_equal(proxyproto_parse(b, 12, &h), -EINVAL);
	assert_int_equal(proxyproto_parse(b, 6, &h), -EINVAL);
	assert_int_equal(proxyproto_parse(b, 5, &h), 0);
}

/* A trusted peer's plain HTTP is told from a header by its first bytes
 * that differ from both signatures; a prefix of either waits. */
static void test_absent(void **state)
{
	(void)state;
	assert_true(proxyproto_absent((const u8 *)"GET / HTTP/1.1", 1));
	assert_false(proxyproto_absent((const u8 *)"P", 1));
	assert_true(proxyproto_absent((const u8 *)"PUT", 2));
	assert_true(proxyproto_absent((const u8 *)"POST", 2));
	assert_false(proxyproto_absent((const u8 *)"PROXY ", 6));
	assert_false(proxyproto_absent((const u8 *)"PROXY TCP4", 10));
	assert_true(proxyproto_absent((const u8 *)"PROXYX", 6));
	assert_false(proxyproto_absent(sig, 12));
	assert_false(proxyproto_absent(sig, 4));
	assert_true(proxyproto_absent((const u8 *)"\r\n\r\nx", 5));
}

static const char *xff_one(const char *trusted, const char *hop, const char *const vals[], size_t n,
			   unsigned *hops)
{
	static char out[64];
	struct allow_list l = { 0 };
	u8 h[16], c[16];
	char why[64];

	assert_int_equal(allow_parse(trusted, &l, why, sizeof why), 0);
	{
		struct allow_list one = { 0 };

		assert_int_equal(allow_parse(hop, &one, why, sizeof why), 0);
		memcpy(h, one.p[0].a, 16);
	}
	*hops = proxyproto_xff_client(&l, h, vals, n, c);
	if (c[10] == 0xff && c[11] == 0xff && !c[0])
		snprintf(out, sizeof out, "%u.%u.%u.%u", c[12], c[13], c[14], c[15]);
	else
		snprintf(out, sizeof out, "%02x%02x:%02x%02x::%02x%02x", c[0], c[1], c[2], c[3], c[14], c[15]);
	return out;
}

/* X-Forwarded-For: the rightmost address that is not a trusted proxy's;
 * what a client wrote itself, left of that, is never taken; a garbled
 * element stops the walk at the trusted hop before it; nothing from an
 * untrusted hop. */
static void test_xff(void **state)
{
	unsigned hops;

	(void)state;
	/* One proxy (10.0.0.5) appended the client it saw. */
	assert_string_equal(xff_one("10.0.0.0/24", "10.0.0.5", (const char *[]){ "198.51.100.9" }, 1, &hops),
			    "198.51.100.9");
	assert_int_equal(hops, 1);
	/* The client's own entries (1.1.1.1, 2.2.2.2) left of it: ignored. */
	assert_string_equal(xff_one("10.0.0.0/24", "10.0.0.5",
				    (const char *[]){ "1.1.1.1, 2.2.2.2,198.51.100.9" }, 1, &hops),
			    "198.51.100.9");
	assert_int_equal(hops, 1);
	/* Two trusted proxies, the second adding a field of its own. */
	assert_string_equal(xff_one("10.0.0.0/24,192.0.2.0/24", "10.0.0.5",
				    (const char *[]){ "1.1.1.1, 203.0.113.7", " 192.0.2.4 " }, 2, &hops),
			    "203.0.113.7");
	assert_int_equal(hops, 2);
	/* IPv6 clients and proxies. */
	assert_string_equal(xff_one("fd00::/64", "fd00::1", (const char *[]){ "2001:db8:1:2::77" }, 1, &hops),
			    "2001:0db8::0077");
	/* Every entry trusted: the leftmost stands. */
	assert_string_equal(xff_one("10.0.0.0/8", "10.0.0.5", (const char *[]){ "10.1.1.1, 10.2.2.2" }, 1, &hops),
			    "10.1.1.1");
	assert_int_equal(hops, 2);
	/* Garbled (unknown, a port, brackets, empty): the trusted hop before it. */
	static const char *const bad[] = { "unknown", "198.51.100.9:443", "[2001:db8::1]", "", " , ", "1.2.3",
					   "999.1.1.1", "0123456789012345678901234567890123456789012345" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_string_equal(xff_one("10.0.0.0/24", "10.0.0.5", &bad[i], 1, &hops), "10.0.0.5");
		assert_int_equal(hops, 0);
	}
	assert_string_equal(xff_one("10.0.0.0/24", "10.0.0.5", (const char *[]){ "1.1.1.1, unknown, 10.0.0.9" }, 1,
				    &hops), "10.0.0.9");
	/* An untrusted hop (the PROXY header named the client): its own. */
	assert_string_equal(xff_one("10.0.0.0/24", "198.51.100.9", (const char *[]){ "1.1.1.1" }, 1, &hops),
			    "198.51.100.9");
	assert_int_equal(hops, 0);
	/* No field at all. */
	assert_string_equal(xff_one("10.0.0.0/24", "10.0.0.5", NULL, 0, &hops), "10.0.0.5");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1),
		cmocka_unit_test(test_v1_refused),
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v2_refused),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_xff),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
