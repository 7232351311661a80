/* mbedTLS 3.6 configuration for vireo's HTTPS server (MBEDTLS_CONFIG_FILE).
 *
 * Everything not switched on here is off: this file replaces mbedTLS's
 * default configuration rather than editing it, so a feature only exists if a
 * line below names it. The aim is the smallest server that modern clients
 * (curl, browsers, openssl s_client) can talk to, and nothing an attacker
 * could steer a handshake towards that we would not choose ourselves.
 *
 * Protocols: TLS 1.3 and TLS 1.2, server side only. SSLv3, TLS 1.0 and 1.1
 * are not even compiled (mbedTLS 3 has dropped them anyway); DTLS is off.
 * Renegotiation is off (MBEDTLS_SSL_RENEGOTIATION not defined): it is a
 * TLS 1.2-only feature with a history of attacks and nothing here needs it.
 *
 * Key exchange: ephemeral ECDHE only, on X25519 and P-256 (both for 1.2 and
 * 1.3). No static RSA key transport (no forward secrecy), no finite-field DHE
 * (slow, and large parameters), no PSK other than TLS 1.3's resumption
 * tickets (with ECDHE).
 *
 * Certificates: ECDSA (P-256) and RSA. RSA needs PKCS#1 v1.5 (TLS 1.2
 * signatures and certificate signatures) and v2.1/PSS (TLS 1.3 mandates PSS
 * for handshake signatures with RSA keys).
 *
 * Record protection: AES-128/256-GCM and ChaCha20-Poly1305 (AEADs). No CBC
 * at all, so no CBC-SHA1 and no Lucky-13 class of problems; no CCM, no NULL.
 * Hashes: SHA-256 and SHA-384 (SHA-384 is SHA-512's code; the TLS 1.3
 * AES-256-GCM-SHA384 suite and P-384-signed chains need it). SHA-1 and MD5
 * are off: no suite here uses them, and a certificate signed with SHA-1 will
 * not parse (mbedTLS fails closed).
 *
 * Platform: freestanding. No filesystem (keys come from memory), no sockets
 * (lwIP's altcp moves the bytes), no time source (MBEDTLS_HAVE_TIME off: the
 * server does not check certificate dates, which is the client's job; session
 * tickets live by key rotation instead, below). Memory comes from vireo's bounded
 * TLS heap (net/tls/tls_port.c) through the calloc/free macros; randomness
 * from the kernel CSPRNG (kernel/random.h) through PSA's external RNG and
 * vireo_tls_rng() (below).
 *
 * Code generation: the kernel is built with -mgeneral-regs-only (no SSE, no
 * FPU state to save in traps), so the AES-NI and SHA-NI paths are off and the
 * portable C implementations are used; the bignum inline assembly for x86-64
 * only uses general registers (mulq) and stays on (MBEDTLS_HAVE_ASM).
 */
#ifndef VIREO_MBEDTLS_CONFIG_H
#define VIREO_MBEDTLS_CONFIG_H

/* ---- platform ---------------------------------------------------------- */
#define MBEDTLS_HAVE_ASM
/* No 128-bit division: GCC would call libgcc's __udivti3, which the kernel
 * does not link; mbedTLS then divides with 64-bit operations. */
#define MBEDTLS_NO_UDBL_DIVISION
#define MBEDTLS_PLATFORM_C
#define MBEDTLS_PLATFORM_MEMORY
#define MBEDTLS_PLATFORM_NO_STD_FUNCTIONS
/* calloc/free: vireo's bounded TLS heap (tls_port.c); snprintf: the kernel's.
 * Declared here so every mbedTLS file sees them without a libc. */
