/*
 * PCI bus: config access (ECAM from the MCFG, else ports 0xcf8/0xcfc), a
 * recursive scan behind bridges, BAR sizing, MSI-X, INTx routing and the
 * driver registry. Parsing is done by pci_parse.c over config snapshots.
 */
#include <arch.h>

#include "drivers/acpi/acpi.h"
#include "drivers/pci/pci.h"
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "lib/linkset.h"
#include "kernel/mm/mm.h"
#include "lib/string.h"

#define PCI_CMD_IO (1u << 0)
#define PCI_CMD_MEM (1u << 1)
#define PCI_CMD_MASTER (1u << 2)
#define PCI_CMD_INTX_DISABLE (1u << 10)
#define MAX_DEPTH 8

enum chipset { CHIPSET_UNKNOWN, CHIPSET_Q35, CHIPSET_PIIX };

static u64 ecam_base;		/* bus 0 of segment 0, mapped; 0: port I/O */
static u8 ecam_start, ecam_end;
static struct pci_dev *devices;
static u8 bus_seen[256 / 8];
static enum chipset chipset;

LINKSET_DECLARE(pci_drivers, const struct pci_driver);

/* ---- config space access ---- */

static bool pci_use_ecam(u8 bus)
{
	return ecam_base && bus >= ecam_start && bus <= ecam_end;
}

static u64 pci_ecam_addr(u8 bus, u8 dev, u8 fn, u16 off)
{
	return ecam_base + ((u64)bus << 20 | (u64)dev << 15 | (u64)fn << 12 | off);
}

static void pci_port_select(u8 bus, u8 dev, u8 fn, u16 off)
{
	outl(0xcf8, 0x80000000u | (u32)bus << 16 | (u32)dev << 11 | (u32)fn << 8 | (off & 0xfc));
}

static u32 pci_cfg_read32(u8 bus, u8 dev, u8 fn, u16 off)
{
	if (pci_use_ecam(bus))
		return mmio_r32(pci_ecam_addr(bus, dev, fn, off));
	if (off >= 256)
		return 0xffffffff;
	pci_port_select(bus, dev, fn, off);
	return inl(0xcfc);
}

static void pci_cfg_write32(u8 bus, u8 dev, u8 fn, u16 off, u32 v)
{
	if (pci_use_ecam(bus)) {
		mmio_w32(pci_ecam_addr(bus, dev, fn, off), v);
		return;
	}
	if (off >= 256)
		return;
	pci_port_select(bus, dev, fn, off);
	outl(0xcfc, v);
}

u32 pci_read32(const struct pci_dev *d, u16 off)
{
	return pci_cfg_read32(d->bus, d->dev, d->fn, off & ~3);
}

u16 pci_read16(const struct pci_dev *d, u16 off)
{
	return (u16)(pci_read32(d, off) >> ((off & 2) * 8));
}

u8 pci_read8(const struct pci_dev *d, u16 off)
{
	return (u8)(pci_read32(d, off) >> ((off & 3) * 8));
}

void pci_write32(const struct pci_dev *d, u16 off, u32 v)
{
	pci_cfg_write32(d->bus, d->dev, d->fn, off & ~3, v);
}

/* Sub-dword writes are read-modify-write of the dword: safe for the
 * registers vireo writes (command, MSI/MSI-X control), none of which sit
 * beside write-1-to-clear bits in the same dword except the status
 * register, which is written back as 0 (no bits cleared). */
static void pci_write_part(const struct pci_dev *d, u16 off, u32 v, u32 mask)
{
	u32 shift = (off & 3) * 8, old = pci_read32(d, off);

	if ((off & ~3) == PCI_COMMAND)
		old &= 0x0000ffff;	/* never write-1-clear status bits */
	pci_write32(d, off, (old & ~(mask << shift)) | v << shift);
}

void pci_write16(const struct pci_dev *d, u16 off, u16 v)
{
	pci_write_part(d, off & ~1, v, 0xffff);
}

