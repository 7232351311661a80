/* Kernel side of ACPI: map tables through the boot memory map, parse them,
 * log a summary and configure interrupts, reboot, the PM timer, and the
 * power button (SCI, PM1 blocks, \_S5 from the DSDT; on a hardware-reduced
 * platform the Generic Event Device and the FADT's sleep registers). */
#include <arch.h>

#include "drivers/acpi/acpi.h"
#include "drivers/acpi/aml_s5.h"
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"
#include "kernel/power.h"
#include "kernel/time/time.h"

/* PM1 fixed registers (ACPI 6.5 §4.8.3): status (write 1 to clear) at the
 * event block, enable at event block + PM1_EVT_LEN / 2, control block. */
#define PM1_PWRBTN	(1u << 8)	/* status and enable: power button */
#define PM1_SCI_EN	(1u << 0)	/* control: SCI instead of SMI */
#define PM1_SLP_TYP_SHIFT 10
#define PM1_SLP_TYP	(7u << PM1_SLP_TYP_SHIFT)
#define PM1_SLP_EN	(1u << 13)
#define ACPI_ENABLE_WAIT_MS 3000	/* firmware's SMI handler, under TCG */
/* SCIs without power-button status within one second: the line is held
 * by an event we do not handle (a GPE), so it is masked rather than storm
 * the CPU. A stray one now and then never adds up to it. */
#define SCI_STORM	1000

static struct acpi_info *info;
static struct aml_s5 s5;
static bool s5_ok;
static struct aml_ged ged;
static bool ged_ok;
static volatile u32 *ged_evt;	/* the GED's event selector, mapped */
/* The platform devices the DSDT describes (acpi_devices()): at most
 * ACPI_DEVS_MAX of them kept, more than a microVM's transports and event
 * device need (QEMU microvm: 8 virtio-mmio, 1 GED). */
#define ACPI_DEVS_MAX 32
static struct aml_dev acpi_devs[ACPI_DEVS_MAX];
static u32 acpi_ndevs;
static u32 ged_unclaimed;	/* events other than power-down, logged once */
static volatile u8 *sleep_ctl_mem;
static u32 sci_gsi, sci_unclaimed;
static u64 sci_window;	/* time_ns() of the first unclaimed SCI counted */
static struct work storm_work;

/* Tables must lie inside one region of the firmware's map; reserved ranges
 * are not in our RAM map, so they are mapped (uncached) on demand. */
static const void *acpi_pm_map(void *ctx, u64 phys, u64 len)
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

static void acpi_apply(const struct acpi_info *a)
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

/* \_S5 (and the platform devices) from the DSDT the FADT names: header
 * first, then the whole table, checksummed, then the bounded AML scans. */
static bool acpi_find_s5(const struct boot_info *bi, const struct acpi_fadt *f)
{
	const u8 *t;
	u32 len, i;
	u8 sum = 0;
	int err;

	if (!f->present || !f->dsdt)
		return false;
	t = acpi_pm_map((void *)bi, f->dsdt, 36);
	if (!t || t[0] != 'D' || t[1] != 'S' || t[2] != 'D' || t[3] != 'T') {
		kprintf("acpi: DSDT at %#lx unreadable or not a DSDT\n", f->dsdt);
		return false;
	}
	len = (u32)t[4] | (u32)t[5] << 8 | (u32)t[6] << 16 | (u32)t[7] << 24;
	if (len < 36 || len > ACPI_MAX_TABLE_LEN || !(t = acpi_pm_map((void *)bi, f->dsdt, len))) {
		kprintf("acpi: DSDT length %u unusable\n", len);
		return false;
	}
	for (i = 0; i < len; i++)
		sum += t[i];
	if (sum) {
		kprintf("acpi: DSDT checksum bad\n");
		return false;
	}
	acpi_ndevs = aml_find_devices(t + 36, len - 36, acpi_devs, ACPI_DEVS_MAX);
	if (acpi_ndevs > ACPI_DEVS_MAX)
		acpi_ndevs = ACPI_DEVS_MAX;
	if (f->hw_reduced)
		ged_ok = aml_find_ged(t + 36, len - 36, &ged) == 0;
	err = aml_find_s5(t + 36, len - 36, &s5);
	if (err) {
		kprintf("acpi: no usable \\_S5 package in the DSDT (%d)\n", err);
		return false;
	}
	return true;
}

static const char *const acpi_scope_names[] = { "?", "pci", "bridge", "ioapic", "hpet", "acpi" };

