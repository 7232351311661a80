/*
 * Intel VT-d interrupt remapping (VT-d spec 4.x ch. 5, §9.10, §10.4.29-30).
 *
 * Without it a device that can write the interrupt window (0xfee00000) raises
 * any vector on any CPU: an MSI is just a DWORD write. With it, every
 * interrupt vireo programs names an entry of a table in kernel memory, and
 * the unit delivers only what that entry says (vector, destination,
 * trigger) and only to the requester it names (source-id validation: SVT
 * 01, SQ 00, all 16 bits of bus/device/function). A device can still raise
 * its own vectors (any of its entries' handles), no one else's.
 *
 * Sources: MSI-X of PCI functions (drivers/pci/pci.c through
 * msi_compose_for, requester = the function) and IOAPIC pins (kernel/arch/
 * apic.c: the serial console, the ACPI SCI or GED, INTx fallbacks; requester
 * = the IOAPIC's source id from its DMAR device scope). One entry per
 * (requester, vector); a vector that changes owner loses its old entry
 * (drivers/iommu/vtd_irte.c). The unit's own fault event is not remapped: it
 * has its own address/data registers.
 *
 * Bring-up, per unit: table (one page, 256 entries), IRTA (xAPIC: EIME 0,
 * vireo's LAPIC code is xAPIC MMIO), SIRTP, a global interrupt-entry-cache
 * invalidation (queued: the unit reports QI whenever it reports IR), CFI
 * set while the pins routed before now move over, IRE on, then CFI clear:
 * compatibility-format interrupts blocked, unless a routed source could not
 * be remapped (said on the console; CFI stays set).
 */
#include <arch.h>

#include "drivers/acpi/acpi.h"
#include "drivers/acpi/acpi_tables.h"
#include "drivers/iommu/vtd_ir.h"
#include "drivers/iommu/vtd_irte.h"
#include "drivers/pci/pci.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/console.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/metrics.h"

#define VTD_GCMD	0x18
#define VTD_GSTS	0x1c
#define VTD_IRTA	0xb8

#define GS_TES		(1u << 31)
#define GS_QIES		(1u << 26)
#define GS_IRES		(1u << 25)
#define GS_IRTPS	(1u << 24)
#define GS_CFIS		(1u << 23)
#define GS_KEEP		(GS_TES | GS_QIES | GS_IRES | GS_CFIS)	/* persistent command bits */
#define ECAP_IR		(1ull << 3)

#define QI_IEC_GLOBAL	0x4ull		/* interrupt entry cache, every entry */
#define VTD_IR_WAIT_NS	1000000000ull
#define VTD_IR_CFI_NS	10000000ull	/* a unit that ignores CFI (QEMU 7.2) */

struct vtd_ir {
	struct vtd_unit *unit;
	unsigned index;
	u64 regs;
	u64 (*tab)[2];
	bool on;
	bool cfi;		/* compatibility format left allowed */
	bool full;		/* a refusal already logged */
	u64 msi, ioapic;	/* sources remapped */
};

static struct vtd_ir vtd_irs[ACPI_DMAR_MAX_UNITS];
static unsigned vtd_nirs;

static u32 ir_r32(const struct vtd_ir *ir, u32 off) { return mmio_r32(ir->regs + off); }

/* Sets or clears one GCMD bit and waits up to ns for GSTS to follow. */
static bool ir_gcmd(struct vtd_ir *ir, u32 bit, bool set, u64 ns)
{
	u32 cmd = ir_r32(ir, VTD_GSTS) & GS_KEEP;
	u64 end = time_ns() + ns;

	mmio_w32(ir->regs + VTD_GCMD, set ? cmd | bit : cmd & ~bit);
	while (((ir_r32(ir, VTD_GSTS) & bit) != 0) != set) {
		if (time_ns() > end)
			return false;
		pause();
	}
	return true;
}

static void ir_flush(const void *p, size_t len)
{
	const u8 *c = (const u8 *)((u64)p & ~63ull);

	for (; c < (const u8 *)p + len; c += 64)
		__asm__ volatile("clflush %0" : "+m"(*(volatile u8 *)c));
	__asm__ volatile("mfence" ::: "memory");
}

static struct vtd_ir *ir_of_unit(int idx)
{
	unsigned i;

