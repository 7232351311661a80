/* Host tests for drivers/acpi/acpi_tables.c. Tables are laid out in a fake
 * physical-memory image; map() hands out an exact-size heap copy of the
 * range asked for, so any read past what the parser mapped is an ASan
 * error, not a silent pass. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <arch.h>
#include "drivers/acpi/acpi_tables.h"
#include "lib/byteorder.h"

#define IMG_BASE	0xe0000ull
#define IMG_SIZE	0x20000u

#define RSDP_AT		0xe0000ull
#define XSDT_AT		0xe0100ull
#define RSDT_AT		0xe0200ull
#define FACP_AT		0xe1000ull
#define APIC_AT		0xe2000ull
#define MCFG_AT		0xe3000ull
#define HPET_AT		0xe4000ull
#define WAET_AT		0xe5000ull
#define SPARE_AT	0xe6000ull
#define SPARE2_AT	0xe7000ull
#define UNMAPPED_AT	0xdead0000ull

static u8 *img;
static void *maps[1024];
static unsigned nmaps;
static struct acpi_info info;

static const void *fake_map(void *ctx, u64 phys, u64 len)
{
	void *p;

	(void)ctx;
	if (phys < IMG_BASE || phys - IMG_BASE > IMG_SIZE ||
	    len > IMG_SIZE - (phys - IMG_BASE))
		return NULL;
	assert_true(nmaps < ARRAY_SIZE(maps));
	p = malloc(len);
	assert_non_null(p);
	memcpy(p, img + (phys - IMG_BASE), len);
	maps[nmaps++] = p;
	return p;
}

static const struct acpi_mem mem = { .map = fake_map, .ctx = NULL };

static u8 *at(u64 phys)
{
	assert_true(phys >= IMG_BASE && phys < IMG_BASE + IMG_SIZE);
	return img + (phys - IMG_BASE);
}

static void csum_at(u8 *p, u32 len, u32 field)
{
	u8 sum = 0;
	u32 i;

	p[field] = 0;
	for (i = 0; i < len; i++)
		sum = (u8)(sum + p[i]);
	p[field] = (u8)-sum;
}

/* Recompute a table's checksum from its own length field. */
static void fix(u64 phys)
{
	csum_at(at(phys), get_le32(at(phys) + 4), 9);
}

static void hdr(u64 phys, const char *sig, u32 len, u8 rev)
{
	u8 *p = at(phys);

	memcpy(p, sig, 4);
	put_le32(p + 4, len);
	p[8] = rev;
	memcpy(p + 10, "VIREO ", 6);
	memcpy(p + 16, "TESTTBL ", 8);
	put_le32(p + 24, 1);
	memcpy(p + 28, "TEST", 4);
	put_le32(p + 32, 1);
}

static void rsdp(u64 phys, u8 rev, u32 rsdt, u64 xsdt)
{
	u8 *p = at(phys);

	memcpy(p, "RSD PTR ", 8);
	memcpy(p + 9, "BOCHS ", 6);
	p[15] = rev;
	put_le32(p + 16, rsdt);
	if (rev >= 2) {
		put_le32(p + 20, 36);
		put_le64(p + 24, xsdt);
	}
	csum_at(p, 20, 8);
	if (rev >= 2)
		csum_at(p, 36, 32);	/* covers the v1 checksum byte too */
}

static void root(u64 phys, const char *sig, const u64 *ent, unsigned n)
{
	unsigned esz = sig[0] == 'X' ? 8 : 4, i;
	u8 *p = at(phys);

	hdr(phys, sig, 36 + esz * n, 1);
	for (i = 0; i < n; i++) {
		if (esz == 8)
			put_le64(p + 36 + 8 * i, ent[i]);
		else
			put_le32(p + 36 + 4 * i, (u32)ent[i]);
	}
	fix(phys);
}

/* A table grown entry by entry. */
struct tb {
	u64 phys;
	u32 len;
};

static struct tb tb_begin(u64 phys, const char *sig, u8 rev)
{
	hdr(phys, sig, 36, rev);
	return (struct tb){ .phys = phys, .len = 36 };
}

static void tb_put(struct tb *t, const u8 *bytes, u32 n)
{
	memcpy(at(t->phys + t->len), bytes, n);
	t->len += n;
}

static void tb_end(struct tb *t)
{
	put_le32(at(t->phys) + 4, t->len);
	fix(t->phys);
}

static void madt_lapic(struct tb *t, u8 uid, u8 id, u32 flags)
{
	u8 e[8] = { 0, 8, uid, id };

	put_le32(e + 4, flags);
	tb_put(t, e, sizeof e);
}

static void madt_ioapic(struct tb *t, u8 id, u32 addr, u32 gsi)
{
	u8 e[12] = { 1, 12, id, 0 };

	put_le32(e + 4, addr);
	put_le32(e + 8, gsi);
	tb_put(t, e, sizeof e);
}

static void madt_iso(struct tb *t, u8 irq, u32 gsi, u16 flags)
{
	u8 e[10] = { 2, 10, 0, irq };

	put_le32(e + 4, gsi);
	put_le16(e + 8, flags);
	tb_put(t, e, sizeof e);
}

static void madt_lapic_nmi(struct tb *t, u8 uid, u16 flags, u8 lint)
{
	u8 e[6] = { 4, 6, uid };

	put_le16(e + 3, flags);
	e[5] = lint;
	tb_put(t, e, sizeof e);
}

/* q35-like MADT: 2 CPUs enabled, 1 disabled (dropped), 1 hot-pluggable. */
static void build_madt(u64 phys, u32 lapic)
{
	struct tb t = tb_begin(phys, "APIC", 3);
	u8 fixed[8];

	put_le32(fixed, lapic);
	put_le32(fixed + 4, 1);	/* PCAT_COMPAT */
	tb_put(&t, fixed, 8);
	madt_lapic(&t, 0, 0, 1);
	madt_lapic(&t, 1, 1, 1);
	madt_lapic(&t, 2, 2, 0);
	madt_lapic(&t, 3, 3, 2);
	madt_ioapic(&t, 0, 0xfec00000, 0);
	madt_iso(&t, 0, 2, 0);
	madt_iso(&t, 5, 5, 0xd);
	madt_iso(&t, 9, 9, 0xd);
	madt_iso(&t, 10, 10, 0xd);
	madt_iso(&t, 11, 11, 0xd);
	madt_lapic_nmi(&t, 0xff, 0, 1);
	tb_end(&t);
}

static void build_mcfg(u64 phys)
{
	struct tb t = tb_begin(phys, "MCFG", 1);
	u8 e[16] = { 0 }, rsvd[8] = { 0 };

	tb_put(&t, rsvd, 8);
	put_le64(e, 0xb0000000);
	e[10] = 0;
	e[11] = 0xff;
	tb_put(&t, e, 16);
	tb_end(&t);
}

static void build_hpet(u64 phys, u32 block_id)
{
	u8 *p = at(phys);

	hdr(phys, "HPET", 56, 1);
	put_le32(p + 36, block_id);
	p[40] = 0;		/* system memory */
	p[41] = 64;
	put_le64(p + 44, 0xfed00000);
	p[52] = 0;
	put_le16(p + 53, 0x80);
	p[55] = 0;
	fix(phys);
}

