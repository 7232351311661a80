/* net/acme/acme_sign.c: the account key's JWK and RFC 7638 thumbprint
 * against python3's, computed from openssl's public key of the fixture
 * (made at build time, never committed); JWS requests (jwk and kid forms,
 * POST-as-GET) read back with the JSON reader and verified three ways:
 * mbedTLS's ECDSA on the raw R || S, mbedTLS's pk_verify on the DER built
 * back, and `openssl dgst -verify`, each failing on a changed byte; the
 * DER-to-raw conversion on hostile input; key authorizations, the HTTP-01
 * path and TLS-ALPN-01's digest (against openssl's SHA-256) and its
 * certificate's acmeIdentifier extension (parsed back by mbedTLS and by
 * openssl); the finalize CSR checked by `openssl req -verify`; External
 * Account Binding's HS256 JWS against python3's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "mbedtls/asn1write.h"
#include "mbedtls/ecdsa.h"
#include "mbedtls/oid.h"
#include "mbedtls/pk.h"
#include "mbedtls/sha256.h"
#include "mbedtls/x509_crt.h"
#include "net/acme/acme_json.h"
#include "net/acme/acme_sign.h"
#include "net/acme/b64url.h"
#include "net/tls/tls_keys.h"
#include "tests/host/net/tls/tls_host.h"

static void load_fixture_key(mbedtls_pk_context *pk)
{
	struct tls_blob k = tls_host_fixture("ec-key.pem");

	mbedtls_pk_init(pk);
	k.p = realloc(k.p, k.n + 1);
	k.p[k.n] = '\0';
	assert_int_equal(mbedtls_pk_parse_key(pk, k.p, k.n + 1, NULL, 0, tls_host_rng, NULL), 0);
	free(k.p);
}

/* One line of a shell command's output. */
static void run(const char *cmd, char *out, size_t cap)
{
	FILE *f = popen(cmd, "r");

	assert_non_null(f);
	out[0] = '\0';
	if (!fgets(out, (int)cap, f))
		out[0] = '\0';
	pclose(f);
	out[strcspn(out, "\n")] = '\0';
}

static void test_jwk_thumbprint(void **state)
{
	mbedtls_pk_context pk;
	char jwk[ACME_JWK_MAX], th[ACME_THUMB_LEN + 1], want[128];
	size_t n;

	load_fixture_key(&pk);
	assert_int_equal(acme_jwk(&pk, jwk, sizeof(jwk), &n), 0);
	assert_int_equal(n, 126);
	assert_int_equal(strncmp(jwk, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"", 31), 0);
	assert_int_equal(acme_jwk(&pk, jwk, 126, &n), -1);	/* no room for the NUL */
	assert_int_equal(acme_thumbprint(&pk, th), 0);
	assert_int_equal(strlen(th), ACME_THUMB_LEN);
	/* RFC 7638 section 3 done by python3 from openssl's SPKI: the last 64
	 * bytes are X and Y. */
	run("openssl pkey -in " TLS_FIX_DIR "/ec-key.pem -pubout -outform DER | python3 -c '"
	    "import sys,hashlib,base64,json\n"
	    "d=sys.stdin.buffer.read(); x,y=d[-64:-32],d[-32:]\n"
	    "e=lambda b: base64.urlsafe_b64encode(b).rstrip(b\"=\").decode()\n"
	    "j=json.dumps({\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":e(x),\"y\":e(y)},separators=(\",\",\":\"),sort_keys=True)\n"
	    "print(e(hashlib.sha256(j.encode()).digest()))'",
	    want, sizeof(want));
	assert_int_equal(strlen(want), ACME_THUMB_LEN);
	assert_string_equal(th, want);
	mbedtls_pk_free(&pk);

	/* Not P-256: an RSA key is refused. */
	struct tls_blob k = tls_host_fixture("rsa-key.pem");

	mbedtls_pk_init(&pk);
	k.p = realloc(k.p, k.n + 1);
	k.p[k.n] = '\0';
	assert_int_equal(mbedtls_pk_parse_key(&pk, k.p, k.n + 1, NULL, 0, tls_host_rng, NULL), 0);
	free(k.p);
	assert_int_equal(acme_thumbprint(&pk, th), -1);
	assert_int_equal(acme_jwk(&pk, jwk, sizeof(jwk), &n), -1);
	mbedtls_pk_free(&pk);
}

/* A JWS read back: the protected header's members, the payload, and the
 * signature verified three ways. */
