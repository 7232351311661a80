/* VT-d second-level page tables, the IOVA windows and fault-record decoding
 * (Intel VT-d spec 4.x §3.6, §9.8, §11.4.14). Pure: table pages come from a
 * caller hook, so the host tests build tables in fake memory. */
#ifndef VIREO_VTD_PT_H
#define VIREO_VTD_PT_H

#include "lib/types.h"

#define VTD_PAGE		4096ull
#define VTD_PTE_R		(1ull << 0)
#define VTD_PTE_W		(1ull << 1)
#define VTD_PTE_ADDR		0x000ffffffffff000ull
/* Leaf bits 61:52 are ignored by the unit (§9.8): we keep in them how many
 * in-flight transient buffers use the page. 0 means pinned: mapped for a
 * long-lived buffer (or by more transient ones than the field counts) and
 * kept until vtd_pt_clear. */
#define VTD_PTE_REF_SHIFT	52
#define VTD_PTE_REF_MAX		1023ull
#define VTD_PTE_REF		(VTD_PTE_REF_MAX << VTD_PTE_REF_SHIFT)

/* IOVA windows. A domain never maps an IOVA equal to a physical address:
 * memory a device only reads appears at VTD_WIN_RO + pa (read-only entries),
 * memory it may write at VTD_WIN_RW + pa. Both windows are above every
 * physical address we accept (pa < VTD_WIN_SIZE), so a driver that hands a
 * device a physical address (an identity bug) gets a fault, not a silent
 * success. The same page may sit in both windows with different rights.
 * Chosen for a 39-bit (3-level) address width, the least a unit offers. */
#define VTD_WIN_SIZE		(1ull << 37)	/* 128 GiB of physical memory */
#define VTD_WIN_RO		(1ull << 37)
#define VTD_WIN_RW		(2ull << 37)

struct vtd_pt {
	int levels;		/* 3 (39-bit) or 4 (48-bit) */
	u64 root_pa;
	u64 *root;
	/* A zeroed, 4 KiB aligned table page: its address for software, *pa
	 * for the unit; NULL when out of memory. */
	void *(*alloc)(void *ctx, u64 *pa);
	void (*free)(void *ctx, void *va);
	void *(*va)(void *ctx, u64 pa);	/* a table's software address */
	void *ctx;
	u64 table_pages;	/* including the root */
	u64 mapped;		/* leaf entries present */
};

/* Allocates the root. Returns 0, -EINVAL (levels not 3 or 4), -ENOMEM. */
int vtd_pt_init(struct vtd_pt *pt, int levels);
/* Maps one 4 KiB page iova -> pa with rights (VTD_PTE_R|VTD_PTE_W). An
 * identical entry already there is success with *added false; a different
 * one is -EEXIST. -ERANGE: iova beyond the levels' width or unaligned;
 * -ENOMEM: no table page. */
int vtd_pt_map(struct vtd_pt *pt, u64 iova, u64 pa, u64 rights, bool *added);
/* vtd_pt_map for one transient buffer: a new entry starts with one
 * reference, an entry with references gains one (at VTD_PTE_REF_MAX it is
 * pinned instead), a pinned entry stays pinned. vtd_pt_map on an entry with
 * references pins it. */
int vtd_pt_get(struct vtd_pt *pt, u64 iova, u64 pa, u64 rights, bool *added);
/* Drops one transient reference to the page at iova: the last one clears
 * the entry (*removed true; the caller invalidates the IOTLB). A pinned
 * entry is left alone. -ENOENT: no entry (the domain was cleared since). */
int vtd_pt_put(struct vtd_pt *pt, u64 iova, bool *removed);
/* The leaf entry for iova as the unit reads it (references masked), 0 if
 * none. */
u64 vtd_pt_lookup(const struct vtd_pt *pt, u64 iova);
/* Transient references to the page at iova; 0 when pinned or absent. */
unsigned vtd_pt_refs(const struct vtd_pt *pt, u64 iova);
/* The leaf entry's own address (for cache-line flushes), NULL if no table
 * reaches it. */
u64 *vtd_pt_leaf(const struct vtd_pt *pt, u64 iova);
/* Calls fn for every leaf entry present, in IOVA order, with the entry as
 * the unit reads it (references masked). fn must not change the tables. */
void vtd_pt_walk(const struct vtd_pt *pt, void (*fn)(void *arg, u64 iova, u64 pte), void *arg);
/* Removes every mapping and frees every table page but the root. */
void vtd_pt_clear(struct vtd_pt *pt);
/* Clears and frees the root too. */
void vtd_pt_destroy(struct vtd_pt *pt);

/* The IOVA for [pa, pa+len) in the window for the direction, or 0 when
 * the range is empty, wraps or reaches past VTD_WIN_SIZE. */
u64 vtd_iova(u64 pa, u64 len, bool device_writes);

/* A primary fault record (§11.4.14.1), the two 64-bit halves. */
struct vtd_fault {
	bool valid;		/* F */
	u16 source;		/* requester id: bus << 8 | dev << 3 | fn */
	u8 reason;		/* FR */
	bool read;		/* T: 1 = read request, 0 = write */
	u64 addr;		/* FI: the faulting page */
};
void vtd_fault_decode(u64 lo, u64 hi, struct vtd_fault *f);
/* A short name for a fault reason (Appendix A), "unknown" otherwise. */
const char *vtd_fault_reason(u8 reason);

#endif
