/* runtime/egress.c: every refused range refused by default, at both of its
 * edges, with its neighbours outside allowed; each let through when
 * egress.allow= lists it, and only what is listed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/egress.h"

/* Addresses spelled out as bytes (not through the parser under test). */
static const u8 *v4(u8 b0, u8 b1, u8 b2, u8 b3)
{
	static u8 a[16];

	memset(a, 0, 16);
	a[10] = a[11] = 0xff;
	a[12] = b0, a[13] = b1, a[14] = b2, a[15] = b3;
	return a;
}

static const u8 *v6(u16 g0, u16 g1, u16 g7)
{
	static u8 a[16];
	u16 g[8] = { g0, g1, 0, 0, 0, 0, 0, g7 };

	for (int i = 0; i < 8; i++)
		a[2 * i] = (u8)(g[i] >> 8), a[2 * i + 1] = (u8)g[i];
	return a;
}

static const u8 *v6_last(u16 g0, u16 fill)	/* g0 then every other group fill */
{
	static u8 a[16];

	a[0] = (u8)(g0 >> 8), a[1] = (u8)g0;
	for (int i = 2; i < 16; i++)
		a[i] = (u8)(fill >> (i % 2 ? 0 : 8));
	return a;
}

/* Each range: its first and last address refused with its kind, the
 * addresses just outside allowed (unless another range starts there). */
static void test_ipv4_ranges_refused(void **state)
{
	egress_allow.n = 0;
	assert_int_equal(egress_check(v4(0, 0, 0, 0)), EGRESS_UNSPECIFIED);
	assert_int_equal(egress_check(v4(0, 255, 255, 255)), EGRESS_UNSPECIFIED);
	assert_int_equal(egress_check(v4(1, 0, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(9, 255, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(10, 0, 0, 0)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(10, 255, 255, 255)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(11, 0, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(126, 255, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(127, 0, 0, 1)), EGRESS_LOOPBACK);
	assert_int_equal(egress_check(v4(127, 255, 255, 255)), EGRESS_LOOPBACK);
	assert_int_equal(egress_check(v4(128, 0, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(169, 253, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(169, 254, 0, 0)), EGRESS_LINK_LOCAL);
	assert_int_equal(egress_check(v4(169, 254, 169, 254)), EGRESS_LINK_LOCAL);	/* metadata */
	assert_int_equal(egress_check(v4(169, 254, 255, 255)), EGRESS_LINK_LOCAL);
	assert_int_equal(egress_check(v4(169, 255, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(172, 15, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(172, 16, 0, 0)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(172, 31, 255, 255)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(172, 32, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(192, 167, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(192, 168, 0, 0)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(192, 168, 255, 255)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(192, 169, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(223, 255, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(224, 0, 0, 0)), EGRESS_MULTICAST);
	assert_int_equal(egress_check(v4(239, 255, 255, 255)), EGRESS_MULTICAST);
	assert_int_equal(egress_check(v4(240, 0, 0, 0)), EGRESS_BROADCAST);
	assert_int_equal(egress_check(v4(255, 255, 255, 255)), EGRESS_BROADCAST);
	assert_int_equal(egress_check(v4(93, 184, 216, 34)), EGRESS_OK);
}

static void test_ipv6_ranges_refused(void **state)
{
	egress_allow.n = 0;
	assert_int_equal(egress_check(v6(0, 0, 0)), EGRESS_UNSPECIFIED);
	assert_int_equal(egress_check(v6(0, 0, 1)), EGRESS_LOOPBACK);
	assert_int_equal(egress_check(v6(0, 0, 2)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0xfe7f, 0xffff, 0xffff)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0xfe80, 0, 0)), EGRESS_LINK_LOCAL);
	assert_int_equal(egress_check(v6_last(0xfebf, 0xffff)), EGRESS_LINK_LOCAL);
	assert_int_equal(egress_check(v6(0xfec0, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v6_last(0xfbff, 0xffff)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0xfc00, 0, 0)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v6_last(0xfdff, 0xffff)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v6(0xfe00, 0, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0xff02, 0, 1)), EGRESS_MULTICAST);
	assert_int_equal(egress_check(v6_last(0xffff, 0xffff)), EGRESS_MULTICAST);
	assert_int_equal(egress_check(v6(0x2001, 0xdb8, 1)), EGRESS_OK);
	assert_string_equal(egress_kind_name(EGRESS_LINK_LOCAL), "link-local");
}

/* egress.allow= lets through what it lists, to the bit, and nothing else. */
static void test_allow_list(void **state)
{
	char why[64];

	assert_int_equal(allow_parse("169.254.169.254,192.168.7.0/24,fd00::/64", &egress_allow, why, sizeof why), 0);
	assert_int_equal(egress_check(v4(169, 254, 169, 254)), EGRESS_OK);
	assert_int_equal(egress_check(v4(169, 254, 169, 253)), EGRESS_LINK_LOCAL);
	assert_int_equal(egress_check(v4(169, 254, 169, 255)), EGRESS_LINK_LOCAL);
	assert_int_equal(egress_check(v4(192, 168, 7, 0)), EGRESS_OK);
	assert_int_equal(egress_check(v4(192, 168, 7, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v4(192, 168, 6, 255)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(192, 168, 8, 0)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v6(0xfd00, 0, 5)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0xfd00, 1, 5)), EGRESS_PRIVATE);
	assert_int_equal(egress_check(v4(127, 0, 0, 1)), EGRESS_LOOPBACK);
	assert_int_equal(egress_check(v6(0, 0, 1)), EGRESS_LOOPBACK);
	/* Every range, allowed whole. */
	assert_int_equal(allow_parse("0.0.0.0/1,128.0.0.0/1,::/1,8000::/1", &egress_allow, why, sizeof why), 0);
	assert_int_equal(egress_check(v4(127, 0, 0, 1)), EGRESS_OK);
	assert_int_equal(egress_check(v4(10, 1, 2, 3)), EGRESS_OK);
	assert_int_equal(egress_check(v4(255, 255, 255, 255)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0xfe80, 0, 1)), EGRESS_OK);
	assert_int_equal(egress_check(v6(0, 0, 0)), EGRESS_OK);
	/* A bad list is refused whole: the policy stays as it was. */
	assert_int_equal(allow_parse("10.0.0.0/8,nonsense", &egress_allow, why, sizeof why), -EINVAL);
	assert_int_equal(egress_check(v4(10, 1, 2, 3)), EGRESS_OK);
	egress_allow.n = 0;
	assert_int_equal(egress_check(v4(10, 1, 2, 3)), EGRESS_PRIVATE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_ranges_refused),
		cmocka_unit_test(test_ipv6_ranges_refused),
		cmocka_unit_test(test_allow_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
