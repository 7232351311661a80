/* ACPI static table parser (ACPI 6.x §5.2). Firmware tables are input like
 * any other: every length is bounded by what we mapped, every table must
 * sum to zero, and a bad table is skipped with one warning. All multi-byte
 * fields are read byte by byte, so tables may sit at any alignment. */
#include "drivers/acpi/acpi_tables.h"
#include "lib/byteorder.h"
#include "lib/string.h"
#include <arch.h>

#define ACPI_HDR_LEN		36	/* System Description Table Header */
#define RSDP_V1_LEN		20
#define RSDP_V2_LEN		36
#define RSDP_MAX_LEN		4096	/* sanity cap on the v2 length field */

#define MADT_ENTRIES		44
#define MCFG_ENTRIES		44
#define MCFG_ENTRY_LEN		16
#define ECAM_BUS_SHIFT		20	/* 1 MiB of config space per bus */

/* FADT field offsets (ACPI 6.5 Table 5.9). */
#define FADT_FIRMWARE_CTRL	36
#define FADT_DSDT		40
#define FADT_SCI_INT		46
#define FADT_SMI_CMD		48
#define FADT_ACPI_ENABLE	52
#define FADT_ACPI_DISABLE	53
#define FADT_PM1A_EVT_BLK	56
#define FADT_PM1B_EVT_BLK	60
#define FADT_PM1A_CNT_BLK	64
#define FADT_PM1B_CNT_BLK	68
#define FADT_PM_TMR_BLK		76
#define FADT_PM1_EVT_LEN	88
#define FADT_PM1_CNT_LEN	89
#define FADT_PM_TMR_LEN		91
#define FADT_CENTURY		108
#define FADT_IAPC_BOOT_ARCH	109
#define FADT_FLAGS		112
#define FADT_RESET_REG		116
#define FADT_RESET_VALUE	128
#define FADT_X_FIRMWARE_CTRL	132
#define FADT_X_DSDT		140
#define FADT_X_PM1A_EVT_BLK	148
#define FADT_X_PM1B_EVT_BLK	160
#define FADT_X_PM1A_CNT_BLK	172
#define FADT_X_PM1B_CNT_BLK	184
#define FADT_X_PM_TMR_BLK	208
#define FADT_SLEEP_CONTROL_REG	244
#define FADT_SLEEP_STATUS_REG	256
#define GAS_LEN			12

/* HPET table field offsets (IA-PC HPET spec 1.0a §3.2.4). */
#define HPET_BLOCK_ID		36
#define HPET_BASE		40
#define HPET_NUMBER		52
#define HPET_MIN_TICK		53

/* MADT entry types. */
#define MADT_LAPIC		0
#define MADT_IOAPIC		1
#define MADT_ISO		2
#define MADT_NMI_SRC		3
#define MADT_LAPIC_NMI		4
#define MADT_LAPIC_ADDR		5
#define MADT_X2APIC		9
#define MADT_X2APIC_NMI		10

#define MADT_CPU_ENABLED	(1u << 0)
#define MADT_CPU_ONLINE_CAP	(1u << 1)

/* Warnings for a full output array are given once per array. */
enum {
	FULL_TABLES = 1 << 0,
	FULL_CPUS = 1 << 1,
	FULL_IOAPICS = 1 << 2,
	FULL_ISOS = 1 << 3,
	FULL_NMIS = 1 << 4,
	FULL_ECAM = 1 << 5,
};

struct acpi_walk {
	const struct acpi_mem *mem;
	struct acpi_info *info;
	u64 root_phys;
	u32 root_len;
	const char *root_name;
	u32 full_warned;
};

/* One klog line per problem; the count lets callers and tests see them. */
#define acpi_warn(w, ...)					\
	do {							\
		(w)->info->warnings++;				\
		klog("acpi: " __VA_ARGS__);			\
	} while (0)

static u8 acpi_checksum(const u8 *p, u32 len)
{
	u8 sum = 0;
	u32 i;

	for (i = 0; i < len; i++)
		sum = (u8)(sum + p[i]);
	return sum;
}

static bool acpi_bytes_eq(const u8 *p, const char *s, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		if (p[i] != (u8)s[i])
			return false;
	return true;
}

/* Copy n signature/OEM bytes as a printable, NUL-terminated string. */
static void acpi_str_copy(char *dst, const u8 *src, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++)
		dst[i] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char)src[i] : '?';
	dst[n] = '\0';
}

static const u8 *acpi_tables_map(const struct acpi_walk *w, u64 phys, u64 len)
{
	if (len == 0 || phys + len < phys)
		return NULL;
	return w->mem->map(w->mem->ctx, phys, len);
}

static bool acpi_ranges_overlap(u64 a, u64 alen, u64 b, u64 blen)
{
	return a < b + blen && b < a + alen;
}

/* Map the header, then the whole table, and check length and checksum.
 * 'expect' names the table when the caller knows what it wants (root
 * tables); otherwise messages use the signature found. Returns the table
 * (valid for *len_out bytes) or NULL after exactly one warning. */