/* One line per remapping unit and reserved region, then one per scope. */
static void acpi_log_dmar(const struct acpi_dmar *d)
{
	u32 i, k;

	if (!d->present)
		return;
	kprintf("acpi: dmar haw %u%s, %u unit(s), %u rmrr\n", d->haw,
		(d->flags & ACPI_DMAR_INTR_REMAP) ? ", interrupt remapping" : "", d->unit_count,
		d->rmrr_count);
	for (i = 0; i < d->unit_count; i++) {
		const struct acpi_drhd *u = &d->units[i];

		kprintf("acpi: dmar unit %u at %#lx segment %u%s\n", i, u->base, u->segment,
			u->include_all ? ", all pci devices not named elsewhere" : "");
		for (k = 0; k < u->scope_count; k++) {
			const struct acpi_dmar_scope *s = &d->scopes[u->scope_first + k];

			kprintf("acpi: dmar unit %u scope %s id %u bus %u path %02x.%u%s\n", i,
				acpi_scope_names[s->type < 6 ? s->type : 0], s->enum_id, s->start_bus,
				s->path[0][0], s->path[0][1], s->path_len > 1 ? " ..." : "");
		}
	}
	for (i = 0; i < d->rmrr_count; i++)
		kprintf("acpi: dmar rmrr %#lx-%#lx segment %u, %u device(s)\n", d->rmrrs[i].base,
			d->rmrrs[i].limit, d->rmrrs[i].segment, d->rmrrs[i].scope_count);
}

int acpi_init(const struct boot_info *bi)
{
	struct acpi_mem mem = { acpi_pm_map, (void *)bi };
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
	acpi_log_dmar(&info->dmar);
	acpi_apply(info);
	s5_ok = acpi_find_s5(bi, &info->fadt);
	return 0;
}

static u16 acpi_pm1_status(const struct acpi_fadt *f)
{
	u16 v = inw(f->pm1a_evt);

	if (f->pm1b_evt)
		v |= inw(f->pm1b_evt);
	return v;
}

static void acpi_pm1_write(const struct acpi_fadt *f, u16 off, u16 v)
{
	outw(f->pm1a_evt + off, v);
	if (f->pm1b_evt)
		outw(f->pm1b_evt + off, v);
}

static void acpi_sci_storm(void *arg)
{
	(void)arg;
	kprintf("acpi: %u SCIs in a second without a power-button event; SCI masked, power button off\n",
		SCI_STORM);
}

/* The SCI: level-triggered, so the status bit is cleared before the EOI. */
static void acpi_sci_irq(void *arg)
{
	const struct acpi_fadt *f = &info->fadt;

	(void)arg;
	if (acpi_pm1_status(f) & PM1_PWRBTN) {
		acpi_pm1_write(f, 0, PM1_PWRBTN);
		sci_unclaimed = 0;
		power_button();
		return;
	}
	if (time_ns() - sci_window > NSEC_PER_SEC) {
		sci_window = time_ns();
		sci_unclaimed = 0;
	}
	if (++sci_unclaimed == SCI_STORM) {
		irq_mask_gsi(sci_gsi, true);
		work_queue(&storm_work);
	}
}

static void acpi_pm1_sleep(u16 port, u8 typ)
{
	u16 v = (u16)((inw(port) & ~(PM1_SLP_TYP | PM1_SLP_EN)) | (u16)typ << PM1_SLP_TYP_SHIFT);

	outw(port, v);
	outw(port, v | PM1_SLP_EN);
}

/* Enter S5: SLP_TYPa | SLP_EN to PM1a_CNT, then SLP_TYPb to PM1b_CNT. */
static void acpi_s5(void)
{
	const struct acpi_fadt *f = &info->fadt;
	u64 end;

	acpi_pm1_sleep(f->pm1a_cnt, s5.slp_typa);
	if (f->pm1b_cnt)
		acpi_pm1_sleep(f->pm1b_cnt, s5.slp_typb);
	end = time_ns() + NSEC_PER_SEC;	/* the platform acts on the write */
	while (time_ns() < end)
		pause();
}

/* Hardware-reduced S5 (ACPI 6.5 §4.8.3.7, §7.4.2.5 steps): SLP_TYPx in
 * bits 4:2 of the sleep control register, with SLP_EN (bit 5). */
#define SLEEP_TYP_SHIFT 2
#define SLEEP_EN	(1u << 5)

static void acpi_s5_hw_reduced(void)
{
	const struct acpi_gas *g = &info->fadt.sleep_ctl;
	u8 v = (u8)((s5.slp_typa & 7) << SLEEP_TYP_SHIFT | SLEEP_EN);
	u64 end;

	if (g->space_id == ACPI_GAS_SYSIO)
		outb((u16)g->address, v);
	else if (sleep_ctl_mem)
		*sleep_ctl_mem = v;
	end = time_ns() + NSEC_PER_SEC;
	while (time_ns() < end)
		pause();
}

/* The GED's interrupt: its _EVT method reads the event selector (which
 * clears it, QEMU's hw/acpi/generic_event_device.c) and notifies the power
 * button on bit 1. That is the one event we act on; others are counted and
 * said once. Edge-triggered: nothing to clear before the EOI. */
#define GED_PWR_DOWN	(1u << 1)

static void acpi_ged_irq(void *arg)
{
	u32 sel = *ged_evt;

	(void)arg;
	if (sel & GED_PWR_DOWN)
		power_button();
	if ((sel & ~GED_PWR_DOWN) && !ged_unclaimed++)
		klog("acpi: GED event %#x not handled (only power-down is)", sel & ~GED_PWR_DOWN);
}

