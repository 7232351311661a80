/* libFuzzer target for storage/logfmt.c: the disk is untrusted input. The
 * first byte picks what the rest is read as and whether the fuzzer fixes
 * the checksums first (so the field checks behind them are reached):
 * a superblock copy, or a segment (batches back to back, as recovery reads
 * them). Checks, beyond ASan/UBSan: anything accepted is canonical (it
 * encodes back to the same bytes), lies inside what was read, and obeys
 * the bounds the decoders promise (geometry within the disk, a batch within
 * its room, records adding up to the batch). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/byteorder.h"
#include "lib/crc32c.h"
#include "storage/logfmt.h"

#define SEED 0x600dcafeu
#define UNIT 512u

static u8 sb[ST_SB_SIZE], again[ST_SB_SIZE];
static u8 seg[1u << 16], rec[1u << 16];

static void fuzz_super(const u8 *d, size_t n, bool fix)
{
	struct st_super s;
	const char *why;
	u64 disk = n >= 8 ? get_le64(d) : 0;

	memset(sb, 0, sizeof sb);
	if (n > 8)
		memcpy(sb, d + 8, MIN(n - 8, sizeof sb));
	if (fix)
		put_le32(sb + ST_SB_SIZE - 4, crc32c(0, sb, ST_SB_SIZE - 4));
	if (st_super_decode(sb, disk, &s, &why)) {
		if (!why)
			abort();
		return;
	}
	if (!IS_POW2(s.unit) || s.data_off % s.unit || s.data_off + (u64)s.nseg * s.seg_size > disk * 512 ||
	    s.max_record > s.seg_size / 2)
		abort();
	st_super_encode(&s, again);
	if (memcmp(sb, again, sizeof sb))
		abort();
}

/* Fix mode: every record checksum in the payload whose length is sane. */
static void fix_records(u8 *p, u32 bytes)
{
	u32 off = 0;

	while (off + ST_REC_HDR <= bytes) {
		u32 len = get_le32(p + off + 4);

		if (len < ST_REC_HDR || len > bytes - off)
			return;
		put_le32(p + off, crc32c(SEED, p + off + 4, len - 4));
		off += ALIGN_UP(len, 8u);
	}
}

static void fuzz_segment(const u8 *d, size_t n, bool fix)
{
	u32 len = (u32)MIN(n, sizeof seg), pos = 0;

	memcpy(seg, d, len);
	len &= ~(UNIT - 1);
	while (pos < len) {
		struct st_batch b;
		const char *why;
		u32 off = 0, nrec = 0;

		if (fix && len - pos >= ST_BATCH_HDR) {
			u32 bytes = get_le32(seg + pos + 32);

			if (bytes <= len - pos - ST_BATCH_HDR) {
				fix_records(seg + pos + ST_BATCH_HDR, bytes);
				put_le32(seg + pos + 44, crc32c(SEED, seg + pos + ST_BATCH_HDR, bytes));
			}
			put_le32(seg + pos + 4, crc32c(SEED, seg + pos + 8, ST_BATCH_HDR - 8));
		}
		if (st_batch_decode(seg + pos, len - pos, SEED, 0, UNIT, len - pos, &b, &why))
			return;
		if (b.total > len - pos || b.total % UNIT || b.bytes + ST_BATCH_HDR > b.total || b.seq <= b.durable)
			abort();
		if (st_batch_check(seg + pos + ST_BATCH_HDR, &b, SEED, &why))
			return;
		while (off < b.bytes) {
			struct st_rec r;
			const u8 *p = seg + pos + ST_BATCH_HDR + off;

			if (st_rec_decode(p, b.bytes - off, SEED, &r, &why))
				abort();	/* st_batch_check accepted it */
			if (r.key != p + ST_REC_HDR || r.val != r.key + r.klen || ALIGN_UP(r.len, 8u) > b.bytes - off)
				abort();
			if (st_rec_encode(rec, r.type, r.flags, r.lsn, r.key, r.klen, r.val, r.vlen, SEED) !=
			    st_rec_space(r.klen, r.vlen))
				abort();
			/* The padding is not covered by the checksum: compare the record. */
			if (memcmp(rec, p, r.len))
				abort();
			off += ALIGN_UP(r.len, 8u);
			nrec++;
		}
		if (nrec != b.nrec || crc32c(SEED, seg + pos + ST_BATCH_HDR, b.bytes) != b.pcrc)
			abort();
		pos += b.total;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 2)
		fuzz_super(data + 1, size - 1, data[0] & 1);
	else
		fuzz_segment(data + 1, size - 1, data[0] & 1);
	return 0;
}