static const u8 *acpi_table_load(struct acpi_walk *w, u64 phys,
				 const char *expect, u32 *len_out, char sig[5])
{
	const u8 *h, *t;
	const char *name;
	u32 len;

	h = acpi_tables_map(w, phys, ACPI_HDR_LEN);
	if (!h) {
		acpi_warn(w, "%s at 0x%llx: header not readable, ignored",
			  expect ? expect : "table", (unsigned long long)phys);
		return NULL;
	}
	acpi_str_copy(sig, h, 4);
	name = expect ? expect : sig;
	if (expect && !acpi_bytes_eq(h, expect, 4)) {
		acpi_warn(w, "%s at 0x%llx: signature is '%s', ignored", expect,
			  (unsigned long long)phys, sig);
		return NULL;
	}
	len = get_le32(h + 4);
	if (len < ACPI_HDR_LEN) {
		acpi_warn(w, "%s at 0x%llx: length %u below header size, ignored",
			  name, (unsigned long long)phys, len);
		return NULL;
	}
	if (len > ACPI_MAX_TABLE_LEN) {
		acpi_warn(w, "%s at 0x%llx: length %u too large, ignored", name,
			  (unsigned long long)phys, len);
		return NULL;
	}
	t = acpi_tables_map(w, phys, len);
	if (!t) {
		acpi_warn(w, "%s at 0x%llx: length %u runs past readable memory, ignored",
			  name, (unsigned long long)phys, len);
		return NULL;
	}
	if (acpi_checksum(t, len) != 0) {
		acpi_warn(w, "%s at 0x%llx: bad checksum, ignored", name,
			  (unsigned long long)phys);
		return NULL;
	}
	*len_out = len;
	return t;
}

/* ---- MADT ---------------------------------------------------------------- */

static u8 acpi_madt_entry_min(u8 type)
{
	switch (type) {
	case MADT_LAPIC:	return 8;
	case MADT_IOAPIC:	return 12;
	case MADT_ISO:		return 10;
	case MADT_NMI_SRC:	return 8;
	case MADT_LAPIC_NMI:	return 6;
	case MADT_LAPIC_ADDR:	return 12;
	case MADT_X2APIC:	return 16;
	case MADT_X2APIC_NMI:	return 12;
	default:		return 2;	/* unknown types are skipped */
	}
}

static bool acpi_full(struct acpi_walk *w, u32 count, u32 cap, u32 bit,
		 const char *what)
{
	if (count < cap)
		return false;
	if (!(w->full_warned & bit)) {
		w->full_warned |= bit;
		acpi_warn(w, "more than %u %s, rest ignored", cap, what);
	}
	return true;
}

static void acpi_madt_add_cpu(struct acpi_walk *w, u32 apic_id, u32 uid, u32 flags,
			 bool x2apic)
{
	struct acpi_madt *m = &w->info->madt;
	struct acpi_cpu *c;
	u32 i;

	if (!(flags & (MADT_CPU_ENABLED | MADT_CPU_ONLINE_CAP)))
		return;		/* not present and cannot be brought online */
	for (i = 0; i < m->cpu_count; i++) {
		if (m->cpus[i].apic_id == apic_id) {
			acpi_warn(w, "MADT: APIC id %u listed twice, second ignored",
				  apic_id);
			return;
		}
	}
	if (acpi_full(w, m->cpu_count, ACPI_MAX_CPUS, FULL_CPUS, "CPUs"))
		return;
	c = &m->cpus[m->cpu_count++];
	c->apic_id = apic_id;
	c->uid = uid;
	c->x2apic = x2apic;
	c->enabled = flags & MADT_CPU_ENABLED;
}

static void acpi_madt_add_nmi(struct acpi_walk *w, bool lapic, u32 uid, u8 lint,
			 u32 gsi, u16 flags)
{
	struct acpi_madt *m = &w->info->madt;
	struct acpi_nmi *n;

	if (acpi_full(w, m->nmi_count, ACPI_MAX_NMIS, FULL_NMIS, "NMI entries"))
		return;
	n = &m->nmis[m->nmi_count++];
	n->lapic = lapic;
	n->uid = uid;
	n->lint = lint;
	n->gsi = gsi;
	n->flags = flags;
}

static void acpi_madt_entry(struct acpi_walk *w, const u8 *e, bool *addr_override)
{
	struct acpi_madt *m = &w->info->madt;
	u32 i;

	switch (e[0]) {
	case MADT_LAPIC:
		acpi_madt_add_cpu(w, e[3], e[2], get_le32(e + 4), false);
		break;
	case MADT_X2APIC:
		acpi_madt_add_cpu(w, get_le32(e + 4), get_le32(e + 12), get_le32(e + 8), true);
		break;
	case MADT_IOAPIC:
		if (acpi_full(w, m->ioapic_count, ACPI_MAX_IOAPICS, FULL_IOAPICS, "IOAPICs"))
			break;
		m->ioapics[m->ioapic_count].id = e[2];
		m->ioapics[m->ioapic_count].addr = get_le32(e + 4);
		m->ioapics[m->ioapic_count].gsi_base = get_le32(e + 8);
		m->ioapic_count++;
		break;
	case MADT_ISO:
		if (e[2] != 0) {
			acpi_warn(w, "MADT: override for bus %u (not ISA) ignored", e[2]);
			break;
		}
		for (i = 0; i < m->iso_count; i++) {
			if (m->isos[i].irq == e[3]) {
				acpi_warn(w, "MADT: second override for IRQ %u ignored", e[3]);
				return;
			}
		}
		if (acpi_full(w, m->iso_count, ACPI_MAX_ISOS, FULL_ISOS, "overrides"))
			break;
		m->isos[m->iso_count].bus = e[2];
		m->isos[m->iso_count].irq = e[3];
		m->isos[m->iso_count].gsi = get_le32(e + 4);
		m->isos[m->iso_count].flags = get_le16(e + 8);
		m->iso_count++;
		break;
	case MADT_NMI_SRC:
		acpi_madt_add_nmi(w, false, 0, 0, get_le32(e + 4), get_le16(e + 2));
		break;
	case MADT_LAPIC_NMI:
		acpi_madt_add_nmi(w, true, e[2] == 0xff ? ACPI_UID_ALL_CPUS : e[2],
			     e[5], 0, get_le16(e + 3));
		break;
	case MADT_X2APIC_NMI:
		acpi_madt_add_nmi(w, true, get_le32(e + 4), e[8], 0, get_le16(e + 2));
		break;
	case MADT_LAPIC_ADDR:
		if (*addr_override) {
			acpi_warn(w, "MADT: second local APIC address override ignored");
			break;
		}
		*addr_override = true;
		if (get_le64(e + 4))
			m->lapic_addr = get_le64(e + 4);
		break;
	default:
		break;
	}
}

