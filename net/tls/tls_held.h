/* Certificates the HTTPS server hands to handshakes, held while any handshake
 * uses them (issue 33): the served chain and key can be replaced while
 * handshakes run, and a TLS-ALPN-01 challenge certificate cleared, without a
 * handshake ever seeing its chain or key freed. Pure (mbedTLS's free
 * functions only), so the host tests drive it under ASan.
 *
 * A handshake takes the certificate when mbedTLS asks for one (after the
 * ClientHello is parsed, runtime/http/https.c's certificate callback) and
 * lets go when it ends, however it ends: the chain and key are only used
 * while the handshake runs (the Certificate message and the signature); an
 * established connection holds neither. */
#ifndef VIREO_TLS_HELD_H
#define VIREO_TLS_HELD_H

#include "lib/types.h"
#include "net/tls/tls_keys.h"

/* One chain and key. Freed once its owner let go (live false) and no
 * handshake holds it (refs 0). */
struct tls_held {
	struct tls_keys keys;
	u32 refs;	/* handshakes using it */
	bool live;	/* its owner (the served slot, a challenge) still has it */
	bool used;	/* the slot holds keys */
};

struct tls_held_pool {
	struct tls_held *slot;
	unsigned n;
};

/* Moves *k into a free slot of p (k left empty), live, no handshake on it;
 * NULL when every slot is still held (k untouched). */
struct tls_held *tls_held_take(struct tls_held_pool *p, struct tls_keys *k);
/* A handshake takes h / lets it go. */
void tls_held_get(struct tls_held *h);
void tls_held_put(struct tls_held *h);
/* Its owner lets h go: freed now if no handshake holds it, else when the
 * last one lets go. */
void tls_held_retire(struct tls_held *h);
/* Slots holding keys (live or draining). */
unsigned tls_held_in_use(const struct tls_held_pool *p);

/* Which certificate each handshake uses, keyed by its connection (an
 * opaque pointer: never dereferenced). At most one entry a connection, so n
 * entries bound it at n connections handshaking at once. */
struct tls_holder {
	const void *conn;	/* NULL: free */
	struct tls_held *h;
};
struct tls_holders {
	struct tls_holder *e;
	unsigned n;
};

/* conn's handshake uses h: takes h (tls_held_get) and returns it; if conn
 * already holds one (a second ClientHello after HelloRetryRequest), that
 * one, unchanged: a handshake keeps the certificate it started with. NULL
 * when the table is full (nothing taken). */
struct tls_held *tls_holders_hold(struct tls_holders *t, const void *conn, struct tls_held *h);
/* conn's handshake ended: lets its certificate go (nothing if it held none). */
void tls_holders_drop(struct tls_holders *t, const void *conn);
unsigned tls_holders_count(const struct tls_holders *t);

/* An upper bound on what k holds of the TLS heap, for the arithmetic in
 * net/tls/tls.h: each certificate's DER plus TLS_HELD_CRT_OVERHEAD of
 * mbedTLS's parsed structure, and the key (an RSA private key keeps about
 * 10 numbers of its modulus' size, an EC one a few hundred bytes). */
#define TLS_HELD_CRT_OVERHEAD	1024u
size_t tls_keys_heap_bytes(const struct tls_keys *k);

/* TLS-ALPN-01 (RFC 8737): whether a ClientHello's SNI (len bytes, not
 * NUL-terminated, as mbedTLS gives it) names name, ASCII case-insensitive,
 * a trailing dot ignored. */
bool tls_sni_is(const unsigned char *sni, size_t len, const char *name);

#endif
