/* PCI config-space parsing over a snapshot. Every pointer and length in the
 * snapshot came from the device and is checked before use. */
#include "drivers/pci/pci_parse.h"
#include "lib/string.h"
#include <arch.h>

#define PCI_CARDBUS_CAP_PTR	0x14	/* type 2 headers keep it here */
#define PCI_STD_CAP_END		PCI_CFG_LEN	/* standard caps live below 0x100 */

#define MSIX_CAP_LEN		12
#define MSI_CAP_MIN_LEN		10

int pci_header_parse(const u8 *cfg, size_t len, struct pci_header *out)
{
	u8 ht;

	memset(out, 0, sizeof *out);
	if (len < PCI_CFG_HDR_LEN)
		return -EINVAL;
	out->vendor_id = pci_cfg_rd16(cfg, len, PCI_VENDOR_ID);
	out->device_id = pci_cfg_rd16(cfg, len, PCI_DEVICE_ID);
	if (out->vendor_id == 0xffff || out->vendor_id == 0)
		return -ENODEV;
	out->command = pci_cfg_rd16(cfg, len, PCI_COMMAND);
	out->status = pci_cfg_rd16(cfg, len, PCI_STATUS);
	out->revision = cfg[PCI_REVISION_ID];
	out->prog_if = cfg[PCI_PROG_IF];
	out->subclass = cfg[PCI_SUBCLASS];
	out->class_code = cfg[PCI_CLASS];
	ht = cfg[PCI_HEADER_TYPE];
	out->header_type = ht & 0x7f;
	out->multifunction = ht & PCI_HEADER_MULTIFN;
	out->int_line = cfg[PCI_INT_LINE];
	out->int_pin = cfg[PCI_INT_PIN];

	switch (out->header_type) {
	case 0:
		out->num_bars = 6;
		out->subsys_vendor_id = pci_cfg_rd16(cfg, len, PCI_SUBSYS_VENDOR_ID);
		out->subsys_id = pci_cfg_rd16(cfg, len, PCI_SUBSYS_ID);
		return 0;
	case 1:
		out->num_bars = 2;
		out->primary_bus = cfg[PCI_PRIMARY_BUS];
		out->secondary_bus = cfg[PCI_SECONDARY_BUS];
		out->subordinate_bus = cfg[PCI_SUBORDINATE_BUS];
		return 0;
	case 2:
		return 0;
	default:
		return -EBADMSG;
	}
}

/* ---- standard capabilities ---------------------------------------------- */

void pci_cap_iter_init(struct pci_cap_iter *it, const u8 *cfg, size_t len)
{
	u8 ptr_off;

	it->cfg = cfg;
	it->len = len;
	it->next = 0;
	it->visited = 0;
	it->done = true;
	if (len < PCI_CFG_HDR_LEN)
		return;
	if (!(pci_cfg_rd16(cfg, len, PCI_STATUS) & PCI_STATUS_CAP_LIST))
		return;
	ptr_off = (cfg[PCI_HEADER_TYPE] & 0x7f) == 2 ? PCI_CARDBUS_CAP_PTR : PCI_CAP_PTR;
	it->next = cfg[ptr_off] & 0xfc;	/* low 2 bits are reserved */
	it->done = false;
}

int pci_cap_iter_next(struct pci_cap_iter *it, u8 *id_out)
{
	u8 off = it->next;
	u64 bit;

	if (it->done)
		return 0;
	if (off == 0) {
		it->done = true;
		return 0;
	}
	/* Each cap needs its 2-byte header (id, next) inside the snapshot. */
	if (off < PCI_CFG_HDR_LEN || (size_t)off + 2 > it->len) {
		it->done = true;
		klog("pci: capability pointer 0x%x out of range", off);
		return -EBADMSG;
	}
	bit = 1ull << (off >> 2);
	if (it->visited & bit) {
		it->done = true;
		klog("pci: capability list loops at 0x%x", off);
		return -EBADMSG;
	}
	it->visited |= bit;
	if (id_out)
		*id_out = it->cfg[off];
	it->next = it->cfg[off + 1] & 0xfc;
	return off;
}

int pci_cap_find(const u8 *cfg, size_t len, u8 cap_id, u8 start_after)
{
	struct pci_cap_iter it;
	bool passed = start_after == 0;
	int off;
	u8 id;

	pci_cap_iter_init(&it, cfg, len);
	while ((off = pci_cap_iter_next(&it, &id)) > 0) {
		if (!passed) {
			passed = off == start_after;
			continue;
		}
		if (id == cap_id)
			return off;
	}
	if (off < 0)
		return off;
	return passed ? -ENOENT : -EINVAL;
}

/* ---- extended capabilities ---------------------------------------------- */

