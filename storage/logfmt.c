/* The store's on-disk format: encoders and checking decoders (logfmt.h). */
#include "lib/byteorder.h"
#include "lib/crc32c.h"
#include "lib/string.h"
#include "storage/logfmt.h"

#define ST_SB_CRC_OFF (ST_SB_SIZE - 4u)
#define ST_BATCH_MAGIC 0x31425356u	/* "VSB1" */
static const char sb_magic[8] = { 'V', 'I', 'R', 'E', 'O', '-', 'S', 'T' };

u32 st_seed(const u8 secret[ST_ID_LEN])
{
	return crc32c(0x5eed5eedu, secret, ST_ID_LEN);
}

bool st_all_zero(const u8 *in, size_t len)
{
	u8 acc = 0;

	for (size_t i = 0; i < len; i++)
		acc |= in[i];
	return acc == 0;
}

void st_super_encode(const struct st_super *s, u8 *out)
{
	memset(out, 0, ST_SB_SIZE);
	memcpy(out, sb_magic, sizeof sb_magic);
	put_le32(out + 8, ST_VERSION);
	put_le32(out + 12, ST_SB_SIZE);
	put_le64(out + 16, s->gen);
	memcpy(out + 24, s->id, ST_ID_LEN);
	memcpy(out + 40, s->secret, ST_ID_LEN);
	put_le64(out + 56, s->created);
	put_le64(out + 64, s->sectors);
	put_le32(out + 72, s->unit);
	put_le32(out + 76, s->seg_size);
	put_le64(out + 80, s->data_off);
	put_le32(out + 88, s->nseg);
	put_le32(out + 92, s->max_record);
	strlcpy((char *)out + 96, s->label, ST_LABEL_LEN);
	put_le64(out + 128, s->start);
	put_le32(out + ST_SB_CRC_OFF, crc32c(0, out, ST_SB_CRC_OFF));
}

int st_super_decode(const u8 *in, u64 disk_sectors, struct st_super *s, const char **why)
{
	u64 end;

	*why = NULL;
	if (memcmp(in, sb_magic, sizeof sb_magic))
		*why = "bad magic";
	else if (get_le32(in + ST_SB_CRC_OFF) != crc32c(0, in, ST_SB_CRC_OFF))
		*why = "bad checksum";
	else if (get_le32(in + 8) != ST_VERSION || get_le32(in + 12) != ST_SB_SIZE)
		*why = "unknown version";
	if (*why)
		return -EBADMSG;
	memset(s, 0, sizeof *s);
	s->version = get_le32(in + 8);
	s->gen = get_le64(in + 16);
	memcpy(s->id, in + 24, ST_ID_LEN);
	memcpy(s->secret, in + 40, ST_ID_LEN);
	s->created = get_le64(in + 56);
	s->sectors = get_le64(in + 64);
	s->unit = get_le32(in + 72);
	s->seg_size = get_le32(in + 76);
	s->data_off = get_le64(in + 80);
	s->nseg = get_le32(in + 88);
	s->max_record = get_le32(in + 92);
	memcpy(s->label, in + 96, ST_LABEL_LEN);
	s->start = get_le64(in + 128);
	end = s->data_off + (u64)s->nseg * s->seg_size;
	if (!IS_POW2(s->unit) || s->unit < 512 || s->unit > 4096)
		*why = "unit is not a power of two in 512..4096";
	else if (!IS_POW2(s->seg_size) || s->seg_size < ST_SEG_MIN || s->seg_size > ST_SEG_MAX)
		*why = "segment size out of range";
	else if (s->data_off < ST_SB_COPIES * ST_SB_SIZE || s->data_off % s->unit || s->data_off > (1ull << 40))
		*why = "data offset out of range";
	else if (s->nseg < 4 || s->nseg > ST_NSEG_MAX)
		*why = "segment count out of range";
	else if (s->max_record < 4096 || s->max_record > s->seg_size / 2 - ST_BATCH_HDR)
		*why = "record limit out of range";
	else if (end > s->sectors * 512 || end > disk_sectors * 512)
		*why = "larger than the disk";
	else if (s->label[ST_LABEL_LEN - 1] != '\0')
		*why = "label not terminated";
	else if (!st_all_zero(in + 96 + strlen(s->label), ST_LABEL_LEN - strlen(s->label)))
		*why = "label not padded with zeroes";
	else if (!st_all_zero(in + 136, ST_SB_CRC_OFF - 136))
		*why = "reserved bytes set";
	return *why ? -EBADMSG : 0;
}

void st_batch_encode(const struct st_batch *b, u32 seed, u8 *out)
{
	memset(out, 0, ST_BATCH_HDR);
	put_le32(out, ST_BATCH_MAGIC);
	put_le64(out + 8, b->seq);
	put_le64(out + 16, b->durable);
	put_le32(out + 24, b->seg);
	put_le32(out + 28, b->nrec);
	put_le32(out + 32, b->bytes);
	put_le32(out + 36, b->flags);
	put_le32(out + 40, b->prev_seg);
	put_le32(out + 44, b->pcrc);
	put_le64(out + 48, b->prev_first);
	put_le32(out + 4, crc32c(seed, out + 8, ST_BATCH_HDR - 8));
}

