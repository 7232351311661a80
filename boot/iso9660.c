/* A bounded ISO 9660 reader (ECMA-119), with Rock Ridge names (SUSP NM,
 * IEEE P1282) and Joliet: see boot/iso9660.h for what it reads and its
 * bounds. Every length and offset read from the volume is checked before
 * use; nothing here trusts the medium. */
#include "boot/iso9660.h"
#include "lib/byteorder.h"
#include "lib/string.h"

/* Volume descriptor fields (ECMA-119 8.4) */
#define VD_TYPE 0
#define VD_ID 1				/* "CD001" */
#define VD_VOLUME_ID 40			/* 32 bytes */
#define VD_BLOCKS 80			/* both-endian u32: little-endian first */
#define VD_ESCAPES 88			/* supplementary: Joliet's escape sequence */
#define VD_BLOCK_SIZE 128		/* both-endian u16 */
#define VD_ROOT 156			/* the root's directory record, 34 bytes */
#define VD_PRIMARY 1
#define VD_SUPPLEMENTARY 2
#define VD_TERMINATOR 255

/* Directory record fields (ECMA-119 9.1) */
#define DR_LEN 0
#define DR_EXTENT 2
#define DR_SIZE 10
#define DR_FLAGS 25
#define DR_UNIT 26			/* interleaved: file unit size */
#define DR_NAME_LEN 32
#define DR_NAME 33
#define DR_MIN 34			/* the fixed part and a one-byte name */
#define DR_FLAG_DIR 0x02
#define DR_FLAG_MULTI 0x80		/* not the file's last extent */

/* An extent of len bytes at lba lies within the volume. */
static bool iso_in_volume(const struct iso_vol *v, u32 lba, u32 len)
{
	return (u64)lba + ((u64)len + ISO_SECTOR - 1) / ISO_SECTOR <= v->blocks;
}

/* The SUSP entry sig in the system use area of record r (rl bytes), from
 * offset at: a pointer to it and its length in *elen, or NULL. Entries are
 * checked to lie inside the record; a malformed one ends the walk. */
static const u8 *iso_susp_find(const u8 *r, u32 rl, u32 at, const char *sig, u32 *elen)
{
	while (at + 4 <= rl) {
		u32 len = r[at + 2];

		if (len < 4 || at + len > rl)
			return NULL;
		if (r[at] == sig[0] && r[at + 1] == sig[1]) {
			*elen = len;
			return r + at;
		}
		if (r[at] == 'S' && r[at + 1] == 'T')	/* SUSP terminator */
			return NULL;
		at += len;
	}
	return NULL;
}

/* Where record r's system use area starts (after the name and its pad byte). */
static u32 iso_su_start(const u8 *r)
{
	u32 nl = r[DR_NAME_LEN];

	return DR_NAME + nl + ((nl & 1) ? 0 : 1);
}

/* Record r's name as this volume names it, into out[ISO_NAME_MAX + 1]:
 * its length, or -1 when it cannot be one we look for (too long, a
 * character outside ASCII, "." and ".."). rl was checked to hold the name. */
