/* VT-d interrupt remapping formats (Intel VT-d spec 4.x §5.1, §9.10): the
 * 128-bit remapping table entry, the remappable MSI address and IOAPIC
 * redirection entry, the IRTA register value, and the table's slot policy.
 * Pure: the table is plain memory, so the host tests build it in the heap. */
#ifndef VIREO_VTD_IRTE_H
#define VIREO_VTD_IRTE_H

#include "lib/types.h"

/* One 4 KiB page of 16-byte entries. A vector has at most one entry (its
 * current owner's), and device vectors are VEC_DYN_FIRST..VEC_DYN_LAST
 * (192), so the table never fills. */
#define VTD_IRTE_ENTRIES	256

#define VTD_IRTE_P		(1ull << 0)	/* present */
#define VTD_IRTE_TM		(1ull << 4)	/* level-triggered */
#define VTD_IRTE_VEC_SHIFT	16
#define VTD_IRTE_DST_SHIFT	40		/* xAPIC: APIC id in bits 47:40 */
#define VTD_IRTE_SVT_ALL	(1ull << 18)	/* high half: verify all 16 SID bits (SQ 00) */

/* Fixed delivery, physical destination, no redirection hint; source-id
 * verification of every bit (SVT 01, SQ 00) against sid. */
void vtd_irte_encode(u64 e[2], u8 vector, u8 apic_id, bool level, u16 sid);
u8 vtd_irte_vector(const u64 e[2]);
u16 vtd_irte_sid(const u64 e[2]);

/* The remappable MSI address for handle: 0xfee00000, handle[14:0] in bits
 * 19:5, format bit 4, SHV bit 3 (data then carries subhandle 0), handle[15]
 * in bit 2. The data is 0. */
u32 vtd_ir_msi_addr(u16 handle);
/* The remappable IOAPIC redirection entry (§5.1.5.1): handle[14:0] in bits
 * 63:49, format bit 48, handle[15] in bit 11; vector, trigger, polarity and
 * mask as the compatibility entry had them (the vector must equal the
 * entry's for the IOAPIC's EOI to match). */
u64 vtd_ir_ioapic_rte(u16 handle, u8 vector, bool level, bool active_low, bool masked);

/* IRTA: table address | size field S (2^(S+1) entries), EIME 0 (xAPIC).
 * 0 if entries is not a power of two in 2..65536 or pa is unaligned. */
u64 vtd_irta(u64 pa, unsigned entries);

/* The slot for (sid, vector) in tab[n]: the entry already there for the
 * pair is reused (rewritten in place); an entry for the vector under another
 * sid is cleared (the vector changed owner: the old requester must not reach
 * it) and its slot taken. Else the first free slot. Writes the entry and
 * returns its index, or -ENOSPC. *changed: an entry that was present
 * changed (the caller invalidates the interrupt entry cache). */
int vtd_irte_place(u64 (*tab)[2], unsigned n, u8 vector, u8 apic_id, bool level, u16 sid,
		   bool *changed);
/* Present entries in tab[n]. */
unsigned vtd_irte_count(const u64 (*tab)[2], unsigned n);

#endif
