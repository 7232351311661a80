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
 * its state.
 *
 * Idle (net/tls/patches/0005): an established server connection between
 * records (nothing partly received, nothing unsent, no handshake) frees
 * both record buffers and allocates them again for its next record in or
 * out, so it holds only its context, session and keys: measured by the
 * same test (printed, "idle"), 1,192 B (ChaCha20-Poly1305) to 2,088 B
 * (AES-GCM), TLS 1.2 and 1.3 alike (1,332 B in the appliance,
 * tests/matrix/test_capacity.py); bound TLS_IDLE_BYTES, 4 KiB.
 * At most tlsmem.buf_slots server connections hold record buffers at
 * once (TLS_BUF_SLOTS, 64, at the floor; one more per 8 connections above) (tls_port.c counts them: a setup without a slot fails, the
 * connection is refused; a read or write without one waits, nothing
 * consumed, until the next segment or poll). So N connections hold at most
 * S x 30,720 + (N - S) x TLS_IDLE_BYTES with S slots: the floor below
 * keeps its 64 x 30 KiB as the first 64's reserve and net/tls/tlsmem.h
 * plans the connections above it at TLS_IDLE_BYTES and an eighth of a
 * slot each. The keys and the ssl
 * config hold about 8 KiB. So the 2 MiB heap holds (2048 - 8) / 30 = 68
 * connections at once, handshaking or not; the HTTPS listener admits 64
 * (runtime/http/https.h's HTTPS_MAX_CONNS).
 *
 * TLS clients (runtime/tcp_out.c) have heap of their own on top of those
 * 2 MiB, so a flood of HTTPS clients never starves them nor they the
 * server: TLS_CLIENT_CONNS connections (include/vireo/net.h's
 * VIREO_TLS_OUT_MAX, all clients) of TLS_CLIENT_CONN_BYTES each, and the CA
 * bundle, TLS_CA_HEAP_BYTES at most (tls_start() refuses a bundle that
 * needs more). A client connection holds what a server one does (the same
 * record buffers and contexts) plus the server's chain as received (kept:
 * MBEDTLS_SSL_KEEP_PEER_CERTIFICATE) and, while verifying it, the
 * signature check's bignums: measured 30,944 bytes (one connection's
 * peak over the idle heap, tests/qemu/test_tls_client.py: TLS 1.3, a P-256
 * leaf from a P-256 CA), bound 40 KiB for larger chains and RSA. The CA
 * bundle: of Debian 12's ca-certificates (144 roots, 219,597 bytes of PEM)
 * the 83 this configuration can read (no P-384, no SHA-1: the rest are
 * skipped) keep 248,467 bytes, 2,993 a certificate
 * (tests/host/net/tls/test_tls_keys.c prints it); bound 384 KiB (about 130
 * such roots). While parsing, a copy of the input (at most 256 KiB) is
 * held too, at start-up, when nothing else is. So TLS_HEAP_BYTES = 2 MiB +
 * 4 x 40 KiB + 384 KiB = 2,654,208 bytes (648 pages).
 *
 * Switching certificates (issue 33: ACME, `cert regen`) and TLS-ALPN-01
 * hold more chains and keys than the one served at boot (whose bytes are
 * in the 8 KiB above): a handshake keeps the chain it started with, so a
 * replaced one lives until the handshakes begun before the switch end
 * (tls_held.h). At most TLS_SERVED_SLOTS (3) served ones at once: the
 * current one and two replaced ones still in handshakes (a third switch
 * within a handshake's life, 10 s at most, is refused, -EBUSY, and can be
 * retried), each installed one at most TLS_SERVED_BYTES_MAX = 24 KiB
 * (tls_keys_heap_bytes()'s bound: a leaf and two intermediates of RSA-4096,
 * 3 x (1,900 + 1,024) + 10 x 512 + 512 = 14,404 B, fits; a P-256 leaf
 * and intermediate about 4 KiB). TLS-ALPN-01: at most TLS_NAMES_MAX (8)
 * challenges set at once, each a P-256 key and a self-signed certificate
 * for one name (DER under 1 KiB: tls_keys_heap_bytes() at most 2,560 B,
 * bound TLS_ALPN01_BYTES_MAX = 3 KiB), and as many cleared ones still in
 * handshakes: TLS_ALPN01_SLOTS = 16. So 2 x 24 KiB + 16 x 3 KiB = 96 KiB
 * (98,304 B) more of the server's heap: 64 x 30,720 + 8,192 + 98,304 =
 * 2,072,576 B <= 2,097,152 (runtime/http/https.c checks it at compile
 * time). */
