/* blkdev: a simulated virtio-blk device for host tests of the real driver:
 * the generic simulated device (simdev.h: transport, config space, queues,
 * interrupts) with virtio-blk's request queue over a disk in memory. It
 * checks each request's layout (the header its own 16-byte element, the
 * status byte the last writable byte, sectors inside the disk, lengths in
 * whole blocks), answers reads, writes, FLUSH, GET_ID, DISCARD and
 * WRITE_ZEROES, and misbehaves on request: bad status bytes, a status
 * never written, short used lengths, ring lies (ids out of range,
 * repeated), and stalls (requests taken and held, never completed until
 * the test says). */
#ifndef VIREO_BLKDEV_H
#define VIREO_BLKDEV_H

#include "drivers/virtio/blk/virtio_blk_reg.h"
#include "drivers/virtio/virtio.h"
#include "tests/host/simdev/fake_dev.h"
#include "tests/host/simdev/simdev.h"

enum bd_fault {
	BD_NONE,
	BD_IOERR,		/* status VIRTIO_BLK_S_IOERR (a device error, not a violation) */
	BD_UNSUPP,		/* status VIRTIO_BLK_S_UNSUPP */
	BD_STATUS_BAD,		/* status 0x07 */
	BD_STATUS_UNSET,	/* the status byte left as the driver posted it */
	BD_LEN_SHORT,		/* used length one short of the writable bytes ... */
	BD_LEN_ZERO,		/* ... or 0 (every byte written all the same) */
	BD_ID_RANGE,		/* ring: an id past the ring */
	BD_ID_NONHEAD,		/* ring: an id inside a chain, not its head (split, direct) */
};

struct blkdev {
	union {
		struct simdev sd;
		struct {
			SIMDEV_FIELDS;
		};
	};
	u8 *disk;
	u64 sectors;		/* the disk's size in 512-byte sectors */
	u32 block_size;
	char serial[VIRTIO_BLK_ID_BYTES];	/* GET_ID's bytes (not NUL-terminated when full) */
	bool hold;		/* stall: take requests, complete none (bd_complete does) */
	bool no_irq;		/* never deliver an interrupt (a lost one, every time) */
	enum bd_fault fault;	/* applied to the next completion, then cleared */
	bool fault_sticky;	/* ... or to every one */
	/* observations */
	unsigned reads, writes, flushes, discards, write_zeroes, get_ids;
	unsigned requests;	/* completed */
	unsigned max_segs;	/* most data elements seen in one request */
	unsigned bad;		/* malformed requests (also sd_err'd) */
	u64 flushed_writes;	/* writes completed before the last FLUSH */
};

/* A device offering `features` (VIRTIO_BIT()s; VERSION_1 makes it modern)
 * over a zeroed disk of `sectors` 512-byte sectors, config space with that
 * capacity and block_size in blk_size (set the other fields with
 * sd_cfg_write*), serial "simdev-blk", one queue of qsize. */
void bd_init(struct blkdev *bd, u64 features, u64 sectors, u32 block_size, u16 qsize);
void bd_fini(struct blkdev *bd);
static inline unsigned bd_errors(const struct blkdev *bd) { return sd_errors(&bd->sd); }
static inline const char *bd_error(const struct blkdev *bd) { return sd_error(&bd->sd); }
/* Serves held requests: completes up to max of them, oldest first (the
 * fault in force applies). Returns how many. */
unsigned bd_complete(struct blkdev *bd, unsigned max);
/* Requests taken and not completed. */
unsigned bd_pending(struct blkdev *bd);
/* Delivers the queue's interrupt if the device decided on one (never with
 * no_irq). */
void bd_irq(struct blkdev *bd);

#endif
