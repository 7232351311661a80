/* Host tests for drivers/pci/pci_parse.c and drivers/virtio/virtio_pci_caps.c over
 * config-space snapshots built here. The base snapshot is a virtio-net
 * function laid out the way QEMU presents a modern-only device: MSI-X
 * (table and PBA in BAR 1) heading a list of vendor caps that place the
 * virtio structures in 64-bit prefetchable BAR 4, notify multiplier 4. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include <arch.h>
#include "drivers/pci/pci_parse.h"
#include "drivers/virtio/virtio_pci_caps.h"
#include "drivers/virtio/virtio_pci_reg.h"
#include "lib/byteorder.h"

static u8 cfg[PCIE_CFG_LEN];
static struct pci_bar bars[6];

static void cap(u8 off, u8 id, u8 next)
{
	cfg[off] = id;
	cfg[off + 1] = next;
}

static void vcap(u8 off, u8 next, u8 type, u8 bar, u32 offset, u32 length,
		 u8 cap_len)
{
	cap(off, PCI_CAP_ID_VNDR, next);
	cfg[off + 2] = cap_len;
	cfg[off + 3] = type;
	cfg[off + 4] = bar;
	put_le32(cfg + off + 8, offset);
	put_le32(cfg + off + 12, length);
}

#define BAR1_BASE	0xfebd1000u
#define BAR4_BASE	0xfe000000u

static void build_virtio_net(void)
{
	memset(cfg, 0, sizeof cfg);
	memset(bars, 0, sizeof bars);
	put_le16(cfg + PCI_VENDOR_ID, VIRTIO_PCI_VENDOR_ID);
	put_le16(cfg + PCI_DEVICE_ID, VIRTIO_PCI_DEVICE_MODERN_BASE + 1);
	put_le16(cfg + PCI_STATUS, PCI_STATUS_CAP_LIST);
	cfg[PCI_REVISION_ID] = 1;
	cfg[PCI_CLASS] = 0x02;			/* network */
	put_le32(cfg + PCI_BAR0 + 4, BAR1_BASE);	/* BAR1: mem32 4 KiB */
	put_le32(cfg + PCI_BAR0 + 16, BAR4_BASE | 0xc);	/* BAR4: mem64 pref */
	put_le16(cfg + PCI_SUBSYS_VENDOR_ID, 0x1af4);
	put_le16(cfg + PCI_SUBSYS_ID, 1);
	cfg[PCI_INT_LINE] = 11;
	cfg[PCI_INT_PIN] = 1;
	cfg[PCI_CAP_PTR] = 0x98;

	cap(0x98, PCI_CAP_ID_MSIX, 0x84);
	put_le16(cfg + 0x9a, 2);			/* 3 vectors */
	put_le32(cfg + 0x9c, 0x000 | 1);		/* table: BAR1 + 0 */
	put_le32(cfg + 0xa0, 0x800 | 1);		/* PBA: BAR1 + 0x800 */
	vcap(0x84, 0x70, VIRTIO_PCI_CAP_PCI_CFG, 0, 0, 0, 20);
	vcap(0x70, 0x60, VIRTIO_PCI_CAP_NOTIFY_CFG, 4, 0x3000, 0x1000, 20);
	put_le32(cfg + 0x70 + 16, 4);
	vcap(0x60, 0x50, VIRTIO_PCI_CAP_DEVICE_CFG, 4, 0x2000, 0x1000, 16);
	vcap(0x50, 0x40, VIRTIO_PCI_CAP_ISR_CFG, 4, 0x1000, 0x1000, 16);
	vcap(0x40, 0x00, VIRTIO_PCI_CAP_COMMON_CFG, 4, 0x0000, 0x1000, 16);

	bars[1] = (struct pci_bar){ .kind = PCI_BAR_MEM32, .slots = 1,
				    .base = BAR1_BASE, .size = 0x1000 };
	bars[4] = (struct pci_bar){ .kind = PCI_BAR_MEM64, .slots = 2,
				    .prefetchable = true, .base = BAR4_BASE,
				    .size = 0x4000 };
}

static int setup(void **state)
{
	(void)state;
	build_virtio_net();
	shim_klog_reset();
	return 0;
}

#define T(fn) cmocka_unit_test_setup(fn, setup)

/* ---- header ---- */

