/* net/clients/resolv.c's pure parts: which ntp= values are host names, and the
 * dns= parser as the boot runs it (through kernel/config.c). */
/* lwIP's headers first: the port's cc.h defines BYTE_ORDER as lwIP wants. */
#include "net/clients/resolv.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/config.h"
#include "tests/host/shim/hostk.h"

static void test_names(void **state)
{
	static const char *const good[] = { "time.vireo.test", "pool.ntp.org", "a", "ntp-1.example", "x9.y" };
	static const char *const bad[] = { "", "10.0.0.1", "1.2.3", ".a", "-a", "a..b", "a b", "a_b", "a/b",
					   "\xc3\xa9t\xc3\xa9", "a:123" };
	char long_name[300];

	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
		if (!resolv_is_name(good[i]))
			fail_msg("%s refused", good[i]);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (resolv_is_name(bad[i]))
			fail_msg("%s taken as a name", bad[i]);
	memset(long_name, 'a', sizeof long_name);
	long_name[253] = '\0';
	assert_true(resolv_is_name(long_name));
	long_name[253] = 'a';
	long_name[254] = '\0';
	assert_false(resolv_is_name(long_name));
}

static void test_dns_key(void **state)
{
	hk_log_reset();
	assert_int_equal(config_parse("dns=10.0.0.1"), 0);
	assert_int_equal(config_parse("dns=10.0.0.1,10.0.0.2"), 0);
	assert_int_equal(config_parse("dns=1.2.3 dns=10.0.0.1, dns=,10.0.0.1 dns=1.1.1.1,2.2.2.2,3.3.3.3 dns=0.0.0.0 dns="),
			 6);
	assert_true(hk_log_contains("warning: cmdline: dns=1.2.3: want one or two A.B.C.D, comma-separated"));
	assert_int_equal(config_parse("ntp=time.vireo.test ntp=10.0.0.1 ntp=off"), 0);
	assert_int_equal(config_parse("ntp=bad_name! ntp=1.2.3"), 2);
	assert_true(hk_log_contains("warning: cmdline: ntp=bad_name!: want off, dhcp, a server's A.B.C.D or its name"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_dns_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