static bool acpi_madt_parse(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_madt *m = &w->info->madt;
	bool addr_override = false;
	u32 off, elen;
	u8 need;

	if (len < MADT_ENTRIES) {
		acpi_warn(w, "MADT: length %u too short, ignored", len);
		return false;
	}
	m->present = true;
	m->lapic_addr = get_le32(t + 36);
	m->pcat_compat = get_le32(t + 40) & 1;

	for (off = MADT_ENTRIES; off < len; off += elen) {
		if (len - off < 2) {
			acpi_warn(w, "MADT: stray byte at offset %u", off);
			break;
		}
		elen = t[off + 1];
		if (elen < 2) {
			acpi_warn(w, "MADT: entry at offset %u has length %u, walk stopped",
				  off, elen);
			break;
		}
		if (elen > len - off) {
			acpi_warn(w, "MADT: entry at offset %u (length %u) overruns table, walk stopped",
				  off, elen);
			break;
		}
		need = acpi_madt_entry_min(t[off]);
		if (elen < need) {
			acpi_warn(w, "MADT: type %u entry at offset %u is %u bytes, needs %u; skipped",
				  t[off], off, elen, need);
			continue;
		}
		acpi_madt_entry(w, t + off, &addr_override);
	}
	return true;
}

/* ---- MCFG ---------------------------------------------------------------- */

static bool acpi_mcfg_parse(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_info *info = w->info;
	struct acpi_ecam *ec;
	u32 off, i;
	u64 base;
	u16 seg;
	u8 start, end;

	if (len < MCFG_ENTRIES) {
		acpi_warn(w, "MCFG: length %u too short, ignored", len);
		return false;
	}
	info->mcfg_present = true;
	if ((len - MCFG_ENTRIES) % MCFG_ENTRY_LEN)
		acpi_warn(w, "MCFG: %u trailing bytes ignored",
			  (len - MCFG_ENTRIES) % MCFG_ENTRY_LEN);

	for (off = MCFG_ENTRIES; len - off >= MCFG_ENTRY_LEN; off += MCFG_ENTRY_LEN) {
		base = get_le64(t + off);
		seg = get_le16(t + off + 8);
		start = t[off + 10];
		end = t[off + 11];
		if (end < start || base == 0 ||
		    (base & ((1ull << ECAM_BUS_SHIFT) - 1)) ||
		    base + ((u64)(end + 1) << ECAM_BUS_SHIFT) < base) {
			acpi_warn(w, "MCFG: bad window base 0x%llx seg %u bus %u-%u, ignored",
				  (unsigned long long)base, seg, start, end);
			continue;
		}
		for (i = 0; i < info->ecam_count; i++) {
			ec = &info->ecam[i];
			if (ec->segment == seg && start <= ec->end_bus &&
			    ec->start_bus <= end)
				break;
		}
		if (i < info->ecam_count) {
			acpi_warn(w, "MCFG: window seg %u bus %u-%u overlaps an earlier one, ignored",
				  seg, start, end);
			continue;
		}
		if (acpi_full(w, info->ecam_count, ACPI_MAX_ECAM, FULL_ECAM, "ECAM windows"))
			break;
		ec = &info->ecam[info->ecam_count++];
		ec->base = base;
		ec->segment = seg;
		ec->start_bus = start;
		ec->end_bus = end;
	}
	return true;
}

/* ---- FADT ---------------------------------------------------------------- */

static bool acpi_covers(u32 len, u32 off, u32 n)
{
	return off + n <= len;
}

static void acpi_gas_read(const u8 *p, struct acpi_gas *g)
{
	g->space_id = p[0];
	g->bit_width = p[1];
	g->bit_offset = p[2];
	g->access_size = p[3];
	g->address = get_le64(p + 4);
}