static void test_header_endpoint(void **state)
{
	struct pci_header h;

	(void)state;
	assert_int_equal(pci_header_parse(cfg, PCI_CFG_LEN, &h), 0);
	assert_int_equal(h.vendor_id, 0x1af4);
	assert_int_equal(h.device_id, 0x1041);
	assert_int_equal(h.class_code, 2);
	assert_int_equal(h.subclass, 0);
	assert_int_equal(h.header_type, 0);
	assert_false(h.multifunction);
	assert_int_equal(h.num_bars, 6);
	assert_int_equal(h.int_pin, 1);
	assert_int_equal(h.int_line, 11);
	assert_int_equal(h.subsys_id, 1);
	assert_int_equal(h.revision, 1);
}

static void test_header_bridge(void **state)
{
	struct pci_header h;

	(void)state;
	cfg[PCI_HEADER_TYPE] = 0x81;
	cfg[PCI_CLASS] = 0x06;
	cfg[PCI_SUBCLASS] = 0x04;
	cfg[PCI_PRIMARY_BUS] = 0;
	cfg[PCI_SECONDARY_BUS] = 1;
	cfg[PCI_SUBORDINATE_BUS] = 5;
	assert_int_equal(pci_header_parse(cfg, PCI_CFG_LEN, &h), 0);
	assert_int_equal(h.header_type, 1);
	assert_true(h.multifunction);
	assert_int_equal(h.num_bars, 2);
	assert_int_equal(h.secondary_bus, 1);
	assert_int_equal(h.subordinate_bus, 5);
	assert_int_equal(h.subsys_id, 0);	/* not a type 0 field */
}

static void test_header_errors(void **state)
{
	struct pci_header h;

	(void)state;
	assert_int_equal(pci_header_parse(cfg, 32, &h), -EINVAL);
	cfg[PCI_HEADER_TYPE] = 0x05;
	assert_int_equal(pci_header_parse(cfg, PCI_CFG_LEN, &h), -EBADMSG);
	put_le16(cfg, 0xffff);
	assert_int_equal(pci_header_parse(cfg, PCI_CFG_LEN, &h), -ENODEV);
	put_le16(cfg, 0);
	assert_int_equal(pci_header_parse(cfg, PCI_CFG_LEN, &h), -ENODEV);
}

static void test_cfg_reads_bounded(void **state)
{
	(void)state;
	assert_int_equal(pci_cfg_rd16(cfg, 64, 0), 0x1af4);
	assert_int_equal(pci_cfg_rd32(cfg, 64, 62), 0xffffffffu);
	assert_int_equal(pci_cfg_rd16(cfg, 64, 63), 0xffff);
	assert_int_equal(pci_cfg_rd8(cfg, 64, 64), 0xff);
	assert_int_equal(pci_cfg_rd32(cfg, 64, (size_t)-2), 0xffffffffu);
}

/* ---- capability lists ---- */

static void test_cap_walk(void **state)
{
	static const u8 want_off[] = { 0x98, 0x84, 0x70, 0x60, 0x50, 0x40 };
	static const u8 want_id[] = { 0x11, 9, 9, 9, 9, 9 };
	struct pci_cap_iter it;
	unsigned i;
	u8 id;

	(void)state;
	pci_cap_iter_init(&it, cfg, PCI_CFG_LEN);
	for (i = 0; i < ARRAY_SIZE(want_off); i++) {
		assert_int_equal(pci_cap_iter_next(&it, &id), want_off[i]);
		assert_int_equal(id, want_id[i]);
	}
	assert_int_equal(pci_cap_iter_next(&it, &id), 0);
	assert_int_equal(pci_cap_iter_next(&it, &id), 0);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_cap_find(void **state)
{
	(void)state;
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSIX, 0), 0x98);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_VNDR, 0), 0x84);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_VNDR, 0x84), 0x70);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_VNDR, 0x40), -ENOENT);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSI, 0), -ENOENT);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_VNDR, 0x44), -EINVAL);
	assert_int_equal(pci_cap_find(cfg, PCIE_CFG_LEN, PCI_CAP_ID_MSIX, 0), 0x98);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_cap_status_bit_clear(void **state)
{
	struct pci_cap_iter it;

	(void)state;
	put_le16(cfg + PCI_STATUS, 0);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSIX, 0), -ENOENT);
	pci_cap_iter_init(&it, cfg, PCI_CFG_LEN);
	assert_int_equal(pci_cap_iter_next(&it, NULL), 0);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_cap_loop(void **state)
{
	(void)state;
	cfg[PCI_CAP_PTR] = 0x40;
	cap(0x40, 0x01, 0x50);
	cap(0x50, 0x05, 0x40);		/* back to the start */
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSIX, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
	assert_non_null(strstr(shim_klog_last(), "loop"));
	/* the caps before the loop are still found */
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSI, 0), 0x50);
}

