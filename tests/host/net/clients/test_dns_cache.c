/* net/clients/dns_cache.c: TTLs within their floor and ceiling, negative
 * answers, expiry, the bound (entries from memory, LRU replacement) and
 * the same name and type replaced in place. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/clients/dns_cache.h"

static struct dns_answer ans(u32 ttl, u8 last)
{
	struct dns_answer a = { .result = DNS_ANSWER, .n = 1, .alen = 4, .ttl = ttl };

	a.addr[0][0] = 192;
	a.addr[0][3] = last;
	return a;
}

static void test_sizes(void **state)
{
	assert_int_equal(dns_cache_entries(0), DNS_CACHE_MIN);
	assert_int_equal(dns_cache_entries(128ull << 20), 128);
	assert_int_equal(dns_cache_entries(64ull << 30), DNS_CACHE_MAX);
	/* The header's arithmetic: 408 B an entry, 104 KiB at the most. */
	assert_int_equal(sizeof(struct dns_cache_entry), 408);
	assert_true(DNS_CACHE_MAX * sizeof(struct dns_cache_entry) <= 104 * 1024);
}

static void test_ttl_rules(void **state)
{
	struct dns_answer a = ans(0, 1);

	assert_int_equal(dns_cache_ttl(&a), DNS_TTL_FLOOR_S);
	a.ttl = 77;
	assert_int_equal(dns_cache_ttl(&a), 77);
	a.ttl = 86400;
	assert_int_equal(dns_cache_ttl(&a), DNS_TTL_CEIL_S);
	a = (struct dns_answer){ .result = DNS_NXDOMAIN, .ttl = 900, .has_soa = true };
	assert_int_equal(dns_cache_ttl(&a), DNS_NEG_TTL_CEIL_S);
	a.ttl = 60;
	assert_int_equal(dns_cache_ttl(&a), 60);
	a.ttl = 1;
	assert_int_equal(dns_cache_ttl(&a), DNS_NEG_TTL_FLOOR_S);
	a = (struct dns_answer){ .result = DNS_NODATA, .ttl = 900, .has_soa = false };
	assert_int_equal(dns_cache_ttl(&a), DNS_NEG_TTL_FLOOR_S);	/* no SOA: the floor only */
}

static void test_hit_and_expiry(void **state)
{
	struct dns_cache_entry e[DNS_CACHE_MIN];
	struct dns_cache c;
	struct dns_answer a = ans(60, 5);
	struct dns_answer nx = { .result = DNS_NXDOMAIN, .ttl = 30, .has_soa = true };
	const struct dns_cache_entry *h;

	dns_cache_init(&c, e, DNS_CACHE_MIN);
	assert_null(dns_cache_get(&c, "a.example", DNS_TYPE_A, 1000));
	dns_cache_put(&c, "a.example", DNS_TYPE_A, &a, 1000);
	dns_cache_put(&c, "nope.example", DNS_TYPE_A, &nx, 1000);
	h = dns_cache_get(&c, "a.example", DNS_TYPE_A, 1000 + 59999);
	assert_non_null(h);
	assert_int_equal(h->result, DNS_ANSWER);
	assert_int_equal(h->addr[0][3], 5);
	assert_int_equal(dns_cache_ttl_left(h, 1000 + 59999), 1);
	assert_int_equal(dns_cache_ttl_left(h, 1000), 60);
	assert_null(dns_cache_get(&c, "a.example", DNS_TYPE_AAAA, 2000));	/* another type */
	assert_null(dns_cache_get(&c, "a.example", DNS_TYPE_A, 1000 + 60000));	/* expired */
	assert_null(dns_cache_get(&c, "a.example", DNS_TYPE_A, 1000));	/* and freed */
	h = dns_cache_get(&c, "nope.example", DNS_TYPE_A, 1000 + 29999);
	assert_non_null(h);
	assert_int_equal(h->result, DNS_NXDOMAIN);
	assert_int_equal(h->n, 0);
	assert_null(dns_cache_get(&c, "nope.example", DNS_TYPE_A, 1000 + 30000));
}

/* The same name and type replaced in place; a full cache replaces the
 * least recently used, an expired entry before any live one; past the
 * bound nothing grows. */
static void test_bound(void **state)
{
	struct dns_cache_entry *e = calloc(DNS_CACHE_MIN + 1, sizeof *e);
	struct dns_cache c;
	char name[32];
	struct dns_answer a;

	memset(&e[DNS_CACHE_MIN], 0x5a, sizeof e[0]);	/* a guard past the end */
	dns_cache_init(&c, e, DNS_CACHE_MIN);
	for (u32 i = 0; i < DNS_CACHE_MIN; i++) {
		snprintf(name, sizeof name, "h%u.example", i);
		a = ans(3600, (u8)i);
		dns_cache_put(&c, name, DNS_TYPE_A, &a, 1000 + i);
	}
	assert_int_equal(c.evicted, 0);
	a = ans(3600, 99);
	dns_cache_put(&c, "h3.example", DNS_TYPE_A, &a, 5000);	/* in place */
	assert_int_equal(c.evicted, 0);
	assert_int_equal(dns_cache_get(&c, "h3.example", DNS_TYPE_A, 5001)->addr[0][3], 99);
	/* h0 is used, so h1 is the least recently used. */
	assert_non_null(dns_cache_get(&c, "h0.example", DNS_TYPE_A, 5002));
	a = ans(3600, 200);
	dns_cache_put(&c, "new.example", DNS_TYPE_A, &a, 5003);
	assert_int_equal(c.evicted, 1);
	assert_null(dns_cache_get(&c, "h1.example", DNS_TYPE_A, 5004));
	assert_non_null(dns_cache_get(&c, "h0.example", DNS_TYPE_A, 5004));
	assert_non_null(dns_cache_get(&c, "h2.example", DNS_TYPE_A, 5004));
	/* A short-lived entry, expired, goes before any live one. */
	a = ans(5, 7);
	dns_cache_put(&c, "h5.example", DNS_TYPE_A, &a, 6000);
	a = ans(3600, 201);
	dns_cache_put(&c, "newer.example", DNS_TYPE_A, &a, 6000 + 5000);
	assert_int_equal(c.evicted, 1);
	assert_null(dns_cache_get(&c, "h5.example", DNS_TYPE_A, 11001));
	/* Many more names: the entries stay DNS_CACHE_MIN, the guard intact. */
	for (u32 i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "x%u.example", i);
		dns_cache_put(&c, name, DNS_TYPE_A, &a, 20000 + i);
	}
	assert_int_equal(c.evicted, 1 + 1000);	/* full: every new name replaced one */
	for (size_t i = 0; i < sizeof e[0]; i++)
		assert_int_equal(((u8 *)&e[DNS_CACHE_MIN])[i], 0x5a);
	free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_ttl_rules),
		cmocka_unit_test(test_hit_and_expiry),
		cmocka_unit_test(test_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
