/* net/acme/acme_json.c: RFC 8259's grammar both ways (tables of texts that
 * must parse and must not), decoding (escapes, surrogate pairs, UTF-8),
 * duplicate names at any level, the size, depth and token bounds pushed
 * past by one, lookups in RFC 8555's shapes, and the writer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/acme/acme_json.h"

static struct acme_json_tok toks[256];

static int parse(struct acme_json *j, const char *s)
{
	return acme_json_parse(j, s, strlen(s), toks, 256);
}

static void test_valid(void **state)
{
	static const char *ok[] = {
		"{}", "[]", "0", "-0", "1.5e+10", "-12.25E-3", "\"\"", "true", "false", "null",
		" \t\r\n{ \"a\" : [ 1 , 2 ] } \n", "[[[]]]", "{\"a\":{\"a\":1}}", "\"\\u00e9\\ud83d\\ude00\"",
		"\"\xc3\xa9\xf0\x9f\x98\x80\x7f\"", "[\"a\",{\"b\":null}]", "{\"a\":1,\"A\":2}",
	};
	struct acme_json j;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		int r = parse(&j, ok[i]);

		if (r != AJ_OK)
			fail_msg("%s: %d", ok[i], r);
	}
}

static void test_invalid(void **state)
{
	static const struct { const char *s; int err; } bad[] = {
		{ "", AJ_E_SYNTAX }, { " ", AJ_E_SYNTAX }, { "{", AJ_E_SYNTAX }, { "[1,]", AJ_E_SYNTAX },
		{ "{\"a\":1,}", AJ_E_SYNTAX }, { "{\"a\" 1}", AJ_E_SYNTAX }, { "{a:1}", AJ_E_SYNTAX },
		{ "01", AJ_E_SYNTAX }, { "1.", AJ_E_SYNTAX }, { ".5", AJ_E_SYNTAX }, { "1e", AJ_E_SYNTAX },
		{ "+1", AJ_E_SYNTAX }, { "-", AJ_E_SYNTAX }, { "tru", AJ_E_SYNTAX }, { "nul", AJ_E_SYNTAX },
		{ "{} {}", AJ_E_SYNTAX }, { "\"a", AJ_E_SYNTAX }, { "\"\\x\"", AJ_E_SYNTAX },
		{ "\"\\u12\"", AJ_E_SYNTAX }, { "\"a\tb\"", AJ_E_SYNTAX }, { "'a'", AJ_E_SYNTAX },
		{ "\xef\xbb\xbf{}", AJ_E_SYNTAX }, { "[1 2]", AJ_E_SYNTAX }, { "NaN", AJ_E_SYNTAX },
		{ "\"\\ud800\"", AJ_E_UTF8 }, { "\"\\udc00\"", AJ_E_UTF8 }, { "\"\\ud800\\u0041\"", AJ_E_UTF8 },
		{ "\"\xc0\xaf\"", AJ_E_UTF8 }, { "\"\xe0\x80\xaf\"", AJ_E_UTF8 }, { "\"\xed\xa0\x80\"", AJ_E_UTF8 },
		{ "\"\xf4\x90\x80\x80\"", AJ_E_UTF8 }, { "\"\x80\"", AJ_E_UTF8 }, { "\"\xc3\"", AJ_E_UTF8 },
		{ "{\"a\":1,\"a\":2}", AJ_E_DUPKEY }, { "{\"a\":1,\"\\u0061\":2}", AJ_E_DUPKEY },
		{ "[{\"x\":{\"k\":1,\"b\":[],\"k\":true}}]", AJ_E_DUPKEY },
	};
	struct acme_json j;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse(&j, bad[i].s);

		if (r != bad[i].err)
			fail_msg("%zu \"%s\": %d, not %d", i, bad[i].s, r, bad[i].err);
		assert_true(acme_json_strerror(r)[0]);
	}
	/* A NUL inside the text is a control character, not an end. */
	assert_int_equal(acme_json_parse(&j, "\"a\0b\"", 5, toks, 256), AJ_E_SYNTAX);
}