#include <stddef.h>
void *vireo_tls_calloc(size_t n, size_t size);
void vireo_tls_free(void *p);
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define MBEDTLS_PLATFORM_CALLOC_MACRO	vireo_tls_calloc
#define MBEDTLS_PLATFORM_FREE_MACRO	vireo_tls_free
#ifdef HOST_TEST
#include <stdio.h>
#define MBEDTLS_PLATFORM_SNPRINTF_MACRO	snprintf	/* host tests: glibc's */
#else
#define MBEDTLS_PLATFORM_SNPRINTF_MACRO	ksnprintf
#endif
/* PSA (which TLS 1.3 uses for its key schedule and AEAD) reads the kernel
 * CSPRNG directly through mbedtls_psa_external_get_random() instead of
 * running a DRBG of its own on top of it. */
#define MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG

/* ---- randomness for the TLS layer ---------------------------------------
 * Every f_rng mbedTLS is given is vireo_tls_rng() (net/tls/tls_port.c), the
 * kernel CSPRNG itself: lwIP's altcp_tls takes it through
 * ALTCP_MBEDTLS_RNG_DIRECT (net/port/patches/0008) instead of seeding a
 * CTR_DRBG from the entropy module, so neither module is compiled (no
 * MBEDTLS_ENTROPY_C, MBEDTLS_CTR_DRBG_C: 2.6 KiB of the image). */

/* ---- TLS --------------------------------------------------------------- */
#define MBEDTLS_SSL_TLS_C
#define MBEDTLS_SSL_SRV_C
#define MBEDTLS_SSL_PROTO_TLS1_2
#define MBEDTLS_SSL_PROTO_TLS1_3
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_TLS1_3_COMPATIBILITY_MODE
#define MBEDTLS_KEY_EXCHANGE_ECDHE_ECDSA_ENABLED
#define MBEDTLS_KEY_EXCHANGE_ECDHE_RSA_ENABLED
/* RFC 7627: binds the TLS 1.2 master secret to the handshake (triple
 * handshake attack); clients offer it, so accept it. */
#define MBEDTLS_SSL_EXTENDED_MASTER_SECRET
#define MBEDTLS_SSL_ALPN
/* TLS 1.3 in 3.6 requires it; it only matters for client certificates,
 * which this server never asks for. */
#define MBEDTLS_SSL_KEEP_PEER_CERTIFICATE
#define MBEDTLS_SSL_SERVER_NAME_INDICATION
/* Records. A client may send full 16 KiB records (few negotiate the
 * max_fragment_length extension), so the input buffer must hold one:
 * MBEDTLS_SSL_IN_CONTENT_LEN stays at the protocol's 16384. What we send we
 * choose: 4 KiB records cost a little framing (29 bytes of AEAD overhead per
 * 4 KiB, 0.7 %) and save 12 KiB per connection. Per connection that is
 * in 16384 + out 4096 plus MBEDTLS_SSL_*_BUFFER_LEN's header, IV and tag room
 * (about 90 bytes each with these suites), about 20.6 KiB of record buffers;
 * net/tls/tls.h states the total with the context structures. */
#define MBEDTLS_SSL_IN_CONTENT_LEN	16384
#define MBEDTLS_SSL_OUT_CONTENT_LEN	4096
/* vireo's option (net/tls/patches/0005): a server connection frees both
 * record buffers whenever it is idle between records and allocates them
 * again for its next record in or out, within tlsmem.buf_slots connections
 * holding them at once (net/tls/tls.h). Not MBEDTLS_SSL_VARIABLE_BUFFER_LENGTH,
 * which stays off (docs/https.md's advisory table). */
#define MBEDTLS_SSL_IDLE_RELEASE
/* Session resumption (runtime/http/https.c): stateless tickets sealed with
 * AES-256-GCM under keys https.c draws from the CSPRNG and rotates itself,
 * since mbedTLS's own rotation and the tickets' lifetime check need
 * MBEDTLS_HAVE_TIME: a ticket is good while its key is one of the two kept.
 * TLS 1.3 resumes with PSK + ECDHE, so forward secrecy stays; PSK-only
 * resumption (MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_ENABLED) and
 * externally provisioned PSKs stay off. One NewSessionTicket per TLS 1.3
 * handshake. */
