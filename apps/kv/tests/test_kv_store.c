/* apps/kv/kv_store.c: keys and values and their bounds, the memory bound's
 * exact arithmetic and its refusals, strong ETags, conditional requests,
 * JSON escaping, cursors and paged prefix listings, and a long random run
 * against a shadow model with the tree's invariants checked throughout. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apps/kv/kv_store.h"

#define K(lit) (const u8 *)(lit), sizeof(lit) - 1

/* ---- an allocator with live counts and failure injection ---- */
static long live_blocks;
static size_t live_bytes;
static unsigned fail_next;

struct blk {
	size_t size;
	max_align_t pad[];
};

static void *t_alloc(size_t size)
{
	struct blk *b;

	if (fail_next) {
		fail_next--;
		return NULL;
	}
	b = malloc(sizeof *b + size);
	assert_non_null(b);
	b->size = size;
	live_blocks++;
	live_bytes += size;
	return b->pad;
}

static void t_free(void *p)
{
	struct blk *b;

	if (!p)
		return;
	b = (struct blk *)((char *)p - offsetof(struct blk, pad));
	live_blocks--;
	live_bytes -= b->size;
	free(b);
}

static struct kv_store S;

static void setup_store(size_t max_bytes, size_t value_max)
{
	struct kv_config c = {.max_bytes = max_bytes, .value_max = value_max,
			      .alloc = t_alloc, .free = t_free};

	memcpy(c.secret, "0123456789abcdef", 16);
	assert_int_equal(kv_store_init(&S, &c), 0);
}

static void teardown_store(void)
{
	assert_int_equal(kv_store_check(&S), 0);
	kv_store_clear(&S);
	assert_int_equal(S.count, 0);
	assert_int_equal(S.used, 0);
	assert_int_equal(live_blocks, 0);
}

/* What vireo_alloc(n) takes from the kernel heap: kmalloc(n + 16), a 32-byte
 * header and the payload in 16-byte steps. Written out independently of
 * kv_charge(). */
static size_t heap_block(size_t n)
{
	return 32 + (n + 16 + 15) / 16 * 16;
}

static void test_keys(void **st)
{
	u8 k[KV_KEY_MAX + 1];
	unsigned c;

	memset(k, 'a', sizeof k);
	assert_false(kv_key_valid(k, 0));
	assert_true(kv_key_valid(k, 1));
	assert_true(kv_key_valid(k, KV_KEY_MAX));
	assert_false(kv_key_valid(k, KV_KEY_MAX + 1));
	for (c = 0; c < 256; c++) {
		k[3] = (u8)c;
		assert_int_equal(kv_key_valid(k, 10), c >= 0x21 && c <= 0x7e);
	}
	assert_true(kv_key_valid(K("a/b\"c\\d%2F?#")));
}

static void test_charge_arithmetic(void **st)
{
	assert_int_equal(sizeof(struct kv_entry), KV_ENTRY_HDR);
	/* The header's own example: key "a", value "hello". */
	assert_int_equal(kv_charge(1, 5), 96);
	assert_int_equal(kv_charge(1, 0), 96);	/* the smallest entry */
	assert_int_equal(kv_charge(1, 15), 96);	/* 32 + 1 + 15 = 48, 16-byte steps exactly */
	assert_int_equal(kv_charge(1, 16), 112);
	for (size_t kl = 1; kl <= KV_KEY_MAX; kl += 13)
		for (size_t vl = 0; vl < 300; vl += 7)
			assert_int_equal(kv_charge(kl, vl), heap_block(KV_ENTRY_HDR + kl + vl));
	assert_int_equal(kv_charge(KV_KEY_MAX, KV_VALUE_CEIL),
			 48 + ((32 + 250 + 1048576 + 15) / 16) * 16);
}

