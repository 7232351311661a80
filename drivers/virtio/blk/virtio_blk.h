/* virtio-blk: one request queue, reads, writes, FLUSH, DISCARD and
 * WRITE_ZEROES, the device's serial (GET_ID), and every value the device
 * writes checked (config, used length, status byte). A request the device
 * does not complete within blk.timeout= resets the device and probes it
 * again; what was in flight fails with -EIO.
 *
 * The interface to a block layer (storage/blk_virtio.c) has no storage
 * types: a request names an operation, a sector, a buffer and a completion.
 * Every completion is called from the event loop, never from inside
 * vblk_submit() and never from an interrupt. A device that is reset and
 * probed again keeps its struct vblk (and what the upper layer knows of
 * it): its requests fail with -EIO, new ones go to the device again once
 * it is back. */
#ifndef VIREO_VIRTIO_BLK_H
#define VIREO_VIRTIO_BLK_H

#include "lib/types.h"

struct vblk;

enum vblk_op {
	VBLK_READ,		/* len bytes at sector into buf */
	VBLK_WRITE,		/* len bytes from buf to sector */
	VBLK_FLUSH,		/* every write completed before it is durable */
	VBLK_DISCARD,		/* [sector, sector + len) may be forgotten */
	VBLK_WRITE_ZEROES,	/* [sector, sector + len) reads as zeroes */
};

struct vblk_req {
	u8 op;			/* enum vblk_op */
	u64 sector;		/* 512-byte units, aligned to the block size */
	void *buf;		/* READ/WRITE: from vblk_buf_alloc() (READ: the device writes it) */
	u32 len;		/* bytes: a multiple of the block size, <= info.max_io
				 * (DISCARD/WRITE_ZEROES: <= their own limits) */
	/* err: 0, -EIO (device error, reset, or a device that broke the
	 * rules), -ENOTSUP (the device refused the request type). */
	void (*done)(struct vblk_req *r, int err);
	void *priv;
	/* The driver's. */
	struct vblk_req *next;
	int err;
};

struct vblk_info {
	u32 index;		/* virtioN */
	bool present;		/* probed and usable now (false while reset, given up) */
	bool ro;		/* VIRTIO_BLK_F_RO: writes are refused (-EROFS) */
	bool writeback;		/* a volatile cache: FLUSH makes writes durable */
	bool discard, write_zeroes;
	bool id_pending;	/* GET_ID not answered yet: serial not known */
	u64 sectors;		/* capacity in 512-byte sectors (whole blocks) */
	u32 block_size;		/* logical block: a power of two, 512..4096 */
	u32 phys_block_size;	/* TOPOLOGY's, else block_size */
	u32 max_io;		/* bytes per READ/WRITE request */
	u32 max_discard, max_write_zeroes;	/* bytes per such request */
	char serial[21];	/* GET_ID, printable ASCII, "" if none */
};

struct vblk_stats {
	u64 reads, writes, flushes, discards, write_zeroes;
	u64 read_bytes, write_bytes;
	u64 errors;		/* requests completed with an error */
	u64 timeouts;		/* requests past blk.timeout= (each reset counts once) */
	u64 resets;		/* resets the driver asked for (timeouts, broken queue) */
	u64 violations;		/* completions that broke the rules */
	u32 inflight;		/* on the ring now */
	u32 parked;		/* waiting for a slot */
};

/* The i-th virtio-blk device that probed (0..), or NULL. */
struct vblk *vblk_get(unsigned i);
void vblk_get_info(const struct vblk *b, struct vblk_info *info);
void vblk_get_stats(const struct vblk *b, struct vblk_stats *st);

/* Queues r. Returns 0: r->done(r, err) will be called exactly once, from
 * the loop. Or, with done never called: -EINVAL (a length or sector not
 * aligned to the block size, past the capacity or over the limits, a
 * buffer missing), -ENOTSUP (DISCARD/WRITE_ZEROES not offered), -EROFS (a
 * write to a read-only device). A device that is absent, being reset or
 * given up fails r through done with -EIO. FLUSH on a write-through device
 * completes at once. Requests may complete in any order; the memory of r
 * and its buffer belongs to the driver until done. */
int vblk_submit(struct vblk *b, struct vblk_req *r);

/*
 * Memory a device may write (read buffers), and any buffer handed to it:
 * whole pages holding nothing else, zeroed. Issue 30 (DMA containment)
 * brings a page-granular DMA allocator behind the virtio core's DMA seam;
 * until then this pair is the one place the block path allocates such
 * memory, so swapping it is a change here alone.
 */
void *vblk_buf_alloc(size_t bytes);
void vblk_buf_free(void *p, size_t bytes);

#endif
