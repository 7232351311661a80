/*
 * The durable store (storage/store.h underneath): keys of 1..255 bytes,
 * values up to vireo_store_value_max(), on the virtio-blk disk whose serial
 * store= names. An app that uses it sets STORAGE := 1 in its app.mk (the
 * default image carries no storage code).
 *
 * Writes complete by callback once durable: the record and the FLUSH after
 * it have completed, so an acknowledged write survives a crash or a
 * kill -9 of the VM. Reads see only durable data. Every callback comes
 * from the loop, never from inside the call that started it.
 */
#ifndef VIREO_API_STORE_H
#define VIREO_API_STORE_H

#include "vireo/app.h"

/* Finds and opens the data disk (first call only); ready(err) from the
 * loop: 0 (writable), -EROFS (opened read-only: a damaged log, a failed
 * write, a read-only disk; reads work), -ENODEV (no data disk, store=off:
 * keep data in memory and say so), or another E* code (logged). Returns 0,
 * or -EALREADY on a second call. */
int vireo_store_open(void (*ready)(int err, void *arg), void *arg);

/* The largest value a put takes (0 when no store is open). */
size_t vireo_store_value_max(void);

/* Writes or deletes key; done(err, arg) once durable (0) or failed: -EIO
 * (the disk failed: the store is read-only now), -EROFS. Returns 0 (done
 * will be called) or, without calling it: -EINVAL (key or value size),
 * -ENOENT (delete of an absent key), -ENOSPC (disk full), -ENOMEM (the
 * index's bound), -EBUSY (too many writes queued: retry later), -EROFS,
 * -EAGAIN (not open yet), -ENODEV (no store). */
int vireo_store_put(const void *key, size_t klen, const void *val, size_t vlen, void (*done)(int err, void *arg),
		    void *arg);
int vireo_store_del(const void *key, size_t klen, void (*done)(int err, void *arg), void *arg);

/* Reads key's value: got(0, val, vlen, arg) (val valid during the call
 * only) or got(-EIO / -EBADMSG: the disk returned a record that is not the
 * one written). Returns 0, or -ENOENT (no such key), -EBUSY (16 reads in
 * flight), -EAGAIN, -ENODEV, without calling got. */
int vireo_store_get(const void *key, size_t klen, void (*got)(int err, const void *val, size_t vlen, void *arg),
		    void *arg);

/* Calls fn for each durable key starting with prefix, in byte order, after
 * the key `after` (alen 0: from the first), until fn returns false; vlen
 * is the value's size. Returns the number of calls. */
unsigned vireo_store_keys(const void *prefix, size_t plen, const void *after, size_t alen,
			  bool (*fn)(const void *key, size_t klen, size_t vlen, void *arg), void *arg);

#endif
