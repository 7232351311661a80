/*
 * The ESP loader: every file and directory kernel/boot_info.h's BOOT_FILES
 * names, read from the volume vireo was loaded from before the firmware
 * hands over, each bounded by its own cap. A file's size is known before a
 * byte is read (its directory entry, or its end position), so one over its
 * cap is refused without reading it, with its size recorded for the
 * kernel's message; the read itself is bounded again, since firmware may
 * report one size and deliver another. A directory is read whole, depth
 * first, into one allocation: dir_max struct boot_dir_entry, then the
 * files' bytes, 8-aligned, at most its cap in all; both caps scale with the
 * memory the firmware has free (boot_dir_caps, kernel/boot_info.h).
 */
#include <efi.h>

#include "boot/esp.h"
#include "kernel/time/wallclock.h"
#include "lib/string.h"

#define ESP_CHUNK 0x100000	/* bytes asked of one Read() */
#define DIR_TABLE_BYTES(f) ((u64)(f)->dir_max * sizeof(struct boot_dir_entry))

static EFI_GUID sfs_guid = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;

/* BOOT_FILES as data: the paths in one struct of char arrays, each entry
 * its offset there (no pointers, so nothing for the loader to relocate). */
#define ESP_PATH_FIELD(id, path, cap, flags) char id[sizeof(path)];
static const struct esp_paths { BOOT_FILES(ESP_PATH_FIELD) } esp_paths = {
#define ESP_PATH(id, path, cap, flags) .id = path,
	BOOT_FILES(ESP_PATH)
};
static const struct esp_want {
	u32 cap;
	u16 path;	/* offset in esp_paths */
	u16 flags;
} esp_wants[BOOT_NFILES] = {
#define ESP_WANT(id, path, cap, flags) [BOOT_FILE_##id] = { cap, offsetof(struct esp_paths, id), flags },
	BOOT_FILES(ESP_WANT)
};

void esp_copy_str(char *dst, size_t n, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i < n - 1; i++)
		dst[i] = s[i];
	dst[i] = '\0';
}

/* The first refusal of an entry wins; a directory's names its path. */
static void esp_fail(struct boot_file *f, u32 state, const char *what, u64 status)
{
	if (f->state != BOOT_FILE_OK)
		return;
	f->state = state;
	f->status = status;
	if (what)
		esp_copy_str(f->what, sizeof f->what, what);
}

u64 esp_read(EFI_FILE_HANDLE fh, u8 *buf, u64 room, EFI_STATUS *s)
{
	u64 got = 0;
	u8 extra;

	/* Read may return less than asked; a zero-byte read is the end. The
	 * loop ends within room / 1 + 1 non-empty reads. */
	for (;;) {
		UINTN want = room - got > ESP_CHUNK ? ESP_CHUNK : (UINTN)(room - got);

		if (want == 0) {	/* full: one byte more says the file is longer */
			want = 1;
			*s = fh->Read(fh, &want, &extra);
			if (*s == EFI_SUCCESS && want != 0)
				*s = EFI_BAD_BUFFER_SIZE;
			break;
		}
		*s = fh->Read(fh, &want, buf + got);
		if (*s != EFI_SUCCESS || want == 0)
			break;
		if (want > room - got) {
			*s = EFI_BAD_BUFFER_SIZE;
			break;
		}
		got += want;
	}
	return got;
}

/* ---- one entry's pages: a file, or every file of a directory ---- */

/* A directory entry with a name as long as any path kept. */
union esp_info {
	EFI_FILE_INFO info;
	u8 raw[offsetof(EFI_FILE_INFO, FileName) + 2 * (BOOT_DIR_PATH_MAX + 1)];
};

struct esp_walk {
	struct boot_file *f;
	struct boot_dir_entry *tab;	/* at the start of the pages */
	u8 *data;			/* cap bytes (behind the table) */
	u64 used;			/* data bytes taken */
};

/* A FAT long name (UTF-16) as a URL path segment, in UTF-8: every
 * character but controls (and '/' or '\\', which no FAT name holds) is
 * kept, so RFC 3986's sub-delims, '@', ':', spaces and any script are
 * served (the request's percent-escapes decode to these bytes). Appends
 * "/name" to path[len], NUL-terminated; returns the new length, or 0 when a
 * character is refused (a control, half a surrogate pair) or the path would
 * not fit BOOT_DIR_PATH_MAX. */
