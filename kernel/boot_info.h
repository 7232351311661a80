/* The one hand-off from boot/ (UEFI: boot/efi_main.c, PVH: boot/pvh.c) to the
 * kernel: plain data, no firmware types. */
#ifndef VIREO_BOOT_INFO_H
#define VIREO_BOOT_INFO_H

#define BOOT_MAX_REGIONS 512
#define BOOT_CMDLINE_MAX 1024
#define BOOT_STACK_PAGES 16

/*
 * Files read from the ESP vireo was loaded from, before the firmware hands
 * over (UEFI only: boot/esp.c; PVH leaves them BOOT_FILE_NONE). One line
 * each: its id (bi->files[BOOT_FILE_<id>]), its path below BOOT_ESP_DIR,
 * its size cap in
 * bytes, and flags: BOOT_FILE_DIR (a directory, read whole: every file in
 * it and below, as a table of struct boot_dir_entry), BOOT_FILE_TLS (only
 * in make TLS=1 builds), BOOT_FILE_SECRET (a refused read is wiped). A file
 * or directory over its cap is not loaded, and the kernel says so with its
 * name, size and cap (config_boot). Adding a file is one line here; its
 * reader takes it from bi->files[].
 */
#define BOOT_ESP_DIR "EFI/vireo/"	/* every path below, and only below it */
#define BOOT_CFG_NAME "vireo.cfg"
#define BOOT_CFG_PATH BOOT_ESP_DIR BOOT_CFG_NAME
#define BOOT_CFG_MAX 16384
#define BOOT_SITE_NAME "site"
#define BOOT_SITE_PATH BOOT_ESP_DIR BOOT_SITE_NAME
/* make TLS=1: the HTTPS certificate chain and key, each at most
 * BOOT_TLS_FILE_MAX bytes (net/tls/tls_keys.h's TLS_KEYS_MAX_INPUT). */
#define BOOT_TLS_CERT_NAME "tls/cert.pem"
#define BOOT_TLS_CERT_PATH BOOT_ESP_DIR BOOT_TLS_CERT_NAME
#define BOOT_TLS_KEY_NAME "tls/key.pem"
#define BOOT_TLS_KEY_PATH BOOT_ESP_DIR BOOT_TLS_KEY_NAME
#define BOOT_TLS_FILE_MAX (64u * 1024)
/* make TLS=1: the TLS clients' CA bundle (PEM), at most BOOT_TLS_CA_MAX
 * bytes (net/tls/tls_keys.h's TLS_CA_MAX_INPUT): preferred over a built-in
 * one (make TLS_CA=). */
#define BOOT_TLS_CA_NAME "tls/ca.pem"
#define BOOT_TLS_CA_PATH BOOT_ESP_DIR BOOT_TLS_CA_NAME
#define BOOT_TLS_CA_MAX (256u * 1024)
/* The app's own files (vireo_esp_file(): apps/dns's zone.bin), read like
 * the site, with the same caps. */
#define BOOT_APP_NAME "app"
#define BOOT_APP_PATH BOOT_ESP_DIR BOOT_APP_NAME
#define BOOT_FILES(X)								\
	X(CFG, BOOT_CFG_NAME, BOOT_CFG_MAX, 0)					\
	X(SITE, BOOT_SITE_NAME, BOOT_DIR_MIN_BYTES, BOOT_FILE_DIR)		\
	X(APP, BOOT_APP_NAME, BOOT_DIR_MIN_BYTES, BOOT_FILE_DIR)		\
	X(TLS_CERT, BOOT_TLS_CERT_NAME, BOOT_TLS_FILE_MAX, BOOT_FILE_TLS)	\
	X(TLS_KEY, BOOT_TLS_KEY_NAME, BOOT_TLS_FILE_MAX, BOOT_FILE_TLS | BOOT_FILE_SECRET)	\
	X(TLS_CA, BOOT_TLS_CA_NAME, BOOT_TLS_CA_MAX, BOOT_FILE_TLS)
