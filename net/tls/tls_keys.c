/* Certificate chain and key loading for the HTTPS server (tls_keys.h). */
#include "net/tls/tls_keys.h"

#include <string.h>
#include "mbedtls/platform.h"
#include "mbedtls/ecp.h"

static void tls_keys_say(char *err, size_t errlen, const char *what, int ret)
{
	if (ret)
		mbedtls_snprintf(err, errlen, "%s (mbedTLS error -0x%04x)", what, (unsigned int)-ret);
	else
		mbedtls_snprintf(err, errlen, "%s", what);
}

static int tls_keys_contains(const unsigned char *in, size_t len, const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(in + i, s, n) == 0)
			return 1;
	return 0;
}

/* PEM parsing wants the NUL counted in the length; DER must not have one.
 * A copy with a NUL after the data serves both (the length passed excludes
 * the NUL unless the data is PEM). Trailing NULs (a C string's) are dropped
 * from PEM only: DER ends wherever its last value ends, and that may be a
 * zero byte (an EC key's public point does, one time in 256). */
static unsigned char *tls_keys_with_nul(const unsigned char *in, size_t len, size_t *plen)
{
	unsigned char *p;
	int pem = tls_keys_contains(in, len, "-----BEGIN ");

	while (pem && len > 0 && in[len - 1] == '\0')
		len--;
	p = mbedtls_calloc(1, len + 1);
	if (!p)
		return NULL;
	memcpy(p, in, len);
	p[len] = '\0';
	/* PEM: the NUL is part of the input. */
	*plen = pem ? len + 1 : len;
	return p;
}

int tls_keys_load(struct tls_keys *k, const unsigned char *cert, size_t cert_len,
		  const unsigned char *key, size_t key_len, tls_rng_fn rng, void *rng_ctx,
		  char *err, size_t errlen)
{
	unsigned char *c = NULL, *kb = NULL;
	size_t clen = 0, klen = 0;
	int ret;

	memset(k, 0, sizeof(*k));
	mbedtls_x509_crt_init(&k->chain);
	mbedtls_pk_init(&k->key);
	if (!cert || cert_len == 0) {
		tls_keys_say(err, errlen, "certificate: empty", 0);
		return -1;
	}
	if (!key || key_len == 0) {
		tls_keys_say(err, errlen, "key: empty", 0);
		return -1;
	}
	if (cert_len > TLS_KEYS_MAX_INPUT) {
		tls_keys_say(err, errlen, "certificate: larger than 64 KiB", 0);
		return -1;
	}
	if (key_len > TLS_KEYS_MAX_INPUT) {
		tls_keys_say(err, errlen, "key: larger than 64 KiB", 0);
		return -1;
	}
	c = tls_keys_with_nul(cert, cert_len, &clen);
	kb = tls_keys_with_nul(key, key_len, &klen);
	if (!c || !kb) {
		tls_keys_say(err, errlen, "out of TLS memory while loading the certificate", 0);
		ret = -1;
		goto out;
	}
	ret = mbedtls_x509_crt_parse(&k->chain, c, clen);
	if (ret != 0) {
		/* > 0: some certificates of a PEM chain did not parse. */
		tls_keys_say(err, errlen, ret > 0 ? "certificate: part of the chain does not parse"
					 : "certificate: does not parse as X.509 (not PEM or DER, or a key other than RSA or EC P-256)", ret > 0 ? 0 : ret);
		ret = -1;
		goto out;
	}
	/* PKCS#8 "ENCRYPTED PRIVATE KEY" or OpenSSL's "Proc-Type: 4,ENCRYPTED":
	 * without PKCS#5 compiled in mbedTLS would only say "invalid format". */
	if (tls_keys_contains(kb, klen, "ENCRYPTED")) {
		tls_keys_say(err, errlen, "key: encrypted keys are not supported (give an unencrypted PKCS#8 or SEC1/PKCS#1 key)", 0);
		ret = -1;
		goto out;
	}
	ret = mbedtls_pk_parse_key(&k->key, kb, klen, NULL, 0, rng, rng_ctx);
	if (ret != 0) {
		tls_keys_say(err, errlen, "key: does not parse (not PEM or DER, or a key other than RSA or EC P-256)", ret);
		ret = -1;
		goto out;
	}
	switch (mbedtls_pk_get_type(&k->key)) {
	case MBEDTLS_PK_RSA:
		if (mbedtls_pk_get_bitlen(&k->key) < 2048) {
			tls_keys_say(err, errlen, "key: RSA keys under 2048 bits are refused", 0);
			ret = -1;
			goto out;
		}
		break;
	case MBEDTLS_PK_ECKEY:
	case MBEDTLS_PK_ECDSA:
		if (mbedtls_ecp_keypair_get_group_id(mbedtls_pk_ec(k->key)) != MBEDTLS_ECP_DP_SECP256R1) {
			tls_keys_say(err, errlen, "key: EC keys must be on P-256", 0);
			ret = -1;
			goto out;
		}
		break;
	default:
		tls_keys_say(err, errlen, "key: neither RSA nor EC", 0);
		ret = -1;
		goto out;
	}
	ret = mbedtls_pk_check_pair(&k->chain.pk, &k->key, rng, rng_ctx);
	if (ret != 0) {
		tls_keys_say(err, errlen, "key does not match the certificate", ret);
		ret = -1;
		goto out;
	}
	k->loaded = 1;
	ret = 0;
out:
	if (c)
		mbedtls_free(c);
	if (kb) {
		mbedtls_platform_zeroize(kb, klen);	/* klen <= the copy's size */
		mbedtls_free(kb);
	}
	if (ret != 0)
		tls_keys_free(k);
	return ret;
}

