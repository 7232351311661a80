/*
 * UEFI entry. The only file that talks to firmware: it gathers everything the
 * kernel needs into one struct boot_info, exits boot services and jumps to
 * kernel_main() on a fresh stack. After ExitBootServices nothing here or in
 * the kernel calls firmware again.
 */
#include <efi.h>

#include "boot/fwcfg.h"
#include "kernel/boot_info.h"
#include "kernel/io.h"
#include "kernel/string.h"
#include "kernel/wallclock.h"

#define MAP_SLACK_DESCS 16	/* room for the map to grow between calls */
#define EXIT_TRIES 8

static EFI_GUID loaded_image_guid = LOADED_IMAGE_PROTOCOL;
static EFI_GUID acpi20_guid = ACPI_20_TABLE_GUID;
static EFI_GUID acpi10_guid = ACPI_TABLE_GUID;
static EFI_GUID gop_guid = EFI_GRAPHICS_OUTPUT_PROTOCOL_GUID;
static EFI_GUID sfs_guid = EFI_SIMPLE_FILE_SYSTEM_PROTOCOL_GUID;

static void efi_say(EFI_SYSTEM_TABLE *st, const CHAR16 *msg)
{
	if (st->ConOut)
		st->ConOut->OutputString(st->ConOut, (CHAR16 *)msg);
}

static bool efi_guid_eq(const EFI_GUID *a, const EFI_GUID *b)
{
	const u8 *x = (const u8 *)a, *y = (const u8 *)b;
	size_t i;

	for (i = 0; i < sizeof(EFI_GUID); i++)
		if (x[i] != y[i])
			return false;
	return true;
}

static void efi_find_rsdp(EFI_SYSTEM_TABLE *st, struct boot_info *bi)
{
	UINTN i;

	for (i = 0; i < st->NumberOfTableEntries; i++) {
		EFI_CONFIGURATION_TABLE *t = &st->ConfigurationTable[i];

		if (efi_guid_eq(&t->VendorGuid, &acpi20_guid)) {
			bi->rsdp = (u64)(UINTN)t->VendorTable;
			bi->rsdp_rev = 2;
			return;
		}
		if (efi_guid_eq(&t->VendorGuid, &acpi10_guid) && !bi->rsdp) {
			bi->rsdp = (u64)(UINTN)t->VendorTable;
			bi->rsdp_rev = 0;
		}
	}
}

static void efi_find_fb(EFI_BOOT_SERVICES *bs, struct boot_info *bi)
{
	EFI_GRAPHICS_OUTPUT_PROTOCOL *gop = NULL;

	if (bs->LocateProtocol(&gop_guid, NULL, (void **)&gop) != EFI_SUCCESS || !gop || !gop->Mode ||
	    !gop->Mode->Info)
		return;
	bi->fb.base = gop->Mode->FrameBufferBase;
	bi->fb.size = gop->Mode->FrameBufferSize;
	bi->fb.width = gop->Mode->Info->HorizontalResolution;
	bi->fb.height = gop->Mode->Info->VerticalResolution;
	bi->fb.stride = gop->Mode->Info->PixelsPerScanLine;
	bi->fb.format = gop->Mode->Info->PixelFormat == PixelRedGreenBlueReserved8BitPerColor ? 1 :
			gop->Mode->Info->PixelFormat == PixelBlueGreenRedReserved8BitPerColor ? 2 : 0;
}

static bool efi_ends_with_efi(const char *s, size_t n)
{
	return n >= 4 && s[n - 4] == '.' && (s[n - 3] | 0x20) == 'e' && (s[n - 2] | 0x20) == 'f' &&
	       (s[n - 1] | 0x20) == 'i';
}

/*
 * LoadOptions as GRUB's chainloader, the UEFI shell or an EFI boot entry pass
 * them: UCS-2 text, often starting with the image path. OVMF's auto-created
 * boot entries pass a binary GUID instead, so anything that is not printable
 * text is ignored.
 */