/* Full ACPI 6 FADT image; rev/len decide how much of it is a table. The
 * extended fields deliberately differ from the legacy ones so tests can
 * tell which were read. */
static void build_fadt(u64 phys, u8 rev, u32 len, u32 flags)
{
	u8 *p = at(phys);

	memset(p, 0, 276);
	hdr(phys, "FACP", len, rev);
	put_le32(p + 36, 0x7ffe0000);		/* FIRMWARE_CTRL */
	put_le32(p + 40, 0x7ffd0000);		/* DSDT */
	put_le16(p + 46, 9);				/* SCI_INT */
	put_le32(p + 48, 0xb2);			/* SMI_CMD */
	p[52] = 0xf1;				/* ACPI_ENABLE */
	p[53] = 0xf0;				/* ACPI_DISABLE */
	put_le32(p + 56, 0x600);			/* PM1a_EVT_BLK */
	put_le32(p + 64, 0x604);			/* PM1a_CNT_BLK */
	p[88] = 4;				/* PM1_EVT_LEN */
	p[89] = 2;				/* PM1_CNT_LEN */
	p[148] = ACPI_GAS_SYSIO;		/* X_PM1a_EVT_BLK */
	p[149] = 32;
	put_le64(p + 152, 0xb000);
	p[172] = ACPI_GAS_SYSIO;		/* X_PM1a_CNT_BLK */
	p[173] = 16;
	put_le64(p + 176, 0xb004);
	put_le32(p + 76, 0x608);			/* PM_TMR_BLK */
	p[91] = 4;				/* PM_TMR_LEN */
	p[108] = 0x32;				/* CENTURY */
	put_le16(p + 109, ACPI_BOOT_8042 | ACPI_BOOT_NO_VGA);
	put_le32(p + 112, flags);
	p[116] = ACPI_GAS_SYSIO;		/* RESET_REG */
	p[117] = 8;
	p[118] = 0;
	p[119] = 1;
	put_le64(p + 120, 0xcf9);
	p[128] = 0x0f;				/* RESET_VALUE */
	put_le64(p + 140, 0x17ffd0000ull);		/* X_DSDT */
	p[208] = ACPI_GAS_SYSIO;		/* X_PM_TMR_BLK */
	p[209] = 32;
	p[211] = 3;
	put_le64(p + 212, 0xb008);
	fix(phys);
}

static void build_waet(u64 phys)
{
	hdr(phys, "WAET", 40, 1);
	put_le32(at(phys) + 36, 2);
	fix(phys);
}

#define STD_FLAGS (ACPI_FADT_TMR_VAL_EXT | ACPI_FADT_RESET_REG_SUP | 0x1)

/* q35 under OVMF: RSDP 2, XSDT and RSDT, FADT 6, MADT, MCFG, HPET, WAET. */
static void build_q35(void)
{
	const u64 ent[] = { FACP_AT, APIC_AT, MCFG_AT, HPET_AT, WAET_AT };

	build_fadt(FACP_AT, 6, 276, STD_FLAGS);
	build_madt(APIC_AT, 0xfee00000);
	build_mcfg(MCFG_AT);
	build_hpet(HPET_AT, 0x8086a201);
	build_waet(WAET_AT);
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	root(RSDT_AT, "RSDT", ent, ARRAY_SIZE(ent));
	rsdp(RSDP_AT, 2, RSDT_AT, XSDT_AT);
}

/* i440fx under SeaBIOS: RSDP 0, RSDT only, FADT 3, MADT, HPET, no MCFG. */
static void build_pc(void)
{
	const u64 ent[] = { FACP_AT, APIC_AT, HPET_AT };

	build_fadt(FACP_AT, 3, 244, STD_FLAGS);
	build_madt(APIC_AT, 0xfee00000);
	build_hpet(HPET_AT, 0x8086a201);
	root(RSDT_AT, "RSDT", ent, ARRAY_SIZE(ent));
	rsdp(RSDP_AT, 0, RSDT_AT, 0);
}

static int run(void)
{
	return acpi_parse(RSDP_AT, &mem, &info);
}

static int setup(void **state)
{
	(void)state;
	img = calloc(1, IMG_SIZE);
	nmaps = 0;
	shim_klog_reset();
	return img ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	while (nmaps)
		free(maps[--nmaps]);
	free(img);
	return 0;
}

static void assert_log_has(const char *a, const char *b)
{
	const char *last = shim_klog_last();

	if (!strstr(last, a) || (b && !strstr(last, b)))
		fail_msg("last klog \"%s\" lacks \"%s\"/\"%s\"", last, a, b ? b : "");
}

/* ---- good platforms ---- */

static void test_q35_good(void **state)
{
	u16 flags = 0xffff;

	(void)state;
	build_q35();
	assert_int_equal(run(), 0);
	assert_int_equal(shim_klog_count(), 0);
	assert_int_equal(info.warnings, 0);
	assert_int_equal(info.rsdp_revision, 2);
	assert_true(info.xsdt);
	assert_int_equal(info.root_phys, XSDT_AT);
	assert_string_equal(info.oem_id, "BOCHS ");
	assert_int_equal(info.table_count, 5);
	assert_non_null(acpi_find_table(&info, "WAET"));
	assert_int_equal(acpi_find_table(&info, "HPET")->phys, HPET_AT);
	assert_null(acpi_find_table(&info, "SSDT"));

	assert_true(info.madt.present);
	assert_true(info.madt.pcat_compat);
	assert_int_equal(info.madt.lapic_addr, 0xfee00000);
	assert_int_equal(info.madt.cpu_count, 3);	/* disabled one dropped */
	assert_int_equal(info.madt.cpus[1].apic_id, 1);
	assert_true(info.madt.cpus[1].enabled);
	assert_int_equal(info.madt.cpus[2].apic_id, 3);
	assert_false(info.madt.cpus[2].enabled);	/* online-capable only */
	assert_int_equal(info.madt.ioapic_count, 1);
	assert_int_equal(info.madt.ioapics[0].addr, 0xfec00000);
	assert_int_equal(info.madt.ioapics[0].gsi_base, 0);
	assert_int_equal(info.madt.iso_count, 5);
	assert_int_equal(info.madt.nmi_count, 1);
	assert_true(info.madt.nmis[0].lapic);
	assert_int_equal(info.madt.nmis[0].uid, ACPI_UID_ALL_CPUS);
	assert_int_equal(info.madt.nmis[0].lint, 1);

	assert_int_equal(acpi_irq_to_gsi(&info, 0, &flags), 2);
	assert_int_equal(flags, 0);
	assert_int_equal(acpi_irq_to_gsi(&info, 9, &flags), 9);
	assert_int_equal(flags & ACPI_MPS_TRIG_MASK, ACPI_MPS_TRIG_LEVEL);
	assert_int_equal(flags & ACPI_MPS_POL_MASK, ACPI_MPS_POL_HIGH);
	assert_int_equal(acpi_irq_to_gsi(&info, 4, &flags), 4);
	assert_int_equal(flags, 0);
	assert_int_equal(acpi_irq_to_gsi(&info, 1, NULL), 1);

	assert_true(info.mcfg_present);
	assert_int_equal(info.ecam_count, 1);
	assert_int_equal(info.ecam[0].base, 0xb0000000);
	assert_int_equal(info.ecam[0].end_bus, 0xff);

	assert_true(info.fadt.present);
	assert_int_equal(info.fadt.revision, 6);
	assert_int_equal(info.fadt.sci_int, 9);
	assert_int_equal(info.fadt.dsdt, 0x17ffd0000ull);
	assert_int_equal(info.fadt.facs, 0x7ffe0000);
	assert_int_equal(info.fadt.pm_timer.space_id, ACPI_GAS_SYSIO);
	assert_int_equal(info.fadt.pm_timer.address, 0xb008);	/* X_ wins */
	assert_int_equal(info.fadt.pm_timer_bits, 32);
	assert_true(info.fadt.reset_supported);
	assert_int_equal(info.fadt.reset_reg.address, 0xcf9);
	assert_int_equal(info.fadt.reset_value, 0x0f);
	assert_true(info.fadt.boot_arch_valid);
	assert_true(info.fadt.boot_arch & ACPI_BOOT_8042);
	assert_true(info.fadt.boot_arch & ACPI_BOOT_NO_VGA);
	assert_false(info.fadt.boot_arch & ACPI_BOOT_NO_MSI);
	assert_int_equal(info.fadt.century, 0x32);
	assert_false(info.fadt.hw_reduced);
	assert_int_equal(info.fadt.smi_cmd, 0xb2);
	assert_int_equal(info.fadt.acpi_enable, 0xf1);
	assert_int_equal(info.fadt.pm1a_evt, 0xb000);	/* X_ wins */
	assert_int_equal(info.fadt.pm1a_cnt, 0xb004);
	assert_int_equal(info.fadt.pm1b_evt, 0);
	assert_int_equal(info.fadt.pm1b_cnt, 0);

	assert_true(info.hpet.present);
	assert_int_equal(info.hpet.base, 0xfed00000);
	assert_int_equal(info.hpet.min_tick, 0x80);
	assert_int_equal(info.hpet.comparators, 3);
	assert_true(info.hpet.legacy_capable);
	assert_true(info.hpet.counter_64bit);
}

