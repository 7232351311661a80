/* Host tests for drivers/iommu/vtd_irte.c: the interrupt remapping table
 * entry, the remappable MSI address and IOAPIC redirection entry (decoded
 * here the way the unit and the IOAPIC read them, VT-d §5.1.2-5.1.5), IRTA,
 * and the table's one-entry-per-(requester, vector) policy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arch.h>
#include "drivers/iommu/vtd_irte.h"

/* The handle a unit reads from a remappable MSI address (§5.1.2.2). */
static unsigned msi_handle(u32 addr)
{
	return ((addr >> 2) & 1) << 15 | ((addr >> 5) & 0x7fff);
}

static void test_irte_fields(void **state)
{
	u64 e[2];

	(void)state;
	vtd_irte_encode(e, 0x31, 0x02, false, 0x0010);
	assert_true(e[0] & 1);				/* present */
	assert_int_equal((e[0] >> 1) & 1, 0);		/* FPD: faults are reported */
	assert_int_equal((e[0] >> 2) & 1, 0);		/* physical destination */
	assert_int_equal((e[0] >> 3) & 1, 0);		/* no redirection hint */
	assert_int_equal((e[0] >> 4) & 1, 0);		/* edge */
	assert_int_equal((e[0] >> 5) & 7, 0);		/* fixed delivery */
	assert_int_equal((e[0] >> 15) & 1, 0);		/* remapped, not posted */
	assert_int_equal((e[0] >> 16) & 0xff, 0x31);
	assert_int_equal((e[0] >> 40) & 0xff, 0x02);	/* xAPIC id in bits 47:40 */
	/* reserved in xAPIC mode: 14:12, 31:24, 39:32, 63:48 */
	assert_int_equal(e[0] & (0x7ull << 12 | 0xffull << 24 | 0xffull << 32 | 0xffffull << 48), 0);
	assert_int_equal(e[1] & 0xffff, 0x0010);	/* SID */
	assert_int_equal((e[1] >> 16) & 3, 0);		/* SQ 00: every SID bit compared */
	assert_int_equal((e[1] >> 18) & 3, 1);		/* SVT 01: verify the requester id */
	assert_int_equal(e[1] >> 20, 0);		/* reserved */
	assert_int_equal(vtd_irte_vector(e), 0x31);
	assert_int_equal(vtd_irte_sid(e), 0x0010);

	vtd_irte_encode(e, 0xef, 0xff, true, 0xff00);
	assert_int_equal((e[0] >> 4) & 1, 1);		/* level */
	assert_int_equal((e[0] >> 16) & 0xff, 0xef);
	assert_int_equal((e[0] >> 40) & 0xff, 0xff);
	assert_int_equal(e[1] & 0xffff, 0xff00);
	assert_int_equal(e[0] & (0x7ull << 12 | 0xffull << 24 | 0xffull << 32 | 0xffffull << 48), 0);
}

static void test_msi_addr(void **state)
{
	static const unsigned handles[] = { 0, 1, 5, 0x7fff, 0x8000, 0x8001, 0xffff };
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof handles / sizeof handles[0]; i++) {
		u32 a = vtd_ir_msi_addr((u16)handles[i]);

		assert_int_equal(a >> 20, 0xfee);
		assert_int_equal((a >> 4) & 1, 1);	/* remappable format */
		assert_int_equal((a >> 3) & 1, 1);	/* SHV: data is subhandle 0 */
		assert_int_equal(a & 3, 0);
		assert_int_equal(msi_handle(a), handles[i]);
	}
	assert_int_equal(vtd_ir_msi_addr(0), 0xfee00018u);
	assert_int_equal(vtd_ir_msi_addr(6), 0xfee000d8u);
}

/* The IOAPIC turns a redirection entry into an MSI: bits 63:48 into
 * address bits 19:4, bit 11 into address bit 2; vector, trigger and
 * polarity stay. The unit must then find the handle there. */
static void test_ioapic_rte(void **state)
{
	static const unsigned handles[] = { 0, 2, 0x4321, 0x7fff, 0x8000, 0xffff };
	unsigned i;

	(void)state;
	for (i = 0; i < sizeof handles / sizeof handles[0]; i++) {
		u64 r = vtd_ir_ioapic_rte((u16)handles[i], 0x34, true, true, false);
		u32 a = 0xfee00000u | (u32)((r >> 48) & 0xffff) << 4 | (u32)((r >> 11) & 1) << 2;

		assert_int_equal((a >> 4) & 1, 1);	/* remappable */
		assert_int_equal((a >> 3) & 1, 0);	/* no subhandle from an IOAPIC */
		assert_int_equal(msi_handle(a), handles[i]);
		assert_int_equal(r & 0xff, 0x34);	/* the entry's vector, for EOI */
		assert_int_equal((r >> 15) & 1, 1);	/* level */
		assert_int_equal((r >> 13) & 1, 1);	/* active low */
		assert_int_equal((r >> 16) & 1, 0);	/* unmasked */
		assert_int_equal((r >> 8) & 7, 0);	/* bits 10:8 zero */
		assert_int_equal(r & (0x7fffffffull << 17), 0);	/* 47:17 reserved */
	}
	assert_int_equal((vtd_ir_ioapic_rte(3, 0x40, false, false, true) >> 16) & 1, 1);
	assert_int_equal((vtd_ir_ioapic_rte(3, 0x40, false, false, true) >> 15) & 1, 0);
}