static bool efi_cmdline_from_load_options(const EFI_LOADED_IMAGE *li, struct boot_info *bi)
{
	const CHAR16 *w = li->LoadOptions;
	size_t n = li->LoadOptionsSize / sizeof(CHAR16), i, o = 0, tok;

	if (!w || n == 0 || (li->LoadOptionsSize & 1))
		return false;
	for (i = 0; i < n && w[i]; i++)
		if (w[i] > 0x7e || (w[i] < 0x20 && w[i] != '\t'))
			return false;
	n = i;
	i = 0;
	while (i < n && (w[i] == ' ' || w[i] == '\t'))
		i++;
	/* Skip argv[0] if it is the image path (no '=' and looks like a path). */
	tok = i;
	while (tok < n && w[tok] != ' ' && w[tok] != '\t' && w[tok] != '=')
		tok++;
	if (tok == n || w[tok] != '=') {
		char first[256];
		size_t k, len = tok - i;
		bool path = false;

		for (k = 0; k < len && k < sizeof first; k++) {
			first[k] = (char)w[i + k];
			if (first[k] == '\\' || first[k] == '/')
				path = true;
		}
		if (path || (len <= sizeof first && efi_ends_with_efi(first, len)))
			i = tok;
	}
	while (i < n && (w[i] == ' ' || w[i] == '\t'))
		i++;
	for (; i < n && o < BOOT_CMDLINE_MAX - 1; i++)
		bi->cmdline[o++] = (char)w[i];
	bi->cmdline[o] = '\0';
	return true;
}

static void efi_copy_str(char *dst, size_t n, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i < n - 1; i++)
		dst[i] = s[i];
	dst[i] = '\0';
}

/* Reads all of file f into buf[cap] and one byte more: *len is what was
 * read; the extra byte tells a file of exactly cap bytes from a larger one.
 * Returns BOOT_CFG_OK, BOOT_CFG_TOO_BIG or BOOT_CFG_ERROR (*status). */
static u32 efi_read_bounded(EFI_FILE_HANDLE f, char *buf, size_t cap, u32 *len, u64 *status)
{
	size_t got = 0;
	char extra;

	/* Read may return less than asked; a zero-byte read is the end. The
	 * loop ends within cap + 1 non-empty reads. */
	for (;;) {
		UINTN want = got < cap ? cap - got : 1;
		EFI_STATUS s = f->Read(f, &want, got < cap ? (void *)(buf + got) : (void *)&extra);

		if (s != EFI_SUCCESS) {
			*status = s;
			return BOOT_CFG_ERROR;
		}
		if (want == 0)
			break;
		if (got == cap)
			return BOOT_CFG_TOO_BIG;
		if (want > cap - got) {	/* a firmware that overran its buffer */
			*status = EFI_BAD_BUFFER_SIZE;
			return BOOT_CFG_ERROR;
		}
		got += want;
	}
	*len = (u32)got;
	return BOOT_CFG_OK;
}

/* The root directory of the volume vireo was loaded from, or NULL. */
static EFI_FILE_HANDLE efi_open_boot_volume(EFI_BOOT_SERVICES *bs, const EFI_LOADED_IMAGE *li)
{
	EFI_SIMPLE_FILE_SYSTEM_PROTOCOL *fs = NULL;
	EFI_FILE_HANDLE root = NULL;

	if (!li || !li->DeviceHandle ||
	    bs->HandleProtocol(li->DeviceHandle, &sfs_guid, (void **)&fs) != EFI_SUCCESS || !fs)
		return NULL;
	if (fs->OpenVolume(fs, &root) != EFI_SUCCESS)
		return NULL;
	return root;
}

/* EFI/vireo/vireo.cfg into bi->cfg (bounded by BOOT_CFG_MAX; kernel/config.c
 * parses it). */
static void efi_read_cfg(EFI_FILE_HANDLE root, struct boot_info *bi)
{
	EFI_FILE_HANDLE f = NULL;
	EFI_STATUS s;

	bi->cfg_state = BOOT_CFG_ABSENT;
	if (!root)
		return;
	s = root->Open(root, &f, (CHAR16 *)L"\\EFI\\vireo\\vireo.cfg", EFI_FILE_MODE_READ, 0);
	if (s == EFI_SUCCESS && f) {
		bi->cfg_state = efi_read_bounded(f, bi->cfg, sizeof bi->cfg, &bi->cfg_len, &bi->cfg_status);
		f->Close(f);
	} else if (s != EFI_NOT_FOUND) {
		bi->cfg_state = BOOT_CFG_ERROR;
		bi->cfg_status = s;
	}
}

