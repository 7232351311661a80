/* ACME's keys, JWS, key authorizations and CSR (acme_sign.h). */
#include "net/acme/acme_sign.h"

#include "mbedtls/asn1.h"
#include "mbedtls/ecdsa.h"
#include "mbedtls/ecp.h"
#include "mbedtls/md.h"
#include "mbedtls/platform.h"
#include "mbedtls/sha256.h"
#include "mbedtls/x509_csr.h"
#include "net/acme/acme_json.h"
#include "net/acme/b64url.h"

int acme_key_generate(mbedtls_pk_context *pk, tls_rng_fn rng, void *rng_ctx)
{
	int ret;

	mbedtls_pk_init(pk);
	ret = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (ret == 0)
		ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*pk), rng, rng_ctx);
	if (ret != 0)
		mbedtls_pk_free(pk);
	return ret;
}

/* The public point's X and Y of a P-256 key. */
static int acme_xy(const mbedtls_pk_context *pk, u8 xy[64])
{
	u8 pt[65];
	size_t n;

	if (mbedtls_pk_get_type(pk) != MBEDTLS_PK_ECKEY ||
	    mbedtls_ecp_keypair_get_group_id(mbedtls_pk_ec(*pk)) != MBEDTLS_ECP_DP_SECP256R1 ||
	    mbedtls_ecp_write_public_key(mbedtls_pk_ec(*pk), MBEDTLS_ECP_PF_UNCOMPRESSED, &n, pt, sizeof(pt)) != 0 ||
	    n != 65)
		return -1;
	__builtin_memcpy(xy, pt + 1, 64);
	return 0;
}