static void check_jws(mbedtls_pk_context *pk, const char *jws, size_t len, const char *kid, const char *payload)
{
	struct acme_json_tok tok[32], htok[32];
	struct acme_json j, h;
	char prot[1400], pay[256], sig[100], hdr[1100], jwk[ACME_JWK_MAX], buf[1700];
	u8 raw[64], hash[32], der[80], *p;
	size_t plen, n, sl, hl;
	mbedtls_mpi r, s;

	assert_int_equal(acme_json_parse(&j, jws, len, tok, 32), AJ_OK);
	assert_int_equal(j.t[0].n, 3);
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, 0, "protected"), prot, sizeof(prot), &plen), 0);
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, 0, "payload"), pay, sizeof(pay), &n), 0);
	assert_int_equal(acme_json_str(&j, acme_json_get(&j, 0, "signature"), sig, sizeof(sig), &sl), 0);

	assert_int_equal(b64url_decode(prot, plen, (u8 *)hdr, sizeof(hdr) - 1, &hl), 0);
	hdr[hl] = '\0';
	assert_int_equal(acme_json_parse(&h, hdr, hl, htok, 32), AJ_OK);
	assert_int_equal(h.t[0].n, 4);
	assert_true(acme_json_str_is(&h, acme_json_get(&h, 0, "alg"), "ES256"));
	assert_true(acme_json_str_is(&h, acme_json_get(&h, 0, "nonce"), "oFvnlFP1wIhRlYS2jTaXbA"));
	assert_true(acme_json_str_is(&h, acme_json_get(&h, 0, "url"), "https://example.com/acme/new-\"order"));
	if (kid) {
		assert_true(acme_json_str_is(&h, acme_json_get(&h, 0, "kid"), kid));
		assert_int_equal(acme_json_get(&h, 0, "jwk"), -1);
	} else {
		int k = acme_json_get(&h, 0, "jwk");

		assert_int_equal(acme_json_get(&h, 0, "kid"), -1);
		assert_int_equal(acme_jwk(pk, jwk, sizeof(jwk), &n), 0);
		assert_int_equal(h.t[k].len, n);
		assert_memory_equal(hdr + h.t[k].off, jwk, n);
	}
	assert_int_equal(b64url_decode(pay, strlen(pay), (u8 *)buf, sizeof(buf) - 1, &n), 0);
	assert_int_equal(n, strlen(payload));
	assert_memory_equal(buf, payload, n);

	/* The signing input, hashed here from the parts read back. */
	snprintf(buf, sizeof(buf), "%s.%s", prot, pay);
	assert_int_equal(mbedtls_sha256((u8 *)buf, strlen(buf), hash, 0), 0);
	assert_int_equal(b64url_decode(sig, sl, raw, sizeof(raw), &n), 0);
	assert_int_equal(n, 64);

	/* 1: the raw numbers against the public point. */
	mbedtls_ecp_keypair *kp = mbedtls_pk_ec(*pk);
	mbedtls_ecp_group grp;
	mbedtls_ecp_point q;
	mbedtls_mpi d;

	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	mbedtls_mpi_init(&d);
	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&q);
	assert_int_equal(mbedtls_ecp_export(kp, &grp, &d, &q), 0);
	assert_int_equal(mbedtls_mpi_read_binary(&r, raw, 32), 0);
	assert_int_equal(mbedtls_mpi_read_binary(&s, raw + 32, 32), 0);
	assert_int_equal(mbedtls_ecdsa_verify(&grp, hash, 32, &q, &r, &s), 0);
	hash[5] ^= 1;
	assert_int_not_equal(mbedtls_ecdsa_verify(&grp, hash, 32, &q, &r, &s), 0);
	hash[5] ^= 1;

	/* 2: back to DER, through pk_verify. */
	p = der + sizeof(der);
	n = 0;
	n += (size_t)mbedtls_asn1_write_mpi(&p, der, &s);
	n += (size_t)mbedtls_asn1_write_mpi(&p, der, &r);
	n += (size_t)mbedtls_asn1_write_len(&p, der, n);
	n += (size_t)mbedtls_asn1_write_tag(&p, der, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
	assert_int_equal(mbedtls_pk_verify(pk, MBEDTLS_MD_SHA256, hash, 32, p, n), 0);
	/* And the conversion is the inverse. */
	u8 raw2[64];

	assert_int_equal(acme_sig_raw(p, n, raw2), 0);
	assert_memory_equal(raw, raw2, 64);

	/* 3: openssl on the signing input, the DER signature and the key. */
	char dir[] = "/tmp/acme-sign-XXXXXX", cmd[512], out[64];
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/in", dir);
	f = fopen(cmd, "w");
	fputs(buf, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/sig", dir);
	f = fopen(cmd, "w");
	fwrite(p, 1, n, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "openssl pkey -in " TLS_FIX_DIR "/ec-key.pem -pubout -out %s/pub.pem 2>/dev/null && "
		 "openssl dgst -sha256 -verify %s/pub.pem -signature %s/sig %s/in 2>&1",
		 dir, dir, dir, dir);
	run(cmd, out, sizeof(out));
	assert_string_equal(out, "Verified OK");
	snprintf(cmd, sizeof(cmd), "printf x >> %s/in; openssl dgst -sha256 -verify %s/pub.pem -signature %s/sig %s/in 2>&1 "
		 "| head -1; rm -r %s", dir, dir, dir, dir, dir);
	run(cmd, out, sizeof(out));
	assert_string_equal(out, "Verification failure");

	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
	mbedtls_mpi_free(&d);
	mbedtls_ecp_group_free(&grp);
	mbedtls_ecp_point_free(&q);
}

static void test_jws(void **state)
{
	static const char payload[] = "{\"identifiers\":[{\"type\":\"dns\",\"value\":\"www.example.org\"}]}";
	struct acme_jws_in in = {
		.nonce = "oFvnlFP1wIhRlYS2jTaXbA",
		.url = "https://example.com/acme/new-\"order",
		.payload = payload,
		.payload_len = sizeof(payload) - 1,
	};
	mbedtls_pk_context pk;
	char out[2048];
	size_t len;

	load_fixture_key(&pk);
	in.key = &pk;
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), 0);
	assert_int_equal(strlen(out), len);
	check_jws(&pk, out, len, NULL, payload);
	/* Exactly the room it needs, then one byte less. */
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, len + 1, &len), 0);
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, len, &len), -1);

	/* kid, POST-as-GET: "payload":"". */
	in.kid = "https://example.com/acme/acct/evOfKhNU60wg";
	in.payload = NULL;
	in.payload_len = 0;
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), 0);
	assert_non_null(strstr(out, "\"payload\":\"\""));
	check_jws(&pk, out, len, in.kid, "");

	/* Refused: a nonce that is not base64url or too long, a url too long. */
	char longurl[ACME_URL_MAX + 2], longnonce[ACME_NONCE_MAX + 2];

	in.nonce = "a\"b";
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), -1);
	in.nonce = "";
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), -1);
	memset(longnonce, 'A', sizeof(longnonce) - 1);
	longnonce[sizeof(longnonce) - 1] = '\0';
	in.nonce = longnonce;
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), -1);
	longnonce[ACME_NONCE_MAX] = '\0';
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), 0);
	memset(longurl, 'u', sizeof(longurl) - 1);
	longurl[sizeof(longurl) - 1] = '\0';
	in.url = longurl;
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), -1);
	/* The longest of everything with the jwk fits the header buffer. */
	longurl[ACME_URL_MAX] = '\0';
	in.url = longurl;
	in.kid = NULL;
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), 0);
	in.kid = longurl;
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), 0);
	mbedtls_pk_free(&pk);
}

