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

dma_addr_t dma_map(struct dma_domain *dom, const void *va, size_t len, unsigned flags)
{
	if (!dom)
		return dma_phys(va);
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