static void test_pc_good(void **state)
{
	(void)state;
	build_pc();
	assert_int_equal(run(), 0);
	assert_int_equal(shim_klog_count(), 0);
	assert_int_equal(info.rsdp_revision, 0);
	assert_false(info.xsdt);
	assert_int_equal(info.root_phys, RSDT_AT);
	assert_int_equal(info.table_count, 3);
	assert_false(info.mcfg_present);
	assert_int_equal(info.ecam_count, 0);
	assert_true(info.madt.present);
	assert_int_equal(info.madt.cpu_count, 3);
	assert_true(info.fadt.present);
	assert_int_equal(info.fadt.revision, 3);
	assert_int_equal(info.fadt.dsdt, 0x17ffd0000ull);
	assert_true(info.hpet.present);
}

/* ---- RSDP and root tables ---- */

static void test_rsdp_bad_checksum(void **state)
{
	(void)state;
	build_q35();
	at(RSDP_AT)[16] ^= 0x01;	/* RSDT address, under the v1 checksum */
	assert_int_equal(run(), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("RSDP", "checksum");
	assert_false(info.madt.present);
}

static void test_rsdp_bad_signature(void **state)
{
	(void)state;
	build_q35();
	at(RSDP_AT)[3] = 'X';		/* "RSDXPTR ", checksums made good */
	csum_at(at(RSDP_AT), 20, 8);
	csum_at(at(RSDP_AT), 36, 32);
	assert_int_equal(run(), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
}

static void test_rsdp_unmapped(void **state)
{
	(void)state;
	assert_int_equal(acpi_parse(UNMAPPED_AT, &mem, &info), -EFAULT);
	assert_int_equal(acpi_parse(RSDP_AT, NULL, &info), -EINVAL);
	assert_int_equal(acpi_parse(RSDP_AT, &mem, NULL), -EINVAL);
}

static void test_rsdp_bad_ext_checksum_uses_rsdt(void **state)
{
	(void)state;
	build_q35();
	at(RSDP_AT)[33] ^= 0x10;	/* reserved byte: only the ext checksum sees it */
	assert_int_equal(run(), 0);
	assert_false(info.xsdt);
	assert_int_equal(info.root_phys, RSDT_AT);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("extended checksum", NULL);
	assert_true(info.madt.present);
}

static void test_rsdp_huge_length_uses_rsdt(void **state)
{
	(void)state;
	build_q35();
	put_le32(at(RSDP_AT) + 20, 0x10000000);
	csum_at(at(RSDP_AT), 20, 8);
	assert_int_equal(run(), 0);
	assert_false(info.xsdt);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("bad length", NULL);
}

static void test_bad_xsdt_falls_back_to_rsdt(void **state)
{
	(void)state;
	build_q35();
	at(XSDT_AT)[36] ^= 0x40;	/* corrupt an entry, keep the old checksum */
	assert_int_equal(run(), 0);
	assert_false(info.xsdt);
	assert_int_equal(info.root_phys, RSDT_AT);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("XSDT", "checksum");
	assert_true(info.madt.present);
	assert_true(info.fadt.present);
	assert_int_equal(info.ecam_count, 1);
}

static void test_xsdt_wrong_signature_falls_back(void **state)
{
	(void)state;
	build_q35();
	memcpy(at(XSDT_AT), "RSDT", 4);
	fix(XSDT_AT);
	assert_int_equal(run(), 0);
	assert_false(info.xsdt);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("XSDT", "signature");
}

static void test_no_usable_root(void **state)
{
	(void)state;
	build_q35();
	at(XSDT_AT)[9]++;
	at(RSDT_AT)[9]++;
	assert_int_equal(run(), -ENOENT);
	assert_int_equal(shim_klog_count(), 3);	/* XSDT, RSDT, giving up */
}

static void test_xsdt_null_pointer_uses_rsdt(void **state)
{
	(void)state;
	build_q35();
	rsdp(RSDP_AT, 2, RSDT_AT, 0);
	assert_int_equal(run(), 0);
	assert_false(info.xsdt);
	assert_int_equal(shim_klog_count(), 0);
}

/* ---- individual tables ---- */

static void test_bad_table_checksum_ignored(void **state)
{
	(void)state;
	build_q35();
	at(HPET_AT)[53] ^= 0xff;	/* min tick changed, checksum not */
	assert_int_equal(run(), 0);
	assert_false(info.hpet.present);
	assert_null(acpi_find_table(&info, "HPET"));
	assert_int_equal(shim_klog_count(), 1);
	assert_int_equal(info.warnings, 1);
	assert_log_has("HPET", "checksum");
	assert_true(info.madt.present);
	assert_true(info.fadt.present);
	assert_int_equal(info.ecam_count, 1);
	assert_int_equal(info.table_count, 4);
}

static void test_table_truncated_by_mapping(void **state)
{
	const u64 ent[] = { FACP_AT, IMG_BASE + IMG_SIZE - 64 };
	u64 late = IMG_BASE + IMG_SIZE - 64;

	(void)state;
	build_q35();
	hdr(late, "APIC", 200, 3);	/* 64 bytes readable, claims 200 */
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	assert_int_equal(run(), 0);
	assert_false(info.madt.present);
	assert_true(info.fadt.present);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("APIC", "readable");
}

static void test_header_straddles_mapping_end(void **state)
{
	const u64 ent[] = { IMG_BASE + IMG_SIZE - 20, FACP_AT };

	(void)state;
	build_q35();
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	assert_int_equal(run(), 0);
	assert_true(info.fadt.present);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("header not readable", NULL);
}

static void test_length_below_header(void **state)
{
	(void)state;
	build_q35();
	put_le32(at(MCFG_AT) + 4, 20);
	csum_at(at(MCFG_AT), 36, 9);	/* would sum to 0 over 36 bytes */
	assert_int_equal(run(), 0);
	assert_false(info.mcfg_present);
	assert_int_equal(info.ecam_count, 0);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("MCFG", "below header");
}

static void test_length_too_large(void **state)
{
	(void)state;
	build_q35();
	put_le32(at(WAET_AT) + 4, ACPI_MAX_TABLE_LEN + 1);
	assert_int_equal(run(), 0);
	assert_null(acpi_find_table(&info, "WAET"));
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("WAET", "too large");
}

static void test_unmapped_table_address(void **state)
{
	const u64 ent[] = { FACP_AT, UNMAPPED_AT, APIC_AT, 0 };

	(void)state;
	build_q35();
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	rsdp(RSDP_AT, 2, RSDT_AT, XSDT_AT);
	assert_int_equal(run(), 0);
	assert_true(info.fadt.present);
	assert_true(info.madt.present);
	assert_int_equal(shim_klog_count(), 2);	/* unreadable + null entry */
	assert_log_has("entry 3", "null");
}

static void test_duplicate_tables_first_wins(void **state)
{
	const u64 ent[] = { APIC_AT, SPARE_AT, FACP_AT };

	(void)state;
	build_q35();
	build_madt(SPARE_AT, 0xfee10000);	/* valid, different content */
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	assert_int_equal(run(), 0);
	assert_int_equal(info.madt.lapic_addr, 0xfee00000);
	assert_int_equal(info.madt.cpu_count, 3);	/* not doubled */
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("APIC", "duplicate");
	assert_int_equal(info.table_count, 2);
}

static void test_first_valid_wins_over_bad_first(void **state)
{
	const u64 ent[] = { APIC_AT, SPARE_AT };

	(void)state;
	build_q35();
	build_madt(SPARE_AT, 0xfee10000);
	at(APIC_AT)[40] ^= 1;		/* first copy: bad checksum */
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	assert_int_equal(run(), 0);
	assert_true(info.madt.present);
	assert_int_equal(info.madt.lapic_addr, 0xfee10000);
	assert_int_equal(shim_klog_count(), 1);
}

static void test_same_table_listed_twice(void **state)
{
	const u64 ent[] = { WAET_AT, WAET_AT, HPET_AT };

	(void)state;
	build_q35();
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	assert_int_equal(run(), 0);
	assert_int_equal(info.table_count, 2);
	assert_true(info.hpet.present);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("WAET", "overlaps");
}

static void test_overlapping_tables(void **state)
{
	const u64 ent[] = { SPARE_AT, SPARE_AT + 24 };

	(void)state;
	build_q35();
	/* A 64-byte SSDT whose body holds a complete, valid 40-byte WAET. */
	hdr(SPARE_AT, "SSDT", 64, 2);
	build_waet(SPARE_AT + 24);
	fix(SPARE_AT);
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	assert_int_equal(run(), 0);
	assert_int_equal(info.table_count, 1);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("overlaps", NULL);
}

static void test_xsdt_points_at_itself(void **state)
{
	const u64 ent[] = { XSDT_AT, FACP_AT };

	(void)state;
	build_q35();
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	rsdp(RSDP_AT, 2, RSDT_AT, XSDT_AT);
	assert_int_equal(run(), 0);
	assert_true(info.xsdt);
	assert_true(info.fadt.present);
	assert_int_equal(info.table_count, 1);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("XSDT", "overlaps the XSDT");
}

static void test_root_entry_cap(void **state)
{
	static u64 ent[ACPI_MAX_ROOT_ENTRIES + 2];	/* all null */

	(void)state;
	build_q35();
	root(SPARE2_AT, "XSDT", ent, ARRAY_SIZE(ent));
	rsdp(RSDP_AT, 2, RSDT_AT, SPARE2_AT);
	assert_int_equal(run(), 0);
	/* one "only the first N" line, then one per null entry looked at */
	assert_int_equal(shim_klog_count(), 1 + ACPI_MAX_ROOT_ENTRIES);
}

static void test_root_trailing_bytes(void **state)
{
	(void)state;
	build_q35();
	put_le32(at(XSDT_AT) + 4, 36 + 5 * 8 + 3);
	fix(XSDT_AT);
	assert_int_equal(run(), 0);
	assert_true(info.xsdt);
	assert_int_equal(info.table_count, 5);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("trailing", NULL);
}

/* ---- MADT ---- */

static void test_madt_zero_length_entry(void **state)
{
	struct tb t;
	u8 fixed[8] = { 0 }, bad[2] = { 0, 0 };

	(void)state;
	build_q35();
	t = tb_begin(APIC_AT, "APIC", 3);
	put_le32(fixed, 0xfee00000);
	tb_put(&t, fixed, 8);
	madt_lapic(&t, 0, 0, 1);
	tb_put(&t, bad, 2);
	madt_lapic(&t, 1, 1, 1);
	tb_end(&t);
	assert_int_equal(run(), 0);
	assert_true(info.madt.present);
	assert_int_equal(info.madt.cpu_count, 1);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("MADT", "length 0");

	/* length 1 cannot even cover its own type/length bytes */
	at(APIC_AT + 44 + 8)[1] = 1;
	fix(APIC_AT);
	shim_klog_reset();
	assert_int_equal(run(), 0);
	assert_int_equal(info.madt.cpu_count, 1);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("MADT", "length 1");
}

static void test_madt_entry_overruns(void **state)
{
	struct tb t;
	u8 fixed[8] = { 0 };
	u8 big[4] = { 1, 40, 0, 0 };	/* IOAPIC claiming 40 bytes */

	(void)state;
	build_q35();
	t = tb_begin(APIC_AT, "APIC", 3);
	put_le32(fixed, 0xfee00000);
	tb_put(&t, fixed, 8);
	madt_lapic(&t, 0, 0, 1);
	madt_ioapic(&t, 0, 0xfec00000, 0);
	tb_put(&t, big, 4);
	tb_end(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(info.madt.cpu_count, 1);
	assert_int_equal(info.madt.ioapic_count, 1);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("overruns", NULL);
}

static void test_madt_entry_too_short_for_type(void **state)
{
	struct tb t;
	u8 fixed[8] = { 0 };
	u8 shortio[8] = { 1, 8, 7, 0, 0, 0, 0xc0, 0xfe };

	(void)state;
	build_q35();
	t = tb_begin(APIC_AT, "APIC", 3);
	put_le32(fixed, 0xfee00000);
	tb_put(&t, fixed, 8);
	tb_put(&t, shortio, 8);		/* IOAPIC needs 12 */
	madt_lapic(&t, 0, 5, 1);	/* walk continues past it */
	tb_end(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(info.madt.ioapic_count, 0);
	assert_int_equal(info.madt.cpu_count, 1);
	assert_int_equal(info.madt.cpus[0].apic_id, 5);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("type 1", "needs 12");
}

static void test_madt_x2apic_override_nmi(void **state)
{
	struct tb t;
	u8 fixed[8] = { 0 };
	u8 x2[16] = { 9, 16 }, x2nmi[12] = { 10, 12 }, ovr[12] = { 5, 12 };
	u8 ovr2[12] = { 5, 12 }, nmisrc[8] = { 3, 8 }, unknown[6] = { 0x7f, 6 };
	u8 iso_pci[10] = { 2, 10, 1, 3 };

	(void)state;
	build_q35();
	t = tb_begin(APIC_AT, "APIC", 5);
	put_le32(fixed, 0xfee00000);
	tb_put(&t, fixed, 8);
	put_le32(x2 + 4, 0x1234);	/* x2APIC id */
	put_le32(x2 + 8, 1);		/* enabled */
	put_le32(x2 + 12, 77);	/* uid */
	tb_put(&t, x2, 16);
	madt_lapic(&t, 0, 0x34, 1);
	madt_lapic(&t, 1, 0x34, 1);	/* same APIC id again: dropped */
	put_le16(x2nmi + 2, 0x5);
	put_le32(x2nmi + 4, ACPI_UID_ALL_CPUS);
	x2nmi[8] = 1;
	tb_put(&t, x2nmi, 12);
	put_le64(ovr + 4, 0x1fee00000ull);
	tb_put(&t, ovr, 12);
	put_le64(ovr2 + 4, 0x2fee00000ull);
	tb_put(&t, ovr2, 12);		/* second override: ignored */
	put_le16(nmisrc + 2, 0xd);
	put_le32(nmisrc + 4, 2);
	tb_put(&t, nmisrc, 8);
	tb_put(&t, unknown, 6);		/* unknown type: skipped quietly */
	tb_put(&t, iso_pci, 10);	/* bus 1: not ISA, dropped */
	tb_end(&t);
	assert_int_equal(run(), 0);
	assert_false(info.madt.pcat_compat);
	assert_int_equal(info.madt.lapic_addr, 0x1fee00000ull);
	assert_int_equal(info.madt.cpu_count, 2);
	assert_true(info.madt.cpus[0].x2apic);
	assert_int_equal(info.madt.cpus[0].apic_id, 0x1234);
	assert_int_equal(info.madt.cpus[0].uid, 77);
	assert_false(info.madt.cpus[1].x2apic);
	assert_int_equal(info.madt.nmi_count, 2);
	assert_true(info.madt.nmis[0].lapic);
	assert_int_equal(info.madt.nmis[0].uid, ACPI_UID_ALL_CPUS);
	assert_int_equal(info.madt.nmis[0].flags, 0x5);
	assert_false(info.madt.nmis[1].lapic);
	assert_int_equal(info.madt.nmis[1].gsi, 2);
	assert_int_equal(info.madt.iso_count, 0);
	assert_int_equal(shim_klog_count(), 3);	/* dup id, 2nd override, bus 1 */
}

static void test_madt_array_caps(void **state)
{
	struct tb t;
	u8 fixed[8] = { 0 };
	unsigned i;

	(void)state;
	build_q35();
	t = tb_begin(APIC_AT, "APIC", 3);
	put_le32(fixed, 0xfee00000);
	tb_put(&t, fixed, 8);
	for (i = 0; i < ACPI_MAX_CPUS + 10; i++)
		madt_lapic(&t, (u8)i, (u8)i, 1);
	tb_end(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(info.madt.cpu_count, ACPI_MAX_CPUS);
	assert_int_equal(shim_klog_count(), 1);	/* once, not ten times */
}

/* ---- MCFG ---- */

static void test_mcfg_validation(void **state)
{
	struct tb t;
	u8 rsvd[8] = { 0 }, e[16];

	(void)state;
	build_q35();
	t = tb_begin(MCFG_AT, "MCFG", 1);
	tb_put(&t, rsvd, 8);
	memset(e, 0, 16);
	put_le64(e, 0xb0000000);
	e[10] = 5;
	e[11] = 4;			/* end < start */
	tb_put(&t, e, 16);
	put_le64(e, 0);
	e[10] = 0;
	e[11] = 0xff;			/* base 0 */
	tb_put(&t, e, 16);
	put_le64(e, 0xb0001000);		/* not 1 MiB aligned */
	tb_put(&t, e, 16);
	put_le64(e, 0xfffffffffff00000ull);	/* window wraps */
	tb_put(&t, e, 16);
	put_le64(e, 0xe0000000);
	put_le16(e + 8, 1);
	e[10] = 0x10;
	e[11] = 0x1f;			/* good: segment 1, buses 16-31 */
	tb_put(&t, e, 16);
	e[10] = 0x18;
	e[11] = 0x20;			/* overlaps the previous window */
	tb_put(&t, e, 16);
	tb_end(&t);
	assert_int_equal(run(), 0);
	assert_true(info.mcfg_present);
	assert_int_equal(info.ecam_count, 1);
	assert_int_equal(info.ecam[0].base, 0xe0000000);
	assert_int_equal(info.ecam[0].segment, 1);
	assert_int_equal(info.ecam[0].start_bus, 0x10);
	assert_int_equal(info.ecam[0].end_bus, 0x1f);
	assert_int_equal(shim_klog_count(), 5);
}

/* ---- FADT ---- */

static void test_fadt_rev1_short(void **state)
{
	(void)state;
	build_q35();
	/* An ACPI 1.0 FADT is 116 bytes. The image behind it still holds
	 * ACPI 6 fields (X_PM_TMR_BLK, RESET_REG, X_DSDT); the exact-size
	 * map makes any read of them an ASan error. */
	build_fadt(FACP_AT, 1, 116, STD_FLAGS);
	assert_int_equal(run(), 0);
	assert_int_equal(shim_klog_count(), 0);
	assert_true(info.fadt.present);
	assert_int_equal(info.fadt.revision, 1);
	assert_int_equal(info.fadt.len, 116);
	assert_int_equal(info.fadt.sci_int, 9);
	assert_int_equal(info.fadt.dsdt, 0x7ffd0000);	/* 32-bit field */
	assert_int_equal(info.fadt.pm_timer.space_id, ACPI_GAS_SYSIO);
	assert_int_equal(info.fadt.pm_timer.address, 0x608);	/* port */
	assert_int_equal(info.fadt.pm_timer_bits, 32);
	assert_false(info.fadt.reset_supported);
	assert_int_equal(info.fadt.reset_reg.address, 0);
	assert_false(info.fadt.boot_arch_valid);
	assert_int_equal(info.fadt.boot_arch, 0);
	assert_int_equal(info.fadt.century, 0x32);
	assert_int_equal(info.fadt.flags, STD_FLAGS);
}

static void test_fadt_rev6_long(void **state)
{
	(void)state;
	build_q35();
	build_fadt(FACP_AT, 6, 276, ACPI_FADT_RESET_REG_SUP);	/* 24-bit timer */
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.len, 276);
	assert_int_equal(info.fadt.pm_timer.address, 0xb008);
	assert_int_equal(info.fadt.pm_timer_bits, 24);
	assert_true(info.fadt.reset_supported);
	assert_int_equal(info.fadt.reset_reg.space_id, ACPI_GAS_SYSIO);
	assert_int_equal(info.fadt.dsdt, 0x17ffd0000ull);
}

static void test_fadt_rev1_long(void **state)
{
	(void)state;
	build_q35();
	/* Revision 1 with a longer body: the bytes are there, but RESET_REG,
	 * IAPC_BOOT_ARCH and the X_ fields did not exist in ACPI 1.0. */
	build_fadt(FACP_AT, 1, 244, STD_FLAGS);
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.len, 244);
	assert_false(info.fadt.reset_supported);
	assert_int_equal(info.fadt.reset_reg.address, 0);
	assert_false(info.fadt.boot_arch_valid);
	assert_int_equal(info.fadt.pm_timer.address, 0x608);
	assert_int_equal(info.fadt.dsdt, 0x7ffd0000);
}

static void test_fadt_revision_lies_length_rules(void **state)
{
	(void)state;
	build_q35();
	build_fadt(FACP_AT, 6, 116, STD_FLAGS);	/* says 6, is 1.0-sized */
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.pm_timer.address, 0x608);
	assert_false(info.fadt.reset_supported);
	assert_true(info.fadt.boot_arch_valid);	/* offset 109 is inside */
	assert_true(info.fadt.boot_arch & ACPI_BOOT_8042);
	assert_int_equal(info.fadt.dsdt, 0x7ffd0000);
}

static void test_fadt_tiny(void **state)
{
	(void)state;
	build_q35();
	build_fadt(FACP_AT, 1, 44, STD_FLAGS);	/* up to DSDT only */
	assert_int_equal(run(), 0);
	assert_true(info.fadt.present);
	assert_int_equal(info.fadt.dsdt, 0x7ffd0000);
	assert_int_equal(info.fadt.sci_int, 0);
	assert_int_equal(info.fadt.flags, 0);
	assert_int_equal(info.fadt.pm_timer.address, 0);
	assert_int_equal(info.fadt.pm_timer_bits, 0);
}

static void test_fadt_hw_reduced_and_bad_reset(void **state)
{
	u8 *p;

	(void)state;
	build_q35();
	build_fadt(FACP_AT, 6, 276, ACPI_FADT_HW_REDUCED | ACPI_FADT_RESET_REG_SUP);
	p = at(FACP_AT);
	p[117] = 16;			/* RESET_REG must be 8 bits wide */
	fix(FACP_AT);
	assert_int_equal(run(), 0);
	assert_true(info.fadt.hw_reduced);
	assert_int_equal(info.fadt.pm_timer.address, 0);	/* ignored */
	assert_false(info.fadt.reset_supported);
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("RESET_REG", NULL);
}

/* QEMU microvm's FADT: hardware-reduced, the GED's sleep registers in
 * memory (control 0xfea00200, status 0xfea00201); a 16-bit one is refused. */
static void test_fadt_sleep_registers(void **state)
{
	u8 *p;

	(void)state;
	build_q35();
	build_fadt(FACP_AT, 6, 276, ACPI_FADT_HW_REDUCED);
	p = at(FACP_AT);
	p[244] = ACPI_GAS_SYSMEM;
	p[245] = 8;
	p[247] = 1;
	put_le64(p + 248, 0xfea00200);
	p[256] = ACPI_GAS_SYSMEM;
	p[257] = 8;
	p[259] = 1;
	put_le64(p + 260, 0xfea00201);
	fix(FACP_AT);
	assert_int_equal(run(), 0);
	assert_true(info.fadt.hw_reduced);
	assert_int_equal(info.fadt.sleep_ctl.space_id, ACPI_GAS_SYSMEM);
	assert_int_equal(info.fadt.sleep_ctl.address, 0xfea00200);
	assert_int_equal(info.fadt.sleep_sts.address, 0xfea00201);

	p[257] = 16;
	fix(FACP_AT);
	memset(&info, 0, sizeof info);
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.sleep_ctl.address, 0);
	assert_log_has("SLEEP_CONTROL", NULL);

	/* Revision 4: the fields are not read even when the bytes are there. */
	p[257] = 8;
	p[8] = 4;
	fix(FACP_AT);
	memset(&info, 0, sizeof info);
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.sleep_ctl.address, 0);
}

