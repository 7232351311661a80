/* The appliance's own certificate (tls_cert.h). */
#include "net/tls/tls_cert.h"

#include <string.h>
#include "kernel/time/wallclock.h"
#include "mbedtls/asn1.h"
#include "mbedtls/ecp.h"
#include "mbedtls/oid.h"
#include "mbedtls/platform.h"
#include "mbedtls/platform_util.h"
#include "mbedtls/sha256.h"
#include "mbedtls/x509_crt.h"

static int tls_names_fail(char *err, size_t errlen, const char *name, size_t len, const char *why)
{
	/* The reason first: the boot warning has 63 characters for both. */
	mbedtls_snprintf(err, errlen, "%s: \"%.*s\"", why, (int)(len > 64 ? 64 : len), name);
	return -1;
}

/* One name of len bytes (no comma in it) into out, lower-cased. */
static int tls_name_check(const char *s, size_t len, char *out, char *err, size_t errlen)
{
	size_t label = 0;
	bool digits_only = true;

	if (len == 0)
		return tls_names_fail(err, errlen, s, len, "empty name");
	if (len > TLS_NAME_MAX)
		return tls_names_fail(err, errlen, s, len, "over 253 characters");
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '.') {
			if (label == 0 || s[i - 1] == '-')
				return tls_names_fail(err, errlen, s, len,
						      "a label empty or ending in '-'");
			label = 0;
			out[i] = c;
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return tls_names_fail(err, errlen, s, len,
					      "not a DNS name (letters, digits, '-', '.')");
		if (c == '-' && label == 0)
			return tls_names_fail(err, errlen, s, len, "a label starting with '-'");
		if (c < '0' || c > '9')
			digits_only = false;
		if (++label > 63)
			return tls_names_fail(err, errlen, s, len, "a label over 63 characters");
		out[i] = c;
	}
	if (label == 0 || s[len - 1] == '-')
		return tls_names_fail(err, errlen, s, len, "a label empty or ending in '-'");
	if (digits_only)
		return tls_names_fail(err, errlen, s, len, "an address, not a DNS name");
	out[len] = '\0';
	return 0;
}

