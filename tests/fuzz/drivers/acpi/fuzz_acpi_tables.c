/* libFuzzer target for drivers/acpi/acpi_tables.c.
 *
 * The input is the contents of physical memory from address 0. Its first
 * two bytes (little-endian, modulo the input size) give the RSDP address.
 * Byte 2 holds harness
 * flags that let mutations get past the gates into the table decoders:
 *   bit 0  repair checksums (RSDP, both root tables, every listed table);
 *   bit 1  stamp "RSD PTR " at the RSDP;
 *   bit 2  stamp "XSDT"/"RSDT" at the root table addresses;
 *   bit 3  stamp FACP/APIC/MCFG/HPET/DMAR on each listed table, chosen by
 *          the low 3 bits of its revision byte (FACP APIC MCFG HPET DMAR
 *          APIC MCFG DMAR);
 *   bit 4  make the RSDP revision 2 with length 36;
 *   bit 5  clamp root and listed table lengths to 36..(end of memory).
 * With no flag set the bytes are parsed exactly as given. map() returns an exact-size heap copy of the
 * requested range, so the parser reading one byte past what it mapped is an
 * ASan report. After parsing, the output's invariants are checked. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arch.h>
#include "drivers/acpi/acpi_tables.h"
#include "lib/byteorder.h"

#define MAX_MAPS 4096

struct fuzz_mem {
	const u8 *data;
	size_t size;
	void *maps[MAX_MAPS];
	unsigned nmaps;
};

static const void *fuzz_map(void *ctx, u64 phys, u64 len)
{
	struct fuzz_mem *m = ctx;
	void *p;

	if (phys > m->size || len > m->size - phys)
		return NULL;
	if (m->nmaps == MAX_MAPS)
		__builtin_trap();	/* the parser must bound its own work */
	p = malloc(len ? len : 1);
	if (!p)
		abort();
	memcpy(p, m->data + phys, len);
	m->maps[m->nmaps++] = p;
	return p;
}

static void fix_sum(u8 *p, size_t len, size_t field)
{
	u8 sum = 0;
	size_t i;

	p[field] = 0;
	for (i = 0; i < len; i++)
		sum = (u8)(sum + p[i]);
	p[field] = (u8)-sum;
}

static void clamp(u8 *mem, size_t size, u64 phys)
{
	u32 len;

	if (phys > size || size - phys < 36)
		return;
	len = get_le32(mem + phys + 4);
	if (len < 36)
		len = 36;
	if (len > size - phys)
		len = (u32)(size - phys);
	mem[phys + 4] = (u8)len;
	mem[phys + 5] = (u8)(len >> 8);
	mem[phys + 6] = (u8)(len >> 16);
	mem[phys + 7] = (u8)(len >> 24);
}

/* Repair one table's checksum if its header and length fit in memory. */
static u32 fix_table(u8 *mem, size_t size, u64 phys)
{
	u32 len;

	if (phys > size || size - phys < 36)
		return 0;
	len = get_le32(mem + phys + 4);
	if (len < 36 || len > size - phys)
		return 0;
	fix_sum(mem + phys, len, 9);
	return len;
}

#define F_FIX		0x1
#define F_RSDP_SIG	0x2
#define F_ROOT_SIG	0x4
#define F_TABLE_SIG	0x8
#define F_RSDP_V2	0x10
#define F_CLAMP		0x20

static void stamp(u8 *mem, size_t size, u64 phys, const char *sig, size_t n)
{
	if (phys <= size && size - phys >= n)
		memcpy(mem + phys, sig, n);
}

static void fix_root(u8 *mem, size_t size, u64 phys, const char *sig,
		     unsigned esz, unsigned flags)
{
	static const char *const sigs[] = { "FACP", "APIC", "MCFG", "HPET", "DMAR", "APIC", "MCFG", "DMAR" };
	u32 len, i;
	u64 ent;

	if (flags & F_ROOT_SIG)
		stamp(mem, size, phys, sig, 4);
	if (flags & F_CLAMP)
		clamp(mem, size, phys);
	if (phys > size || size - phys < 36)
		return;
	len = get_le32(mem + phys + 4);
	if (len < 36 || len > size - phys)
		return;
	for (i = 0; i < (len - 36) / esz && i < 256; i++) {
		ent = esz == 8 ? get_le64(mem + phys + 36 + 8 * i) : get_le32(mem + phys + 36 + 4 * i);
		if ((flags & F_TABLE_SIG) && ent <= size && size - ent >= 9)
			stamp(mem, size, ent, sigs[mem[ent + 8] & 7], 4);
		if (flags & F_CLAMP)
			clamp(mem, size, ent);
		if (flags & F_FIX)
			fix_table(mem, size, ent);
	}
	if (flags & F_FIX)
		fix_table(mem, size, phys);	/* after entries: they may overlap */
}