static void test_cap_self_loop(void **state)
{
	(void)state;
	cfg[PCI_CAP_PTR] = 0x40;
	cap(0x40, 0x01, 0x41);		/* low bits masked: points at itself */
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSIX, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
}

static void test_cap_ptr_below_0x40(void **state)
{
	(void)state;
	cap(0x40, 0x01, 0x20);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSI, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
	assert_non_null(strstr(shim_klog_last(), "0x20"));

	shim_klog_reset();
	cfg[PCI_CAP_PTR] = 0x3c;	/* head itself points into the header */
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSI, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
}

static void test_cap_ptr_out_of_range(void **state)
{
	(void)state;
	cfg[PCI_CAP_PTR] = 0xf0;	/* beyond a 128-byte snapshot */
	assert_int_equal(pci_cap_find(cfg, 0x80, PCI_CAP_ID_MSI, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
	/* a snapshot too short to hold a header has no caps at all */
	assert_int_equal(pci_cap_find(cfg, 0x20, PCI_CAP_ID_MSI, 0), -ENOENT);
}

static void test_cap_ptr_low_bits_masked(void **state)
{
	(void)state;
	cfg[PCI_CAP_PTR] = 0x43;
	cap(0x40, 0x01, 0x53);
	cap(0x50, 0x05, 0x00);
	assert_int_equal(pci_cap_find(cfg, PCI_CFG_LEN, PCI_CAP_ID_MSI, 0), 0x50);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_cap_full_chain_is_not_a_loop(void **state)
{
	struct pci_cap_iter it;
	unsigned off, n = 0;

	(void)state;
	cfg[PCI_CAP_PTR] = 0x40;
	for (off = 0x40; off <= 0xfc; off += 4)
		cap((u8)off, 0x01, off == 0xfc ? 0 : (u8)(off + 4));
	pci_cap_iter_init(&it, cfg, PCI_CFG_LEN);
	while (pci_cap_iter_next(&it, NULL) > 0)
		n++;
	assert_int_equal(n, 48);
	assert_int_equal(shim_klog_count(), 0);
}

static void ext_hdr(u16 off, u16 id, u8 ver, u16 next)
{
	put_le32(cfg + off, (u32)id | (u32)ver << 16 | (u32)next << 20);
}

static void test_ext_caps(void **state)
{
	struct pci_ext_cap_iter it;
	u16 id;
	u8 ver;

	(void)state;
	ext_hdr(0x100, 0x0001, 2, 0x14b);	/* AER; low bits masked */
	ext_hdr(0x148, 0x000b, 1, 0x200);	/* vendor-specific */
	ext_hdr(0x200, 0x000b, 1, 0x000);
	pci_ext_cap_iter_init(&it, cfg, PCIE_CFG_LEN);
	assert_int_equal(pci_ext_cap_iter_next(&it, &id, &ver), 0x100);
	assert_int_equal(id, 1);
	assert_int_equal(ver, 2);
	assert_int_equal(pci_ext_cap_iter_next(&it, &id, NULL), 0x148);
	assert_int_equal(pci_ext_cap_iter_next(&it, &id, NULL), 0x200);
	assert_int_equal(pci_ext_cap_iter_next(&it, &id, NULL), 0);
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x000b, 0), 0x148);
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x000b, 0x148), 0x200);
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x0001, 0x100), -ENOENT);
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x0001, 0x104), -EINVAL);
	/* a 256-byte snapshot has no extended space */
	assert_int_equal(pci_ext_cap_find(cfg, PCI_CFG_LEN, 0x0001, 0), -ENOENT);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_ext_caps_empty(void **state)
{
	struct pci_ext_cap_iter it;

	(void)state;
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x0001, 0), -ENOENT);
	pci_ext_cap_iter_init(&it, cfg, PCIE_CFG_LEN);
	assert_int_equal(pci_ext_cap_iter_next(&it, NULL, NULL), 0);
	memset(cfg + 0x100, 0xff, 4);	/* no extended space behind it */
	pci_ext_cap_iter_init(&it, cfg, PCIE_CFG_LEN);
	assert_int_equal(pci_ext_cap_iter_next(&it, NULL, NULL), 0);
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0xffff, 0), -ENOENT);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_ext_caps_loop_and_bad_pointer(void **state)
{
	(void)state;
	ext_hdr(0x100, 0x0001, 2, 0x148);
	ext_hdr(0x148, 0x000b, 1, 0x100);
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x0002, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);

	shim_klog_reset();
	ext_hdr(0x148, 0x000b, 1, 0x080);	/* into standard space */
	assert_int_equal(pci_ext_cap_find(cfg, PCIE_CFG_LEN, 0x0002, 0), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
	assert_non_null(strstr(shim_klog_last(), "0x80"));
}

