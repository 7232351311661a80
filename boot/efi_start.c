/*
 * The UEFI image's entry, in place of GNU-EFI's crt0: relocate the image,
 * then call efi_main. ld packs the image's relocations as RELR (Makefile:
 * -z pack-relative-relocs), 192 bytes where RELA took 16 KB, so crt0's RELA
 * relocator has nothing to do; linker/vireo.ld checks that no RELA entry is
 * left and bounds the table with __relr_start/__relr_end.
 */
#include <efi.h>

#include "boot/relr.h"

/* Hidden: reached PC-relatively, never through the (not yet relocated) GOT. */
extern char ImageBase[] __attribute__((visibility("hidden")));
extern const u64 __relr_start[] __attribute__((visibility("hidden")));
extern const u64 __relr_end[] __attribute__((visibility("hidden")));

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st);

/* The firmware calls this with the Microsoft convention; the kernel is
 * built for System V, so GCC saves what the two disagree on. */
__attribute__((ms_abi, used, visibility("default")))
EFI_STATUS _start(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	relr_apply((u64)ImageBase, __relr_start, (size_t)(__relr_end - __relr_start));
	__asm__ volatile("" ::: "memory");	/* nothing relocated is read before */
	return efi_main(image, st);
}

/* An image whose base-relocation directory is empty may be refused by a PE
 * loader; one block of two no-op (IMAGE_REL_BASED_ABSOLUTE) entries keeps it
 * present. RVA 0, block size 12 (8-byte header + 2 x 2 bytes). */
__attribute__((section(".reloc"), used))
static const u32 efi_reloc_block[3] = { 0, 12, 0 };