static void acpi_fadt_pm_timer(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_fadt *f = &w->info->fadt;
	struct acpi_gas g;
	u32 port;

	if (f->hw_reduced)
		return;		/* PM timer fields are ignored on HW-reduced */
	if (f->revision >= 3 && acpi_covers(len, FADT_X_PM_TMR_BLK, GAS_LEN)) {
		acpi_gas_read(t + FADT_X_PM_TMR_BLK, &g);
		if (g.address && (g.space_id == ACPI_GAS_SYSIO ||
				  g.space_id == ACPI_GAS_SYSMEM))
			f->pm_timer = g;
		else if (g.address)
			acpi_warn(w, "FADT: X_PM_TMR_BLK in address space %u ignored",
				  g.space_id);
	}
	if (!f->pm_timer.address && acpi_covers(len, FADT_PM_TMR_LEN, 1) &&
	    t[FADT_PM_TMR_LEN] >= 4) {
		port = get_le32(t + FADT_PM_TMR_BLK);
		if (port) {
			f->pm_timer.space_id = ACPI_GAS_SYSIO;
			f->pm_timer.bit_width = 32;
			f->pm_timer.access_size = 3;	/* dword */
			f->pm_timer.address = port;
		}
	}
	if (f->pm_timer.address)
		f->pm_timer_bits = (f->flags & ACPI_FADT_TMR_VAL_EXT) ? 32 : 24;
}

/* One PM1 register block as an I/O port: the X_ GAS (revision >= 3) when it
 * is non-zero, else the legacy 32-bit field. Memory-space blocks and ports
 * past 0xffff are not supported: 0 (absent), with a warning. */
static u16 acpi_fadt_pm1_port(struct acpi_walk *w, const u8 *t, u32 len, u32 off, u32 xoff,
			 const char *name)
{
	struct acpi_gas g;
	u64 port = 0;

	if (w->info->fadt.revision >= 3 && acpi_covers(len, xoff, GAS_LEN)) {
		acpi_gas_read(t + xoff, &g);
		if (g.address && g.space_id != ACPI_GAS_SYSIO) {
			acpi_warn(w, "FADT: X_%s in address space %u ignored", name, g.space_id);
			return 0;
		}
		port = g.address;
	}
	if (!port && acpi_covers(len, off, 4))
		port = get_le32(t + off);
	if (port > 0xffff - 3) {
		acpi_warn(w, "FADT: %s port %#lx out of range", name, (unsigned long)port);
		return 0;
	}
	return (u16)port;
}

/* Fixed power-management hardware: SMI_CMD and the PM1 event and control
 * blocks (not on HW-reduced platforms). An event block shorter than 4 bytes
 * (2 status + 2 enable) or a control block shorter than 2 is not usable. */
static void acpi_fadt_pm1(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_fadt *f = &w->info->fadt;

	if (f->hw_reduced || !acpi_covers(len, FADT_PM1_CNT_LEN, 1))
		return;
	f->smi_cmd = get_le32(t + FADT_SMI_CMD);
	f->acpi_enable = t[FADT_ACPI_ENABLE];
	f->acpi_disable = t[FADT_ACPI_DISABLE];
	f->pm1_evt_len = t[FADT_PM1_EVT_LEN];
	f->pm1_cnt_len = t[FADT_PM1_CNT_LEN];
	if (f->pm1_evt_len >= 4 && !(f->pm1_evt_len & 1)) {
		f->pm1a_evt = acpi_fadt_pm1_port(w, t, len, FADT_PM1A_EVT_BLK, FADT_X_PM1A_EVT_BLK, "PM1a_EVT_BLK");
		f->pm1b_evt = acpi_fadt_pm1_port(w, t, len, FADT_PM1B_EVT_BLK, FADT_X_PM1B_EVT_BLK, "PM1b_EVT_BLK");
	}
	if (f->pm1_cnt_len >= 2) {
		f->pm1a_cnt = acpi_fadt_pm1_port(w, t, len, FADT_PM1A_CNT_BLK, FADT_X_PM1A_CNT_BLK, "PM1a_CNT_BLK");
		f->pm1b_cnt = acpi_fadt_pm1_port(w, t, len, FADT_PM1B_CNT_BLK, FADT_X_PM1B_CNT_BLK, "PM1b_CNT_BLK");
	}
}

static void acpi_fadt_reset(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_fadt *f = &w->info->fadt;
	struct acpi_gas *g = &f->reset_reg;

	/* RESET_REG first appeared in revision 2 FADTs. */
	if (f->revision < 2 || !acpi_covers(len, FADT_RESET_VALUE, 1))
		return;
	acpi_gas_read(t + FADT_RESET_REG, g);
	f->reset_value = t[FADT_RESET_VALUE];
	if (!(f->flags & ACPI_FADT_RESET_REG_SUP))
		return;
	/* §4.8.3.6: an 8-bit register at bit offset 0, in memory, I/O or PCI
	 * config space. */
	if (g->address == 0 || g->bit_width != 8 || g->bit_offset != 0 ||
	    g->space_id > ACPI_GAS_PCI_CFG) {
		acpi_warn(w, "FADT: RESET_REG (space %u width %u) unusable",
			  g->space_id, g->bit_width);
		return;
	}
	f->reset_supported = true;
}

/* SLEEP_CONTROL_REG and SLEEP_STATUS_REG (revision 5, hardware-reduced
 * platforms, §4.8.3.7): 8-bit registers at bit offset 0, in memory or I/O
 * space; both or neither. */