static void test_generated_key(void **state)
{
	struct acme_jws_in in = { .nonce = "abc", .url = "https://example.com/acme/new-\"order" };
	mbedtls_pk_context a, b;
	char ta[ACME_THUMB_LEN + 1], tb[ACME_THUMB_LEN + 1], out[2048];
	size_t len;

	assert_int_equal(acme_key_generate(&a, tls_host_rng, NULL), 0);
	assert_int_equal(acme_key_generate(&b, tls_host_rng, NULL), 0);
	assert_int_equal(acme_thumbprint(&a, ta), 0);
	assert_int_equal(acme_thumbprint(&b, tb), 0);
	assert_string_not_equal(ta, tb);
	in.key = &a;
	in.nonce = "oFvnlFP1wIhRlYS2jTaXbA";
	assert_int_equal(acme_jws(&in, tls_host_rng, NULL, out, sizeof(out), &len), 0);
	/* Verifies under a, not under b. */
	{
		struct acme_json_tok tok[8];
		struct acme_json j;
		char prot[1400], sig[100], input[1500];
		u8 raw[64], hash[32], der[80], *p = der + sizeof(der);
		size_t n = 0, sl;
		mbedtls_mpi r, s;

		assert_int_equal(acme_json_parse(&j, out, len, tok, 8), AJ_OK);
		assert_int_equal(acme_json_str(&j, acme_json_get(&j, 0, "protected"), prot, sizeof(prot), NULL), 0);
		assert_int_equal(acme_json_str(&j, acme_json_get(&j, 0, "signature"), sig, sizeof(sig), &sl), 0);
		snprintf(input, sizeof(input), "%s.", prot);
		mbedtls_sha256((u8 *)input, strlen(input), hash, 0);
		assert_int_equal(b64url_decode(sig, sl, raw, 64, &n), 0);
		mbedtls_mpi_init(&r);
		mbedtls_mpi_init(&s);
		mbedtls_mpi_read_binary(&r, raw, 32);
		mbedtls_mpi_read_binary(&s, raw + 32, 32);
		n = (size_t)mbedtls_asn1_write_mpi(&p, der, &s);
		n += (size_t)mbedtls_asn1_write_mpi(&p, der, &r);
		n += (size_t)mbedtls_asn1_write_len(&p, der, n);
		n += (size_t)mbedtls_asn1_write_tag(&p, der, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE);
		assert_int_equal(mbedtls_pk_verify(&a, MBEDTLS_MD_SHA256, hash, 32, p, n), 0);
		assert_int_not_equal(mbedtls_pk_verify(&b, MBEDTLS_MD_SHA256, hash, 32, p, n), 0);
		mbedtls_mpi_free(&r);
		mbedtls_mpi_free(&s);
	}
	mbedtls_pk_free(&a);
	mbedtls_pk_free(&b);
	/* The RNG failing: an error, nothing leaked (ASan's leak check). */
	tls_host_fail_alloc(0);
	assert_int_not_equal(acme_key_generate(&a, tls_host_rng, NULL), 0);
	tls_host_fail_alloc(-1);
}