static void test_bounds(void **state)
{
	static char big[ACME_JSON_SIZE_MAX + 2];
	struct acme_json j;
	char deep[2 * ACME_JSON_DEPTH_MAX + 3];

	/* Depth: ACME_JSON_DEPTH_MAX arrays parse, one more does not. */
	memset(deep, 0, sizeof(deep));
	memset(deep, '[', ACME_JSON_DEPTH_MAX);
	memset(deep + ACME_JSON_DEPTH_MAX, ']', ACME_JSON_DEPTH_MAX);
	assert_int_equal(parse(&j, deep), AJ_OK);
	memset(deep, '[', ACME_JSON_DEPTH_MAX + 1);
	memset(deep + ACME_JSON_DEPTH_MAX + 1, ']', ACME_JSON_DEPTH_MAX + 1);
	assert_int_equal(parse(&j, deep), AJ_E_DEPTH);

	/* Size: a string of exactly the cap parses, one byte more does not. */
	memset(big, 'a', sizeof(big));
	big[0] = '"';
	big[ACME_JSON_SIZE_MAX - 1] = '"';
	assert_int_equal(acme_json_parse(&j, big, ACME_JSON_SIZE_MAX, toks, 256), AJ_OK);
	big[ACME_JSON_SIZE_MAX - 1] = 'a';
	big[ACME_JSON_SIZE_MAX] = '"';
	assert_int_equal(acme_json_parse(&j, big, ACME_JSON_SIZE_MAX + 1, toks, 256), AJ_E_SIZE);

	/* Tokens: [1,2,3] is 4; with 3 it is refused, and nothing is written
	 * past the array given. */
	struct acme_json_tok few[4];

	memset(few, 0xa5, sizeof(few));
	assert_int_equal(acme_json_parse(&j, "[1,2,3]", 7, few, 3), AJ_E_TOKENS);
	assert_int_equal(few[3].off, 0xa5a5a5a5u);
	assert_int_equal(acme_json_parse(&j, "[1,2,3]", 7, few, 4), AJ_OK);
	assert_int_equal(j.used, 4);
	/* {"a":1} is 3: a name is a token too. */
	assert_int_equal(acme_json_parse(&j, "{\"a\":1}", 7, few, 2), AJ_E_TOKENS);
}

/* RFC 8555 section 7.1.3's order, with an error and a problem inside. */
static const char order[] =
	"{\n  \"status\": \"pending\",\n  \"expires\": \"2016-01-05T14:09:07.99Z\",\n"
	"  \"notBefore\": \"2016-01-01T00:00:00Z\",\n  \"identifiers\": [\n"
	"    { \"type\": \"dns\", \"value\": \"www.example.org\" },\n"
	"    { \"type\": \"dns\", \"value\": \"example.org\" }\n  ],\n"
	"  \"authorizations\": [\n    \"https://example.com/acme/authz/PAniVnsZcis\",\n"
	"    \"https://example.com/acme/authz/r4HqLzrSrpI\"\n  ],\n"
	"  \"finalize\": \"https://example.com/acme/order/TOlocE8rfgo/finalize\",\n"
	"  \"error\": {\"type\": \"urn:ietf:params:acme:error:malformed\", \"status\": 400,"
	" \"detail\": \"caf\\u00e9 \\\"x\\\"\"}\n}";

static void test_lookup(void **state)
{
	struct acme_json j;
	char buf[64];
	size_t n;
	u64 v;
	int ids, e;

	assert_int_equal(parse(&j, order), AJ_OK);
	assert_int_equal(acme_json_type(&j, 0), AJ_OBJECT);
	assert_int_equal(j.t[0].n, 7);
	assert_true(acme_json_str_is(&j, acme_json_get(&j, 0, "status"), "pending"));
	assert_false(acme_json_str_is(&j, acme_json_get(&j, 0, "status"), "pend"));
	assert_false(acme_json_str_is(&j, acme_json_get(&j, 0, "status"), "pendingx"));
	assert_int_equal(acme_json_get(&j, 0, "Status"), -1);
	assert_int_equal(acme_json_get(&j, 0, "nope"), -1);
	ids = acme_json_get(&j, 0, "identifiers");
	assert_int_equal(acme_json_type(&j, ids), AJ_ARRAY);
	assert_int_equal(j.t[ids].n, 2);
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, acme_json_at(&j, ids, 1), "value"), buf,
				       sizeof(buf), &n), 0);
	assert_string_equal(buf, "example.org");
	assert_int_equal(n, 11);
	assert_int_equal(acme_json_at(&j, ids, 2), -1);
	/* Iterating by sibling gives the same elements as acme_json_at(). */
	int a = acme_json_at(&j, acme_json_get(&j, 0, "authorizations"), 0);

	assert_int_equal(acme_json_sibling(&j, a), acme_json_at(&j, acme_json_get(&j, 0, "authorizations"), 1));
	assert_true(acme_json_str_is(&j, acme_json_sibling(&j, a), "https://example.com/acme/authz/r4HqLzrSrpI"));
	/* Lookups chain through -1. */
	assert_int_equal(acme_json_get(&j, acme_json_get(&j, 0, "missing"), "x"), -1);
	assert_int_equal(acme_json_type(&j, -1), -1);
	e = acme_json_get(&j, 0, "error");
	assert_int_equal(acme_json_uint(&j, acme_json_get(&j, e, "status"), &v), 0);
	assert_int_equal(v, 400);
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, e, "detail"), buf, sizeof(buf), &n), 0);
	assert_string_equal(buf, "caf\xc3\xa9 \"x\"");
	/* No room: the exact size fits (with its NUL), one less does not. */
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, e, "detail"), buf, n + 1, NULL), 0);
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, e, "detail"), buf, n, NULL), -1);
	/* Wrong types. */
	assert_int_equal(acme_json_str(&j, ids, buf, sizeof(buf), NULL), -1);
	assert_int_equal(acme_json_uint(&j, acme_json_get(&j, 0, "status"), &v), -1);
	assert_int_equal(acme_json_at(&j, 0, 0), -1);
	assert_int_equal(acme_json_get(&j, ids, "type"), -1);
}