static void test_put_get_delete(void **st)
{
	const struct kv_entry *e;
	char tag[KV_ETAG_LEN + 1], tag2[KV_ETAG_LEN + 1];
	static const u8 bin[] = {0, 1, 2, 0xff, 0, '\r', '\n', 0x80};

	setup_store(1 << 20, 4096);
	assert_int_equal(kv_get(&S, K("x"), NULL, NULL, &e), KV_NOT_FOUND);
	assert_int_equal(kv_put(&S, K("x"), bin, sizeof bin, NULL, NULL, tag), KV_CREATED);
	assert_int_equal(S.count, 1);
	assert_int_equal(S.used, kv_charge(1, sizeof bin));
	assert_int_equal(live_blocks, 1);
	assert_int_equal(live_bytes, KV_ENTRY_HDR + 1 + sizeof bin);
	assert_int_equal(kv_get(&S, K("x"), NULL, NULL, &e), KV_OK);
	assert_int_equal(e->vlen, sizeof bin);
	assert_memory_equal(kv_entry_value(e), bin, sizeof bin);
	assert_memory_equal(kv_entry_key(e), "x", 1);
	kv_entry_etag(e, tag2);
	assert_string_equal(tag, tag2);

	/* Replacing: 200, the new bytes, the new size accounted. */
	assert_int_equal(kv_put(&S, K("x"), "hello", 5, NULL, NULL, tag2), KV_OK);
	assert_string_not_equal(tag, tag2);
	assert_int_equal(S.count, 1);
	assert_int_equal(S.used, kv_charge(1, 5));
	assert_int_equal(live_blocks, 1);
	assert_int_equal(kv_get(&S, K("x"), NULL, NULL, &e), KV_OK);
	assert_memory_equal(kv_entry_value(e), "hello", 5);

	/* An empty value is a value. */
	assert_int_equal(kv_put(&S, K("empty"), "", 0, NULL, NULL, NULL), KV_CREATED);
	assert_int_equal(kv_get(&S, K("empty"), NULL, NULL, &e), KV_OK);
	assert_int_equal(e->vlen, 0);

	assert_int_equal(kv_delete(&S, K("x"), NULL, NULL), KV_OK);
	assert_int_equal(kv_delete(&S, K("x"), NULL, NULL), KV_NOT_FOUND);
	assert_int_equal(kv_get(&S, K("x"), NULL, NULL, &e), KV_NOT_FOUND);
	assert_int_equal(S.count, 1);
	assert_int_equal(S.used, kv_charge(5, 0));

	/* Bad keys and values. */
	assert_int_equal(kv_put(&S, K(""), "v", 1, NULL, NULL, NULL), KV_BAD_KEY);
	assert_int_equal(kv_put(&S, K("a b"), "v", 1, NULL, NULL, NULL), KV_BAD_KEY);
	assert_int_equal(kv_get(&S, K("a\x01"), NULL, NULL, &e), KV_BAD_KEY);
	assert_int_equal(kv_delete(&S, K("\xc3\xa9"), NULL, NULL), KV_BAD_KEY);
	{
		static u8 big[4097];
		assert_int_equal(kv_put(&S, K("big"), big, 4096, NULL, NULL, NULL), KV_CREATED);
		assert_int_equal(kv_put(&S, K("big"), big, 4097, NULL, NULL, NULL), KV_TOO_LARGE);
		assert_int_equal(kv_put(&S, K("big2"), big, 4097, NULL, NULL, NULL), KV_TOO_LARGE);
		assert_null(kv_find(&S, K("big2")));
	}
	teardown_store();
}

static void test_config_refused(void **st)
{
	struct kv_config c = {.max_bytes = 100, .value_max = KV_VALUE_CEIL + 1,
			      .alloc = t_alloc, .free = t_free};
	struct kv_store s;

	assert_int_equal(kv_store_init(&s, &c), -EINVAL);
	c.value_max = KV_VALUE_CEIL;
	c.alloc = NULL;
	assert_int_equal(kv_store_init(&s, &c), -EINVAL);
	c.alloc = t_alloc;
	assert_int_equal(kv_store_init(&s, &c), 0);
}

/* Fill exactly to the bound, one entry over is refused and changes nothing,
 * a delete makes room again; replacements are checked as used - old + new. */
static void test_bound(void **st)
{
	const size_t each = kv_charge(2, 100);	/* 48 + ALIGN_UP(134, 16) = 192 */
	char key[3];
	unsigned i;
	u8 val[200];
	const struct kv_entry *e;

	assert_int_equal(each, 192);
	memset(val, 0x5a, sizeof val);
	setup_store(10 * each, 1024);
	for (i = 0; i < 10; i++) {
		snprintf(key, sizeof key, "k%u", i);
		assert_int_equal(kv_put(&S, (u8 *)key, 2, val, 100, NULL, NULL, NULL), KV_CREATED);
	}
	assert_int_equal(S.used, S.max_bytes);
	assert_int_equal(kv_put(&S, K("zz"), val, 0, NULL, NULL, NULL), KV_FULL);
	assert_int_equal(S.refused_full, 1);
	assert_int_equal(S.count, 10);
	assert_int_equal(live_blocks, 10);
	assert_null(kv_find(&S, K("zz")));
	/* Growing an entry past the bound is refused and keeps the old value;
	 * a replacement of the same charge (101..110 bytes still round to 192) fits. */
	assert_int_equal(kv_put(&S, K("k3"), val, 111, NULL, NULL, NULL), KV_FULL);
	assert_int_equal(kv_get(&S, K("k3"), NULL, NULL, &e), KV_OK);
	assert_int_equal(e->vlen, 100);
	assert_int_equal(kv_put(&S, K("k3"), val, 110, NULL, NULL, NULL), KV_OK);
	assert_int_equal(S.used, S.max_bytes);
	/* Shrinking frees room for a small entry. */
	assert_int_equal(kv_put(&S, K("k4"), val, 2, NULL, NULL, NULL), KV_OK);
	assert_int_equal(S.used, 10 * each - (each - kv_charge(2, 2)));
	/* 96 bytes are free: kv_charge(2, 14) = 48 + ALIGN_UP(48, 16) = 96; 15 would be 112. */
	assert_int_equal(kv_put(&S, K("zz"), val, 15, NULL, NULL, NULL), KV_FULL);
	assert_int_equal(kv_put(&S, K("zz"), val, 14, NULL, NULL, NULL), KV_CREATED);
	assert_int_equal(S.used, S.max_bytes);
	assert_int_equal(kv_put(&S, K("z3"), val, 0, NULL, NULL, NULL), KV_FULL);
	assert_int_equal(kv_delete(&S, K("k0"), NULL, NULL), KV_OK);
	assert_int_equal(kv_put(&S, K("z3"), val, 100, NULL, NULL, NULL), KV_CREATED);
	assert_int_equal(S.refused_full, 4);

	/* Lowering the bound keeps what is there but refuses puts. */
	kv_store_set_max(&S, 0);
	assert_int_equal(S.count, 11);
	assert_int_equal(kv_put(&S, K("k1"), val, 0, NULL, NULL, NULL), KV_FULL);
	assert_int_equal(kv_delete(&S, K("k1"), NULL, NULL), KV_OK);
	teardown_store();
}

