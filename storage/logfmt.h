/* The store's on-disk format (docs/architecture.md, Storage): the
 * superblock (two copies), batches (one group commit each) and the records
 * in them. Encoders and checking decoders only: pure, no I/O, so the host
 * tests and the fuzzer run them as they are. Every field is little-endian.
 *
 *   byte 0          superblock copy A (4096 B)
 *   byte 4096       superblock copy B (4096 B)
 *   data_off        segment 0, then segment 1, ... (seg_size bytes each)
 *
 * A segment holds batches back to back from its start, each starting on a
 * unit (the device's logical block) boundary. A batch is a 64-byte header
 * and its records, each record 8-byte aligned; the batch is padded to a
 * whole unit. The header's checksum and every record's are CRC-32C seeded
 * with a value derived from the superblock's secret, which never leaves the
 * guest: a value a client stores cannot be taken for a header or record.
 *
 * Superblock (4096 B):
 *   0 magic "VIREO-ST"  8 version (1)  12 size (4096)  16 gen
 *   24 id[16] (public: store=id:...)  40 secret[16]  56 created (Unix s)
 *   64 sectors (the disk at format)  72 unit  76 seg_size  80 data_off
 *   88 nseg  92 max_record  96 label[32] (the disk's serial at format)
 *   128 start (the seq of the log's first batch: segments whose first
 *   batch is older are free; 0 at format: every segment counts)
 *   136..4091 zero  4092 crc (CRC-32C of bytes 0..4091)
 * The copies are rewritten one at a time (gen + 1 each time, the older copy
 * each time), each write followed by a FLUSH: a crash tears at most the
 * copy being written, and the other names a log that is still whole.
 * Batch header (64 B):
 *   0 magic "VSB1"  4 crc (seeded, of bytes 8..63)  8 seq  16 durable
 *   24 seg  28 nrec  32 bytes (of records, each padded to 8)  36 flags
 *   40 prev_seg  44 pcrc (seeded, of the records: bytes 64..64+bytes)
 *   48 prev_first  56 reserved (0)
 * Record (24 B + key + value):
 *   0 crc (seeded, of bytes 4..len-1)  4 len  8 type  9 klen  10 flags
 *   12 vlen  16 lsn  24 key[klen]  value[vlen]
 */
#ifndef VIREO_STORAGE_LOGFMT_H
#define VIREO_STORAGE_LOGFMT_H

#include "lib/types.h"

#define ST_SB_SIZE 4096u
#define ST_SB_COPIES 2u
#define ST_VERSION 1u
#define ST_ID_LEN 16u
#define ST_LABEL_LEN 32u
#define ST_NSEG_MAX 65536u
#define ST_SEG_MIN (64u * 1024)
#define ST_SEG_MAX (64u * 1024 * 1024)

#define ST_BATCH_HDR 64u
#define ST_BATCH_FIRST 1u	/* the first batch of its segment: prev_* are set */
#define ST_NO_SEG 0xffffffffu

#define ST_REC_HDR 24u
#define ST_REC_PUT 1u
#define ST_REC_DEL 2u
#define ST_REC_COPY 1u		/* flags: copied by compaction (the lsn is the original's) */
#define ST_KEY_MAX 255u

struct st_super {
	u32 version;
	u64 gen;
	u8 id[ST_ID_LEN];
	u8 secret[ST_ID_LEN];
	u64 created;
	u64 sectors;
	u32 unit;
	u32 seg_size;
	u64 data_off;
	u32 nseg;
	u32 max_record;
	char label[ST_LABEL_LEN];	/* NUL-terminated */
	u64 start;		/* the seq of the log's first batch (0: all segments) */
};

struct st_batch {
	u64 seq, durable;
	u32 seg, nrec, bytes, flags;
	u32 prev_seg;
	u32 pcrc;		/* of the payload: a torn batch whose header landed over
				 * an older batch's blocks fails it */
	u64 prev_first;
	u32 total;		/* the batch's bytes on disk: header, records, padding to a unit */
};

struct st_rec {
	u8 type, klen;
	u16 flags;
	u32 vlen, len;		/* len: header + key + value (unpadded) */
	u64 lsn;
	const u8 *key, *val;
};

/* Bytes a record takes in a batch (its header, key and value, padded to 8). */
static inline u32 st_rec_space(u32 klen, u32 vlen)
{
	return ALIGN_UP(ST_REC_HDR + klen + vlen, 8u);
}

/* The seed of every batch and record checksum of a store. */
u32 st_seed(const u8 secret[ST_ID_LEN]);

/* Writes s into out[ST_SB_SIZE] with its checksum. */
void st_super_encode(const struct st_super *s, u8 *out);
/* Checks and decodes a copy: 0, or -EBADMSG with *why set ("bad magic",
 * "bad checksum", "unknown version", a geometry it names). disk_sectors is
 * the device's size: a store that does not fit it is refused too. */
int st_super_decode(const u8 *in, u64 disk_sectors, struct st_super *s, const char **why);
/* True when in[0..len) is all zero (a blank area). */
bool st_all_zero(const u8 *in, size_t len);

/* Writes the batch header for b (b->total is not stored) into out[64]. */
void st_batch_encode(const struct st_batch *b, u32 seed, u8 *out);
/* Checks the header at p (avail bytes readable; at least ST_BATCH_HDR):
 * magic, checksum, the segment it claims (seg), a length that fits the room
 * left in the segment (room, from p) and fills b (b->total with the padding
 * to unit). 0, or -EBADMSG with *why set. */
int st_batch_decode(const u8 *p, u32 avail, u32 seed, u32 seg, u32 unit, u32 room, struct st_batch *b,
		    const char **why);
/* Checks the batch b whose payload (b->bytes) starts at p: its checksum
 * (b->pcrc), every record decodes, their padded lengths add up to
 * b->bytes, their count to b->nrec. 0, or -EBADMSG with *why set ("bad
 * batch checksum" first when the payload's checksum fails, whatever else
 * does). Each byte is read once: the payload's checksum is made from the
 * records'. */
int st_batch_check(const u8 *p, const struct st_batch *b, u32 seed, const char **why);

/* Writes one record at out (st_rec_space(klen, vlen) bytes, padding
 * zeroed); returns that length. klen 1..ST_KEY_MAX. */
u32 st_rec_encode(u8 *out, u8 type, u16 flags, u64 lsn, const u8 *key, u32 klen, const void *val, u32 vlen,
		  u32 seed);
/* Decodes the record at p (avail bytes readable): 0 with r filled (key and
 * val point into p), or -EBADMSG with *why set (short, a length that does
 * not add up, an unknown type, an empty key, a delete with a value, a bad
 * checksum). */
int st_rec_decode(const u8 *p, u32 avail, u32 seed, struct st_rec *r, const char **why);
/* The fields of a record in a batch st_batch_check() has passed, read
 * without checking them again. */
void st_rec_fields(const u8 *p, struct st_rec *r);

#endif
