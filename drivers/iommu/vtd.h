/* Intel VT-d DMA remapping (drivers/iommu/vtd.c): the units the ACPI DMAR table
 * lists, one translated domain per device that negotiated ACCESS_PLATFORM,
 * and for every other function a unit covers the policy's entry (iommu=:
 * strict blocks it, permissive passes it through). Drivers reach it only
 * through the DMA seam (kernel/mm/dma.h): VT-d registers as an IOMMU
 * driver (DMA_IOMMU), and each domain's map/unmap/flush/clear ops are its. */
#ifndef VIREO_VTD_H
#define VIREO_VTD_H

#include "lib/types.h"

/* Finds the DMAR units, gives every PCI function they cover its context
 * entry (strict: the blocking domain; permissive: pass-through) and turns
 * translation on ("translation on"). Before the PCI drivers probe. No DMAR
 * table, no unit, iommu=off, or (permissive) a unit without the
 * pass-through capability: translation stays off (logged). */
void vtd_init(void);
/* (Attaching a PCI function: dma_attach(), which asks VT-d's DMA_IOMMU
 * entry: a domain of its own with an empty page table, or NULL when no
 * enabled unit covers it. The fault callback runs from interrupt context
 * once per fault episode. dma_confined(): strict and an enabled unit
 * covers the function, so only a domain of its own lets it DMA.) */
/* The test seam, for debug/ only (iommu.stray=, the shell's iommu-stray,
 * selftest=iommu-fault): the vtd_stray_nth-th device-writable buffer
 * translated devices are given since boot (0: none), or with
 * vtd_stray_next() the next one, goes out at its read-only address, so the
 * device's write faults. vtd_stray_next returns -ENODEV when no unit is in
 * use. */
extern u64 vtd_stray_nth;
int vtd_stray_next(void);

#endif