static size_t esp_path_append(char *path, size_t len, const CHAR16 *name, size_t name_max)
{
	size_t i;

	if (len + 1 >= BOOT_DIR_PATH_MAX)
		return 0;
	path[len++] = '/';
	for (i = 0; i < name_max && name[i]; i++) {
		u32 c = name[i];
		u8 u[4];
		size_t n, k;

		if (c < 0x20 || c == 0x7f || c == '/' || c == '\\' || (c >= 0xdc00 && c <= 0xdfff))
			return 0;
		if (c >= 0xd800 && c <= 0xdbff) {	/* a pair: its low half must follow */
			if (i + 1 >= name_max || name[i + 1] < 0xdc00 || name[i + 1] > 0xdfff)
				return 0;
			c = 0x10000 + ((c - 0xd800) << 10) + (name[++i] - 0xdc00u);
		}
		if (c < 0x80) {
			u[0] = (u8)c;
			n = 1;
		} else if (c < 0x800) {
			u[0] = (u8)(0xc0 | c >> 6);
			u[1] = (u8)(0x80 | (c & 0x3f));
			n = 2;
		} else if (c < 0x10000) {
			u[0] = (u8)(0xe0 | c >> 12);
			u[1] = (u8)(0x80 | ((c >> 6) & 0x3f));
			u[2] = (u8)(0x80 | (c & 0x3f));
			n = 3;
		} else {
			u[0] = (u8)(0xf0 | c >> 18);
			u[1] = (u8)(0x80 | ((c >> 12) & 0x3f));
			u[2] = (u8)(0x80 | ((c >> 6) & 0x3f));
			u[3] = (u8)(0x80 | (c & 0x3f));
			n = 4;
		}
		if (len + n >= BOOT_DIR_PATH_MAX)
			return 0;
		for (k = 0; k < n; k++)
			path[len++] = (char)u[k];
	}
	path[len] = '\0';
	return i ? len : 0;
}

/* A name left out: counted, and the first one kept for the warning as
 * dir/name with anything but printable ASCII as '?' (at most what fits). */
static void esp_skip(struct boot_file *f, const char *dir, const CHAR16 *name, size_t name_max)
{
	size_t o = 0, i;

	if (f->skipped++)
		return;
	for (i = 0; dir[i] && o + 2 < sizeof f->what; i++)
		f->what[o++] = (u8)dir[i] < 0x80 ? dir[i] : '?';
	f->what[o++] = '/';
	for (i = 0; i < name_max && name[i] && o + 1 < sizeof f->what; i++)
		f->what[o++] = name[i] >= 0x20 && name[i] < 0x7f ? (char)name[i] : '?';
	f->what[o] = '\0';
}

/* A file's modification time in Unix seconds, 0 if the firmware's is not
 * a valid date (a zone out of range included). FAT keeps local time with no
 * zone (TimeZone unspecified): read as UTC (wallclock_from_efi()). */
static u64 esp_file_mtime(const EFI_TIME *t)
{
	return wallclock_from_efi(t->Year, t->Month, t->Day, t->Hour, t->Minute, t->Second, (s16)t->TimeZone);
}

/* File fh of a directory, info its entry: into the walk's data and table. */
static void esp_file(struct esp_walk *w, EFI_FILE_HANDLE fh, const EFI_FILE_INFO *info, const char *path)
{
	struct boot_file *f = w->f;
	struct boot_dir_entry *e;
	u64 room = f->cap - w->used, got;
	EFI_STATUS s;

	if (f->n == f->dir_max) {
		esp_fail(f, BOOT_FILE_TOO_MANY, path, 0);
		return;
	}
	if (info->FileSize > room) {
		f->len = w->used + info->FileSize;	/* the size seen (so far) */
		esp_fail(f, BOOT_FILE_TOO_BIG, path, 0);
		return;
	}
	got = esp_read(fh, w->data + w->used, room, &s);
	if (s == EFI_SUCCESS && got != info->FileSize)
		s = EFI_BAD_BUFFER_SIZE;	/* not the size its entry said */
	if (s != EFI_SUCCESS) {
		esp_fail(f, got == room ? BOOT_FILE_TOO_BIG : BOOT_FILE_ERROR, path, s);
		return;
	}
	e = &w->tab[f->n++];
	esp_copy_str(e->path, sizeof e->path, path);
	e->off = w->used;
	e->len = got;
	e->mtime = esp_file_mtime(&info->ModificationTime);
	w->used += (got + 7) & ~7ULL;	/* room was checked against got; 8-aligned files */
	if (w->used > f->cap)
		w->used = f->cap;
}

/* One directory: its files, then (depth permitting) its directories.
 * Names starting with '.' are skipped, as mksite.py skips dotfiles; a name
 * that cannot be a path (esp_path_append), or a directory past
 * BOOT_DIR_DEPTH, is left out and counted (esp_skip), the rest read. */
