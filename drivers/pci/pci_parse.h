/* PCI config-space parsing over a snapshot (no hardware access): header
 * fields, capability lists, BAR decode/sizing arithmetic, MSI and MSI-X. */
#ifndef VIREO_PCI_PARSE_H
#define VIREO_PCI_PARSE_H

#include "lib/types.h"

/* Type 0/1 header offsets (PCI Local Bus 3.0 §6.1). */
#define PCI_VENDOR_ID		0x00
#define PCI_DEVICE_ID		0x02
#define PCI_COMMAND		0x04
#define PCI_STATUS		0x06
#define PCI_REVISION_ID		0x08
#define PCI_PROG_IF		0x09
#define PCI_SUBCLASS		0x0a
#define PCI_CLASS		0x0b
#define PCI_HEADER_TYPE		0x0e
#define PCI_BAR0		0x10
#define PCI_PRIMARY_BUS		0x18	/* type 1 */
#define PCI_SECONDARY_BUS	0x19	/* type 1 */
#define PCI_SUBORDINATE_BUS	0x1a	/* type 1 */
#define PCI_SUBSYS_VENDOR_ID	0x2c	/* type 0 */
#define PCI_SUBSYS_ID		0x2e	/* type 0 */
#define PCI_CAP_PTR		0x34
#define PCI_INT_LINE		0x3c
#define PCI_INT_PIN		0x3d

#define PCI_STATUS_CAP_LIST	0x0010
#define PCI_HEADER_MULTIFN	0x80
#define PCI_CFG_HDR_LEN		0x40	/* capabilities start at or above */
#define PCI_CFG_LEN		256
#define PCIE_CFG_LEN		4096
#define PCIE_EXT_CAP_START	0x100

#define PCI_CAP_ID_MSI		0x05
#define PCI_CAP_ID_VNDR		0x09
#define PCI_CAP_ID_PCIE		0x10
#define PCI_CAP_ID_MSIX		0x11

/* Bounded little-endian reads of a config snapshot; out-of-range reads
 * return all ones, as a master abort would. */
static inline u8 pci_cfg_rd8(const u8 *cfg, size_t len, size_t off)
{
	return off < len ? cfg[off] : 0xff;
}

static inline u16 pci_cfg_rd16(const u8 *cfg, size_t len, size_t off)
{
	if (off > len || len - off < 2)
		return 0xffff;
	return (u16)(cfg[off] | (cfg[off + 1] << 8));
}

static inline u32 pci_cfg_rd32(const u8 *cfg, size_t len, size_t off)
{
	if (off > len || len - off < 4)
		return 0xffffffffu;
	return (u32)cfg[off] | (u32)cfg[off + 1] << 8 |
	       (u32)cfg[off + 2] << 16 | (u32)cfg[off + 3] << 24;
}

/* ---- header ---- */

struct pci_header {
	u16  vendor_id, device_id;
	u16  command, status;
	u8   revision, class_code, subclass, prog_if;
	u8   header_type;	/* 0 endpoint, 1 PCI-PCI bridge, 2 CardBus */
	bool multifunction;
	u8   num_bars;		/* 6 for type 0, 2 for type 1, 0 for type 2 */
	u8   int_line, int_pin;	/* pin: 0 none, 1..4 INTA..INTD */
	u16  subsys_vendor_id, subsys_id;	/* type 0 only */
	u8   primary_bus, secondary_bus, subordinate_bus;	/* type 1 only */
};

/* Decode the first 64 bytes of cfg. Returns 0, -EINVAL if len < 64,
 * -ENODEV if the vendor id is 0xffff or 0 (no function), -EBADMSG for a
 * header type other than 0, 1 or 2 (the common fields are still filled). */
int pci_header_parse(const u8 *cfg, size_t len, struct pci_header *out);

/* ---- capability lists ---- */

/* Iterator over the standard capability list. Ends cleanly when the
 * status register has no capability list. On a malformed list (pointer
 * below 0x40 or past the snapshot, or a loop) next() logs one line and
 * returns -EBADMSG; the iterator then stays finished. */
struct pci_cap_iter {
	const u8 *cfg;
	size_t len;
	u8   next;		/* pointer to follow next, 0 = end */
	bool done;
	u64  visited;		/* one bit per dword slot 0x40..0xfc */
};

void pci_cap_iter_init(struct pci_cap_iter *it, const u8 *cfg, size_t len);

/* Next capability: returns its offset (>= 0x40) and stores its id, 0 at
 * the end of the list, or -EBADMSG. */
int pci_cap_iter_next(struct pci_cap_iter *it, u8 *id_out);

/* Offset of the first capability with this id after the capability at
 * start_after (0: from the list head). Returns the offset, -ENOENT if there
 * is none, -EINVAL if start_after is not on the list, -EBADMSG if the list
 * is malformed (logged once). */
int pci_cap_find(const u8 *cfg, size_t len, u8 cap_id, u8 start_after);

/* Extended capabilities (PCIe, from 0x100; needs len >= 4096, otherwise the
 * list is empty). Same contract as above, 16-bit ids, and next() also
 * stores the capability version when ver_out is non-NULL. */
struct pci_ext_cap_iter {
	const u8 *cfg;
	size_t len;
	u16  next;
	bool done;
	u64  visited[16];	/* one bit per dword slot 0x100..0xffc */
};

