/* storage/logfmt.c: the superblock, batch headers and records encode and
 * decode back to the same fields; every single-bit flip of an encoded
 * superblock, header or record, every truncation and every wrong seed is
 * refused; fields re-checksummed to be wrong (the geometry, lengths,
 * types, flags, sequence numbers) are refused with their reason.
 * st_batch_check, which makes the batch's checksum from its records', is
 * held to the plain algorithm (the payload's CRC first, then every
 * record decoded) on random batches with random damage: same result, same
 * reason; and a flip in a record's padding (outside its own CRC) fails
 * the batch's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/byteorder.h"
#include "lib/crc32c.h"
#include "storage/logfmt.h"

#define DISK_SECTORS (64ull << 11)	/* 64 MiB */

static void sb_sample(struct st_super *s)
{
	memset(s, 0, sizeof *s);
	s->version = ST_VERSION;
	s->gen = 7;
	for (unsigned i = 0; i < ST_ID_LEN; i++) {
		s->id[i] = (u8)(i * 3 + 1);
		s->secret[i] = (u8)(0xa0 + i);
	}
	s->created = 1700000000;
	s->sectors = DISK_SECTORS;
	s->unit = 512;
	s->seg_size = 1u << 20;
	s->data_off = 8192;
	s->nseg = 63;
	s->max_record = 64 * 1024;
	strcpy(s->label, "vireo-data");
}

static void test_super_roundtrip(void **state)
{
	struct st_super a, b;
	u8 buf[ST_SB_SIZE];
	const char *why;

	sb_sample(&a);
	st_super_encode(&a, buf);
	assert_int_equal(st_super_decode(buf, DISK_SECTORS, &b, &why), 0);
	assert_null(why);
	assert_memory_equal(&a, &b, sizeof a);
	assert_memory_equal(buf, "VIREO-ST", 8);
	/* Every bit flip is caught (the checksum covers every byte). */
	for (unsigned i = 0; i < ST_SB_SIZE * 8; i += 7) {
		buf[i / 8] ^= (u8)(1u << (i % 8));
		assert_int_equal(st_super_decode(buf, DISK_SECTORS, &b, &why), -EBADMSG);
		assert_non_null(why);
		buf[i / 8] ^= (u8)(1u << (i % 8));
	}
	/* A disk smaller than the store's end (8 KiB + 63 MiB). */
	assert_int_equal(st_super_decode(buf, (8192 + 63 * (1u << 20)) / 512, &b, &why), 0);
	assert_int_equal(st_super_decode(buf, (8192 + 63 * (1u << 20)) / 512 - 1, &b, &why), -EBADMSG);
	assert_string_equal(why, "larger than the disk");
	memset(buf, 0, sizeof buf);
	assert_int_equal(st_super_decode(buf, DISK_SECTORS, &b, &why), -EBADMSG);
	assert_string_equal(why, "bad magic");
}

/* Re-checksums buf after a change so the field checks are reached. */
static void sb_reseal(u8 *buf)
{
	put_le32(buf + ST_SB_SIZE - 4, crc32c(0, buf, ST_SB_SIZE - 4));
}

static void test_super_geometry(void **state)
{
	static const struct {
		unsigned off, width;
		u64 val;
		const char *why;
	} bad[] = {
		{ 8, 4, 2, "unknown version" },
		{ 12, 4, 512, "unknown version" },
		{ 72, 4, 3000, "unit is not a power of two in 512..4096" },
		{ 72, 4, 256, "unit is not a power of two in 512..4096" },
		{ 72, 4, 8192, "unit is not a power of two in 512..4096" },
		{ 76, 4, (1u << 20) + 512, "segment size out of range" },
		{ 76, 4, 32768, "segment size out of range" },
		{ 80, 8, 4096, "data offset out of range" },
		{ 80, 8, 8192 + 100, "data offset out of range" },
		{ 80, 8, 1ull << 41, "data offset out of range" },
		{ 88, 4, 3, "segment count out of range" },
		{ 88, 4, 64, "larger than the disk" },
		{ 88, 4, 0xffffffffu, "segment count out of range" },
		{ 92, 4, 100, "record limit out of range" },
		{ 92, 4, (1u << 19), "record limit out of range" },
		{ 64, 8, 1000, "larger than the disk" },
		{ 127, 1, 'x', "label not terminated" },
		{ 2000, 1, 1, "reserved bytes set" },
	};
	struct st_super a, b;
	u8 buf[ST_SB_SIZE];
	const char *why;

	sb_sample(&a);
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		st_super_encode(&a, buf);
		if (bad[i].width == 8)
			put_le64(buf + bad[i].off, bad[i].val);
		else if (bad[i].width == 4)
			put_le32(buf + bad[i].off, (u32)bad[i].val);
		else
			buf[bad[i].off] = (u8)bad[i].val;
		sb_reseal(buf);
		assert_int_equal(st_super_decode(buf, DISK_SECTORS, &b, &why), -EBADMSG);
		assert_string_equal(why, bad[i].why);
	}
}