/* ---- BARs ---- */

struct bar_case {
	unsigned idx;
	u32 orig, sized, orig_hi, sized_hi;
	int ret;
	enum pci_bar_kind kind;
	bool pref;
	u64 base, size;
	u8 slots;
};

static const struct bar_case bar_cases[] = {
	/* I/O */
	{ 0, 0x0000c001, 0xffffffe1, 0, 0, 0, PCI_BAR_IO, false, 0xc000, 0x20, 1 },
	{ 0, 0x0000c041, 0x0000ffe1, 0, 0, 0, PCI_BAR_IO, false, 0xc040, 0x20, 1 },
	{ 0, 0x0000c011, 0xffffffe1, 0, 0, -EBADMSG, PCI_BAR_NONE, false, 0, 0, 1 },
	{ 0, 0x00010001, 0xfffffff1, 0, 0, -ERANGE, PCI_BAR_NONE, false, 0, 0, 1 },
	{ 0, 0x00000001, 0xffff0001, 0, 0, 0, PCI_BAR_NONE, false, 0, 0, 1 },
	/* 32-bit memory */
	{ 1, 0xfebd1000, 0xfffff000, 0, 0, 0, PCI_BAR_MEM32, false, 0xfebd1000, 0x1000, 1 },
	{ 2, 0xfd000008, 0xff000008, 0, 0, 0, PCI_BAR_MEM32, true, 0xfd000000, 0x1000000, 1 },
	{ 1, 0xfebd1800, 0xfffff000, 0, 0, -EBADMSG, PCI_BAR_NONE, false, 0, 0, 1 },
	{ 1, 0xfebd0000, 0xfff0f000, 0, 0, 0, PCI_BAR_MEM32, false, 0xfebd0000, 0x1000, 1 },
	{ 3, 0x00000000, 0x00000000, 0, 0, 0, PCI_BAR_NONE, false, 0, 0, 1 },
	{ 0, 0x00000002, 0xfffff002, 0, 0, -ENOTSUP, PCI_BAR_NONE, false, 0, 0, 1 },
	{ 0, 0x00000006, 0xfffff006, 0, 0, -ENOTSUP, PCI_BAR_NONE, false, 0, 0, 1 },
	/* 64-bit memory */
	{ 4, 0xfe00000c, 0xffffc00c, 0, 0xffffffff, 0, PCI_BAR_MEM64, true, 0xfe000000, 0x4000, 2 },
	{ 4, 0x0000000c, 0xffffc00c, 0x80, 0xffffffff, 0, PCI_BAR_MEM64, true, 0x8000000000ull, 0x4000, 2 },
	{ 2, 0x00000004, 0x00000004, 0x4, 0xfffffffe, 0, PCI_BAR_MEM64, false, 0x400000000ull, 0x200000000ull, 2 },
	{ 0, 0x00000004, 0x00000004, 0, 0, 0, PCI_BAR_NONE, false, 0, 0, 2 },
	{ 5, 0x0000000c, 0xffffc00c, 0, 0xffffffff, -EINVAL, PCI_BAR_NONE, false, 0, 0, 1 },
	{ 0, 0xffffc00c, 0xffffc00c, 0xffffffff, 0xffffffff, -EOVERFLOW, PCI_BAR_NONE, false, 0, 0, 2 },
	{ 6, 0xfebd1000, 0xfffff000, 0, 0, -EINVAL, PCI_BAR_NONE, false, 0, 0, 1 },
};

static void test_bar_decode(void **state)
{
	const struct bar_case *c;
	struct pci_bar b;
	unsigned i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bar_cases); i++) {
		c = &bar_cases[i];
		print_message("bar case %u\n", i);
		assert_int_equal(pci_bar_decode(c->idx, c->orig, c->sized, c->orig_hi,
						c->sized_hi, &b), c->ret);
		assert_int_equal(b.kind, c->kind);
		assert_int_equal(b.prefetchable, c->pref);
		assert_int_equal(b.base, c->base);
		assert_int_equal(b.size, c->size);
		assert_int_equal(b.slots, c->slots);
	}
}

/* ---- MSI-X / MSI ---- */

static const u64 msix_bars[6] = { 0, 0x1000, 0, 0, 0x4000, 0 };

