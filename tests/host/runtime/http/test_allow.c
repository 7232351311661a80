/* runtime/http/allow.c: prefix lists (IPv4, IPv6, mapped), their errors, and
 * matching at the prefix's edges. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/http/allow.h"

/* a as 16 bytes: IPv6 text through the parser itself would prove nothing,
 * so addresses are spelled out as bytes here. */
static void v4(u8 a[16], u8 b0, u8 b1, u8 b2, u8 b3)
{
	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	a[12] = b0, a[13] = b1, a[14] = b2, a[15] = b3;
}

static void v6(u8 a[16], u16 g0, u16 g1, u16 g2, u16 g3, u16 g7)
{
	u16 g[8] = { g0, g1, g2, g3, 0, 0, 0, g7 };

	for (int i = 0; i < 8; i++)
		a[2 * i] = (u8)(g[i] >> 8), a[2 * i + 1] = (u8)g[i];
}

static void test_ipv4_prefixes(void **state)
{
	struct allow_list l;
	char why[64];
	u8 a[16];

	assert_int_equal(allow_parse("10.0.0.0/8,192.168.7.2", &l, why, sizeof why), 0);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.p[0].len, 96 + 8);
	assert_int_equal(l.p[1].len, 128);
	v4(a, 10, 255, 255, 255);
	assert_true(allow_match(&l, a));
	v4(a, 11, 0, 0, 0);
	assert_false(allow_match(&l, a));
	v4(a, 9, 255, 255, 255);
	assert_false(allow_match(&l, a));
	v4(a, 192, 168, 7, 2);
	assert_true(allow_match(&l, a));
	v4(a, 192, 168, 7, 3);
	assert_false(allow_match(&l, a));
	/* A non-byte length: /23's edges. */
	assert_int_equal(allow_parse("172.16.2.0/23", &l, why, sizeof why), 0);
	v4(a, 172, 16, 3, 255);
	assert_true(allow_match(&l, a));
	v4(a, 172, 16, 4, 0);
	assert_false(allow_match(&l, a));
	v4(a, 172, 16, 1, 255);
	assert_false(allow_match(&l, a));
	/* 0.0.0.0/0: every IPv4 client, no IPv6 one. */
	assert_int_equal(allow_parse("0.0.0.0/0", &l, why, sizeof why), 0);
	v4(a, 1, 2, 3, 4);
	assert_true(allow_match(&l, a));
	v6(a, 0x2001, 0xdb8, 0, 0, 1);
	assert_false(allow_match(&l, a));
}

static void test_ipv6_prefixes(void **state)
{
	struct allow_list l;
	char why[64];
	u8 a[16];

	assert_int_equal(allow_parse("2001:db8::/32,fd00:0:0:1::/64,::1", &l, why, sizeof why), 0);
	assert_int_equal(l.n, 3);
	v6(a, 0x2001, 0xdb8, 0xffff, 0xffff, 0xffff);
	assert_true(allow_match(&l, a));
	v6(a, 0x2001, 0xdb9, 0, 0, 0);
	assert_false(allow_match(&l, a));
	v6(a, 0xfd00, 0, 0, 1, 0x1234);
	assert_true(allow_match(&l, a));
	v6(a, 0xfd00, 0, 0, 2, 0);
	assert_false(allow_match(&l, a));
	v6(a, 0, 0, 0, 0, 1);
	assert_true(allow_match(&l, a));
	v6(a, 0, 0, 0, 0, 2);
	assert_false(allow_match(&l, a));
	/* Full and compressed forms, the gap in every place, upper case. */
	assert_int_equal(allow_parse("1:2:3:4:5:6:7:8,1::8,1:2:3:4:5:6:7::,::2:3:4:5:6:7:8,FD00::/8", &l, why,
				     sizeof why), 0);
	assert_int_equal(l.n, 5);
	assert_int_equal(l.p[0].a[15], 8);
	assert_int_equal(l.p[0].a[1], 1);
	assert_int_equal(l.p[1].a[1], 1);
	assert_int_equal(l.p[1].a[15], 8);
	assert_int_equal(l.p[1].a[13], 0);
	assert_int_equal(l.p[2].a[13], 7);
	assert_int_equal(l.p[2].a[15], 0);
	assert_int_equal(l.p[3].a[1], 0);
	assert_int_equal(l.p[3].a[3], 2);
	assert_int_equal(l.p[4].a[0], 0xfd);
	assert_int_equal(l.p[4].len, 8);
	/* A /57: one bit past a byte. */
	assert_int_equal(allow_parse("2001:db8:0:80::/57", &l, why, sizeof why), 0);
	v6(a, 0x2001, 0xdb8, 0, 0xff, 0);
	assert_true(allow_match(&l, a));
	v6(a, 0x2001, 0xdb8, 0, 0x7f, 0);
	assert_false(allow_match(&l, a));
}

