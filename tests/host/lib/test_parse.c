/* lib/parse.c: parse_dec's bounds, errors and where it leaves *sp. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/parse.h"

static void test_dec_values_and_end(void **state)
{
	const char *s = "0", *t = "4294967295,x", *u = "18446744073709551615";
	u64 v = 7;

	assert_int_equal(parse_dec(&s, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(*s, '\0');
	assert_int_equal(parse_dec(&t, UINT32_MAX, &v), 0);
	assert_int_equal(v, UINT32_MAX);
	assert_int_equal(*t, ',');	/* stops at the first non-digit */
	assert_int_equal(parse_dec(&u, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
}

static void test_dec_errors_move_nothing(void **state)
{
	static const struct {
		const char *in;
		u64 max;
		int err;
	} cases[] = {
		{ "", 10, -EINVAL },
		{ "x1", 10, -EINVAL },
		{ "-1", 10, -EINVAL },
		{ " 1", 10, -EINVAL },
		{ "11", 10, -ERANGE },
		{ "256", 255, -ERANGE },
		{ "9", 8, -ERANGE },
		{ "1", 0, -ERANGE },
		{ "18446744073709551616", UINT64_MAX, -ERANGE },	/* 2^64 */
		{ "99999999999999999999999", UINT64_MAX, -ERANGE },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *s = cases[i].in;
		u64 v = 42;

		assert_int_equal(parse_dec(&s, cases[i].max, &v), cases[i].err);
		assert_ptr_equal(s, cases[i].in);
		assert_int_equal(v, 42);
	}
}

static void test_dec_max_is_inclusive(void **state)
{
	const char *s = "255";
	u64 v;

	assert_int_equal(parse_dec(&s, 255, &v), 0);
	assert_int_equal(v, 255);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dec_values_and_end),
		cmocka_unit_test(test_dec_errors_move_nothing),
		cmocka_unit_test(test_dec_max_is_inclusive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
