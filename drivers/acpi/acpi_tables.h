/* ACPI static tables: RSDP/XSDT/RSDT walk and MADT, MCFG, FADT, HPET decode
 * into a plain struct. Pure parsing: memory is reached only through a hook. */
#ifndef VIREO_ACPI_TABLES_H
#define VIREO_ACPI_TABLES_H

#include "lib/types.h"

/* How the parser reaches physical memory. map() returns a pointer valid for
 * len bytes starting at phys, or NULL if that range cannot be read. It is
 * called for a table's header, then again for the whole table; pointers
 * must stay valid until acpi_parse() returns (the root table is read while
 * the tables it lists are mapped). The parser never writes through them
 * and keeps none afterwards: no unmap callback is needed. */
struct acpi_mem {
	const void *(*map)(void *ctx, u64 phys, u64 len);
	void *ctx;
};

#define ACPI_MAX_TABLES		64	/* tables recorded in acpi_info.tables */
#define ACPI_MAX_ROOT_ENTRIES	128	/* XSDT/RSDT entries looked at */
#define ACPI_MAX_TABLE_LEN	(1u << 20)	/* longer tables are rejected */
#define ACPI_MAX_CPUS		64
#define ACPI_MAX_IOAPICS	8
#define ACPI_MAX_ISOS		16
#define ACPI_MAX_NMIS		16
#define ACPI_MAX_ECAM		8

/* Generic Address Structure, ACPI 6.x §5.2.3.2. */
struct acpi_gas {
	u8  space_id;		/* ACPI_GAS_* */
	u8  bit_width;
	u8  bit_offset;
	u8  access_size;	/* 0 undefined, 1 byte .. 4 qword */
	u64 address;		/* 0: register not present */
};
#define ACPI_GAS_SYSMEM		0
#define ACPI_GAS_SYSIO		1
#define ACPI_GAS_PCI_CFG	2

/* One table the root table listed, accepted (checksum and bounds good). */
struct acpi_table_ref {
	char sig[5];		/* NUL-terminated copy of the signature */
	u8   revision;
	u32  len;
	u64  phys;
};

/* MADT processor (type 0 local APIC or type 9 local x2APIC). Only entries
 * with Enabled or Online Capable set are recorded. */
struct acpi_cpu {
	u32  apic_id;
	u32  uid;		/* ACPI processor UID */
	bool x2apic;		/* came from a type 9 entry */
	bool enabled;		/* usable now; else only online-capable */
};

struct acpi_ioapic {
	u8  id;
	u32 addr;
	u32 gsi_base;
};

/* Interrupt source override (MADT type 2): ISA irq -> gsi. */
struct acpi_iso {
	u8  bus;		/* always 0 (ISA); others are dropped */
	u8  irq;
	u32 gsi;
	u16 flags;		/* ACPI_MPS_* polarity and trigger */
};

/* MPS INTI flags (ISO and NMI entries). "Conforms" means the bus default:
 * active high, edge for ISA. */
#define ACPI_MPS_POL_MASK	0x3
#define ACPI_MPS_POL_CONFORM	0x0
#define ACPI_MPS_POL_HIGH	0x1
#define ACPI_MPS_POL_LOW	0x3
#define ACPI_MPS_TRIG_MASK	0xc
#define ACPI_MPS_TRIG_CONFORM	0x0
#define ACPI_MPS_TRIG_EDGE	0x4
#define ACPI_MPS_TRIG_LEVEL	0xc

/* NMI wiring: either an interrupt-controller input (MADT type 3) or a local
 * APIC LINT pin (types 4 and 0xA). */
#define ACPI_UID_ALL_CPUS	0xffffffffu
struct acpi_nmi {
	bool lapic;		/* true: LINT 'lint' of cpu 'uid'; false: 'gsi' */
	u8   lint;
	u16  flags;		/* ACPI_MPS_* */
	u32  uid;		/* ACPI_UID_ALL_CPUS = every processor */
	u32  gsi;
};

struct acpi_madt {
	bool present;
	bool pcat_compat;	/* dual 8259s present: mask them before IOAPIC use */
	u64  lapic_addr;	/* type 5 override applied */
	u32  cpu_count, ioapic_count, iso_count, nmi_count;
	struct acpi_cpu    cpus[ACPI_MAX_CPUS];
	struct acpi_ioapic ioapics[ACPI_MAX_IOAPICS];
	struct acpi_iso    isos[ACPI_MAX_ISOS];
	struct acpi_nmi    nmis[ACPI_MAX_NMIS];
};

/* MCFG entry: ECAM window. base is the address of bus 0 of the segment even
 * when start_bus > 0; bus b lives at base + (b << 20). */
struct acpi_ecam {
	u64 base;
	u16 segment;
	u8  start_bus, end_bus;
};

