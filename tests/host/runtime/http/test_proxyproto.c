/* runtime/http/proxyproto.c: both header versions as HAProxy sends them,
 * every prefix of a good header is "more", and the malformed and oversized
 * ones are refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1),
		cmocka_unit_test(test_v1_refused),
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v2_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