#ifdef VIREO_TLS
/* One of EFI/vireo/tls/{cert,key}.pem into pages of its own, at most
 * BOOT_TLS_FILE_MAX bytes (the pages are freed again unless the read
 * succeeded). The kernel (net/tls/tls_port.c) parses and checks them. */
#define TLS_FILE_PAGES ((BOOT_TLS_FILE_MAX + 4095) / 4096)

static void efi_read_tls_file(EFI_BOOT_SERVICES *bs, EFI_FILE_HANDLE root, const CHAR16 *path,
			      struct boot_file *out)
{
	EFI_PHYSICAL_ADDRESS base = 0;
	EFI_FILE_HANDLE f = NULL;
	EFI_STATUS s;

	out->state = BOOT_CFG_ABSENT;
	if (!root)
		return;
	s = root->Open(root, &f, (CHAR16 *)path, EFI_FILE_MODE_READ, 0);
	if (s != EFI_SUCCESS || !f) {
		if (s != EFI_NOT_FOUND) {
			out->state = BOOT_CFG_ERROR;
			out->status = s;
		}
		return;
	}
	if (bs->AllocatePages(AllocateAnyPages, EfiLoaderData, TLS_FILE_PAGES, &base) != EFI_SUCCESS) {
		out->state = BOOT_CFG_ERROR;
		out->status = EFI_OUT_OF_RESOURCES;
		f->Close(f);
		return;
	}
	out->state = efi_read_bounded(f, (char *)(UINTN)base, BOOT_TLS_FILE_MAX, &out->len, &out->status);
	f->Close(f);
	if (out->state != BOOT_CFG_OK) {
		memset((void *)(UINTN)base, 0, BOOT_TLS_FILE_MAX);	/* part of a key, maybe */
		bs->FreePages(base, TLS_FILE_PAGES);
		out->len = 0;
		return;
	}
	out->base = base;
}
#endif

#ifdef VIREO_APP_ESP_FILE
/* The app's own file, EFI/vireo/<app>/<file> (its app.mk's APP_ESP_FILE;
 * make compiles this file for that app alone), into pages of its own: room
 * for BOOT_APP_FILE_MAX bytes, the tail beyond the file given back. The
 * app checks the bytes (vireo_esp_file). */
#define APP_FILE_PAGES ((BOOT_APP_FILE_MAX + 4095) / 4096)

static void efi_read_app_file(EFI_BOOT_SERVICES *bs, EFI_FILE_HANDLE root, struct boot_file *out)
{
	EFI_PHYSICAL_ADDRESS base = 0;
	EFI_FILE_HANDLE f = NULL;
	EFI_STATUS s;
	u64 used;

	out->state = BOOT_CFG_ABSENT;
	if (!root)
		return;
	s = root->Open(root, &f, (CHAR16 *)(L"\\EFI\\vireo\\" VIREO_APP_NAME_STR L"\\" VIREO_APP_ESP_FILE),
		       EFI_FILE_MODE_READ, 0);
	if (s != EFI_SUCCESS || !f) {
		if (s != EFI_NOT_FOUND) {
			out->state = BOOT_CFG_ERROR;
			out->status = s;
		}
		return;
	}
	if (bs->AllocatePages(AllocateAnyPages, EfiLoaderData, APP_FILE_PAGES, &base) != EFI_SUCCESS) {
		out->state = BOOT_CFG_ERROR;
		out->status = EFI_OUT_OF_RESOURCES;
		f->Close(f);
		return;
	}
	out->state = efi_read_bounded(f, (char *)(UINTN)base, BOOT_APP_FILE_MAX, &out->len, &out->status);
	f->Close(f);
	used = out->state == BOOT_CFG_OK ? (out->len + 4095ULL) / 4096 : 0;
	if (used < APP_FILE_PAGES)
		bs->FreePages(base + used * 4096, APP_FILE_PAGES - used);
	if (out->state != BOOT_CFG_OK)
		out->len = 0;
	else
		out->base = used ? base : 0;
}
#endif

/* ---- EFI/vireo/site/: every file into memory, bounded (boot_info.h) ---- */