void pci_ext_cap_iter_init(struct pci_ext_cap_iter *it, const u8 *cfg, size_t len);
int pci_ext_cap_iter_next(struct pci_ext_cap_iter *it, u16 *id_out, u8 *ver_out);
int pci_ext_cap_find(const u8 *cfg, size_t len, u16 cap_id, u16 start_after);

/* ---- BARs ---- */

enum pci_bar_kind {
	PCI_BAR_NONE = 0,	/* unimplemented (sizes to 0) */
	PCI_BAR_IO,
	PCI_BAR_MEM32,
	PCI_BAR_MEM64,		/* also occupies the next slot */
};

struct pci_bar {
	enum pci_bar_kind kind;
	u8   slots;		/* registers used: 2 if the type bits say 64-bit */
	bool prefetchable;
	u64  base;		/* as programmed; may be 0 if firmware left it */
	u64  size;		/* power of two; 0 for PCI_BAR_NONE */
};

/* Decode BAR slot idx (0..5) from the register as read (orig) and the
 * value read back after writing all ones (sized); the caller restores the
 * register. hi/sized_hi are slot idx+1's values, used only for 64-bit BARs
 * (pass anything otherwise). out->slots is always set: advance by it, even
 * on error, so a bad 64-bit BAR's upper half is never decoded as a BAR.
 * Returns 0 (out->kind says what was found), or with out->kind NONE:
 * -EINVAL for idx > 5 or a 64-bit BAR in slot 5, -ENOTSUP for a reserved
 * memory type, -EBADMSG if the base is not aligned to the size,
 * -EOVERFLOW if a 64-bit BAR's base+size wraps past 2^64,
 * -ERANGE for an I/O BAR past the x86 64 KiB port space. I/O BARs are sized
 * from the low 16 bits only, as PCI allows the upper half to read 0. */
int pci_bar_decode(unsigned idx, u32 orig, u32 sized, u32 orig_hi, u32 sized_hi,
		   struct pci_bar *out);

/* PCI_BAR_WINDOW_MAX: the most of one BAR a driver maps at once. virtio
 * capability windows are a few KiB, an MSI-X table of 2048 vectors 32 KiB. */
#define PCI_BAR_WINDOW_MAX (1ULL << 20)
/* Whether [off, off+len) may be mapped from BAR b: a memory BAR with a base,
 * whose end does not wrap, the window non-empty, inside it and at most
 * max_len long. Returns 0, -ENODEV (not a usable memory BAR), -EINVAL
 * (empty, or outside the BAR) or -E2BIG. */
int pci_bar_window_check(const struct pci_bar *b, u64 off, u64 len, u64 max_len);

/* ---- MSI / MSI-X ---- */

struct pci_msix_info {
	u16  table_size;	/* number of vectors (decoded N-1 + 1) */
	u8   table_bir;
	u32  table_offset;	/* within BAR table_bir, 8-byte aligned */
	u8   pba_bir;
	u32  pba_offset;
	bool enabled;		/* MSI-X Enable as snapshotted */
	bool function_masked;
};

#define PCI_MSIX_ENTRY_SIZE	16
#define PCI_MSIX_CTRL		2	/* message control, from the cap start */
#define PCI_MSIX_CTRL_MASKALL	(1u << 14)
#define PCI_MSIX_CTRL_ENABLE	(1u << 15)

/* Decode the MSI-X capability at cap_off and check that the table
 * (table_size * 16 bytes) and the PBA (one bit per vector, in qwords) each
 * lie inside their BAR and do not overlap. bar_size[i] is the size of
 * memory BAR i, 0 if absent or I/O (a 64-bit BAR's size sits at its low
 * slot). Returns 0, -EINVAL if cap_off is not an MSI-X capability inside
 * the snapshot, -ERANGE if the table or PBA does not fit (BIR > 5, absent
 * BAR, past the end, or overlapping). Logs one line on -ERANGE. */
int pci_msix_parse(const u8 *cfg, size_t len, u8 cap_off, const u64 bar_size[6],
		   struct pci_msix_info *out);

/* MSI register positions are config-space offsets (cap_off already added);
 * mask_off/pending_off are 0 without per-vector masking. */
struct pci_msi_info {
	bool is_64bit;
	bool per_vector_mask;
	bool enabled;
	u8   max_vectors;	/* 1, 2, 4, 8, 16 or 32 (Multiple Message Capable) */
	u8   ctrl_off;
	u8   addr_lo_off;
	u8   addr_hi_off;	/* 0 if 32-bit only */
	u8   data_off;
	u8   mask_off;
	u8   pending_off;
};

#define PCI_MSI_CTRL_ENABLE	(1u << 0)
#define PCI_MSI_CTRL_MME_SHIFT	4	/* Multiple Message Enable, log2 */
#define PCI_MSI_CTRL_MME_MASK	(7u << 4)

/* Decode the MSI capability at cap_off. Returns 0, -EINVAL if cap_off is
 * not an MSI capability whose registers fit in the snapshot, -EBADMSG for
 * a reserved Multiple Message Capable encoding. */
int pci_msi_parse(const u8 *cfg, size_t len, u8 cap_off, struct pci_msi_info *out);

#endif
