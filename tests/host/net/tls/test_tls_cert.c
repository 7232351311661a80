/* net/tls/tls_cert.c, the certificate the appliance makes for itself: the
 * tls.names= parser with good and bad lists, the validity window, and the
 * certificate built for a fixed key (openssl's fixture) parsed back with
 * mbedTLS: its SANs in order, CA:FALSE, key usage and serverAuth, validity,
 * a signature that verifies under its own key (and fails on a changed
 * byte); generation from the RNG, its failures leaking nothing; what
 * tls_cert_describe() says, checked against openssl. */
#define _GNU_SOURCE	/* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define MBEDTLS_ALLOW_PRIVATE_ACCESS	/* ca_istrue, key_usage, sig_md: what is checked */
#include "kernel/time/wallclock.h"
#include "mbedtls/oid.h"
#include "mbedtls/sha256.h"
#include "mbedtls/x509_crt.h"
#include "net/tls/tls_cert.h"
#include "tests/host/net/tls/tls_host.h"

static char err[160];

static void names_ok(const char *list, unsigned n, const char *first, const char *last)
{
	struct tls_names nm;

	if (tls_names_parse(list, &nm, err, sizeof(err)) != 0)
		fail_msg("\"%s\" refused: %s", list, err);
	assert_int_equal(nm.n, n);
	assert_string_equal(nm.name[0], first);
	assert_string_equal(nm.name[n - 1], last);
	assert_false(nm.loopback);
}

