/* Intel VT-d DMA remapping (drivers/iommu/vtd.c): the units the ACPI DMAR table
 * lists, one translated domain per device that negotiated ACCESS_PLATFORM,
 * pass-through for every other device a unit covers. */
#ifndef VIREO_VTD_H
#define VIREO_VTD_H

#include "lib/types.h"

struct pci_dev;
struct vtd_domain;

/* Finds the DMAR units, gives every PCI function they cover a pass-through
 * context entry and turns translation on ("translation on"). Before the
 * PCI drivers probe. No DMAR table, no unit, or a unit without the
 * pass-through capability: translation stays off (logged). */
void vtd_init(void);
/* Moves p from pass-through to a domain of its own (empty page table).
 * fault(arg) is called from interrupt context once per fault episode.
 * NULL when no enabled unit covers p: the caller keeps using dma_map(). */
struct vtd_domain *vtd_attach(struct pci_dev *p, void (*fault)(void *arg), void *arg);
/* The device address of [va, va+len) in dom: read-only unless
 * device_writes. Long-lived (transient false): mapped on first use and kept
 * until vtd_domain_clear. Transient: each page counts one more user, and
 * vtd_unmap with the same arguments drops it. 0 (logged once) when it
 * cannot be mapped: the device then faults on it. */
dma_addr_t vtd_map(struct vtd_domain *dom, const void *va, size_t len, bool device_writes,
		   bool transient);
/* Gives back a transient mapping once the device is done with the buffer:
 * a page no other in-flight buffer uses is cleared, and its IOTLB entry
 * invalidated at the next vtd_unmap_flush (before that the device may still
 * reach it, so the caller flushes before reusing or freeing the memory). */
void vtd_unmap(struct vtd_domain *dom, const void *va, size_t len, bool device_writes);
/* The invalidation for every page vtd_unmap cleared since the last flush:
 * page-selective when the unit has it (CAP.PSI) and at most
 * VTD_PSI_BATCH pages are pending, else one domain-selective request. */
void vtd_unmap_flush(struct vtd_domain *dom);
/* Removes every mapping of dom and invalidates the unit's caches; for a
 * device that has been reset and whose memory is about to be freed. A new
 * fault episode may be reported after this. */
void vtd_domain_clear(struct vtd_domain *dom);
/* The test seam, for debug/ only (iommu.stray=, the shell's iommu-stray,
 * selftest=iommu-fault): the vtd_stray_nth-th device-writable buffer
 * translated devices are given since boot (0: none), or with
 * vtd_stray_next() the next one, goes out at its read-only address, so the
 * device's write faults. vtd_stray_next returns -ENODEV when no unit is in
 * use. */
extern u64 vtd_stray_nth;
int vtd_stray_next(void);

#endif