static void acpi_fadt_sleep(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_fadt *f = &w->info->fadt;
	struct acpi_gas c, s;

	if (f->revision < 5 || !acpi_covers(len, FADT_SLEEP_STATUS_REG, 12))
		return;
	acpi_gas_read(t + FADT_SLEEP_CONTROL_REG, &c);
	acpi_gas_read(t + FADT_SLEEP_STATUS_REG, &s);
	if (!c.address && !s.address)
		return;
	if (!c.address || !s.address || c.bit_width != 8 || s.bit_width != 8 || c.bit_offset || s.bit_offset ||
	    (c.space_id != ACPI_GAS_SYSMEM && c.space_id != ACPI_GAS_SYSIO) ||
	    (s.space_id != ACPI_GAS_SYSMEM && s.space_id != ACPI_GAS_SYSIO) ||
	    (c.space_id == ACPI_GAS_SYSIO && c.address > 0xffff) ||
	    (s.space_id == ACPI_GAS_SYSIO && s.address > 0xffff)) {
		acpi_warn(w, "FADT: SLEEP_CONTROL/STATUS_REG (space %u/%u width %u/%u) unusable", c.space_id,
			  s.space_id, c.bit_width, s.bit_width);
		return;
	}
	f->sleep_ctl = c;
	f->sleep_sts = s;
}

static bool acpi_fadt_parse(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_fadt *f = &w->info->fadt;
	u64 x;

	f->present = true;
	f->revision = t[8];
	f->len = len;
	if (acpi_covers(len, FADT_FIRMWARE_CTRL, 4))
		f->facs = get_le32(t + FADT_FIRMWARE_CTRL);
	if (acpi_covers(len, FADT_DSDT, 4))
		f->dsdt = get_le32(t + FADT_DSDT);
	if (acpi_covers(len, FADT_SCI_INT, 2))
		f->sci_int = get_le16(t + FADT_SCI_INT);
	if (acpi_covers(len, FADT_CENTURY, 1))
		f->century = t[FADT_CENTURY];
	if (acpi_covers(len, FADT_FLAGS, 4))
		f->flags = get_le32(t + FADT_FLAGS);
	/* IAPC_BOOT_ARCH was reserved before ACPI 2.0 (revision 3). */
	if (f->revision >= 3 && acpi_covers(len, FADT_IAPC_BOOT_ARCH, 2)) {
		f->boot_arch_valid = true;
		f->boot_arch = get_le16(t + FADT_IAPC_BOOT_ARCH);
	}
	if (f->revision >= 5)
		f->hw_reduced = f->flags & ACPI_FADT_HW_REDUCED;
	if (f->revision >= 3 && acpi_covers(len, FADT_X_FIRMWARE_CTRL, 8)) {
		x = get_le64(t + FADT_X_FIRMWARE_CTRL);
		if (x)
			f->facs = x;
	}
	if (f->revision >= 3 && acpi_covers(len, FADT_X_DSDT, 8)) {
		x = get_le64(t + FADT_X_DSDT);
		if (x)
			f->dsdt = x;
	}
	acpi_fadt_reset(w, t, len);
	acpi_fadt_pm_timer(w, t, len);
	acpi_fadt_pm1(w, t, len);
	acpi_fadt_sleep(w, t, len);
	return true;
}

/* ---- HPET ---------------------------------------------------------------- */

static bool acpi_hpet_parse(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_hpet *h = &w->info->hpet;
	struct acpi_gas g;
	u32 id;

	if (!acpi_covers(len, HPET_BASE, GAS_LEN)) {
		acpi_warn(w, "HPET: length %u too short, ignored", len);
		return false;
	}
	acpi_gas_read(t + HPET_BASE, &g);
	if (g.space_id != ACPI_GAS_SYSMEM || g.address == 0) {
		acpi_warn(w, "HPET: base 0x%llx in address space %u unusable, ignored",
			  (unsigned long long)g.address, g.space_id);
		return false;
	}
	h->present = true;
	h->base = g.address;
	id = get_le32(t + HPET_BLOCK_ID);
	h->block_id = id;
	if (id) {
		h->comparators = (u8)(((id >> 8) & 0x1f) + 1);
		h->counter_64bit = id & (1u << 13);
		h->legacy_capable = id & (1u << 15);
	}
	if (acpi_covers(len, HPET_NUMBER, 1))
		h->hpet_number = t[HPET_NUMBER];
	if (acpi_covers(len, HPET_MIN_TICK, 2))
		h->min_tick = get_le16(t + HPET_MIN_TICK);
	return true;
}

/* ---- DMAR (VT-d 4.x §8) ---------------------------------------------------- */

#define DMAR_HAW		36
#define DMAR_FLAGS		37
#define DMAR_STRUCTS		48	/* remapping structures start here */
#define DMAR_TYPE_DRHD		0
#define DMAR_TYPE_RMRR		1
#define DRHD_LEN		16	/* fixed part; device scopes follow */
#define RMRR_LEN		24
#define DSCOPE_HDR		6	/* then (device, function) pairs */
#define DMAR_PAGE		0xfffull

enum {
	FULL_DMAR_UNITS = 1 << 6,
	FULL_DMAR_RMRR = 1 << 7,
	FULL_DMAR_SCOPES = 1 << 8,
};

/* Device scopes in [p, p+len) into dmar->scopes; first and count say which.
 * A scope with a bad length ends this structure's list (the rest cannot be
 * framed); one with an empty or too long path is skipped. */