int st_batch_decode(const u8 *p, u32 avail, u32 seed, u32 seg, u32 unit, u32 room, struct st_batch *b,
		    const char **why)
{
	*why = NULL;
	if (avail < ST_BATCH_HDR || room < ST_BATCH_HDR)
		*why = "short";
	else if (get_le32(p) != ST_BATCH_MAGIC)
		*why = "no batch header";
	else if (get_le32(p + 4) != crc32c(seed, p + 8, ST_BATCH_HDR - 8))
		*why = "bad header checksum";
	if (*why)
		return -EBADMSG;
	b->seq = get_le64(p + 8);
	b->durable = get_le64(p + 16);
	b->seg = get_le32(p + 24);
	b->nrec = get_le32(p + 28);
	b->bytes = get_le32(p + 32);
	b->flags = get_le32(p + 36);
	b->prev_seg = get_le32(p + 40);
	b->pcrc = get_le32(p + 44);
	b->prev_first = get_le64(p + 48);
	if (b->seg != seg)
		*why = "header names another segment";
	else if (b->bytes > room - ST_BATCH_HDR || b->bytes % 8 || b->nrec > b->bytes / ST_REC_HDR)
		*why = "length past the segment";
	else if (b->flags & ~ST_BATCH_FIRST || get_le64(p + 56))
		*why = "unknown flags";
	else if (b->durable >= b->seq || b->seq == 0)
		*why = "sequence numbers out of order";
	if (*why)
		return -EBADMSG;
	b->total = ALIGN_UP(ST_BATCH_HDR + b->bytes, unit);
	if (b->total > room) {
		*why = "length past the segment";
		return -EBADMSG;
	}
	return 0;
}

/* A record failed to decode: the batch's own checksum is reported first
 * if it fails too (a torn batch is a bad batch, whatever its records). */
static int st_batch_bad(const u8 *p, const struct st_batch *b, u32 seed, const char **why)
{
	if (crc32c(seed, p, b->bytes) != b->pcrc)
		*why = "bad batch checksum";
	return -EBADMSG;
}

int st_batch_check(const u8 *p, const struct st_batch *b, u32 seed, const char **why)
{
	u32 off = 0, n = 0, crc = seed;	/* crc32c(seed, p, off) */

	/* A record's CRC covers all of it but its first 4 bytes: the batch's
	 * CRC is built from the records' (crc32c_extend) and the bytes they
	 * leave out, so every byte is read once, not twice. */
	while (off < b->bytes) {
		struct st_rec r;
		u32 end;

		if (st_rec_decode(p + off, b->bytes - off, seed, &r, why))
			return st_batch_bad(p, b, seed, why);
		crc = crc32c(crc, p + off, 4);
		crc = crc32c_extend(crc, seed, get_le32(p + off), r.len - 4);
		end = MIN(ALIGN_UP(r.len, 8u), b->bytes - off);	/* the padding within the batch */
		crc = crc32c(crc, p + off + r.len, end - r.len);
		off += ALIGN_UP(r.len, 8u);
		n++;
	}
	if (crc != b->pcrc)
		*why = "bad batch checksum";
	else
		*why = off != b->bytes || n != b->nrec ? "record count does not add up" : NULL;
	return *why ? -EBADMSG : 0;
}

void st_rec_fields(const u8 *p, struct st_rec *r)
{
	r->len = get_le32(p + 4);
	r->type = p[8];
	r->klen = p[9];
	r->flags = get_le16(p + 10);
	r->vlen = get_le32(p + 12);
	r->lsn = get_le64(p + 16);
	r->key = p + ST_REC_HDR;
	r->val = p + ST_REC_HDR + r->klen;
}

u32 st_rec_encode(u8 *out, u8 type, u16 flags, u64 lsn, const u8 *key, u32 klen, const void *val, u32 vlen,
		  u32 seed)
{
	u32 len = ST_REC_HDR + klen + vlen, space = st_rec_space(klen, vlen);

	put_le32(out + 4, len);
	out[8] = type;
	out[9] = (u8)klen;
	put_le16(out + 10, flags);
	put_le32(out + 12, vlen);
	put_le64(out + 16, lsn);
	memcpy(out + ST_REC_HDR, key, klen);
	if (vlen)
		memcpy(out + ST_REC_HDR + klen, val, vlen);
	memset(out + len, 0, space - len);
	put_le32(out, crc32c(seed, out + 4, len - 4));
	return space;
}

int st_rec_decode(const u8 *p, u32 avail, u32 seed, struct st_rec *r, const char **why)
{
	*why = NULL;
	if (avail < ST_REC_HDR) {
		*why = "short record";
		return -EBADMSG;
	}
	st_rec_fields(p, r);	/* key and val are pointers only: read once checked */
	if (r->len < ST_REC_HDR || r->len > avail)
		*why = "record length past the batch";
	else if ((u64)ST_REC_HDR + r->klen + r->vlen != r->len)
		*why = "record lengths do not add up";
	else if (r->type != ST_REC_PUT && r->type != ST_REC_DEL)
		*why = "unknown record type";
	else if (r->klen == 0 || (r->type == ST_REC_DEL && r->vlen) || (r->flags & ~ST_REC_COPY))
		*why = "malformed record";
	else if (get_le32(p) != crc32c(seed, p + 4, r->len - 4))
		*why = "bad record checksum";
	return *why ? -EBADMSG : 0;
}
