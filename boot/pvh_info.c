/*
 * hvm_start_info -> struct boot_info. Pure: memory is read only through the
 * phys callback, so the host tests feed it hostile start infos and maps.
 *
 * The loader's E820-style map may be unsorted and its entries may overlap.
 * It is rebuilt by a boundary sweep: every entry's start and end cut the
 * address line into pieces, each piece takes the most restrictive type of
 * the entries covering it (reserved > ACPI NVS > ACPI tables > RAM), and
 * equal neighbours are merged. So no byte any entry reserves is ever handed
 * out as RAM. Bound: at most PVH_MAX_ENTRIES entries (QEMU gives about 6),
 * 2 * PVH_MAX_ENTRIES cut points, so the sweep is at most 256 * 128 steps
 * and its scratch (5 KiB) lives on the stack.
 */
#include "boot/pvh_info.h"

#define PVH_MAX_ENTRIES 128
#define PAGE 4096ULL

struct span {
	u64 lo, hi;	/* [lo, hi) */
	u32 prio;	/* 0 RAM, 1 ACPI tables, 2 ACPI NVS, 3 reserved */
	u32 e820;
};

static const u32 prio_type[] = { BOOT_MEM_FREE, BOOT_MEM_ACPI_RECLAIM, BOOT_MEM_ACPI_NVS, BOOT_MEM_RESERVED };

static u32 pvh_info_e820_prio(u32 t)
{
	switch (t) {
	case E820_RAM:
		return 0;
	case E820_ACPI:
		return 1;
	case E820_NVS:
		return 2;
	default:
		return 3;	/* reserved, unusable, and anything unknown */
	}
}

