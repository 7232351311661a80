/*
 * Physical memory and paging. Virtual addresses equal physical ones
 * (identity map), so a device without an IOMMU domain gets physical
 * addresses (dma_phys, kernel/mm/dma.h).
 *   RAM from the UEFI map   RW NX, write-back, 2 MiB pages where aligned
 *   image headers           R  NX
 *   .text                   R  X
 *   .rodata                 R  NX
 *   .data/.bss              RW NX
 *   (the RELR table is in .rodata: boot/efi_start.c applied it before efi_main)
 *   stack guard, page 0     not present
 *   MMIO (mmio_map)         RW NX, uncached; never over RAM or the image,
 *                           at most MM_MMIO_MAX a call (mm_range.h)
 */
#include <arch.h>

#include "kernel/console.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/frames.h"
#include "kernel/mm/heap.h"
#include "kernel/arch/io.h"
#include "kernel/mm/mm.h"
#include "kernel/mm/mm_range.h"
#include "kernel/panic.h"
#include "lib/metrics.h"
#include "lib/string.h"

#define PTE_P (1ULL << 0)
#define PTE_W (1ULL << 1)
#define PTE_PWT (1ULL << 3)
#define PTE_PCD (1ULL << 4)
#define PTE_PS (1ULL << 7)
#define PTE_G (1ULL << 8)
#define PTE_NX (1ULL << 63)
#define PTE_ADDR 0x000ffffffffff000ULL
#define PG_2M (2ULL << 20)

#define PERM_RW (PTE_W | PTE_NX)
#define PERM_RO (PTE_NX)
#define PERM_RX (0)
#define PERM_MMIO (PTE_W | PTE_NX | PTE_PCD | PTE_PWT)

extern char ImageBase[], __text_start[], __text_end[], __rodata_start[], __rodata_end[];
extern char __data_start[], __data_end[], __image_end[];

static struct frames frames;
static u64 *dma_only;		/* one bit per frame: a DMA-only page (dma.h) */
static u64 dma_only_pages;
static struct heap heap;
static u64 *pml4;
static u64 pt_pages;
static u64 guard_lo, guard_hi;
static u64 usable_bytes, reclaimed_bytes;
/* What mm_init mapped as memory (merged runs of the firmware map): an MMIO
 * mapping may never cover it. */
static struct mm_range ram[BOOT_MAX_REGIONS];
static unsigned nram;

static u64 *mm_pt_new(void)
{
	u64 pa = frames_alloc(&frames);

	if (!pa)
		panic("mm: out of memory for page tables");
	memset((void *)pa, 0, PAGE_SIZE);
	pt_pages++;
	return (u64 *)pa;
}

/* The table one level down from entry e, splitting a 2 MiB page if needed. */
static u64 *mm_pt_next(u64 *e, bool split_2m)
{
	u64 *t;
	int i;

	if (*e & PTE_P) {
		if (!(*e & PTE_PS))
			return (u64 *)(*e & PTE_ADDR);
		if (!split_2m)
			return NULL;
		t = mm_pt_new();
		for (i = 0; i < 512; i++)
			t[i] = ((*e & PTE_ADDR) + (u64)i * PAGE_SIZE) | (*e & ~PTE_ADDR & ~PTE_PS);
		*e = (u64)t | PTE_P | PTE_W;
		return t;
	}
	t = mm_pt_new();
	*e = (u64)t | PTE_P | PTE_W;	/* permissions are enforced at the leaf */
	return t;
}

static u64 *mm_pde_for(u64 va)
{
	u64 *pdpt = mm_pt_next(&pml4[(va >> 39) & 511], false);
	u64 *pd = mm_pt_next(&pdpt[(va >> 30) & 511], false);

	return &pd[(va >> 21) & 511];
}

static void mm_map_4k(u64 va, u64 flags, bool present)
{
	u64 *pde = mm_pde_for(va);
	u64 *pt = mm_pt_next(pde, true);

	pt[(va >> 12) & 511] = present ? (va | flags | PTE_P) : 0;
}