static void test_alloc_failure(void **st)
{
	const struct kv_entry *e;

	setup_store(1 << 16, 1024);
	fail_next = 1;
	assert_int_equal(kv_put(&S, K("a"), "1", 1, NULL, NULL, NULL), KV_NO_MEMORY);
	assert_int_equal(S.count, 0);
	assert_int_equal(S.used, 0);
	assert_int_equal(S.refused_nomem, 1);
	assert_int_equal(kv_put(&S, K("a"), "1", 1, NULL, NULL, NULL), KV_CREATED);
	fail_next = 1;
	assert_int_equal(kv_put(&S, K("a"), "22", 2, NULL, NULL, NULL), KV_NO_MEMORY);
	assert_int_equal(kv_get(&S, K("a"), NULL, NULL, &e), KV_OK);
	assert_memory_equal(kv_entry_value(e), "1", 1);
	assert_int_equal(S.used, kv_charge(1, 1));
	teardown_store();
}

static void test_etags(void **st)
{
	char t1[KV_ETAG_LEN + 1], t2[KV_ETAG_LEN + 1], t3[KV_ETAG_LEN + 1];
	struct kv_store other;
	struct kv_config c = {.max_bytes = 4096, .value_max = 64, .alloc = t_alloc, .free = t_free};

	setup_store(1 << 16, 1024);
	assert_int_equal(kv_put(&S, K("a"), "bc", 2, NULL, NULL, t1), KV_CREATED);
	assert_int_equal(strlen(t1), KV_ETAG_LEN);
	assert_int_equal(t1[0], '"');
	assert_int_equal(t1[KV_ETAG_LEN - 1], '"');
	for (int i = 1; i < KV_ETAG_LEN - 1; i++)
		assert_non_null(strchr("0123456789abcdef", t1[i]));
	/* The same bytes again: the same strong tag. */
	assert_int_equal(kv_put(&S, K("a"), "bc", 2, NULL, NULL, t2), KV_OK);
	assert_string_equal(t1, t2);
	/* Key and value are length-delimited in the hash: "ab"+"c" differs. */
	assert_int_equal(kv_put(&S, K("ab"), "c", 1, NULL, NULL, t3), KV_CREATED);
	assert_string_not_equal(t1, t3);
	assert_int_equal(kv_put(&S, K("a"), "bd", 2, NULL, NULL, t2), KV_OK);
	assert_string_not_equal(t1, t2);
	/* Another secret, other tags. */
	memset(c.secret, 7, 16);
	assert_int_equal(kv_store_init(&other, &c), 0);
	assert_int_equal(kv_put(&other, K("a"), "bc", 2, NULL, NULL, t2), KV_CREATED);
	assert_string_not_equal(t1, t2);
	kv_store_clear(&other);
	teardown_store();
}