static void test_batch_roundtrip(void **state)
{
	struct st_batch a = { .seq = 10, .durable = 9, .seg = 3, .nrec = 2, .bytes = 96, .flags = ST_BATCH_FIRST,
			      .prev_seg = 2, .pcrc = 0xdeadbeef, .prev_first = 5 }, b;
	u8 buf[ST_BATCH_HDR];
	const char *why;
	u32 seed = 0x1234;

	st_batch_encode(&a, seed, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, seed, 3, 512, 4096, &b, &why), 0);
	assert_int_equal(b.seq, 10);
	assert_int_equal(b.durable, 9);
	assert_int_equal(b.nrec, 2);
	assert_int_equal(b.bytes, 96);
	assert_int_equal(b.flags, ST_BATCH_FIRST);
	assert_int_equal(b.prev_seg, 2);
	assert_int_equal(b.prev_first, 5);
	assert_int_equal(b.pcrc, 0xdeadbeef);
	assert_int_equal(b.total, 512);
	assert_int_equal(st_batch_decode(buf, sizeof buf, seed, 3, 4096, 8192, &b, &why), 0);
	assert_int_equal(b.total, 4096);
	/* The seed, the segment, the room, the length read. */
	assert_int_equal(st_batch_decode(buf, sizeof buf, seed + 1, 3, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "bad header checksum");
	assert_int_equal(st_batch_decode(buf, sizeof buf, seed, 4, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "header names another segment");
	assert_int_equal(st_batch_decode(buf, sizeof buf, seed, 3, 512, 511, &b, &why), -EBADMSG);
	assert_int_equal(st_batch_decode(buf, sizeof buf, seed, 3, 512, 159, &b, &why), -EBADMSG);
	assert_string_equal(why, "length past the segment");
	assert_int_equal(st_batch_decode(buf, ST_BATCH_HDR - 1, seed, 3, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "short");
	for (unsigned i = 0; i < ST_BATCH_HDR * 8; i++) {
		buf[i / 8] ^= (u8)(1u << (i % 8));
		assert_int_equal(st_batch_decode(buf, sizeof buf, seed, 3, 512, 4096, &b, &why), -EBADMSG);
		buf[i / 8] ^= (u8)(1u << (i % 8));
	}
}

static void test_batch_fields(void **state)
{
	struct st_batch ok = { .seq = 10, .durable = 9, .seg = 3, .nrec = 2, .bytes = 96 }, a, b;
	u8 buf[ST_BATCH_HDR];
	const char *why;

	a = ok;
	a.durable = 10;
	st_batch_encode(&a, 1, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, 1, 3, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "sequence numbers out of order");
	a = ok;
	a.seq = 0;
	a.durable = 0;
	st_batch_encode(&a, 1, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, 1, 3, 512, 4096, &b, &why), -EBADMSG);
	a = ok;
	a.flags = 2;
	st_batch_encode(&a, 1, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, 1, 3, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "unknown flags");
	a = ok;
	a.bytes = 97;
	st_batch_encode(&a, 1, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, 1, 3, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "length past the segment");
	a = ok;
	a.nrec = 5;	/* 5 records cannot fit 96 bytes */
	st_batch_encode(&a, 1, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, 1, 3, 512, 4096, &b, &why), -EBADMSG);
	a = ok;
	a.bytes = 0xfffffff8u;	/* would wrap a 32-bit sum */
	st_batch_encode(&a, 1, buf);
	assert_int_equal(st_batch_decode(buf, sizeof buf, 1, 3, 512, 4096, &b, &why), -EBADMSG);
	assert_string_equal(why, "length past the segment");
}