/* IAPC_BOOT_ARCH bits (acpi_fadt.boot_arch, valid if boot_arch_valid). */
#define ACPI_BOOT_LEGACY_DEVICES	(1u << 0)
#define ACPI_BOOT_8042			(1u << 1)
#define ACPI_BOOT_NO_VGA		(1u << 2)
#define ACPI_BOOT_NO_MSI		(1u << 3)
#define ACPI_BOOT_NO_ASPM		(1u << 4)
#define ACPI_BOOT_NO_CMOS_RTC		(1u << 5)

/* FADT Flags bits (acpi_fadt.flags). */
#define ACPI_FADT_TMR_VAL_EXT	(1u << 8)
#define ACPI_FADT_RESET_REG_SUP	(1u << 10)
#define ACPI_FADT_HW_REDUCED	(1u << 20)

/* FADT fields; each is read only if the table's length (and, where noted,
 * revision) covers it, else it stays 0/false. */
struct acpi_fadt {
	bool present;
	u8   revision;
	u32  len;
	u16  sci_int;
	u32  flags;		/* raw Flags (0 if the table is shorter) */
	u64  facs;		/* X_FIRMWARE_CTRL preferred (rev >= 3) */
	u64  dsdt;		/* X_DSDT preferred (rev >= 3) */
	/* ACPI PM timer: X_PM_TMR_BLK (rev >= 3, non-zero) preferred, else
	 * PM_TMR_BLK as a SYSIO port when PM_TMR_LEN >= 4. address 0: none
	 * (always none on HW-reduced platforms). */
	struct acpi_gas pm_timer;
	u8   pm_timer_bits;	/* 24 or 32 (TMR_VAL_EXT); 0 when no timer */
	/* Reset register (rev >= 2): usable only if reset_supported. */
	bool reset_supported;	/* RESET_REG_SUP set and RESET_REG valid */
	struct acpi_gas reset_reg;
	u8   reset_value;
	bool boot_arch_valid;	/* rev >= 3: otherwise assume legacy PC */
	u16  boot_arch;		/* ACPI_BOOT_* */
	u8   century;		/* CMOS index of the century byte, 0 = none */
	bool hw_reduced;	/* HW_REDUCED_ACPI, rev >= 5 */
	/* Fixed PM hardware (none on HW-reduced): I/O ports, 0 = absent. An
	 * X_ block (rev >= 3) in I/O space wins over the legacy field; event
	 * blocks need PM1_EVT_LEN >= 4 (even), control blocks PM1_CNT_LEN >= 2. */
	u32  smi_cmd;		/* 0: ACPI mode is fixed (no SMI transition) */
	u8   acpi_enable, acpi_disable;
	u8   pm1_evt_len, pm1_cnt_len;
	u16  pm1a_evt, pm1b_evt;	/* status at +0, enable at +pm1_evt_len/2 */
	u16  pm1a_cnt, pm1b_cnt;
	/* Hardware-reduced sleep registers (rev >= 5): address 0 = absent;
	 * when present, both are 8-bit memory or I/O registers. */
	struct acpi_gas sleep_ctl, sleep_sts;
};

struct acpi_hpet {
	bool present;
	u64  base;		/* system memory address of the register block */
	u16  min_tick;		/* minimum periodic tick, in counter ticks */
	u8   hpet_number;
	u32  block_id;		/* raw Event Timer Block ID (0 = not given) */
	u8   comparators;	/* from block_id: NUM_TIM_CAP + 1, 0 = unknown */
	bool counter_64bit;	/* from block_id (COUNT_SIZE_CAP) */
	bool legacy_capable;	/* from block_id (LEG_RT_CAP) */
};

/* DMAR (Intel VT-d spec 4.x §8): DMA remapping hardware units (DRHD), the
 * memory firmware devices keep using (RMRR) and their device scopes. */
#define ACPI_DMAR_MAX_UNITS	8
#define ACPI_DMAR_MAX_RMRR	8
#define ACPI_DMAR_MAX_SCOPES	32	/* all units and RMRRs together */
#define ACPI_DMAR_MAX_PATH	8	/* (device, function) hops per scope */

#define ACPI_DMAR_INTR_REMAP	(1u << 0)	/* DMAR Flags */
#define ACPI_DMAR_X2APIC_OPT_OUT (1u << 1)

#define ACPI_DSCOPE_ENDPOINT	1
#define ACPI_DSCOPE_BRIDGE	2	/* PCI sub-hierarchy */
#define ACPI_DSCOPE_IOAPIC	3
#define ACPI_DSCOPE_HPET	4
#define ACPI_DSCOPE_NAMESPACE	5

struct acpi_dmar_scope {
	u8 type;		/* ACPI_DSCOPE_* */
	u8 enum_id;		/* IOAPIC/HPET id */
	u8 start_bus;
	u8 path_len;		/* 1..ACPI_DMAR_MAX_PATH */
	u8 path[ACPI_DMAR_MAX_PATH][2];	/* (device, function) */
};