void pci_ext_cap_iter_init(struct pci_ext_cap_iter *it, const u8 *cfg, size_t len)
{
	u32 hdr;

	memset(it, 0, sizeof *it);
	it->cfg = cfg;
	it->len = len;
	it->done = true;
	if (len < PCIE_CFG_LEN)
		return;
	/* All zeroes (PCIe's "no extended capabilities") or all ones (no
	 * extended config space behind this function) end the list at once. */
	hdr = pci_cfg_rd32(cfg, len, PCIE_EXT_CAP_START);
	if (hdr == 0 || hdr == 0xffffffffu)
		return;
	it->next = PCIE_EXT_CAP_START;
	it->done = false;
}

int pci_ext_cap_iter_next(struct pci_ext_cap_iter *it, u16 *id_out, u8 *ver_out)
{
	u16 off = it->next;
	u32 hdr, slot;

	if (it->done)
		return 0;
	if (off == 0) {
		it->done = true;
		return 0;
	}
	if (off < PCIE_EXT_CAP_START || (size_t)off + 4 > it->len) {
		it->done = true;
		klog("pci: extended capability pointer 0x%x out of range", off);
		return -EBADMSG;
	}
	slot = (u32)(off - PCIE_EXT_CAP_START) >> 2;
	if (it->visited[slot / 64] & (1ull << (slot % 64))) {
		it->done = true;
		klog("pci: extended capability list loops at 0x%x", off);
		return -EBADMSG;
	}
	it->visited[slot / 64] |= 1ull << (slot % 64);
	hdr = pci_cfg_rd32(it->cfg, it->len, off);
	if (id_out)
		*id_out = (u16)hdr;
	if (ver_out)
		*ver_out = (hdr >> 16) & 0xf;
	it->next = (u16)((hdr >> 20) & 0xffc);
	return off;
}

int pci_ext_cap_find(const u8 *cfg, size_t len, u16 cap_id, u16 start_after)
{
	struct pci_ext_cap_iter it;
	bool passed = start_after == 0;
	int off;
	u16 id;

	pci_ext_cap_iter_init(&it, cfg, len);
	while ((off = pci_ext_cap_iter_next(&it, &id, NULL)) > 0) {
		if (!passed) {
			passed = off == start_after;
			continue;
		}
		if (id == cap_id)
			return off;
	}
	if (off < 0)
		return off;
	return passed ? -ENOENT : -EINVAL;
}

/* ---- BARs --------------------------------------------------------------- */

#define BAR_IO			0x1
#define BAR_MEM_TYPE(v)		(((v) >> 1) & 3)
#define BAR_MEM_TYPE_32		0
#define BAR_MEM_TYPE_64		2
#define BAR_MEM_PREFETCH	0x8
#define BAR_IO_MASK		0xfffffffcu
#define BAR_MEM_MASK		0xfffffff0u
#define X86_IO_SPACE		0x10000u

/* Decoders only see address bits the device lets software write; the size
 * is the lowest such bit. Taking the lowest set bit (not ~mask + 1) keeps a
 * device that returns a non-contiguous mask from inflating the size. */
static u64 pci_lowest_bit(u64 v)
{
	return v & (~v + 1);
}

int pci_bar_decode(unsigned idx, u32 orig, u32 sized, u32 orig_hi, u32 sized_hi,
		   struct pci_bar *out)
{
	u64 base, size;
	unsigned type;

	memset(out, 0, sizeof *out);
	out->kind = PCI_BAR_NONE;
	out->slots = 1;
	if (idx > 5)
		return -EINVAL;

	if (orig & BAR_IO) {
		size = pci_lowest_bit(sized & BAR_IO_MASK & 0xffff);
		if (!size)
			return 0;
		base = orig & BAR_IO_MASK;
		if (base & (size - 1))
			return -EBADMSG;
		if (base + size > X86_IO_SPACE)
			return -ERANGE;
		out->kind = PCI_BAR_IO;
		out->base = base;
		out->size = size;
		return 0;
	}

	type = BAR_MEM_TYPE(orig);
	if (type == BAR_MEM_TYPE_32) {
		size = pci_lowest_bit(sized & BAR_MEM_MASK);
		if (!size)
			return 0;
		base = orig & BAR_MEM_MASK;
		if (base & (size - 1))
			return -EBADMSG;	/* aligned, so it ends by 4 GiB */
		out->kind = PCI_BAR_MEM32;
	} else if (type == BAR_MEM_TYPE_64) {
		if (idx == 5)
			return -EINVAL;	/* its upper half would be slot 6 */
		out->slots = 2;
		size = pci_lowest_bit((u64)sized_hi << 32 | (sized & BAR_MEM_MASK));
		if (!size)
			return 0;
		base = (u64)orig_hi << 32 | (orig & BAR_MEM_MASK);
		if (base & (size - 1))
			return -EBADMSG;
		if (size > ~base)	/* base + size would wrap */
			return -EOVERFLOW;
		out->kind = PCI_BAR_MEM64;
	} else {
		return -ENOTSUP;	/* 01b (below 1 MiB, PCI 2.x) or 11b */
	}
	out->prefetchable = orig & BAR_MEM_PREFETCH;
	out->base = base;
	out->size = size;
	return 0;
}