void pci_write8(const struct pci_dev *d, u16 off, u8 v)
{
	pci_write_part(d, off, v, 0xff);
}

/* ---- scanning ---- */

static void pci_size_bars(struct pci_dev *d)
{
	u16 cmd = pci_read16(d, PCI_COMMAND);
	unsigned i;

	if (d->hdr.num_bars == 0)
		return;
	/* No decoding while a BAR holds all-ones. */
	pci_write16(d, PCI_COMMAND, cmd & ~(PCI_CMD_IO | PCI_CMD_MEM));
	for (i = 0; i < d->hdr.num_bars;) {
		u16 off = PCI_BAR0 + 4 * i;
		u32 orig = pci_read32(d, off), sized, orig_hi = 0, sized_hi = 0;
		bool is64 = !(orig & 1) && ((orig >> 1) & 3) == 2 && i + 1 < d->hdr.num_bars;

		pci_write32(d, off, 0xffffffff);
		sized = pci_read32(d, off);
		pci_write32(d, off, orig);
		if (is64) {
			orig_hi = pci_read32(d, off + 4);
			pci_write32(d, off + 4, 0xffffffff);
			sized_hi = pci_read32(d, off + 4);
			pci_write32(d, off + 4, orig_hi);
		}
		if (pci_bar_decode(i, orig, sized, orig_hi, sized_hi, &d->bar[i]) < 0)
			klog("pci: %02x:%02x.%u bar%u unusable (orig %#x sized %#x)", d->bus, d->dev, d->fn, i,
			     orig, sized);
		i += d->bar[i].slots ? d->bar[i].slots : 1;
	}
	pci_write16(d, PCI_COMMAND, cmd);
}

static void pci_find_caps(struct pci_dev *d)
{
	u64 sizes[6];
	int off;
	unsigned i;

	off = pci_cap_find(d->cfg, sizeof d->cfg, PCI_CAP_ID_MSIX, 0);
	if (off > 0) {
		for (i = 0; i < 6; i++)
			sizes[i] = d->bar[i].kind == PCI_BAR_MEM32 || d->bar[i].kind == PCI_BAR_MEM64 ?
					   d->bar[i].size : 0;
		if (pci_msix_parse(d->cfg, sizeof d->cfg, (u8)off, sizes, &d->msix) == 0)
			d->msix_cap = (u8)off;
	}
	off = pci_cap_find(d->cfg, sizeof d->cfg, PCI_CAP_ID_MSI, 0);
	if (off > 0)
		d->msi_cap = (u8)off;
}

static void pci_insert_sorted(struct pci_dev *d)
{
	struct pci_dev **pp = &devices;
	u32 key = (u32)d->bus << 8 | d->dev << 3 | d->fn;

	while (*pp && ((u32)(*pp)->bus << 8 | (*pp)->dev << 3 | (*pp)->fn) < key)
		pp = &(*pp)->next;
	d->next = *pp;
	*pp = d;
}

static void pci_scan_bus(u8 bus, struct pci_dev *parent, int depth);

static void pci_scan_fn(u8 bus, u8 dev, u8 fn, struct pci_dev *parent, int depth, bool *multi)
{
	struct pci_dev *d;
	u32 i;

	if ((pci_cfg_read32(bus, dev, fn, 0) & 0xffff) == 0xffff)
		return;
	d = kzalloc(sizeof(*d));
	if (!d) {
		klog("pci: out of memory at %02x:%02x.%u", bus, dev, fn);
		return;
	}
	d->bus = bus;
	d->dev = dev;
	d->fn = fn;
	d->parent = parent;
	d->intx_gsi = -1;
	for (i = 0; i < sizeof d->cfg; i += 4) {
		u32 v = pci_cfg_read32(bus, dev, fn, (u16)i);

		d->cfg[i] = (u8)v;
		d->cfg[i + 1] = (u8)(v >> 8);
		d->cfg[i + 2] = (u8)(v >> 16);
		d->cfg[i + 3] = (u8)(v >> 24);
	}
	if (pci_header_parse(d->cfg, sizeof d->cfg, &d->hdr) == -ENODEV) {
		kfree(d);
		return;
	}
	if (fn == 0 && multi)
		*multi = d->hdr.multifunction;
	pci_size_bars(d);
	pci_find_caps(d);
	pci_insert_sorted(d);

	if (d->hdr.header_type == 1) {
		u8 sec = d->hdr.secondary_bus;

		if (sec <= bus)
			klog("pci: bridge %02x:%02x.%u has secondary bus %u, not scanned", bus, dev, fn, sec);
		else if (depth >= MAX_DEPTH)
			klog("pci: bridge %02x:%02x.%u nested too deep, not scanned", bus, dev, fn);
		else
			pci_scan_bus(sec, d, depth + 1);
	}
}