#define MBEDTLS_SSL_SESSION_TICKETS
#define MBEDTLS_SSL_TICKET_C
#define MBEDTLS_SSL_TLS1_3_KEY_EXCHANGE_MODE_PSK_EPHEMERAL_ENABLED
#define MBEDTLS_SSL_TLS1_3_DEFAULT_NEW_SESSION_TICKETS 1

/* ---- TLS client and certificate time (issue 32: connecting out) --------
 * The app API's TLS client connections (runtime/tls_out.c,
 * include/vireo/net.h): the client side of the protocols above, and
 * certificate validity dates checked against the kernel's wall clock.
 * MBEDTLS_HAVE_TIME_DATE makes X.509 verification compare notBefore and
 * notAfter with mbedtls_time(); vireo_tls_time() (net/tls/tls_port.c) gives
 * the best wall clock (kernel/time/wallclock.h: SNTP's, else the firmware's
 * provisional one) and -1 while there is none, and
 * mbedtls_platform_gmtime_r() (net/tls/tls_time.c) refuses every time
 * before WALLCLOCK_MIN_S, so without a clock every certificate is both
 * expired and not yet valid: verification fails closed. mbedtls_ms_time()
 * (the ages of session tickets) is the monotonic clock. */
#define MBEDTLS_SSL_CLI_C
#define MBEDTLS_HAVE_TIME
#define MBEDTLS_HAVE_TIME_DATE
#define MBEDTLS_PLATFORM_GMTIME_R_ALT
#define MBEDTLS_PLATFORM_MS_TIME_ALT
/* int64_t without <inttypes.h>, which lwIP's files (altcp_tls.h includes
 * mbedTLS's headers) do not have. */
#define MBEDTLS_PLATFORM_MS_TIME_TYPE_MACRO	long long
long vireo_tls_time(long *t);
#define MBEDTLS_PLATFORM_TIME_MACRO	vireo_tls_time

/* ---- public keys and certificates ------------------------------------- */
#define MBEDTLS_X509_USE_C
#define MBEDTLS_X509_CRT_PARSE_C
#define MBEDTLS_X509_RSASSA_PSS_SUPPORT
#define MBEDTLS_PK_C
#define MBEDTLS_PK_PARSE_C
/* No MBEDTLS_PK_PARSE_EC_EXTENDED (a key with explicit curve parameters
 * instead of a named curve): RFC 5480 section 2.1.1 requires namedCurve in
 * a certificate's key and the CA/Browser Forum's Baseline Requirements
 * (7.1.3.1.2) allow nothing else; such a key or certificate is refused as
 * an unsupported curve is (issue 33's room: 1.2 KiB of pkparse). */
#define MBEDTLS_PK_PARSE_EC_COMPRESSED
#define MBEDTLS_PEM_PARSE_C
#define MBEDTLS_BASE64_C
#define MBEDTLS_ASN1_PARSE_C
#define MBEDTLS_ASN1_WRITE_C	/* ECDSA signatures are DER-encoded */
#define MBEDTLS_OID_C
#define MBEDTLS_BIGNUM_C
#define MBEDTLS_RSA_C
#define MBEDTLS_PKCS1_V15
#define MBEDTLS_PKCS1_V21
#define MBEDTLS_ECP_C
#define MBEDTLS_ECDH_C
#define MBEDTLS_ECDSA_C
/* Deterministic ECDSA (RFC 6979): a signature never depends on the quality
 * of the random nonce. */
#define MBEDTLS_ECDSA_DETERMINISTIC
#define MBEDTLS_HMAC_DRBG_C	/* RFC 6979 nonces are an HMAC_DRBG */
#define MBEDTLS_ECP_DP_SECP256R1_ENABLED
#define MBEDTLS_ECP_DP_CURVE25519_ENABLED
/* Fast modular reduction for the NIST prime (P-256): a few KiB of code for
 * several times faster handshakes. */