static int iso_name(const struct iso_vol *v, const u8 *r, u32 rl, char *out)
{
	u32 nl = r[DR_NAME_LEN], n = 0, i;
	const u8 *name = r + DR_NAME;

	if (nl == 1 && name[0] <= 1)
		return -1;	/* "." and ".." */
	if (v->names == ISO_NAMES_ROCK_RIDGE) {
		u32 at = iso_su_start(r) + v->skip, elen;
		bool more = true;

		/* NM entries, concatenated while each says CONTINUE (bit 0);
		 * CURRENT/PARENT (bits 1, 2) are never a file's. */
		while (more) {
			const u8 *nm = iso_susp_find(r, rl, at, "NM", &elen);

			if (!nm || elen < 5 || (nm[4] & 6))
				break;	/* no (more) NM: the plain name below, if none was read */
			for (i = 5; i < elen; i++) {
				if (n == ISO_NAME_MAX || nm[i] == 0 || nm[i] > 0x7e)
					return -1;
				out[n++] = (char)nm[i];
			}
			more = nm[4] & 1;
			at = (u32)(nm - r) + elen;
		}
		if (n) {
			out[n] = '\0';
			return (int)n;
		}
	}
	if (v->names == ISO_NAMES_JOLIET) {
		/* UCS-2, big-endian */
		if (nl & 1)
			return -1;
		for (i = 0; i < nl; i += 2) {
			if (name[i] != 0 || name[i + 1] == 0 || name[i + 1] > 0x7e || n == ISO_NAME_MAX)
				return -1;
			out[n++] = (char)name[i + 1];
		}
	} else {
		/* Plain (or Rock Ridge without NM): lowercased, as Linux shows them */
		for (i = 0; i < nl; i++) {
			char c = (char)name[i];

			if (name[i] == 0 || name[i] > 0x7e || n == ISO_NAME_MAX)
				return -1;
			out[n++] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
		}
	}
	/* ";1" (the version) and then a trailing "." (an empty extension) go. */
	for (i = n; i > 0; i--)
		if (out[i - 1] == ';') {
			n = i - 1;
			break;
		}
	if (n && out[n - 1] == '.')
		n--;
	out[n] = '\0';
	return n ? (int)n : -1;
}

/* Checks record r of rl bytes (at most room left in its sector) and reads
 * its extent: 0, or -EBADMSG. */
static int iso_record(const struct iso_vol *v, const u8 *r, u32 room, struct iso_file *f)
{
	u32 rl = r[DR_LEN];

	if (rl < DR_MIN || rl > room || DR_NAME + (u32)r[DR_NAME_LEN] > rl)
		return -EBADMSG;
	f->lba = get_le32(r + DR_EXTENT);
	f->len = get_le32(r + DR_SIZE);
	f->dir = r[DR_FLAGS] & DR_FLAG_DIR;
	return iso_in_volume(v, f->lba, f->len) ? 0 : -EBADMSG;
}

/* Volume identifier: d-characters padded with blanks; kept as ASCII. */
static void iso_label(struct iso_vol *v, const u8 *id)
{
	int n = 32;

	while (n > 0 && (id[n - 1] == ' ' || id[n - 1] == 0))
		n--;
	for (int i = 0; i < n; i++)
		v->label[i] = id[i] >= 0x20 && id[i] <= 0x7e ? (char)id[i] : '?';
	v->label[n] = '\0';
}

int iso_mount(struct iso_vol *v)
{
	struct iso_file root, joliet = { 0 };
	bool primary = false;
	u32 i, elen;
	int err;

	for (i = 0; i < ISO_MAX_VDS; i++) {
		const u8 *d = v->buf;

		err = v->read(v->ctx, ISO_FIRST_VD + i, v->buf);
		if (err)
			return err;
		if (memcmp(d + VD_ID, "CD001", 5) != 0)
			return primary ? -EBADMSG : -EINVAL;
		if (d[VD_TYPE] == VD_TERMINATOR)
			break;
		if (d[VD_TYPE] == VD_PRIMARY && !primary) {
			if (get_le16(d + VD_BLOCK_SIZE) != ISO_SECTOR)
				return -EINVAL;
			v->blocks = get_le32(d + VD_BLOCKS);
			iso_label(v, d + VD_VOLUME_ID);
			if (d[VD_ROOT] != DR_MIN || iso_record(v, d + VD_ROOT, DR_MIN, &root) || !root.dir)
				return -EBADMSG;
			primary = true;
		} else if (d[VD_TYPE] == VD_SUPPLEMENTARY && d[VD_ESCAPES] == '%' && d[VD_ESCAPES + 1] == '/' &&
			   (d[VD_ESCAPES + 2] == '@' || d[VD_ESCAPES + 2] == 'C' || d[VD_ESCAPES + 2] == 'E')) {
			/* Joliet, UCS-2 level 1-3; checked against the volume once
			 * the primary descriptor gave its size (it comes first). */
			if (d[VD_ROOT] != DR_MIN)
				return -EBADMSG;
			joliet.lba = get_le32(d + VD_ROOT + DR_EXTENT);
			joliet.len = get_le32(d + VD_ROOT + DR_SIZE);
			joliet.dir = d[VD_ROOT + DR_FLAGS] & DR_FLAG_DIR;
		}
	}
	if (!primary)
		return -EINVAL;
	v->names = ISO_NAMES_PLAIN;
	v->skip = 0;
	v->root_lba = root.lba;
	v->root_len = root.len;
	/* Rock Ridge: the root's "." record (its first) holds SUSP's SP entry. */
	err = v->read(v->ctx, root.lba, v->buf);
	if (err)
		return err;
	if (v->buf[DR_LEN] >= DR_MIN && v->buf[DR_NAME_LEN] == 1) {
		const u8 *r = v->buf, *sp = iso_susp_find(r, r[DR_LEN], iso_su_start(r), "SP", &elen);

		if (sp && elen >= 7 && sp[4] == 0xbe && sp[5] == 0xef) {
			v->names = ISO_NAMES_ROCK_RIDGE;
			v->skip = sp[6];
			return 0;
		}
	}
	if (joliet.dir && joliet.len && iso_in_volume(v, joliet.lba, joliet.len)) {
		v->names = ISO_NAMES_JOLIET;
		v->root_lba = joliet.lba;
		v->root_len = joliet.len;
	}
	return 0;
}