static void test_msix_good(void **state)
{
	struct pci_msix_info m;

	(void)state;
	put_le16(cfg + 0x9a, 2 | PCI_MSIX_CTRL_ENABLE);
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), 0);
	assert_int_equal(m.table_size, 3);
	assert_int_equal(m.table_bir, 1);
	assert_int_equal(m.table_offset, 0);
	assert_int_equal(m.pba_bir, 1);
	assert_int_equal(m.pba_offset, 0x800);
	assert_true(m.enabled);
	assert_false(m.function_masked);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_msix_table_beyond_bar(void **state)
{
	struct pci_msix_info m;

	(void)state;
	put_le32(cfg + 0x9c, 0xff8 | 1);	/* 3 * 16 bytes from 0xff8 */
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), -ERANGE);
	assert_int_equal(shim_klog_count(), 1);
	assert_non_null(strstr(shim_klog_last(), "table"));

	put_le32(cfg + 0x9c, 0xfd0 | 1);	/* ends exactly at 0x1000: fits */
	put_le32(cfg + 0xa0, 0x800 | 1);
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), 0);

	put_le16(cfg + 0x9a, 0x7ff);		/* 2048 vectors = 32 KiB */
	put_le32(cfg + 0x9c, 0 | 4);
	put_le32(cfg + 0xa0, 0x800 | 1);
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), -ERANGE);
	assert_int_equal(m.table_size, 2048);
}

static void test_msix_bad_bir_and_pba(void **state)
{
	struct pci_msix_info m;

	(void)state;
	put_le32(cfg + 0x9c, 0 | 7);		/* reserved BIR */
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), -ERANGE);
	put_le32(cfg + 0x9c, 0 | 2);		/* absent BAR */
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), -ERANGE);
	put_le32(cfg + 0x9c, 0 | 1);
	put_le32(cfg + 0xa0, 0x1000 | 1);	/* PBA starts at the BAR end */
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), -ERANGE);
	put_le32(cfg + 0xa0, 0x020 | 1);	/* inside the 48-byte table */
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x98, msix_bars, &m), -ERANGE);
	assert_int_equal(shim_klog_count(), 4);
}

static void test_msix_bad_cap_offset(void **state)
{
	struct pci_msix_info m;

	(void)state;
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x84, msix_bars, &m), -EINVAL);
	assert_int_equal(pci_msix_parse(cfg, PCI_CFG_LEN, 0x20, msix_bars, &m), -EINVAL);
	cap(0xf8, PCI_CAP_ID_MSIX, 0);	/* 12 bytes would pass 0x100 */
	assert_int_equal(pci_msix_parse(cfg, PCIE_CFG_LEN, 0xf8, msix_bars, &m), -EINVAL);
}

static void test_msi(void **state)
{
	struct pci_msi_info m;

	(void)state;
	cap(0x50, PCI_CAP_ID_MSI, 0);
	put_le16(cfg + 0x52, (5 << 1) | (1 << 7) | (1 << 8));
	assert_int_equal(pci_msi_parse(cfg, PCI_CFG_LEN, 0x50, &m), 0);
	assert_true(m.is_64bit);
	assert_true(m.per_vector_mask);
	assert_int_equal(m.max_vectors, 32);
	assert_int_equal(m.ctrl_off, 0x52);
	assert_int_equal(m.addr_lo_off, 0x54);
	assert_int_equal(m.addr_hi_off, 0x58);
	assert_int_equal(m.data_off, 0x5c);
	assert_int_equal(m.mask_off, 0x60);
	assert_int_equal(m.pending_off, 0x64);

	put_le16(cfg + 0x52, 1);		/* 32-bit, 1 vector, enabled */
	assert_int_equal(pci_msi_parse(cfg, PCI_CFG_LEN, 0x50, &m), 0);
	assert_false(m.is_64bit);
	assert_true(m.enabled);
	assert_int_equal(m.max_vectors, 1);
	assert_int_equal(m.addr_hi_off, 0);
	assert_int_equal(m.data_off, 0x58);
	assert_int_equal(m.mask_off, 0);

	put_le16(cfg + 0x52, (2 << 1) | (1 << 8));	/* 32-bit with masking */
	assert_int_equal(pci_msi_parse(cfg, PCI_CFG_LEN, 0x50, &m), 0);
	assert_int_equal(m.max_vectors, 4);
	assert_int_equal(m.mask_off, 0x5c);
	assert_int_equal(m.pending_off, 0x60);

	put_le16(cfg + 0x52, 6 << 1);	/* reserved MMC */
	assert_int_equal(pci_msi_parse(cfg, PCI_CFG_LEN, 0x50, &m), -EBADMSG);

	cap(0xf0, PCI_CAP_ID_MSI, 0);	/* 64-bit + masking needs 24 bytes */
	put_le16(cfg + 0xf2, (1 << 7) | (1 << 8));
	assert_int_equal(pci_msi_parse(cfg, PCI_CFG_LEN, 0xf0, &m), -EINVAL);
	assert_int_equal(pci_msi_parse(cfg, PCI_CFG_LEN, 0x98, &m), -EINVAL);
}