static void acpi_power_hw_reduced(const struct acpi_fadt *f)
{
	const struct acpi_gas *c = &f->sleep_ctl;
	int vec;

	if (!c->address || !s5_ok) {
		kprintf("acpi: hardware-reduced ACPI without %s: no power off\n",
			!c->address ? "sleep registers" : "a usable \\_S5");
		return;
	}
	if (c->space_id == ACPI_GAS_SYSMEM && !(sleep_ctl_mem = mmio_map(c->address, 1))) {
		kprintf("acpi: sleep control register %#lx not mappable: no power off\n", c->address);
		return;
	}
	power_register_off(acpi_s5_hw_reduced);
	if (!ged_ok) {
		kprintf("acpi: hardware-reduced, no Generic Event Device in the DSDT: power button not available, "
			"S5 by sleep control %#lx\n", c->address);
		return;
	}
	ged_evt = mmio_map(ged.evt_addr, ged.evt_len);
	if (!ged_evt) {
		kprintf("acpi: GED event register %#lx not mappable: power button not available\n", ged.evt_addr);
		return;
	}
	vec = irq_route_gsi(ged.gsi, !ged.edge, ged.active_low, acpi_ged_irq, NULL);
	if (vec < 0) {
		kprintf("acpi: cannot route GED gsi %u (%d): power button not available\n", ged.gsi, vec);
		return;
	}
	(void)*ged_evt;	/* an event from before: dropped */
	kprintf("acpi: power button on GED gsi %u (%s, active %s), event register %#lx, sleep control %s %#lx, S5 "
		"type %u\n", ged.gsi, ged.edge ? "edge" : "level", ged.active_low ? "low" : "high", ged.evt_addr,
		c->space_id == ACPI_GAS_SYSIO ? "port" : "mem", c->address, s5.slp_typa);
}

/* SCI_EN set means ACPI mode; otherwise ask the firmware through SMI_CMD. */
static int acpi_enable_acpi_mode(const struct acpi_fadt *f)
{
	u64 end;

	if (inw(f->pm1a_cnt) & PM1_SCI_EN)
		return 0;
	if (!f->smi_cmd || !f->acpi_enable || f->smi_cmd > 0xffff)
		return -ENODEV;
	outb((u16)f->smi_cmd, f->acpi_enable);
	end = time_ns() + ACPI_ENABLE_WAIT_MS * NSEC_PER_MSEC;
	while (!(inw(f->pm1a_cnt) & PM1_SCI_EN)) {
		if (time_ns() > end)
			return -ETIMEDOUT;
		pause();
	}
	kprintf("acpi: ACPI mode enabled through SMI_CMD %#x\n", f->smi_cmd);
	return 0;
}

void acpi_power_init(void)
{
	const struct acpi_fadt *f;
	bool level, low;
	u16 flags = 0;
	int vec, err;

	if (!info || !info->fadt.present) {
		kprintf("acpi: no FADT: power button not available\n");
		return;
	}
	f = &info->fadt;
	if (f->hw_reduced) {
		acpi_power_hw_reduced(f);
		return;
	}
	if (!f->pm1a_evt || !f->pm1a_cnt || !f->sci_int) {
		kprintf("acpi: no SCI or PM1 block: power button not available\n");
		return;
	}
	err = acpi_enable_acpi_mode(f);
	if (err) {
		kprintf("acpi: cannot enter ACPI mode (%d): power button not available\n", err);
		return;
	}
	/* An SCI is level-triggered and active low unless the MADT says
	 * otherwise ("conforming" keeps those defaults, ACPI 6.5 §5.2.12.5). */
	if (f->sci_int < 16)
		sci_gsi = acpi_irq_to_gsi(info, (u8)f->sci_int, &flags);
	else
		sci_gsi = f->sci_int;
	level = (flags & ACPI_MPS_TRIG_MASK) != ACPI_MPS_TRIG_EDGE;
	low = (flags & ACPI_MPS_POL_MASK) != ACPI_MPS_POL_HIGH;
	work_init(&storm_work, acpi_sci_storm, NULL);
	acpi_pm1_write(f, f->pm1_evt_len / 2, 0);		/* every fixed event off */
	acpi_pm1_write(f, 0, PM1_PWRBTN);			/* a stale press */
	vec = irq_route_gsi(sci_gsi, level, low, acpi_sci_irq, NULL);
	if (vec < 0) {
		kprintf("acpi: cannot route SCI gsi %u (%d): power button not available\n", sci_gsi, vec);
		return;
	}
	acpi_pm1_write(f, f->pm1_evt_len / 2, PM1_PWRBTN);
	if (s5_ok)
		power_register_off(acpi_s5);
	kprintf("acpi: power button on SCI irq %u (gsi %u, %s, active %s), pm1 evt %#x cnt %#x, S5 %s%u/%u\n",
		f->sci_int, sci_gsi, level ? "level" : "edge", low ? "low" : "high", f->pm1a_evt, f->pm1a_cnt,
		s5_ok ? "type " : "unknown ", s5.slp_typa, s5.slp_typb);
}

const struct acpi_info *acpi_get(void)
{
	return info;
}

const struct aml_dev *acpi_devices(u32 *n)
{
	*n = acpi_ndevs;
	return acpi_devs;
}