static void test_conditionals(void **st)
{
	char tag[KV_ETAG_LEN + 1], weak[KV_ETAG_LEN + 3], list[80], old[KV_ETAG_LEN + 1];
	const struct kv_entry *e;

	setup_store(1 << 16, 1024);
	assert_int_equal(kv_put(&S, K("k"), "v1", 2, NULL, NULL, old), KV_CREATED);
	assert_int_equal(kv_put(&S, K("k"), "v2", 2, NULL, NULL, tag), KV_OK);
	snprintf(weak, sizeof weak, "W/%s", tag);
	snprintf(list, sizeof list, " %s ,, \t%s", old, tag);

	/* GET */
	assert_int_equal(kv_get(&S, K("k"), NULL, tag, &e), KV_NOT_MODIFIED);
	assert_ptr_equal(e, kv_find(&S, K("k")));	/* for the 304's ETag */
	assert_int_equal(kv_get(&S, K("k"), NULL, weak, &e), KV_NOT_MODIFIED);
	assert_int_equal(kv_get(&S, K("k"), NULL, "*", &e), KV_NOT_MODIFIED);
	assert_int_equal(kv_get(&S, K("k"), NULL, list, &e), KV_NOT_MODIFIED);
	assert_int_equal(kv_get(&S, K("k"), NULL, old, &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), tag, NULL, &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), list, NULL, &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), "*", NULL, &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), old, NULL, &e), KV_PRECONDITION_FAILED);
	assert_null(e);
	assert_int_equal(kv_get(&S, K("k"), weak, NULL, &e), KV_PRECONDITION_FAILED);
	/* If-Match first: a failing If-Match is 412 even when If-None-Match would be 304. */
	assert_int_equal(kv_get(&S, K("k"), old, tag, &e), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_get(&S, K("nope"), NULL, "*", &e), KV_NOT_FOUND);
	assert_int_equal(kv_get(&S, K("nope"), "*", NULL, &e), KV_PRECONDITION_FAILED);
	/* Malformed lists match nothing. */
	assert_int_equal(kv_get(&S, K("k"), NULL, "abc", &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), NULL, "\"abc", &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), NULL, "\"a\"b", &e), KV_OK);
	assert_int_equal(kv_get(&S, K("k"), "**", NULL, &e), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_get(&S, K("k"), "", NULL, &e), KV_PRECONDITION_FAILED);
	{
		char bad[80];
		snprintf(bad, sizeof bad, "%s, x", tag);
		assert_int_equal(kv_get(&S, K("k"), bad, NULL, &e), KV_PRECONDITION_FAILED);
		assert_int_equal(kv_get(&S, K("k"), NULL, bad, &e), KV_OK);
	}

	/* PUT: create-only, update-if-unchanged (lost-update protection). */
	assert_int_equal(kv_put(&S, K("k"), "v3", 2, NULL, "*", NULL), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_put(&S, K("n"), "v", 1, NULL, "*", NULL), KV_CREATED);
	assert_int_equal(kv_put(&S, K("k"), "v3", 2, old, NULL, NULL), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_put(&S, K("k"), "v3", 2, NULL, tag, NULL), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_put(&S, K("m"), "v", 1, "*", NULL, NULL), KV_PRECONDITION_FAILED);
	assert_null(kv_find(&S, K("m")));
	assert_int_equal(kv_get(&S, K("k"), NULL, NULL, &e), KV_OK);
	assert_memory_equal(kv_entry_value(e), "v2", 2);
	assert_int_equal(kv_put(&S, K("k"), "v3", 2, tag, NULL, NULL), KV_OK);
	/* the tag moved on: the same If-Match now fails */
	assert_int_equal(kv_put(&S, K("k"), "v4", 2, tag, NULL, NULL), KV_PRECONDITION_FAILED);

	/* DELETE */
	kv_entry_etag(kv_find(&S, K("k")), tag);
	assert_int_equal(kv_delete(&S, K("k"), old, NULL), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_delete(&S, K("k"), NULL, "*"), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_delete(&S, K("k"), tag, NULL), KV_OK);
	assert_int_equal(kv_delete(&S, K("k"), "*", NULL), KV_PRECONDITION_FAILED);
	assert_int_equal(kv_delete(&S, K("k"), NULL, "*"), KV_NOT_FOUND);
	teardown_store();
}

static size_t json(const u8 *s, size_t n, char *out, size_t cap)
{
	struct outbuf o = {out, cap, 0};

	kv_json_string(&o, s, n);
	if (o.len < cap)
		out[o.len] = 0;
	return o.len;
}

