/* The DMA seam (kernel/mm/dma.h): identity unless an IOMMU driver took the
 * device; the rule for read-only image data lives here, for every driver. */
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "lib/linkset.h"

LINKSET_DECLARE(dma_iommus, const struct dma_iommu);

__cold struct dma_domain *dma_attach(struct pci_dev *p, void (*fault)(void *arg), void *arg)
{
	const struct dma_iommu *const *m;
	struct dma_domain *dom;

	LINKSET_FOREACH(dma_iommus, m) {
		dom = (*m)->attach(p, fault, arg);
		if (dom)
			return dom;
	}
	return NULL;
}

__cold bool dma_confined(struct pci_dev *p)
{
	const struct dma_iommu *const *m;

	LINKSET_FOREACH(dma_iommus, m)
		if ((*m)->confines && (*m)->confines(p))
			return true;
	return false;
}

__cold enum dma_verdict dma_verdict(bool confined, bool offered, bool negotiated, bool attached)
{
	if (!confined || attached)
		return DMA_DRIVE;
	if (!offered)
		return DMA_REFUSE_NOT_OFFERED;
	return negotiated ? DMA_REFUSE_NO_DOMAIN : DMA_REFUSE_LOCKED_OUT;
}

static u64 dma_exposed;

u64 dma_ro_exposed(void)
{
	return dma_exposed;
}

/* The readable half of the audit, at map time (a walk of the tables only
 * sees what is mapped at that instant, and transmit maps last
 * microseconds): a page a device may read must hold device buffers only,
 * or be the image's read-only data (the baked site, public bytes). */
static void dma_note_readable(const void *va, size_t len)
{
	u64 a = (u64)(uintptr_t)va & ~(u64)(PAGE_SIZE - 1), end = (u64)(uintptr_t)va + len;

	if (mm_in_rodata(va, len))
		return;
	for (; a < end; a += PAGE_SIZE)
		dma_exposed += !dma_page_only(a);
}

dma_addr_t dma_map(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	if (!dom)
		return dma_phys(va);
	if (!(flags & DMA_WRITE))
		dma_note_readable(va, len);
	/* Site bodies live in the image's read-only data: long-lived even on
	 * a transient (transmit) queue, so they stay mapped once. */
	if ((flags & DMA_TRANSIENT) && mm_in_rodata(va, len))
		flags &= ~DMA_TRANSIENT;
	return dom->ops->map(dom, va, len, flags);
}

void dma_unmap(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	if (dom && !mm_in_rodata(va, len))
		dom->ops->unmap(dom, va, len, flags);
}

void dma_flush(struct dma_domain *dom)
{
	if (dom)
		dom->ops->flush(dom);
}

__cold void dma_clear(struct dma_domain *dom)
{
	if (dom)
		dom->ops->clear(dom);
}