#define BOOT_FILE_DIR		1u
#define BOOT_FILE_TLS		2u
#define BOOT_FILE_SECRET	4u
/* A directory: caps that scale with the memory the firmware has free when
 * boot/ reads it (boot_dir_caps below): an eighth of it in bytes, whole
 * MiB, between BOOT_DIR_MIN_BYTES and BOOT_DIR_MAX_BYTES, and a file for
 * every BOOT_DIR_BYTES_PER_FILE of that, between BOOT_DIR_MIN_FILES and
 * BOOT_DIR_MAX_FILES (so 8 MiB and 256 files up to 64 MiB free, 32 MiB and
 * 1,024 files with 256 MiB, 128 MiB and 4,096 with 1 GiB); URL paths of at
 * most BOOT_DIR_PATH_MAX - 1 bytes, each name the FAT long name in UTF-8 (no
 * control character), at most BOOT_DIR_DEPTH levels deep; a name past those
 * is left out and counted (boot_file.skipped). Its entry table (280 bytes a
 * file, under 1% of the bytes) stays with the files. */
#define BOOT_DIR_MIN_BYTES (8ull << 20)
#define BOOT_DIR_MAX_BYTES (1ull << 30)
#define BOOT_DIR_BYTES_PER_FILE (32u << 10)
#define BOOT_DIR_MIN_FILES 256u
#define BOOT_DIR_MAX_FILES 16384u
#define BOOT_DIR_PATH_MAX 256
#define BOOT_DIR_DEPTH 8	/* kernel stack, plus one guard page below it */

#ifndef __ASSEMBLER__	/* boot/pvh_entry.S reads the numbers above */
#include "lib/types.h"

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

#define BOOT_FILE_ID(id, path, cap, flags) BOOT_FILE_##id,
enum boot_file_id { BOOT_FILES(BOOT_FILE_ID) BOOT_NFILES };
#undef BOOT_FILE_ID

/* One entry of BOOT_FILES as boot/ left it. */
struct boot_file {
	char path[48];	/* its path, NUL-terminated (for messages) */
	u32 state;	/* enum boot_file_state */
	u32 n;		/* a directory: its files, n struct boot_dir_entry at base */
	u64 base;	/* BOOT_FILE_OK: the bytes, in EfiLoaderData pages the kernel keeps
			 * (a directory: the entry table, then the files' bytes) */
	u64 len;	/* BOOT_FILE_OK: bytes at base; BOOT_FILE_TOO_BIG: the size seen */
	u64 cap;	/* its cap (BOOT_FILES; a directory's from boot_dir_caps) */
	u32 dir_max;	/* a directory: its file cap, the entries of its table */
	u64 status;	/* BOOT_FILE_ERROR: the EFI status */
	u32 skipped;	/* a directory: names left out (a control character, a
			 * bad UTF-16 pair, a path over 255 bytes or 8 levels) */
	char what[BOOT_DIR_PATH_MAX];	/* a directory's refusal: the path it is about;
					 * BOOT_FILE_OK: the first name skipped (non-ASCII as '?') */
};

/*
 * SMBIOS type 11 OEM strings (boot/smbios.c): the values of the
 * io.systemd.credential[.binary]:vireo.cmdline credentials, in table order,
 * joined by spaces, and what else was there (the kernel says it ignored).
 */
enum boot_smbios_state {
	BOOT_SMBIOS_NONE,	/* no SMBIOS table (or PVH) */
	BOOT_SMBIOS_OK,
	BOOT_SMBIOS_DAMAGED,	/* the walk stopped at a malformed structure */
};

struct boot_smbios {
	u32 state;		/* enum boot_smbios_state */
	u32 strings;		/* type 11 strings seen */
	u32 used;		/* vireo.cmdline credentials taken */
	u32 other_vireo;	/* credentials named vireo.<anything else> */
	u32 refused;		/* vireo.cmdline credentials refused: refused_why */
	char refused_why[48];
	char other_name[48];	/* the first other vireo credential's name */
	char cmdline[BOOT_CMDLINE_MAX];
};

/*
 * A per-instance seed (boot/seed.c): the first volume labelled "cidata"
 * (NoCloud) or "config-2" (an OpenStack config drive), as ISO 9660 on a
 * whole block device or as a FAT file system, other than the ESP vireo
 * came from. Its user data and meta data are read whole, each within its
 * cap, into EfiLoaderData pages the kernel keeps.
 */
#define BOOT_SEED_USER_MAX BOOT_CFG_MAX	/* user-data: vireo.cfg's format and bound */
/* meta-data: only its instance id is read, but a config drive's JSON holds
 * the instance's public keys and devices too (OpenStack's run to a few KiB) */