static void pci_scan_bus(u8 bus, struct pci_dev *parent, int depth)
{
	u8 dev, fn;

	if (bus_seen[bus / 8] & (1u << (bus % 8))) {
		klog("pci: bus %u reached twice, bridge loop ignored", bus);
		return;
	}
	bus_seen[bus / 8] |= 1u << (bus % 8);
	for (dev = 0; dev < 32; dev++) {
		bool multi = false;

		pci_scan_fn(bus, dev, 0, parent, depth, &multi);
		for (fn = 1; multi && fn < 8; fn++)
			pci_scan_fn(bus, dev, fn, parent, depth, NULL);
	}
}

/* ---- INTx routing ---- */

static struct pci_dev *pci_find_dev(u8 bus, u8 dev, u8 fn)
{
	struct pci_dev *d;

	for (d = devices; d; d = d->next)
		if (d->bus == bus && d->dev == dev && d->fn == fn)
			return d;
	return NULL;
}

/*
 * The firmware's routing, as QEMU's chipsets wire it. Pins are swizzled
 * through each bridge ((pin + slot) mod 4) up to the root bus. Then:
 *   q35/ICH9: root slots 0-24 use PIRQ E-H, (slot + pin) mod 4, and PIRQ n
 *             is IOAPIC input 16 + n in APIC mode (level, active high);
 *   pc/PIIX3: PIRQ (slot + pin - 1) mod 4, steered to the ISA IRQ that the
 *             firmware wrote into the PIIX3's PIRQRC registers (0x60-0x63).
 */
static void pci_route_intx(struct pci_dev *d)
{
	const struct acpi_info *acpi = acpi_get();
	struct pci_dev *up = d, *isa;
	u8 pin = d->hdr.int_pin, irq;
	u32 pirq;

	if (pin < 1 || pin > 4)
		return;
	while (up->parent) {
		pin = (u8)((pin - 1 + up->dev) % 4 + 1);
		up = up->parent;
	}
	if (chipset == CHIPSET_Q35 && up->dev < 25) {
		pirq = (up->dev + pin - 1) % 4 + 4;
		d->intx_gsi = (int)(16 + pirq);
		d->intx_level = true;
	} else if (chipset == CHIPSET_PIIX && (isa = pci_find_dev(0, 1, 0)) != NULL) {
		pirq = (up->dev + pin - 2) & 3;
		irq = pci_read8(isa, (u16)(0x60 + pirq));
		if (irq & 0x80 || irq >= 16)
			return;	/* routing disabled by firmware */
		d->intx_gsi = (int)(acpi ? acpi_irq_to_gsi(acpi, irq, NULL) : irq);
		d->intx_level = true;
	}
}

int pci_intx_route(struct pci_dev *d, irq_fn fn, void *arg)
{
	if (d->intx_gsi < 0)
		return -ENODEV;
	pci_write16(d, PCI_COMMAND, pci_read16(d, PCI_COMMAND) & ~PCI_CMD_INTX_DISABLE);
	return irq_route_gsi((u32)d->intx_gsi, d->intx_level, d->intx_low, fn, arg);
}

