/* VT-d second-level page tables and fault records (see vtd_pt.h). */
#include "drivers/iommu/vtd_pt.h"
#include "lib/string.h"
#include <arch.h>

#define VTD_PT_ENTRIES	512
#define VTD_NONLEAF	(VTD_PTE_R | VTD_PTE_W)	/* rights are ANDed down the walk */

int vtd_pt_init(struct vtd_pt *pt, int levels)
{
	if (levels != 3 && levels != 4)
		return -EINVAL;
	pt->levels = levels;
	pt->table_pages = 0;
	pt->mapped = 0;
	pt->root = pt->alloc(pt->ctx, &pt->root_pa);
	if (!pt->root)
		return -ENOMEM;
	pt->table_pages = 1;
	return 0;
}

static unsigned vtd_pt_index(u64 iova, int level)
{
	return (unsigned)((iova >> (12 + 9 * (level - 1))) & (VTD_PT_ENTRIES - 1));
}

static bool vtd_pt_in_range(const struct vtd_pt *pt, u64 iova)
{
	return !(iova & (VTD_PAGE - 1)) && (iova >> (12 + 9 * pt->levels)) == 0;
}

static int vtd_pt_install(struct vtd_pt *pt, u64 iova, u64 pa, u64 rights, bool transient,
			  bool *added)
{
	u64 *t = pt->root, want, refs;
	int level;

	*added = false;
	if (!vtd_pt_in_range(pt, iova) || (pa & ~VTD_PTE_ADDR) || !(rights & VTD_PTE_R) ||
	    (rights & ~(VTD_PTE_R | VTD_PTE_W)))
		return -ERANGE;
	for (level = pt->levels; level > 1; level--) {
		u64 *e = &t[vtd_pt_index(iova, level)];

		if (!(*e & VTD_NONLEAF)) {
			u64 npa;
			void *n = pt->alloc(pt->ctx, &npa);

			if (!n)
				return -ENOMEM;
			pt->table_pages++;
			*e = npa | VTD_NONLEAF;
		}
		t = pt->va(pt->ctx, *e & VTD_PTE_ADDR);
	}
	want = pa | rights;
	t += vtd_pt_index(iova, 1);
	if (*t) {
		if ((*t & ~VTD_PTE_REF) != want)
			return -EEXIST;
		refs = (*t & VTD_PTE_REF) >> VTD_PTE_REF_SHIFT;
		if (refs && (!transient || refs == VTD_PTE_REF_MAX))
			refs = 0;	/* pinned from now on */
		else if (refs)
			refs++;
		*t = want | refs << VTD_PTE_REF_SHIFT;
		return 0;
	}
	*t = want | (transient ? 1ull << VTD_PTE_REF_SHIFT : 0);
	pt->mapped++;
	*added = true;
	return 0;
}

int vtd_pt_map(struct vtd_pt *pt, u64 iova, u64 pa, u64 rights, bool *added)
{
	return vtd_pt_install(pt, iova, pa, rights, false, added);
}

int vtd_pt_get(struct vtd_pt *pt, u64 iova, u64 pa, u64 rights, bool *added)
{
	return vtd_pt_install(pt, iova, pa, rights, true, added);
}

u64 *vtd_pt_leaf(const struct vtd_pt *pt, u64 iova)
{
	u64 *t = pt->root;
	int level;

	if (!t || !vtd_pt_in_range(pt, iova & ~(VTD_PAGE - 1)))
		return NULL;
	for (level = pt->levels; level > 1; level--) {
		u64 e = t[vtd_pt_index(iova, level)];

		if (!(e & VTD_NONLEAF))
			return NULL;
		t = pt->va(pt->ctx, e & VTD_PTE_ADDR);
	}
	return &t[vtd_pt_index(iova, 1)];
}

int vtd_pt_put(struct vtd_pt *pt, u64 iova, bool *removed)
{
	u64 *e = vtd_pt_leaf(pt, iova), refs;

	*removed = false;
	if (!e || !*e)
		return -ENOENT;
	refs = (*e & VTD_PTE_REF) >> VTD_PTE_REF_SHIFT;
	if (!refs)
		return 0;	/* pinned */
	if (--refs) {
		*e = (*e & ~VTD_PTE_REF) | refs << VTD_PTE_REF_SHIFT;
		return 0;
	}
	*e = 0;
	pt->mapped--;
	*removed = true;
	return 0;
}

