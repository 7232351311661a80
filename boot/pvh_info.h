/*
 * PVH boot (Xen's x86 "HVM direct boot" ABI, which QEMU, Firecracker and
 * Cloud Hypervisor implement): the start-info block the loader leaves in
 * memory and passes in %ebx, and the pure conversion of it into the
 * kernel's struct boot_info. Layout from Xen's public arch-x86/hvm/start_info.h.
 */
#ifndef VIREO_PVH_INFO_H
#define VIREO_PVH_INFO_H

#include "kernel/boot_info.h"

#define HVM_START_MAGIC 0x336ec578u
#define XEN_ELFNOTE_PHYS32_ENTRY 18

struct hvm_start_info {
	u32 magic;
	u32 version;		/* 0: no memory map fields; 1: memmap_* valid */
	u32 flags;
	u32 nr_modules;
	u64 modlist_paddr;
	u64 cmdline_paddr;	/* NUL-terminated ASCII, 0 if none */
	u64 rsdp_paddr;		/* ACPI RSDP, 0 if none */
	u64 memmap_paddr;
	u32 memmap_entries;
	u32 reserved;
};

struct hvm_memmap_entry {
	u64 addr;
	u64 size;
	u32 type;	/* E820: 1 RAM, 2 reserved, 3 ACPI, 4 NVS, 5 unusable */
	u32 reserved;
};

enum { E820_RAM = 1, E820_RESERVED = 2, E820_ACPI = 3, E820_NVS = 4, E820_UNUSABLE = 5 };

/* More entries than this in the loader's map is treated as garbage (QEMU
 * gives a handful); up to BOOT_MAX_REGIONS of them are kept. */
#define PVH_MAX_MEMMAP 4096

/* Reads guest-physical [pa, pa+len): a pointer to it, or NULL where it
 * cannot be read. The kernel passes the identity map; the host tests a
 * window onto a buffer. */
typedef const void *(*pvh_phys_fn)(u64 pa, u64 len);

/*
 * Fills bi's memory map, command line and RSDP from the start info at si_pa.
 * The map is sorted by address; overlaps are resolved so that no byte any
 * entry reserves ends up free; RAM is trimmed to whole pages; the kernel
 * image [img_lo, img_hi) is carved out of RAM as BOOT_MEM_LOADER and must
 * lie in RAM. Returns 0, or -1 with *why naming what is wrong (the start
 * info is unusable: no map, bad magic, the image outside RAM).
 */
int pvh_fill_boot_info(struct boot_info *bi, u64 si_pa, pvh_phys_fn phys, u64 img_lo, u64 img_hi,
		       const char **why);

#endif
