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

/* Keys are 1..255 bytes; those that start with a 0 byte are the record
 * log's (below): put, delete and get refuse them (-EINVAL), keys skips
 * them. */

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

/* A scan that reads values, one key at a time: reads the first durable
 * key starting with prefix after the key `after` (alen 0: from the first)
 * and its value: got(0, key, klen, val, vlen, arg) (all valid during the
 * call only), or got(-EIO / -EBADMSG, key, klen, NULL, 0, arg). To go on,
 * call again from got with the key as `after`: one read in flight per
 * scan, so a scan holds no more memory than one vireo_store_get. Returns
 * 0, or -ENOENT (no more keys), -EBUSY (16 reads in flight), -EINVAL,
 * -EAGAIN, -ENODEV, without calling got. */
int vireo_store_next(const void *prefix, size_t plen, const void *after, size_t alen,
		     void (*got)(int err, const void *key, size_t klen, const void *val, size_t vlen, void *arg),
		     void *arg);

/*
 * The record log: records of 0..vireo_store_value_max() bytes, appended in
 * order, each with a sequence number (seq) that grows with every append,
 * survives restarts and is never given twice (an append that failed leaves
 * a gap: seqs are not dense). Kept in the store (one key per record), so a
 * record is as durable as a put, and recovery and compaction keep it.
 * Usable once vireo_store_open's ready came with 0 or -EROFS (reads only).
 * Bounds (docs/storage.md): 64 appends on their way (-EBUSY), one trim at
 * a time (-EBUSY), 16 reads (-EBUSY, shared with vireo_store_get); each
 * record held takes 96 bytes of the store's index and 8-aligned 34 + len
 * bytes of its disk (-ENOMEM, -ENOSPC past them).
 */

/* Appends data[0..len): done(0, seq, arg) once durable, or done(-EIO /
 * -EROFS / -ENOSPC, 0, arg). Returns 0, or without calling done: -EINVAL
 * (len over vireo_store_value_max()), -EBUSY, -ENOSPC, -ENOMEM, -EROFS,
 * -EAGAIN, -ENODEV (as vireo_store_put). */
int vireo_log_append(const void *data, size_t len, void (*done)(int err, u64 seq, void *arg), void *arg);

/* Reads the first record with seq >= from that is not trimmed: got(0,
 * seq, data, len, arg) (data valid during the call only) or got(-EIO /
 * -EBADMSG, seq, NULL, 0, arg). To read the log in order, call again with
 * seq + 1 from got. Returns 0, or -ENOENT (no such record: the end),
 * -EBUSY, -EAGAIN, -ENODEV, without calling got. */
int vireo_log_read(u64 from, void (*got)(int err, u64 seq, const void *data, size_t len, void *arg), void *arg);

/* Drops every record with seq <= upto: done(0, arg) once that is durable
 * (after a crash either every one of them is gone or none; each record is
 * whole or absent), or done(-EIO / -EROFS, arg). Returns 0, or without
 * calling done: -EINVAL (upto past vireo_log_last()), -EALREADY (trimmed
 * that far), -EBUSY (a trim on its way), -ENOSPC, -ENOMEM, -EROFS,
 * -EAGAIN, -ENODEV. */
int vireo_log_trim(u64 upto, void (*done)(int err, void *arg), void *arg);

/* The oldest record's seq, and the newest acknowledged one's (0: none). */
u64 vireo_log_first(void);
u64 vireo_log_last(void);

#endif