static void acpi_dmar_scopes(struct acpi_walk *w, const u8 *p, u32 len, const char *who,
			     u8 *first, u8 *count)
{
	struct acpi_dmar *d = &w->info->dmar;
	u32 off = 0, slen, n, i;

	*first = (u8)d->scope_count;
	*count = 0;
	while (off < len) {
		struct acpi_dmar_scope *s;

		if (len - off < DSCOPE_HDR || (slen = p[off + 1]) < DSCOPE_HDR ||
		    slen > len - off || (slen - DSCOPE_HDR) % 2) {
			acpi_warn(w, "DMAR: %s device scope at +%u has a bad length, rest of its scopes ignored",
				  who, off);
			return;
		}
		n = (slen - DSCOPE_HDR) / 2;
		if (n == 0 || n > ACPI_DMAR_MAX_PATH) {
			acpi_warn(w, "DMAR: %s device scope at +%u has a path of %u hops, ignored",
				  who, off, n);
		} else if (!acpi_full(w, d->scope_count, ACPI_DMAR_MAX_SCOPES, FULL_DMAR_SCOPES,
				      "DMAR device scopes")) {
			s = &d->scopes[d->scope_count++];
			s->type = p[off];
			s->enum_id = p[off + 4];
			s->start_bus = p[off + 5];
			s->path_len = (u8)n;
			for (i = 0; i < n; i++) {
				s->path[i][0] = p[off + DSCOPE_HDR + 2 * i];
				s->path[i][1] = p[off + DSCOPE_HDR + 2 * i + 1];
			}
			(*count)++;
		}
		off += slen;
	}
}

static void acpi_dmar_drhd(struct acpi_walk *w, const u8 *e, u32 len, u32 off)
{
	struct acpi_dmar *d = &w->info->dmar;
	struct acpi_drhd *u;
	u64 base;
	u32 i;

	if (len < DRHD_LEN) {
		acpi_warn(w, "DMAR: DRHD at +%u too short (%u), ignored", off, len);
		return;
	}
	base = get_le64(e + 8);
	if (!base || (base & DMAR_PAGE)) {
		acpi_warn(w, "DMAR: DRHD at +%u register base 0x%llx unusable, ignored", off,
			  (unsigned long long)base);
		return;
	}
	for (i = 0; i < d->unit_count; i++)
		if (d->units[i].base == base) {
			acpi_warn(w, "DMAR: DRHD at +%u repeats register base 0x%llx, ignored", off,
				  (unsigned long long)base);
			return;
		}
	if (acpi_full(w, d->unit_count, ACPI_DMAR_MAX_UNITS, FULL_DMAR_UNITS, "DMAR units"))
		return;
	u = &d->units[d->unit_count++];
	u->base = base;
	u->include_all = e[4] & 1;
	u->size = e[5] & 0xf;
	u->segment = get_le16(e + 6);
	acpi_dmar_scopes(w, e + DRHD_LEN, len - DRHD_LEN, "DRHD", &u->scope_first, &u->scope_count);
}

static void acpi_dmar_rmrr(struct acpi_walk *w, const u8 *e, u32 len, u32 off)
{
	struct acpi_dmar *d = &w->info->dmar;
	struct acpi_rmrr *r;
	u64 base, limit;

	if (len < RMRR_LEN) {
		acpi_warn(w, "DMAR: RMRR at +%u too short (%u), ignored", off, len);
		return;
	}
	base = get_le64(e + 8);
	limit = get_le64(e + 16);
	if ((base & DMAR_PAGE) || (limit & DMAR_PAGE) != DMAR_PAGE || limit < base) {
		acpi_warn(w, "DMAR: RMRR at +%u range 0x%llx-0x%llx unusable, ignored", off,
			  (unsigned long long)base, (unsigned long long)limit);
		return;
	}
	if (acpi_full(w, d->rmrr_count, ACPI_DMAR_MAX_RMRR, FULL_DMAR_RMRR, "DMAR RMRRs"))
		return;
	r = &d->rmrrs[d->rmrr_count++];
	r->base = base;
	r->limit = limit;
	r->segment = get_le16(e + 6);
	acpi_dmar_scopes(w, e + RMRR_LEN, len - RMRR_LEN, "RMRR", &r->scope_first, &r->scope_count);
}

static bool acpi_dmar_parse(struct acpi_walk *w, const u8 *t, u32 len)
{
	struct acpi_dmar *d = &w->info->dmar;
	u32 off = DMAR_STRUCTS, elen;
	u16 type;

	if (len < DMAR_STRUCTS) {
		acpi_warn(w, "DMAR: length %u too short, ignored", len);
		return false;
	}
	d->present = true;
	d->haw = (u8)(t[DMAR_HAW] + 1);
	d->flags = t[DMAR_FLAGS];
	while (off < len) {
		if (len - off < 4 || (elen = get_le16(t + off + 2)) < 4 || elen > len - off) {
			acpi_warn(w, "DMAR: structure at +%u has a bad length, rest ignored", off);
			break;
		}
		type = get_le16(t + off);
		if (type == DMAR_TYPE_DRHD)
			acpi_dmar_drhd(w, t + off, elen, off);
		else if (type == DMAR_TYPE_RMRR)
			acpi_dmar_rmrr(w, t + off, elen, off);
		/* ATSR, RHSA, ANDD, SATC: not used here */
		off += elen;
	}
	return true;
}

