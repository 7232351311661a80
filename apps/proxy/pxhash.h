/*
 * apps/proxy's consistent hashing (proxy.balance=hash; host-tested:
 * tests/test_pxhash.c): rendezvous hashing (highest random weight,
 * Thaler and Ravishankar 1998). Each upstream scores a key with a keyed
 * hash of (the upstream's identity, the key); the key goes to the
 * highest-scoring upstream that can take it. So the same key always goes
 * to the same upstream; when one upstream is down, only its keys move
 * (each to its own second choice, spread over the others), and they come
 * back when it does; a key's score never depends on the other upstreams.
 * The hash is SipHash-2-4 under a key from proxy.hash_seed= (or random at
 * boot), so a client cannot choose keys that all land on one upstream
 * without knowing it.
 */
#ifndef APPS_PROXY_PXHASH_H
#define APPS_PROXY_PXHASH_H

#include "vireo/siphash.h"
#include "pxhead.h"

/* An upstream's identity for the ring: a hash of its label
 * ("host:port"), so its keys stay with it whatever its place in
 * proxy.upstream=. */
u64 px_hash_id(const struct siphash_key *k, const char *label);

/* The key's score on the upstream whose px_hash_id() is id. */
u64 px_hash_score(const struct siphash_key *k, u64 id, const void *key, size_t len);

/* The upstream for key[0..len) among up[0..n) (ids[i] its px_hash_id()):
 * the highest score among those not tried and not down at now; when every
 * untried one is down, the down one back soonest (as px_choose()); -1 when
 * every one was tried. */
int px_hash_choose(const struct siphash_key *k, const u64 *ids, const struct px_choice *up, unsigned n, u64 now,
		   const void *key, size_t len);

/* proxy.hash_seed= into a key: SipHash of the text under two fixed keys
 * (the same text gives every proxy the same ring). */
void px_hash_seed(struct siphash_key *k, const char *seed);

#endif
