/*
 * The DMA seam: the address a device must use for memory it reads or
 * writes. A device an IOMMU driver took has a domain of its own
 * (dma_attach), whose map/unmap/flush/clear ops that driver set; any other
 * device, and every device before an IOMMU driver attaches, gets identity
 * addresses (the physical address: the kernel's map is identity), which
 * an IOMMU that confines the device blocks (dma_confined: the driver must
 * then not drive it, dma_verdict). Drivers and the virtio ring call only
 * this; none names an IOMMU.
 *
 * Mappings are read-only for the device unless DMA_WRITE, and long-lived
 * (the device keeps them until dma_clear, after its reset) unless
 * DMA_TRANSIENT (one buffer's time on the device: dma_unmap gives each back
 * with the same va, len and flags once the device returned the buffer).
 * Transient unmaps are invalidated in batches: dma_flush, once per reclaim
 * pass, before the memory is reused or freed. Read-only image data (the
 * baked site) is mapped long-lived even when asked transient, and its
 * unmaps are ignored: it stays mapped once.
 */
#ifndef VIREO_DMA_H
#define VIREO_DMA_H

#include "lib/types.h"
#include "vireo/linkset.h"

#define DMA_WRITE 0x1u		/* the device may write the memory */
#define DMA_TRANSIENT 0x2u	/* one buffer's time on the device (else long-lived) */

struct pci_dev;
struct dma_domain;

/* What an IOMMU driver does for each of its domains. */
struct dma_ops {
	/* The device address of [va, va+len) with the rights flags ask for;
	 * 0 when it cannot map (then nothing is held: no unmap follows). */
	dma_addr_t (*map)(struct dma_domain *dom, const void *va, size_t len, unsigned flags);
	/* Gives back one transient map (same va, len, flags); its entries may
	 * stay cached in the unit until the next flush. */
	void (*unmap)(struct dma_domain *dom, const void *va, size_t len, unsigned flags);
	/* Invalidates what unmap cleared since the last flush. */
	void (*flush)(struct dma_domain *dom);
	/* Removes every mapping (the device was reset; its memory is freed next). */
	void (*clear)(struct dma_domain *dom);
};

/* A device's translated address space: the IOMMU driver's own domain
 * embeds it and sets ops. */
struct dma_domain {
	const struct dma_ops *ops;
};

/*
 * An IOMMU driver, registered at link time in the dma_iommus linker set
 * (include/vireo/linkset.h):
 *
 *	DMA_IOMMU(vtd, .name = "vtd", .attach = vtd_attach);
 *
 * attach moves the PCI function p into a domain of its own and returns it,
 * or NULL when the driver does not translate p (no unit covers it, or
 * translation is off): p then keeps identity addresses. fault(arg) is
 * called (interrupt context) once per fault episode of the device.
 */
struct dma_iommu {
	const char *name;
	struct dma_domain *(*attach)(struct pci_dev *p, void (*fault)(void *arg), void *arg);
	/* Whether the driver confines p: a unit of its covers p and blocks
	 * every DMA of p that no domain of p's translates (strict policy). May
	 * be NULL: confines nothing. */
	bool (*confines)(struct pci_dev *p);
};
#define DMA_IOMMU(id, ...)                                                    \
	static const struct dma_iommu dma_iommu_##id = { __VA_ARGS__ };      \
	VIREO_LINKSET_ADD(dma_iommus, const struct dma_iommu, id, dma_iommu_##id)

/* The first IOMMU driver that takes p (before any of p's memory is
 * mapped), or NULL: identity. */
struct dma_domain *dma_attach(struct pci_dev *p, void (*fault)(void *arg), void *arg);

/* Whether an IOMMU driver confines p (its confines op): identity DMA from
 * p would be blocked, so p may be driven only through a domain of its own. */
bool dma_confined(struct pci_dev *p);

/*
 * The policy for one device a driver is about to use (pure): confined (by
 * dma_confined), whether the device offered to go through the platform's
 * IOMMU (virtio's ACCESS_PLATFORM), whether the driver negotiated it, and
 * whether dma_attach gave it a domain. A device that is not confined is
 * always driven (translated when attached, else on identity addresses); a
 * confined one only when attached, else refused, saying why.
 */
enum dma_verdict {
	DMA_DRIVE,		/* attached, or not confined */
	DMA_REFUSE_NOT_OFFERED,	/* confined; the device does not go through the IOMMU */
	DMA_REFUSE_LOCKED_OUT,	/* confined; offered, but the driver's feature mask took it away */
	DMA_REFUSE_NO_DOMAIN,	/* confined; negotiated, but no domain could be given */
};
enum dma_verdict dma_verdict(bool confined, bool offered, bool negotiated, bool attached);

/* dom NULL: identity (the physical address); nothing to unmap, flush or
 * clear. Otherwise through dom's ops, as above. */
dma_addr_t dma_map(struct dma_domain *dom, const void *va, size_t len, unsigned flags);
void dma_unmap(struct dma_domain *dom, const void *va, size_t len, unsigned flags);
void dma_flush(struct dma_domain *dom);
void dma_clear(struct dma_domain *dom);

/*
 * DMA-only pages: whole pages that hold buffers a device may write (receive
 * buffers, rings, status bytes) and nothing else, so a device never reaches
 * a kernel object through them. Every device-writable buffer comes from
 * here; driver and stack metadata live elsewhere. Zeroed; physically
 * contiguous; freed back whole (the same p and npages). dma_page_only()
 * says whether the page holding phys is one of them now (the audit:
 * kernel/mm/mm.c in the kernel, tests/host/shim/hostk.c on the host).
 */
void *dma_pages_alloc(size_t npages);
void dma_pages_free(void *p, size_t npages);
bool dma_page_only(u64 phys);
/* Pages mapped readable for a translated device (dma_map without
 * DMA_WRITE) that were neither DMA-only nor the image's read-only data,
 * counted per map since boot: 0 when nothing else shares a page a device
 * reads (the audit's readable half; the table walk, drivers/iommu/vtd.c,
 * sees only what is mapped when it runs). */
u64 dma_ro_exposed(void);

/* The physical address of va (kernel/mm/mm.c: the identity map; host tests
 * give their own, tests/host/simdev/fake_dev.c). */
dma_addr_t dma_phys(const void *va);

#endif
