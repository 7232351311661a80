/* The runtime's own side of the store (runtime/store_api.c, make
 * STORAGE=1): the keys the runtime keeps for itself (runtime/acme_state.c:
 * TLS and ACME keys and state) start with 0x00 'K', which apps cannot name
 * (include/vireo/store.h refuses every key that starts with 0x00: put,
 * delete and get say -EINVAL, keys and next skip them), the record log
 * has 0x00 'L' and 'T'. Either side may open the store first; each gets
 * the open's result once, from the loop. */
#ifndef VIREO_RUNTIME_STORE_RT_H
#define VIREO_RUNTIME_STORE_RT_H

#include "lib/types.h"

#define STORE_RT_PREFIX "\0K"	/* 2 bytes */

/* As vireo_store_open(): ready(0 | -EROFS | -ENODEV | E*, arg) from the
 * loop. Returns 0, or -EALREADY on a second call. */
int store_rt_open(void (*ready)(int err, void *arg), void *arg);

/* As vireo_store_put() and vireo_store_get(), for keys that start with
 * STORE_RT_PREFIX only (-EINVAL otherwise). A put is atomic: after a
 * crash the key has its old value or the new one, whole. */
int store_rt_put(const void *key, size_t klen, const void *val, size_t vlen, void (*done)(int err, void *arg),
		 void *arg);
int store_rt_get(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
		 void *arg);

#endif