static void test_sig_raw(void **state)
{
	u8 raw[64];
	/* r = 1 (one byte), s = 0x80 then 31 bytes (a leading zero). */
	u8 ok[2 + 3 + 35] = { 0x30, 38, 0x02, 1, 0x01, 0x02, 33, 0x00, 0x80 };
	u8 bad[40];

	assert_int_equal(acme_sig_raw(ok, sizeof(ok), raw), 0);
	for (int i = 0; i < 31; i++)
		assert_int_equal(raw[i], 0);
	assert_int_equal(raw[31], 1);
	assert_int_equal(raw[32], 0x80);
	/* A changed shape each: trailing byte, short length, negative number,
	 * non-minimal zero, 33 bytes without the zero, wrong tags. */
	assert_int_equal(acme_sig_raw(ok, sizeof(ok) - 1, raw), -1);
	memcpy(bad, ok, sizeof(ok));
	bad[4] = 0x81;
	assert_int_equal(acme_sig_raw(bad, sizeof(ok), raw), -1);
	memcpy(bad, ok, sizeof(ok));
	bad[8] = 0x7f;
	assert_int_equal(acme_sig_raw(bad, sizeof(ok), raw), -1);
	memcpy(bad, ok, sizeof(ok));
	bad[7] = 0x01;
	assert_int_equal(acme_sig_raw(bad, sizeof(ok), raw), -1);
	memcpy(bad, ok, sizeof(ok));
	bad[0] = 0x31;
	assert_int_equal(acme_sig_raw(bad, sizeof(ok), raw), -1);
	memcpy(bad, ok, sizeof(ok));
	bad[2] = 0x04;
	assert_int_equal(acme_sig_raw(bad, sizeof(ok), raw), -1);
	u8 extra[sizeof(ok) + 1];

	memcpy(extra, ok, sizeof(ok));
	extra[1] = 39;
	extra[sizeof(ok)] = 0;
	assert_int_equal(acme_sig_raw(extra, sizeof(extra), raw), -1);
	assert_int_equal(acme_sig_raw(ok, 0, raw), -1);
}

static void test_key_authz(void **state)
{
	static const char token[] = "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA";
	static const char thumb[] = "LoqXcDoeoA1RzCq8gwOlEEtl5D8iS5OWPU_C1aYNPdo";
	char ka[ACME_KEYAUTHZ_MAX], path[200], want[100], hex[65], cmd[300];
	u8 d[32];
	char longtok[ACME_TOKEN_MAX + 2];

	assert_int_equal(acme_key_authz(token, thumb, ka, sizeof(ka)), 0);
	assert_string_equal(ka, "evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.LoqXcDoeoA1RzCq8gwOlEEtl5D8iS5OWPU_C1aYNPdo");
	assert_int_equal(acme_key_authz(token, thumb, ka, strlen(ka)), -1);
	assert_int_equal(acme_key_authz("../etc", thumb, ka, sizeof(ka)), -1);
	assert_int_equal(acme_key_authz("a b", thumb, ka, sizeof(ka)), -1);
	assert_int_equal(acme_key_authz("", thumb, ka, sizeof(ka)), -1);
	assert_int_equal(acme_key_authz(token, "short", ka, sizeof(ka)), -1);
	memset(longtok, 'a', sizeof(longtok) - 1);
	longtok[sizeof(longtok) - 1] = '\0';
	assert_int_equal(acme_key_authz(longtok, thumb, ka, sizeof(ka)), -1);
	longtok[ACME_TOKEN_MAX] = '\0';
	assert_int_equal(acme_key_authz(longtok, thumb, ka, sizeof(ka)), 0);

	assert_int_equal(acme_http01_path(token, path, sizeof(path)), 0);
	assert_string_equal(path, "/.well-known/acme-challenge/evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA");
	assert_int_equal(acme_http01_path("a/b", path, sizeof(path)), -1);
	assert_int_equal(acme_http01_path(token, path, 28 + 43), -1);

	assert_int_equal(acme_key_authz(token, thumb, ka, sizeof(ka)), 0);
	acme_alpn_digest(ka, d);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	snprintf(cmd, sizeof(cmd), "printf %%s '%s' | openssl dgst -sha256 -r | cut -d' ' -f1", ka);
	run(cmd, want, sizeof(want));
	assert_string_equal(hex, want);
}