int tls_names_parse(const char *list, struct tls_names *out, char *err, size_t errlen)
{
	const char *p = list;

	memset(out, 0, sizeof(*out));
	for (;;) {
		size_t len = 0;

		while (p[len] && p[len] != ',')
			len++;

		if (out->n == TLS_NAMES_MAX) {
			mbedtls_snprintf(err, errlen, "more than %u names", TLS_NAMES_MAX);
			memset(out, 0, sizeof(*out));
			return -1;
		}
		if (tls_name_check(p, len, out->name[out->n], err, errlen) != 0) {
			memset(out, 0, sizeof(*out));
			return -1;
		}
		out->n++;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

void tls_names_default(struct tls_names *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->name[0], "vireo", sizeof("vireo"));
	memcpy(out->name[1], "localhost", sizeof("localhost"));
	out->n = 2;
	out->loopback = true;
}

void tls_cert_validity(bool has_clock, u64 now_s, u64 *not_before, u64 *not_after)
{
	if (!has_clock || now_s < WALLCLOCK_MIN_S || now_s > WALLCLOCK_MAX_S) {
		*not_before = TLS_CERT_NOCLOCK_FROM;
		*not_after = TLS_CERT_NOCLOCK_TO;
		return;
	}
	*not_before = now_s - TLS_CERT_SKEW_S;
	*not_after = now_s + (u64)TLS_CERT_DAYS * 86400;
}

/* "YYYYMMDDhhmmss", as mbedtls_x509write_crt_set_validity() wants it. */
static void tls_cert_time(u64 unix_s, char out[15])
{
	struct civil_time c;

	wallclock_civil(unix_s, &c);
	mbedtls_snprintf(out, 15, "%04u%02u%02u%02u%02u%02u", (unsigned)c.year, (unsigned)c.month,
			 (unsigned)c.day, (unsigned)c.hour, (unsigned)c.min, (unsigned)c.sec);
}

static const unsigned char tls_lo4[4] = { 127, 0, 0, 1 };
static const unsigned char tls_lo6[16] = { [15] = 1 };

const mbedtls_x509_san_list *tls_names_san(const struct tls_names *names, mbedtls_x509_san_list san[TLS_NAMES_MAX + 2])
{
	unsigned n = 0;

	if (names->n == 0 || names->n > TLS_NAMES_MAX)
		return NULL;
	memset(san, 0, sizeof(san[0]) * (TLS_NAMES_MAX + 2));
	for (unsigned i = 0; i < names->n; i++, n++) {
		san[n].node.type = MBEDTLS_X509_SAN_DNS_NAME;
		san[n].node.san.unstructured_name.p = (unsigned char *)(uintptr_t)names->name[i];
		san[n].node.san.unstructured_name.len = strlen(names->name[i]);
	}
	if (names->loopback) {
		san[n].node.type = MBEDTLS_X509_SAN_IP_ADDRESS;
		san[n].node.san.unstructured_name.p = (unsigned char *)(uintptr_t)tls_lo4;
		san[n++].node.san.unstructured_name.len = sizeof(tls_lo4);
		san[n].node.type = MBEDTLS_X509_SAN_IP_ADDRESS;
		san[n].node.san.unstructured_name.p = (unsigned char *)(uintptr_t)tls_lo6;
		san[n++].node.san.unstructured_name.len = sizeof(tls_lo6);
	}
	/* mbedTLS writes the list backwards (the DER is built from its end):
	 * linked last to first, the certificate has them in the given order. */
	for (unsigned i = 1; i < n; i++)
		san[i].next = &san[i - 1];
	return &san[n - 1];
}

int tls_cert_build(mbedtls_pk_context *key, const struct tls_names *names, u64 not_before, u64 not_after,
		   const unsigned char *acme_id, tls_rng_fn rng, void *rng_ctx, unsigned char *buf, size_t size,
		   const unsigned char **der, size_t *len)
{
	static const unsigned char ca_false[] = { MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE, 0 };
	/* id-pe-acmeIdentifier, 1.3.6.1.5.5.7.1.31 (RFC 8737 section 6.1). */
	static const char oid_acme_id[] = MBEDTLS_OID_PKIX "\x01\x1f";
	mbedtls_x509_san_list san[TLS_NAMES_MAX + 2];
	const mbedtls_x509_san_list *san_head;
	unsigned char acme_ext[2 + 32];
	mbedtls_asn1_sequence eku;
	mbedtls_x509write_cert w;
	unsigned char serial[16];
	char subject[4 + 64 + 1], from[15], to[15];
	int ret;

	san_head = tls_names_san(names, san);
	if (!san_head || not_before >= not_after)
		return MBEDTLS_ERR_X509_BAD_INPUT_DATA;

	/* Positive and minimal in DER: the top bit clear, the first byte not 0. */
	ret = rng(rng_ctx, serial, sizeof(serial));
	if (ret != 0)
		return ret;
	serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x01);

	/* The CN is the first name when it fits a CN's 64 characters (RFC 5280's
	 * ub-common-name), else "vireo": clients match the SANs anyway. */
	mbedtls_snprintf(subject, sizeof(subject), "CN=%.64s",
			 strlen(names->name[0]) <= 64 ? names->name[0] : "vireo");
	tls_cert_time(not_before, from);
	tls_cert_time(not_after, to);

	memset(&eku, 0, sizeof(eku));
	eku.buf.tag = MBEDTLS_ASN1_OID;
	eku.buf.p = (unsigned char *)(uintptr_t)MBEDTLS_OID_SERVER_AUTH;
	eku.buf.len = MBEDTLS_OID_SIZE(MBEDTLS_OID_SERVER_AUTH);

	mbedtls_x509write_crt_init(&w);
	mbedtls_x509write_crt_set_version(&w, MBEDTLS_X509_CRT_VERSION_3);
	mbedtls_x509write_crt_set_md_alg(&w, MBEDTLS_MD_SHA256);
	mbedtls_x509write_crt_set_subject_key(&w, key);
	mbedtls_x509write_crt_set_issuer_key(&w, key);
	if ((ret = mbedtls_x509write_crt_set_serial_raw(&w, serial, sizeof(serial))) != 0 ||
	    (ret = mbedtls_x509write_crt_set_validity(&w, from, to)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_name(&w, subject)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_issuer_name(&w, subject)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_extension(&w, MBEDTLS_OID_BASIC_CONSTRAINTS,
						       MBEDTLS_OID_SIZE(MBEDTLS_OID_BASIC_CONSTRAINTS), 1,
						       ca_false, sizeof(ca_false))) != 0 ||
	    (ret = mbedtls_x509write_crt_set_key_usage(&w, MBEDTLS_X509_KU_DIGITAL_SIGNATURE)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_ext_key_usage(&w, &eku)) != 0 ||
	    (ret = mbedtls_x509write_crt_set_subject_alternative_name(&w, san_head)) != 0)
		goto out;
	if (acme_id) {
		/* The extension's value: the DER of OCTET STRING (SIZE (32)). */
		acme_ext[0] = MBEDTLS_ASN1_OCTET_STRING;
		acme_ext[1] = 32;
		memcpy(acme_ext + 2, acme_id, 32);
		ret = mbedtls_x509write_crt_set_extension(&w, oid_acme_id, MBEDTLS_OID_SIZE(oid_acme_id), 1,
							  acme_ext, sizeof(acme_ext));
		if (ret != 0)
			goto out;
	}
	/* Written backwards from the end of buf: a positive length. */
	ret = mbedtls_x509write_crt_der(&w, buf, size, rng, rng_ctx);
	if (ret < 0)
		goto out;
	*len = (size_t)ret;
	*der = buf + size - *len;
	ret = 0;
out:
	mbedtls_x509write_crt_free(&w);
	return ret;
}