static void test_json_string(void **st)
{
	char out[256];
	u8 all[256];

	assert_int_equal(json(K("abc"), out, sizeof out), 5);
	assert_string_equal(out, "\"abc\"");
	json(K("a\"b\\c/d"), out, sizeof out);
	assert_string_equal(out, "\"a\\\"b\\\\c/d\"");
	json(K("\b\f\n\r\t\x01\x1f\x7f"), out, sizeof out);
	assert_string_equal(out, "\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"");
	json((const u8 *)"\0\x80\xff", 3, out, sizeof out);
	assert_string_equal(out, "\"\\u0000\\u0080\\u00ff\"");
	json(K(""), out, sizeof out);
	assert_string_equal(out, "\"\"");
	/* The bound: 2 + 6n, every byte ASCII printable. */
	for (int i = 0; i < 256; i++)
		all[i] = (u8)i;
	{
		static char big[2 + 6 * 256 + 1];
		size_t n = json(all, 256, big, sizeof big);
		assert_true(n <= 2 + 6 * 256);
		for (size_t i = 0; i < n; i++)
			assert_true(big[i] >= 0x20 && big[i] < 0x7f);
	}
	/* Measuring with no buffer gives the same length. */
	{
		struct outbuf o = {NULL, 0, 0};
		kv_json_string(&o, all, 256);
		assert_int_equal(o.len, json(all, 256, out, 0));
	}
}

static void test_cursor(void **st)
{
	u8 k[KV_KEY_MAX];
	char hex[2 * KV_KEY_MAX + 3];

	assert_int_equal(kv_cursor_decode("6162", 4, k), 2);
	assert_memory_equal(k, "ab", 2);
	assert_int_equal(kv_cursor_decode("7E2f", 4, k), 2);
	assert_memory_equal(k, "~/", 2);
	assert_int_equal(kv_cursor_decode("", 0, k), -EINVAL);
	assert_int_equal(kv_cursor_decode("616", 3, k), -EINVAL);
	assert_int_equal(kv_cursor_decode("6g", 2, k), -EINVAL);
	assert_int_equal(kv_cursor_decode("zz", 2, k), -EINVAL);
	memset(hex, '6', sizeof hex);
	assert_int_equal(kv_cursor_decode(hex, 2 * KV_KEY_MAX, k), KV_KEY_MAX);
	assert_int_equal(kv_cursor_decode(hex, 2 * KV_KEY_MAX + 2, k), -EINVAL);
}

static void test_list_small(void **st)
{
	static char buf[KV_LIST_MIN_CAP * 4];
	size_t n;
	char t[KV_ETAG_LEN + 1], want[512];

	setup_store(1 << 16, 1024);
	n = kv_list_json(&S, NULL, 0, NULL, 0, 10, buf, sizeof buf);
	buf[n] = 0;
	assert_string_equal(buf, "{\"keys\":[],\"more\":false,\"cursor\":null}");
	kv_put(&S, K("b/2"), "xx", 2, NULL, NULL, NULL);
	kv_put(&S, K("a\"q"), "", 0, NULL, NULL, t);
	kv_put(&S, K("b/1"), "x", 1, NULL, NULL, NULL);
	kv_put(&S, K("c"), "x", 1, NULL, NULL, NULL);
	kv_put(&S, K("b"), "x", 1, NULL, NULL, NULL);
	n = kv_list_json(&S, K("a"), NULL, 0, 10, buf, sizeof buf);
	buf[n] = 0;
	snprintf(want, sizeof want,
		 "{\"keys\":[{\"key\":\"a\\\"q\",\"bytes\":0,\"etag\":\"\\\"%.16s\\\"\"}],"
		 "\"more\":false,\"cursor\":null}", t + 1);
	assert_string_equal(buf, want);
	/* prefix b/, one per page */
	n = kv_list_json(&S, K("b/"), NULL, 0, 1, buf, sizeof buf);
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"key\":\"b/1\""));
	assert_null(strstr(buf, "b/2"));
	assert_non_null(strstr(buf, "\"more\":true,\"cursor\":\"622f31\"}"));
	n = kv_list_json(&S, K("b/"), K("b/1"), 1, buf, sizeof buf);
	buf[n] = 0;
	assert_non_null(strstr(buf, "\"key\":\"b/2\",\"bytes\":2"));
	assert_non_null(strstr(buf, "\"more\":false,\"cursor\":null}"));
	/* A cursor that is not a key still positions: after "b/0" comes b/1. */
	n = kv_list_json(&S, K("b"), K("b/0"), 10, buf, sizeof buf);
	buf[n] = 0;
	assert_null(strstr(buf, "\"key\":\"b\""));
	assert_non_null(strstr(buf, "\"key\":\"b/1\""));
	/* Everything, in byte order: a"q < b < b/1 < b/2 < c */
	n = kv_list_json(&S, NULL, 0, NULL, 0, 10, buf, sizeof buf);
	buf[n] = 0;
	{
		const char *p1 = strstr(buf, "a\\\"q"), *p2 = strstr(buf, "\"b\""),
			   *p3 = strstr(buf, "b/1"), *p4 = strstr(buf, "b/2"),
			   *p5 = strstr(buf, "\"c\"");
		assert_true(p1 && p2 && p3 && p4 && p5);
		assert_true(p1 < p2 && p2 < p3 && p3 < p4 && p4 < p5);
	}
	/* A prefix past every key, and a cursor past the prefix range. */
	n = kv_list_json(&S, K("d"), NULL, 0, 10, buf, sizeof buf);
	buf[n] = 0;
	assert_string_equal(buf, "{\"keys\":[],\"more\":false,\"cursor\":null}");
	n = kv_list_json(&S, K("b"), K("c"), 10, buf, sizeof buf);
	buf[n] = 0;
	assert_string_equal(buf, "{\"keys\":[],\"more\":false,\"cursor\":null}");
	/* Bad arguments. */
	assert_int_equal(kv_list_json(&S, NULL, 0, NULL, 0, 10, buf, KV_LIST_MIN_CAP - 1), 0);
	assert_int_equal(kv_list_json(&S, NULL, 0, NULL, 0, 0, buf, sizeof buf), 0);
	assert_int_equal(kv_list_json(&S, NULL, 0, NULL, 0, KV_PAGE_MAX + 1, buf, sizeof buf), 0);
	teardown_store();
}

/* Pages through n keys with every page size, collecting keys from the
 * JSON, and checks each key comes exactly once, in order; also with caps so
 * small only one or two long keys fit per page. */