static void test_fadt_pm1_blocks(void **state)
{
	u8 *p;

	(void)state;
	build_q35();
	build_fadt(FACP_AT, 1, 116, STD_FLAGS);	/* rev 1: legacy fields only */
	put_le32(at(FACP_AT) + 60, 0x700);		/* PM1b_EVT_BLK */
	put_le32(at(FACP_AT) + 68, 0x704);		/* PM1b_CNT_BLK */
	fix(FACP_AT);
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.pm1a_evt, 0x600);
	assert_int_equal(info.fadt.pm1a_cnt, 0x604);
	assert_int_equal(info.fadt.pm1b_evt, 0x700);
	assert_int_equal(info.fadt.pm1b_cnt, 0x704);
	assert_int_equal(info.fadt.pm1_evt_len, 4);

	/* X_ block in memory space: not supported, dropped with a warning;
	 * an odd or too short event length, a port past 0xffff: dropped. */
	build_fadt(FACP_AT, 6, 276, STD_FLAGS);
	p = at(FACP_AT);
	p[148] = ACPI_GAS_SYSMEM;
	p[88] = 2;
	put_le32(p + 64, 0);
	put_le64(p + 176, 0x1fffe);
	fix(FACP_AT);
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.pm1a_evt, 0);
	assert_int_equal(info.fadt.pm1a_cnt, 0);
	assert_log_has("PM1a_CNT_BLK", NULL);

	build_fadt(FACP_AT, 6, 276, ACPI_FADT_HW_REDUCED);
	assert_int_equal(run(), 0);
	assert_int_equal(info.fadt.pm1a_evt, 0);
	assert_int_equal(info.fadt.pm1a_cnt, 0);
	assert_int_equal(info.fadt.smi_cmd, 0);
}

