/* net/tls/tls_held.c, the certificates handshakes hold (issue 33): a
 * replaced or cleared certificate is freed only once the last handshake
 * that took it lets go, never before and never twice; a connection keeps
 * the certificate it took first; the slots and the holder table are
 * bounded and refuse, leaving the caller's keys as they were; the heap
 * estimate bounds what the keys really hold (tls_host's counted heap); the
 * SNI match. Real keys (tls_cert_generate()) under ASan: a use after free
 * or a double free fails the run. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "net/tls/tls_cert.h"
#include "net/tls/tls_held.h"
#include "tests/host/net/tls/tls_host.h"

static char err[160];

static void gen(struct tls_keys *k)
{
	struct tls_names nm;

	tls_names_default(&nm);
	assert_int_equal(tls_cert_generate(k, &nm, 1796000000, 1796000000 + 86400, tls_host_rng, NULL, err,
					   sizeof(err)), 0);
}

/* Reads the whole chain and key, as a handshake does (ASan sees a freed one). */
static void use(const struct tls_held *h)
{
	assert_true(h->used);
	assert_non_null(h->keys.chain.raw.p);
	assert_int_equal(mbedtls_pk_check_pair(&h->keys.chain.pk, &h->keys.key, tls_host_rng, NULL), 0);
}

static void test_switch_under_handshakes(void **state)
{
	struct tls_held slot[3];
	struct tls_held_pool pool = { slot, 3 };
	struct tls_holder e[4];
	struct tls_holders hs = { e, 4 };
	struct tls_keys k;
	struct tls_held *a, *b, *c, *cur;
	int conn[4];
	long blocks;

	(void)state;
	memset(slot, 0, sizeof(slot));
	memset(e, 0, sizeof(e));
	gen(&k);
	blocks = tls_host_heap.blocks;
	a = tls_held_take(&pool, &k);
	assert_non_null(a);
	/* Moved in: k is empty (freeing it is harmless), the heap unchanged. */
	assert_null(k.chain.raw.p);
	assert_int_equal(k.loaded, 0);
	tls_keys_free(&k);
	assert_int_equal(tls_host_heap.blocks, blocks);
	use(a);
	cur = a;

	/* Two handshakes take a; the certificate is switched to b. */
	assert_ptr_equal(tls_holders_hold(&hs, &conn[0], cur), a);
	assert_ptr_equal(tls_holders_hold(&hs, &conn[1], cur), a);
	assert_int_equal(a->refs, 2);
	gen(&k);
	b = tls_held_take(&pool, &k);
	assert_non_null(b);
	cur = b;
	tls_held_retire(a);
	assert_true(a->used);	/* still held */
	use(a);
	/* A new handshake gets b; conn[0]'s second ClientHello keeps a. */
	assert_ptr_equal(tls_holders_hold(&hs, &conn[2], cur), b);
	assert_ptr_equal(tls_holders_hold(&hs, &conn[0], cur), a);
	assert_int_equal(a->refs, 2);
	/* A third certificate while a and b are held: the last slot. */
	gen(&k);
	c = tls_held_take(&pool, &k);
	assert_non_null(c);
	tls_held_retire(b);
	cur = c;
	assert_int_equal(tls_held_in_use(&pool), 3);
	/* A fourth: refused, k as it was. */
	gen(&k);
	blocks = tls_host_heap.blocks;
	assert_null(tls_held_take(&pool, &k));
	assert_int_equal(k.loaded, 1);
	assert_int_equal(tls_host_heap.blocks, blocks);
	tls_keys_free(&k);
	/* The handshakes end in any order; each certificate goes with its last. */
	tls_holders_drop(&hs, &conn[1]);
	use(a);
	tls_holders_drop(&hs, &conn[1]);	/* twice: nothing */
	assert_int_equal(a->refs, 1);
	tls_holders_drop(&hs, &conn[3]);	/* never held: nothing */
	tls_holders_drop(&hs, &conn[0]);
	assert_false(a->used);
	assert_int_equal(tls_held_in_use(&pool), 2);
	use(b);
	tls_holders_drop(&hs, &conn[2]);
	assert_false(b->used);
	assert_int_equal(tls_holders_count(&hs), 0);
	use(c);
	/* A free slot is taken again. */
	gen(&k);
	assert_non_null(tls_held_take(&pool, &k));
	for (int i = 0; i < 3; i++)
		if (slot[i].used)
			tls_held_retire(&slot[i]);
	assert_int_equal(tls_held_in_use(&pool), 0);
	assert_int_equal(tls_host_heap.blocks, 0);
}