/* mbedTLS refuses a critical extension it does not know unless a callback
 * takes it: this one keeps acmeIdentifier's value. */
static int ext_cb(void *ctx, const mbedtls_x509_crt *crt, const mbedtls_x509_buf *oid, int critical,
		  const unsigned char *p, const unsigned char *end)
{
	static const char id[] = MBEDTLS_OID_PKIX "\x01\x1f";
	u8 *seen = ctx;

	if (oid->len != sizeof(id) - 1 || memcmp(oid->p, id, oid->len) != 0 || !critical || end - p != 34 ||
	    p[0] != 0x04 || p[1] != 32)
		return -1;
	memcpy(seen, p + 2, 32);
	return 0;
}

static void test_alpn_cert(void **state)
{
	static unsigned char buf[TLS_CERT_DER_MAX];
	mbedtls_pk_context pk;
	struct tls_names nm;
	mbedtls_x509_crt crt;
	const unsigned char *der;
	size_t len;
	u8 d[32], seen[32] = { 0 };
	char err[100], cmd[400], out[200];

	load_fixture_key(&pk);
	assert_int_equal(tls_names_parse("www.example.org", &nm, err, sizeof(err)), 0);
	acme_alpn_digest("tok.thumb", d);
	assert_int_equal(tls_cert_build(&pk, &nm, 1800000000, 1800086400, d, tls_host_rng, NULL, buf, sizeof(buf),
					&der, &len), 0);
	mbedtls_x509_crt_init(&crt);
	/* Without the callback mbedTLS refuses it: the extension is critical. */
	assert_int_not_equal(mbedtls_x509_crt_parse_der(&crt, der, len), 0);
	mbedtls_x509_crt_free(&crt);
	mbedtls_x509_crt_init(&crt);
	assert_int_equal(mbedtls_x509_crt_parse_der_with_ext_cb(&crt, der, len, 1, ext_cb, seen), 0);
	assert_memory_equal(seen, d, 32);
	assert_int_equal(crt.subject_alt_names.buf.len, 15);
	assert_memory_equal(crt.subject_alt_names.buf.p, "www.example.org", 15);
	assert_null(crt.subject_alt_names.next);
	mbedtls_x509_crt_free(&crt);

	/* openssl names it critical and shows the OCTET STRING. */
	char dir[] = "/tmp/acme-alpn-XXXXXX";
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/c.der", dir);
	f = fopen(cmd, "w");
	fwrite(der, 1, len, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "openssl asn1parse -inform DER -in %s/c.der | grep -A2 ':1.3.6.1.5.5.7.1.31$' | tr -s ' ' | "
		 "cut -d: -f3- | tr '\\n' '|'; rm -r %s", dir, dir);
	run(cmd, out, sizeof(out));
	char want[200], hex[65];

	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02X", d[i]);
	snprintf(want, sizeof(want), " OBJECT :1.3.6.1.5.5.7.1.31| BOOLEAN :255| OCTET STRING [HEX DUMP]:0420%s|", hex);
	if (strcmp(out, want) != 0)
		fail_msg("openssl: %s\nwant:    %s", out, want);

	/* Without acme_id, no such extension. */
	assert_int_equal(tls_cert_build(&pk, &nm, 1800000000, 1800086400, NULL, tls_host_rng, NULL, buf, sizeof(buf),
					&der, &len), 0);
	mbedtls_x509_crt_init(&crt);
	assert_int_equal(mbedtls_x509_crt_parse_der(&crt, der, len), 0);
	mbedtls_x509_crt_free(&crt);
	mbedtls_pk_free(&pk);
}

