/* Memory: physical frames, the kernel's page tables (identity map, W^X),
 * a heap and uncached MMIO mappings (device addresses: kernel/mm/dma.h). */
#ifndef VIREO_MM_H
#define VIREO_MM_H

#include "kernel/boot_info.h"
#include "lib/types.h"

/* Builds frames and page tables from the UEFI map and switches to them;
 * boot-services memory becomes free afterwards. */
void mm_init(struct boot_info *bi);
/* npages zeroed, physically contiguous, identity-mapped pages; NULL if none. */
void *page_alloc(size_t npages);
/* The same, not zeroed: for buffers a device fills before anyone reads them. */
void *page_alloc_raw(size_t npages);
void page_free(void *p, size_t npages);
void *kmalloc(size_t size);
void *kzalloc(size_t size);
void kfree(void *p);
/* Maps [phys, phys+len) uncached (identity) and returns its address, or
 * NULL (logged) if the range is empty, longer than MM_MMIO_MAX, beyond the
 * identity map, or shares a page with RAM or the kernel image. */
void *mmio_map(u64 phys, u64 len);
/* The same checks without the length limit and without mapping: 0 or a
 * negative error (kernel/mm/mm_range.h). For a whole BAR before a window of it
 * is mapped. */
int mmio_check(u64 phys, u64 len);
u64 mm_image_base(void);
/* True if [va, va+len) lies in the image's read-only data (site bodies). */
bool mm_in_rodata(const void *va, size_t len);
bool mm_is_guard(u64 addr);

struct mm_stats {
	u64 usable_bytes;	/* conventional + reclaimed boot-services memory */
	u64 reclaimed_bytes;	/* of which boot services */
	u64 free_frames, total_frames;
	u64 pt_pages;		/* page-table pages */
	u64 heap_in_use, heap_peak, heap_arena;
	u64 image_bytes;
};
void mm_get_stats(struct mm_stats *s);
void mm_print_summary(void);

#endif