/* ---- virtio-pci capabilities ---- */

static void test_virtio_good_layout(void **state)
{
	struct virtio_pci_layout l;
	u64 off;

	(void)state;
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), 0);
	assert_int_equal(shim_klog_count(), 0);
	assert_true(l.common.present);
	assert_int_equal(l.common.bar, 4);
	assert_int_equal(l.common.offset, 0);
	assert_int_equal(l.common.length, 0x1000);
	assert_int_equal(l.common.cap_off, 0x40);
	assert_int_equal(l.isr.offset, 0x1000);
	assert_true(l.device.present);
	assert_int_equal(l.device.offset, 0x2000);
	assert_int_equal(l.notify.offset, 0x3000);
	assert_int_equal(l.notify_off_multiplier, 4);
	assert_int_equal(l.pci_cfg_cap, 0x84);

	assert_int_equal(virtio_pci_notify_offset(&l, 0, false, &off), 0);
	assert_int_equal(off, 0x3000);
	assert_int_equal(virtio_pci_notify_offset(&l, 1, false, &off), 0);
	assert_int_equal(off, 0x3004);
	assert_int_equal(virtio_pci_notify_offset(&l, 0x3ff, false, &off), 0);
	assert_int_equal(off, 0x3ffc);
	assert_int_equal(virtio_pci_notify_offset(&l, 0x3ff, true, &off), 0);
	off = 0x1234;
	assert_int_equal(virtio_pci_notify_offset(&l, 0x400, false, &off), -ERANGE);
	assert_int_equal(off, 0x1234);		/* untouched on error */

	/* the 4096-byte snapshot of the same function parses the same */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCIE_CFG_LEN, bars, &l), 0);
}

static void test_virtio_bars_from_registers(void **state)
{
	struct pci_bar dec[6];
	struct virtio_pci_layout l;
	u32 sized[6] = { 0, 0xfffff000, 0, 0, 0xffffc00c, 0xffffffff };
	unsigned i = 0;
	u32 orig, hi;

	(void)state;
	memset(dec, 0, sizeof dec);
	while (i < 6) {
		orig = pci_cfg_rd32(cfg, PCI_CFG_LEN, PCI_BAR0 + 4 * i);
		hi = i < 5 ? pci_cfg_rd32(cfg, PCI_CFG_LEN, PCI_BAR0 + 4 * (i + 1)) : 0;
		assert_int_equal(pci_bar_decode(i, orig, sized[i], hi,
						i < 5 ? sized[i + 1] : 0, &dec[i]), 0);
		i += dec[i].slots;
	}
	assert_int_equal(dec[4].kind, PCI_BAR_MEM64);
	assert_int_equal(dec[4].size, 0x4000);
	assert_int_equal(dec[5].kind, PCI_BAR_NONE);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, dec, &l), 0);
	assert_int_equal(l.notify.bar, 4);
}

static void test_virtio_cap_bar7(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	cfg[0x70 + 4] = 7;
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_false(l.notify.present);
	assert_int_equal(shim_klog_count(), 1);
	assert_non_null(strstr(shim_klog_last(), "BAR 7"));

	/* a later valid NOTIFY cap is taken instead */
	shim_klog_reset();
	cap(0x40, PCI_CAP_ID_VNDR, 0xb0);
	vcap(0xb0, 0x00, VIRTIO_PCI_CAP_NOTIFY_CFG, 4, 0x3800, 0x800, 20);
	put_le32(cfg + 0xb0 + 16, 0x1000);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), 0);
	assert_int_equal(l.notify.cap_off, 0xb0);
	assert_int_equal(l.notify.offset, 0x3800);
	assert_int_equal(l.notify_off_multiplier, 0x1000);
	assert_int_equal(shim_klog_count(), 1);
}

static void test_virtio_offset_length_overflow(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	/* 0xfffff000 + 0x2000 wraps to 0x1000 in 32 bits: must not pass */
	put_le32(cfg + 0x40 + 8, 0xfffff000);
	put_le32(cfg + 0x40 + 12, 0x2000);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_false(l.common.present);
	assert_int_equal(shim_klog_count(), 1);
	assert_non_null(strstr(shim_klog_last(), "outside"));

	/* just past the end of BAR 4 */
	shim_klog_reset();
	put_le32(cfg + 0x40 + 8, 0x3000);
	put_le32(cfg + 0x40 + 12, 0x1001);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_int_equal(shim_klog_count(), 1);
}