static void test_holders_bounded(void **state)
{
	struct tls_held slot[1];
	struct tls_held_pool pool = { slot, 1 };
	struct tls_holder e[2];
	struct tls_holders hs = { e, 2 };
	struct tls_keys k;
	struct tls_held *a;
	int conn[3];

	(void)state;
	memset(slot, 0, sizeof(slot));
	memset(e, 0, sizeof(e));
	gen(&k);
	a = tls_held_take(&pool, &k);
	assert_ptr_equal(tls_holders_hold(&hs, &conn[0], a), a);
	assert_ptr_equal(tls_holders_hold(&hs, &conn[1], a), a);
	/* Full: refused, nothing taken. */
	assert_null(tls_holders_hold(&hs, &conn[2], a));
	assert_int_equal(a->refs, 2);
	assert_null(tls_holders_hold(&hs, NULL, a));
	tls_holders_drop(&hs, &conn[0]);
	assert_ptr_equal(tls_holders_hold(&hs, &conn[2], a), a);
	/* Retired while held, then the holders go: freed once. */
	tls_held_retire(a);
	tls_holders_drop(&hs, &conn[1]);
	assert_true(a->used);
	tls_holders_drop(&hs, &conn[2]);
	assert_false(a->used);
	assert_int_equal(tls_host_heap.blocks, 0);
}

static void test_heap_bytes_bound(void **state)
{
	struct tls_keys k;
	struct tls_names nm;
	size_t before = tls_host_heap.bytes, held;

	(void)state;
	/* One name, as a TLS-ALPN-01 certificate: within its 3 KiB bound. */
	assert_int_equal(tls_names_parse("a-rather-long-name-for-the-challenge.example.com", &nm, err, sizeof(err)), 0);
	assert_int_equal(tls_cert_generate(&k, &nm, 1796000000, 1796000000 + 86400, tls_host_rng, NULL, err,
					   sizeof(err)), 0);
	held = tls_host_heap.bytes - before;
	printf("a P-256 key and one-name certificate hold %zu bytes; estimated %zu\n", held, tls_keys_heap_bytes(&k));
	assert_true(tls_keys_heap_bytes(&k) >= held);
	assert_true(tls_keys_heap_bytes(&k) <= 3072);
	tls_keys_free(&k);
	/* The default names (the served generated one). */
	tls_names_default(&nm);
	assert_int_equal(tls_cert_generate(&k, &nm, 1796000000, 1796000000 + 86400, tls_host_rng, NULL, err,
					   sizeof(err)), 0);
	held = tls_host_heap.bytes - before;
	printf("the generated served one holds %zu bytes; estimated %zu\n", held, tls_keys_heap_bytes(&k));
	assert_true(tls_keys_heap_bytes(&k) >= held);
	tls_keys_free(&k);
	assert_int_equal(tls_host_heap.blocks, 0);
}

static void test_sni(void **state)
{
	const unsigned char *s = (const unsigned char *)"Acme.Example.";

	(void)state;
	assert_true(tls_sni_is(s, 13, "acme.example"));
	assert_true(tls_sni_is(s, 12, "acme.example"));
	assert_true(tls_sni_is(s, 12, "ACME.example."));
	assert_false(tls_sni_is(s, 11, "acme.example"));	/* a prefix */
	assert_false(tls_sni_is(s, 4, "acme.example"));
	assert_false(tls_sni_is((const unsigned char *)"acme.examplf", 12, "acme.example"));
	assert_false(tls_sni_is((const unsigned char *)"acme.example.com", 16, "acme.example"));
	assert_false(tls_sni_is(NULL, 0, "acme.example"));
	assert_false(tls_sni_is(s, 0, ""));
	assert_false(tls_sni_is((const unsigned char *)".", 1, "."));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_under_handshakes),
		cmocka_unit_test(test_holders_bounded),
		cmocka_unit_test(test_heap_bytes_bound),
		cmocka_unit_test(test_sni),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