static unsigned collect(const char *prefix, unsigned limit, size_t cap, char **keys)
{
	static char buf[1 << 16];
	u8 after[KV_KEY_MAX];
	int alen = 0;
	unsigned got = 0, pages = 0;

	for (;;) {
		size_t n = kv_list_json(&S, (const u8 *)prefix, strlen(prefix), after, (size_t)alen,
					limit, buf, cap);
		char *p = buf, *c;

		assert_true(n > 0 && n <= cap);
		buf[n] = 0;
		assert_true(++pages < 100000);
		unsigned on_page = 0;
		while ((p = strstr(p, "{\"key\":\""))) {
			char *q;
			p += 8;
			q = strchr(p, '"');	/* test keys have no quotes */
			keys[got] = strndup(p, (size_t)(q - p));
			assert_int_equal(strncmp(keys[got], prefix, strlen(prefix)), 0);
			if (got)
				assert_true(strcmp(keys[got - 1], keys[got]) < 0);
			got++;
			on_page++;
			p = q;
		}
		assert_true(on_page <= limit);
		c = strstr(buf, "\"more\":");
		assert_non_null(c);
		if (!strncmp(c, "\"more\":false,\"cursor\":null}", 28))
			break;
		assert_int_equal(strncmp(c, "\"more\":true,\"cursor\":\"", 22), 0);
		c += 22;
		alen = kv_cursor_decode(c, strcspn(c, "\""), after);
		assert_true(alen > 0);
		assert_true(on_page >= 1);
		assert_memory_equal(after, keys[got - 1], (size_t)alen);
	}
	return got;
}

static void test_list_paging(void **st)
{
	enum { N = 600 };
	char *keys[N + 1];
	char key[KV_KEY_MAX + 1];
	unsigned i, want_p = 0;

	setup_store(1 << 24, 16);
	srand(7);
	for (i = 0; i < N; i++) {
		unsigned r = (unsigned)rand();
		int len = snprintf(key, sizeof key, "%s%05u", (r & 1) ? "p/" : "q", (r >> 1) % 100000);
		if (i % 50 == 0) {	/* some of the longest keys */
			memset(key + len, 'z', KV_KEY_MAX - (size_t)len);
			len = KV_KEY_MAX;
		}
		if (kv_put(&S, (u8 *)key, (size_t)len, "v", 1, NULL, NULL, NULL) == KV_CREATED &&
		    key[0] == 'p')
			want_p++;
	}
	for (unsigned limit = 1; limit <= KV_PAGE_MAX; limit = limit * 3 + 1) {
		unsigned got = collect("", limit, sizeof key * 0 + (1 << 16) - 1, keys);
		assert_int_equal(got, S.count);
		for (i = 0; i < got; i++)
			free(keys[i]);
		got = collect("p/", limit, (1 << 16) - 1, keys);
		assert_int_equal(got, want_p);
		for (i = 0; i < got; i++)
			free(keys[i]);
	}
	/* The smallest buffer still makes progress, one long key at a time. */
	{
		unsigned got = collect("", KV_PAGE_MAX, KV_LIST_MIN_CAP, keys);
		assert_int_equal(got, S.count);
		for (i = 0; i < got; i++)
			free(keys[i]);
	}
	teardown_store();
}

/* The longest page of the longest keys, each all quotes, fits its bound. */
static void test_list_worst_case(void **st)
{
	static char buf[KV_LIST_FRAME_MAX + 3 * KV_LIST_ENTRY_MAX];
	u8 key[KV_KEY_MAX];
	size_t n;

	setup_store(1 << 20, 16);
	memset(key, '"', sizeof key);
	for (int i = 0; i < 5; i++) {
		key[KV_KEY_MAX - 1] = (u8)('!' + i);
		assert_int_equal(kv_put(&S, key, KV_KEY_MAX, "0123456789abcdef", 16, NULL, NULL, NULL),
				 KV_CREATED);
	}
	n = kv_list_json(&S, NULL, 0, NULL, 0, KV_PAGE_MAX, buf, sizeof buf);
	assert_true(n > 0 && n <= sizeof buf);
	/* three entries fit, then more:true with a 500-digit cursor */
	{
		size_t c = 0;
		for (char *p = buf; (p = strstr(p, "{\"key\":")); p++)
			c++;
		assert_int_equal(c, 3);
	}
	assert_non_null(strstr(buf, "\"more\":true,\"cursor\":\""));
	assert_int_equal(buf[n - 1], '}');
	teardown_store();
}

/* Random puts, deletes and gets against a shadow table, with the tree's
 * invariants (order, AVL balance, heights, count, used) checked as it goes. */