static void test_csr(void **state)
{
	static unsigned char buf[ACME_CSR_DER_MAX];
	mbedtls_pk_context pk;
	struct tls_names nm;
	const unsigned char *der;
	size_t len;
	char err[100], cmd[600], out[300];
	char dir[] = "/tmp/acme-csr-XXXXXX";
	FILE *f;

	assert_int_equal(acme_key_generate(&pk, tls_host_rng, NULL), 0);
	assert_int_equal(tls_names_parse("www.example.org,example.org", &nm, err, sizeof(err)), 0);
	assert_int_equal(acme_csr(&pk, &nm, tls_host_rng, NULL, buf, sizeof(buf), &der, &len), 0);
	assert_ptr_equal(der + len, buf + sizeof(buf));
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "%s/r.der", dir);
	f = fopen(cmd, "w");
	fwrite(der, 1, len, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && openssl req -inform DER -in r.der -noout -text 2>/dev/null | grep -E 'Subject:|DNS:' | "
		 "tr -s ' ' | tr '\\n' '|'; rm -r %s", dir, dir);
	run(cmd, out, sizeof(out));
	if (strstr(out, "Subject: CN = www.example.org|") == NULL || strstr(out, "DNS:www.example.org, DNS:example.org|") == NULL)
		fail_msg("openssl: %s", out);
	/* The signature. */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s && cd %s && cat > r.der", dir, dir);
	f = popen(cmd, "w");
	fwrite(der, 1, len, f);
	pclose(f);
	snprintf(cmd, sizeof(cmd), "cd %s && openssl req -inform DER -in r.der -verify -noout 2>&1 | head -1", dir);
	run(cmd, out, sizeof(out));
	assert_true(strstr(out, "verify OK") != NULL || strstr(out, "Certificate request self-signature verify OK") != NULL);
	/* A changed byte inside the signed part: verify fails. */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && printf '\\x5a' | dd of=r.der bs=1 seek=%zu conv=notrunc 2>/dev/null && "
		 "openssl req -inform DER -in r.der -verify -noout 2>&1 | grep -c 'verify OK'; rm -r %s",
		 dir, len - 80, dir);
	run(cmd, out, sizeof(out));
	assert_string_equal(out, "0");

	/* Loopback addresses, no names: refused. */
	nm.loopback = true;
	assert_int_not_equal(acme_csr(&pk, &nm, tls_host_rng, NULL, buf, sizeof(buf), &der, &len), 0);
	nm.loopback = false;
	nm.n = 0;
	assert_int_not_equal(acme_csr(&pk, &nm, tls_host_rng, NULL, buf, sizeof(buf), &der, &len), 0);
	/* No room. */
	assert_int_equal(tls_names_parse("www.example.org", &nm, err, sizeof(err)), 0);
	assert_int_not_equal(acme_csr(&pk, &nm, tls_host_rng, NULL, buf, 100, &der, &len), 0);
	mbedtls_pk_free(&pk);
}

/* RFC 9773 section 4.1's example (AKI 69:88:5B:6B:87:46:40:41:E1:B3:7B:84:
 * 7B:A0:AE:2C:DE:01:C8:D4, serial 0x87654321): a CA whose subject key
 * identifier is that value issues a leaf with that serial (openssl, at
 * test time), which mbedTLS parses and acme_ari_cert_id() names. */
static void test_ari_cert_id(void **state)
{
	static const char want[] = "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE";
	char dir[] = "/tmp/acme-ari-XXXXXX", cmd[1200], path[100], id[64];
	mbedtls_x509_crt crt;
	struct tls_blob b;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && printf 'subjectKeyIdentifier=69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4\n"
		 "basicConstraints=critical,CA:TRUE\n' > ca.ext && printf 'authorityKeyIdentifier=keyid\n' > leaf.ext && "
		 "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null && "
		 "openssl req -new -key ca.key -subj /CN=ca -out ca.csr 2>/dev/null && "
		 "openssl x509 -req -in ca.csr -signkey ca.key -extfile ca.ext -days 2 -out ca.pem 2>/dev/null && "
		 "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out leaf.key 2>/dev/null && "
		 "openssl req -new -key leaf.key -subj /CN=leaf -out leaf.csr 2>/dev/null && "
		 "openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 0x87654321 -extfile leaf.ext "
		 "-days 2 -outform DER -out leaf.der 2>/dev/null && echo ok",
		 dir);
	run(cmd, id, sizeof(id));
	assert_string_equal(id, "ok");
	snprintf(path, sizeof(path), "%s/leaf.der", dir);
	f = fopen(path, "rb");
	assert_non_null(f);
	b.p = malloc(4096);
	b.n = fread(b.p, 1, 4096, f);
	fclose(f);
	mbedtls_x509_crt_init(&crt);
	assert_int_equal(mbedtls_x509_crt_parse_der(&crt, b.p, b.n), 0);
	free(b.p);
	assert_int_equal(acme_ari_cert_id(&crt, id, sizeof(id)), 0);
	assert_string_equal(id, want);
	/* Exactly the room, then one byte less. */
	assert_int_equal(acme_ari_cert_id(&crt, id, sizeof(want)), 0);
	assert_int_equal(acme_ari_cert_id(&crt, id, sizeof(want) - 1), -1);
	mbedtls_x509_crt_free(&crt);

	/* The CA's own certificate has no AKI here (none asked for): refused. */
	snprintf(path, sizeof(path), "%s/ca.pem", dir);
	snprintf(cmd, sizeof(cmd), "openssl x509 -in %s -outform DER -out %s/ca.der && rm -f %s", path, dir, path);
	run(cmd, id, sizeof(id));
	snprintf(path, sizeof(path), "%s/ca.der", dir);
	f = fopen(path, "rb");
	assert_non_null(f);
	b.p = malloc(4096);
	b.n = fread(b.p, 1, 4096, f);
	fclose(f);
	mbedtls_x509_crt_init(&crt);
	assert_int_equal(mbedtls_x509_crt_parse_der(&crt, b.p, b.n), 0);
	free(b.p);
	assert_int_equal(acme_ari_cert_id(&crt, id, sizeof(id)), -1);
	mbedtls_x509_crt_free(&crt);
	snprintf(cmd, sizeof(cmd), "rm -r %s", dir);
	run(cmd, id, sizeof(id));
}