static void esp_dir(struct esp_walk *w, EFI_FILE_HANDLE dir, char *path, size_t len, unsigned depth)
{
	union esp_info buf;

	while (w->f->state == BOOT_FILE_OK) {
		UINTN size = sizeof buf - sizeof(CHAR16);
		size_t name_max, nlen;
		EFI_STATUS s = dir->Read(dir, &size, &buf);

		if (s == EFI_BUFFER_TOO_SMALL) {	/* a name longer than any path we keep */
			esp_fail(w->f, BOOT_FILE_BAD_NAME, path, s);
			return;
		}
		if (s != EFI_SUCCESS) {
			esp_fail(w->f, BOOT_FILE_ERROR, path, s);
			return;
		}
		if (size == 0)
			return;	/* the end of the directory */
		if (size < SIZE_OF_EFI_FILE_INFO || size > sizeof buf - sizeof(CHAR16)) {
			esp_fail(w->f, BOOT_FILE_ERROR, path, EFI_BAD_BUFFER_SIZE);
			return;
		}
		/* The name ends within what was returned, whatever firmware did. */
		name_max = (size - SIZE_OF_EFI_FILE_INFO) / sizeof(CHAR16);
		buf.info.FileName[name_max] = 0;
		if (buf.info.FileName[0] == '.' || buf.info.FileName[0] == 0)
			continue;
		nlen = esp_path_append(path, len, buf.info.FileName, name_max);
		if (!nlen || ((buf.info.Attribute & EFI_FILE_DIRECTORY) && depth + 1 >= BOOT_DIR_DEPTH)) {
			path[len] = '\0';	/* left out; the rest of the site is read */
			esp_skip(w->f, path, buf.info.FileName, name_max);
			continue;
		}
		if (buf.info.Attribute & EFI_FILE_DIRECTORY) {
			EFI_FILE_HANDLE sub = NULL;

			s = dir->Open(dir, &sub, buf.info.FileName, EFI_FILE_MODE_READ, 0);
			if (s != EFI_SUCCESS || !sub) {
				esp_fail(w->f, BOOT_FILE_ERROR, path, s);
				return;
			}
			esp_dir(w, sub, path, nlen, depth + 1);
			sub->Close(sub);
		} else {
			EFI_FILE_HANDLE fh = NULL;

			s = dir->Open(dir, &fh, buf.info.FileName, EFI_FILE_MODE_READ, 0);
			if (s != EFI_SUCCESS || !fh) {
				esp_fail(w->f, BOOT_FILE_ERROR, path, s);
				return;
			}
			esp_file(w, fh, &buf.info, path);
			fh->Close(fh);
		}
		path[len] = '\0';
	}
}

/* ---- one entry of BOOT_FILES ---- */

/* The entry fh names into the pages at mem: its length, f->state left
 * BOOT_FILE_OK, or a refusal. A file's size is not asked for: reading one
 * byte past its cap is how one over it is found (f->len = cap + 1: "at
 * least"). */
static u64 esp_entry(struct boot_file *f, u32 flags, EFI_FILE_HANDLE fh, u8 *mem)
{
	struct esp_walk w = { .f = f, .tab = (struct boot_dir_entry *)mem, .data = mem + DIR_TABLE_BYTES(f) };
	char path[BOOT_DIR_PATH_MAX];
	EFI_STATUS s;
	u64 got;

	if (flags & BOOT_FILE_DIR) {
		path[0] = '\0';
		esp_dir(&w, fh, path, 0, 0);
		return DIR_TABLE_BYTES(f) + w.used;
	}
	got = esp_read(fh, mem, f->cap, &s);
	if (s != EFI_SUCCESS) {
		f->len = got + 1;
		esp_fail(f, got == f->cap ? BOOT_FILE_TOO_BIG : BOOT_FILE_ERROR, NULL, s);
	}
	return got;
}

/* BOOT_ESP_DIR then name into out (NUL-terminated, n bytes at most) and,
 * as the firmware's UCS-2 "\EFI\vireo\x" for "EFI/vireo/x", into
 * out16[n + 1]. */
static void esp_paths_of(char *out, CHAR16 *out16, size_t n, const char *name)
{
	static const char dir[] = BOOT_ESP_DIR;
	size_t i;

	out16[0] = '\\';
	for (i = 0; i + 1 < n; i++) {
		char c = i < sizeof dir - 1 ? dir[i] : name[i - (sizeof dir - 1)];

		if (!c)
			break;
		out[i] = c;
		out16[i + 1] = c == '/' ? '\\' : (CHAR16)c;
	}
	out[i] = '\0';
	out16[i + 1] = 0;
}