/* ---- HPET ---- */

static void test_hpet_no_block_id(void **state)
{
	(void)state;
	build_q35();
	build_hpet(HPET_AT, 0);
	assert_int_equal(run(), 0);
	assert_true(info.hpet.present);
	assert_int_equal(info.hpet.comparators, 0);
	assert_false(info.hpet.legacy_capable);
}

static void test_hpet_io_space_rejected(void **state)
{
	(void)state;
	build_q35();
	at(HPET_AT)[40] = ACPI_GAS_SYSIO;
	fix(HPET_AT);
	assert_int_equal(run(), 0);
	assert_false(info.hpet.present);
	assert_null(acpi_find_table(&info, "HPET"));
	assert_int_equal(shim_klog_count(), 1);
	assert_log_has("HPET", "unusable");
}

/* ---- DMAR ---- */

#define DMAR_AT		SPARE_AT

static void dmar_begin(struct tb *t, u8 haw, u8 flags)
{
	u8 h[12] = { (u8)(haw - 1), flags };

	*t = tb_begin(DMAR_AT, "DMAR", 1);
	tb_put(t, h, sizeof h);
}

/* A DRHD with scopes given as raw bytes (nsc bytes). */
static void dmar_drhd(struct tb *t, u8 flags, u16 seg, u64 base, const u8 *sc, u32 nsc)
{
	u8 e[16] = { 0 };

	put_le16(e, 0);
	put_le16(e + 2, (u16)(16 + nsc));
	e[4] = flags;
	put_le16(e + 6, seg);
	put_le64(e + 8, base);
	tb_put(t, e, sizeof e);
	if (nsc)
		tb_put(t, sc, nsc);
}