int acpi_dmar_scope_bdf(const struct acpi_dmar_scope *s, acpi_cfg_read8 rd, void *ctx, u16 *bdf)
{
	u8 bus = s->start_bus, dev = 0, fn = 0, sec;
	u32 i;

	if ((s->type != ACPI_DSCOPE_ENDPOINT && s->type != ACPI_DSCOPE_BRIDGE) || !s->path_len ||
	    s->path_len > ACPI_DMAR_MAX_PATH)
		return -EINVAL;
	for (i = 0; i < s->path_len; i++) {
		dev = s->path[i][0];
		fn = s->path[i][1];
		if (dev > 31 || fn > 7)
			return -EINVAL;
		if (i + 1 == s->path_len)
			break;
		if (rd(ctx, bus, dev, fn, 0) == 0xff && rd(ctx, bus, dev, fn, 1) == 0xff)
			return -ENOENT;
		if ((rd(ctx, bus, dev, fn, 0x0e) & 0x7f) != 1)
			return -EINVAL;
		sec = rd(ctx, bus, dev, fn, 0x19);
		if (sec <= bus)
			return -EINVAL;	/* a loop or a bridge not yet numbered */
		bus = sec;
	}
	*bdf = (u16)(bus << 8 | dev << 3 | fn);
	return 0;
}

static bool acpi_dmar_scope_covers(const struct acpi_dmar_scope *s, u16 bdf, acpi_cfg_read8 rd,
				   void *ctx)
{
	u16 at;
	u8 sec, sub;

	if (acpi_dmar_scope_bdf(s, rd, ctx, &at))
		return false;
	if (s->type == ACPI_DSCOPE_ENDPOINT)
		return at == bdf;
	if (at == bdf)
		return true;
	sec = rd(ctx, (u8)(at >> 8), (u8)((at >> 3) & 31), (u8)(at & 7), 0x19);
	sub = rd(ctx, (u8)(at >> 8), (u8)((at >> 3) & 31), (u8)(at & 7), 0x1a);
	return sec > (at >> 8) && (bdf >> 8) >= sec && (bdf >> 8) <= sub;
}

int acpi_dmar_unit_for(const struct acpi_dmar *dmar, u16 seg, u16 bdf, acpi_cfg_read8 rd, void *ctx)
{
	int all = -1;
	u32 i, k;

	for (i = 0; i < dmar->unit_count; i++) {
		const struct acpi_drhd *u = &dmar->units[i];

		if (u->segment != seg)
			continue;
		if (u->include_all) {
			if (all < 0)
				all = (int)i;
			continue;
		}
		for (k = 0; k < u->scope_count; k++) {
			u32 idx = (u32)u->scope_first + k;

			if (idx < dmar->scope_count &&
			    acpi_dmar_scope_covers(&dmar->scopes[idx], bdf, rd, ctx))
				return (int)i;
		}
	}
	return all;
}

/* ---- root table walk ------------------------------------------------------ */

static void acpi_record(struct acpi_walk *w, const u8 *t, u32 len, u64 phys)
{
	struct acpi_info *info = w->info;
	struct acpi_table_ref *r;

	if (acpi_full(w, info->table_count, ACPI_MAX_TABLES, FULL_TABLES, "tables"))
		return;
	r = &info->tables[info->table_count++];
	acpi_str_copy(r->sig, t, 4);
	r->revision = t[8];
	r->len = len;
	r->phys = phys;
}

/* Policy for repeats: a table overlapping the root table or one already
 * accepted (the same entry listed twice, a self-reference, overlapping
 * copies) is skipped, and so is a second FACP/APIC/MCFG/HPET/DMAR. The first
 * valid one wins; each skip is one warning. */
static void acpi_visit(struct acpi_walk *w, u64 phys, u32 idx)
{
	struct acpi_info *info = w->info;
	const struct acpi_table_ref *r;
	const u8 *t;
	char sig[5];
	bool taken, ok;
	u32 len, i;

	t = acpi_table_load(w, phys, NULL, &len, sig);
	if (!t)
		return;
	if (acpi_ranges_overlap(phys, len, w->root_phys, w->root_len)) {
		acpi_warn(w, "%s at 0x%llx (entry %u) overlaps the %s, ignored",
			  sig, (unsigned long long)phys, idx, w->root_name);
		return;
	}
	for (i = 0; i < info->table_count; i++) {
		r = &info->tables[i];
		if (acpi_ranges_overlap(phys, len, r->phys, r->len)) {
			acpi_warn(w, "%s at 0x%llx (entry %u) overlaps %s at 0x%llx, ignored",
				  sig, (unsigned long long)phys, idx, r->sig,
				  (unsigned long long)r->phys);
			return;
		}
	}

	if (acpi_bytes_eq(t, "FACP", 4))
		taken = info->fadt.present;
	else if (acpi_bytes_eq(t, "APIC", 4))
		taken = info->madt.present;
	else if (acpi_bytes_eq(t, "MCFG", 4))
		taken = info->mcfg_present;
	else if (acpi_bytes_eq(t, "HPET", 4))
		taken = info->hpet.present;
	else if (acpi_bytes_eq(t, "DMAR", 4))
		taken = info->dmar.present;
	else
		taken = false;
	if (taken) {
		acpi_warn(w, "%s at 0x%llx: duplicate, first one kept", sig,
			  (unsigned long long)phys);
		return;
	}

	if (acpi_bytes_eq(t, "FACP", 4))
		ok = acpi_fadt_parse(w, t, len);
	else if (acpi_bytes_eq(t, "APIC", 4))
		ok = acpi_madt_parse(w, t, len);
	else if (acpi_bytes_eq(t, "MCFG", 4))
		ok = acpi_mcfg_parse(w, t, len);
	else if (acpi_bytes_eq(t, "HPET", 4))
		ok = acpi_hpet_parse(w, t, len);
	else if (acpi_bytes_eq(t, "DMAR", 4))
		ok = acpi_dmar_parse(w, t, len);
	else
		ok = true;	/* valid but not decoded here: just recorded */
	if (ok)
		acpi_record(w, t, len, phys);
}