/* ---- drivers ---- */

static const struct pci_id *pci_id_match(const struct pci_dev *d, const struct pci_id *id)
{
	u32 cls = (u32)d->hdr.class_code << 16 | (u32)d->hdr.subclass << 8 | d->hdr.prog_if;

	for (; id->vendor; id++) {
		if (id->vendor != PCI_ANY_ID && id->vendor != d->hdr.vendor_id)
			continue;
		if (id->device != PCI_ANY_ID && id->device != d->hdr.device_id)
			continue;
		if ((cls & id->class_mask) != (id->class_code & id->class_mask))
			continue;
		return id;
	}
	return NULL;
}

static const struct pci_driver *pci_driver_for(const struct pci_dev *d, const struct pci_id **id_out)
{
	const struct pci_driver *const *p;

	LINKSET_FOREACH(pci_drivers, p) {
		const struct pci_id *id = pci_id_match(d, (*p)->ids);

		if (id) {
			if (id_out)
				*id_out = id;
			return *p;
		}
	}
	return NULL;
}

void pci_probe_drivers(void)
{
	struct pci_dev *d;

	for (d = devices; d; d = d->next) {
		const struct pci_id *id = NULL;
		const struct pci_driver *drv = pci_driver_for(d, &id);
		int err;

		if (!drv || d->driver)
			continue;
		err = drv->probe(d, id);
		if (err)
			kprintf("pci: %02x:%02x.%u %s probe failed (%d)\n", d->bus, d->dev, d->fn, drv->name, err);
		else
			d->driver = drv;
	}
}

/* ---- listing ---- */

static const char *pci_class_name(u8 cls, u8 sub)
{
	switch (cls << 8 | sub) {
	case 0x0101: return "IDE";
	case 0x0106: return "SATA";
	case 0x0200: return "ethernet";
	case 0x0300: return "VGA";
	case 0x0600: return "host bridge";
	case 0x0601: return "ISA bridge";
	case 0x0604: return "PCI bridge";
	case 0x0780: return "communication";
	case 0x0c05: return "SMBus";
	case 0x00ff: return "unclassified";
	}
	switch (cls) {
	case 0x01: return "storage";
	case 0x02: return "network";
	case 0x06: return "bridge";
	case 0x07: return "communication";
	case 0x10: return "crypto";
	}
	return "device";
}

static void pci_print_size(u64 n)
{
	if (n >= (1ULL << 30) && !(n & ((1ULL << 30) - 1)))
		kprintf("%lu GiB", n >> 30);
	else if (n >= (1ULL << 20) && !(n & ((1ULL << 20) - 1)))
		kprintf("%lu MiB", n >> 20);
	else if (n >= 1024 && !(n & 1023))
		kprintf("%lu KiB", n >> 10);
	else
		kprintf("%lu B", n);
}