#define SITE_TABLE_BYTES ((u64)BOOT_SITE_MAX_FILES * sizeof(struct boot_site_file))
#define SITE_PAGES ((SITE_TABLE_BYTES + BOOT_SITE_MAX_BYTES + 4095) / 4096)

struct site_walk {
	struct boot_info *bi;
	struct boot_site_file *files;	/* the table at the start of the pages */
	u8 *data;			/* BOOT_SITE_MAX_BYTES behind it */
	u64 used;			/* data bytes taken */
	u32 n;
	u32 state;			/* BOOT_SITE_OK until the first refusal */
};

static void efi_site_fail(struct site_walk *w, u32 state, const char *path, u64 status)
{
	if (w->state != BOOT_SITE_OK)
		return;
	w->state = state;
	w->bi->site_status = status;
	efi_copy_str(w->bi->site_what, sizeof w->bi->site_what, path);
}

/* A FAT long name as a URL path segment: [A-Za-z0-9._~-] only (as
 * tools/mksite.py asks of the baked site), so no path ever needs escaping.
 * Appends "/name" to path[len], NUL-terminated; returns the new length, or
 * 0 when a character is outside the set or the path would not fit. */
static size_t efi_site_append(char *path, size_t len, const CHAR16 *name, size_t name_max)
{
	size_t i;

	if (len + 1 >= BOOT_SITE_PATH_MAX)
		return 0;
	path[len++] = '/';
	for (i = 0; i < name_max && name[i]; i++) {
		CHAR16 c = name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '~' || c == '-'))
			return 0;
		if (len + 1 >= BOOT_SITE_PATH_MAX)
			return 0;
		path[len++] = (char)c;
	}
	path[len] = '\0';
	return i ? len : 0;
}

/* A file's modification time in Unix seconds, 0 if the firmware's is not
 * a valid date. FAT keeps local time with no zone (TimeZone unspecified):
 * read as UTC; a zone given is minutes with Localtime = UTC - TimeZone. */
static u64 efi_file_mtime(const EFI_TIME *t)
{
	u64 s = wallclock_from_civil(t->Year, t->Month, t->Day, t->Hour, t->Minute, t->Second);
	s16 tz = (s16)t->TimeZone;

	if (s && tz >= -1440 && tz <= 1440 && (u64)((s64)s + tz * 60) > 0)
		s = (u64)((s64)s + tz * 60);
	return s;
}

static void efi_site_file(struct site_walk *w, EFI_FILE_HANDLE dir, const EFI_FILE_INFO *info, const char *path)
{
	EFI_FILE_HANDLE f = NULL;
	struct boot_site_file *e;
	u64 room = BOOT_SITE_MAX_BYTES - w->used, got = 0;
	EFI_STATUS s;

	if (w->n == BOOT_SITE_MAX_FILES) {
		efi_site_fail(w, BOOT_SITE_TOO_MANY, path, 0);
		return;
	}
	if (info->FileSize > room) {
		efi_site_fail(w, BOOT_SITE_TOO_BIG, path, 0);
		return;
	}
	s = dir->Open(dir, &f, (CHAR16 *)info->FileName, EFI_FILE_MODE_READ, 0);
	if (s != EFI_SUCCESS || !f) {
		efi_site_fail(w, BOOT_SITE_ERROR, path, s);
		return;
	}
	/* Read what fits; a file that is not the size its entry said (or
	 * a firmware that reports more than asked) is an error. */
	for (;;) {
		UINTN want = room - got > 0x100000 ? 0x100000 : (UINTN)(room - got);
		u8 extra;

		if (want == 0) {
			want = 1;
			s = f->Read(f, &want, &extra);
			if (s == EFI_SUCCESS && want != 0)
				s = EFI_BAD_BUFFER_SIZE;
			break;
		}
		s = f->Read(f, &want, w->data + w->used + got);
		if (s != EFI_SUCCESS || want == 0)
			break;
		if (want > room - got) {
			s = EFI_BAD_BUFFER_SIZE;
			break;
		}
		got += want;
	}
	f->Close(f);
	if (s == EFI_SUCCESS && got != info->FileSize)
		s = EFI_BAD_BUFFER_SIZE;
	if (s != EFI_SUCCESS) {
		efi_site_fail(w, got == room ? BOOT_SITE_TOO_BIG : BOOT_SITE_ERROR, path, s);
		return;
	}
	e = &w->files[w->n++];
	efi_copy_str(e->path, sizeof e->path, path);
	e->off = w->used;
	e->len = got;
	e->mtime = efi_file_mtime(&info->ModificationTime);
	w->used += (got + 7) & ~7ULL;	/* room was checked against got; 8-aligned files */
	if (w->used > BOOT_SITE_MAX_BYTES)
		w->used = BOOT_SITE_MAX_BYTES;
}

