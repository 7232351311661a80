/* VT-d interrupt remapping formats and the table's slot policy (see
 * vtd_irte.h). */
#include <arch.h>

#include "drivers/iommu/vtd_irte.h"

void vtd_irte_encode(u64 e[2], u8 vector, u8 apic_id, bool level, u16 sid)
{
	/* DM 0 (physical), RH 0, DLM 000 (fixed), IM 0 (remapped, not posted) */
	e[0] = VTD_IRTE_P | (level ? VTD_IRTE_TM : 0) | ((u64)vector << VTD_IRTE_VEC_SHIFT) |
	       ((u64)apic_id << VTD_IRTE_DST_SHIFT);
	e[1] = VTD_IRTE_SVT_ALL | sid;	/* SQ 00: all of bus, device, function */
}

u8 vtd_irte_vector(const u64 e[2])
{
	return (u8)(e[0] >> VTD_IRTE_VEC_SHIFT);
}

u16 vtd_irte_sid(const u64 e[2])
{
	return (u16)e[1];
}

u32 vtd_ir_msi_addr(u16 handle)
{
	return 0xfee00000u | ((u32)(handle & 0x7fff) << 5) | (1u << 4) | (1u << 3) |
	       ((u32)(handle >> 15) << 2);
}

u64 vtd_ir_ioapic_rte(u16 handle, u8 vector, bool level, bool active_low, bool masked)
{
	return ((u64)(handle & 0x7fff) << 49) | (1ull << 48) | ((u64)(handle >> 15) << 11) |
	       (masked ? 1ull << 16 : 0) | (level ? 1ull << 15 : 0) | (active_low ? 1ull << 13 : 0) |
	       vector;
}

u64 vtd_irta(u64 pa, unsigned entries)
{
	unsigned s = 0;

	if (entries < 2 || entries > 65536 || (entries & (entries - 1)) || (pa & 0xfff))
		return 0;
	while ((2u << s) < entries)
		s++;
	return pa | s;	/* EIME (bit 11) 0: xAPIC destination ids */
}

int vtd_irte_place(u64 (*tab)[2], unsigned n, u8 vector, u8 apic_id, bool level, u16 sid,
		   bool *changed)
{
	int slot = -1, fresh = -1;
	unsigned i;
	u64 e[2];

	*changed = false;
	for (i = 0; i < n; i++) {
		if (!(tab[i][0] & VTD_IRTE_P)) {
			if (fresh < 0)
				fresh = (int)i;
			continue;
		}
		if (vtd_irte_vector(tab[i]) != vector)
			continue;
		if (slot < 0 && vtd_irte_sid(tab[i]) == sid) {
			slot = (int)i;
			continue;
		}
		tab[i][0] = 0;	/* the vector's previous owner, or a duplicate */
		tab[i][1] = 0;
		*changed = true;
		if (fresh < 0 || (int)i < fresh)
			fresh = (int)i;
	}
	if (slot < 0)
		slot = fresh;
	if (slot < 0)
		return -ENOSPC;
	vtd_irte_encode(e, vector, apic_id, level, sid);
	if ((tab[slot][0] & VTD_IRTE_P) && (tab[slot][0] != e[0] || tab[slot][1] != e[1]))
		*changed = true;
	/* high half first: a fresh slot's low half (present bit) is written
	 * last, so the unit never pairs it with a stale source id; a reused
	 * slot keeps its source id and vector */
	tab[slot][1] = e[1];
	barrier();
	WRITE_ONCE(tab[slot][0], e[0]);
	return slot;
}

unsigned vtd_irte_count(const u64 (*tab)[2], unsigned n)
{
	unsigned i, c = 0;

	for (i = 0; i < n; i++)
		c += (tab[i][0] & VTD_IRTE_P) != 0;
	return c;
}