static void test_random_vs_model(void **st)
{
	enum { NK = 64, OPS = 40000 };
	static u8 model_val[NK][64];
	static int model_len[NK];	/* -1: absent */
	char key[8];
	u8 val[64];
	size_t used = 0;
	unsigned count = 0;
	const struct kv_entry *e;

	setup_store(NK * kv_charge(4, 40), 64);
	for (int i = 0; i < NK; i++)
		model_len[i] = -1;
	srand(12345);
	for (int op = 0; op < OPS; op++) {
		int k = rand() % NK, what = rand() % 10, len = rand() % 65;
		snprintf(key, sizeof key, "k%03d", k);
		if (what < 5) {
			for (int i = 0; i < len; i++)
				val[i] = (u8)rand();
			size_t nu = used - (model_len[k] >= 0 ? kv_charge(4, (size_t)model_len[k]) : 0) +
				    kv_charge(4, (size_t)len);
			if (rand() % 200 == 0) {
				fail_next = 1;
				assert_int_equal(kv_put(&S, (u8 *)key, 4, val, (size_t)len, NULL, NULL, NULL),
						 KV_NO_MEMORY);
			} else if (nu > S.max_bytes) {
				assert_int_equal(kv_put(&S, (u8 *)key, 4, val, (size_t)len, NULL, NULL, NULL),
						 KV_FULL);
			} else {
				assert_int_equal(kv_put(&S, (u8 *)key, 4, val, (size_t)len, NULL, NULL, NULL),
						 model_len[k] < 0 ? KV_CREATED : KV_OK);
				if (model_len[k] < 0)
					count++;
				memcpy(model_val[k], val, (size_t)len);
				model_len[k] = len;
				used = nu;
			}
		} else if (what < 8) {
			assert_int_equal(kv_delete(&S, (u8 *)key, 4, NULL, NULL),
					 model_len[k] < 0 ? KV_NOT_FOUND : KV_OK);
			if (model_len[k] >= 0) {
				used -= kv_charge(4, (size_t)model_len[k]);
				count--;
			}
			model_len[k] = -1;
		} else {
			enum kv_status r = kv_get(&S, (u8 *)key, 4, NULL, NULL, &e);
			if (model_len[k] < 0) {
				assert_int_equal(r, KV_NOT_FOUND);
			} else {
				assert_int_equal(r, KV_OK);
				assert_int_equal(e->vlen, model_len[k]);
				assert_memory_equal(kv_entry_value(e), model_val[k], (size_t)model_len[k]);
			}
		}
		assert_int_equal(S.used, used);
		assert_int_equal(S.count, count);
		assert_true(S.used <= S.max_bytes);
		assert_int_equal(live_blocks, (long)count);
		if (op % 97 == 0)
			assert_int_equal(kv_store_check(&S), 0);
	}
	teardown_store();
}

/* A pinned entry replaced or deleted leaves the tree at once, keeps its
 * bytes (still charged) until the last unpin, and counts against the bound. */
static void test_pins(void **st)
{
	const size_t c5 = kv_charge(1, 5);
	const struct kv_entry *e, *e2;

	setup_store(3 * c5, 64);
	assert_int_equal(kv_put(&S, K("a"), "hello", 5, NULL, NULL, NULL), KV_CREATED);
	e = kv_find(&S, K("a"));
	assert_true(kv_pin(&S, e));
	assert_true(kv_pin(&S, e));
	/* Replaced while pinned: the old bytes stay readable and charged. */
	assert_int_equal(kv_put(&S, K("a"), "world", 5, NULL, NULL, NULL), KV_OK);
	assert_int_equal(kv_store_check(&S), 0);
	assert_memory_equal(kv_entry_value(e), "hello", 5);
	e2 = kv_find(&S, K("a"));
	assert_ptr_not_equal(e, e2);
	assert_memory_equal(kv_entry_value(e2), "world", 5);
	assert_int_equal(S.count, 1);
	assert_int_equal(S.held, 1);
	assert_int_equal(S.used, 2 * c5);
	assert_int_equal(live_blocks, 2);
	/* The held bytes count: room for one more entry, not two. */
	assert_int_equal(kv_put(&S, K("b"), "12345", 5, NULL, NULL, NULL), KV_CREATED);
	assert_int_equal(kv_put(&S, K("c"), "12345", 5, NULL, NULL, NULL), KV_FULL);
	/* Deleting a pinned entry holds it too. */
	assert_true(kv_pin(&S, e2));
	assert_int_equal(kv_delete(&S, K("a"), NULL, NULL), KV_OK);
	assert_null(kv_find(&S, K("a")));
	assert_int_equal(S.held, 2);
	assert_int_equal(S.used, 3 * c5);
	assert_int_equal(kv_store_check(&S), 0);
	kv_unpin(&S, e);
	assert_int_equal(S.held, 2);	/* one pin left on e */
	kv_unpin(&S, e2);
	assert_int_equal(S.held, 1);
	assert_int_equal(S.used, 2 * c5);
	assert_int_equal(kv_store_check(&S), 0);
	kv_unpin(&S, e);
	assert_int_equal(S.held, 0);
	assert_int_equal(S.used, c5);
	assert_int_equal(live_blocks, 1);
	assert_int_equal(kv_put(&S, K("c"), "12345", 5, NULL, NULL, NULL), KV_CREATED);
	/* Pinning an entry in the tree and unpinning it changes nothing else. */
	e = kv_find(&S, K("c"));
	assert_true(kv_pin(&S, e));
	kv_unpin(&S, e);
	assert_int_equal(kv_store_check(&S), 0);
	assert_ptr_equal(kv_find(&S, K("c")), e);
	/* Clear frees held entries as well. */
	assert_true(kv_pin(&S, e));
	assert_int_equal(kv_delete(&S, K("c"), NULL, NULL), KV_OK);
	assert_int_equal(S.held, 1);
	teardown_store();
}