struct acpi_drhd {
	u64  base;		/* register block, 4 KiB aligned, not 0 */
	u16  segment;
	u8   size;		/* register set is 2^(size+12) bytes (0 in old tables) */
	bool include_all;	/* INCLUDE_PCI_ALL: every device of the segment not
				 * named by another unit's scope */
	u8   scope_first, scope_count;	/* in acpi_dmar.scopes */
};

struct acpi_rmrr {
	u64 base, limit;	/* [base, limit], page-aligned, limit >= base */
	u16 segment;
	u8  scope_first, scope_count;
};

struct acpi_dmar {
	bool present;
	u8   haw;		/* host address width in bits (field + 1) */
	u8   flags;		/* ACPI_DMAR_* */
	u32  unit_count, rmrr_count, scope_count;
	struct acpi_drhd units[ACPI_DMAR_MAX_UNITS];
	struct acpi_rmrr rmrrs[ACPI_DMAR_MAX_RMRR];
	struct acpi_dmar_scope scopes[ACPI_DMAR_MAX_SCOPES];
};

struct acpi_info {
	u8   rsdp_revision;
	bool xsdt;		/* root table is the XSDT (else the RSDT) */
	u64  root_phys;
	char oem_id[7];		/* from the RSDP, NUL-terminated */
	u32  table_count;
	struct acpi_table_ref tables[ACPI_MAX_TABLES];

	struct acpi_madt madt;
	bool mcfg_present;	/* an MCFG was accepted (windows may be 0) */
	u32  ecam_count;
	struct acpi_ecam ecam[ACPI_MAX_ECAM];
	struct acpi_fadt fadt;
	struct acpi_hpet hpet;
	struct acpi_dmar dmar;

	u32  warnings;		/* klog lines emitted while parsing */
};

/* Parse the ACPI tables reachable from the RSDP at rsdp_phys into *out
 * (zeroed first; the caller owns it, ~3 KiB: keep it off small stacks).
 * Every table must map, be 36..ACPI_MAX_TABLE_LEN bytes long and sum to 0;
 * a bad table is skipped with one klog line naming it, never trusted.
 * The first valid FACP/APIC/MCFG/HPET/DMAR wins; later ones, tables overlapping
 * the root table or an accepted table, and self-references are skipped with
 * a warning. A MADT entry whose length is < 2 or overruns the table ends
 * the MADT walk (entries before it are kept); one too short for its type is
 * skipped. Bad MCFG windows (end < start, base 0 or not 1 MiB aligned,
 * wrapping, overlapping an earlier one) are dropped one by one.
 * DMAR: a structure whose length is < 4 or overruns the table ends the walk;
 * a DRHD with base 0, unaligned, or repeated, an RMRR with an unaligned or
 * inverted range, and a device scope with a bad length or an empty or too
 * long path are dropped one by one, each with a warning.
 * Returns 0 (tables found; individual tables may still be absent, see the
 * present flags), -EFAULT if the RSDP cannot be mapped, -EBADMSG if it has
 * a bad signature or checksum, -ENOENT if neither XSDT nor RSDT is usable,
 * -EINVAL on NULL arguments. */
int acpi_parse(u64 rsdp_phys, const struct acpi_mem *mem, struct acpi_info *out);

/* Config-space byte reader for walking DMAR scope paths over the bus. */
typedef u8 (*acpi_cfg_read8)(void *ctx, u8 bus, u8 dev, u8 fn, u16 off);

/* Resolve a PCI scope (endpoint or bridge) to the bus/device/function its
 * path ends at: each hop but the last must be a PCI-to-PCI bridge (header
 * type 1) whose secondary bus is read through rd. Returns 0 and *bdf
 * (bus << 8 | dev << 3 | fn), -ENOENT if a hop is absent (vendor 0xffff),
 * -EINVAL if a hop is not a bridge, has a secondary bus not above its own,
 * or the scope is not a PCI one. */
int acpi_dmar_scope_bdf(const struct acpi_dmar_scope *s, acpi_cfg_read8 rd, void *ctx, u16 *bdf);

/* The unit covering PCI device seg:bdf: a unit whose endpoint scope names it
 * or whose bridge scope's bus range [secondary, subordinate] holds its bus
 * wins; else the segment's INCLUDE_PCI_ALL unit. Returns the index in
 * dmar->units or -1. */
int acpi_dmar_unit_for(const struct acpi_dmar *dmar, u16 seg, u16 bdf, acpi_cfg_read8 rd,
		       void *ctx);

/* GSI for an ISA irq: the MADT override's gsi and flags, else irq itself
 * with flags 0 (conforming: ISA edge, active high). flags_out may be NULL. */
u32 acpi_irq_to_gsi(const struct acpi_info *info, u8 isa_irq, u16 *flags_out);

/* The accepted table with this 4-character signature (first one), or NULL. */
const struct acpi_table_ref *acpi_find_table(const struct acpi_info *info,
					     const char *sig);

#endif
