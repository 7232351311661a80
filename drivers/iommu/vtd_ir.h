/* VT-d interrupt remapping (drivers/iommu/vtd_ir.c): a unit reporting
 * ECAP.IR gets a remapping table once translation is on, and every
 * interrupt vireo programs (MSI-X of PCI functions, IOAPIC pins) goes
 * through an entry that names its requester (source-id checked).
 * Internal to drivers/iommu/: vtd.c calls in, and lends its queued
 * invalidation. */
#ifndef VIREO_VTD_IR_H
#define VIREO_VTD_IR_H

#include "lib/types.h"

struct vtd_unit;

/* vtd.c, for vtd_ir.c: one queued-invalidation request and its wait;
 * false when the unit has no queue or the request did not complete. */
bool vtd_unit_qi(struct vtd_unit *u, u64 lo, u64 hi);

/* After translation is on for unit index (registers mapped at regs): turns
 * interrupt remapping on when the unit and the DMAR table allow it, with
 * one console line either way ("interrupt remapping on (N entries)").
 * Failure leaves it off; DMA remapping is untouched. */
void vtd_ir_unit_init(struct vtd_unit *u, unsigned index, u64 regs, u64 ecap);
/* The `iommu` verb's line for unit index. */
void vtd_ir_show(unsigned index);

/* The test seam, for debug/ only (the shell's iommu-ir-sid): every entry
 * naming requester sid names other instead (the entry cache invalidated),
 * so the unit refuses sid's interrupts as coming from the wrong source;
 * called the other way round it undoes that. Returns the entries changed. */
unsigned vtd_ir_sid_swap(u16 sid, u16 other);

#endif
