/* net/acme/b64url.c: RFC 4648's test vectors (section 10, unpadded),
 * both alphabets' last characters, every length round-tripped, strictness
 * (padding, the standard alphabet, white space, a length of 1 mod 4,
 * non-zero unused bits), and the output bounds. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/acme/b64url.h"

static void test_vectors(void **state)
{
	static const char *in[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *out[] = { "", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy" };
	char buf[16];
	u8 back[16];
	size_t n;

	for (int i = 0; i < 7; i++) {
		assert_int_equal(b64url_encode(in[i], strlen(in[i]), buf, sizeof(buf), &n), 0);
		assert_string_equal(buf, out[i]);
		assert_int_equal(n, B64URL_LEN(strlen(in[i])));
		assert_int_equal(b64url_decode(out[i], strlen(out[i]), back, sizeof(back), &n), 0);
		assert_int_equal(n, strlen(in[i]));
		assert_memory_equal(back, in[i], n);
	}
	/* 0xfb 0xff: '+' and '/' in base64, '-' and '_' here. */
	assert_int_equal(b64url_encode("\xfb\xff", 2, buf, sizeof(buf), &n), 0);
	assert_string_equal(buf, "-_8");
}

static void test_roundtrip(void **state)
{
	u8 data[80], back[80];
	char text[120];
	size_t n, m;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (u8)(i * 37 + 11);
	for (size_t len = 0; len <= sizeof(data); len++) {
		assert_int_equal(b64url_encode(data, len, text, sizeof(text), &n), 0);
		assert_int_equal(strlen(text), n);
		assert_int_equal(b64url_decode(text, n, back, len, &m), 0);
		assert_int_equal(m, len);
		assert_memory_equal(back, data, len);
		/* One byte short of room either way. */
		assert_int_equal(b64url_encode(data, len, text, n, &m), -1);
		if (len)
			assert_int_equal(b64url_decode(text, n, back, len - 1, &m), -1);
	}
}

static void test_strict(void **state)
{
	static const char *bad[] = { "Zg==", "Zm9v\n", "Zm+v", "Zm/v", "Z", "Zm9vY", "Zh", "Zm9", "Zm9vYmF", " Zg", "Zg." };
	u8 out[16];
	size_t n;

	/* "Zh": 'h' leaves bits set past the byte; "Zm9"/"Zm9vYmF" likewise
	 * ("Zm8" and "Zm9vYmE" are the canonical texts). */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (b64url_decode(bad[i], strlen(bad[i]), out, sizeof(out), &n) != -1)
			fail_msg("accepted \"%s\"", bad[i]);
	assert_int_equal(b64url_decode("Zm8", 3, out, sizeof(out), &n), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_strict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
