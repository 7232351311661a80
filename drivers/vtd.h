/* Intel VT-d DMA remapping (drivers/vtd.c): the units the ACPI DMAR table
 * lists, one translated domain per device that negotiated ACCESS_PLATFORM,
 * pass-through for every other device a unit covers. */
#ifndef VIREO_VTD_H
#define VIREO_VTD_H

#include "kernel/types.h"

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
/* The device address of [va, va+len) in dom, mapped on first use and kept
 * until vtd_domain_clear: read-only unless device_writes. 0 (logged once)
 * when it cannot be mapped: the device then faults on it. */
dma_addr_t vtd_map(struct vtd_domain *dom, const void *va, size_t len, bool device_writes);
/* Removes every mapping of dom and invalidates the unit's caches; for a
 * device that has been reset and whose memory is about to be freed. A new
 * fault episode may be reported after this. */
void vtd_domain_clear(struct vtd_domain *dom);

#endif