#define BOOT_SEED_META_MAX 16384
#define BOOT_SEED_MAX_DEVICES 16	/* block devices and file systems looked at */
enum boot_seed_kind { BOOT_SEED_NONE, BOOT_SEED_NOCLOUD, BOOT_SEED_CONFIG_DRIVE };
enum boot_seed_fs { BOOT_SEED_ISO9660 = 1, BOOT_SEED_FAT };
#define BOOT_SEED_HAS_NETWORK 1u	/* network-config / openstack/latest/network_data.json */
#define BOOT_SEED_HAS_VENDOR 2u		/* vendor-data / openstack/latest/vendor_data.json */

struct boot_seed {
	u32 kind;		/* enum boot_seed_kind */
	u32 fs;			/* enum boot_seed_fs */
	u32 found;		/* seeds seen (the first is read) */
	s32 err;		/* a seed whose volume could not be read: the reader's error */
	u32 flags;		/* BOOT_SEED_HAS_* */
	u32 devices;		/* block devices and file systems looked at */
	char label[16];		/* the volume label as written */
	struct boot_file user, meta;	/* BOOT_FILE_OK, _ABSENT, _TOO_BIG, _ERROR, _NO_MEMORY */
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
	/* The firmware's clock, read before ExitBootServices (UEFI GetTime(),
	 * the RTC under it), or the CMOS RTC's on the PVH entry: Unix seconds, 0 if none or not a valid date, and
	 * the TSC when read (kernel/main.c: the provisional wall clock). */
	u64 rtc_unix_s;
	u64 rtc_tsc;
	char rtc_src[16];	/* "the CMOS RTC" (PVH: boot/cmos_rtc.h); "" is UEFI GetTime */
	u64 image_base, image_size;
	u64 stack_base;		/* lowest page: the guard page */
	u64 stack_size;		/* including the guard page */
	u64 self_base, self_size;	/* the pages holding this struct */
	struct boot_fb fb;
	char cmdline[BOOT_CMDLINE_MAX];
	char cmdline_src[16];	/* the boot loader's: "loadoptions", "pvh" or "none" */
	/* QEMU's fw_cfg file opt/vireo/cmdline, whatever the boot loader
	 * passed (applied after it, kernel/config.c); fwcfg_len 0: none. */
	char fwcfg_cmdline[BOOT_CMDLINE_MAX];
	s32 fwcfg_len;		/* its full length (more than BOOT_CMDLINE_MAX - 1: cut) */
	struct boot_smbios smbios;
	struct boot_seed seed;
	u32 nregions;
	u32 regions_dropped;	/* map entries that did not fit */
	struct boot_region regions[BOOT_MAX_REGIONS];
	struct boot_file files[BOOT_NFILES];	/* BOOT_FILES, from the ESP */
};

/* One file of a directory read from the ESP: its URL path ("/index.html")
 * and where its bytes are, relative to the end of the entry table (which
 * holds boot_file.dir_max entries). */
struct boot_dir_entry {
	char path[BOOT_DIR_PATH_MAX];	/* NUL-terminated */
	u64 off, len;
	u64 mtime;			/* the file's modification time, Unix seconds; 0: none */
};

enum boot_file_state {
	BOOT_FILE_NONE,		/* not looked for (PVH, or a TLS file without make TLS=1) */
	BOOT_FILE_OK,
	BOOT_FILE_ABSENT,	/* no such file (or no file system protocol) */
	BOOT_FILE_TOO_BIG,	/* over its cap: len is the size seen */
	BOOT_FILE_TOO_MANY,	/* a directory of over dir_max files */
	BOOT_FILE_BAD_NAME,	/* a name longer than any path kept (the walk cannot step over it) */
	BOOT_FILE_NO_MEMORY,
	BOOT_FILE_ERROR,	/* opening or reading failed: status */
};

/* A directory's caps for free_bytes of free memory (see BOOT_DIR_MIN_BYTES). */
static inline void boot_dir_caps(u64 free_bytes, u64 *bytes, u32 *files)
{
	u64 b = (free_bytes / 8) & ~((1ull << 20) - 1), n;

	b = b < BOOT_DIR_MIN_BYTES ? BOOT_DIR_MIN_BYTES : b > BOOT_DIR_MAX_BYTES ? BOOT_DIR_MAX_BYTES : b;
	n = b / BOOT_DIR_BYTES_PER_FILE;
	*bytes = b;
	*files = (u32)(n < BOOT_DIR_MIN_FILES ? BOOT_DIR_MIN_FILES : n > BOOT_DIR_MAX_FILES ? BOOT_DIR_MAX_FILES : n);
}

/* Entered on the kernel stack with interrupts disabled; never returns. */
void kernel_main(struct boot_info *bi) __attribute__((noreturn));
#endif

#endif