int acme_jwk(const mbedtls_pk_context *pk, char *out, size_t cap, size_t *len)
{
	char x[ACME_THUMB_LEN + 1], y[ACME_THUMB_LEN + 1];
	struct acme_jw w;
	u8 xy[64];

	if (acme_xy(pk, xy) != 0 || b64url_encode(xy, 32, x, sizeof(x), NULL) != 0 ||
	    b64url_encode(xy + 32, 32, y, sizeof(y), NULL) != 0)
		return -1;
	acme_jw_init(&w, out, cap);
	acme_jw_raw(&w, "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"", 31);
	acme_jw_raw(&w, x, ACME_THUMB_LEN);
	acme_jw_raw(&w, "\",\"y\":\"", 7);
	acme_jw_raw(&w, y, ACME_THUMB_LEN);
	acme_jw_raw(&w, "\"}", 2);
	if (w.err)
		return -1;
	if (len)
		*len = w.len;
	return 0;
}

int acme_thumbprint(const mbedtls_pk_context *pk, char out[ACME_THUMB_LEN + 1])
{
	char jwk[ACME_JWK_MAX];
	u8 h[32];
	size_t n;

	if (acme_jwk(pk, jwk, sizeof(jwk), &n) != 0 || mbedtls_sha256((const u8 *)jwk, n, h, 0) != 0)
		return -1;
	return b64url_encode(h, sizeof(h), out, ACME_THUMB_LEN + 1, NULL);
}

int acme_sig_raw(const u8 *der, size_t len, u8 raw[64])
{
	unsigned char *p = (unsigned char *)(uintptr_t)der, *end = p + len;
	size_t n;

	if (mbedtls_asn1_get_tag(&p, end, &n, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) != 0 ||
	    p + n != end)
		return -1;
	for (int k = 0; k < 2; k++) {
		if (mbedtls_asn1_get_tag(&p, end, &n, MBEDTLS_ASN1_INTEGER) != 0 || n == 0 || (p[0] & 0x80))
			return -1;
		/* One leading zero keeps a high bit positive; more is not DER. */
		if (p[0] == 0 && n > 1) {
			if (!(p[1] & 0x80))
				return -1;
			p++;
			n--;
		}
		if (n > 32)
			return -1;
		__builtin_memset(raw + 32 * k, 0, 32 - n);
		__builtin_memcpy(raw + 32 * k + 32 - n, p, n);
		p += n;
	}
	return p == end ? 0 : -1;
}

static bool acme_b64url_text(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++) {
		char c = s[n];

		if (n == max || !((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
				  c == '-' || c == '_'))
			return false;
	}
	return n > 0;
}

/* Appends base64url(in[n]) to w (the room checked first). */
static void acme_jw_b64(struct acme_jw *w, const void *in, size_t n)
{
	if (w->err || w->cap - w->len <= B64URL_LEN(n)) {
		w->err = true;
		return;
	}
	b64url_encode(in, n, w->buf + w->len, w->cap - w->len, NULL);
	w->len += B64URL_LEN(n);
}

/* A flattened JWS up to its signature: {"protected":"b64(hdr)",
 * "payload":"b64(payload)","signature":" into w; in0, n0 and in1, n1
 * locate the two base64url parts (the signing input is them with a '.'
 * between). 0 or -1 (no room). */
static __attribute__((noinline)) int acme_jws_open(struct acme_jw *w, const char *hdr, size_t hlen, const void *payload, size_t plen,
			 size_t *in0, size_t *n0, size_t *in1, size_t *n1)
{
	acme_jw_raw(w, "{\"protected\":\"", 14);
	*in0 = w->len;
	acme_jw_b64(w, hdr, hlen);
	*n0 = w->len - *in0;
	acme_jw_raw(w, "\",\"payload\":\"", 13);
	*in1 = w->len;
	acme_jw_b64(w, payload, plen);
	*n1 = w->len - *in1;
	acme_jw_raw(w, "\",\"signature\":\"", 15);
	return w->err ? -1 : 0;
}

/* The signature's base64url and the closing "}, *len. 0 or -1. */
static __attribute__((noinline)) int acme_jws_close(struct acme_jw *w, const u8 *sig, size_t n, size_t *len)
{
	acme_jw_b64(w, sig, n);
	acme_jw_raw(w, "\"}", 2);
	if (w->err)
		return -1;
	if (len)
		*len = w->len;
	return 0;
}

int acme_jws(const struct acme_jws_in *in, tls_rng_fn rng, void *rng_ctx, char *out, size_t cap, size_t *len)
{
	/* The protected header: 40 bytes of names and punctuation, the nonce,
	 * the url and the jwk or the kid. */
	char hdr[48 + ACME_NONCE_MAX + 2 * ACME_URL_MAX + ACME_JWK_MAX];
	u8 hash[32], sig[MBEDTLS_ECDSA_MAX_LEN], raw[64];
	mbedtls_sha256_context sha;
	struct acme_jw h, w;
	size_t p0, p1, n0, n1, slen;
	int ret;

	if (!in->key || !in->url || !in->nonce || !acme_b64url_text(in->nonce, ACME_NONCE_MAX) ||
	    __builtin_strlen(in->url) > ACME_URL_MAX || (in->kid && __builtin_strlen(in->kid) > ACME_URL_MAX))
		return -1;
	acme_jw_init(&h, hdr, sizeof(hdr));
	acme_jw_raw(&h, "{\"alg\":\"ES256\"", 14);
	if (in->kid) {
		acme_jw_key(&h, "kid");
		acme_jw_str(&h, in->kid, __builtin_strlen(in->kid));
	} else {
		char jwk[ACME_JWK_MAX];
		size_t n;

		if (acme_jwk(in->key, jwk, sizeof(jwk), &n) != 0)
			return -1;
		acme_jw_key(&h, "jwk");
		acme_jw_raw(&h, jwk, n);
	}
	acme_jw_key(&h, "nonce");
	acme_jw_str(&h, in->nonce, __builtin_strlen(in->nonce));
	acme_jw_key(&h, "url");
	acme_jw_str(&h, in->url, __builtin_strlen(in->url));
	acme_jw_raw(&h, "}", 1);
	if (h.err)
		return -1;

	acme_jw_init(&w, out, cap);
	if (acme_jws_open(&w, hdr, h.len, in->payload ? in->payload : "", in->payload ? in->payload_len : 0, &p0, &n0,
			  &p1, &n1) != 0)
		return -1;

	/* The signing input, ASCII(protected '.' payload), hashed in place. */
	mbedtls_sha256_init(&sha);
	if ((ret = mbedtls_sha256_starts(&sha, 0)) != 0 ||
	    (ret = mbedtls_sha256_update(&sha, (const u8 *)out + p0, n0)) != 0 ||
	    (ret = mbedtls_sha256_update(&sha, (const u8 *)".", 1)) != 0 ||
	    (ret = mbedtls_sha256_update(&sha, (const u8 *)out + p1, n1)) != 0 ||
	    (ret = mbedtls_sha256_finish(&sha, hash)) != 0) {
		mbedtls_sha256_free(&sha);
		return ret;
	}
	mbedtls_sha256_free(&sha);
	ret = mbedtls_pk_sign((mbedtls_pk_context *)(uintptr_t)in->key, MBEDTLS_MD_SHA256, hash, sizeof(hash), sig,
			      sizeof(sig), &slen, rng, rng_ctx);
	if (ret != 0)
		return ret;
	if (acme_sig_raw(sig, slen, raw) != 0)
		return -1;
	return acme_jws_close(&w, raw, sizeof(raw), len);
}

int acme_eab_jws(const char *kid, const u8 *key, size_t key_len, const char *url, const char *jwk, size_t jwk_len,
		 char *out, size_t cap, size_t *len)
{
	char hdr[40 + ACME_EAB_KID_MAX + ACME_URL_MAX];
	const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	mbedtls_md_context_t ctx;
	size_t p0, p1, n0, n1, klen;
	struct acme_jw h, w;
	u8 mac[32];
	int ret;

	klen = kid ? __builtin_strlen(kid) : 0;
	if (klen == 0 || klen > ACME_EAB_KID_MAX || !key || key_len == 0 || key_len > ACME_EAB_KEY_MAX || !url ||
	    __builtin_strlen(url) > ACME_URL_MAX || !jwk || jwk_len == 0 || jwk_len >= ACME_JWK_MAX || !md)
		return -1;
	for (size_t i = 0; i < klen; i++)
		if (kid[i] < 0x20 || kid[i] > 0x7e || kid[i] == '"' || kid[i] == '\\')
			return -1;
	acme_jw_init(&h, hdr, sizeof(hdr));
	acme_jw_raw(&h, "{\"alg\":\"HS256\"", 14);
	acme_jw_key(&h, "kid");
	acme_jw_str(&h, kid, klen);
	acme_jw_key(&h, "url");
	acme_jw_str(&h, url, __builtin_strlen(url));
	acme_jw_raw(&h, "}", 1);
	if (h.err)
		return -1;

	acme_jw_init(&w, out, cap);
	if (acme_jws_open(&w, hdr, h.len, jwk, jwk_len, &p0, &n0, &p1, &n1) != 0)
		return -1;
	mbedtls_md_init(&ctx);
	if ((ret = mbedtls_md_setup(&ctx, md, 1)) == 0 && (ret = mbedtls_md_hmac_starts(&ctx, key, key_len)) == 0 &&
	    (ret = mbedtls_md_hmac_update(&ctx, (const u8 *)out + p0, n0)) == 0 &&
	    (ret = mbedtls_md_hmac_update(&ctx, (const u8 *)".", 1)) == 0 &&
	    (ret = mbedtls_md_hmac_update(&ctx, (const u8 *)out + p1, n1)) == 0)
		ret = mbedtls_md_hmac_finish(&ctx, mac);
	mbedtls_md_free(&ctx);
	if (ret != 0)
		return -1;
	return acme_jws_close(&w, mac, sizeof(mac), len);
}

int acme_key_authz(const char *token, const char *thumb, char *out, size_t cap)
{
	struct acme_jw w;

	if (!acme_b64url_text(token, ACME_TOKEN_MAX) || __builtin_strlen(thumb) != ACME_THUMB_LEN)
		return -1;
	acme_jw_init(&w, out, cap);
	acme_jw_raw(&w, token, __builtin_strlen(token));
	acme_jw_raw(&w, ".", 1);
	acme_jw_raw(&w, thumb, ACME_THUMB_LEN);
	return w.err ? -1 : 0;
}

int acme_http01_path(const char *token, char *out, size_t cap)
{
	struct acme_jw w;

	if (!acme_b64url_text(token, ACME_TOKEN_MAX))
		return -1;
	acme_jw_init(&w, out, cap);
	acme_jw_raw(&w, "/.well-known/acme-challenge/", 28);
	acme_jw_raw(&w, token, __builtin_strlen(token));
	return w.err ? -1 : 0;
}

void acme_alpn_digest(const char *keyauthz, u8 out[32])
{
	mbedtls_sha256((const u8 *)keyauthz, __builtin_strlen(keyauthz), out, 0);
}

int acme_ari_cert_id(const mbedtls_x509_crt *crt, char *out, size_t cap)
{
	const mbedtls_x509_buf *aki = &crt->authority_key_id.keyIdentifier, *sn = &crt->serial;
	size_t n;

	if (!aki->p || aki->len == 0 || !sn->p || sn->len == 0 || b64url_encode(aki->p, aki->len, out, cap, &n) != 0 ||
	    b64url_encode(sn->p, sn->len, out + n + 1, cap - n - 1, NULL) != 0)
		return -1;
	out[n] = '.';
	return 0;
}

int acme_csr(mbedtls_pk_context *key, const struct tls_names *names, tls_rng_fn rng, void *rng_ctx,
	     unsigned char *buf, size_t size, const unsigned char **der, size_t *len)
{
	mbedtls_x509_san_list san[TLS_NAMES_MAX + 2];
	const mbedtls_x509_san_list *head;
	mbedtls_x509write_csr w;
	char subject[4 + 64 + 1];
	int ret;

	head = names->loopback ? NULL : tls_names_san(names, san);
	if (!head)
		return MBEDTLS_ERR_X509_BAD_INPUT_DATA;
	mbedtls_snprintf(subject, sizeof(subject), "CN=%.64s",
			 __builtin_strlen(names->name[0]) <= 64 ? names->name[0] : "vireo");
	mbedtls_x509write_csr_init(&w);
	mbedtls_x509write_csr_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_csr_set_key(&w, key);
	if ((ret = mbedtls_x509write_csr_set_subject_name(&w, subject)) == 0 &&
	    (ret = mbedtls_x509write_csr_set_subject_alternative_name(&w, head)) == 0)
		ret = mbedtls_x509write_csr_der(&w, buf, size, rng, rng_ctx);
	mbedtls_x509write_csr_free(&w);
	if (ret < 0)
		return ret;
	*len = (size_t)ret;
	*der = buf + size - *len;
	return 0;
}