unsigned vtd_pt_refs(const struct vtd_pt *pt, u64 iova)
{
	const u64 *e = vtd_pt_leaf(pt, iova);

	return e ? (unsigned)((*e & VTD_PTE_REF) >> VTD_PTE_REF_SHIFT) : 0;
}

u64 vtd_pt_lookup(const struct vtd_pt *pt, u64 iova)
{
	const u64 *e = vtd_pt_leaf(pt, iova);

	return e ? *e & ~VTD_PTE_REF : 0;
}

__cold static void vtd_pt_walk_level(const struct vtd_pt *pt, const u64 *t, int level, u64 base,
			      void (*fn)(void *arg, u64 iova, u64 pte), void *arg)
{
	unsigned i;

	for (i = 0; i < VTD_PT_ENTRIES; i++) {
		u64 iova = base | (u64)i << (12 + 9 * (level - 1));

		if (!t[i])
			continue;
		if (level > 1)
			vtd_pt_walk_level(pt, pt->va(pt->ctx, t[i] & VTD_PTE_ADDR), level - 1, iova, fn, arg);
		else
			fn(arg, iova, t[i] & ~VTD_PTE_REF);
	}
}

__cold void vtd_pt_walk(const struct vtd_pt *pt, void (*fn)(void *arg, u64 iova, u64 pte), void *arg)
{
	if (pt->root)
		vtd_pt_walk_level(pt, pt->root, pt->levels, 0, fn, arg);
}

static void vtd_pt_free_level(struct vtd_pt *pt, u64 *t, int level)
{
	unsigned i;

	for (i = 0; i < VTD_PT_ENTRIES; i++) {
		if (!t[i])
			continue;
		if (level > 1) {
			u64 *c = pt->va(pt->ctx, t[i] & VTD_PTE_ADDR);

			vtd_pt_free_level(pt, c, level - 1);
			pt->free(pt->ctx, c);
			pt->table_pages--;
		} else {
			pt->mapped--;
		}
		t[i] = 0;
	}
}

void vtd_pt_clear(struct vtd_pt *pt)
{
	if (pt->root)
		vtd_pt_free_level(pt, pt->root, pt->levels);
}

void vtd_pt_destroy(struct vtd_pt *pt)
{
	if (!pt->root)
		return;
	vtd_pt_clear(pt);
	pt->free(pt->ctx, pt->root);
	pt->root = NULL;
	pt->table_pages = 0;
}

u64 vtd_iova(u64 pa, u64 len, bool device_writes)
{
	if (!len || pa + len < pa || pa + len > VTD_WIN_SIZE)
		return 0;
	return (device_writes ? VTD_WIN_RW : VTD_WIN_RO) + pa;
}

void vtd_fault_decode(u64 lo, u64 hi, struct vtd_fault *f)
{
	f->addr = lo & ~(VTD_PAGE - 1);
	f->source = (u16)hi;
	f->reason = (u8)(hi >> 32);
	f->read = (hi >> 62) & 1;
	f->valid = (hi >> 63) & 1;
}

const char *vtd_fault_reason(u8 reason)
{
	switch (reason) {
	case 0x1: return "root entry not present";
	case 0x2: return "context entry not present";
	case 0x3: return "invalid context entry";
	case 0x4: return "address beyond the guest address width";
	case 0x5: return "write to a page without write permission";
	case 0x6: return "read from a page without read permission";
	case 0x7: return "next-level table address invalid";
	case 0x8: return "root table address invalid";
	case 0x9: return "context table address invalid";
	case 0xa: return "reserved bit set in a root entry";
	case 0xb: return "reserved bit set in a context entry";
	case 0xc: return "reserved bit set in a page-table entry";
	case 0xd: return "translation type blocked";
	/* interrupt remapping (§7.1.3, Appendix A) */
	case 0x20: return "reserved bit set in the interrupt request";
	case 0x21: return "interrupt index beyond the remapping table";
	case 0x22: return "interrupt remapping entry not present";
	case 0x23: return "interrupt remapping table unreadable";
	case 0x24: return "reserved bit set in the interrupt remapping entry";
	case 0x25: return "compatibility-format interrupt blocked";
	case 0x26: return "interrupt source id does not match its entry";
	case 0x27: return "posted-interrupt descriptor unreadable";
	default: return "unknown";
	}
}