/* RFC 8737's id-pe-acmeIdentifier, 1.3.6.1.5.5.7.1.31. */
static const unsigned char tls_acme_oid[] = { 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x01, 0x1f };

static int tls_cert_acme_ext(void *ctx, const mbedtls_x509_crt *crt, const mbedtls_x509_buf *oid, int critical,
			     const unsigned char *p, const unsigned char *end)
{
	(void)ctx;
	(void)crt;
	(void)critical;
	(void)p;
	(void)end;
	return oid->len == sizeof(tls_acme_oid) && !memcmp(oid->p, tls_acme_oid, sizeof(tls_acme_oid)) ? 0 : -1;
}

int tls_cert_generate_id(struct tls_keys *k, const struct tls_names *names, u64 not_before, u64 not_after,
			 const unsigned char *acme_id, tls_rng_fn rng, void *rng_ctx, char *err, size_t errlen)
{
	const unsigned char *der;
	unsigned char *buf;
	size_t len;
	int ret;

	memset(k, 0, sizeof(*k));
	mbedtls_x509_crt_init(&k->chain);
	mbedtls_pk_init(&k->key);
	buf = mbedtls_calloc(1, TLS_CERT_DER_MAX);
	if (!buf) {
		mbedtls_snprintf(err, errlen, "out of TLS memory while making the certificate");
		return -1;
	}
	ret = mbedtls_pk_setup(&k->key, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (ret == 0)
		ret = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(k->key), rng, rng_ctx);
	if (ret != 0) {
		mbedtls_snprintf(err, errlen, "making the key failed (mbedTLS error -0x%04x)", (unsigned int)-ret);
		goto out;
	}
	ret = tls_cert_build(&k->key, names, not_before, not_after, acme_id, rng, rng_ctx, buf, TLS_CERT_DER_MAX,
			     &der, &len);
	/* mbedTLS refuses a critical extension it does not know unless told
	 * (the acmeIdentifier is for the CA's validator, not for us). */
	if (ret == 0)
		ret = mbedtls_x509_crt_parse_der_with_ext_cb(&k->chain, der, len, 1, tls_cert_acme_ext, NULL);
	if (ret != 0) {
		mbedtls_snprintf(err, errlen, "making the certificate failed (mbedTLS error -0x%04x)",
				 (unsigned int)-ret);
		goto out;
	}
	k->loaded = 1;
out:
	mbedtls_free(buf);	/* the certificate only: no key material in it */
	if (ret != 0) {
		tls_keys_free(k);
		return -1;
	}
	return 0;
}