static void dmar_rmrr(struct tb *t, u64 base, u64 limit, const u8 *sc, u32 nsc)
{
	u8 e[24] = { 0 };

	put_le16(e, 1);
	put_le16(e + 2, (u16)(24 + nsc));
	put_le64(e + 8, base);
	put_le64(e + 16, limit);
	tb_put(t, e, sizeof e);
	if (nsc)
		tb_put(t, sc, nsc);
}

static void with_dmar(struct tb *t)
{
	const u64 ent[] = { FACP_AT, APIC_AT, MCFG_AT, HPET_AT, DMAR_AT };

	tb_end(t);
	build_fadt(FACP_AT, 6, 276, STD_FLAGS);
	build_madt(APIC_AT, 0xfee00000);
	build_mcfg(MCFG_AT);
	build_hpet(HPET_AT, 0x8086a201);
	root(XSDT_AT, "XSDT", ent, ARRAY_SIZE(ent));
	rsdp(RSDP_AT, 2, RSDT_AT, XSDT_AT);
}

/* A fake bus: 00:1c.0 is a bridge to bus 2 (subordinate 3), 02:00.0 a
 * bridge to bus 3; 03:00.0 and 00:02.0 are endpoints. */
static u8 fake_cfg(void *ctx, u8 bus, u8 dev, u8 fn, u16 off)
{
	bool bridge = (bus == 0 && dev == 0x1c && fn == 0) || (bus == 2 && dev == 0 && fn == 0);
	bool present = bridge || (bus == 3 && dev == 0 && fn == 0) || (bus == 0 && dev == 2 && fn == 0);

	(void)ctx;
	if (!present)
		return 0xff;
	switch (off) {
	case 0: return 0x86;
	case 1: return 0x80;
	case 0x0e: return bridge ? 1 : 0;
	case 0x19: return bridge ? (bus == 0 ? 2 : 3) : 0;
	case 0x1a: return bridge ? 3 : 0;
	default: return 0;
	}
}