void tls_keys_free(struct tls_keys *k)
{
	mbedtls_x509_crt_free(&k->chain);
	mbedtls_pk_free(&k->key);
	mbedtls_x509_crt_init(&k->chain);
	mbedtls_pk_init(&k->key);
	k->loaded = 0;
}

int tls_keys_ca_issued(const struct tls_keys *k)
{
	const mbedtls_x509_crt *leaf = &k->chain;

	if (!k->loaded || !leaf->raw.len)
		return 0;
	return leaf->issuer_raw.len != leaf->subject_raw.len ||
	       memcmp(leaf->issuer_raw.p, leaf->subject_raw.p, leaf->issuer_raw.len) != 0;
}

const char *tls_keys_describe(const struct tls_keys *k, char *buf, size_t len)
{
	if (!k->loaded)
		mbedtls_snprintf(buf, len, "none");
	else if (mbedtls_pk_get_type(&k->key) == MBEDTLS_PK_RSA)
		mbedtls_snprintf(buf, len, "RSA %u", (unsigned int)mbedtls_pk_get_bitlen(&k->key));
	else
		mbedtls_snprintf(buf, len, "EC P-256");
	return buf;
}

int tls_keys_blame(const char *err)
{
	if (strncmp(err, "certificate:", 12) == 0)
		return TLS_KEYS_BLAME_CERT;
	if (strncmp(err, "key:", 4) == 0)
		return TLS_KEYS_BLAME_KEY;
	return TLS_KEYS_BLAME_BOTH;
}

/* ---- the CA bundle of TLS clients (tls_keys.h) ---- */

int tls_ca_load(mbedtls_x509_crt *ca, const unsigned char *pem, size_t len, char *err, size_t errlen)
{
	unsigned char *c;
	size_t clen = 0;
	int ret, n = 0;

	mbedtls_x509_crt_init(ca);
	if (!pem || len == 0 || len > TLS_CA_MAX_INPUT) {
		tls_keys_say(err, errlen, len ? "CA bundle: larger than TLS_CA_MAX_INPUT" : "CA bundle: empty", 0);
		return -1;
	}
	c = tls_keys_with_nul(pem, len, &clen);
	if (!c) {
		tls_keys_say(err, errlen, "CA bundle: out of memory", 0);
		return -1;
	}
	/* PEM: the certificates that parse are kept and the rest counted (a
	 * bundle may carry one mbedTLS cannot read, e.g. signed with SHA-1);
	 * DER: the one certificate, or nothing. */
	ret = mbedtls_x509_crt_parse(ca, c, clen);
	mbedtls_free(c);
	for (const mbedtls_x509_crt *p = ca; p && p->raw.len; p = p->next)
		n++;
	if (ret < 0 || n == 0) {
		mbedtls_x509_crt_free(ca);
		mbedtls_x509_crt_init(ca);
		tls_keys_say(err, errlen, "CA bundle: no certificate could be read", ret < 0 ? ret : 0);
		return -1;
	}
	if (n > TLS_CA_MAX_CERTS) {
		mbedtls_x509_crt_free(ca);
		mbedtls_x509_crt_init(ca);
		mbedtls_snprintf(err, errlen, "CA bundle: %d certificates, more than %d", n, TLS_CA_MAX_CERTS);
		return -1;
	}
	if (ret > 0)
		mbedtls_snprintf(err, errlen, "%d CA certificates (%d unreadable, skipped)", n, ret);
	else
		mbedtls_snprintf(err, errlen, "%d CA certificate%s", n, n == 1 ? "" : "s");
	return n;
}

enum tls_verify_why tls_verify_why(unsigned int flags, int clock_known)
{
	if (!clock_known)
		return TLS_VERIFY_NOCLOCK;
	if (flags & (MBEDTLS_X509_BADCERT_NOT_TRUSTED | MBEDTLS_X509_BADCERT_MISSING | MBEDTLS_X509_BADCERT_SKIP_VERIFY))
		return TLS_VERIFY_UNTRUSTED;
	if (flags & (MBEDTLS_X509_BADCERT_EXPIRED | MBEDTLS_X509_BADCERT_FUTURE))
		return TLS_VERIFY_EXPIRED;
	if (flags & MBEDTLS_X509_BADCERT_CN_MISMATCH)
		return TLS_VERIFY_NAME;
	return TLS_VERIFY_OTHER;
}