/* One directory: its files, then (depth permitting) its directories.
 * Names starting with '.' are skipped, as mksite.py skips dotfiles. */
static void efi_site_dir(struct site_walk *w, EFI_FILE_HANDLE dir, char *path, size_t len, unsigned depth)
{
	union {
		EFI_FILE_INFO info;
		u8 raw[SIZE_OF_EFI_FILE_INFO + 2 * (BOOT_SITE_PATH_MAX + 1)];
	} buf;

	while (w->state == BOOT_SITE_OK) {
		UINTN size = sizeof buf - sizeof(CHAR16);
		size_t name_max, nlen;
		EFI_STATUS s = dir->Read(dir, &size, &buf);

		if (s == EFI_BUFFER_TOO_SMALL) {	/* a name longer than any path we keep */
			efi_site_fail(w, BOOT_SITE_BAD_NAME, path, s);
			return;
		}
		if (s != EFI_SUCCESS) {
			efi_site_fail(w, BOOT_SITE_ERROR, path, s);
			return;
		}
		if (size == 0)
			return;	/* the end of the directory */
		if (size < SIZE_OF_EFI_FILE_INFO || size > sizeof buf - sizeof(CHAR16)) {
			efi_site_fail(w, BOOT_SITE_ERROR, path, EFI_BAD_BUFFER_SIZE);
			return;
		}
		/* The name ends within what was returned, whatever firmware did. */
		name_max = (size - SIZE_OF_EFI_FILE_INFO) / sizeof(CHAR16);
		buf.info.FileName[name_max] = 0;
		if (buf.info.FileName[0] == '.' || buf.info.FileName[0] == 0)
			continue;
		nlen = efi_site_append(path, len, buf.info.FileName, name_max);
		if (!nlen) {
			path[len] = '\0';
			efi_site_fail(w, BOOT_SITE_BAD_NAME, path, 0);
			return;
		}
		if (buf.info.Attribute & EFI_FILE_DIRECTORY) {
			EFI_FILE_HANDLE sub = NULL;

			if (depth + 1 >= BOOT_SITE_DEPTH) {
				efi_site_fail(w, BOOT_SITE_BAD_NAME, path, 0);
				return;
			}
			s = dir->Open(dir, &sub, buf.info.FileName, EFI_FILE_MODE_READ, 0);
			if (s != EFI_SUCCESS || !sub) {
				efi_site_fail(w, BOOT_SITE_ERROR, path, s);
				return;
			}
			efi_site_dir(w, sub, path, nlen, depth + 1);
			sub->Close(sub);
		} else {
			efi_site_file(w, dir, &buf.info, path);
		}
		path[len] = '\0';
	}
}

static void efi_read_site(EFI_BOOT_SERVICES *bs, EFI_FILE_HANDLE root, struct boot_info *bi)
{
	EFI_PHYSICAL_ADDRESS base = 0;
	EFI_FILE_HANDLE dir = NULL;
	struct site_walk w = { .bi = bi, .state = BOOT_SITE_OK };
	char path[BOOT_SITE_PATH_MAX] = "";
	u64 used_pages;
	EFI_STATUS s;

	bi->site_state = BOOT_SITE_ABSENT;
	if (!root)
		return;
	s = root->Open(root, &dir, (CHAR16 *)L"\\EFI\\vireo\\site", EFI_FILE_MODE_READ, 0);
	if (s != EFI_SUCCESS || !dir) {
		if (s != EFI_NOT_FOUND) {
			bi->site_state = BOOT_SITE_ERROR;
			bi->site_status = s;
		}
		return;
	}
	/* The most the bounds allow, the unused tail given back afterwards. */
	if (bs->AllocatePages(AllocateAnyPages, EfiLoaderData, SITE_PAGES, &base) != EFI_SUCCESS) {
		bi->site_state = BOOT_SITE_NO_MEMORY;
		dir->Close(dir);
		return;
	}
	w.files = (struct boot_site_file *)(UINTN)base;
	w.data = (u8 *)(UINTN)base + SITE_TABLE_BYTES;
	efi_site_dir(&w, dir, path, 0, 0);
	dir->Close(dir);
	bi->site_state = w.state;
	if (w.state != BOOT_SITE_OK) {
		bs->FreePages(base, SITE_PAGES);
		return;
	}
	used_pages = (SITE_TABLE_BYTES + w.used + 4095) / 4096;
	if (used_pages < SITE_PAGES)
		bs->FreePages(base + used_pages * 4096, SITE_PAGES - used_pages);
	bi->site_base = base;
	bi->site_size = used_pages * 4096;
	bi->site_nfiles = w.n;
}