/* QEMU's q35 shape: one INCLUDE_PCI_ALL unit with an IOAPIC scope, plus a
 * second unit naming one endpoint behind two bridges, and an RMRR. */
static void test_dmar_good(void **state)
{
	const u8 ioapic[8] = { 3, 8, 0, 0, 2, 0xff, 0x1f, 0 };
	const u8 ep[10] = { 1, 10, 0, 0, 0, 0, 0x1c, 0, 0, 0 };	/* 00:1c.0 -> 02:00.0 */
	const u8 deep[12] = { 1, 12, 0, 0, 0, 0, 0x1c, 0, 0, 0, 0, 0 };	/* -> 03:00.0 */
	u8 sc[22];
	struct tb t;
	u16 bdf;

	(void)state;
	memcpy(sc, ep, 10);
	memcpy(sc + 10, deep, 12);
	dmar_begin(&t, 39, ACPI_DMAR_INTR_REMAP);
	dmar_drhd(&t, 0, 0, 0xfed91000, sc, sizeof sc);
	dmar_drhd(&t, 1, 0, 0xfed90000, ioapic, sizeof ioapic);
	dmar_rmrr(&t, 0x7f000000, 0x7f0fffff, ep, sizeof ep);
	with_dmar(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(shim_klog_count(), 0);
	assert_true(info.dmar.present);
	assert_int_equal(info.dmar.haw, 39);
	assert_int_equal(info.dmar.flags, ACPI_DMAR_INTR_REMAP);
	assert_int_equal(info.dmar.unit_count, 2);
	assert_int_equal(info.dmar.units[0].base, 0xfed91000);
	assert_false(info.dmar.units[0].include_all);
	assert_int_equal(info.dmar.units[0].scope_count, 2);
	assert_true(info.dmar.units[1].include_all);
	assert_int_equal(info.dmar.units[1].scope_count, 1);
	assert_int_equal(info.dmar.scopes[info.dmar.units[1].scope_first].type, ACPI_DSCOPE_IOAPIC);
	assert_int_equal(info.dmar.scopes[info.dmar.units[1].scope_first].enum_id, 2);
	assert_int_equal(info.dmar.rmrr_count, 1);
	assert_int_equal(info.dmar.rmrrs[0].limit, 0x7f0fffff);
	assert_int_equal(info.dmar.scope_count, 4);
	assert_non_null(acpi_find_table(&info, "DMAR"));

	/* Paths walked over the fake bus. */
	assert_int_equal(acpi_dmar_scope_bdf(&info.dmar.scopes[0], fake_cfg, NULL, &bdf), 0);
	assert_int_equal(bdf, 2 << 8);
	assert_int_equal(acpi_dmar_scope_bdf(&info.dmar.scopes[1], fake_cfg, NULL, &bdf), 0);
	assert_int_equal(bdf, 3 << 8);
	assert_int_equal(acpi_dmar_scope_bdf(&info.dmar.scopes[2], fake_cfg, NULL, &bdf), -EINVAL);
	/* 02:00.0 and 03:00.0 by the named unit, 00:02.0 by the catch-all,
	 * nothing on another segment. */
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 2 << 8, fake_cfg, NULL), 0);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 3 << 8, fake_cfg, NULL), 0);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 2 << 3, fake_cfg, NULL), 1);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 1, 2 << 3, fake_cfg, NULL), -1);
}

static void test_dmar_bridge_scope_covers_bus_range(void **state)
{
	const u8 br[8] = { 2, 8, 0, 0, 0, 0, 0x1c, 0 };
	struct tb t;

	(void)state;
	dmar_begin(&t, 48, 0);
	dmar_drhd(&t, 0, 0, 0xfed91000, br, sizeof br);
	with_dmar(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 0x1c << 3, fake_cfg, NULL), 0);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 2 << 8, fake_cfg, NULL), 0);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 3 << 8 | 5, fake_cfg, NULL), 0);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 4 << 8, fake_cfg, NULL), -1);
	assert_int_equal(acpi_dmar_unit_for(&info.dmar, 0, 2 << 3, fake_cfg, NULL), -1);
}

/* Paths that are absent, through non-bridges, looping or out of range. */
static void test_dmar_scope_bad_paths(void **state)
{
	struct acpi_dmar_scope s = { .type = ACPI_DSCOPE_ENDPOINT, .start_bus = 0, .path_len = 2 };
	u16 bdf = 0xabcd;

	(void)state;
	s.path[0][0] = 5;	/* absent */
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), -ENOENT);
	s.path[0][0] = 2;	/* an endpoint, not a bridge */
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), -EINVAL);
	s.path[0][0] = 0x1c;
	s.path[1][0] = 32;	/* device number out of range */
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), -EINVAL);
	s.start_bus = 3;	/* bus 3's "bridge" at 00.0 is an endpoint */
	s.path[0][0] = 0;
	s.path[1][0] = 0;
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), -EINVAL);
	s.start_bus = 2;	/* 02:00.0 bridges to 3, then 03:00.0 */
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), 0);
	assert_int_equal(bdf, 3 << 8);
	s.type = ACPI_DSCOPE_IOAPIC;
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), -EINVAL);
	s.type = ACPI_DSCOPE_ENDPOINT;
	s.path_len = 0;
	assert_int_equal(acpi_dmar_scope_bdf(&s, fake_cfg, NULL, &bdf), -EINVAL);
}