/* IPv4 is matched as ::ffff:A.B.C.D: a mapped prefix and the IPv4 one are
 * the same list entry; ::/0 is everyone, both families. */
static void test_mapped(void **state)
{
	struct allow_list l, m;
	char why[64];
	u8 a[16];

	assert_int_equal(allow_parse("::ffff:10.1.0.0/112", &l, why, sizeof why), 0);
	assert_int_equal(allow_parse("10.1.0.0/16", &m, why, sizeof why), 0);
	assert_memory_equal(&l.p[0], &m.p[0], sizeof l.p[0]);
	assert_int_equal(allow_parse("::ffff:0:0/96", &l, why, sizeof why), 0);
	v4(a, 8, 8, 8, 8);
	assert_true(allow_match(&l, a));
	v6(a, 0x2001, 0xdb8, 0, 0, 1);
	assert_false(allow_match(&l, a));
	assert_int_equal(allow_parse("::/0", &l, why, sizeof why), 0);
	assert_true(allow_match(&l, a));
	v4(a, 8, 8, 8, 8);
	assert_true(allow_match(&l, a));
	/* An IPv4-compatible (not mapped) address is not the IPv4 one. */
	assert_int_equal(allow_parse("::10.0.0.1", &l, why, sizeof why), 0);
	v4(a, 10, 0, 0, 1);
	assert_false(allow_match(&l, a));
	/* The default list (empty, shown as ::/0) lets everyone in. */
	assert_int_equal(metrics_allow.n, 0);
	assert_true(allow_match(&metrics_allow, a));
	v6(a, 0x2001, 0xdb8, 0, 0, 1);
	assert_true(allow_match(&metrics_allow, a));
}

/* The 16-byte form from lwIP addresses and back, and prefix edges. */
static void test_address_forms(void **state)
{
	ip_addr_t ip, back;
	u8 a[16], b[16];

	IP_ADDR4(&ip, 192, 0, 2, 7);
	allow_addr_ip(a, &ip);
	v4(b, 192, 0, 2, 7);
	assert_memory_equal(a, b, 16);
	allow_addr_v4(a, 0xc0000207u);
	assert_memory_equal(a, b, 16);
	allow_addr_to_ip(&back, a);
	assert_true(IP_IS_V4(&back));
	assert_true(ip_addr_cmp(&back, &ip));

	v6(b, 0x2001, 0xdb8, 0, 0, 0x42);
	allow_addr_to_ip(&back, b);
	assert_true(IP_IS_V6(&back));
	allow_addr_ip(a, &back);
	assert_memory_equal(a, b, 16);
	/* IPv4-compatible is not mapped: it stays IPv6. */
	v4(b, 10, 0, 0, 1);
	b[10] = b[11] = 0;
	allow_addr_to_ip(&back, b);
	assert_true(IP_IS_V6(&back));

	v4(a, 10, 1, 2, 3);
	v4(b, 10, 1, 0, 0);
	assert_true(allow_prefix_match(b, 96 + 16, a));
	assert_false(allow_prefix_match(b, 96 + 23, a));
	assert_true(allow_prefix_match(b, 96 + 22, a));
	assert_true(allow_prefix_match(b, 0, a));
	assert_false(allow_prefix_match(b, 128, a));
	assert_true(allow_prefix_match(a, 128, a));
	(void)state;
}

