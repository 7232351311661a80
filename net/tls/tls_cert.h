/* The certificate the appliance makes for itself when it is given none
 * (issue 33): an ECDSA P-256 key and a self-signed CA:FALSE leaf naming the
 * appliance, and what the console and /metrics say about any served
 * certificate. Pure (mbedTLS, wallclock's calendar and the RNG callback), so
 * the host tests build and parse certificates with it under ASan. */
#ifndef VIREO_TLS_CERT_H
#define VIREO_TLS_CERT_H

#include "lib/types.h"
#include "net/tls/tls_keys.h"

/* tls.names=: at most 8 DNS names of at most 253 characters each (RFC 1035's
 * limit), labels of 1-63 letters, digits and hyphens (no hyphen first or
 * last), lower-cased. The certificate's SAN extension then holds at most
 * 8 x (253 + 2) + 2 x (16 + 2) bytes: TLS_CERT_DER_MAX has room for it. */
#define TLS_NAMES_MAX	8
#define TLS_NAME_MAX	253
#define TLS_CERT_DER_MAX 4096

struct tls_names {
	char name[TLS_NAMES_MAX][TLS_NAME_MAX + 1];
	unsigned n;
	bool loopback;	/* add IP SANs 127.0.0.1 and ::1 */
};

/* Parses a comma-separated list of DNS names into *out (loopback false).
 * 0, or -1 with one line in err saying which name is wrong and why. */
int tls_names_parse(const char *list, struct tls_names *out, char *err, size_t errlen);

/* Without tls.names=: the host name the appliance gives DHCP ("vireo"),
 * "localhost" and the loopback addresses (a port forward's names). */
void tls_names_default(struct tls_names *out);

/* The validity when there is a clock: from an hour before now (a client's
 * clock a little behind) for TLS_CERT_DAYS days. With no clock at all,
 * TLS_CERT_NOCLOCK_FROM .. TLS_CERT_NOCLOCK_TO (2024-01-01T00:00:00Z ..
 * 2049-12-31T23:59:59Z: the plausible clock's lower bound to UTCTime's
 * last year), so that whatever the date is the certificate is in date. */
#define TLS_CERT_DAYS		90
#define TLS_CERT_SKEW_S		3600
#define TLS_CERT_NOCLOCK_FROM	1704067200ULL
#define TLS_CERT_NOCLOCK_TO	2524607999ULL
/* has_clock: now_s is a wall-clock time (any source). */
void tls_cert_validity(bool has_clock, u64 now_s, u64 *not_before, u64 *not_after);

/* Writes the self-signed leaf for key (an EC P-256 key) into buf[size] as DER:
 * X.509 v3, a random positive 128-bit serial from rng, subject and issuer
 * CN=<first name>, SANs the names (and the loopback addresses), basic
 * constraints CA:FALSE (critical), key usage digitalSignature, extended
 * key usage serverAuth, ECDSA with SHA-256; with acme_id (32 bytes, else
 * NULL) also RFC 8737's acmeIdentifier extension (critical, an OCTET
 * STRING of them: TLS-ALPN-01's SHA-256 of the key authorization, for a
 * names list of the one name being validated). *der points into buf at
 * the certificate, *len its length. 0, or an mbedTLS error. */
int tls_cert_build(mbedtls_pk_context *key, const struct tls_names *names, u64 not_before, u64 not_after,
		   const unsigned char *acme_id, tls_rng_fn rng, void *rng_ctx, unsigned char *buf, size_t size,
		   const unsigned char **der, size_t *len);

/* The SANs of names (DNS names, then the loopback addresses when asked)
 * as mbedTLS's writers take them, in san[]: the list's head, or NULL when
 * names is empty or too long. The certificate and ACME's CSR share it. */
const mbedtls_x509_san_list *tls_names_san(const struct tls_names *names, mbedtls_x509_san_list san[TLS_NAMES_MAX + 2]);

/* A new P-256 key from rng and its certificate (tls_cert_build()), loaded
 * into k as tls_keys_load() would (k->loaded). 0, or -1 with one line in
 * err. The key never leaves k. */
int tls_cert_generate(struct tls_keys *k, const struct tls_names *names, u64 not_before, u64 not_after,
		      tls_rng_fn rng, void *rng_ctx, char *err, size_t errlen);

/* The same with acme_id (32 bytes, or NULL) in RFC 8737's acmeIdentifier
 * extension (tls_cert_build()): TLS-ALPN-01's challenge certificate for
 * the one name being validated. */
int tls_cert_generate_id(struct tls_keys *k, const struct tls_names *names, u64 not_before, u64 not_after,
			 const unsigned char *acme_id, tls_rng_fn rng, void *rng_ctx, char *err, size_t errlen);

/* What the console, `cert` and /metrics say about a leaf: its DNS and IP
 * SANs joined by commas (bytes outside printable ASCII, quotes and
 * backslashes as '?', so the text is a safe label value; cut with "..."
 * when long), its validity in Unix seconds (0 when out of range) and the
 * SHA-256 of its DER. */
#define TLS_CERT_NAMES_TEXT 200
struct tls_cert_info {
	char names[TLS_CERT_NAMES_TEXT];
	u64 not_before, not_after;
	u8 sha256[32];
};
void tls_cert_describe(const mbedtls_x509_crt *leaf, struct tls_cert_info *out);

#endif