#ifndef VIREO_TLS_H
#define VIREO_TLS_H

#include "lib/types.h"

/* What one connection may hold of it (see above), and the keys and config. */
#define TLS_CONN_BYTES	30720u
#define TLS_IDLE_BYTES	4096u
#define TLS_BUF_SLOTS	64u
#define TLS_FIXED_BYTES	8192u
#define TLS_SERVER_HEAP_BYTES	(2u * 1024 * 1024)
/* Clients: connections at once, each's bound, and the CA bundle's. */
#define TLS_CLIENT_CONNS	4u
#define TLS_CLIENT_CONN_BYTES	40960u
#define TLS_CA_HEAP_BYTES	(384u * 1024)
#define TLS_HEAP_BYTES	(TLS_SERVER_HEAP_BYTES + TLS_CLIENT_CONNS * TLS_CLIENT_CONN_BYTES + TLS_CA_HEAP_BYTES)

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
/* The certificate chain and key served now (NULL unless tls_ready()); a
 * pointer valid until the next tls_served_install(). */
struct tls_keys *tls_server_keys(void);

/* Keeping the generated certificate across restarts (issue 33): with a
 * store (make STORAGE=1 and a data disk), runtime/acme_state.c fills this
 * in before tls_start(): store set; load() puts the pair an earlier boot
 * generated for names (tls.names=, "" for the default ones) into k, when
 * it still fits (its names are today's, the key is the certificate's, a
 * day or more is left; else it says why, once) and returns 0, or returns
 * -1 and tls_start() generates a new pair; save() keeps each pair
 * generated (at boot, `cert regen`), copying what it needs. Without a
 * store: all unset, a warning, the key in memory only. */
struct tls_keys;
struct tls_gen_keep {
	bool store;
	int (*load)(struct tls_keys *k, const char *names);
	void (*save)(const struct tls_keys *k, const char *names);
};
extern struct tls_gen_keep tls_gen_keep;

/* `cert`'s further lines, the ACME client's state, and `cert ARGS`
 * (runtime/acme.c sets it: `cert renew`), or NULL. */
extern void (*tls_cert_cmd_more)(const char *args);
#define TLS_SERVED_SLOTS	3u
#define TLS_SERVED_BYTES_MAX	(24u * 1024)
#define TLS_ALPN01_SLOTS	16u
#define TLS_ALPN01_BYTES_MAX	3072u
/* Serve k from the next handshake on (runtime/http/https.h's
 * https_cert_install() says the contract): moves *k in (k left empty) and
 * retires the one served before, freed once no handshake uses it; source
 * "esp", "built-in", "generated" or "acme". 0; -EINVAL (no keys, another
 * source), -ENODEV (tls_start() failed: HTTPS is off), -E2BIG (over
 * TLS_SERVED_BYTES_MAX), -EBUSY (two replaced ones still in handshakes),
 * k untouched. Logs the switch: source, names, expiry, fingerprint. */
struct tls_keys;
int tls_served_install(struct tls_keys *k, const char *source);
/* The certificate new handshakes get (NULL unless tls_ready()); a
 * handshake takes it with tls_holders_hold() (tls_held.h). */
struct tls_held;
struct tls_held *tls_served_current(void);

/* TLS clients (runtime/tcp_out.c): whether tls_start() set the heap and
 * PSA up (true even when the server's keys failed), and the CA bundle
 * tls_start() loaded (NULL when none: every client connection is refused). */
bool tls_client_ready(void);
struct mbedtls_x509_crt;
struct mbedtls_x509_crt *tls_client_ca(void);

/* The pair given to make (TLS_CERT=, TLS_KEY=; net/tls/mkcreds.py writes
 * them into build/); both lengths 0 when none was given. The CA bundle given
 * to make (TLS_CA=); tls_builtin_ca_len 0 without one. */
extern const unsigned char tls_builtin_cert[], tls_builtin_key[], tls_builtin_ca[];
extern const size_t tls_builtin_cert_len, tls_builtin_key_len, tls_builtin_ca_len;

#endif
