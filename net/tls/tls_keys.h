/* The HTTPS server's certificate chain and private key: parsed from PEM (or
 * DER) in memory and checked against each other. Pure: mbedTLS and the RNG
 * callback only, so the host tests drive it with bad input under ASan. */
#ifndef VIREO_TLS_KEYS_H
#define VIREO_TLS_KEYS_H

#include <stddef.h>
#include "mbedtls/pk.h"
#include "mbedtls/x509_crt.h"

struct tls_keys {
	mbedtls_x509_crt chain;	/* leaf first */
	mbedtls_pk_context key;
	int loaded;
};

/* mbedTLS-style RNG: fills out with len random bytes, 0 on success. The
 * kernel's reads the CSPRNG (net/tls/tls_port.c). */
typedef int (*tls_rng_fn)(void *ctx, unsigned char *out, size_t len);

/* Parses cert (one or more certificates, leaf first) and key (PKCS#8 or
 * SEC1/PKCS#1, unencrypted) and checks that key is the leaf's private key
 * and of a kind the server can use (RSA of 2048 bits or more, EC P-256).
 * PEM input may or may not end in a NUL; len excludes any NUL. On failure
 * returns a negative number, leaves k empty (tls_keys_free() is still fine)
 * and writes one line saying what is wrong into err (errlen > 0). */
int tls_keys_load(struct tls_keys *k, const unsigned char *cert, size_t cert_len,
		  const unsigned char *key, size_t key_len, tls_rng_fn rng, void *rng_ctx,
		  char *err, size_t errlen);
void tls_keys_free(struct tls_keys *k);

/* Which input an error line from tls_keys_load() is about, so the log can
 * name the file: the certificate ("certificate: ..."), the key ("key: ...")
 * or both (the key does not match the certificate, or out of memory). */
#define TLS_KEYS_BLAME_CERT	1
#define TLS_KEYS_BLAME_KEY	2
#define TLS_KEYS_BLAME_BOTH	3
int tls_keys_blame(const char *err);

/* Whether the leaf was issued by a CA: its issuer is not its own subject
 * (false for a self-signed leaf and when nothing is loaded). Whether a
 * browser trusts that CA is not known here. */
int tls_keys_ca_issued(const struct tls_keys *k);

/* "EC P-256" or "RSA 2048", for the boot log. */
const char *tls_keys_describe(const struct tls_keys *k, char *buf, size_t len);

/* Largest input accepted per file: a chain of a few certificates fits with
 * room; anything larger is refused before parsing. */
#define TLS_KEYS_MAX_INPUT	(64 * 1024)

/* ---- TLS clients' trust anchors ----
 * A CA bundle (PEM, one or more certificates, or one DER certificate) into
 * ca: the number of certificates kept (> 0), certificates mbedTLS cannot
 * read skipped and counted in the line err gets ("12 CA certificates (1
 * unreadable, skipped)"); or a negative number, ca empty, and err says
 * why. Bounds: TLS_CA_MAX_INPUT bytes of input, TLS_CA_MAX_CERTS
 * certificates (Mozilla's bundle is ~150 and ~220 KB of PEM; parsed, each
 * costs its DER plus ~600 bytes of structure on the TLS heap). */
#define TLS_CA_MAX_INPUT	(256 * 1024)
#define TLS_CA_MAX_CERTS	200
int tls_ca_load(mbedtls_x509_crt *ca, const unsigned char *pem, size_t len, char *err, size_t errlen);

/* Why a server's certificate was refused, from mbedTLS's verify flags
 * (MBEDTLS_X509_BADCERT_*) and whether a wall clock was known: no clock
 * first (nothing can be judged without one), then a chain to no trusted
 * CA, then the dates, then the host name; TLS_VERIFY_OTHER for the rest
 * (key usage, a bad key, a revoked or malformed certificate). */
enum tls_verify_why {
	TLS_VERIFY_OTHER,
	TLS_VERIFY_NOCLOCK,
	TLS_VERIFY_UNTRUSTED,
	TLS_VERIFY_EXPIRED,
	TLS_VERIFY_NAME,
};
enum tls_verify_why tls_verify_why(unsigned int flags, int clock_known);

#endif
