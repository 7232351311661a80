/* Kernel side of ACPI: map tables through the boot memory map, parse them,
 * log a summary and configure interrupts, reboot and the PM timer. */
#include <arch.h>

#include "drivers/acpi.h"
#include "kernel/console.h"
#include "kernel/irq.h"
#include "kernel/mm.h"
#include "kernel/panic.h"
#include "kernel/time.h"

static struct acpi_info *info;

/* Tables must lie inside one region of the firmware's map; reserved ranges
 * are not in our RAM map, so they are mapped (uncached) on demand. */
static const void *acpi_map(void *ctx, u64 phys, u64 len)
{
	const struct boot_info *bi = ctx;
	u32 i;

	if (len == 0 || phys + len < phys)
		return NULL;
	for (i = 0; i < bi->nregions; i++) {
		const struct boot_region *r = &bi->regions[i];

		if (phys < r->base || phys + len > r->base + r->len)
			continue;
		if (r->type == BOOT_MEM_MMIO)
			return NULL;
		if (r->type == BOOT_MEM_RESERVED)
			return mmio_map(phys, len);
		return (const void *)phys;
	}
	return NULL;
}

static void apply(const struct acpi_info *a)
{
	u32 i;

	for (i = 0; i < a->madt.ioapic_count; i++)
		irq_set_ioapic(i, a->madt.ioapics[i].addr, a->madt.ioapics[i].gsi_base);
	for (i = 0; i < a->madt.iso_count; i++) {
		const struct acpi_iso *o = &a->madt.isos[i];
		u16 pol = o->flags & ACPI_MPS_POL_MASK, trig = o->flags & ACPI_MPS_TRIG_MASK;

		/* "Conforming" means the ISA defaults: edge, active high. */
		irq_set_isa_override(o->irq, o->gsi, trig == ACPI_MPS_TRIG_LEVEL, pol == ACPI_MPS_POL_LOW);
	}
	if (a->fadt.reset_supported) {
		const struct acpi_gas *g = &a->fadt.reset_reg;

		if (g->space_id == ACPI_GAS_SYSIO)
			panic_set_acpi_reset(2, g->address, a->fadt.reset_value);
		else if (g->space_id == ACPI_GAS_SYSMEM)
			panic_set_acpi_reset(1, (u64)mmio_map(g->address, 1), a->fadt.reset_value);
	}
	if (a->fadt.pm_timer.address && a->fadt.pm_timer.space_id == ACPI_GAS_SYSIO &&
	    a->fadt.pm_timer.address <= 0xfffc)
		time_set_pm_timer((u16)a->fadt.pm_timer.address, a->fadt.pm_timer_bits);
}

int acpi_init(const struct boot_info *bi)
{
	struct acpi_mem mem = { acpi_map, (void *)bi };
	char sigs[ACPI_MAX_TABLES * 5 + 1];
	u32 i, n = 0;
	int err;

	if (!bi->rsdp) {
		kprintf("acpi: firmware gave no RSDP; using PC defaults\n");
		return -ENOENT;
	}
	info = kzalloc(sizeof(*info));
	if (!info)
		return -ENOMEM;
	err = acpi_parse(bi->rsdp, &mem, info);
	if (err) {
		kprintf("acpi: tables unusable (%d); using PC defaults\n", err);
		kfree(info);
		info = NULL;
		return err;
	}
	for (i = 0; i < info->table_count; i++) {
		const char *s = info->tables[i].sig;

		sigs[n++] = ' ';
		while (*s)
			sigs[n++] = *s++;
	}
	sigs[n] = '\0';
	kprintf("acpi: rsdp rev %u oem '%s' %s:%s\n", info->rsdp_revision, info->oem_id,
		info->xsdt ? "xsdt" : "rsdt", sigs);
	kprintf("acpi: %u cpu, lapic %#lx, %u ioapic (first %#x gsi %u), %u overrides%s\n",
		info->madt.cpu_count, info->madt.lapic_addr, info->madt.ioapic_count,
		info->madt.ioapic_count ? info->madt.ioapics[0].addr : 0,
		info->madt.ioapic_count ? info->madt.ioapics[0].gsi_base : 0, info->madt.iso_count,
		info->madt.pcat_compat ? ", 8259s present" : "");
	for (i = 0; i < info->ecam_count; i++)
		kprintf("acpi: ecam %#lx segment %u buses %u-%u\n", info->ecam[i].base, info->ecam[i].segment,
			info->ecam[i].start_bus, info->ecam[i].end_bus);
	kprintf("acpi: pm timer %s%#lx (%u-bit), reset %s %#lx=%#x, hpet %#lx\n",
		info->fadt.pm_timer.space_id == ACPI_GAS_SYSIO ? "port " : "",
		info->fadt.pm_timer.address, info->fadt.pm_timer_bits,
		info->fadt.reset_supported ? (info->fadt.reset_reg.space_id == ACPI_GAS_SYSIO ? "port" : "mem")
					   : "none",
		info->fadt.reset_reg.address, info->fadt.reset_value, info->hpet.present ? info->hpet.base : 0);
	apply(info);
	return 0;
}

const struct acpi_info *acpi_get(void)
{
	return info;
}