static void test_decode(void **state)
{
	struct acme_json j;
	char buf[32];
	size_t n;
	u64 v;

	assert_int_equal(parse(&j, "\"\\ud83d\\ude00\\u00e9\\u20ac\\/\\b\\f\\n\\r\\t\\\\\""), AJ_OK);
	assert_int_equal(acme_json_str(&j, 0, buf, sizeof(buf), &n), 0);
	assert_memory_equal(buf, "\xf0\x9f\x98\x80\xc3\xa9\xe2\x82\xac/\b\f\n\r\t\\", n);
	assert_int_equal(n, 16);
	assert_true(acme_json_str_is(&j, 0, "\xf0\x9f\x98\x80\xc3\xa9\xe2\x82\xac/\b\f\n\r\t\\"));
	/* U+0000 is valid JSON, never a C string. */
	assert_int_equal(parse(&j, "\"a\\u0000b\""), AJ_OK);
	assert_int_equal(acme_json_str(&j, 0, buf, sizeof(buf), &n), -1);
	/* Integers: JSON's safe range, no sign, fraction or exponent. */
	assert_int_equal(parse(&j, "9007199254740991"), AJ_OK);
	assert_int_equal(acme_json_uint(&j, 0, &v), 0);
	assert_true(v == 9007199254740991ull);
	assert_int_equal(parse(&j, "9007199254740992"), AJ_OK);
	assert_int_equal(acme_json_uint(&j, 0, &v), -1);
	assert_int_equal(parse(&j, "99999999999999999999999"), AJ_OK);
	assert_int_equal(acme_json_uint(&j, 0, &v), -1);
	assert_int_equal(parse(&j, "1.0"), AJ_OK);
	assert_int_equal(acme_json_uint(&j, 0, &v), -1);
	assert_int_equal(parse(&j, "-1"), AJ_OK);
	assert_int_equal(acme_json_uint(&j, 0, &v), -1);
}

static void test_writer(void **state)
{
	struct acme_json j;
	struct acme_jw w;
	char buf[128];
	char out[64];
	size_t len;

	acme_jw_init(&w, buf, sizeof(buf));
	acme_jw_raw(&w, "{", 1);
	acme_jw_key(&w, "termsOfServiceAgreed");
	acme_jw_raw(&w, "true", 4);
	acme_jw_key(&w, "contact");
	acme_jw_raw(&w, "[", 1);
	acme_jw_str(&w, "mailto:a\"b\\c\x01\x1f\xc3\xa9", 16);
	acme_jw_raw(&w, "]}", 2);
	assert_false(w.err);
	assert_string_equal(buf, "{\"termsOfServiceAgreed\":true,\"contact\":[\"mailto:a\\\"b\\\\c\\u0001\\u001f\xc3\xa9\"]}");
	/* What it writes reads back as what was given. */
	assert_int_equal(acme_json_parse(&j, buf, w.len, toks, 256), AJ_OK);
	assert_int_equal(acme_json_str(&j, acme_json_at(&j, acme_json_get(&j, 0, "contact"), 0), out,
				       sizeof(out), &len), 0);
	assert_memory_equal(out, "mailto:a\"b\\c\x01\x1f\xc3\xa9", 16);

	/* Full: err set, the text cut at a whole write, still a C string. */
	acme_jw_init(&w, buf, 8);
	acme_jw_raw(&w, "1234567", 7);
	assert_false(w.err);
	acme_jw_raw(&w, "8", 1);
	assert_true(w.err);
	assert_string_equal(buf, "1234567");
	acme_jw_raw(&w, "", 0);
	assert_true(w.err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),  cmocka_unit_test(test_invalid), cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_lookup), cmocka_unit_test(test_decode),  cmocka_unit_test(test_writer),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
