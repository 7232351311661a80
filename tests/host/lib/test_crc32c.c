/* lib/crc32c.c against the published CRC-32C check value ("123456789")
 * and RFC 3720's (iSCSI) B.4 vectors, then against a bit-at-a-time
 * reference on random data at every alignment and length up to 300 bytes,
 * and chaining (the CRC of a then b equals the CRC of a || b);
 * crc32c_extend() (a || b's CRC from a's and b's, b's taken with any seed)
 * against crc32c() over a || b, b of 0..300 bytes and up to 1 MiB. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/crc32c.h"

static u32 slow(const u8 *p, size_t n)
{
	u32 c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

static void test_vectors(void **state)
{
	u8 b[32];

	assert_int_equal(crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(crc32c(0, "", 0), 0);
	memset(b, 0, sizeof b);
	assert_int_equal(crc32c(0, b, 32), 0x8a9136aau);
	memset(b, 0xff, sizeof b);
	assert_int_equal(crc32c(0, b, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		b[i] = (u8)i;
	assert_int_equal(crc32c(0, b, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		b[i] = (u8)(31 - i);
	assert_int_equal(crc32c(0, b, 32), 0x113fdb5cu);
}

static void test_against_reference(void **state)
{
	u8 buf[320];

	srand(7);
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (u8)rand();
	for (size_t off = 0; off < 16; off++)
		for (size_t n = 0; n + off <= 300; n++) {
			u32 whole = crc32c(0, buf + off, n);

			assert_int_equal(whole, slow(buf + off, n));
			for (size_t cut = 0; cut <= n; cut += 7)
				assert_int_equal(crc32c(crc32c(0, buf + off, cut), buf + off + cut, n - cut), whole);
		}
}

static u32 next(u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (u32)(*x >> 16);
}

static void test_extend(void **state)
{
	size_t big = (1u << 20) + 77;
	u8 *buf = malloc(big + 64);
	u64 x = 12345;

	assert_non_null(buf);
	for (size_t i = 0; i < big + 64; i++)
		buf[i] = (u8)next(&x);
	for (size_t n = 0; n <= 300; n++)
		for (unsigned t = 0; t < 4; t++) {
			size_t na = next(&x) % 64;
			u32 s0 = t ? next(&x) : 0, seed = t & 1 ? next(&x) : 0;
			u32 a = crc32c(s0, buf, na), whole = crc32c(s0, buf, na + n);

			assert_int_equal(crc32c_extend(a, seed, crc32c(seed, buf + na, n), n), whole);
			/* a wrong length or part gives another value */
			assert_int_not_equal(crc32c_extend(a, seed, crc32c(seed, buf + na, n) ^ 1, n), whole);
		}
	for (size_t n = 301; n <= big; n = n * 3 + 1) {
		u32 seed = next(&x), s0 = next(&x);
		u32 a = crc32c(s0, buf, 40);

		assert_int_equal(crc32c_extend(a, seed, crc32c(seed, buf + 40, n), n), crc32c(s0, buf, 40 + n));
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_against_reference),
		cmocka_unit_test(test_extend),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