/* kv_restore (kv.c's undo of a write the disk refused): a pinned entry a
 * put or delete replaced goes back into the tree, charge and tag intact;
 * NULL makes the key absent; an entry in the tree, or under another key,
 * is refused. */
static void test_restore(void **st)
{
	const size_t c5 = kv_charge(1, 5);
	const struct kv_entry *e, *e2;
	char t1[KV_ETAG_LEN + 1], t[KV_ETAG_LEN + 1];

	setup_store(3 * c5, 64);
	assert_int_equal(kv_put(&S, K("a"), "hello", 5, NULL, NULL, t1), KV_CREATED);
	e = kv_find(&S, K("a"));
	assert_false(kv_restore(&S, K("a"), e));	/* in the tree */
	assert_true(kv_pin(&S, e));
	assert_int_equal(kv_put(&S, K("a"), "world", 5, NULL, NULL, NULL), KV_OK);
	assert_false(kv_restore(&S, K("b"), e));	/* another key */
	assert_true(kv_restore(&S, K("a"), e));
	assert_int_equal(kv_store_check(&S), 0);
	assert_ptr_equal(kv_find(&S, K("a")), e);
	kv_entry_etag(e, t);
	assert_string_equal(t, t1);
	assert_int_equal(S.count, 1);
	assert_int_equal(S.held, 0);
	assert_int_equal(S.used, c5);
	assert_int_equal(live_blocks, 1);	/* "world" freed */
	kv_unpin(&S, e);
	assert_ptr_equal(kv_find(&S, K("a")), e);
	/* After a delete, among other keys; the replaced entry pinned too. */
	assert_int_equal(kv_put(&S, K("b"), "12345", 5, NULL, NULL, NULL), KV_CREATED);
	assert_true(kv_pin(&S, e));
	assert_int_equal(kv_delete(&S, K("a"), NULL, NULL), KV_OK);
	assert_int_equal(kv_put(&S, K("a"), "again", 5, NULL, NULL, NULL), KV_CREATED);
	e2 = kv_find(&S, K("a"));
	assert_true(kv_pin(&S, e2));
	assert_true(kv_restore(&S, K("a"), e));
	assert_int_equal(S.held, 1);	/* e2, pinned */
	assert_int_equal(S.used, 3 * c5);
	assert_int_equal(kv_store_check(&S), 0);
	kv_unpin(&S, e2);
	kv_unpin(&S, e);
	assert_int_equal(S.used, 2 * c5);
	/* NULL: absent again (a put of a new key undone); absent already: no-op. */
	assert_true(kv_restore(&S, K("b"), NULL));
	assert_null(kv_find(&S, K("b")));
	assert_true(kv_restore(&S, K("b"), NULL));
	assert_int_equal(S.count, 1);
	assert_int_equal(S.used, c5);
	assert_int_equal(live_blocks, 1);
	teardown_store();
}

/* Sorted insertion (the AVL's worst input for a plain BST) stays shallow. */
static void test_sorted_insert_balanced(void **st)
{
	char key[16];

	setup_store((size_t)1 << 30, 0);
	for (unsigned i = 0; i < 20000; i++) {
		snprintf(key, sizeof key, "%08u", i);
		assert_int_equal(kv_put(&S, (u8 *)key, 8, NULL, 0, NULL, NULL, NULL), KV_CREATED);
	}
	assert_int_equal(kv_store_check(&S), 0);
	assert_true(S.root->height <= 21);	/* 1.44 log2(20002) = 20.6 */
	for (unsigned i = 0; i < 20000; i += 2) {
		snprintf(key, sizeof key, "%08u", i);
		assert_int_equal(kv_delete(&S, (u8 *)key, 8, NULL, NULL), KV_OK);
	}
	assert_int_equal(kv_store_check(&S), 0);
	assert_int_equal(S.count, 10000);
	teardown_store();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_charge_arithmetic),
		cmocka_unit_test(test_put_get_delete),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_alloc_failure),
		cmocka_unit_test(test_etags),
		cmocka_unit_test(test_conditionals),
		cmocka_unit_test(test_json_string),
		cmocka_unit_test(test_cursor),
		cmocka_unit_test(test_list_small),
		cmocka_unit_test(test_list_paging),
		cmocka_unit_test(test_list_worst_case),
		cmocka_unit_test(test_random_vs_model),
		cmocka_unit_test(test_pins),
		cmocka_unit_test(test_restore),
		cmocka_unit_test(test_sorted_insert_balanced),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