static void pvh_info_sort_u64(u64 *v, u32 n)
{
	u32 i, j;

	for (i = 1; i < n; i++) {
		u64 x = v[i];

		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

static bool pvh_info_push_region(struct boot_info *bi, u64 lo, u64 hi, u32 type, u32 e820)
{
	struct boot_region *last = bi->nregions ? &bi->regions[bi->nregions - 1] : NULL;

	if (hi <= lo)
		return true;
	if (last && last->type == type && last->efi_type == e820 && last->base + last->len == lo) {
		last->len += hi - lo;
		return true;
	}
	if (bi->nregions == BOOT_MAX_REGIONS) {
		bi->regions_dropped++;
		return false;
	}
	bi->regions[bi->nregions++] = (struct boot_region){ .base = lo, .len = hi - lo, .type = type, .efi_type = e820 };
	return true;
}

/* Whole pages of RAM only: a partial page at either end is left out. */
static void pvh_info_trim_ram(struct boot_info *bi)
{
	u32 i, o = 0;

	for (i = 0; i < bi->nregions; i++) {
		struct boot_region r = bi->regions[i];

		if (r.type == BOOT_MEM_FREE) {
			u64 lo = (r.base + PAGE - 1) & ~(PAGE - 1), hi = (r.base + r.len) & ~(PAGE - 1);

			if (lo < r.base || hi <= lo)	/* wrapped, or under a page */
				continue;
			r.base = lo;
			r.len = hi - lo;
		}
		bi->regions[o++] = r;
	}
	bi->nregions = o;
}

/* [lo, hi) out of the one RAM region that holds it, as BOOT_MEM_LOADER. */
static bool pvh_info_carve(struct boot_info *bi, u64 lo, u64 hi)
{
	u32 i, k;

	for (i = 0; i < bi->nregions; i++) {
		struct boot_region r = bi->regions[i];
		struct boot_region parts[3];
		u32 n = 0;

		if (r.type != BOOT_MEM_FREE || lo < r.base || hi > r.base + r.len)
			continue;
		if (lo > r.base)
			parts[n++] = (struct boot_region){ r.base, lo - r.base, BOOT_MEM_FREE, r.efi_type, 0 };
		parts[n++] = (struct boot_region){ lo, hi - lo, BOOT_MEM_LOADER, r.efi_type, 0 };
		if (hi < r.base + r.len)
			parts[n++] = (struct boot_region){ hi, r.base + r.len - hi, BOOT_MEM_FREE, r.efi_type, 0 };
		if (bi->nregions + n - 1 > BOOT_MAX_REGIONS)
			return false;
		for (k = bi->nregions; k > i + 1; k--)
			bi->regions[k - 1 + n - 1] = bi->regions[k - 1];
		for (k = 0; k < n; k++)
			bi->regions[i + k] = parts[k];
		bi->nregions += n - 1;
		return true;
	}
	return false;
}

static void pvh_info_set_src(struct boot_info *bi, const char *s)
{
	u32 i;

	for (i = 0; s[i] && i < sizeof bi->cmdline_src - 1; i++)
		bi->cmdline_src[i] = s[i];
	bi->cmdline_src[i] = '\0';
}

static void pvh_info_read_cmdline(struct boot_info *bi, u64 pa, pvh_phys_fn phys)
{
	u32 i;

	bi->cmdline[0] = '\0';
	pvh_info_set_src(bi, "none");
	if (!pa)
		return;
	for (i = 0; i < BOOT_CMDLINE_MAX - 1; i++) {
		const char *c = pa + i < pa ? NULL : phys(pa + i, 1);

		if (!c || !*c)
			break;
		bi->cmdline[i] = *c;
	}
	bi->cmdline[i] = '\0';	/* longer ones are cut, as on the UEFI path */
	pvh_info_set_src(bi, "pvh");
}

int pvh_fill_boot_info(struct boot_info *bi, u64 si_pa, pvh_phys_fn phys, u64 img_lo, u64 img_hi,
		       const char **why)
{
	struct span in[PVH_MAX_ENTRIES];
	u64 cuts[2 * PVH_MAX_ENTRIES];
	const struct hvm_start_info *si;
	const struct hvm_memmap_entry *map;
	u32 i, k, n = 0, ncuts = 0;

	*why = NULL;
	si = si_pa ? phys(si_pa, sizeof *si) : NULL;
	if (!si) {
		*why = "no start info";
		return -1;
	}
	if (si->magic != HVM_START_MAGIC) {
		*why = "start info magic is wrong";
		return -1;
	}
	if (si->version < 1 || !si->memmap_paddr || !si->memmap_entries) {
		*why = "start info has no memory map (version 0 or empty)";
		return -1;
	}
	if (si->memmap_entries > PVH_MAX_ENTRIES) {
		*why = "memory map has more than 128 entries";
		return -1;
	}
	map = phys(si->memmap_paddr, (u64)si->memmap_entries * sizeof *map);
	if (!map) {
		*why = "memory map is not readable";
		return -1;
	}
	for (i = 0; i < si->memmap_entries; i++) {
		u64 lo = map[i].addr, len = map[i].size;

		if (len == 0)
			continue;
		if (lo + len < lo)	/* wraps: clip at the top of the address space */
			len = ~0ULL - lo;
		in[n] = (struct span){ lo, lo + len, pvh_info_e820_prio(map[i].type), map[i].type };
		cuts[ncuts++] = lo;
		cuts[ncuts++] = lo + len;
		n++;
	}
	pvh_info_sort_u64(cuts, ncuts);

	bi->nregions = 0;
	bi->regions_dropped = 0;
	for (k = 0; k + 1 < ncuts; k++) {
		u64 lo = cuts[k], hi = cuts[k + 1];
		u32 prio = 0, e820 = 0;
		bool covered = false;

		if (hi == lo)
			continue;
		for (i = 0; i < n; i++) {
			if (in[i].lo <= lo && in[i].hi >= hi && (!covered || in[i].prio > prio)) {
				prio = in[i].prio;
				e820 = in[i].e820;
				covered = true;
			}
		}
		if (covered)
			pvh_info_push_region(bi, lo, hi, prio_type[prio], e820);
	}
	pvh_info_trim_ram(bi);
	if (bi->regions_dropped) {
		*why = "memory map does not fit";
		return -1;
	}
	if (img_hi <= img_lo || !pvh_info_carve(bi, img_lo, img_hi)) {
		*why = "kernel image is not inside one RAM region of the memory map";
		return -1;
	}

	pvh_info_read_cmdline(bi, si->cmdline_paddr, phys);
	bi->rsdp = 0;
	bi->rsdp_rev = 0;
	if (si->rsdp_paddr) {
		const u8 *r = phys(si->rsdp_paddr, 20);

		if (r) {
			bi->rsdp = si->rsdp_paddr;
			bi->rsdp_rev = r[15] >= 2 ? 2 : 0;
		}
	}
	return 0;
}