static void pci_print_dev(const struct pci_dev *d)
{
	static const char *const kinds[] = { "none", "io", "mem32", "mem64" };
	const struct pci_driver *drv = pci_driver_for(d, NULL);
	struct pci_cap_iter it;
	unsigned i;
	u8 id;
	int off;

	kprintf("pci: %02x:%02x.%u %04x:%04x %02x%02x %s [%s]\n", d->bus, d->dev, d->fn, d->hdr.vendor_id,
		d->hdr.device_id, d->hdr.class_code, d->hdr.subclass,
		pci_class_name(d->hdr.class_code, d->hdr.subclass), drv ? drv->name : "no driver");
	for (i = 0; i < 6; i++) {
		const struct pci_bar *b = &d->bar[i];

		if (b->kind == PCI_BAR_NONE)
			continue;
		kprintf("       bar%u %s%s %#lx ", i, kinds[b->kind], b->prefetchable ? " pref" : "", b->base);
		pci_print_size(b->size);
		kprintf("\n");
	}
	kprintf("       caps:");
	pci_cap_iter_init(&it, d->cfg, sizeof d->cfg);
	while ((off = pci_cap_iter_next(&it, &id)) > 0) {
		if (id == PCI_CAP_ID_MSIX)
			kprintf(" msix(%u)", d->msix_cap == off ? d->msix.table_size : 0);
		else if (id == PCI_CAP_ID_MSI)
			kprintf(" msi");
		else if (id == PCI_CAP_ID_VNDR)
			kprintf(" vndr");
		else if (id == PCI_CAP_ID_PCIE)
			kprintf(" pcie");
		else if (id == 0x01)
			kprintf(" pm");
		else
			kprintf(" %#x", id);
	}
	if (off < 0)
		kprintf(" (malformed list)");
	if (d->hdr.int_pin >= 1 && d->hdr.int_pin <= 4) {
		if (d->intx_gsi >= 0)
			kprintf("; INT%c -> gsi %d %s", 'A' + d->hdr.int_pin - 1, d->intx_gsi,
				d->intx_level ? "level" : "edge");
		else
			kprintf("; INT%c -> no route (poll)", 'A' + d->hdr.int_pin - 1);
	}
	if (d->hdr.header_type == 1)
		kprintf("; bus %u-%u", d->hdr.secondary_bus, d->hdr.subordinate_bus);
	kprintf("\n");
}

/* Configuration mechanism #1 is there when its address register keeps
 * what is written to it: the test PC BIOSes and Linux make. Where nothing
 * decodes port 0xcf8 (QEMU microvm) it reads back all ones, and the scan
 * (256 config reads, and their translation under emulation) is skipped. */
static bool pci_ports_present(void)
{
	u32 saved = inl(0xcf8), back;

	outl(0xcf8, 0x80000000u);
	back = inl(0xcf8);
	outl(0xcf8, saved);
	return back == 0x80000000u;
}

void pci_init(void)
{
	const struct acpi_info *acpi = acpi_get();
	struct pci_dev *host, *d;
	unsigned n = 0;
	u32 i;

	for (i = 0; acpi && i < acpi->ecam_count; i++) {
		const struct acpi_ecam *e = &acpi->ecam[i];

		if (e->segment != 0)
			continue;	/* only segment 0 is scanned */
		ecam_start = e->start_bus;
		ecam_end = e->end_bus;
		ecam_base = (u64)mmio_map(e->base + ((u64)e->start_bus << 20),
					  ((u64)e->end_bus - e->start_bus + 1) << 20);
		if (ecam_base)
			ecam_base -= (u64)e->start_bus << 20;
		break;
	}
	if (!ecam_base && !pci_ports_present()) {
		kprintf("pci: no ECAM and nothing at port 0xcf8: no PCI, scan skipped\n");
		return;
	}
	kprintf("pci: config access through %s\n", ecam_base ? "ECAM" : "ports 0xcf8/0xcfc");
	pci_scan_bus(ecam_base ? ecam_start : 0, NULL, 0);

	host = pci_find_dev(0, 0, 0);
	if (host && host->hdr.vendor_id == 0x8086 && host->hdr.device_id == 0x29c0)
		chipset = CHIPSET_Q35;
	else if (host && host->hdr.vendor_id == 0x8086 && host->hdr.device_id == 0x1237)
		chipset = CHIPSET_PIIX;
	for (d = devices; d; d = d->next) {
		pci_route_intx(d);
		pci_print_dev(d);
		n++;
	}
	kprintf("pci: %u functions, chipset %s\n", n,
		chipset == CHIPSET_Q35 ? "q35" : chipset == CHIPSET_PIIX ? "i440fx/piix3" : "unknown");
}

struct pci_dev *pci_devices(void)
{
	return devices;
}

struct pci_dev *pci_find(u8 bus, u8 dev, u8 fn)
{
	struct pci_dev *p;

	for (p = devices; p; p = p->next)
		if (p->seg == 0 && p->bus == bus && p->dev == dev && p->fn == fn)
			return p;
	return NULL;
}