/* ---- MSI-X / MSI -------------------------------------------------------- */

static bool pci_msix_fits(u64 off, u64 len, u8 bir, const u64 bar_size[6])
{
	return bir < 6 && off + len <= bar_size[bir];	/* absent BAR: size 0 */
}

int pci_msix_parse(const u8 *cfg, size_t len, u8 cap_off, const u64 bar_size[6],
		   struct pci_msix_info *out)
{
	size_t end = MIN(len, (size_t)PCI_STD_CAP_END);
	u32 ctrl, tbl, pba;
	u64 tlen, plen;

	memset(out, 0, sizeof *out);
	if (cap_off < PCI_CFG_HDR_LEN || (size_t)cap_off + MSIX_CAP_LEN > end ||
	    cfg[cap_off] != PCI_CAP_ID_MSIX)
		return -EINVAL;
	ctrl = pci_cfg_rd16(cfg, len, cap_off + PCI_MSIX_CTRL);
	tbl = pci_cfg_rd32(cfg, len, cap_off + 4);
	pba = pci_cfg_rd32(cfg, len, cap_off + 8);

	out->table_size = (u16)((ctrl & 0x7ff) + 1);
	out->function_masked = ctrl & PCI_MSIX_CTRL_MASKALL;
	out->enabled = ctrl & PCI_MSIX_CTRL_ENABLE;
	out->table_bir = tbl & 7;
	out->table_offset = tbl & ~7u;
	out->pba_bir = pba & 7;
	out->pba_offset = pba & ~7u;

	tlen = (u64)out->table_size * PCI_MSIX_ENTRY_SIZE;
	plen = ((u64)out->table_size + 63) / 64 * 8;
	if (!pci_msix_fits(out->table_offset, tlen, out->table_bir, bar_size)) {
		klog("pci: MSI-X table (%u entries at BAR%u+0x%x) outside its BAR",
		     out->table_size, out->table_bir, out->table_offset);
		return -ERANGE;
	}
	if (!pci_msix_fits(out->pba_offset, plen, out->pba_bir, bar_size)) {
		klog("pci: MSI-X PBA (BAR%u+0x%x) outside its BAR", out->pba_bir,
		     out->pba_offset);
		return -ERANGE;
	}
	if (out->table_bir == out->pba_bir &&
	    out->table_offset < out->pba_offset + plen &&
	    out->pba_offset < out->table_offset + tlen) {
		klog("pci: MSI-X table and PBA overlap in BAR%u", out->table_bir);
		return -ERANGE;
	}
	return 0;
}

int pci_msi_parse(const u8 *cfg, size_t len, u8 cap_off, struct pci_msi_info *out)
{
	size_t end = MIN(len, (size_t)PCI_STD_CAP_END);
	unsigned mmc, cap_len;
	u16 ctrl;

	memset(out, 0, sizeof *out);
	if (cap_off < PCI_CFG_HDR_LEN || (size_t)cap_off + MSI_CAP_MIN_LEN > end ||
	    cfg[cap_off] != PCI_CAP_ID_MSI)
		return -EINVAL;
	ctrl = pci_cfg_rd16(cfg, len, cap_off + 2);
	mmc = (ctrl >> 1) & 7;
	if (mmc > 5)
		return -EBADMSG;
	out->enabled = ctrl & PCI_MSI_CTRL_ENABLE;
	out->is_64bit = ctrl & (1u << 7);
	out->per_vector_mask = ctrl & (1u << 8);
	out->max_vectors = (u8)(1u << mmc);

	/* Layout (PCI 3.0 §6.8.1): ctrl, address lo, [address hi], data,
	 * [2 reserved bytes, mask bits, pending bits]. */
	cap_len = out->is_64bit ? 14 : 10;
	if (out->per_vector_mask)
		cap_len = out->is_64bit ? 24 : 20;
	if ((size_t)cap_off + cap_len > end)
		return -EINVAL;
	out->ctrl_off = cap_off + 2;
	out->addr_lo_off = cap_off + 4;
	if (out->is_64bit) {
		out->addr_hi_off = cap_off + 8;
		out->data_off = cap_off + 12;
	} else {
		out->data_off = cap_off + 8;
	}
	if (out->per_vector_mask) {
		out->mask_off = out->data_off + 4;
		out->pending_off = out->data_off + 8;
	}
	return 0;
}

int pci_bar_window_check(const struct pci_bar *b, u64 off, u64 len, u64 max_len)
{
	if ((b->kind != PCI_BAR_MEM32 && b->kind != PCI_BAR_MEM64) || !b->base || !b->size ||
	    b->base + b->size < b->base)
		return -ENODEV;
	if (len == 0 || off >= b->size || len > b->size - off)
		return -EINVAL;
	if (len > max_len)
		return -E2BIG;
	return 0;
}