static void names_bad(const char *list, const char *why)
{
	struct tls_names nm;

	err[0] = '\0';
	assert_int_equal(tls_names_parse(list, &nm, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("\"%.80s\": \"%s\" does not say \"%s\"", list, err, why);
	assert_int_equal(nm.n, 0);
}

static void test_names(void **state)
{
	char long_name[300], long_label[80], nine[200];

	(void)state;
	names_ok("vireo", 1, "vireo", "vireo");
	names_ok("WWW.Example.COM,a-b.example.org", 2, "www.example.com", "a-b.example.org");
	names_ok("a,b,c,d,e,f,g,h", 8, "a", "h");
	names_ok("x1.y2.z3", 1, "x1.y2.z3", "x1.y2.z3");
	/* 63 characters a label, 253 a name: the limits themselves pass. */
	memset(long_label, 'a', 63);
	long_label[63] = '\0';
	names_ok(long_label, 1, long_label, long_label);
	for (int i = 0; i < 253; i++)
		long_name[i] = (i % 2) ? '.' : 'a';
	long_name[253] = '\0';
	names_ok(long_name, 1, long_name, long_name);

	names_bad("", "empty name");
	names_bad("a,,b", "empty name");
	names_bad("a,", "empty name");
	names_bad("-a.example", "a label starting with '-'");
	names_bad("a-.example", "ending in '-'");
	names_bad("a-", "ending in '-'");
	names_bad("a..b", "a label empty");
	names_bad(".a", "a label empty");
	names_bad("a.", "a label empty");
	names_bad("a_b.example", "not a DNS name");
	names_bad("a b", "not a DNS name");
	names_bad("*.example.com", "not a DNS name");
	names_bad("a\"b", "not a DNS name");
	names_bad("192.168.1.1", "an address");
	long_label[63] = 'a';
	long_label[64] = '\0';
	names_bad(long_label, "a label over 63");
	long_name[253] = 'a';
	long_name[254] = '\0';
	names_bad(long_name, "over 253");
	strcpy(nine, "a,b,c,d,e,f,g,h,i");
	names_bad(nine, "more than 8 names");
	/* The bad name is the one quoted. */
	names_bad("good.example,bad_one", "\"bad_one\"");
}

static void test_validity(void **state)
{
	u64 nb, na, now = 1796000000;	/* 2026-12-01 */

	(void)state;
	tls_cert_validity(true, now, &nb, &na);
	assert_int_equal(nb, now - TLS_CERT_SKEW_S);
	assert_int_equal(na, now + 90ULL * 86400);
	tls_cert_validity(false, now, &nb, &na);
	assert_int_equal(nb, wallclock_from_civil(2024, 1, 1, 0, 0, 0));
	assert_int_equal(na, wallclock_from_civil(2049, 12, 31, 23, 59, 59));
	/* A clock before the plausible range is no clock. */
	tls_cert_validity(true, 1000, &nb, &na);
	assert_int_equal(nb, TLS_CERT_NOCLOCK_FROM);
	assert_int_equal(na, TLS_CERT_NOCLOCK_TO);
}

/* The fixture key, a certificate built for it, parsed back. */
struct built {
	mbedtls_pk_context key;
	unsigned char buf[TLS_CERT_DER_MAX];
	const unsigned char *der;
	size_t len;
	mbedtls_x509_crt crt;
};

static void build(struct built *b, const struct tls_names *nm, u64 nb, u64 na)
{
	struct tls_blob k = tls_host_fixture("ec-key.pem");
	int ret;

	mbedtls_pk_init(&b->key);
	mbedtls_x509_crt_init(&b->crt);
	k.p = realloc(k.p, k.n + 1);
	k.p[k.n] = '\0';
	assert_int_equal(mbedtls_pk_parse_key(&b->key, k.p, k.n + 1, NULL, 0, tls_host_rng, NULL), 0);
	free(k.p);
	ret = tls_cert_build(&b->key, nm, nb, na, NULL, tls_host_rng, NULL, b->buf, sizeof(b->buf), &b->der, &b->len);
	if (ret != 0)
		fail_msg("tls_cert_build: -0x%04x", -ret);
	assert_ptr_equal(b->der + b->len, b->buf + sizeof(b->buf));
	ret = mbedtls_x509_crt_parse_der(&b->crt, b->der, b->len);
	if (ret != 0)
		fail_msg("the certificate does not parse: -0x%04x", -ret);
}

static void built_free(struct built *b)
{
	mbedtls_x509_crt_free(&b->crt);
	mbedtls_pk_free(&b->key);
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* The signature over the TBS part verifies under the certificate's own key,
 * and does not once a byte of what it signs changes. */
static int sig_verifies(const mbedtls_x509_crt *c, size_t flip)
{
	unsigned char tbs[TLS_CERT_DER_MAX], hash[32];

	assert_true(c->tbs.len <= sizeof(tbs));
	memcpy(tbs, c->tbs.p, c->tbs.len);
	if (flip < c->tbs.len)
		tbs[flip] ^= 0x01;
	mbedtls_sha256(tbs, c->tbs.len, hash, 0);
	return mbedtls_pk_verify((mbedtls_pk_context *)&c->pk, MBEDTLS_MD_SHA256, hash, sizeof(hash), c->sig.p,
				 c->sig.len) == 0;
}

static void test_build_parses_back(void **state)
{
	static struct built b;
	struct tls_names nm;
	struct tls_cert_info info;
	u64 nb = wallclock_from_civil(2026, 12, 6, 21, 0, 0), na = nb + 90ULL * 86400 + 3600;
	const mbedtls_x509_sequence *s;
	char cn[80];

	(void)state;
	tls_names_default(&nm);
	build(&b, &nm, nb, na);
	assert_int_equal(b.crt.version, 3);
	/* CA:FALSE, present (the extension is there, not just defaulted). */
	assert_true(b.crt.ext_types & MBEDTLS_X509_EXT_BASIC_CONSTRAINTS);
	assert_int_equal(b.crt.ca_istrue, 0);
	assert_true(b.crt.ext_types & MBEDTLS_X509_EXT_KEY_USAGE);
	assert_int_equal(b.crt.key_usage, MBEDTLS_X509_KU_DIGITAL_SIGNATURE);
	assert_int_equal(mbedtls_x509_crt_check_extended_key_usage(&b.crt, MBEDTLS_OID_SERVER_AUTH,
								  MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH)), 0);
	assert_int_not_equal(mbedtls_x509_crt_check_extended_key_usage(&b.crt, MBEDTLS_OID_CLIENT_AUTH,
								      MBEDTLS_OID_SIZE(MBEDTLS_OID_CLIENT_AUTH)), 0);
	/* ECDSA with SHA-256 by a P-256 key, the fixture's. */
	assert_int_equal(b.crt.sig_md, MBEDTLS_MD_SHA256);
	assert_int_equal(b.crt.sig_pk, MBEDTLS_PK_ECDSA);
	assert_int_equal(mbedtls_pk_check_pair(&b.crt.pk, &b.key, tls_host_rng, NULL), 0);
	assert_true(sig_verifies(&b.crt, (size_t)-1));
	assert_false(sig_verifies(&b.crt, b.crt.tbs.len / 2));
	/* Self-signed: issuer is subject, CN the first name. */
	assert_int_equal(b.crt.issuer_raw.len, b.crt.subject_raw.len);
	assert_memory_equal(b.crt.issuer_raw.p, b.crt.subject_raw.p, b.crt.issuer_raw.len);
	assert_true(mbedtls_x509_dn_gets(cn, sizeof(cn), &b.crt.subject) > 0);
	assert_string_equal(cn, "CN=vireo");
	/* A positive 16-byte serial. */
	assert_int_equal(b.crt.serial.len, 16);
	assert_true(b.crt.serial.p[0] >= 0x01 && b.crt.serial.p[0] <= 0x7f);
	/* The SANs in the order given: two DNS names, then the loopbacks. */
	s = &b.crt.subject_alt_names;
	assert_int_equal(s->buf.tag, MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_DNS_NAME);
	assert_int_equal(s->buf.len, 5);
	assert_memory_equal(s->buf.p, "vireo", 5);
	tls_cert_describe(&b.crt, &info);
	assert_string_equal(info.names, "vireo,localhost,127.0.0.1,0:0:0:0:0:0:0:1");
	assert_int_equal(info.not_before, nb);
	assert_int_equal(info.not_after, na);
	assert_int_equal(b.crt.valid_to.year, 2027);
	assert_int_equal(b.crt.valid_to.mon, 3);
	assert_int_equal(b.crt.valid_to.day, 6);
	assert_int_equal(b.crt.valid_to.hour, 22);
	built_free(&b);

	/* No loopback, given names; a year past 2049 (GeneralizedTime). */
	assert_int_equal(tls_names_parse("Appliance.Example,b.example", &nm, err, sizeof(err)), 0);
	build(&b, &nm, nb, wallclock_from_civil(2051, 1, 2, 3, 4, 5));
	tls_cert_describe(&b.crt, &info);
	assert_string_equal(info.names, "appliance.example,b.example");
	assert_int_equal(info.not_after, wallclock_from_civil(2051, 1, 2, 3, 4, 5));
	assert_true(mbedtls_x509_dn_gets(cn, sizeof(cn), &b.crt.subject) > 0);
	assert_string_equal(cn, "CN=appliance.example");
	built_free(&b);
}

static void test_build_refuses(void **state)
{
	static struct built b;
	struct tls_names nm;
	const unsigned char *der;
	size_t len;

	(void)state;
	tls_names_default(&nm);
	build(&b, &nm, 2000000000, 2000000001);
	/* No names, an empty window, a buffer too small: errors, no leak. */
	nm.n = 0;
	assert_int_not_equal(tls_cert_build(&b.key, &nm, 1, 2, NULL, tls_host_rng, NULL, b.buf, sizeof(b.buf), &der,
					    &len), 0);
	tls_names_default(&nm);
	assert_int_not_equal(tls_cert_build(&b.key, &nm, 2, 2, NULL, tls_host_rng, NULL, b.buf, sizeof(b.buf), &der,
					    &len), 0);
	assert_int_not_equal(tls_cert_build(&b.key, &nm, 1, 2, NULL, tls_host_rng, NULL, b.buf, 200, &der, &len), 0);
	built_free(&b);
}

/* The label text: names safe as a Prometheus label value, cut at length. */
static void test_describe_safe_and_bounded(void **state)
{
	static struct built b;
	struct tls_names nm;
	struct tls_cert_info info;

	(void)state;
	/* tls_cert_build() takes what it is given: a name with a quote, a
	 * backslash and a control byte (not the CN: mbedTLS's name parser
	 * takes backslashes as escapes) stands for a certificate from elsewhere. */
	memset(&nm, 0, sizeof(nm));
	strcpy(nm.name[0], "ok");
	strcpy(nm.name[1], "a\"b\\c\x01");
	nm.n = 2;
	build(&b, &nm, 2000000000, 2000086400);
	tls_cert_describe(&b.crt, &info);
	assert_string_equal(info.names, "ok,a?b?c?");
	built_free(&b);

	memset(&nm, 0, sizeof(nm));
	for (unsigned i = 0; i < TLS_NAMES_MAX; i++) {
		memset(nm.name[i], 'a' + i, 60);
		nm.n++;
	}
	build(&b, &nm, 2000000000, 2000086400);
	tls_cert_describe(&b.crt, &info);
	assert_int_equal(strlen(info.names), TLS_CERT_NAMES_TEXT - 1);
	assert_string_equal(info.names + TLS_CERT_NAMES_TEXT - 4, "...");
	assert_int_equal(info.names[60], ',');
	built_free(&b);
}

/* The fingerprint and dates of openssl's fixture (no SANs), as openssl
 * reads them. */
static void test_describe_against_openssl(void **state)
{
	struct tls_blob c = tls_host_fixture("ec-cert.pem");
	mbedtls_x509_crt crt;
	struct tls_cert_info info;
	char cmd[512], line[256], want[128], got[128];
	FILE *f;
	size_t n = 0;

	(void)state;
	mbedtls_x509_crt_init(&crt);
	c.p = realloc(c.p, c.n + 1);
	c.p[c.n] = '\0';
	assert_int_equal(mbedtls_x509_crt_parse(&crt, c.p, c.n + 1), 0);
	free(c.p);
	tls_cert_describe(&crt, &info);
	assert_string_equal(info.names, "");
	assert_true(info.not_after > info.not_before && info.not_before > WALLCLOCK_MIN_S);

	snprintf(cmd, sizeof(cmd), "openssl x509 -in %s/ec-cert.pem -noout -fingerprint -sha256 -enddate",
		 TLS_FIX_DIR);
	f = popen(cmd, "r");
	assert_non_null(f);
	want[0] = '\0';
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');

		if (eq && strstr(line, "Fingerprint"))
			snprintf(want, sizeof(want), "%.*s", (int)strcspn(eq + 1, "\n"), eq + 1);
	}
	assert_int_equal(pclose(f), 0);
	for (int i = 0; i < 32; i++)
		n += (size_t)snprintf(got + n, sizeof(got) - n, i < 31 ? "%02X:" : "%02X", info.sha256[i]);
	assert_string_equal(got, want);
	/* 30 days, as host.mk's openssl req -days 30 made it. */
	assert_int_equal(info.not_after - info.not_before, 30ULL * 86400);
	mbedtls_x509_crt_free(&crt);
	assert_int_equal(tls_host_heap.blocks, 0);
}

static void test_generate(void **state)
{
	struct tls_keys a, b;
	struct tls_names nm;
	char d[32];
	u64 nb = 1796000000, na = nb + 90ULL * 86400;
	long n;

	(void)state;
	tls_names_default(&nm);
	assert_int_equal(tls_cert_generate(&a, &nm, nb, na, tls_host_rng, NULL, err, sizeof(err)), 0);
	assert_int_equal(a.loaded, 1);
	assert_string_equal(tls_keys_describe(&a, d, sizeof(d)), "EC P-256");
	assert_int_equal(mbedtls_pk_check_pair(&a.chain.pk, &a.key, tls_host_rng, NULL), 0);
	assert_false(tls_keys_ca_issued(&a));
	assert_true(sig_verifies(&a.chain, (size_t)-1));
	/* Another key and serial each time. */
	assert_int_equal(tls_cert_generate(&b, &nm, nb, na, tls_host_rng, NULL, err, sizeof(err)), 0);
	assert_int_not_equal(mbedtls_pk_check_pair(&a.chain.pk, &b.key, tls_host_rng, NULL), 0);
	assert_memory_not_equal(a.chain.serial.p, b.chain.serial.p, 16);
	tls_keys_free(&a);
	tls_keys_free(&b);
	assert_int_equal(tls_host_heap.blocks, 0);

	/* Every allocation failing in turn: -1, a message, nothing left. */
	for (n = 0;; n++) {
		int ret;

		tls_host_fail_alloc(n);
		err[0] = '\0';
		ret = tls_cert_generate(&a, &nm, nb, na, tls_host_rng, NULL, err, sizeof(err));
		tls_host_fail_alloc(-1);
		if (ret == 0) {
			tls_keys_free(&a);
			break;
		}
		assert_int_equal(ret, -1);
		assert_true(err[0] != '\0');
		assert_int_equal(a.loaded, 0);
		tls_keys_free(&a);
		assert_int_equal(tls_host_heap.blocks, 0);
	}
	assert_true(n > 1);
	assert_int_equal(tls_host_heap.blocks, 0);
}

/* TLS-ALPN-01's certificate: generated with the acmeIdentifier, which
 * mbedTLS must be told to accept to parse it back (a critical extension it
 * does not know), and which is there, critical, with the 32 bytes. */
static void test_generate_acme_id(void **state)
{
	static const unsigned char ext[] = { 0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1f,
					     0x01, 0x01, 0xff, 0x04, 0x22, 0x04, 0x20 };
	unsigned char id[32], want[sizeof(ext) + 32];
	struct tls_keys a;
	struct tls_names nm;
	u64 nb = 1796000000, na = nb + 86400;
	const unsigned char *p;
	size_t n;

	(void)state;
	for (int i = 0; i < 32; i++)
		id[i] = (unsigned char)(0xa0 + i);
	assert_int_equal(tls_names_parse("acme.example", &nm, err, sizeof(err)), 0);
	if (tls_cert_generate_id(&a, &nm, nb, na, id, tls_host_rng, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(a.loaded, 1);
	assert_true(sig_verifies(&a.chain, (size_t)-1));
	memcpy(want, ext, sizeof(ext));
	memcpy(want + sizeof(ext), id, 32);
	p = a.chain.raw.p;
	n = a.chain.raw.len;
	assert_non_null(memmem(p, n, want, sizeof(want)));
	tls_keys_free(&a);
	assert_int_equal(tls_host_heap.blocks, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_validity),
		cmocka_unit_test(test_build_parses_back),
		cmocka_unit_test(test_build_refuses),
		cmocka_unit_test(test_describe_safe_and_bounded),
		cmocka_unit_test(test_describe_against_openssl),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_generate_acme_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