static void test_errors_keep_the_list(void **state)
{
	static const struct {
		const char *in, *why;
	} bad[] = {
		{ "", "'': empty" },
		{ "10.0.0.0/8,", "'': empty" },
		{ ",10.0.0.0/8", "'': empty" },
		{ "10.0.0.1/8", "'10.0.0.1/8': host bits set" },
		{ "10.0.0.0/33", "'10.0.0.0/33': bad IPv4 prefix" },
		{ "10.0.0.0/", "'10.0.0.0/': bad IPv4 prefix" },
		{ "10.0.0.0/08", "'10.0.0.0/08': bad IPv4 prefix" },
		{ "10.0.0.0/8x", "'10.0.0.0/8x': bad IPv4 prefix" },
		{ "::/129", "'::/129': bad length" },
		{ "::/1280", "'::/1280': bad length" },
		{ "fd00::1/64", "'fd00::1/64': host bits set" },
		{ "/8", "'/8': bad IPv4 prefix" },
		{ "10.0.0", "'10.0.0': bad IPv4 prefix" },
		{ "10.0.0.256", "'10.0.0.256': bad IPv4 prefix" },
		{ "10.0.0.01", "'10.0.0.01': bad IPv4 prefix" },
		{ "1.2.3.4.5", "'1.2.3.4.5': bad IPv4 prefix" },
		{ "1::2::3", "'1::2::3': bad IPv6 prefix" },
		{ ":::", "':::': bad IPv6 prefix" },
		{ ":1::", "':1::': bad IPv6 prefix" },
		{ "1:", "'1:': bad IPv6 prefix" },
		{ "1:2:3:4:5:6:7", "'1:2:3:4:5:6:7': bad IPv6 prefix" },
		{ "1:2:3:4:5:6:7:8:9", "'1:2:3:4:5:6:7:8:9': bad IPv6 prefix" },
		{ "1:2:3:4::5:6:7:8", "'1:2:3:4::5:6:7:8': bad IPv6 prefix" },
		{ "12345::", "'12345::': bad IPv6 prefix" },
		{ "fe80::1%eth0", "'fe80::1%eth0': bad IPv6 prefix" },
		{ "g::", "'g::': bad IPv6 prefix" },
		{ "1:2:3:4:5:6:7:1.2.3.4", "'1:2:3:4:5:6:7:1.2.3.4': bad IPv6 prefix" },
		{ "::ffff:1.2.3", "'::ffff:1.2.3': bad IPv6 prefix" },
		{ "::1.2.3.4:5", "'::1.2.3.4:5': bad IPv6 prefix" },
		{ "10.0.0.0/8 ", "'10.0.0.0/8 ': bad IPv4 prefix" },
		{ "1111:2222:3333:4444:5555:6666:7777:8888:9999:aaaa:bbbb:cccc",
		  "'1111:2222:3333:4444:5555:6666:7777:8888:': too long" },
		{ "1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5,6.6.6.6,7.7.7.7,8.8.8.8,9.9.9.9",
		  "'9.9.9.9': over 8 prefixes" },
	};
	struct allow_list l;
	char why[64];

	assert_int_equal(allow_parse("192.0.2.0/24", &l, why, sizeof why), 0);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct allow_list before = l;

		why[0] = '\0';
		assert_int_equal(allow_parse(bad[i].in, &l, why, sizeof why), -EINVAL);
		assert_string_equal(why, bad[i].why);
		assert_memory_equal(&l, &before, sizeof l);
	}
	/* The longest prefix fits. */
	assert_int_equal(allow_parse("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128", &l, why, sizeof why), 0);
	assert_int_equal(l.p[0].a[15], 255);
	/* Eight is the bound, not seven. */
	assert_int_equal(allow_parse("1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4,5.5.5.5,6.6.6.6,7.7.7.7,8.8.8.8", &l, why,
				     sizeof why), 0);
	assert_int_equal(l.n, ALLOW_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_prefixes),
		cmocka_unit_test(test_ipv6_prefixes),
		cmocka_unit_test(test_mapped),
		cmocka_unit_test(test_address_forms),
		cmocka_unit_test(test_errors_keep_the_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