/* Bytes of conventional memory the firmware has free now (0 if its map
 * cannot be had): what the directories' caps scale with. */
static u64 esp_free_bytes(EFI_BOOT_SERVICES *bs)
{
	UINTN size = 0, key, dsize = 0, off;
	UINT32 dver;
	u8 *map = NULL;
	u64 free = 0;

	if (bs->GetMemoryMap(&size, NULL, &key, &dsize, &dver) != EFI_BUFFER_TOO_SMALL || !dsize)
		return 0;
	size += 4 * dsize;	/* the pool allocation below may split an entry */
	if (bs->AllocatePool(EfiLoaderData, size, (void **)&map) != EFI_SUCCESS)
		return 0;
	if (bs->GetMemoryMap(&size, (EFI_MEMORY_DESCRIPTOR *)map, &key, &dsize, &dver) == EFI_SUCCESS)
		for (off = 0; off + sizeof(EFI_MEMORY_DESCRIPTOR) <= size; off += dsize) {
			const EFI_MEMORY_DESCRIPTOR *d = (const EFI_MEMORY_DESCRIPTOR *)(map + off);

			if (d->Type == EfiConventionalMemory)
				free += d->NumberOfPages * 4096;
		}
	bs->FreePool(map);
	return free;
}

void esp_load(EFI_BOOT_SERVICES *bs, EFI_HANDLE device, struct boot_info *bi)
{
	EFI_SIMPLE_FILE_SYSTEM_PROTOCOL *fs = NULL;
	EFI_FILE_HANDLE root = NULL;
	u64 dir_bytes;
	u32 dir_files, i;

	if (!device || bs->HandleProtocol(device, &sfs_guid, (void **)&fs) != EFI_SUCCESS || !fs ||
	    fs->OpenVolume(fs, &root) != EFI_SUCCESS)
		root = NULL;	/* every entry BOOT_FILE_ABSENT */
	boot_dir_caps(root ? esp_free_bytes(bs) : 0, &dir_bytes, &dir_files);
	for (i = 0; i < BOOT_NFILES; i++) {
		const struct esp_want *want = &esp_wants[i];
		struct boot_file *f = &bi->files[i];
		bool dir = want->flags & BOOT_FILE_DIR;
		u64 table;
		UINTN pages, used;
		EFI_PHYSICAL_ADDRESS base = 0;
		EFI_FILE_HANDLE fh = NULL;
		CHAR16 path16[sizeof f->path + 1];
		EFI_STATUS s;
		u64 len;

		esp_paths_of(f->path, path16, sizeof f->path, (const char *)&esp_paths + want->path);
		f->cap = dir ? dir_bytes : want->cap;
		f->dir_max = dir ? dir_files : 0;
		table = DIR_TABLE_BYTES(f);
		pages = (table + f->cap + 4095) / 4096;
#ifndef VIREO_TLS
		if (want->flags & BOOT_FILE_TLS)
			continue;	/* BOOT_FILE_NONE: HTTPS is not built in */
#endif
		f->state = BOOT_FILE_ABSENT;
		if (!root)
			continue;
		s = root->Open(root, &fh, path16, EFI_FILE_MODE_READ, 0);
		if (s != EFI_SUCCESS || !fh) {
			if (s != EFI_NOT_FOUND) {
				f->state = BOOT_FILE_ERROR;
				f->status = s;
			}
			continue;
		}
		/* The most the cap allows, the unused tail given back after. */
		if (bs->AllocatePages(AllocateAnyPages, EfiLoaderData, pages, &base) != EFI_SUCCESS) {
			f->state = BOOT_FILE_NO_MEMORY;
			f->status = EFI_OUT_OF_RESOURCES;
			fh->Close(fh);
			continue;
		}
		f->state = BOOT_FILE_OK;
		len = esp_entry(f, want->flags, fh, (u8 *)(UINTN)base);
		fh->Close(fh);
		if (f->state != BOOT_FILE_OK) {
#ifdef VIREO_TLS	/* the only secrets are the TLS key's */
			if (want->flags & BOOT_FILE_SECRET)
				memset((void *)(UINTN)base, 0, pages * 4096);	/* part of a key, maybe */
#endif
			bs->FreePages(base, pages);
			continue;
		}
		used = len / 4096 + 1;	/* at least one page: base stays valid */
		if (used < pages)
			bs->FreePages(base + used * 4096, pages - used);
		f->base = base;
		f->len = len;
	}
	if (root)
		root->Close(root);
}