/* Identity-maps [lo, hi) with flags, using 2 MiB pages where possible. */
static void mm_map_range(u64 lo, u64 hi, u64 flags)
{
	u64 va;

	lo = ALIGN_DOWN(lo, (u64)PAGE_SIZE);
	hi = ALIGN_UP(hi, (u64)PAGE_SIZE);
	for (va = lo; va < hi;) {
		u64 *pde = mm_pde_for(va);

		if ((va & (PG_2M - 1)) == 0 && hi - va >= PG_2M && (!(*pde & PTE_P) || (*pde & PTE_PS))) {
			*pde = va | flags | PTE_P | PTE_PS;
			va += PG_2M;
		} else {
			mm_map_4k(va, flags, true);
			va += PAGE_SIZE;
		}
	}
}

static void mm_frames_setup(struct boot_info *bi)
{
	u64 hi = 0, need;
	u32 i;
	u64 *bitmap = NULL;

	for (i = 0; i < bi->nregions; i++) {
		struct boot_region *r = &bi->regions[i];

		if (r->type == BOOT_MEM_FREE || r->type == BOOT_MEM_BOOT_RECLAIM || r->type == BOOT_MEM_LOADER)
			hi = MAX(hi, r->base + r->len);
	}
	need = ALIGN_UP((u64)frames_bitmap_bytes(0, hi), (u64)PAGE_SIZE);
	for (i = 0; i < bi->nregions; i++) {
		struct boot_region *r = &bi->regions[i];
		u64 base = ALIGN_UP(r->base, (u64)PAGE_SIZE);

		if (r->type == BOOT_MEM_FREE && base >= 0x100000 && r->base + r->len >= base + 2 * need) {
			bitmap = (u64 *)base;
			break;
		}
	}
	if (!bitmap)
		panic("mm: no room for the frame bitmap (%lu bytes)", need);
	frames_init(&frames, 0, hi, bitmap);
	/* The DMA-only bitmap follows the frame bitmap, the same size. */
	dma_only = bitmap + need / 8;
	memset(dma_only, 0, need);
	for (i = 0; i < bi->nregions; i++) {
		struct boot_region *r = &bi->regions[i];

		if (r->type == BOOT_MEM_FREE) {
			frames_add_free(&frames, r->base, r->len);
			usable_bytes += r->len;
		}
	}
	frames_reserve(&frames, (u64)bitmap, 2 * need);
	/* Below 1 MiB stays untouched: legacy firmware structures live there. */
	frames_reserve(&frames, 0, 0x100000);
}

__cold void mm_init(struct boot_info *bi)
{
	u64 base = (u64)ImageBase;
	u32 i;

	mm_frames_setup(bi);
	pml4 = mm_pt_new();

	/* All RAM the firmware told us about (not MMIO: that is mapped on
	 * demand). Adjacent regions are merged first so most of it gets 2 MiB
	 * pages; the firmware map is sorted by address. */
	for (i = 0; i < bi->nregions;) {
		struct boot_region *r = &bi->regions[i];
		u64 lo = r->base, hi = r->base + r->len;

		if (r->type == BOOT_MEM_MMIO || r->type == BOOT_MEM_RESERVED) {
			i++;
			continue;
		}
		for (i++; i < bi->nregions; i++) {
			struct boot_region *n = &bi->regions[i];

			if (n->base != hi || n->type == BOOT_MEM_MMIO || n->type == BOOT_MEM_RESERVED)
				break;
			hi = n->base + n->len;
		}
		mm_map_range(lo, hi, PERM_RW);
		ram[nram++] = (struct mm_range){ lo, hi };
	}
	/* The image, page by page, W^X. */
	mm_map_range(base, (u64)__text_start, PERM_RO);
	mm_map_range((u64)__text_start, (u64)__text_end, PERM_RX);
	mm_map_range((u64)__text_end, (u64)__rodata_end, PERM_RO);
	mm_map_range((u64)__data_start, (u64)__data_end, PERM_RW);
	mm_map_range((u64)__data_end, (u64)__image_end, PERM_RO);
	/* Not present: page 0 (NULL) and the page below the kernel stack. */
	guard_lo = bi->stack_base;
	guard_hi = bi->stack_base + PAGE_SIZE;
	mm_map_4k(0, 0, false);
	mm_map_4k(guard_lo, 0, false);

	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_NXE);
	write_cr0(read_cr0() | CR0_WP);
	write_cr3((u64)pml4);

	/* Firmware page tables, GDT and pools are ours now. */
	for (i = 0; i < bi->nregions; i++) {
		struct boot_region *r = &bi->regions[i];

		if (r->type == BOOT_MEM_BOOT_RECLAIM) {
			frames_add_free(&frames, r->base, r->len);
			usable_bytes += r->len;
			reclaimed_bytes += r->len;
		}
	}
	heap_init(&heap);
	panic_add_stack(bi->stack_base + PAGE_SIZE, bi->stack_base + bi->stack_size);
}