/* A whole file into a malloc'd buffer, NUL-terminated; its length in *n. */
static unsigned char *slurp(const char *dir, const char *name, size_t *n)
{
	char path[160];
	unsigned char *p = malloc(16384);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_non_null(p);
	*n = fread(p, 1, 16383, f);
	fclose(f);
	p[*n] = '\0';
	return p;
}

/* The identifier of a certificate resumed from the store (runtime/
 * acme_state.c: the kept PEM chain, leaf first, and its key, loaded by
 * tls_keys_load()): the leaf's, never the issuer's after it, against one
 * python3 computes from openssl's text of the leaf's AKI and serial (a
 * 2-byte serial with no leading zero, an AKI of openssl's SHA-1 key
 * identifier). A leaf whose AKI names the issuer by name and serial only
 * (no keyIdentifier) has none: -1, and the appliance polls nothing. */
static void test_ari_cert_id_kept(void **state)
{
	char dir[] = "/tmp/acme-arik-XXXXXX", cmd[2400], want[160], id[129], err[160];
	unsigned char *chain, *key;
	size_t chain_len, key_len;
	struct tls_keys k;

	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && printf 'subjectKeyIdentifier=hash\nbasicConstraints=critical,CA:TRUE\n' > ca.ext && "
		 "printf 'authorityKeyIdentifier=keyid:always\n' > leaf.ext && "
		 "printf 'authorityKeyIdentifier=issuer:always\n' > noid.ext && "
		 "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ca.key 2>/dev/null && "
		 "openssl req -new -key ca.key -subj /CN=ca -out ca.csr 2>/dev/null && "
		 "openssl x509 -req -in ca.csr -signkey ca.key -extfile ca.ext -days 2 -out ca.pem 2>/dev/null && "
		 "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out leaf.key 2>/dev/null && "
		 "openssl req -new -key leaf.key -subj /CN=leaf -out leaf.csr 2>/dev/null && "
		 "openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 0x0102 -extfile leaf.ext "
		 "-days 2 -out leaf.pem 2>/dev/null && "
		 "openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 0x0103 -extfile noid.ext "
		 "-days 2 -out noid.pem 2>/dev/null && cat leaf.pem ca.pem > chain.pem && cat noid.pem ca.pem > "
		 "noid-chain.pem && openssl x509 -in leaf.pem -noout -ext authorityKeyIdentifier | python3 -c "
		 "\"import sys, base64, re; h = re.search(r'([0-9A-F]{2}(:[0-9A-F]{2})+)', sys.stdin.read()).group(1); "
		 "b = lambda v: base64.urlsafe_b64encode(v).rstrip(b'=').decode(); "
		 "print(b(bytes.fromhex(h.replace(':', ''))) + '.' + b(bytes([1, 2])))\"",
		 dir);
	run(cmd, want, sizeof(want));
	assert_true(strlen(want) > 28);
	chain = slurp(dir, "chain.pem", &chain_len);
	key = slurp(dir, "leaf.key", &key_len);
	assert_int_equal(tls_keys_load(&k, chain, chain_len, key, key_len, tls_host_rng, NULL, err, sizeof(err)), 0);
	assert_non_null(k.chain.next);	/* the issuer came with it */
	assert_int_equal(acme_ari_cert_id(&k.chain, id, sizeof(id)), 0);
	assert_string_equal(id, want);
	assert_true(strcmp(id + strlen(id) - 4, ".AQI") == 0);	/* serial 0x0102 */
	tls_keys_free(&k);
	free(chain);
	chain = slurp(dir, "noid-chain.pem", &chain_len);
	assert_int_equal(tls_keys_load(&k, chain, chain_len, key, key_len, tls_host_rng, NULL, err, sizeof(err)), 0);
	assert_int_equal(acme_ari_cert_id(&k.chain, id, sizeof(id)), -1);
	tls_keys_free(&k);
	free(chain);
	free(key);
	snprintf(cmd, sizeof(cmd), "rm -r %s", dir);
	run(cmd, want, sizeof(want));
}

