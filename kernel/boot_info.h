/* The one hand-off from boot/ (UEFI: boot/efi_main.c, PVH: boot/pvh.c) to the
 * kernel: plain data, no firmware types. */
#ifndef VIREO_BOOT_INFO_H
#define VIREO_BOOT_INFO_H

#define BOOT_MAX_REGIONS 512
#define BOOT_CMDLINE_MAX 1024
#define BOOT_STACK_PAGES 16
#define BOOT_CFG_MAX 16384	/* EFI/vireo/vireo.cfg: larger files are refused */
#define BOOT_CFG_PATH "EFI/vireo/vireo.cfg"
/* EFI/vireo/site/: at most this many files, this many bytes of them in all,
 * URL paths of at most BOOT_SITE_PATH_MAX - 1 bytes, directories at most
 * BOOT_SITE_DEPTH deep. Over any bound the baked-in site stays. */
#define BOOT_SITE_PATH "EFI/vireo/site"
#define BOOT_SITE_MAX_FILES 256
#define BOOT_SITE_MAX_BYTES (8u << 20)
#define BOOT_SITE_PATH_MAX 256
#define BOOT_SITE_DEPTH 8	/* kernel stack, plus one guard page below it */
/* make TLS=1: the HTTPS certificate chain and key from the ESP, each at most
 * BOOT_TLS_FILE_MAX bytes (net/tls/tls_keys.h's TLS_KEYS_MAX_INPUT): 16
 * pages a file, 32 pages (128 KiB) of EfiLoaderData at most. */
#define BOOT_TLS_CERT_PATH "EFI/vireo/tls/cert.pem"
#define BOOT_TLS_KEY_PATH "EFI/vireo/tls/key.pem"
#define BOOT_TLS_FILE_MAX (64u * 1024)
/* An app's own file on the ESP (apps whose app.mk sets APP_ESP_FILE, e.g.
 * apps/dns's EFI/vireo/dns/zone.bin): at most BOOT_APP_FILE_MAX bytes. The
 * pages for the most are taken, the unused tail given back: 2,048 pages of
 * EfiLoaderData at most while booting. */
#define BOOT_APP_FILE_MAX (8u << 20)

#ifndef __ASSEMBLER__	/* boot/pvh_entry.S reads the numbers above */
#include "kernel/types.h"

enum boot_mem_type {
	BOOT_MEM_FREE,		/* conventional memory */
	BOOT_MEM_BOOT_RECLAIM,	/* boot-services code/data: free once the kernel owns paging */
	BOOT_MEM_LOADER,	/* our image, boot_info, kernel stack, map buffer */
	BOOT_MEM_ACPI_RECLAIM,	/* ACPI tables: keep until parsed (we keep them) */
	BOOT_MEM_ACPI_NVS,
	BOOT_MEM_RUNTIME,	/* UEFI runtime code/data: never touched, kept reserved */
	BOOT_MEM_MMIO,
	BOOT_MEM_RESERVED,	/* anything else, including unusable/persistent */
};

struct boot_region {
	u64 base;
	u64 len;
	u32 type;	/* enum boot_mem_type */
	u32 efi_type;	/* the firmware's own type, for the log */
	u64 attr;	/* EFI_MEMORY_* attribute bits */
};

struct boot_fb {
	u64 base, size;
	u32 width, height, stride, format;	/* format: 0 none, 1 RGBX, 2 BGRX */
};

/* Boot timeline: TSC stamps taken by boot/ (the kernel adds its own). On
 * PVH, efi_main is the 32-bit entry and after_exit the switch to long mode. */
struct boot_stamps {
	u64 efi_main;
	u64 before_exit;
	u64 after_exit;
};

/* One small file read from the ESP: state is an enum boot_cfg_state; on
 * BOOT_CFG_OK, len bytes at base, in EfiLoaderData pages. */
struct boot_file {
	u32 state;
	u32 len;
	u64 base;
	u64 status;	/* BOOT_CFG_ERROR: the EFI status */
};

