/* The block layer: what the store sees of a disk. A struct blk_dev is a
 * device (virtio-blk through storage/blk_virtio.c, a model disk in the host
 * tests) with its geometry and one operation, submit; blk_submit() adds
 * what every user wants: requests of any length cut to the device's
 * max_io and sent one after another, reads retried (twice) on an I/O
 * error, FLUSH skipped on a write-through device, checks against the
 * geometry, counters, and completions always from the event loop, never
 * from inside a call. */
#ifndef VIREO_STORAGE_BLK_H
#define VIREO_STORAGE_BLK_H

#include "kernel/loop.h"
#include "lib/types.h"

struct blk_dev;

enum blk_op {
	BLK_READ,
	BLK_WRITE,
	BLK_FLUSH,
	BLK_DISCARD,
	BLK_WRITE_ZEROES,
};

#define BLK_READ_TRIES 3	/* a read is sent at most this often on -EIO */
#define BLK_LOWER_BYTES 96	/* the device's scratch per request */

struct blk_io {
	u8 op;			/* enum blk_op */
	u64 sector;		/* 512-byte units, aligned to the block size */
	void *buf;		/* READ/WRITE: from blk_buf_alloc() */
	u32 len;		/* bytes, whole blocks; any length (cut to max_io) */
	/* err: 0, -EIO (the device failed it: after BLK_READ_TRIES for a
	 * read), -EINVAL (past the end, not whole blocks), -EROFS, -ENOTSUP. */
	void (*done)(struct blk_io *io, int err);
	void *priv;
	/* The block layer's. */
	struct blk_dev *dev;
	u32 at;			/* bytes done */
	u32 chunk;		/* bytes of the request in flight */
	u8 tries;
	int err;
	u64 t0;			/* time_ns() at submit */
	struct blk_io *next;
	u64 lower[BLK_LOWER_BYTES / 8] __attribute__((aligned(16)));	/* the device's */
};

struct blk_stats {
	u64 reads, writes, flushes, discards, write_zeroes;	/* blk_io requests */
	u64 read_bytes, write_bytes;
	u64 read_retries;
	u64 errors;		/* blk_io requests that failed */
	u64 flush_ns;		/* time from submit to completion, all flushes */
};

struct blk_dev_ops {
	/* One request of at most max_io bytes (none for FLUSH); 0, then
	 * blk_lower_done(io, err) once from the loop, or an error now. */
	int (*submit)(struct blk_dev *d, struct blk_io *io, u8 op, u64 sector, void *buf, u32 len);
	/* Memory the device may write, on pages holding nothing else. */
	void *(*buf_alloc)(struct blk_dev *d, size_t bytes);
	void (*buf_free)(struct blk_dev *d, void *p, size_t bytes);
};

struct blk_dev {
	const struct blk_dev_ops *ops;
	void *ctx;
	char name[16];		/* "virtio3", for logs */
	char serial[24];	/* "" when the device has none */
	u64 sectors;		/* 512-byte sectors */
	u32 block_size;		/* a power of two, 512..4096 */
	u32 max_io;		/* bytes per device request */
	bool ro;
	bool writeback;		/* FLUSH is needed for durability */
	bool discard, write_zeroes;
	u32 max_discard, max_write_zeroes;
	struct blk_stats stats;
	/* The layer's: completions to deliver, from the loop. */
	struct blk_io *done_head, *done_tail;
	struct work done_work;
	bool ready;
};

/* Sets up the layer's part of d (its fields above filled by the device).
 * d lives as long as the kernel. */
void blk_dev_init(struct blk_dev *d);

/* Queues io on d: io->done(io, err) is called exactly once, from the loop.
 * Returns 0. */
int blk_submit(struct blk_dev *d, struct blk_io *io);

/* The device finished the request blk_submit sent for io (loop context). */
void blk_lower_done(struct blk_io *io, int err);

static inline void *blk_buf_alloc(struct blk_dev *d, size_t bytes)
{
	return d->ops->buf_alloc(d, bytes);
}

static inline void blk_buf_free(struct blk_dev *d, void *p, size_t bytes)
{
	if (p)
		d->ops->buf_free(d, p, bytes);
}

/* The virtio-blk devices (storage/blk_virtio.c): the i-th, or NULL. Each
 * blk_dev is made once and kept. n_pending: how many have not answered
 * GET_ID yet (their serial is not known). */
struct blk_dev *blk_virtio_get(unsigned i, unsigned *n_pending);

#endif
