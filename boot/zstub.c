/*
 * The compressed UEFI image's stub (make ZIMAGE=1, the default): the
 * firmware loads this small PE, which carries the kernel's PE as a payload
 * (boot/zimage.h, compressed in boot/lz.h's format by tools/zpack.c),
 * decodes it into pages of its own laid out as the firmware's loader would
 * have laid it out, and calls its entry point with its own image handle
 * and system table. The kernel relocates itself from its RELR table and
 * takes its base from its own PC-relative ImageBase (boot/efi_start.c,
 * efi_main.c), so it runs the same from these pages as loaded directly;
 * its load options and device (the ESP) are the stub's, read through the
 * same image handle. Under Secure Boot the firmware checks the stub's
 * signature, which covers the payload. Shares boot/efi_start.c (RELR)
 * with the kernel; links no other kernel code.
 */
#include <efi.h>

#include "boot/lz.h"
#include "boot/zimage.h"

extern const u8 zpayload[] __attribute__((visibility("hidden")));
extern const u8 zpayload_end[] __attribute__((visibility("hidden")));

/* UEFI 2.10's EFI_MEMORY_ATTRIBUTE_PROTOCOL: firmware that maps newly
 * allocated pages non-executable offers it to lift that. */
static EFI_GUID zstub_memattr_guid = { 0xf4560cf6, 0x40ec, 0x4b4a, { 0xa1, 0x92, 0xbf, 0x1d, 0x57, 0xd0, 0xb1, 0x89 } };
struct zstub_memattr {
	EFI_STATUS (EFIAPI *get)(struct zstub_memattr *self, EFI_PHYSICAL_ADDRESS base, UINT64 len, UINT64 *attr);
	EFI_STATUS (EFIAPI *set)(struct zstub_memattr *self, EFI_PHYSICAL_ADDRESS base, UINT64 len, UINT64 attr);
	EFI_STATUS (EFIAPI *clear)(struct zstub_memattr *self, EFI_PHYSICAL_ADDRESS base, UINT64 len, UINT64 attr);
};
#define ZSTUB_MEMORY_XP 0x4000ULL

typedef EFI_STATUS (EFIAPI *zstub_entry)(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

static EFI_STATUS zstub_fail(EFI_SYSTEM_TABLE *st, CHAR16 *why, EFI_STATUS s)
{
	if (st->ConOut)
		st->ConOut->OutputString(st->ConOut, why);
	return s;
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);
EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	EFI_BOOT_SERVICES *bs = st->BootServices;
	const struct zimage_hdr *h = (const struct zimage_hdr *)zpayload;
	size_t have = (size_t)(zpayload_end - zpayload);
	struct zstub_memattr *ma = NULL;
	EFI_PHYSICAL_ADDRESS base = 0;
	UINTN pages;
	EFI_STATUS s;
	u8 *dst;

	/* The header is the build's own, checked anyway: a bad one stops
	 * here with a message rather than in a jump to nowhere. */
	for (size_t i = 0; i < sizeof ZIMAGE_MAGIC; i++)
		if (have < sizeof *h || h->magic[i] != ZIMAGE_MAGIC[i])
			return zstub_fail(st, L"vireo: zimage: no payload\r\n", EFI_LOAD_ERROR);
	if (h->comp_len != have - sizeof *h || h->raw_len > h->mem_size || h->entry >= h->mem_size)
		return zstub_fail(st, L"vireo: zimage: bad payload header\r\n", EFI_LOAD_ERROR);
	pages = ((UINTN)h->mem_size + 4095) / 4096;
	if (bs->AllocatePages(AllocateAnyPages, EfiLoaderCode, pages, &base) != EFI_SUCCESS)
		return zstub_fail(st, L"vireo: zimage: out of memory\r\n", EFI_OUT_OF_RESOURCES);
	dst = (u8 *)(UINTN)base;
	if (lz_decode(dst, h->raw_len, zpayload + sizeof *h, h->comp_len)) {
		bs->FreePages(base, pages);
		return zstub_fail(st, L"vireo: zimage: payload does not decode\r\n", EFI_LOAD_ERROR);
	}
	for (size_t i = h->raw_len; i < pages * 4096; i++)
		dst[i] = 0;	/* .bss and the sections' tails, as a PE loader leaves them */
	/* Where the firmware offers it (a failure then is one the jump would
	 * meet too: nothing better to do than try). */
	if (bs->LocateProtocol(&zstub_memattr_guid, NULL, (void **)&ma) == EFI_SUCCESS && ma)
		ma->clear(ma, base, pages * 4096, ZSTUB_MEMORY_XP);
	s = ((zstub_entry)(UINTN)(base + h->entry))(image, st);
	/* Back only if the kernel gave up before leaving boot services. */
	bs->FreePages(base, pages);
	return s;
}