struct boot_info {
	u64 magic;
#define BOOT_INFO_MAGIC 0x766972656f626f6fULL	/* "vireoboo" */
	struct boot_stamps tsc;
	/* The timeline's names for tsc.efi_main and tsc.after_exit:
	 * "efi_main", "exit_boot_services" (UEFI); "pvh_entry", "long_mode". */
	char stamp_names[2][24];
	u64 rsdp;		/* physical address of the ACPI RSDP, 0 if none */
	u32 rsdp_rev;		/* 2 if found through the ACPI 2.0 GUID */
	u32 exit_tries;		/* ExitBootServices attempts (stale map key retries); 0 on PVH */
	u64 image_base, image_size;
	u64 stack_base;		/* lowest page: the guard page */
	u64 stack_size;		/* including the guard page */
	u64 self_base, self_size;	/* the pages holding this struct */
	struct boot_fb fb;
	char cmdline[BOOT_CMDLINE_MAX];
	char cmdline_src[16];	/* "loadoptions", "fw_cfg", "pvh" or "none" */
	u32 nregions;
	u32 regions_dropped;	/* map entries that did not fit */
	struct boot_region regions[BOOT_MAX_REGIONS];
	/* EFI/vireo/vireo.cfg from the ESP vireo was loaded from (UEFI only). */
	u32 cfg_state;		/* enum boot_cfg_state */
	u32 cfg_len;		/* BOOT_CFG_OK: bytes in cfg */
	u64 cfg_status;		/* BOOT_CFG_ERROR: the EFI status */
	char cfg[BOOT_CFG_MAX];	/* the file's bytes, not NUL-terminated */
	/* EFI/vireo/site/ (UEFI only): site_nfiles struct boot_site_file
	 * entries at site_base, the files' bytes behind them; site_size
	 * bytes in all, in EfiLoaderData pages the kernel never frees. */
	u32 site_state;		/* enum boot_site_state */
	u32 site_nfiles;
	u64 site_base, site_size;
	u64 site_status;	/* BOOT_SITE_ERROR: the EFI status */
	char site_what[BOOT_SITE_PATH_MAX];	/* the path a refusal is about */
	/* BOOT_TLS_CERT_PATH and BOOT_TLS_KEY_PATH (UEFI, make TLS=1 only;
	 * otherwise BOOT_CFG_NONE). */
	struct boot_file tls_cert, tls_key;
	/* BOOT_APP_FILE_MAX: the app's ESP file (UEFI, APP_ESP_FILE only;
	 * otherwise BOOT_CFG_NONE). net/app/api.c hands it to the app. */
	struct boot_file app_file;
};

/* One file of the ESP's site: its URL path ("/index.html") and where its
 * bytes are, relative to the end of the entry table. */
struct boot_site_file {
	char path[BOOT_SITE_PATH_MAX];	/* NUL-terminated */
	u64 off, len;
	u64 mtime;			/* the file's modification time, Unix seconds; 0: none */
};

enum boot_site_state {
	BOOT_SITE_NONE,		/* not looked for (PVH) */
	BOOT_SITE_OK,
	BOOT_SITE_ABSENT,	/* no EFI/vireo/site directory */
	BOOT_SITE_TOO_MANY,	/* over BOOT_SITE_MAX_FILES files */
	BOOT_SITE_TOO_BIG,	/* over BOOT_SITE_MAX_BYTES bytes */
	BOOT_SITE_BAD_NAME,	/* a name outside [A-Za-z0-9._~-], or a path too long or deep */
	BOOT_SITE_NO_MEMORY,
	BOOT_SITE_ERROR,	/* opening or reading failed */
};

enum boot_cfg_state {
	BOOT_CFG_NONE,		/* not looked for (PVH) */
	BOOT_CFG_OK,
	BOOT_CFG_ABSENT,	/* no such file (or no file system protocol) */
	BOOT_CFG_TOO_BIG,	/* over BOOT_CFG_MAX bytes: not used */
	BOOT_CFG_ERROR,		/* opening or reading failed: not used */
};

/* Entered on the kernel stack with interrupts disabled; never returns. */
void kernel_main(struct boot_info *bi) __attribute__((noreturn));
#endif

#endif
