/*
 * UEFI entry. With boot/esp.c (the ESP loader it calls), the only code that
 * talks to firmware: it gathers everything the kernel needs into one struct
 * boot_info, exits boot services and jumps to kernel_main() on a fresh stack. After ExitBootServices nothing here or in
 * the kernel calls firmware again.
 */
#include <efi.h>

#include "boot/esp.h"
#include "boot/fwcfg.h"
#include "boot/seed.h"
#include "boot/smbios.h"
#include "kernel/boot_info.h"
#include "kernel/arch/io.h"
#include "kernel/time/wallclock.h"
#include "lib/string.h"

/* The image's own bounds (linker/vireo.ld), PC-relative: right whether the
 * firmware loaded this PE or the compressed image's stub put it in pages
 * of its own (boot/zstub.c), where the loaded image's ImageBase is the
 * stub's. */
extern char ImageBase[] __attribute__((visibility("hidden")));
extern char __image_end[] __attribute__((visibility("hidden")));

#define MAP_SLACK_DESCS 16	/* room for the map to grow between calls */
#define EXIT_TRIES 8

static EFI_GUID loaded_image_guid = LOADED_IMAGE_PROTOCOL;
static EFI_GUID acpi20_guid = ACPI_20_TABLE_GUID;
static EFI_GUID acpi10_guid = ACPI_TABLE_GUID;
static EFI_GUID gop_guid = EFI_GRAPHICS_OUTPUT_PROTOCOL_GUID;
static EFI_GUID smbios3_guid = SMBIOS3_TABLE_GUID;
static EFI_GUID smbios_guid = SMBIOS_TABLE_GUID;

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

/* SMBIOS type 11 strings (boot/smbios.c): the 3.0 entry point if there is
 * one, else 2.1's. The table stays where firmware put it; only what is
 * vireo's is copied into bi. */
static void efi_smbios(EFI_SYSTEM_TABLE *st, struct boot_info *bi)
{
	u64 addr = 0;
	u32 len = 0;
	int found = -EINVAL;

	for (UINTN pass = 0; pass < 2 && found; pass++)
		for (UINTN i = 0; i < st->NumberOfTableEntries && found; i++) {
			EFI_CONFIGURATION_TABLE *t = &st->ConfigurationTable[i];

			if (efi_guid_eq(&t->VendorGuid, pass ? &smbios_guid : &smbios3_guid) && t->VendorTable)
				found = smbios_entry(t->VendorTable, pass ? 31 : 24, &addr, &len);
		}
	if (!found)
		smbios_collect((const u8 *)(UINTN)addr, len, &bi->smbios);
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

static void efi_set_src(struct boot_info *bi, const char *s)
{
	esp_copy_str(bi->cmdline_src, sizeof bi->cmdline_src, s);
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


/* The firmware's clock (its RTC), for a provisional wall clock until SNTP
 * answers: read here, while runtime services need no virtual map. A
 * failed call or an invalid date leaves rtc_unix_s 0 (no clock). */
static void efi_clock(EFI_SYSTEM_TABLE *st, struct boot_info *bi)
{
	EFI_TIME t;

	if (!st->RuntimeServices || st->RuntimeServices->GetTime(&t, NULL) != EFI_SUCCESS)
		return;
	bi->rtc_tsc = rdtsc();
	bi->rtc_unix_s = wallclock_from_efi(t.Year, t.Month, t.Day, t.Hour, t.Minute, t.Second, (s16)t.TimeZone);
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	EFI_BOOT_SERVICES *bs = st->BootServices;
	EFI_LOADED_IMAGE *li = NULL;
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
	esp_copy_str(bi->stamp_names[0], sizeof bi->stamp_names[0], "efi_main");
	esp_copy_str(bi->stamp_names[1], sizeof bi->stamp_names[1], "exit_boot_services");
	bi->self_base = bi_pages;
	bi->self_size = bi_npages * 4096;
	bi->stack_base = stack_pages;
	bi->stack_size = (BOOT_STACK_PAGES + 1) * 4096ULL;

	bi->image_base = (u64)(UINTN)ImageBase;
	bi->image_size = (u64)(__image_end - ImageBase);
	if (bs->HandleProtocol(image, &loaded_image_guid, (void **)&li) != EFI_SUCCESS)
		li = NULL;
	efi_find_rsdp(st, bi);
	efi_find_fb(bs, bi);
	esp_load(bs, li ? li->DeviceHandle : NULL, bi);	/* BOOT_FILES */
	seed_load(bs, li ? li->DeviceHandle : NULL, bi);	/* cidata, config-2 */
	efi_smbios(st, bi);
	efi_clock(st, bi);

	/* The boot loader's command line and QEMU's fw_cfg one, both kept:
	 * kernel/config.c applies fw_cfg's after it (docs/appliance.md). */
	if (li && efi_cmdline_from_load_options(li, bi) && bi->cmdline[0]) {
		efi_set_src(bi, "loadoptions");
	} else {
		bi->cmdline[0] = '\0';
		efi_set_src(bi, "none");
	}
	bi->fwcfg_len = fwcfg_read_file("opt/vireo/cmdline", bi->fwcfg_cmdline, BOOT_CMDLINE_MAX);
	if (bi->fwcfg_len < 0)
		bi->fwcfg_len = 0;

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
