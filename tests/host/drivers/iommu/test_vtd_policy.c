/* drivers/iommu/vtd_policy.c: iommu= values (on is strict), which units are
 * used in each mode, what every covered function gets when translation
 * turns on, and how context entries are counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/iommu/vtd_policy.h"

enum { PASS = 1, BLOCK = 2 };	/* the domain ids vtd.c reserves */

static void test_mode_values(void **state)
{
	(void)state;
	assert_string_equal(vtd_mode_choices[VTD_MODE_OFF], "off");
	assert_string_equal(vtd_mode_choices[VTD_MODE_PERMISSIVE], "permissive");
	assert_string_equal(vtd_mode_choices[VTD_MODE_STRICT], "strict");
	assert_string_equal(vtd_mode_choices[VTD_MODE_ON], "on");
	assert_null(vtd_mode_choices[VTD_MODE_ON + 1]);
	assert_int_equal(vtd_policy_mode(VTD_MODE_OFF), VTD_MODE_OFF);
	assert_int_equal(vtd_policy_mode(VTD_MODE_PERMISSIVE), VTD_MODE_PERMISSIVE);
	assert_int_equal(vtd_policy_mode(VTD_MODE_STRICT), VTD_MODE_STRICT);
	assert_int_equal(vtd_policy_mode(VTD_MODE_ON), VTD_MODE_STRICT);	/* the old iommu=on */
	assert_int_equal(vtd_policy_mode(-1), VTD_MODE_STRICT);
	assert_int_equal(vtd_policy_mode(99), VTD_MODE_STRICT);
}

/* permissive needs pass-through for what it does not translate; strict
 * blocks it instead, so a unit without ECAP.PT is usable there. */
static void test_unit_usable(void **state)
{
	(void)state;
	assert_false(vtd_policy_unit_usable(VTD_MODE_OFF, true));
	assert_false(vtd_policy_unit_usable(VTD_MODE_OFF, false));
	assert_true(vtd_policy_unit_usable(VTD_MODE_PERMISSIVE, true));
	assert_false(vtd_policy_unit_usable(VTD_MODE_PERMISSIVE, false));
	assert_true(vtd_policy_unit_usable(VTD_MODE_STRICT, true));
	assert_true(vtd_policy_unit_usable(VTD_MODE_STRICT, false));
	assert_true(vtd_policy_unit_usable(VTD_MODE_ON, false));
}

/* strict: blocked from the moment translation turns on, RMRR devices in a
 * domain holding only their reserved regions; permissive: pass-through. */
static void test_start(void **state)
{
	(void)state;
	assert_int_equal(vtd_policy_start(VTD_MODE_STRICT, false), VTD_START_BLOCKED);
	assert_int_equal(vtd_policy_start(VTD_MODE_ON, false), VTD_START_BLOCKED);
	assert_int_equal(vtd_policy_start(VTD_MODE_STRICT, true), VTD_START_RESERVED);
	assert_int_equal(vtd_policy_start(VTD_MODE_PERMISSIVE, false), VTD_START_PASS);
	assert_int_equal(vtd_policy_start(VTD_MODE_PERMISSIVE, true), VTD_START_PASS);
}

static void test_state(void **state)
{
	(void)state;
	assert_int_equal(vtd_policy_state(PASS, PASS, BLOCK, 0), VTD_STATE_PASS);
	assert_int_equal(vtd_policy_state(BLOCK, PASS, BLOCK, 0), VTD_STATE_BLOCKED);
	assert_int_equal(vtd_policy_state(7, PASS, BLOCK, 12), VTD_STATE_TRANSLATED);
	/* a domain of its own that maps nothing (emptied, or RMRRs only) blocks */
	assert_int_equal(vtd_policy_state(7, PASS, BLOCK, 0), VTD_STATE_BLOCKED);
	assert_string_equal(vtd_state_names[VTD_STATE_BLOCKED], "blocked");
	assert_string_equal(vtd_state_names[VTD_STATE_TRANSLATED], "translated");
	assert_string_equal(vtd_state_names[VTD_STATE_PASS], "pass-through");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mode_values),
		cmocka_unit_test(test_unit_usable),
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