static void test_virtio_common_too_short(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	put_le32(cfg + 0x40 + 12, 0x30);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_false(l.common.present);
	assert_int_equal(shim_klog_count(), 1);

	shim_klog_reset();
	put_le32(cfg + 0x40 + 12, sizeof(struct virtio_pci_common_cfg));
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), 0);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_virtio_notify_beyond_window(void **state)
{
	struct virtio_pci_layout l;
	u64 off;

	(void)state;
	put_le32(cfg + 0x70 + 12, 0x10);	/* room for queues 0..3 at 4 bytes */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), 0);
	assert_int_equal(virtio_pci_notify_offset(&l, 3, false, &off), 0);
	assert_int_equal(off, 0x300c);
	assert_int_equal(virtio_pci_notify_offset(&l, 3, true, &off), 0);
	assert_int_equal(virtio_pci_notify_offset(&l, 4, false, &off), -ERANGE);

	put_le32(cfg + 0x70 + 12, 0x0e);	/* 3*4 + 2 fits, + 4 does not */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), 0);
	assert_int_equal(virtio_pci_notify_offset(&l, 3, false, &off), 0);
	assert_int_equal(virtio_pci_notify_offset(&l, 3, true, &off), -ERANGE);

	/* the largest product must not wrap into range */
	l.notify_off_multiplier = 0x80000000u;
	assert_int_equal(virtio_pci_notify_offset(&l, 0xffff, true, &off), -ERANGE);

	/* multiplier 0: every queue shares the first address */
	l.notify_off_multiplier = 0;
	assert_int_equal(virtio_pci_notify_offset(&l, 0xffff, false, &off), 0);
	assert_int_equal(off, 0x3000);

	memset(&l, 0, sizeof l);
	assert_int_equal(virtio_pci_notify_offset(&l, 0, false, &off), -ENODEV);
}

static void test_virtio_missing_caps(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	cfg[0x50 + 3] = VIRTIO_PCI_CAP_VENDOR_CFG;	/* no ISR any more */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_int_equal(shim_klog_count(), 0);

	cfg[PCI_CAP_PTR] = 0x98;
	cap(0x98, PCI_CAP_ID_MSIX, 0);	/* no vendor caps: legacy-only */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);

	put_le16(cfg + PCI_STATUS, 0);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_int_equal(shim_klog_count(), 0);
}

static void test_virtio_bad_caps_rejected(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	cfg[0x70 + 2] = 16;		/* notify cap needs 20 bytes */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_int_equal(shim_klog_count(), 1);
	build_virtio_net();

	put_le32(cfg + 0x70 + 16, 3);	/* multiplier not a power of two */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	build_virtio_net();

	cfg[0x50 + 4] = 5;		/* upper half of 64-bit BAR 4 */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	build_virtio_net();

	bars[0] = (struct pci_bar){ .kind = PCI_BAR_IO, .slots = 1,
				    .base = 0xc000, .size = 0x40 };
	cfg[0x50 + 4] = 0;		/* I/O BAR */
	put_le32(cfg + 0x50 + 8, 0x13);
	put_le32(cfg + 0x50 + 12, 1);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	build_virtio_net();

	put_le32(cfg + 0x40 + 8, 0x2);	/* common cfg must be 4-aligned */
	put_le32(cfg + 0x40 + 12, 0x100);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	build_virtio_net();

	put_le32(cfg + 0x70 + 8, 0x3001);	/* notify must be 2-aligned */
	put_le32(cfg + 0x70 + 12, 0x100);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	build_virtio_net();

	put_le32(cfg + 0x50 + 12, 0);	/* ISR length 0 */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -ENODEV);
	assert_int_equal(shim_klog_count(), 7);
}

static void test_virtio_cap_runs_off_config_space(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	cap(0x40, PCI_CAP_ID_VNDR, 0xf8);
	vcap(0xf8, 0, VIRTIO_PCI_CAP_COMMON_CFG, 4, 0, 0x1000, 16);
	/* cfg_type at 0xfb is readable; the cap's 16 bytes are not */
	cfg[0x40 + 4] = 9;		/* first COMMON invalid: BAR 9 */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCIE_CFG_LEN, bars, &l), -ENODEV);
	assert_int_equal(shim_klog_count(), 2);
	assert_non_null(strstr(shim_klog_last(), "cap_len"));
}

static void test_virtio_first_valid_common_wins(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	cap(0x40, PCI_CAP_ID_VNDR, 0xb0);
	vcap(0xb0, 0, VIRTIO_PCI_CAP_COMMON_CFG, 4, 0x3f00, 0x100, 16);
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), 0);
	assert_int_equal(l.common.cap_off, 0x40);	/* second one ignored */
	assert_int_equal(shim_klog_count(), 0);
}

