/* PCI: config access (ECAM or port I/O), bus scan behind bridges, BARs,
 * MSI-X, INTx routing, and the driver registry that matches devices. */
#ifndef VIREO_PCI_H
#define VIREO_PCI_H

#include "drivers/pci/pci_parse.h"
#include "kernel/arch/irq.h"
#include "vireo/linkset.h"
#include "lib/types.h"

struct pci_driver;

struct pci_dev {
	u16 seg;
	u8 bus, dev, fn;
	struct pci_header hdr;
	struct pci_bar bar[6];
	u8 cfg[PCI_CFG_LEN];		/* snapshot taken at scan time */
	u8 msix_cap, msi_cap;		/* config offsets, 0 if absent */
	struct pci_msix_info msix;	/* valid if msix_cap */
	u64 msix_table;			/* mapped table, 0 until pci_msix_enable */
	int intx_gsi;			/* IOAPIC input for INTx, -1 if unknown */
	bool intx_level, intx_low;
	struct pci_dev *parent;		/* bridge above, NULL on a root bus */
	const struct pci_driver *driver;
	void *priv;
	struct pci_dev *next;
};

#define PCI_ANY_ID 0xffff
struct pci_id {
	u16 vendor, device;	/* PCI_ANY_ID matches any */
	u32 class_code;		/* class << 16 | subclass << 8 | prog_if */
	u32 class_mask;		/* 0: class is not compared */
};

struct pci_driver {
	const char *name;
	const struct pci_id *ids;	/* terminated by vendor 0 */
	/* Returns 0 if the device is now driven, else a negative error. */
	int (*probe)(struct pci_dev *d, const struct pci_id *id);
};

/* Registers a driver at link time, in the pci_drivers linker set
 * (include/vireo/linkset.h): PCI_DRIVER(my_driver); */
#define PCI_DRIVER(d) VIREO_LINKSET_ADD(pci_drivers, const struct pci_driver, d, d)

/* Scans every bus and prints the listing; does not probe. */
void pci_init(void);
/* Matches and probes registered drivers against every device. */
void pci_probe_drivers(void);
struct pci_dev *pci_devices(void);
/* The scanned function at segment 0 bus:dev.fn, or NULL. */
struct pci_dev *pci_find(u8 bus, u8 dev, u8 fn);
/* A byte of that function's configuration space, 0xff when there is no such
 * function (what a read of an empty slot returns): the shape of the config reader
 * the ACPI DMAR scope walks take (drivers/acpi/acpi_tables.h), ctx unused. */
u8 pci_cfg_read8_bdf(void *ctx, u8 bus, u8 dev, u8 fn, u16 off);

u32 pci_read32(const struct pci_dev *d, u16 off);
u16 pci_read16(const struct pci_dev *d, u16 off);
u8 pci_read8(const struct pci_dev *d, u16 off);
void pci_write32(const struct pci_dev *d, u16 off, u32 v);
void pci_write16(const struct pci_dev *d, u16 off, u16 v);
void pci_write8(const struct pci_dev *d, u16 off, u8 v);
/* Turns on memory/I/O decoding and bus mastering. */
void pci_enable(struct pci_dev *d);
/* Maps [off, off+len) of memory BAR i uncached, only that window: it must
 * lie inside the BAR and be at most PCI_BAR_WINDOW_MAX long, and the BAR
 * must not overlap RAM or the kernel (mmio_check). Returns the window's
 * address, or 0 (logged). */
u64 pci_map_bar_window(struct pci_dev *d, unsigned i, u64 off, u64 len);

/* MSI-X: maps the table, masks every vector, enables MSI-X (INTx off).
 * Returns the number of vectors or a negative error. */
int pci_msix_enable(struct pci_dev *d);
/* Points table entry idx at `vector` on this CPU and unmasks it. */
int pci_msix_set(struct pci_dev *d, u16 idx, int vector);
void pci_msix_mask(struct pci_dev *d, u16 idx, bool masked);
void pci_msix_disable(struct pci_dev *d);
/* Routes INTx to fn; returns the vector, or -ENODEV when no route is known
 * (the caller then polls from a timer). */
int pci_intx_route(struct pci_dev *d, irq_fn fn, void *arg);

#endif