bool mm_is_guard(u64 addr)
{
	return addr >= guard_lo && addr < guard_hi;
}

u64 mm_image_base(void)
{
	return (u64)ImageBase;
}

bool mm_in_rodata(const void *va, size_t len)
{
	u64 a = (u64)va;

	return a >= (u64)__rodata_start && a < (u64)__rodata_end && len <= (u64)__rodata_end - a;
}

void *page_alloc_raw(size_t npages)
{
	u64 pa = npages == 1 ? frames_alloc(&frames) : frames_alloc_contig(&frames, npages, PAGE_SIZE);

	return (void *)pa;
}

void *page_alloc(size_t npages)
{
	void *p = page_alloc_raw(npages);

	if (p)
		memset(p, 0, npages * PAGE_SIZE);
	return p;
}

void page_free(void *p, size_t npages)
{
	if (p && frames_free(&frames, (u64)p, npages) < 0)
		klog("mm: bad page_free(%p, %zu) ignored", p, npages);
}

__cold static void dma_only_mark(u64 pa, size_t npages, bool on)
{
	u64 i;

	for (i = pa / PAGE_SIZE; i < pa / PAGE_SIZE + npages; i++)
		if (on)
			dma_only[i / 64] |= 1ull << (i % 64);
		else
			dma_only[i / 64] &= ~(1ull << (i % 64));
}

__cold void *dma_pages_alloc(size_t npages)
{
	void *p = page_alloc(npages);

	if (p) {
		dma_only_mark((u64)p, npages, true);
		dma_only_pages += npages;
	}
	return p;
}

__cold void dma_pages_free(void *p, size_t npages)
{
	if (!p)
		return;
	if (!dma_page_only((u64)p)) {
		klog("mm: bad dma_pages_free(%p) ignored", p);
		return;
	}
	dma_only_mark((u64)p, npages, false);
	dma_only_pages -= npages;
	page_free(p, npages);
}

__cold bool dma_page_only(u64 phys)
{
	u64 i = phys / PAGE_SIZE;

	return i < frames.npages && (dma_only[i / 64] >> (i % 64) & 1);
}

#define HEAP_GROW_PAGES 16

void *kmalloc(size_t size)
{
	void *p = heap_alloc(&heap, size, 16);
	size_t pages;
	void *arena;

	if (p || size == 0)
		return p;
	pages = MAX((size_t)HEAP_GROW_PAGES, ALIGN_UP(size + 256, (size_t)PAGE_SIZE) / PAGE_SIZE);
	arena = page_alloc(pages);
	if (!arena)
		return NULL;
	heap_add_arena(&heap, arena, pages * PAGE_SIZE);
	return heap_alloc(&heap, size, 16);
}

void *kzalloc(size_t size)
{
	void *p = kmalloc(size);

	if (p)
		memset(p, 0, size);
	return p;
}

void kfree(void *p)
{
	heap_free(&heap, p);
}