static void test_virtio_looping_list(void **state)
{
	struct virtio_pci_layout l;

	(void)state;
	cap(0x40, PCI_CAP_ID_VNDR, 0x70);	/* COMMON -> NOTIFY again */
	assert_int_equal(virtio_pci_parse_caps(cfg, PCI_CFG_LEN, bars, &l), -EBADMSG);
	assert_int_equal(shim_klog_count(), 1);
}

/* Only a window inside a memory BAR with a base is mapped, and only so much. */
static void test_bar_window_check(void **state)
{
	struct pci_bar mem = { .kind = PCI_BAR_MEM64, .slots = 2, .base = 0xfe000000, .size = 0x4000 };
	struct pci_bar io = { .kind = PCI_BAR_IO, .slots = 1, .base = 0xc000, .size = 0x40 };
	struct pci_bar none = { .kind = PCI_BAR_NONE };
	struct pci_bar unset = mem, wraps = mem, huge = mem;

	unset.base = 0;
	wraps.base = 0xfffffffffffff000ULL;
	huge.size = 1ULL << 40;
	assert_int_equal(pci_bar_window_check(&mem, 0, 0x1000, PCI_BAR_WINDOW_MAX), 0);
	assert_int_equal(pci_bar_window_check(&mem, 0x3000, 0x1000, PCI_BAR_WINDOW_MAX), 0);
	assert_int_equal(pci_bar_window_check(&mem, 0x3000, 0x1001, PCI_BAR_WINDOW_MAX), -EINVAL);
	assert_int_equal(pci_bar_window_check(&mem, 0x4000, 1, PCI_BAR_WINDOW_MAX), -EINVAL);
	assert_int_equal(pci_bar_window_check(&mem, 0x10, 0, PCI_BAR_WINDOW_MAX), -EINVAL);
	assert_int_equal(pci_bar_window_check(&mem, 0x10, ~0ULL, PCI_BAR_WINDOW_MAX), -EINVAL);
	assert_int_equal(pci_bar_window_check(&mem, ~0ULL, 2, PCI_BAR_WINDOW_MAX), -EINVAL);
	assert_int_equal(pci_bar_window_check(&io, 0, 0x10, PCI_BAR_WINDOW_MAX), -ENODEV);
	assert_int_equal(pci_bar_window_check(&none, 0, 0x10, PCI_BAR_WINDOW_MAX), -ENODEV);
	assert_int_equal(pci_bar_window_check(&unset, 0, 0x10, PCI_BAR_WINDOW_MAX), -ENODEV);
	assert_int_equal(pci_bar_window_check(&wraps, 0, 0x10, PCI_BAR_WINDOW_MAX), -ENODEV);
	/* A huge BAR: a small window of it is fine, the whole of it is not. */
	assert_int_equal(pci_bar_window_check(&huge, 0x1000, 0x1000, PCI_BAR_WINDOW_MAX), 0);
	assert_int_equal(pci_bar_window_check(&huge, 0, huge.size, PCI_BAR_WINDOW_MAX), -E2BIG);
	assert_int_equal(pci_bar_window_check(&huge, 0, PCI_BAR_WINDOW_MAX + 1, PCI_BAR_WINDOW_MAX), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_header_endpoint),
		T(test_header_bridge),
		T(test_header_errors),
		T(test_cfg_reads_bounded),
		T(test_cap_walk),
		T(test_cap_find),
		T(test_cap_status_bit_clear),
		T(test_cap_loop),
		T(test_cap_self_loop),
		T(test_cap_ptr_below_0x40),
		T(test_cap_ptr_out_of_range),
		T(test_cap_ptr_low_bits_masked),
		T(test_cap_full_chain_is_not_a_loop),
		T(test_ext_caps),
		T(test_ext_caps_empty),
		T(test_ext_caps_loop_and_bad_pointer),
		T(test_bar_decode),
		T(test_msix_good),
		T(test_msix_table_beyond_bar),
		T(test_msix_bad_bir_and_pba),
		T(test_msix_bad_cap_offset),
		T(test_msi),
		T(test_virtio_good_layout),
		T(test_virtio_bars_from_registers),
		T(test_virtio_cap_bar7),
		T(test_virtio_offset_length_overflow),
		T(test_virtio_common_too_short),
		T(test_virtio_notify_beyond_window),
		T(test_virtio_missing_caps),
		T(test_virtio_bad_caps_rejected),
		T(test_virtio_cap_runs_off_config_space),
		T(test_virtio_first_valid_common_wins),
		T(test_virtio_looping_list),
		T(test_bar_window_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