static int acpi_rsdp(struct acpi_walk *w, u64 rsdp_phys, u64 *rsdt, u64 *xsdt)
{
	const u8 *r, *r2;
	u32 xlen;

	r = acpi_tables_map(w, rsdp_phys, RSDP_V1_LEN);
	if (!r) {
		acpi_warn(w, "RSDP at 0x%llx not readable", (unsigned long long)rsdp_phys);
		return -EFAULT;
	}
	if (!acpi_bytes_eq(r, "RSD PTR ", 8) || acpi_checksum(r, RSDP_V1_LEN) != 0) {
		acpi_warn(w, "RSDP at 0x%llx: bad signature or checksum",
			  (unsigned long long)rsdp_phys);
		return -EBADMSG;
	}
	acpi_str_copy(w->info->oem_id, r + 9, 6);
	w->info->rsdp_revision = r[15];
	*rsdt = get_le32(r + 16);
	*xsdt = 0;
	if (r[15] < 2)
		return 0;

	/* ACPI 2.0+: the XSDT pointer is trusted only under the extended
	 * checksum; otherwise fall back to the RSDT the v1 checksum covers. */
	r2 = acpi_tables_map(w, rsdp_phys, RSDP_V2_LEN);
	if (!r2) {
		acpi_warn(w, "RSDP: v2 part not readable, XSDT ignored");
		return 0;
	}
	xlen = get_le32(r2 + 20);
	if (xlen < RSDP_V2_LEN || xlen > RSDP_MAX_LEN) {
		acpi_warn(w, "RSDP: bad length %u, XSDT ignored", xlen);
		return 0;
	}
	r2 = acpi_tables_map(w, rsdp_phys, xlen);
	if (!r2) {
		acpi_warn(w, "RSDP: length %u not readable, XSDT ignored", xlen);
		return 0;
	}
	if (acpi_checksum(r2, xlen) != 0) {
		acpi_warn(w, "RSDP: bad extended checksum, XSDT ignored");
		return 0;
	}
	*xsdt = get_le64(r2 + 24);
	return 0;
}

int acpi_parse(u64 rsdp_phys, const struct acpi_mem *mem, struct acpi_info *out)
{
	struct acpi_walk w = { .mem = mem, .info = out };
	const u8 *root = NULL;
	u64 rsdt, xsdt, phys;
	u32 len = 0, esz = 0, n, i;
	char sig[5];
	int err;

	if (!mem || !mem->map || !out)
		return -EINVAL;
	memset(out, 0, sizeof *out);

	err = acpi_rsdp(&w, rsdp_phys, &rsdt, &xsdt);
	if (err)
		return err;

	/* XSDT preferred; a missing or bad one falls back to the RSDT. */
	if (xsdt) {
		root = acpi_table_load(&w, xsdt, "XSDT", &len, sig);
		if (root) {
			esz = 8;
			w.root_phys = xsdt;
			w.root_name = "XSDT";
			out->xsdt = true;
		}
	}
	if (!root && rsdt) {
		root = acpi_table_load(&w, rsdt, "RSDT", &len, sig);
		if (root) {
			esz = 4;
			w.root_phys = rsdt;
			w.root_name = "RSDT";
		}
	}
	if (!root) {
		acpi_warn(&w, "no usable XSDT or RSDT");
		return -ENOENT;
	}
	w.root_len = len;
	out->root_phys = w.root_phys;

	n = (len - ACPI_HDR_LEN) / esz;
	if ((len - ACPI_HDR_LEN) % esz)
		acpi_warn(&w, "%s: %u trailing bytes ignored", w.root_name,
			  (len - ACPI_HDR_LEN) % esz);
	if (n > ACPI_MAX_ROOT_ENTRIES) {
		acpi_warn(&w, "%s: %u entries, only the first %u used", w.root_name,
			  n, ACPI_MAX_ROOT_ENTRIES);
		n = ACPI_MAX_ROOT_ENTRIES;
	}
	for (i = 0; i < n; i++) {
		if (esz == 8)
			phys = get_le64(root + ACPI_HDR_LEN + 8 * i);
		else
			phys = get_le32(root + ACPI_HDR_LEN + 4 * i);
		if (!phys) {
			acpi_warn(&w, "%s: entry %u is null", w.root_name, i);
			continue;
		}
		acpi_visit(&w, phys, i);
	}
	return 0;
}

u32 acpi_irq_to_gsi(const struct acpi_info *info, u8 isa_irq, u16 *flags_out)
{
	u32 i;

	for (i = 0; i < info->madt.iso_count; i++) {
		if (info->madt.isos[i].bus == 0 && info->madt.isos[i].irq == isa_irq) {
			if (flags_out)
				*flags_out = info->madt.isos[i].flags;
			return info->madt.isos[i].gsi;
		}
	}
	if (flags_out)
		*flags_out = 0;
	return isa_irq;
}

const struct acpi_table_ref *acpi_find_table(const struct acpi_info *info,
					     const char *sig)
{
	u32 i;

	for (i = 0; i < info->table_count; i++)
		if (acpi_bytes_eq((const u8 *)info->tables[i].sig, sig, 4))
			return &info->tables[i];
	return NULL;
}
