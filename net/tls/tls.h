/* TLS for the appliance (built with make TLS=1): mbedTLS 3.6 over a bounded
 * heap of its own, seeded from the kernel CSPRNG, and the certificate and key
 * found on the ESP (EFI/vireo/tls/), baked into the image at build time, or
 * generated at boot.
 *
 * Memory bound. mbedTLS allocates only from the TLS heap, TLS_HEAP_BYTES
 * carved from the page allocator once at start-up; an allocation that does
 * not fit fails (that handshake or connection fails, nothing else does).
 * Per connection, with mbedtls_config.h's record buffers (in 16384 + ~90,
 * out 4096 + ~90), as measured by tests/host/net/tls/test_mbedtls_config.c (mbedTLS
 * 3.6.6, P-256 or RSA-2048 key): established, 21,706-22,602 bytes under
 * TLS 1.2 and 24,654-26,446 under TLS 1.3 (it keeps more per-connection
 * secrets); during the handshake, at most 29,010 bytes (TLS 1.2 with
 * RSA-2048; 29,806 before X25519 moved off mbedTLS's bignums). Bound used here: 30 KiB (30,720 bytes) a connection, whatever
 * its state. The keys and the ssl
 * config hold about 8 KiB. So the 2 MiB heap holds (2048 - 8) / 30 = 68
 * connections at once, handshaking or not; the HTTPS listener must admit no
 * more than that (its handshake and connection limits, not yet written,
 * come out of this figure). */
#ifndef VIREO_TLS_H
#define VIREO_TLS_H

#include "lib/types.h"

#define TLS_HEAP_BYTES	(2u * 1024 * 1024)
/* What one connection may hold of it (see above), and the keys and config. */
#define TLS_CONN_BYTES	30720u
#define TLS_FIXED_BYTES	8192u

struct tls_heap_stats {
	size_t arena, in_use, peak;
	u64 allocs, failures;
};

/* Sets up the TLS heap and PSA crypto and loads the certificate and key: the
 * ESP's, else the pair given to make, else a key and self-signed certificate
 * generated now (net/tls/tls_cert.h) for names (tls.names=: a comma list of
 * DNS names, checked here; NULL or "" for the default ones); logs which, its names
 * and expiry (never key material) or, on bad input, one line saying what is
 * wrong. 0 when TLS can be offered, negative otherwise (HTTP is unaffected). */
int tls_start(const char *names);
/* Before tls_start(): the ESP's EFI/vireo/tls/cert.pem and key.pem as boot/
 * read them (kernel/boot_info.h). When either is there, tls_start() uses
 * that pair instead of the built-in one, or no HTTPS if the pair is bad; it
 * wipes the key file's bytes once parsed. */
struct boot_info;
void tls_boot_files(struct boot_info *bi);
/* Whether tls_start() succeeded. */
bool tls_ready(void);
void tls_heap_get_stats(struct tls_heap_stats *s);
/* Whether the certificate served is CA-issued: from the ESP or given to
 * make (not generated at boot) and not self-signed. https.hsts= is sent
 * only then. */
bool tls_serving_ca_issued(void);
/* The loaded certificate chain and key (NULL unless tls_ready()). */
struct tls_keys *tls_server_keys(void);

/* The pair given to make (TLS_CERT=, TLS_KEY=; net/tls/mkcreds.py writes
 * them into build/); both lengths 0 when none was given. */
extern const unsigned char tls_builtin_cert[], tls_builtin_key[];
extern const size_t tls_builtin_cert_len, tls_builtin_key_len;

#endif
