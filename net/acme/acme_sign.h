/* What ACME's keys sign and name (issue 33): the account key (ECDSA P-256)
 * and its JWK (RFC 7517/7518) and thumbprint (RFC 7638), requests as JWS in
 * the flattened JSON serialization (RFC 7515, RFC 8555 section 6.2: alg
 * ES256, nonce, url, and jwk or kid; the signature as raw R || S), a
 * challenge's key authorization (RFC 8555 section 8.1) with HTTP-01's path
 * and TLS-ALPN-01's digest (RFC 8737; the certificate carrying it is
 * tls_cert_build()'s), and the finalize CSR (PKCS#10, DER) for the names.
 * Pure over mbedTLS and the RNG callback, like net/tls/tls_cert.c. Private
 * keys stay in their mbedtls_pk_context: nothing here writes one out. */
#ifndef VIREO_ACME_SIGN_H
#define VIREO_ACME_SIGN_H

#include "lib/types.h"
#include "net/tls/tls_cert.h"
#include "net/tls/tls_keys.h"

/* A new P-256 key from rng in *pk (initialised here; freed on failure).
 * The account key and each certificate's key. 0 or an mbedTLS error. */
int acme_key_generate(mbedtls_pk_context *pk, tls_rng_fn rng, void *rng_ctx);

/* The public JWK in RFC 7638's canonical form, members in order and no
 * white space, {"crv":"P-256","kty":"EC","x":"..","y":".."}: 126 bytes.
 * 0, or -1 (not a P-256 key, no room). */
#define ACME_JWK_MAX 128
int acme_jwk(const mbedtls_pk_context *pk, char *out, size_t cap, size_t *len);

/* base64url(SHA-256(JWK)): 43 characters and a NUL. 0 or -1. */
#define ACME_THUMB_LEN 43
int acme_thumbprint(const mbedtls_pk_context *pk, char out[ACME_THUMB_LEN + 1]);

/* A request: key signs it; kid (the account URL) or, when NULL, the jwk
 * names the key (newAccount); a NULL payload is POST-as-GET (an empty
 * payload). nonce: base64url, at most ACME_NONCE_MAX; url and kid at most
 * ACME_URL_MAX. */
#define ACME_NONCE_MAX	128
#define ACME_URL_MAX	512
struct acme_jws_in {
	const mbedtls_pk_context *key;
	const char *kid, *nonce, *url;
	const char *payload;
	size_t payload_len;
};
/* {"protected":"..","payload":"..","signature":".."} into out[cap] with a
 * NUL (*len without it). 0, -1 (bad input, no room), or an mbedTLS error. */
int acme_jws(const struct acme_jws_in *in, tls_rng_fn rng, void *rng_ctx, char *out, size_t cap, size_t *len);

/* External Account Binding (RFC 8555 section 7.3.4): the newAccount
 * payload's "externalAccountBinding", a JWS in the flattened JSON
 * serialization whose protected header is {"alg":"HS256","kid":kid,
 * "url":url} (url: the newAccount URL), whose payload is the account's
 * public JWK (jwk[jwk_len], acme_jwk()'s) and whose signature is
 * HMAC-SHA256 under the CA's MAC key (key[key_len], decoded from
 * base64url) over ASCII(protected '.' payload). kid: 1..ACME_EAB_KID_MAX
 * bytes of printable ASCII but quote and backslash; key: 1..ACME_EAB_KEY_MAX
 * bytes. Into out[cap] with a NUL (*len without it): 0 or -1 (bad input,
 * no room). At most ACME_EAB_JWS_MAX bytes with the NUL: the header is at
 * most 14 + 9 + 128 + 8 + 512 + 1 = 672 bytes, 896 in base64url; the JWK
 * 170; the MAC 43; 44 of punctuation; the NUL: 1,154. */
#define ACME_EAB_KID_MAX	128
#define ACME_EAB_KEY_MAX	128
#define ACME_EAB_JWS_MAX	1170
int acme_eab_jws(const char *kid, const u8 *key, size_t key_len, const char *url, const char *jwk, size_t jwk_len,
		 char *out, size_t cap, size_t *len);

/* An ECDSA signature from DER (SEQUENCE { INTEGER r, INTEGER s }, as
 * mbedTLS writes it) to JWS's 64-byte R || S (RFC 7518 section 3.4). 0 or
 * -1 (not that DER, or a number over 32 bytes). */
int acme_sig_raw(const u8 *der, size_t len, u8 raw[64]);

/* token || '.' || thumbprint into out[cap]. The token is the CA's: only
 * base64url characters, 1 to ACME_TOKEN_MAX of them (it becomes a path and
 * a file name). 0 or -1. This text is also HTTP-01's response body. */
#define ACME_TOKEN_MAX	128
#define ACME_KEYAUTHZ_MAX (ACME_TOKEN_MAX + 1 + ACME_THUMB_LEN + 1)
int acme_key_authz(const char *token, const char *thumb, char *out, size_t cap);
/* HTTP-01's path, "/.well-known/acme-challenge/" token. 0 or -1. */
int acme_http01_path(const char *token, char *out, size_t cap);
/* TLS-ALPN-01's acmeIdentifier value: SHA-256 of the key authorization. */
void acme_alpn_digest(const char *keyauthz, u8 out[32]);

/* RFC 9773's certificate identifier (section 4.1: the renewalInfo path
 * and a new order's "replaces"): base64url(the authority key identifier's
 * keyIdentifier) "." base64url(the serial number's DER content, a leading
 * zero included). 0, or -1 (no AKI, or no room). */
int acme_ari_cert_id(const mbedtls_x509_crt *crt, char *out, size_t cap);

/* The finalize CSR for names (loopback false: a CA refuses addresses)
 * signed by key (ECDSA with SHA-256), subject CN=<first name> when it fits
 * 64 characters, the names as SANs; DER, written at the end of buf (*der,
 * *len). 0 or an mbedTLS error. */
#define ACME_CSR_DER_MAX 3072
int acme_csr(mbedtls_pk_context *key, const struct tls_names *names, tls_rng_fn rng, void *rng_ctx,
	     unsigned char *buf, size_t size, const unsigned char **der, size_t *len);

#endif
