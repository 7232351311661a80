/* virtio-blk layouts (virtio 1.2 §5.2): feature bits, config space, the
 * request header, the discard/write-zeroes segment and the status values.
 * Layouts only. All fields little-endian (legacy devices use guest-native
 * order, also LE on x86_64). */
#ifndef VIREO_VIRTIO_BLK_REG_H
#define VIREO_VIRTIO_BLK_REG_H

#include "lib/types.h"

/* ---- feature bits, §5.2.3 (bit numbers) -------------------------------- */
#define VIRTIO_BLK_F_SIZE_MAX		1	/* size_max: largest segment */
#define VIRTIO_BLK_F_SEG_MAX		2	/* seg_max: segments per request */
#define VIRTIO_BLK_F_GEOMETRY		4	/* legacy CHS geometry (ignored) */
#define VIRTIO_BLK_F_RO			5	/* the device is read-only */
#define VIRTIO_BLK_F_BLK_SIZE		6	/* blk_size: logical block size */
#define VIRTIO_BLK_F_FLUSH		9	/* FLUSH requests (legacy name: WCE) */
#define VIRTIO_BLK_F_TOPOLOGY		10	/* physical_block_exp .. opt_io_size */
#define VIRTIO_BLK_F_CONFIG_WCE		11	/* writeback in config, writable */
#define VIRTIO_BLK_F_MQ			12	/* num_queues (not driven: one queue) */
#define VIRTIO_BLK_F_DISCARD		13	/* DISCARD requests, their limits */
#define VIRTIO_BLK_F_WRITE_ZEROES	14	/* WRITE_ZEROES requests, their limits */

/* ---- device configuration, §5.2.4 ---------------------------------------
 * Each field exists only with its feature; capacity always, in 512-byte
 * sectors whatever blk_size says. Read width-exact through the config
 * accessors, never as a whole. */
struct virtio_blk_config {
	le64 capacity;
	le32 size_max;
	le32 seg_max;
	le16 cylinders;
	u8 heads;
	u8 sectors;
	le32 blk_size;
	u8 physical_block_exp;		/* TOPOLOGY: physical block = blk_size << exp */
	u8 alignment_offset;		/* TOPOLOGY: in logical blocks */
	le16 min_io_size;		/* TOPOLOGY: in logical blocks */
	le32 opt_io_size;		/* TOPOLOGY: in logical blocks */
	u8 writeback;			/* CONFIG_WCE: 0 write-through, 1 writeback */
	u8 unused0;
	le16 num_queues;		/* MQ */
	le32 max_discard_sectors;	/* DISCARD: per segment */
	le32 max_discard_seg;		/* DISCARD: segments per request */
	le32 discard_sector_alignment;	/* DISCARD: in 512-byte sectors */
	le32 max_write_zeroes_sectors;	/* WRITE_ZEROES: per segment */
	le32 max_write_zeroes_seg;	/* WRITE_ZEROES: segments per request */
	u8 write_zeroes_may_unmap;
	u8 unused1[3];
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_blk_config, capacity) == 0, "spec");
_Static_assert(offsetof(struct virtio_blk_config, size_max) == 8, "spec");
_Static_assert(offsetof(struct virtio_blk_config, seg_max) == 12, "spec");
_Static_assert(offsetof(struct virtio_blk_config, cylinders) == 16, "spec");
_Static_assert(offsetof(struct virtio_blk_config, blk_size) == 20, "spec");
_Static_assert(offsetof(struct virtio_blk_config, physical_block_exp) == 24, "spec");
_Static_assert(offsetof(struct virtio_blk_config, alignment_offset) == 25, "spec");
_Static_assert(offsetof(struct virtio_blk_config, min_io_size) == 26, "spec");
_Static_assert(offsetof(struct virtio_blk_config, opt_io_size) == 28, "spec");
_Static_assert(offsetof(struct virtio_blk_config, writeback) == 32, "spec");
_Static_assert(offsetof(struct virtio_blk_config, num_queues) == 34, "spec");
_Static_assert(offsetof(struct virtio_blk_config, max_discard_sectors) == 36, "spec");
_Static_assert(offsetof(struct virtio_blk_config, max_discard_seg) == 40, "spec");
_Static_assert(offsetof(struct virtio_blk_config, discard_sector_alignment) == 44, "spec");
_Static_assert(offsetof(struct virtio_blk_config, max_write_zeroes_sectors) == 48, "spec");
_Static_assert(offsetof(struct virtio_blk_config, max_write_zeroes_seg) == 52, "spec");
_Static_assert(offsetof(struct virtio_blk_config, write_zeroes_may_unmap) == 56, "spec");
_Static_assert(sizeof(struct virtio_blk_config) == 60, "spec");

/* ---- requests, §5.2.6 -----------------------------------------------------
 * One buffer per request: the header (device-readable, 16 bytes, its own
 * element: a legacy device without ANY_LAYOUT wants it so), the data
 * (readable for OUT, DISCARD and WRITE_ZEROES, writable for IN and GET_ID),
 * then the status byte (writable, the last byte of the buffer). sector is
 * in 512-byte units even when blk_size is larger. */
#define VIRTIO_BLK_T_IN			0
#define VIRTIO_BLK_T_OUT		1
#define VIRTIO_BLK_T_FLUSH		4
#define VIRTIO_BLK_T_GET_ID		8
#define VIRTIO_BLK_T_DISCARD		11
#define VIRTIO_BLK_T_WRITE_ZEROES	13

struct virtio_blk_req_hdr {
	le32 type;
	le32 reserved;	/* ioprio in legacy; 0 */
	le64 sector;
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_blk_req_hdr) == 16, "spec");

/* The data of DISCARD and WRITE_ZEROES: one or more of these. */
struct virtio_blk_discard_wz {
	le64 sector;
	le32 num_sectors;
	le32 flags;	/* bit 0: unmap (WRITE_ZEROES only) */
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_blk_discard_wz) == 16, "spec");
#define VIRTIO_BLK_WZ_F_UNMAP		1u

/* GET_ID: 20 bytes, NUL-terminated only when shorter. */
#define VIRTIO_BLK_ID_BYTES		20

#define VIRTIO_BLK_S_OK			0
#define VIRTIO_BLK_S_IOERR		1
#define VIRTIO_BLK_S_UNSUPP		2

#define VIRTIO_BLK_SECTOR		512u

#endif