static void efi_set_src(struct boot_info *bi, const char *s)
{
	efi_copy_str(bi->cmdline_src, sizeof bi->cmdline_src, s);
}

static u32 efi_classify(u32 efi_type)
{
	switch (efi_type) {
	case EfiConventionalMemory:
		return BOOT_MEM_FREE;
	case EfiBootServicesCode:
	case EfiBootServicesData:
		return BOOT_MEM_BOOT_RECLAIM;
	case EfiLoaderCode:
	case EfiLoaderData:
		return BOOT_MEM_LOADER;
	case EfiACPIReclaimMemory:
		return BOOT_MEM_ACPI_RECLAIM;
	case EfiACPIMemoryNVS:
		return BOOT_MEM_ACPI_NVS;
	case EfiRuntimeServicesCode:
	case EfiRuntimeServicesData:
		return BOOT_MEM_RUNTIME;
	case EfiMemoryMappedIO:
	case EfiMemoryMappedIOPortSpace:
		return BOOT_MEM_MMIO;
	default:
		return BOOT_MEM_RESERVED;
	}
}

/* Pure conversion after exit: merge adjacent entries of the same class. */
static void efi_convert_map(struct boot_info *bi, const u8 *map, UINTN size, UINTN dsize)
{
	UINTN off;

	bi->nregions = 0;
	for (off = 0; off + dsize <= size; off += dsize) {
		const EFI_MEMORY_DESCRIPTOR *d = (const EFI_MEMORY_DESCRIPTOR *)(map + off);
		u32 type = efi_classify(d->Type);
		u64 base = d->PhysicalStart, len = d->NumberOfPages * 4096ULL;
		struct boot_region *last = bi->nregions ? &bi->regions[bi->nregions - 1] : NULL;

		if (len == 0)
			continue;
		if (last && last->type == type && last->efi_type == d->Type && last->attr == d->Attribute &&
		    last->base + last->len == base) {
			last->len += len;
			continue;
		}
		if (bi->nregions == BOOT_MAX_REGIONS) {
			bi->regions_dropped++;
			continue;
		}
		bi->regions[bi->nregions++] = (struct boot_region){
			.base = base, .len = len, .type = type, .efi_type = d->Type, .attr = d->Attribute,
		};
	}
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	EFI_BOOT_SERVICES *bs = st->BootServices;
	EFI_LOADED_IMAGE *li = NULL;
	EFI_FILE_HANDLE esp;
	EFI_PHYSICAL_ADDRESS bi_pages = 0, stack_pages = 0;
	UINTN bi_npages = (sizeof(struct boot_info) + 4095) / 4096;
	UINTN map_size = 0, map_key = 0, dsize = 0, map_cap;
	UINT32 dver = 0;
	u8 *map = NULL;
	struct boot_info *bi;
	EFI_STATUS s;
	u64 t0 = rdtsc();
	u32 tries;

	if (bs->AllocatePages(AllocateAnyPages, EfiLoaderData, bi_npages, &bi_pages) != EFI_SUCCESS ||
	    bs->AllocatePages(AllocateAnyPages, EfiLoaderData, BOOT_STACK_PAGES + 1, &stack_pages) !=
		    EFI_SUCCESS) {
		efi_say(st, L"vireo: boot: out of memory\r\n");
		return EFI_OUT_OF_RESOURCES;
	}
	bi = (struct boot_info *)(UINTN)bi_pages;
	memset(bi, 0, sizeof *bi);
	bi->magic = BOOT_INFO_MAGIC;
	bi->tsc.efi_main = t0;
	efi_copy_str(bi->stamp_names[0], sizeof bi->stamp_names[0], "efi_main");
	efi_copy_str(bi->stamp_names[1], sizeof bi->stamp_names[1], "exit_boot_services");
	bi->self_base = bi_pages;
	bi->self_size = bi_npages * 4096;
	bi->stack_base = stack_pages;
	bi->stack_size = (BOOT_STACK_PAGES + 1) * 4096ULL;

	if (bs->HandleProtocol(image, &loaded_image_guid, (void **)&li) == EFI_SUCCESS && li) {
		bi->image_base = (u64)(UINTN)li->ImageBase;
		bi->image_size = li->ImageSize;
	}
	efi_find_rsdp(st, bi);
	efi_find_fb(bs, bi);
	esp = efi_open_boot_volume(bs, li);
	efi_read_cfg(esp, bi);
	efi_read_site(bs, esp, bi);
#ifdef VIREO_TLS
	efi_read_tls_file(bs, esp, L"\\EFI\\vireo\\tls\\cert.pem", &bi->tls_cert);
	efi_read_tls_file(bs, esp, L"\\EFI\\vireo\\tls\\key.pem", &bi->tls_key);
#endif
#ifdef VIREO_APP_ESP_FILE
	efi_read_app_file(bs, esp, &bi->app_file);
#endif
	if (esp)
		esp->Close(esp);

	if (li && efi_cmdline_from_load_options(li, bi) && bi->cmdline[0])
		efi_set_src(bi, "loadoptions");
	else if (fwcfg_read_file("opt/vireo/cmdline", bi->cmdline, BOOT_CMDLINE_MAX) >= 0)
		efi_set_src(bi, "fw_cfg");
	else {
		bi->cmdline[0] = '\0';
		efi_set_src(bi, "none");
	}

	/* Size the map, then allocate with slack: the allocation itself may
	 * split a region, and nothing may be allocated between the final
	 * GetMemoryMap and ExitBootServices. */
	s = bs->GetMemoryMap(&map_size, NULL, &map_key, &dsize, &dver);
	if (s != EFI_BUFFER_TOO_SMALL || dsize < sizeof(EFI_MEMORY_DESCRIPTOR)) {
		efi_say(st, L"vireo: boot: GetMemoryMap failed\r\n");
		return EFI_LOAD_ERROR;
	}
	map_cap = map_size + MAP_SLACK_DESCS * dsize;
	if (bs->AllocatePool(EfiLoaderData, map_cap, (void **)&map) != EFI_SUCCESS) {
		efi_say(st, L"vireo: boot: out of memory for the memory map\r\n");
		return EFI_OUT_OF_RESOURCES;
	}

	for (tries = 1; tries <= EXIT_TRIES; tries++) {
		map_size = map_cap;
		s = bs->GetMemoryMap(&map_size, (EFI_MEMORY_DESCRIPTOR *)map, &map_key, &dsize, &dver);
		if (s != EFI_SUCCESS)
			break;
		bi->tsc.before_exit = rdtsc();
		s = bs->ExitBootServices(image, map_key);
		if (s == EFI_SUCCESS)
			break;
		/* EFI_INVALID_PARAMETER: the map changed under us; fetch it again. */
	}
	if (s != EFI_SUCCESS) {
		efi_say(st, L"vireo: boot: ExitBootServices failed\r\n");
		return s;
	}
	/* Firmware is gone from here on. */
	bi->tsc.after_exit = rdtsc();
	bi->exit_tries = tries;
	cli();
	efi_convert_map(bi, map, map_size, dsize);

	/* Switch to the kernel stack (its lowest page is the guard) and go. */
	__asm__ __volatile__("mov %0, %%rsp\n\t"
			     "xor %%ebp, %%ebp\n\t"
			     "call *%1\n\t"
			     "ud2"
			     :
			     : "r"(stack_pages + bi->stack_size), "r"(kernel_main), "D"(bi)
			     : "memory");
	__builtin_unreachable();
}