u8 pci_cfg_read8_bdf(void *ctx, u8 bus, u8 dev, u8 fn, u16 off)
{
	struct pci_dev *p = pci_find(bus, dev, fn);

	(void)ctx;
	return p ? pci_read8(p, off) : 0xff;
}

void pci_enable(struct pci_dev *d)
{
	pci_write16(d, PCI_COMMAND, pci_read16(d, PCI_COMMAND) | PCI_CMD_IO | PCI_CMD_MEM | PCI_CMD_MASTER);
}

u64 pci_map_bar_window(struct pci_dev *d, unsigned i, u64 off, u64 len)
{
	const struct pci_bar *b;
	int err;

	if (i >= 6)
		return 0;
	b = &d->bar[i];
	err = pci_bar_window_check(b, off, len, PCI_BAR_WINDOW_MAX);
	if (err == 0)
		err = mmio_check(b->base, b->size);	/* the device decodes all of it */
	if (err) {
		kprintf("pci: %02x:%02x.%u BAR%u %#lx+%#lx window %#lx+%#lx refused (%d)\n", d->bus, d->dev,
			d->fn, i, b->base, b->size, off, len, err);
		return 0;
	}
	return (u64)mmio_map(b->base + off, len);
}

/* ---- MSI-X ---- */

int pci_msix_enable(struct pci_dev *d)
{
	u16 ctrl, i;
	u64 bar;

	if (!d->msix_cap)
		return -ENODEV;
	bar = pci_map_bar_window(d, d->msix.table_bir, d->msix.table_offset,
				 (u64)d->msix.table_size * PCI_MSIX_ENTRY_SIZE);
	if (!bar)
		return -ENODEV;
	d->msix_table = bar;
	ctrl = pci_read16(d, d->msix_cap + PCI_MSIX_CTRL);
	pci_write16(d, d->msix_cap + PCI_MSIX_CTRL, ctrl | PCI_MSIX_CTRL_ENABLE | PCI_MSIX_CTRL_MASKALL);
	for (i = 0; i < d->msix.table_size; i++)
		mmio_w32(d->msix_table + i * PCI_MSIX_ENTRY_SIZE + 12, 1);
	pci_write16(d, d->msix_cap + PCI_MSIX_CTRL, (ctrl | PCI_MSIX_CTRL_ENABLE) & ~PCI_MSIX_CTRL_MASKALL);
	pci_write16(d, PCI_COMMAND, pci_read16(d, PCI_COMMAND) | PCI_CMD_INTX_DISABLE);
	return d->msix.table_size;
}

int pci_msix_set(struct pci_dev *d, u16 idx, int vector)
{
	u64 addr, e;
	u32 data;

	if (!d->msix_table || idx >= d->msix.table_size)
		return -EINVAL;
	msi_compose_for((u16)(d->bus << 8 | d->dev << 3 | d->fn), vector, &addr, &data);
	e = d->msix_table + (u64)idx * PCI_MSIX_ENTRY_SIZE;
	mmio_w32(e + 12, 1);
	mmio_w32(e + 0, (u32)addr);
	mmio_w32(e + 4, (u32)(addr >> 32));
	mmio_w32(e + 8, data);
	mmio_w32(e + 12, 0);
	return 0;
}

void pci_msix_mask(struct pci_dev *d, u16 idx, bool masked)
{
	if (d->msix_table && idx < d->msix.table_size)
		mmio_w32(d->msix_table + (u64)idx * PCI_MSIX_ENTRY_SIZE + 12, masked ? 1 : 0);
}

void pci_msix_disable(struct pci_dev *d)
{
	u16 ctrl;

	if (!d->msix_cap)
		return;
	ctrl = pci_read16(d, d->msix_cap + PCI_MSIX_CTRL);
	pci_write16(d, d->msix_cap + PCI_MSIX_CTRL, ctrl & ~PCI_MSIX_CTRL_ENABLE);
}
