/* TLS and ACME state kept on the store across restarts (issue 33;
 * runtime/acme_state.c, linked only with make STORAGE=1: docs/https.md
 * "Kept on the store"). The image finds it through a linker set: with no
 * store in the image, acme_keep() is NULL and every hook is skipped (keys
 * in memory, a warning). */
#ifndef VIREO_RUNTIME_ACME_STATE_H
#define VIREO_RUNTIME_ACME_STATE_H

#include "lib/types.h"
#include "net/acme/acme_client.h"
#include "vireo/linkset.h"

typedef struct mbedtls_pk_context mbedtls_pk_context;
struct tls_keys;

/* An earlier attempt's outcome (acme.state): failures in a row, when the
 * next attempt may start and when the last one started (Unix s, 0: no
 * clock). */
struct acme_kept_state {
	u64 failures, next_at, attempt_at;
};

/* RFC 9773's state for the served certificate (acme.ari): its
 * identifier, the directory's renewalInfo URL, the CA's window (0 0:
 * none yet), the next poll and the renewal moment (Unix s). */
struct acme_kept_ari {
	const char *id, *url;
	u64 start, end, next, renew_at;
};

/* Attempts in a row a kept order is taken up at once after (the one a
 * restart cut short); beyond, a resume waits its backoff like any other
 * attempt (acme_state.c's keep_resume()). */
#define ACME_RESUME_AT_ONCE_MAX 1u

struct acme_resume {
	const char *directory, *names;	/* in */
	unsigned n_names;
	mbedtls_pk_context *order_key;	/* in: where a kept order's key goes */
	bool have;			/* out: the kept certificate serves */
	u64 not_before, not_after;	/* its dates */
	unsigned failures;		/* in a row, before this boot */
	u64 wait_s;			/* > 0: the next attempt (or the kept order's
					 * take-up) that much later */
	/* its RFC 9773 identifier, from the certificate itself ("": none,
	 * no AKI), and what an earlier boot learnt about it (ari_kept) */
	char ari_id[ACME_ARI_ID_MAX + 1];
	bool ari_kept;
	char ari_url[ACME_URL_MAX_C + 1];
	u64 ari_start, ari_end, ari_next, renew_at;
	/* an order a restart cut short ("": none), its key in order_key */
	char order[ACME_URL_MAX_C + 1];
};

struct acme_keep {
	/* Opens the store and reads what is kept (the generated pair into
	 * tls.h's tls_gen_keep, ACME's for the hooks below), then calls
	 * then() from the loop: HTTPS starts only after. */
	void (*boot)(void (*then)(void));
	/* After acme_start(): wipes and frees what boot() read. */
	void (*boot_done)(void);
	/* The account key kept for directory into key (and its account URL
	 * into url[cap], "" if none): true, or false (none, or refused: said
	 * once; a new key replaces it). */
	bool (*account)(const char *directory, mbedtls_pk_context *key, char *url, size_t cap);
	/* Keeps the account: key and url (may be "") for directory. */
	void (*account_keep)(const char *directory, const mbedtls_pk_context *key, const char *url);
	/* At acme_start(): the certificate kept for r's directory and names,
	 * checked (its framing, the key is the leaf's, a minute or more
	 * left) and installed (served from now on), and the kept state's
	 * backoff still to wait; then wipes what boot() read. */
	void (*resume)(struct acme_resume *r);
	/* Keeps the certificate just issued: the PEM chain and the key's DER. */
	void (*issued)(const char *directory, const char *names, const char *chain, size_t chain_len,
		       const u8 *key, size_t key_len);
	/* Keeps the state (written before each attempt, as if it will fail,
	 * and after each failure). */
	void (*state)(const char *directory, const struct acme_kept_state *st);
	/* Keeps the order just created (url, and key, the one its CSR is
	 * for), or none (url "", key NULL: issued); then(), when not NULL,
	 * once the store has it or could not keep it (at once without a
	 * writable store). */
	void (*order)(const char *directory, const char *names, const char *url, const mbedtls_pk_context *key,
		      void (*then)(void));
	/* Keeps the served certificate's renewal information state. */
	void (*ari)(const char *directory, const struct acme_kept_ari *a);
};

#define ACME_KEEP(obj) VIREO_LINKSET_ADD(acme_keep, const struct acme_keep, obj, obj)

/* The store's keeper, or NULL (runtime/acme.c). */
const struct acme_keep *acme_keep(void);

#endif