static void test_record_roundtrip(void **state)
{
	u8 buf[512], val[100];
	struct st_rec r;
	const char *why;
	u32 n, seed = 99;

	for (unsigned i = 0; i < sizeof val; i++)
		val[i] = (u8)(i * 7);
	memset(buf, 0xee, sizeof buf);
	n = st_rec_encode(buf, ST_REC_PUT, 0, 42, (const u8 *)"alpha", 5, val, 100, seed);
	assert_int_equal(n, st_rec_space(5, 100));
	assert_int_equal(n, 136);	/* 24 + 5 + 100 = 129, to 8 */
	for (unsigned i = 129; i < n; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(buf[n], 0xee);
	assert_int_equal(st_rec_decode(buf, n, seed, &r, &why), 0);
	assert_int_equal(r.type, ST_REC_PUT);
	assert_int_equal(r.klen, 5);
	assert_int_equal(r.vlen, 100);
	assert_int_equal(r.len, 129);
	assert_int_equal(r.lsn, 42);
	assert_memory_equal(r.key, "alpha", 5);
	assert_memory_equal(r.val, val, 100);
	/* Every truncation, every bit flip in the record, another seed. */
	for (u32 k = 0; k < 129; k++)
		assert_int_equal(st_rec_decode(buf, k, seed, &r, &why), -EBADMSG);
	for (unsigned i = 0; i < 129 * 8; i++) {
		buf[i / 8] ^= (u8)(1u << (i % 8));
		assert_int_equal(st_rec_decode(buf, n, seed, &r, &why), -EBADMSG);
		buf[i / 8] ^= (u8)(1u << (i % 8));
	}
	assert_int_equal(st_rec_decode(buf, n, seed ^ 1, &r, &why), -EBADMSG);
	assert_string_equal(why, "bad record checksum");
	/* A delete: no value. */
	n = st_rec_encode(buf, ST_REC_DEL, ST_REC_COPY, 43, (const u8 *)"k", 1, NULL, 0, seed);
	assert_int_equal(n, 32);
	assert_int_equal(st_rec_decode(buf, n, seed, &r, &why), 0);
	assert_int_equal(r.type, ST_REC_DEL);
	assert_int_equal(r.flags, ST_REC_COPY);
	assert_int_equal(r.vlen, 0);
}

/* A record with one field changed and its checksum made right again. */
static int rec_bad(unsigned off, unsigned width, u32 v, const char **why)
{
	u8 buf[64];
	struct st_rec r;
	u32 len;

	st_rec_encode(buf, ST_REC_PUT, 0, 1, (const u8 *)"key", 3, "value", 5, 7);
	if (width == 1)
		buf[off] = (u8)v;
	else if (width == 2)
		put_le16(buf + off, (u16)v);
	else
		put_le32(buf + off, v);
	len = get_le32(buf + 4);
	if (len >= 4 && len <= sizeof buf)
		put_le32(buf, crc32c(7, buf + 4, len - 4));
	return st_rec_decode(buf, sizeof buf, 7, &r, why);
}

static void test_record_fields(void **state)
{
	const char *why;

	assert_int_equal(rec_bad(8, 1, 3, &why), -EBADMSG);
	assert_string_equal(why, "unknown record type");
	assert_int_equal(rec_bad(8, 1, ST_REC_DEL, &why), -EBADMSG);	/* a delete with a value */
	assert_string_equal(why, "malformed record");
	assert_int_equal(rec_bad(9, 1, 0, &why), -EBADMSG);
	assert_string_equal(why, "record lengths do not add up");
	assert_int_equal(rec_bad(10, 2, 4, &why), -EBADMSG);
	assert_string_equal(why, "malformed record");
	assert_int_equal(rec_bad(12, 4, 0xffffffffu, &why), -EBADMSG);
	assert_string_equal(why, "record lengths do not add up");
	assert_int_equal(rec_bad(4, 4, 65, &why), -EBADMSG);
	assert_string_equal(why, "record length past the batch");
	assert_int_equal(rec_bad(4, 4, 3, &why), -EBADMSG);
	assert_string_equal(why, "record length past the batch");
	/* klen 0 with the lengths adding up: an empty key. */
	{
		u8 buf[64];
		struct st_rec r;

		st_rec_encode(buf, ST_REC_PUT, 0, 1, (const u8 *)"key", 3, "value", 5, 7);
		buf[9] = 0;
		put_le32(buf + 12, 8);
		put_le32(buf, crc32c(7, buf + 4, 32 - 4));
		assert_int_equal(st_rec_decode(buf, sizeof buf, 7, &r, &why), -EBADMSG);
		assert_string_equal(why, "malformed record");
	}
}

static void test_batch_check(void **state)
{
	u8 buf[256];
	struct st_batch b = { .nrec = 2 };
	const char *why;
	u32 off = 0;

	off += st_rec_encode(buf + off, ST_REC_PUT, 0, 1, (const u8 *)"a", 1, "xyz", 3, 5);
	off += st_rec_encode(buf + off, ST_REC_DEL, 0, 2, (const u8 *)"bb", 2, NULL, 0, 5);
	b.bytes = off;
	b.pcrc = crc32c(5, buf, off);
	assert_int_equal(st_batch_check(buf, &b, 5, &why), 0);
	b.pcrc ^= 1;
	assert_int_equal(st_batch_check(buf, &b, 5, &why), -EBADMSG);
	assert_string_equal(why, "bad batch checksum");
	b.pcrc ^= 1;
	b.nrec = 3;
	assert_int_equal(st_batch_check(buf, &b, 5, &why), -EBADMSG);
	assert_string_equal(why, "record count does not add up");
	b.nrec = 2;
	b.bytes = off + 8;	/* zero padding past the records: not a record */
	memset(buf + off, 0, 8);
	b.pcrc = crc32c(5, buf, b.bytes);
	assert_int_equal(st_batch_check(buf, &b, 5, &why), -EBADMSG);
	assert_string_equal(why, "short record");
	b.bytes = off;
	buf[26] ^= 1;	/* the value (bytes 28..31 are padding) */
	b.pcrc = crc32c(5, buf, off);
	assert_int_equal(st_batch_check(buf, &b, 5, &why), -EBADMSG);
	assert_string_equal(why, "bad record checksum");
	buf[26] ^= 1;
	buf[29] ^= 1;	/* padding: only the batch's checksum covers it */
	assert_int_equal(st_batch_check(buf, &b, 5, &why), -EBADMSG);
	assert_string_equal(why, "bad batch checksum");
	b.pcrc = crc32c(5, buf, off);
	assert_int_equal(st_batch_check(buf, &b, 5, &why), 0);
}

/* The plain check: the payload's CRC over every byte, then each record. */
static int batch_check_ref(const u8 *p, const struct st_batch *b, u32 seed, const char **why)
{
	u32 off = 0, n = 0;

	if (crc32c(seed, p, b->bytes) != b->pcrc) {
		*why = "bad batch checksum";
		return -EBADMSG;
	}
	while (off < b->bytes) {
		struct st_rec r;

		if (st_rec_decode(p + off, b->bytes - off, seed, &r, why))
			return -EBADMSG;
		off += ALIGN_UP(r.len, 8u);
		n++;
	}
	*why = off != b->bytes || n != b->nrec ? "record count does not add up" : NULL;
	return *why ? -EBADMSG : 0;
}

static u32 rnd32(u64 *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (u32)(*x >> 11);
}

static void test_batch_check_ref(void **state)
{
	static u8 buf[16384];
	u64 x = 99;
	unsigned bad = 0;

	for (unsigned t = 0; t < 20000; t++) {
		struct st_batch b = { 0 };
		u32 seed = rnd32(&x), off = 0, nrec = 1 + rnd32(&x) % 6;
		const char *w1, *w2;
		int r1, r2;

		for (u32 i = 0; i < nrec; i++) {
			u8 key[8], val[2000];
			u32 klen = 1 + rnd32(&x) % 8, vlen = rnd32(&x) % 2000;

			for (u32 k = 0; k < klen; k++)
				key[k] = (u8)rnd32(&x);
			for (u32 k = 0; k < vlen; k++)
				val[k] = (u8)rnd32(&x);
			off += st_rec_encode(buf + off, vlen && rnd32(&x) % 4 ? ST_REC_PUT : ST_REC_DEL, 0, i + 1, key,
					     klen, val, rnd32(&x) % 4 ? 0 : vlen, seed);
		}
		b.bytes = off;
		b.nrec = nrec;
		b.pcrc = crc32c(seed, buf, off);
		switch (rnd32(&x) % 6) {
		case 0:
			break;	/* intact */
		case 1:
			buf[rnd32(&x) % off] ^= (u8)(1u << rnd32(&x) % 8);	/* a flip anywhere */
			break;
		case 2:
			buf[rnd32(&x) % off] ^= (u8)(1u << rnd32(&x) % 8);	/* ... with the batch's CRC made to match */
			b.pcrc = crc32c(seed, buf, off);
			break;
		case 3:
			b.bytes = off - 8 * (1 + rnd32(&x) % (off / 8 - 1));	/* cut short (a torn length) */
			b.pcrc = rnd32(&x) % 2 ? crc32c(seed, buf, b.bytes) : b.pcrc;
			break;
		case 4:
			b.nrec += rnd32(&x) % 2 ? 1 : -1;
			break;
		case 5:
			b.pcrc ^= 1u << rnd32(&x) % 32;
			break;
		}
		r1 = st_batch_check(buf, &b, seed, &w1);
		r2 = batch_check_ref(buf, &b, seed, &w2);
		assert_int_equal(r1, r2);
		if (r2) {
			assert_string_equal(w1, w2);
			bad++;
		}
	}
	assert_true(bad > 10000);	/* most were damaged: the comparison saw both outcomes */
}

static void test_all_zero(void **state)
{
	u8 b[100] = { 0 };

	assert_true(st_all_zero(b, sizeof b));
	b[99] = 1;
	assert_false(st_all_zero(b, sizeof b));
	assert_true(st_all_zero(b, 99));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_super_roundtrip), cmocka_unit_test(test_super_geometry),
		cmocka_unit_test(test_batch_roundtrip), cmocka_unit_test(test_batch_fields),
		cmocka_unit_test(test_record_roundtrip), cmocka_unit_test(test_record_fields),
		cmocka_unit_test(test_batch_check), cmocka_unit_test(test_batch_check_ref),
		cmocka_unit_test(test_all_zero),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