/* External Account Binding's JWS against one python3 computed
 * independently (json, base64, hmac; RFC 8555 section 7.3.4's form), pebble's
 * example MAC key; then each bound refused, and too little room. */
#define EAB_KEY_B64 "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"
#define EAB_JWK "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU\"," \
	"\"y\":\"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0\"}"
static void test_eab(void **state)
{
	static const char want[] =
		"{\"protected\":\"eyJhbGciOiJIUzI1NiIsImtpZCI6ImtpZC0xIiwidXJsIjoiaHR0cHM6Ly9jYS50ZXN0OjE0MDAwL2FjY3QifQ\","
		"\"payload\":\"eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0QyeEYxQmc4dnViOXRMZTFnSE16Vjc2ZThUdXM5dV"
		"BIdlJWRVUiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9\","
		"\"signature\":\"3PNoEEhCWyapMEzho7H4J94zhVvDeCwNSKD60hg0D58\"}";
	const char *url = "https://ca.test:14000/acct";
	char out[ACME_EAB_JWS_MAX], kid[ACME_EAB_KID_MAX + 2], longurl[ACME_URL_MAX + 2];
	u8 key[ACME_EAB_KEY_MAX + 1];
	size_t klen, n;

	assert_int_equal(b64url_decode(EAB_KEY_B64, strlen(EAB_KEY_B64), key, sizeof(key), &klen), 0);
	assert_int_equal(klen, 48);
	assert_int_equal(acme_eab_jws("kid-1", key, klen, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), &n), 0);
	assert_string_equal(out, want);
	assert_int_equal(n, strlen(want));
	/* exactly enough room, then one byte less */
	assert_int_equal(acme_eab_jws("kid-1", key, klen, url, EAB_JWK, strlen(EAB_JWK), out, n + 1, &n), 0);
	assert_int_equal(acme_eab_jws("kid-1", key, klen, url, EAB_JWK, strlen(EAB_JWK), out, n, NULL), -1);
	/* another key or kid: another signature */
	key[0] ^= 1;
	assert_int_equal(acme_eab_jws("kid-1", key, klen, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), 0);
	assert_string_not_equal(out, want);
	key[0] ^= 1;
	/* the bounds: the largest of each fits in ACME_EAB_JWS_MAX */
	memset(kid, 'k', ACME_EAB_KID_MAX);
	kid[ACME_EAB_KID_MAX] = '\0';
	memcpy(longurl, "https://", 8);
	memset(longurl + 8, 'u', ACME_URL_MAX - 8);
	longurl[ACME_URL_MAX] = '\0';
	memset(key, 7, ACME_EAB_KEY_MAX);
	assert_int_equal(acme_eab_jws(kid, key, ACME_EAB_KEY_MAX, longurl, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), &n),
			 0);
	assert_true(n < ACME_EAB_JWS_MAX);
	kid[ACME_EAB_KID_MAX] = 'k', kid[ACME_EAB_KID_MAX + 1] = '\0';
	assert_int_equal(acme_eab_jws(kid, key, ACME_EAB_KEY_MAX, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL),
			 -1);
	longurl[ACME_URL_MAX] = 'u', longurl[ACME_URL_MAX + 1] = '\0';
	assert_int_equal(acme_eab_jws("k", key, 1, longurl, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), -1);
	assert_int_equal(acme_eab_jws("k", key, ACME_EAB_KEY_MAX + 1, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out),
				      NULL),
			 -1);
	assert_int_equal(acme_eab_jws("k", key, 0, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), -1);
	assert_int_equal(acme_eab_jws("", key, 1, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), -1);
	assert_int_equal(acme_eab_jws("a\"b", key, 1, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), -1);
	assert_int_equal(acme_eab_jws("a\\b", key, 1, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), -1);
	assert_int_equal(acme_eab_jws("a\nb", key, 1, url, EAB_JWK, strlen(EAB_JWK), out, sizeof(out), NULL), -1);
	assert_int_equal(acme_eab_jws("k", key, 1, url, EAB_JWK, 0, out, sizeof(out), NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jwk_thumbprint), cmocka_unit_test(test_jws),  cmocka_unit_test(test_generated_key),
		cmocka_unit_test(test_sig_raw),	       cmocka_unit_test(test_key_authz), cmocka_unit_test(test_alpn_cert),
		cmocka_unit_test(test_csr),	       cmocka_unit_test(test_ari_cert_id), cmocka_unit_test(test_ari_cert_id_kept),
		cmocka_unit_test(test_eab),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