/* Looks for name (len bytes) in directory dir: 0 with *f (which may be
 * dir itself), or an error. */
static int iso_find(struct iso_vol *v, struct iso_file dir, const char *name, size_t len, struct iso_file *f)
{
	char got[ISO_NAME_MAX + 1];
	u32 s, sectors;

	if (dir.len > ISO_MAX_DIR_BYTES)
		return -EOVERFLOW;
	sectors = (dir.len + ISO_SECTOR - 1) / ISO_SECTOR;
	for (s = 0; s < sectors; s++) {
		u32 end = dir.len - s * ISO_SECTOR, off = 0;
		int err = v->read(v->ctx, dir.lba + s, v->buf);

		if (err)
			return err;
		if (end > ISO_SECTOR)
			end = ISO_SECTOR;
		/* Records never cross a sector: a zero length byte ends this one. */
		while (off < end && v->buf[off + DR_LEN]) {
			const u8 *r = v->buf + off;
			int n;

			err = iso_record(v, r, end - off, f);
			if (err)
				return err;
			n = iso_name(v, r, r[DR_LEN], got);
			if (n == (int)len && !memcmp(got, name, len)) {
				if (r[DR_FLAGS] & DR_FLAG_MULTI || r[DR_UNIT])
					return -ENOTSUP;
				return 0;
			}
			off += r[DR_LEN];
		}
	}
	return -ENOENT;
}

int iso_lookup(struct iso_vol *v, const char *path, struct iso_file *f)
{
	struct iso_file at = { .lba = v->root_lba, .len = v->root_len, .dir = true };
	unsigned depth = 0;

	for (;;) {
		size_t n = 0;
		int err;

		while (path[n] && path[n] != '/')
			n++;
		if (n == 0 || n > ISO_NAME_MAX)
			return -ENOENT;
		if (++depth > ISO_MAX_DEPTH)
			return -EOVERFLOW;
		if (!at.dir)
			return -ENOENT;	/* a file named as a directory */
		err = iso_find(v, at, path, n, &at);
		if (err)
			return err;
		if (!path[n]) {
			*f = at;
			return 0;
		}
		path += n + 1;
	}
}

int iso_read(struct iso_vol *v, const struct iso_file *f, u8 *dst, u32 cap)
{
	u32 done = 0;

	if (f->dir)
		return -EINVAL;
	if (f->len > cap || f->len > 0x7fffffff)
		return -EOVERFLOW;
	if (!iso_in_volume(v, f->lba, f->len))
		return -EBADMSG;
	while (done < f->len) {
		u32 take = f->len - done > ISO_SECTOR ? ISO_SECTOR : f->len - done;
		int err = v->read(v->ctx, f->lba + done / ISO_SECTOR, v->buf);

		if (err)
			return err;
		memcpy(dst + done, v->buf, take);
		done += take;
	}
	return (int)f->len;
}