/* Hostile structures: each is dropped with one warning, the rest kept. */
static void test_dmar_hostile_structures(void **state)
{
	const u8 badlen[8] = { 1, 7, 0, 0, 0, 0, 2, 0 };	/* odd path bytes */
	const u8 nopath[6] = { 1, 6, 0, 0, 0, 0 };
	u8 longpath[6 + 2 * 9] = { 1, 6 + 2 * 9 };
	struct tb t;

	(void)state;
	dmar_begin(&t, 39, 0);
	dmar_drhd(&t, 0, 0, 0, NULL, 0);			/* base 0 */
	dmar_drhd(&t, 0, 0, 0xfed90800, NULL, 0);		/* unaligned */
	dmar_drhd(&t, 1, 0, 0xfed90000, nopath, sizeof nopath);	/* kept, scope dropped */
	dmar_drhd(&t, 0, 0, 0xfed90000, NULL, 0);		/* repeated base */
	dmar_drhd(&t, 0, 1, 0xfed92000, longpath, sizeof longpath);	/* kept, scope dropped */
	dmar_drhd(&t, 0, 2, 0xfed93000, badlen, sizeof badlen);	/* kept, scope list ends */
	dmar_rmrr(&t, 0x1000, 0x0fff, NULL, 0);			/* inverted */
	dmar_rmrr(&t, 0x1800, 0x2fff, NULL, 0);			/* unaligned base */
	dmar_rmrr(&t, 0x1000, 0x2ffe, NULL, 0);			/* unaligned limit */
	dmar_rmrr(&t, 0x1000, 0x2fff, NULL, 0);			/* good */
	with_dmar(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(shim_klog_count(), 9);
	assert_int_equal(info.dmar.unit_count, 3);
	assert_int_equal(info.dmar.units[0].base, 0xfed90000);
	assert_int_equal(info.dmar.units[0].scope_count, 0);
	assert_int_equal(info.dmar.units[1].segment, 1);
	assert_int_equal(info.dmar.units[2].scope_count, 0);
	assert_int_equal(info.dmar.scope_count, 0);
	assert_int_equal(info.dmar.rmrr_count, 1);
	assert_int_equal(info.dmar.rmrrs[0].base, 0x1000);
}

/* A structure length that is short, zero or overruns ends the walk. */
static void test_dmar_structure_lengths(void **state)
{
	static const u16 bad[] = { 0, 3, 0x400 };
	unsigned i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct tb t;
		u8 *p;

		memset(img, 0, IMG_SIZE);
		dmar_begin(&t, 39, 0);
		dmar_drhd(&t, 1, 0, 0xfed90000, NULL, 0);
		p = at(t.phys + t.len);
		dmar_drhd(&t, 0, 0, 0xfed91000, NULL, 0);
		put_le16(p + 2, bad[i]);
		with_dmar(&t);
		shim_klog_reset();
		assert_int_equal(run(), 0);
		assert_int_equal(info.dmar.unit_count, 1);
		assert_int_equal(shim_klog_count(), 1);
		assert_log_has("DMAR", "bad length");
	}
	/* A header shorter than the fixed 48 bytes: the table is refused. */
	{
		struct tb t;

		memset(img, 0, IMG_SIZE);
		t = tb_begin(DMAR_AT, "DMAR", 1);
		tb_put(&t, (const u8 *)"\x26\x00", 2);
		with_dmar(&t);
		shim_klog_reset();
		assert_int_equal(run(), 0);
		assert_false(info.dmar.present);
		assert_null(acpi_find_table(&info, "DMAR"));
	}
}

/* More units and scopes than the arrays hold: capped with one warning each. */
static void test_dmar_caps(void **state)
{
	const u8 ep[8] = { 1, 8, 0, 0, 0, 0, 2, 0 };
	u8 sc[8 * 5];
	struct tb t;
	unsigned i;

	(void)state;
	for (i = 0; i < 5; i++)
		memcpy(sc + 8 * i, ep, 8);
	dmar_begin(&t, 39, 0);
	for (i = 0; i < ACPI_DMAR_MAX_UNITS + 2; i++)
		dmar_drhd(&t, 0, 0, 0xfed00000 + 0x1000ull * i, sc, sizeof sc);
	with_dmar(&t);
	assert_int_equal(run(), 0);
	assert_int_equal(info.dmar.unit_count, ACPI_DMAR_MAX_UNITS);
	assert_int_equal(info.dmar.scope_count, ACPI_DMAR_MAX_SCOPES);
	assert_int_equal(shim_klog_count(), 2);
	for (i = 0; i < info.dmar.unit_count; i++)
		assert_true(info.dmar.units[i].scope_first + info.dmar.units[i].scope_count <=
			    info.dmar.scope_count);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_q35_good),
		T(test_pc_good),
		T(test_rsdp_bad_checksum),
		T(test_rsdp_bad_signature),
		T(test_rsdp_unmapped),
		T(test_rsdp_bad_ext_checksum_uses_rsdt),
		T(test_rsdp_huge_length_uses_rsdt),
		T(test_bad_xsdt_falls_back_to_rsdt),
		T(test_xsdt_wrong_signature_falls_back),
		T(test_no_usable_root),
		T(test_xsdt_null_pointer_uses_rsdt),
		T(test_bad_table_checksum_ignored),
		T(test_table_truncated_by_mapping),
		T(test_header_straddles_mapping_end),
		T(test_length_below_header),
		T(test_length_too_large),
		T(test_unmapped_table_address),
		T(test_duplicate_tables_first_wins),
		T(test_first_valid_wins_over_bad_first),
		T(test_same_table_listed_twice),
		T(test_overlapping_tables),
		T(test_xsdt_points_at_itself),
		T(test_root_entry_cap),
		T(test_root_trailing_bytes),
		T(test_madt_zero_length_entry),
		T(test_madt_entry_overruns),
		T(test_madt_entry_too_short_for_type),
		T(test_madt_x2apic_override_nmi),
		T(test_madt_array_caps),
		T(test_mcfg_validation),
		T(test_fadt_rev1_short),
		T(test_fadt_rev6_long),
		T(test_fadt_rev1_long),
		T(test_fadt_revision_lies_length_rules),
		T(test_fadt_tiny),
		T(test_fadt_hw_reduced_and_bad_reset),
		T(test_fadt_sleep_registers),
		T(test_fadt_pm1_blocks),
		T(test_hpet_no_block_id),
		T(test_hpet_io_space_rejected),
		T(test_dmar_good),
		T(test_dmar_bridge_scope_covers_bus_range),
		T(test_dmar_scope_bad_paths),
		T(test_dmar_hostile_structures),
		T(test_dmar_structure_lengths),
		T(test_dmar_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
