/* A model disk for the block layer's and the store's host tests: a
 * struct blk_dev whose requests complete from the loop, with a volatile
 * write cache. A write is seen by reads at once but is durable only once a
 * FLUSH submitted after it completed has completed. At a crash every write
 * not yet durable (completed or not, flushed or being flushed) lands or is
 * lost sector by sector, chosen by a seed: lost writes and writes torn at
 * any sector boundary. Faults: the n-th request of a kind fails with -EIO. */
#ifndef VIREO_TEST_MEMDISK_H
#define VIREO_TEST_MEMDISK_H

#include "storage/blk.h"

struct md_write;
struct md_req;

struct memdisk {
	struct blk_dev dev;
	u8 *cur;		/* what reads see */
	u8 *durable;		/* what a crash keeps for sure */
	u64 bytes;
	struct md_write *writes;	/* not yet durable, oldest first */
	struct md_req *q, **q_tail;	/* requests to complete */
	struct work work;
	unsigned reqs;		/* device requests so far */
	unsigned crash_at;	/* crash when this request arrives (0: never) */
	bool crashed;		/* requests vanish: none ever completes */
	int fail_in[5];		/* per enum blk_op: the n-th next request fails (0: none) */
	unsigned fail_count[5];	/* how many more fail after that one */
	unsigned dev_reqs[5];	/* device requests per op */
};

/* A disk of sectors 512-byte sectors (zeroed), block_size, max_io bytes
 * per request, writeback (FLUSH needed). */
void memdisk_init(struct memdisk *m, u64 sectors, u32 block_size, u32 max_io, bool writeback);
void memdisk_free(struct memdisk *m);
/* The n-th next request of op fails with -EIO, and count - 1 after it. */
void memdisk_fail(struct memdisk *m, enum blk_op op, int n, unsigned count);
/* Crash now: nothing in flight completes, later requests vanish. */
void memdisk_crash(struct memdisk *m);
/* Power back: every write that was not durable lands or is lost sector by
 * sector (seeded); the result is the disk, durable, and requests work again.
 * Returns the number of sectors of non-durable writes that landed. */
unsigned memdisk_reboot(struct memdisk *m, unsigned seed);

#endif