int mmio_check(u64 phys, u64 len)
{
	struct mm_range image = { (u64)ImageBase, (u64)__image_end };

	return mm_range_check_mmio(ram, nram, image, phys, len, 0);
}

void *mmio_map(u64 phys, u64 len)
{
	struct mm_range image = { (u64)ImageBase, (u64)__image_end };
	int err = mm_range_check_mmio(ram, nram, image, phys, len, MM_MMIO_MAX);

	if (err) {
		kprintf("mm: MMIO %#lx+%#lx refused (%d): %s\n", phys, len, err,
			err == -EFAULT ? "overlaps RAM or the kernel" : err == -E2BIG ? "too long" :
			err == -ERANGE ? "beyond the identity map" : "empty or wraps");
		return NULL;
	}
	mm_map_range(phys, phys + len, PERM_MMIO);
	write_cr3(read_cr3());	/* flush: a split 2 MiB page may have changed */
	return (void *)phys;
}

/* The DMA seam's identity (kernel/mm/dma.h). */
dma_addr_t dma_phys(const void *va)
{
	return (dma_addr_t)(u64)va;
}

void mm_get_stats(struct mm_stats *s)
{
	s->usable_bytes = usable_bytes;
	s->reclaimed_bytes = reclaimed_bytes;
	s->free_frames = frames.nfree;
	s->total_frames = frames.ntotal;
	s->pt_pages = pt_pages;
	s->heap_in_use = heap.in_use;
	s->heap_peak = heap.peak;
	s->heap_arena = heap.arena_bytes;
	s->image_bytes = (u64)(__image_end - ImageBase);
}

__cold static void mm_write_metrics(struct metrics_buf *b)
{
	struct mm_stats s;

	mm_get_stats(&s);
	metrics_simple(b, "vireo_mem_usable_bytes", METRICS_GAUGE,
		       "Usable RAM (conventional and reclaimed boot-services memory).",
		       s.usable_bytes);
	metrics_simple(b, "vireo_mem_frames", METRICS_GAUGE,
		       "Page frames managed by the frame allocator.", s.total_frames);
	metrics_simple(b, "vireo_mem_frames_free", METRICS_GAUGE, "Page frames free.",
		       s.free_frames);
	metrics_simple(b, "vireo_mem_page_table_pages", METRICS_GAUGE,
		       "Pages used by the kernel's page tables.", s.pt_pages);
	metrics_simple(b, "vireo_mem_heap_in_use_bytes", METRICS_GAUGE,
		       "Kernel heap bytes in use, block headers included.", s.heap_in_use);
	metrics_simple(b, "vireo_mem_heap_peak_bytes", METRICS_GAUGE,
		       "Highest kernel heap use so far.", s.heap_peak);
	metrics_simple(b, "vireo_mem_heap_arena_bytes", METRICS_GAUGE,
		       "Bytes the kernel heap's arenas hold.", s.heap_arena);
	metrics_simple(b, "vireo_dma_readable_exposed_pages_total", METRICS_COUNTER,
		       "Pages mapped readable for a translated device that were neither DMA-only nor image "
		       "read-only data (expected 0).", dma_ro_exposed());
}
METRICS_SOURCE(mem, mm_write_metrics);

static void mm_kib_mib(const char *label, u64 bytes)
{
	kprintf("%s %lu.%lu MiB", label, bytes >> 20, ((bytes & 0xfffff) * 10) >> 20);
}

void mm_print_summary(void)
{
	struct mm_stats s;

	mm_get_stats(&s);
	mm_kib_mib("mem:", s.usable_bytes);
	kprintf(" usable (%lu KiB reclaimed from boot services),", s.reclaimed_bytes >> 10);
	mm_kib_mib("", s.free_frames * PAGE_SIZE);
	kprintf(" free; image %lu KiB at %#lx, page tables %lu KiB, heap %lu KiB\n", s.image_bytes >> 10,
		mm_image_base(), s.pt_pages * 4, s.heap_arena >> 10);
}