static void prepare(u8 *mem, size_t size, u64 rsdp, unsigned flags)
{
	u8 *r;
	u32 xlen;

	if (rsdp > size || size - rsdp < 20)
		return;
	r = mem + rsdp;
	if (flags & F_RSDP_SIG)
		memcpy(r, "RSD PTR ", 8);
	if ((flags & F_RSDP_V2) && size - rsdp >= 36) {
		r[15] = 2;
		memcpy(r + 20, "\x24\0\0\0", 4);
	}
	if (r[15] >= 2 && size - rsdp >= 36)
		fix_root(mem, size, get_le64(r + 24), "XSDT", 8, flags);
	fix_root(mem, size, get_le32(r + 16), "RSDT", 4, flags);
	if (!(flags & F_FIX))
		return;
	fix_sum(r, 20, 8);
	if (r[15] >= 2 && size - rsdp >= 36) {
		xlen = get_le32(r + 20);
		if (xlen >= 36 && xlen <= size - rsdp)
			fix_sum(r, xlen, 32);
	}
}

/* DMAR: counts within the arrays, every unit's and RMRR's scopes inside
 * the scope array, bases and ranges as the parser promises. */
static void check_dmar(const struct acpi_dmar *d)
{
	u32 i;

	if (d->unit_count > ACPI_DMAR_MAX_UNITS || d->rmrr_count > ACPI_DMAR_MAX_RMRR ||
	    d->scope_count > ACPI_DMAR_MAX_SCOPES)
		__builtin_trap();
	for (i = 0; i < d->unit_count; i++) {
		const struct acpi_drhd *u = &d->units[i];

		if (!u->base || (u->base & 0xfff) || u->scope_first + u->scope_count > d->scope_count)
			__builtin_trap();
	}
	for (i = 0; i < d->rmrr_count; i++) {
		const struct acpi_rmrr *r = &d->rmrrs[i];

		if (r->limit < r->base || (r->base & 0xfff) || (r->limit & 0xfff) != 0xfff ||
		    r->scope_first + r->scope_count > d->scope_count)
			__builtin_trap();
	}
	for (i = 0; i < d->scope_count; i++)
		if (!d->scopes[i].path_len || d->scopes[i].path_len > ACPI_DMAR_MAX_PATH)
			__builtin_trap();
}

static void check(const struct acpi_info *info, size_t size)
{
	const struct acpi_madt *m = &info->madt;
	u32 i;

	if (info->table_count > ACPI_MAX_TABLES || m->cpu_count > ACPI_MAX_CPUS ||
	    m->ioapic_count > ACPI_MAX_IOAPICS || m->iso_count > ACPI_MAX_ISOS ||
	    m->nmi_count > ACPI_MAX_NMIS || info->ecam_count > ACPI_MAX_ECAM)
		__builtin_trap();
	for (i = 0; i < info->table_count; i++) {
		const struct acpi_table_ref *t = &info->tables[i];

		if (t->len < 36 || t->phys > size || t->len > size - t->phys ||
		    t->sig[4] != '\0')
			__builtin_trap();
	}
	for (i = 0; i < info->ecam_count; i++) {
		const struct acpi_ecam *e = &info->ecam[i];

		if (e->end_bus < e->start_bus || !e->base || (e->base & 0xfffff))
			__builtin_trap();
	}
	for (i = 0; i < m->iso_count; i++)
		if (m->isos[i].bus != 0)
			__builtin_trap();
	if (info->fadt.pm_timer_bits != 0 && info->fadt.pm_timer_bits != 24 &&
	    info->fadt.pm_timer_bits != 32)
		__builtin_trap();
	if (info->fadt.pm_timer.address && info->fadt.hw_reduced)
		__builtin_trap();
	if (info->hpet.present && !info->hpet.base)
		__builtin_trap();
	if (info->hpet.comparators > 32)
		__builtin_trap();
	check_dmar(&info->dmar);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct acpi_info info;
	static struct fuzz_mem m;
	struct acpi_mem mem = { .map = fuzz_map, .ctx = &m };
	u8 *copy;
	u64 rsdp;
	int err;

	if (size < 3)
		return 0;
	copy = malloc(size);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	rsdp = ((u64)data[0] | (u64)data[1] << 8) % size;
	prepare(copy, size, rsdp, data[2]);

	m.data = copy;
	m.size = size;
	m.nmaps = 0;
	err = acpi_parse(rsdp, &mem, &info);
	if (err != 0 && err != -EFAULT && err != -EBADMSG && err != -ENOENT)
		__builtin_trap();
	if (err == 0)
		check(&info, size);
	(void)acpi_irq_to_gsi(&info, data[2], NULL);

	while (m.nmaps)
		free(m.maps[--m.nmaps]);
	free(copy);
	return 0;
}