	for (i = 0; i < vtd_nirs; i++)
		if ((int)vtd_irs[i].index == idx && vtd_irs[i].on)
			return &vtd_irs[i];
	return NULL;
}

/* Writes the entry for (sid, vector) and makes the unit see it. */
static int ir_place(struct vtd_ir *ir, int vector, bool level, u16 sid)
{
	bool changed;
	int slot = vtd_irte_place(ir->tab, VTD_IRTE_ENTRIES, (u8)vector, (u8)lapic_id(), level, sid, &changed);

	if (slot < 0) {
		if (!ir->full)
			kprintf("vtd%u: interrupt remapping table full; %02x:%02x.%u vector %#x not remapped\n",
				ir->index, sid >> 8, (sid >> 3) & 31, sid & 7, vector);
		ir->full = true;
		return slot;
	}
	ir_flush(ir->tab[slot], 16);
	/* a changed present entry may be cached; a new one is flushed too
	 * (cheap, boot and re-probe only) */
	if (!vtd_unit_qi(ir->unit, QI_IEC_GLOBAL, 0))
		return -EIO;
	(void)changed;
	return slot;
}

static int ir_msi(u16 sid, int vector, u64 *addr, u32 *data)
{
	const struct acpi_info *a = acpi_get();
	struct vtd_ir *ir;
	int slot;

	if (!a || !(ir = ir_of_unit(acpi_dmar_unit_for(&a->dmar, 0, sid, pci_cfg_read8_bdf, NULL))))
		return -ENODEV;	/* its unit does not remap: compatibility format */
	slot = ir_place(ir, vector, false, sid);
	if (slot < 0)
		return slot;
	*addr = vtd_ir_msi_addr((u16)slot);
	*data = 0;	/* subhandle 0 (SHV set) */
	ir->msi++;
	return 0;
}

/* The IOAPIC with MADT id: its unit (the one whose device scope names it)
 * and source id. */
static struct vtd_ir *ir_ioapic_unit(const struct acpi_dmar *dmar, u8 id, u16 *sid)
{
	unsigned u, k;

	for (u = 0; u < dmar->unit_count; u++) {
		const struct acpi_drhd *d = &dmar->units[u];

		for (k = 0; k < d->scope_count && d->scope_first + k < dmar->scope_count; k++) {
			const struct acpi_dmar_scope *s = &dmar->scopes[d->scope_first + k];

			if (s->type != ACPI_DSCOPE_IOAPIC || s->enum_id != id || s->path_len != 1)
				continue;
			*sid = (u16)(s->start_bus << 8 | (s->path[0][0] & 31) << 3 | (s->path[0][1] & 7));
			return ir_of_unit((int)u);
		}
	}
	return NULL;
}

static int ir_ioapic(u32 idx, u32 pin, int vector, bool level, bool active_low, bool masked, u64 *rte)
{
	const struct acpi_info *a = acpi_get();
	struct vtd_ir *ir;
	u16 sid = 0;
	int slot;

	if (!a || idx >= a->madt.ioapic_count || !(ir = ir_ioapic_unit(&a->dmar, a->madt.ioapics[idx].id, &sid))) {
		kprintf("vtd: IOAPIC %u pin %u (vector %#x): no one-hop DMAR scope of a remapping unit names "
			"it; compatibility format (blocked unless CFI is set)\n", idx, pin, vector);
		return -ENODEV;
	}
	slot = ir_place(ir, vector, level, sid);
	if (slot < 0)
		return slot;
	*rte = vtd_ir_ioapic_rte((u16)slot, (u8)vector, level, active_low, masked);
	ir->ioapic++;
	return 0;
}

static const struct irq_remap vtd_ir_remap = { .ioapic = ir_ioapic, .msi = ir_msi };

