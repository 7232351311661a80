/* The kept records' format (runtime/keep_rec.h). */
#include "runtime/keep_rec.h"

#include "lib/string.h"

static void keep_le32(u8 *p, u32 v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (u8)(v >> (8 * i));
}

static u32 keep_rd32(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

size_t keep_rec_size(const struct keep_field *f, unsigned n)
{
	size_t len = KEEP_HDR;

	for (unsigned i = 0; i < n; i++)
		len += 4 + f[i].len;
	return len;
}

size_t keep_rec_put(u8 *out, size_t cap, u8 kind, const struct keep_field *f, unsigned n)
{
	size_t off = KEEP_HDR;

	if (n > KEEP_FIELDS_MAX || keep_rec_size(f, n) > cap)
		return 0;
	out[0] = 'V';
	out[1] = 'K';
	out[2] = 1;
	out[3] = kind;
	out[4] = (u8)n;
	for (unsigned i = 0; i < n; i++) {
		if (f[i].len > UINT32_MAX)
			return 0;
		keep_le32(out + off, (u32)f[i].len);
		if (f[i].len)
			memcpy(out + off + 4, f[i].p, f[i].len);
		off += 4 + f[i].len;
	}
	return off;
}

const char *keep_rec_get(const void *buf, size_t len, u8 kind, struct keep_field *f, unsigned n)
{
	const u8 *b = buf;
	size_t off = KEEP_HDR;

	if (len < KEEP_HDR || b[0] != 'V' || b[1] != 'K')
		return "not a kept record";
	if (b[2] != 1)
		return "a record version this build does not read";
	if (b[3] != kind)
		return "a record of another kind";
	if (b[4] != n || n > KEEP_FIELDS_MAX)
		return "a record with another number of fields";
	for (unsigned i = 0; i < n; i++) {
		u32 flen;

		if (len - off < 4)
			return "a record cut short";
		flen = keep_rd32(b + off);
		off += 4;
		if (flen > len - off)
			return "a field longer than the record";
		f[i].p = b + off;
		f[i].len = flen;
		off += flen;
	}
	if (off != len)
		return "bytes after the last field";
	return NULL;
}

void keep_u64_put(u8 out[8], u64 v)
{
	for (unsigned i = 0; i < 8; i++)
		out[i] = (u8)(v >> (8 * i));
}

bool keep_u64_get(const struct keep_field *f, u64 *v)
{
	const u8 *p = f->p;

	if (f->len != 8)
		return false;
	*v = 0;
	for (unsigned i = 0; i < 8; i++)
		*v |= (u64)p[i] << (8 * i);
	return true;
}

bool keep_str_is(const struct keep_field *f, const char *s)
{
	size_t n = strlen(s);

	return f->len == n && (!n || !memcmp(f->p, s, n));
}