#define MBEDTLS_ECP_NIST_OPTIM
/* X25519: the whole Montgomery ladder in vireo's fixed-size field
 * arithmetic (net/tls/x25519_alt.c: 5 x 51-bit limbs, no heap, one
 * conversion in and one out) instead of general bignums; every TLS 1.3
 * handshake makes two of these multiplications. mbedTLS has _ALT hooks for
 * the ladder's step and normalisation only (ECP_INTERNAL_ALT), which left
 * bignum conversions and swaps around every step; this hook is vireo's
 * (net/tls/patches/0002). Only Curve25519
 * (mbedtls_ecp_mul_mxz_alt_capable()); P-256 keeps mbedTLS's code. */
#define MBEDTLS_ECP_MUL_MXZ_ALT

/* ---- writing a certificate (issue 33) ----------------------------------
 * With no certificate from the ESP or from make, net/tls/tls_cert.c makes a
 * self-signed leaf at boot: an ECDSA P-256 key from the CSPRNG and an X.509
 * v3 certificate for it, written as DER (no PEM writer: it is parsed back
 * from DER and kept as DER). PK_WRITE_C writes the SubjectPublicKeyInfo. */
#define MBEDTLS_X509_CREATE_C
#define MBEDTLS_X509_CRT_WRITE_C
#define MBEDTLS_PK_WRITE_C
/* ACME's finalize (net/acme/acme_jws.c): a PKCS#10 request for the names,
 * DER. Linked only when called (--gc-sections). */
#define MBEDTLS_X509_CSR_WRITE_C

/* ---- symmetric --------------------------------------------------------- */
#define MBEDTLS_CIPHER_C
#define MBEDTLS_AES_C
/* The AES tables are built at first use into 8.5 KiB of .bss (no file
 * bytes: the loader zero-fills it) rather than kept as 8.5 KiB of .rodata:
 * the default image's budget (docs/https.md). Built once, in microseconds. */
#define MBEDTLS_GCM_C
#define MBEDTLS_CHACHA20_C
#define MBEDTLS_POLY1305_C
#define MBEDTLS_CHACHAPOLY_C
#define MBEDTLS_MD_C
#define MBEDTLS_SHA224_C	/* sha256.c builds both; kept for PSA's table */
#define MBEDTLS_SHA256_C
#define MBEDTLS_SHA384_C
#define MBEDTLS_SHA512_C
#define MBEDTLS_HKDF_C

/* ---- PSA crypto (TLS 1.3 needs it in 3.6) ------------------------------ */
#define MBEDTLS_PSA_CRYPTO_C
/* Volatile keys only: no key storage (there is no filesystem). The slot
 * count bounds how many keys exist at once: each TLS 1.3 handshake holds its
 * ECDHE key and, once established, two traffic keys per direction plus the
 * secrets; MBEDTLS_PSA_KEY_SLOT_COUNT is set in net/tls/tls.h's terms. */
#define MBEDTLS_PSA_KEY_SLOT_COUNT	256

/* Only the cipher suites we want (ciphersuite IDs from ssl_ciphersuites.h;
 * mbedTLS would otherwise offer everything compiled), in the server's order
 * of preference, which decides under TLS 1.2 and, with
 * net/tls/patches/0001, under TLS 1.3 too. ChaCha20-Poly1305 first: with
 * no AES-NI (-mgeneral-regs-only) AES-GCM is table lookups, several times
 * slower here (64 KiB responses under TCG, docs/https.md) and open to cache
 * timing, while ChaCha20 and Poly1305 are plain constant-time arithmetic.
 * Then AES-128-GCM (10 rounds) before AES-256-GCM (14). */
#define MBEDTLS_SSL_CIPHERSUITES \
	MBEDTLS_TLS1_3_CHACHA20_POLY1305_SHA256, \
	MBEDTLS_TLS1_3_AES_128_GCM_SHA256, \
	MBEDTLS_TLS1_3_AES_256_GCM_SHA384, \
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, \
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, \
	MBEDTLS_TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, \
	MBEDTLS_TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256, \
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, \
	MBEDTLS_TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384

#endif