static void test_irta(void **state)
{
	(void)state;
	assert_int_equal(vtd_irta(0x123000, 256), 0x123000 | 7);	/* 2^(7+1) */
	assert_int_equal(vtd_irta(0x1000, 2), 0x1000);
	assert_int_equal(vtd_irta(0x1000, 65536), 0x1000 | 15);
	assert_int_equal(vtd_irta(0x1000, 100), 0);	/* not a power of two */
	assert_int_equal(vtd_irta(0x1000, 1), 0);
	assert_int_equal(vtd_irta(0x1000, 131072), 0);
	assert_int_equal(vtd_irta(0x1800, 256), 0);	/* unaligned */
	assert_int_equal(vtd_irta(0x123000, 256) & (1u << 11), 0);	/* EIME 0: xAPIC */
}

static void test_place(void **state)
{
	u64 tab[8][2];
	bool changed;
	int a, b, c, i;

	(void)state;
	memset(tab, 0, sizeof tab);
	a = vtd_irte_place(tab, 8, 0x30, 0, false, 0x0010, &changed);
	assert_int_equal(a, 0);
	assert_false(changed);
	b = vtd_irte_place(tab, 8, 0x31, 0, false, 0x0010, &changed);
	assert_int_equal(b, 1);
	assert_false(changed);
	/* the same pair again (a device probed anew): the same entry */
	assert_int_equal(vtd_irte_place(tab, 8, 0x30, 0, false, 0x0010, &changed), a);
	assert_false(changed);
	assert_int_equal(vtd_irte_count(tab, 8), 2);
	/* vector 0x30 now owned by another requester: the old entry goes, so
	 * 00:02.0 can no longer raise it */
	c = vtd_irte_place(tab, 8, 0x30, 0, false, 0x0018, &changed);
	assert_true(changed);
	assert_int_equal(vtd_irte_count(tab, 8), 2);
	for (i = 0; i < 8; i++)
		if ((tab[i][0] & 1) && vtd_irte_vector(tab[i]) == 0x30)
			assert_int_equal(vtd_irte_sid(tab[i]), 0x0018);
	assert_int_equal(vtd_irte_sid(tab[c]), 0x0018);
	/* in-place change of a present entry (trigger mode): changed */
	assert_int_equal(vtd_irte_place(tab, 8, 0x31, 0, true, 0x0010, &changed), b);
	assert_true(changed);
	assert_int_equal((tab[b][0] >> 4) & 1, 1);
	/* full */
	for (i = 0; i < 6; i++)
		assert_true(vtd_irte_place(tab, 8, (u8)(0x40 + i), 0, false, 0x0010, &changed) >= 0);
	assert_int_equal(vtd_irte_count(tab, 8), 8);
	assert_int_equal(vtd_irte_place(tab, 8, 0x50, 0, false, 0x0010, &changed), -ENOSPC);
	assert_int_equal(vtd_irte_count(tab, 8), 8);
	/* a vector changing owner in a full table still finds its slot */
	assert_true(vtd_irte_place(tab, 8, 0x45, 0, false, 0x0020, &changed) >= 0);
	assert_true(changed);
	assert_int_equal(vtd_irte_count(tab, 8), 8);
}

/* One present entry per vector even when the table holds duplicates (two
 * requesters' entries for one vector, from a corrupted or older table): all
 * but the owner's are cleared. */
static void test_place_duplicates(void **state)
{
	u64 tab[4][2];
	bool changed;

	(void)state;
	memset(tab, 0, sizeof tab);
	vtd_irte_encode(tab[1], 0x33, 0, false, 0x0008);
	vtd_irte_encode(tab[3], 0x33, 0, false, 0x0010);
	assert_int_equal(vtd_irte_place(tab, 4, 0x33, 0, false, 0x0010, &changed), 3);
	assert_true(changed);
	assert_int_equal(vtd_irte_count(tab, 4), 1);
	assert_int_equal(tab[1][0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_irte_fields),
		cmocka_unit_test(test_msi_addr),
		cmocka_unit_test(test_ioapic_rte),
		cmocka_unit_test(test_irta),
		cmocka_unit_test(test_place),
		cmocka_unit_test(test_place_duplicates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