void vtd_ir_unit_init(struct vtd_unit *u, unsigned index, u64 regs, u64 ecap)
{
	const struct acpi_info *a = acpi_get();
	struct vtd_ir *ir;
	const char *why;
	unsigned left;

	if (!(ecap & ECAP_IR))
		return;
	if (!a || !(a->dmar.flags & ACPI_DMAR_INTR_REMAP)) {
		why = "the DMAR table does not declare it";
		goto off;
	}
	if (vtd_nirs == ACPI_DMAR_MAX_UNITS)
		return;
	ir = &vtd_irs[vtd_nirs];
	*ir = (struct vtd_ir){ .unit = u, .index = index, .regs = regs };
	ir->tab = page_alloc(1);
	if (!ir->tab) {
		why = "no page for its table";
		goto off;
	}
	mmio_w64(regs + VTD_IRTA, vtd_irta((u64)ir->tab, VTD_IRTE_ENTRIES));
	if (!ir_gcmd(ir, GS_IRTPS, true, VTD_IR_WAIT_NS) || !vtd_unit_qi(u, QI_IEC_GLOBAL, 0)) {
		why = "the table pointer or its invalidation did not complete";
		goto free;
	}
	/* Compatibility format stays allowed until the pins routed so far
	 * have moved to their entries: none is lost in between. */
	ir->cfi = ir_gcmd(ir, GS_CFIS, true, VTD_IR_CFI_NS);
	if (!ir_gcmd(ir, GS_IRES, true, VTD_IR_WAIT_NS)) {
		why = "IRE did not turn on";
		ir_gcmd(ir, GS_CFIS, false, VTD_IR_CFI_NS);
		goto free;
	}
	ir->on = true;
	vtd_nirs++;
	left = irq_remap_install(&vtd_ir_remap);
	if (!left && ir->cfi)
		ir->cfi = !ir_gcmd(ir, GS_CFIS, false, VTD_IR_WAIT_NS);
	kprintf("vtd%u: interrupt remapping on (%u entries, %lu IOAPIC pin(s) remapped, xAPIC), "
		"compatibility-format interrupts %s\n", index, VTD_IRTE_ENTRIES, ir->ioapic,
		ir->cfi ? "still allowed" : "blocked");
	if (left)
		kprintf("vtd%u: %u routed IOAPIC pin(s) stay in compatibility format (above); %s\n", index, left,
			ir->cfi ? "CFI left set" : "the unit does not report CFI, so they may be blocked");
	return;
free:
	page_free(ir->tab, 1);
	ir->tab = NULL;
off:
	kprintf("vtd%u: interrupt remapping stays off: %s\n", index, why);
}

__cold void vtd_ir_show(unsigned index)
{
	unsigned i;

	for (i = 0; i < vtd_nirs; i++) {
		struct vtd_ir *ir = &vtd_irs[i];

		if (ir->index != index)
			continue;
		kprintf("iommu: vtd%u interrupt remapping %s, %u of %u entries in use (%lu MSI, %lu IOAPIC "
			"programmed), compatibility format %s\n", index, ir->on ? "on" : "off",
			vtd_irte_count((const u64 (*)[2])ir->tab, VTD_IRTE_ENTRIES), VTD_IRTE_ENTRIES, ir->msi,
			ir->ioapic, ir->cfi ? "allowed" : "blocked");
		return;
	}
	kprintf("iommu: vtd%u interrupt remapping off\n", index);
}

unsigned vtd_ir_sid_swap(u16 sid, u16 other)
{
	unsigned i, k, n = 0;

	for (i = 0; i < vtd_nirs; i++) {
		struct vtd_ir *ir = &vtd_irs[i];
		unsigned here = 0;

		for (k = 0; ir->on && k < VTD_IRTE_ENTRIES; k++) {
			if (!(ir->tab[k][0] & VTD_IRTE_P) || vtd_irte_sid(ir->tab[k]) != sid)
				continue;
			ir->tab[k][1] = (ir->tab[k][1] & ~0xffffull) | other;
			ir_flush(ir->tab[k], 16);
			here++;
		}
		if (here)
			vtd_unit_qi(ir->unit, QI_IEC_GLOBAL, 0);
		n += here;
	}
	return n;
}

static void vtd_ir_write_metrics(struct metrics_buf *b)
{
	u64 on = 0, used = 0;
	unsigned i;

	if (!vtd_nirs)
		return;
	for (i = 0; i < vtd_nirs; i++) {
		on += vtd_irs[i].on;
		used += vtd_irte_count((const u64 (*)[2])vtd_irs[i].tab, VTD_IRTE_ENTRIES);
	}
	metrics_simple(b, "vireo_iommu_intremap_units", METRICS_GAUGE,
		       "VT-d units with interrupt remapping on", on);
	metrics_simple(b, "vireo_iommu_intremap_entries", METRICS_GAUGE,
		       "interrupt remapping table entries in use (one per requester and vector)", used);
}
METRICS_SOURCE(vtd_ir, vtd_ir_write_metrics);
