/* runtime/keep_rec.c, the records runtime/acme_state.c keeps on the
 * store: a record written reads back field for field; a record of
 * another kind, version or field count, a length past the end, bytes
 * after the last field, and the record cut at every length are each
 * refused with a reason, never read past (ASan). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "runtime/keep_rec.h"

static const char chain[] = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
static const unsigned char key[] = { 0x30, 0x77, 0x02, 0x01, 0x01 };

static size_t make(u8 *out, size_t cap, u64 at)
{
	u8 n[8];

	keep_u64_put(n, at);
	return keep_rec_put(out, cap, 3,
			    (struct keep_field[]){ { "https://ca/dir", 14 }, { "a.test", 6 }, { chain, sizeof chain - 1 },
						   { key, sizeof key }, { n, 8 } },
			    5);
}

static void test_round_trip(void **state)
{
	u8 rec[256];
	struct keep_field f[5];
	size_t len = make(rec, sizeof rec, 1234567890123ull);
	u64 at;

	(void)state;
	assert_int_equal(len, KEEP_HDR + 5 * 4 + 14 + 6 + sizeof chain - 1 + sizeof key + 8);
	assert_null(keep_rec_get(rec, len, 3, f, 5));
	assert_true(keep_str_is(&f[0], "https://ca/dir"));
	assert_false(keep_str_is(&f[0], "https://ca/dir2"));
	assert_false(keep_str_is(&f[1], "a.tes"));
	assert_true(keep_str_is(&f[1], "a.test"));
	assert_int_equal(f[2].len, sizeof chain - 1);
	assert_memory_equal(f[2].p, chain, f[2].len);
	assert_memory_equal(f[3].p, key, sizeof key);
	assert_true(keep_u64_get(&f[4], &at));
	assert_int_equal(at, 1234567890123ull);
	assert_false(keep_u64_get(&f[3], &at));	/* not 8 bytes */
	/* an empty field */
	len = keep_rec_put(rec, sizeof rec, 2, (struct keep_field[]){ { "d", 1 }, { key, 5 }, { "", 0 } }, 3);
	assert_null(keep_rec_get(rec, len, 2, f, 3));
	assert_int_equal(f[2].len, 0);
	assert_true(keep_str_is(&f[2], ""));
}

static void test_refused(void **state)
{
	u8 rec[256], *copy;
	struct keep_field f[5];
	size_t len = make(rec, sizeof rec, 7);

	(void)state;
	/* too small a buffer: nothing written */
	assert_int_equal(make(rec, len - 1, 7), 0);
	len = make(rec, sizeof rec, 7);
	assert_int_equal(keep_rec_put(rec, sizeof rec, 1, f, KEEP_FIELDS_MAX + 1), 0);
	assert_string_equal(keep_rec_get(rec, len, 2, f, 5), "a record of another kind");
	assert_string_equal(keep_rec_get(rec, len, 3, f, 4), "a record with another number of fields");
	rec[2] = 2;
	assert_string_equal(keep_rec_get(rec, len, 3, f, 5), "a record version this build does not read");
	rec[2] = 1;
	rec[0] = 'X';
	assert_string_equal(keep_rec_get(rec, len, 3, f, 5), "not a kept record");
	rec[0] = 'V';
	/* every cut: refused, and read only inside the copy (ASan) */
	for (size_t cut = 0; cut < len; cut++) {
		copy = malloc(cut ? cut : 1);
		memcpy(copy, rec, cut);
		assert_non_null(keep_rec_get(copy, cut, 3, f, 5));
		free(copy);
	}
	/* a byte more */
	rec[len] = 0;
	assert_string_equal(keep_rec_get(rec, len + 1, 3, f, 5), "bytes after the last field");
	/* a length past the end */
	rec[KEEP_HDR + 4 + 14] = 0xff;
	assert_string_equal(keep_rec_get(rec, len, 3, f, 5), "a field longer than the record");
	rec[KEEP_HDR + 4 + 14 + 3] = 0xff;	/* 4 GiB: no overflow */
	assert_string_equal(keep_rec_get(rec, len, 3, f, 5), "a field longer than the record");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