int tls_cert_generate(struct tls_keys *k, const struct tls_names *names, u64 not_before, u64 not_after,
		      tls_rng_fn rng, void *rng_ctx, char *err, size_t errlen)
{
	return tls_cert_generate_id(k, names, not_before, not_after, NULL, rng, rng_ctx, err, errlen);
}

static u64 tls_cert_unix(const mbedtls_x509_time *t)
{
	if (t->year < 1970 || t->mon < 1 || t->day < 1 || t->hour < 0 || t->min < 0 || t->sec < 0)
		return 0;
	return wallclock_from_civil((u32)t->year, (u32)t->mon, (u32)t->day, (u32)t->hour, (u32)t->min,
				    (u32)t->sec);
}

/* Appends s[len] to out (at *at, below TLS_CERT_NAMES_TEXT - 4, the room
 * for "..." and its NUL), safe for a label value; false when cut. */
static bool tls_cert_put(char *out, size_t *at, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (*at >= TLS_CERT_NAMES_TEXT - 4) {
			memcpy(out + *at, "...", 4);
			*at += 3;
			return false;
		}
		out[(*at)++] = (c < 0x21 || c > 0x7e || c == '"' || c == '\\') ? '?' : c;
	}
	out[*at] = '\0';
	return true;
}

static bool tls_cert_put_ip(char *out, size_t *at, const unsigned char *a, size_t len)
{
	char t[40];
	size_t n = 0;

	if (len == 4) {
		n = (size_t)mbedtls_snprintf(t, sizeof(t), "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
	} else {
		/* IPv6 in full, group by group ("0:0:0:0:0:0:0:1", as openssl
		 * prints SANs). */
		for (size_t i = 0; i < 16; i += 2)
			n += (size_t)mbedtls_snprintf(t + n, sizeof(t) - n, i ? ":%x" : "%x",
						      (unsigned)(a[i] << 8 | a[i + 1]));
	}
	return tls_cert_put(out, at, t, n);
}

void tls_cert_describe(const mbedtls_x509_crt *leaf, struct tls_cert_info *out)
{
	size_t at = 0;

	memset(out, 0, sizeof(*out));
	for (const mbedtls_x509_sequence *s = &leaf->subject_alt_names; s && s->buf.p; s = s->next) {
		bool ok = true;

		if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_DNS_NAME)) {
			if (at)
				ok = tls_cert_put(out->names, &at, ",", 1);
			ok = ok && tls_cert_put(out->names, &at, (const char *)s->buf.p, s->buf.len);
		} else if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | MBEDTLS_X509_SAN_IP_ADDRESS) &&
			   (s->buf.len == 4 || s->buf.len == 16)) {
			if (at)
				ok = tls_cert_put(out->names, &at, ",", 1);
			ok = ok && tls_cert_put_ip(out->names, &at, s->buf.p, s->buf.len);
		}
		if (!ok)
			break;
	}
	out->not_before = tls_cert_unix(&leaf->valid_from);
	out->not_after = tls_cert_unix(&leaf->valid_to);
	if (leaf->raw.p)
		mbedtls_sha256(leaf->raw.p, leaf->raw.len, out->sha256, 0);
}
