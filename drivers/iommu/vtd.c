/*
 * Intel VT-d DMA remapping (VT-d spec 4.x): one driver per DRHD unit of the
 * ACPI DMAR table.
 *
 * Domains: one per device that negotiated ACCESS_PLATFORM, each with its own
 * second-level page table and domain id, so a stray DMA from one device can
 * never reach what another was given, and a fault names one device we can
 * reset alone. What every other PCI function the unit covers gets is the
 * policy, iommu= (drivers/iommu/vtd_policy.c decides, docs/appliance.md
 * "DMA containment" says what each mode protects against):
 *
 *  - strict (the default; iommu=on means strict): the unit's blocking
 *    domain (domain 2: a context entry present, pointing at an empty
 *    second-level table, so any DMA faults). A function an RMRR names gets
 *    a domain of its own holding only its reserved regions' identity maps
 *    instead. The virtio core refuses a device that does not negotiate
 *    ACCESS_PLATFORM or gets no domain (dma_confined, dma_verdict): it is
 *    never driven and stays blocked.
 *  - permissive (before issue 30): pass-through (domain 1): devices driven
 *    without ACCESS_PLATFORM, and functions vireo does not drive, keep
 *    physical addresses. Needs the unit's pass-through capability.
 *  - off: units left as firmware left them.
 *
 * Order: every context entry is written, blocked (strict) or pass-through
 * (permissive), before translation is turned on, after ExitBootServices
 * (firmware's drivers have stopped their devices) and before any driver
 * probes; so in strict mode no function vireo has not handed a domain can
 * reach memory from the first moment. A driver's attach then moves its
 * function into its own domain (vtd_attach: the entry is rewritten and the
 * context cache invalidated); a probe that fails after attach, a removal
 * and a device reset all empty that domain (vtd_domain_clear), which then
 * blocks like the blocking domain until the next probe maps buffers again.
 *
 * Addresses: see drivers/iommu/vtd_pt.h, two windows above all RAM (read-only and
 * read-write). Long-lived buffers (rings, receive pools, site bodies) are
 * mapped the first time they are handed to the device and stay mapped until
 * the device is reset (vtd_domain_clear). Transient ones (transmit chains,
 * control-queue commands, console output) are counted per page in the leaf
 * entry (vtd_pt_get/put): virtq drops its reference when it reclaims the
 * chain, after the device returned it (or was reset), and the last user of a
 * page clears the entry; the IOTLB is invalidated once per reclaim pass
 * (vtd_unmap_flush). A page a long-lived buffer also uses is pinned.
 *
 * Invalidation: queued (ECAP.QI) or register-based; a new mapping is
 * flushed from the IOTLB only in caching mode (CAP.CM), where not-present
 * entries may be cached; the write buffer is flushed when CAP.RWBF says so.
 */
#include <arch.h>

#include "drivers/acpi/acpi.h"
#include "drivers/acpi/acpi_tables.h"
#include "drivers/pci/pci.h"
#include "drivers/iommu/vtd.h"
#include "drivers/iommu/vtd_policy.h"
#include "drivers/iommu/vtd_ir.h"
#include "drivers/iommu/vtd_pt.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "lib/metrics.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "kernel/shell.h"
#include "lib/string.h"
#include "kernel/time/time.h"

#define VTD_VER		0x00
#define VTD_CAP		0x08
#define VTD_ECAP	0x10
#define VTD_GCMD	0x18
#define VTD_GSTS	0x1c
#define VTD_RTADDR	0x20
#define VTD_CCMD	0x28
#define VTD_FSTS	0x34
#define VTD_FECTL	0x38
#define VTD_FEDATA	0x3c
#define VTD_FEADDR	0x40
#define VTD_FEUADDR	0x44
#define VTD_IQH		0x80
#define VTD_IQT		0x88
#define VTD_IQA		0x90

#define GS_TES		(1u << 31)
#define GS_RTPS		(1u << 30)
#define GS_WBFS		(1u << 27)
#define GS_QIES		(1u << 26)
#define GS_IRES		(1u << 25)
#define GS_CFIS		(1u << 23)
#define GS_KEEP		(GS_TES | GS_QIES | GS_IRES | GS_CFIS)	/* persistent command bits */

#define CAP_ND(c)	((unsigned)((c) & 7))
#define CAP_RWBF	(1ull << 4)
#define CAP_CM		(1ull << 7)
#define CAP_PSI		(1ull << 39)
#define CAP_SAGAW(c)	((unsigned)(((c) >> 8) & 0x1f))
#define CAP_MGAW(c)	((unsigned)((((c) >> 16) & 0x3f) + 1))
#define CAP_FRO(c)	((unsigned)((((c) >> 24) & 0x3ff) * 16))
#define CAP_NFR(c)	((unsigned)((((c) >> 40) & 0xff) + 1))
#define ECAP_C		(1ull << 0)
#define ECAP_QI		(1ull << 1)
#define ECAP_IR		(1ull << 3)
#define ECAP_PT		(1ull << 6)
#define ECAP_IRO(e)	((unsigned)((((e) >> 8) & 0x3ff) * 16))

#define FSTS_PFO	(1u << 0)
#define FSTS_PPF	(1u << 1)
#define FSTS_IQE	(1u << 4)
#define FECTL_IM	(1u << 31)

#define QI_CC_GLOBAL	(0x1ull | (1ull << 4))
#define QI_IOTLB_GLOBAL	(0x2ull | (1ull << 4) | (1ull << 7) | (1ull << 6))
#define QI_IOTLB_DOM	(0x2ull | (2ull << 4) | (1ull << 7) | (1ull << 6))
#define QI_IOTLB_PAGE	(0x2ull | (3ull << 4) | (1ull << 7) | (1ull << 6))
#define QI_WAIT_SW	(0x5ull | (1ull << 5))
#define QI_ENTRIES	256	/* one 4 KiB page of 16-byte descriptors */

#define VTD_MAX_DOMAINS	32
#define VTD_DID_PT	1	/* pass-through; 0 is reserved in caching mode */
#define VTD_DID_BLOCK	2	/* the blocking domain: an empty table */
#define VTD_DID_FIRST	3	/* the first device domain */
#define VTD_WAIT_NS	1000000000ull
#define VTD_RMRR_MAX	(256ull << 20)	/* 65,536 entries in 128-130 table pages */
#define VTD_PSI_BATCH	16	/* pages invalidated one by one; more: the whole domain */

struct vtd_unit;

struct vtd_domain {
	struct dma_domain dma;	/* the DMA seam's view: ops = vtd_dma_ops */
	struct vtd_unit *unit;
	struct pci_dev *pci;
	u16 did;
	u16 bdf;
	struct vtd_pt pt;
	void (*fault)(void *arg);
	void *fault_arg;
	bool faulted;		/* this episode already logged and reported */
	bool map_failed;	/* a map refusal already logged */
	bool driven;		/* attached by a driver once (else: its RMRRs only) */
	u64 faults;
	u64 pages_ro, pages_rw;	/* leaf entries in each window */
	u64 unmapped;		/* pages cleared by vtd_unmap */
	u64 inval_page, inval_dom;	/* ... invalidated page by page, by domain requests */
	u64 flushes;		/* vtd_unmap_flush calls that invalidated (one wait each) */
	unsigned npend;		/* pages cleared since the last vtd_unmap_flush */
	u64 pend[VTD_PSI_BATCH];	/* ... their IOVAs, while they fit */
};

struct vtd_unit {
	unsigned index;
	u64 regs;
	u64 cap, ecap;
	int levels;		/* of the translated domains' tables */
	u8 aw;			/* context-entry AW for those tables */
	u8 aw_pt;		/* AW for pass-through entries (the largest) */
	u64 *root;		/* 256 root entries */
	u64 *block;		/* the blocking domain's (empty) top-level table */
	u64 *ctx[256];		/* context tables by bus, allocated as needed */
	u64 *iq;		/* queued invalidation, NULL if register-based */
	unsigned iq_tail;
	volatile u32 iq_status;
	bool on, broken;
	unsigned ndomains;
	u16 next_did;
	struct vtd_domain domains[VTD_MAX_DOMAINS];
	unsigned covered;
	u64 other_faults;	/* from devices without a domain of ours */
};

static struct vtd_unit *vtd_units[ACPI_DMAR_MAX_UNITS];
static unsigned vtd_nunits;
static int vtd_mode_value = VTD_MODE_STRICT;
static enum vtd_mode vtd_mode = VTD_MODE_STRICT;	/* in force: vtd_policy_mode(vtd_mode_value) */
u64 vtd_stray_nth;	/* the test seam (vtd.h) */
static u64 vtd_writable_maps;

CMDLINE_PARAM(vtd_on, .key = "iommu", .type = CMDLINE_ENUM, .dst = &vtd_mode_value, .choices = vtd_mode_choices,
	      .def = "strict", .values = "strict, permissive, off (on: strict)",
	      .help = "Intel VT-d units of the ACPI DMAR table: strict (on): devices must negotiate "
		      "ACCESS_PLATFORM or are refused, undriven functions blocked; permissive: those "
		      "pass-through; off: not used");

static u32 vtd_r32(const struct vtd_unit *u, u32 off) { return mmio_r32(u->regs + off); }
static u64 vtd_r64(const struct vtd_unit *u, u32 off) { return mmio_r64(u->regs + off); }
static void vtd_w32(const struct vtd_unit *u, u32 off, u32 v) { mmio_w32(u->regs + off, v); }
static void vtd_w64(const struct vtd_unit *u, u32 off, u64 v) { mmio_w64(u->regs + off, v); }

/* Table writes reach the unit: flushed from the cache unless it snoops. */
static void vtd_flush_lines(const struct vtd_unit *u, const void *p, size_t len)
{
	const u8 *c = (const u8 *)((u64)p & ~63ull);

	if (u->ecap & ECAP_C)
		return;
	for (; c < (const u8 *)p + len; c += 64)
		__asm__ volatile("clflush %0" : "+m"(*(volatile u8 *)c));
	__asm__ volatile("mfence" ::: "memory");
}

static bool vtd_wait_gsts(struct vtd_unit *u, u32 bit, bool set, const char *what)
{
	u64 end = time_ns() + VTD_WAIT_NS;

	while (((vtd_r32(u, VTD_GSTS) & bit) != 0) != set) {
		if (time_ns() > end) {
			kprintf("vtd%u: %s did not complete (gsts %#x)\n", u->index, what, vtd_r32(u, VTD_GSTS));
			u->broken = true;
			return false;
		}
		pause();
	}
	return true;
}

/* Sets or clears one persistent GCMD bit, or fires a one-shot one. */
static bool vtd_gcmd(struct vtd_unit *u, u32 bit, bool set, const char *what)
{
	u32 cmd = vtd_r32(u, VTD_GSTS) & GS_KEEP;

	vtd_w32(u, VTD_GCMD, set ? cmd | bit : cmd & ~bit);
	return vtd_wait_gsts(u, bit, set, what);
}

/* n requests (n + 1 < QI_ENTRIES) then one wait descriptor for them all. */
static bool vtd_qi_submit_n(struct vtd_unit *u, const u64 (*req)[2], unsigned n)
{
	u64 *d;
	u64 end = time_ns() + VTD_WAIT_NS;
	unsigned i;

	if (u->broken)
		return false;	/* logged once when it broke; never wait again */
	for (i = 0; i < n; i++) {
		d = &u->iq[2 * ((u->iq_tail + i) % QI_ENTRIES)];
		d[0] = req[i][0];
		d[1] = req[i][1];
		vtd_flush_lines(u, d, 16);
	}
	u->iq_status = 0;
	d = &u->iq[2 * ((u->iq_tail + n) % QI_ENTRIES)];
	d[0] = QI_WAIT_SW | (1ull << 32);	/* status data 1 */
	d[1] = (u64)&u->iq_status;
	vtd_flush_lines(u, d, 16);
	u->iq_tail = (u->iq_tail + n + 1) % QI_ENTRIES;
	wmb();
	vtd_w64(u, VTD_IQT, (u64)u->iq_tail << 4);
	while (READ_ONCE(u->iq_status) != 1) {
		if ((vtd_r32(u, VTD_FSTS) & FSTS_IQE) || time_ns() > end) {
			kprintf("vtd%u: invalidation queue stuck (fsts %#x, head %#lx)\n", u->index,
				vtd_r32(u, VTD_FSTS), vtd_r64(u, VTD_IQH));
			u->broken = true;
			return false;
		}
		pause();
	}
	return true;
}

static bool vtd_qi_submit(struct vtd_unit *u, u64 lo, u64 hi)
{
	const u64 req[1][2] = { { lo, hi } };

	return vtd_qi_submit_n(u, req, 1);
}

bool vtd_unit_qi(struct vtd_unit *u, u64 lo, u64 hi)
{
	return u->iq && vtd_qi_submit(u, lo, hi);
}

static bool vtd_reg_inval(struct vtd_unit *u, u32 off, u64 cmd, const char *what)
{
	u64 end = time_ns() + VTD_WAIT_NS;

	if (u->broken)
		return false;
	vtd_w64(u, off, cmd);
	while (vtd_r64(u, off) & (1ull << 63)) {
		if (time_ns() > end) {
			kprintf("vtd%u: %s invalidation did not complete\n", u->index, what);
			u->broken = true;
			return false;
		}
		pause();
	}
	return true;
}

/* GCMD.WBF is one-shot: set it, wait for WBFS to clear (§6.8). */
static void vtd_write_buffer_flush(struct vtd_unit *u)
{
	if (!(u->cap & CAP_RWBF) || u->broken)
		return;
	vtd_w32(u, VTD_GCMD, (vtd_r32(u, VTD_GSTS) & GS_KEEP) | GS_WBFS);
	vtd_wait_gsts(u, GS_WBFS, false, "write buffer flush");
}

static void vtd_inval_context(struct vtd_unit *u)
{
	vtd_write_buffer_flush(u);
	if (u->iq)
		vtd_qi_submit(u, QI_CC_GLOBAL, 0);
	else
		vtd_reg_inval(u, VTD_CCMD, (1ull << 63) | (1ull << 61), "context cache");
}

/* did 0: every domain. */
static void vtd_inval_iotlb(struct vtd_unit *u, u16 did)
{
	vtd_write_buffer_flush(u);
	if (u->iq)
		vtd_qi_submit(u, did ? QI_IOTLB_DOM | ((u64)did << 16) : QI_IOTLB_GLOBAL, 0);
	else
		vtd_reg_inval(u, ECAP_IRO(u->ecap) + 8,
			      (1ull << 63) | (did ? (2ull << 60) | ((u64)did << 32) : (1ull << 60)) |
			      (1ull << 49) | (1ull << 48), "IOTLB");
}

/* Page-selective invalidation of dom's pending pages (§6.5.1.2, §6.5.2.3:
 * address mask 0, one page each), after their entries were cleared. */
static void vtd_inval_pages(struct vtd_unit *u, u16 did, const u64 *iova, unsigned n)
{
	u64 req[VTD_PSI_BATCH][2];
	unsigned i;

	vtd_write_buffer_flush(u);
	if (u->iq) {
		for (i = 0; i < n; i++) {
			req[i][0] = QI_IOTLB_PAGE | ((u64)did << 16);
			req[i][1] = iova[i];	/* AM 0, IH 0 */
		}
		vtd_qi_submit_n(u, req, n);
		return;
	}
	for (i = 0; i < n && !u->broken; i++) {
		vtd_w64(u, ECAP_IRO(u->ecap), iova[i]);	/* IVA */
		vtd_reg_inval(u, ECAP_IRO(u->ecap) + 8,
			      (1ull << 63) | (3ull << 60) | ((u64)did << 32) | (1ull << 49) | (1ull << 48),
			      "page IOTLB");
	}
}

/* ---- page-table memory hooks ---- */

static void *vtd_pt_alloc(void *ctx, u64 *pa)
{
	void *p = page_alloc(1);

	(void)ctx;
	*pa = (u64)p;
	return p;
}

static void vtd_pt_free(void *ctx, void *va)
{
	(void)ctx;
	page_free(va, 1);
}

static void *vtd_pt_va(void *ctx, u64 pa)
{
	(void)ctx;
	return (void *)pa;
}

/* ---- context entries ---- */

static u64 *vtd_context(struct vtd_unit *u, u16 bdf)
{
	u8 bus = (u8)(bdf >> 8);

	if (!u->ctx[bus]) {
		u->ctx[bus] = page_alloc(1);
		if (!u->ctx[bus])
			return NULL;
		u->root[2 * bus] = (u64)u->ctx[bus] | 1;
		vtd_flush_lines(u, &u->root[2 * bus], 16);
	}
	return &u->ctx[bus][2 * (bdf & 0xff)];
}

static void vtd_set_context(struct vtd_unit *u, u64 *e, u64 lo, u64 hi)
{
	if (e[0] & 1) {	/* present: take it down first (§6.5.3.3 order) */
		e[0] = 0;
		vtd_flush_lines(u, e, 16);
		if (u->on) {
			vtd_inval_context(u);
			vtd_inval_iotlb(u, 0);
		}
	}
	e[1] = hi;
	wmb();
	e[0] = lo;
	vtd_flush_lines(u, e, 16);
	if (u->on)
		vtd_inval_context(u);	/* caching mode may cache not-present entries */
}

/* ---- faults ---- */

static struct vtd_domain *vtd_domain_of(struct vtd_unit *u, u16 bdf)
{
	unsigned i;

	for (i = 0; i < u->ndomains; i++)
		if (u->domains[i].bdf == bdf && u->domains[i].pci)
			return &u->domains[i];
	return NULL;
}

/* The domain id of bdf's context entry, 0 when none is present. */
static u16 vtd_context_did(const struct vtd_unit *u, u16 bdf)
{
	const u64 *e = u->ctx[bdf >> 8] ? &u->ctx[bdf >> 8][2 * (bdf & 0xff)] : NULL;

	return e && (e[0] & 1) ? (u16)(e[1] >> 8) : 0;
}

static void vtd_fault_irq(void *arg)
{
	struct vtd_unit *u = arg;
	unsigned i, nfr = CAP_NFR(u->cap), fro = CAP_FRO(u->cap);

	for (i = 0; i < nfr; i++) {
		u64 hi = vtd_r64(u, fro + 16 * i + 8), lo;
		struct vtd_fault f;
		struct vtd_domain *dom;

		if (!(hi >> 63))
			continue;
		lo = vtd_r64(u, fro + 16 * i);
		vtd_w32(u, fro + 16 * i + 12, 1u << 31);	/* F is write-1-to-clear */
		vtd_fault_decode(lo, hi, &f);
		dom = vtd_domain_of(u, f.source);
		if (dom) {
			dom->faults++;
			if (dom->faulted)
				continue;	/* logged once per episode */
			dom->faulted = true;
		} else if (u->other_faults++) {
			continue;	/* pass-through or unknown requesters: the first one only */
		}
		if (f.reason >= 0x20)	/* interrupt remapping: FI holds the entry index */
			klog("vtd%u: fault: %02x:%02x.%u interrupt, entry %lu: %s (reason %#x)%s", u->index,
			     f.source >> 8, (f.source >> 3) & 31, f.source & 7, lo >> 48,
			     vtd_fault_reason(f.reason), f.reason, dom ? "; resetting the device" : "");
		else
			klog("vtd%u: fault: %02x:%02x.%u %s at %#lx: %s (reason %#x)%s", u->index, f.source >> 8,
			     (f.source >> 3) & 31, f.source & 7, f.read ? "read" : "write", f.addr,
			     vtd_fault_reason(f.reason), f.reason, dom ? "; resetting the device" :
			     vtd_context_did(u, f.source) == VTD_DID_BLOCK ?
			     "; the function is blocked (iommu=strict)" : "");
		if (dom && dom->fault)
			dom->fault(dom->fault_arg);
	}
	vtd_w32(u, VTD_FSTS, FSTS_PFO | FSTS_IQE);
}

static void vtd_fault_setup(struct vtd_unit *u)
{
	u64 addr;
	u32 data;
	int vec = irq_alloc_vector(vtd_fault_irq, u);

	if (vec < 0) {
		kprintf("vtd%u: no vector for fault events; faults are not reported\n", u->index);
		return;
	}
	msi_compose(vec, &addr, &data);
	vtd_w32(u, VTD_FEDATA, data);
	vtd_w32(u, VTD_FEADDR, (u32)addr);
	vtd_w32(u, VTD_FEUADDR, (u32)(addr >> 32));
	vtd_w32(u, VTD_FECTL, 0);	/* unmask */
	vtd_fault_irq(u);	/* records left from before */
}

/* ---- the unit ---- */

static u16 vtd_bdf(const struct pci_dev *p)
{
	return (u16)(p->bus << 8 | p->dev << 3 | p->fn);
}

/* Firmware may have left the unit translating or queueing: stop both. */
static void vtd_quiesce(struct vtd_unit *u)
{
	u32 st = vtd_r32(u, VTD_GSTS);

	if (st & GS_TES) {
		kprintf("vtd%u: firmware left translation on; turning it off to start clean\n", u->index);
		vtd_gcmd(u, GS_TES, false, "translation off");
	}
	if (st & GS_IRES)
		vtd_gcmd(u, GS_IRES, false, "interrupt remapping off");
	if (st & GS_QIES) {
		u64 end = time_ns() + VTD_WAIT_NS;

		while (vtd_r64(u, VTD_IQH) != vtd_r64(u, VTD_IQT) && time_ns() < end)
			pause();
		vtd_gcmd(u, GS_QIES, false, "queued invalidation off");
	}
}

static bool vtd_rmrr_names(const struct acpi_dmar *dmar, u16 bdf);
static struct vtd_domain *vtd_domain_new(struct vtd_unit *u, struct pci_dev *p, const struct acpi_dmar *dmar);

/* A covered function's context entry when translation turns on (strict:
 * blocked, or its RMRRs only; permissive: pass-through). */
static bool vtd_start_function(struct vtd_unit *u, struct pci_dev *p, const struct acpi_dmar *dmar)
{
	u16 bdf = vtd_bdf(p);
	u64 *e = vtd_context(u, bdf);
	struct vtd_domain *dom;

	if (!e)
		return false;
	switch (vtd_policy_start(vtd_mode, vtd_rmrr_names(dmar, bdf))) {
	case VTD_START_PASS:
		vtd_set_context(u, e, 1 | (2ull << 2), u->aw_pt | ((u64)VTD_DID_PT << 8));
		return true;
	case VTD_START_RESERVED:
		dom = vtd_domain_new(u, p, dmar);
		if (dom) {
			kprintf("vtd%u: %02x:%02x.%u in domain %u: its reserved regions only\n", u->index, p->bus,
				p->dev, p->fn, dom->did);
			return true;
		}
		break;	/* no domain: blocked, reserved regions and all */
	case VTD_START_BLOCKED:
		break;
	}
	vtd_set_context(u, e, (u64)u->block | 1, u->aw | ((u64)VTD_DID_BLOCK << 8));
	return true;
}

static void vtd_unit_init(const struct acpi_dmar *dmar, unsigned idx)
{
	const struct acpi_drhd *d = &dmar->units[idx];
	struct vtd_unit *u;
	struct pci_dev *p;
	unsigned sagaw;
	u64 regs_len = 4096ull << (d->size > 4 ? 4 : d->size);
	char list[160];
	size_t n = 0;

	if (d->segment != 0) {
		kprintf("vtd%u: segment %u: only segment 0 is driven, unit left off\n", idx, d->segment);
		return;
	}
	u = kzalloc(sizeof *u);
	if (!u)
		return;
	u->index = idx;
	u->regs = (u64)mmio_map(d->base, regs_len);
	if (!u->regs) {
		kfree(u);
		return;
	}
	u->cap = vtd_r64(u, VTD_CAP);
	u->ecap = vtd_r64(u, VTD_ECAP);
	sagaw = CAP_SAGAW(u->cap);
	kprintf("vtd%u: %#lx version %u.%u, cap %#lx ecap %#lx: sagaw %#x mgaw %u, %u domains, %u fault records%s%s%s%s%s\n",
		idx, d->base, (vtd_r32(u, VTD_VER) >> 4) & 0xf, vtd_r32(u, VTD_VER) & 0xf, u->cap, u->ecap,
		sagaw, CAP_MGAW(u->cap), 1u << (4 + 2 * CAP_ND(u->cap)), CAP_NFR(u->cap),
		(u->ecap & ECAP_QI) ? ", queued invalidation" : ", register invalidation",
		(u->cap & CAP_CM) ? ", caching mode" : "", (u->cap & CAP_RWBF) ? ", write-buffer flush" : "",
		(u->ecap & ECAP_PT) ? ", pass-through" : "", (u->ecap & ECAP_IR) ? ", interrupt remapping" : "");
	if (CAP_FRO(u->cap) + 16 * CAP_NFR(u->cap) > regs_len || ECAP_IRO(u->ecap) + 16 > regs_len) {
		kprintf("vtd%u: registers beyond the %lu-byte register set; unit left off\n", idx, regs_len);
		return;
	}
	/* Domains use 3 levels when the unit has them (the windows fit in 39
	 * bits), else 4; the guest width must hold the windows too. */
	if ((sagaw & 2) && CAP_MGAW(u->cap) >= 39) {
		u->levels = 3;
		u->aw = 1;
	} else if ((sagaw & 4) && CAP_MGAW(u->cap) >= 39) {
		u->levels = 4;
		u->aw = 2;
	} else {
		kprintf("vtd%u: no usable address width (sagaw %#x, mgaw %u); unit left off\n", idx, sagaw,
			CAP_MGAW(u->cap));
		return;
	}
	u->aw_pt = (sagaw & 8) ? 3 : (sagaw & 4) ? 2 : 1;
	if (!vtd_policy_unit_usable(vtd_mode, u->ecap & ECAP_PT)) {
		kprintf("vtd%u: no pass-through support; with iommu=permissive translation is left off so "
			"devices without ACCESS_PLATFORM keep working\n", idx);
		return;
	}
	vtd_quiesce(u);
	u->root = page_alloc(1);
	u->block = page_alloc(1);	/* zeroed: nothing present */
	if (!u->root || !u->block)
		return;
	u->next_did = VTD_DID_FIRST;
	/* Every covered function gets its entry before translation is on. */
	for (p = pci_devices(); p; p = p->next) {
		if (acpi_dmar_unit_for(dmar, p->seg, vtd_bdf(p), pci_cfg_read8_bdf, NULL) != (int)idx)
			continue;
		if (!vtd_start_function(u, p, dmar))
			return;
		u->covered++;
		if (n + 12 < sizeof list)
			n += (size_t)ksnprintf(list + n, sizeof list - n, " %02x:%02x.%u", p->bus, p->dev, p->fn);
	}
	list[n] = '\0';
	kprintf("vtd%u: covers %u device(s):%s\n", idx, u->covered, n ? list : " none");

	vtd_w64(u, VTD_RTADDR, (u64)u->root);
	if (!vtd_gcmd(u, GS_RTPS, true, "root table pointer"))
		return;
	if (u->ecap & ECAP_QI) {
		u->iq = page_alloc(1);
		if (u->iq) {
			vtd_w64(u, VTD_IQT, 0);
			vtd_w64(u, VTD_IQA, (u64)u->iq);	/* QS 0: 256 entries */
			if (!vtd_gcmd(u, GS_QIES, true, "queued invalidation"))
				return;
		}
	}
	vtd_inval_context(u);
	vtd_inval_iotlb(u, 0);
	if (u->broken)
		return;
	vtd_fault_setup(u);
	if (!vtd_gcmd(u, GS_TES, true, "translation on"))
		return;
	u->on = true;
	vtd_units[vtd_nunits++] = u;
	kprintf("vtd%u: translation on (%d-level tables, %s invalidation, windows ro %#lx rw %#lx)\n", idx,
		u->levels, u->iq ? "queued" : "register", (u64)VTD_WIN_RO, (u64)VTD_WIN_RW);
	vtd_ir_unit_init(u, idx, u->regs, u->ecap);
}

void vtd_init(void)
{
	const struct acpi_info *a = acpi_get();
	unsigned i;

	if (!a || !a->dmar.present)
		return;
	vtd_mode = vtd_policy_mode(vtd_mode_value);
	if (vtd_mode == VTD_MODE_OFF) {
		kprintf("vtd: iommu=off: DMA remapping units left as firmware left them\n");
		return;
	}
	kprintf("vtd: iommu=%s: %s\n", vtd_mode_choices[vtd_mode], vtd_mode == VTD_MODE_STRICT ?
		"functions start blocked; a device is driven only translated (ACCESS_PLATFORM)" :
		"functions start in pass-through; devices without ACCESS_PLATFORM are driven on physical addresses");
	if (a->dmar.rmrr_count)
		kprintf("vtd: %u RMRR(s) listed; their devices %s\n", a->dmar.rmrr_count,
			vtd_mode == VTD_MODE_STRICT ? "reach only their reserved regions unless driven" :
			"stay in pass-through unless driven with ACCESS_PLATFORM");
	for (i = 0; i < a->dmar.unit_count; i++)
		vtd_unit_init(&a->dmar, i);
}

/* Firmware's reserved regions (RMRRs) naming this device stay reachable at
 * their own addresses (VT-d §8.4): identity entries, read-write. They lie
 * below the windows (limit checked), so the two never collide. */
static void vtd_map_rmrrs(struct vtd_domain *dom, const struct acpi_dmar *dmar)
{
	unsigned i, k;
	bool added;

	for (i = 0; i < dmar->rmrr_count; i++) {
		const struct acpi_rmrr *r = &dmar->rmrrs[i];
		bool mine = false;
		u64 pa;

		for (k = 0; k < r->scope_count && r->scope_first + k < dmar->scope_count; k++) {
			u16 bdf;

			if (!acpi_dmar_scope_bdf(&dmar->scopes[r->scope_first + k], pci_cfg_read8_bdf, NULL, &bdf) &&
			    bdf == dom->bdf)
				mine = true;
		}
		if (!mine || r->segment != 0)
			continue;
		if (r->limit >= VTD_WIN_RO || r->limit - r->base >= VTD_RMRR_MAX) {
			kprintf("vtd%u: RMRR %#lx-%#lx reaches the IOVA windows or is over 256 MiB; not mapped\n",
				dom->unit->index, r->base, r->limit);
			continue;
		}
		for (pa = r->base; pa < r->limit; pa += VTD_PAGE)
			if (vtd_pt_map(&dom->pt, pa, pa, VTD_PTE_R | VTD_PTE_W, &added) < 0)
				break;
		kprintf("vtd%u: RMRR %#lx-%#lx identity-mapped for %02x:%02x.%u\n", dom->unit->index, r->base,
			r->limit, dom->bdf >> 8, (dom->bdf >> 3) & 31, dom->bdf & 7);
	}
}

/* Whether an RMRR of segment 0 names bdf. */
static bool vtd_rmrr_names(const struct acpi_dmar *dmar, u16 bdf)
{
	unsigned i, k;

	for (i = 0; i < dmar->rmrr_count; i++) {
		const struct acpi_rmrr *r = &dmar->rmrrs[i];

		for (k = 0; r->segment == 0 && k < r->scope_count && r->scope_first + k < dmar->scope_count; k++) {
			u16 b;

			if (!acpi_dmar_scope_bdf(&dmar->scopes[r->scope_first + k], pci_cfg_read8_bdf, NULL, &b) &&
			    b == bdf)
				return true;
		}
	}
	return false;
}

static const struct dma_ops vtd_dma_ops;

/* A domain of p's own with an empty table (its RMRRs identity-mapped),
 * p's context entry pointing at it; NULL when none is left. */
static struct vtd_domain *vtd_domain_new(struct vtd_unit *u, struct pci_dev *p, const struct acpi_dmar *dmar)
{
	struct vtd_domain *dom;
	u64 *e;

	if (u->ndomains == VTD_MAX_DOMAINS ||
	    u->next_did >= (1u << (4 + 2 * CAP_ND(u->cap)))) {
		kprintf("vtd%u: no domain left for %02x:%02x.%u; it stays %s\n", u->index, p->bus, p->dev, p->fn,
			vtd_mode == VTD_MODE_STRICT ? "blocked" : "in pass-through");
		return NULL;
	}
	dom = &u->domains[u->ndomains];
	memset(dom, 0, sizeof *dom);
	dom->dma.ops = &vtd_dma_ops;
	dom->unit = u;
	dom->bdf = vtd_bdf(p);
	dom->did = u->next_did;
	dom->pt.alloc = vtd_pt_alloc;
	dom->pt.free = vtd_pt_free;
	dom->pt.va = vtd_pt_va;
	if (vtd_pt_init(&dom->pt, u->levels) < 0 || !(e = vtd_context(u, dom->bdf)))
		return NULL;
	dom->pci = p;
	u->ndomains++;
	u->next_did++;
	vtd_map_rmrrs(dom, dmar);
	vtd_set_context(u, e, dom->pt.root_pa | 1, u->aw | ((u64)dom->did << 8));
	return dom;
}

/* The enabled unit that covers p, or NULL. */
static struct vtd_unit *vtd_unit_of(struct pci_dev *p)
{
	const struct acpi_info *a = acpi_get();
	unsigned i;
	int idx;

	if (!vtd_nunits || !a)
		return NULL;
	idx = acpi_dmar_unit_for(&a->dmar, p->seg, vtd_bdf(p), pci_cfg_read8_bdf, NULL);
	for (i = 0; i < vtd_nunits; i++)
		if ((int)vtd_units[i]->index == idx)
			return vtd_units[i];
	return NULL;
}

/* The DMA seam's attach (DMA_IOMMU below). */
static struct dma_domain *vtd_attach(struct pci_dev *p, void (*fault)(void *arg), void *arg)
{
	const struct acpi_info *a = acpi_get();
	struct vtd_unit *u = vtd_unit_of(p);
	struct vtd_domain *dom;

	if (!u || !u->on || u->broken)
		return NULL;
	dom = vtd_domain_of(u, vtd_bdf(p));
	if (dom) {	/* a re-probe (same domain, emptied on reset) or an RMRR domain */
		vtd_map_rmrrs(dom, &a->dmar);
	} else {
		dom = vtd_domain_new(u, p, &a->dmar);
		if (!dom)
			return NULL;
	}
	dom->fault = fault;
	dom->fault_arg = arg;
	if (!dom->driven)
		kprintf("vtd%u: %02x:%02x.%u translated in domain %u\n", u->index, p->bus, p->dev, p->fn,
			dom->did);
	dom->driven = true;
	return &dom->dma;
}

/* The DMA seam's confines: strict and an enabled unit covers p, whose
 * entry blocks everything no domain of p's translates. */
static bool vtd_confines(struct pci_dev *p)
{
	return vtd_mode == VTD_MODE_STRICT && vtd_unit_of(p);
}

static void vtd_unmap_flush(struct vtd_domain *dom);

/* The device address of [va, va+len) in dom: read-only unless
 * device_writes. Long-lived (transient false): mapped on first use and kept
 * until vtd_domain_clear. Transient: each page counts one more user, and
 * vtd_unmap with the same arguments drops it. 0 (logged once) when it
 * cannot be mapped: the device then faults on it. */
static dma_addr_t vtd_map(struct vtd_domain *dom, const void *va, size_t len, bool device_writes,
			  bool transient)
{
	u64 pa = (u64)va, iova = vtd_iova(pa, len, device_writes), page = 0, end;
	u64 rights = VTD_PTE_R | (device_writes ? VTD_PTE_W : 0);
	bool added, any = false;
	int err = 0;

	/* No new buffer reaches the device while entries it may still cache
	 * for freed ones are pending (unmapped since the last flush). */
	if (dom->npend)
		vtd_unmap_flush(dom);
	if (!iova) {
		err = -ERANGE;
		goto fail;
	}
	end = (pa + len + VTD_PAGE - 1) & ~(VTD_PAGE - 1);
	for (page = pa & ~(VTD_PAGE - 1); page < end; page += VTD_PAGE) {
		u64 io = vtd_iova(page, 1, device_writes);

		err = transient ? vtd_pt_get(&dom->pt, io, page, rights, &added)
				: vtd_pt_map(&dom->pt, io, page, rights, &added);
		if (err)
			goto fail;
		any |= added;
		if (added)
			*(device_writes ? &dom->pages_rw : &dom->pages_ro) += 1;
	}
	if (any) {
		vtd_flush_lines(dom->unit, NULL, 0);	/* ordering only: the walk reads memory */
		if (dom->unit->cap & CAP_CM)
			vtd_inval_iotlb(dom->unit, dom->did);
		else
			vtd_write_buffer_flush(dom->unit);
	}
	if (device_writes && ++vtd_writable_maps == vtd_stray_nth) {
		kprintf("vtd%u: iommu.stray: handing %02x:%02x.%u the read-only address %#lx for a buffer it writes\n",
			dom->unit->index, dom->bdf >> 8, (dom->bdf >> 3) & 31, dom->bdf & 7,
			vtd_iova(pa, len, false));
		vtd_map(dom, va, len, false, false);	/* pinned: the unmap names the other window */
		return vtd_iova(pa, len, false);
	}
	return iova;
fail:
	if (transient) {	/* give back what this call took: the caller holds nothing */
		u64 stop = page;
		bool removed;

		for (page = pa & ~(VTD_PAGE - 1); iova && page < stop; page += VTD_PAGE)
			if (!vtd_pt_put(&dom->pt, vtd_iova(page, 1, device_writes), &removed) && removed)
				*(device_writes ? &dom->pages_rw : &dom->pages_ro) -= 1;
		vtd_inval_iotlb(dom->unit, dom->did);
	}
	if (!dom->map_failed) {
		dom->map_failed = true;
		klog("vtd%u: cannot map %#lx+%#lx for %02x:%02x.%u (%d); the device will fault", dom->unit->index,
		     pa, (u64)len, dom->bdf >> 8, (dom->bdf >> 3) & 31, dom->bdf & 7, err);
	}
	return 0;
}

/* Gives back a transient mapping once the device is done with the buffer:
 * a page no other in-flight buffer uses is cleared, and its IOTLB entry
 * invalidated at the next vtd_unmap_flush (before that the device may still
 * reach it, so the caller flushes before reusing or freeing the memory). */
static void vtd_unmap(struct vtd_domain *dom, const void *va, size_t len, bool device_writes)
{
	u64 pa = (u64)va, page, end;
	bool removed;

	if (!vtd_iova(pa, len, device_writes))
		return;	/* never mapped (vtd_map refused it) */
	end = (pa + len + VTD_PAGE - 1) & ~(VTD_PAGE - 1);
	for (page = pa & ~(VTD_PAGE - 1); page < end; page += VTD_PAGE) {
		u64 io = vtd_iova(page, 1, device_writes);

		/* -ENOENT: the domain was emptied by a reset since the map */
		if (vtd_pt_put(&dom->pt, io, &removed) < 0 || !removed)
			continue;
		vtd_flush_lines(dom->unit, vtd_pt_leaf(&dom->pt, io), 8);
		*(device_writes ? &dom->pages_rw : &dom->pages_ro) -= 1;
		dom->unmapped++;
		if (dom->npend < VTD_PSI_BATCH)
			dom->pend[dom->npend] = io;
		if (dom->npend < VTD_PSI_BATCH + 1)
			dom->npend++;	/* one past the batch: the whole domain */
	}
}

/* The invalidation for every page vtd_unmap cleared since the last flush:
 * page-selective when the unit has it (CAP.PSI) and at most
 * VTD_PSI_BATCH pages are pending, else one domain-selective request. */
static void vtd_unmap_flush(struct vtd_domain *dom)
{
	struct vtd_unit *u = dom->unit;

	if (!dom->npend)
		return;
	if (dom->npend <= VTD_PSI_BATCH && (u->cap & CAP_PSI)) {
		vtd_inval_pages(u, dom->did, dom->pend, dom->npend);
		dom->inval_page += dom->npend;
	} else {
		vtd_inval_iotlb(u, dom->did);
		dom->inval_dom++;
	}
	dom->npend = 0;
	dom->flushes++;
}

/* Removes every mapping of dom and invalidates the unit's caches; for a
 * device that has been reset and whose memory is about to be freed. A new
 * fault episode may be reported after this. */
static void vtd_domain_clear(struct vtd_domain *dom)
{
	vtd_pt_clear(&dom->pt);
	dom->npend = 0;	/* covered by the domain invalidation below */
	dom->pages_ro = dom->pages_rw = 0;
	vtd_inval_iotlb(dom->unit, dom->did);
	dom->faulted = false;
	dom->map_failed = false;
}

/* ---- the DMA seam (kernel/mm/dma.h) ---- */

static struct vtd_domain *vtd_domain_from(struct dma_domain *d)
{
	return (struct vtd_domain *)(void *)((char *)d - offsetof(struct vtd_domain, dma));
}

static dma_addr_t vtd_dma_map(struct dma_domain *d, const void *va, size_t len, unsigned flags)
{
	return vtd_map(vtd_domain_from(d), va, len, flags & DMA_WRITE, flags & DMA_TRANSIENT);
}

static void vtd_dma_unmap(struct dma_domain *d, const void *va, size_t len, unsigned flags)
{
	vtd_unmap(vtd_domain_from(d), va, len, flags & DMA_WRITE);
}

static void vtd_dma_flush(struct dma_domain *d)
{
	vtd_unmap_flush(vtd_domain_from(d));
}

static void vtd_dma_clear(struct dma_domain *d)
{
	vtd_domain_clear(vtd_domain_from(d));
}

static const struct dma_ops vtd_dma_ops = {
	.map = vtd_dma_map,
	.unmap = vtd_dma_unmap,
	.flush = vtd_dma_flush,
	.clear = vtd_dma_clear,
};
DMA_IOMMU(vtd, .name = "vtd", .attach = vtd_attach, .confines = vtd_confines);

/* The audit: every writable leaf of every domain must map a DMA-only page
 * (kernel/mm/dma.h), one that holds device buffers and nothing else. A
 * reserved region's identity map (RMRR: firmware's, below the windows) is
 * counted apart. Readable leaves (issue 30) must map DMA-only pages or the
 * image's read-only data (the baked site); any other is kernel memory a
 * device can read ("other"). */
struct vtd_audit {
	u64 writable, shared, reserved;
	u64 first_shared;	/* physical page, when shared */
	u64 readable, ro_image, ro_other;
};

__cold static void vtd_audit_leaf(void *arg, u64 iova, u64 pte)
{
	struct vtd_audit *a = arg;
	u64 pa = pte & VTD_PTE_ADDR;

	if (!(pte & VTD_PTE_W)) {
		if (iova < VTD_WIN_RO)
			return;
		a->readable++;
		if (mm_in_rodata((const void *)(uintptr_t)pa, 1))
			a->ro_image++;
		else if (!dma_page_only(pa))
			a->ro_other++;
		return;
	}
	if (iova < VTD_WIN_RO) {
		a->reserved++;
		return;
	}
	a->writable++;
	if (!dma_page_only(pa)) {
		if (!a->shared)
			a->first_shared = pa;
		a->shared++;
	}
}

/* Every present context entry of u, counted by state (vtd_policy_state):
 * read from the tables the unit walks, not from what was meant. */
__cold static void vtd_count(const struct vtd_unit *u, u64 n[VTD_STATE_COUNT])
{
	unsigned bus, df, k;

	for (bus = 0; bus < 256; bus++) {
		for (df = 0; u->ctx[bus] && df < 256; df++) {
			const u64 *e = &u->ctx[bus][2 * df];
			u16 did = (u16)(e[1] >> 8);
			u64 pages = 0;

			if (!(e[0] & 1))
				continue;
			for (k = 0; k < u->ndomains; k++)
				if (u->domains[k].did == did)
					pages = u->domains[k].pages_ro + u->domains[k].pages_rw;
			n[vtd_policy_state(did, VTD_DID_PT, VTD_DID_BLOCK, pages)]++;
		}
	}
}

/* /metrics: the mode and how many functions are in each state. */
__cold static void vtd_write_metrics(struct metrics_buf *b)
{
	u64 n[VTD_STATE_COUNT] = { 0 };
	char labels[48];
	unsigned i;

	for (i = 0; i < vtd_nunits; i++)
		vtd_count(vtd_units[i], n);
	metrics_family(b, "vireo_iommu_functions", METRICS_GAUGE,
		       "PCI functions behind enabled VT-d units, by context entry (mode: iommu=)");
	for (i = 0; i < VTD_STATE_COUNT; i++) {
		ksnprintf(labels, sizeof labels, "mode=\"%s\",state=\"%s\"",
			  vtd_nunits ? vtd_mode_choices[vtd_mode] : "none", vtd_state_names[i]);
		metrics_sample(b, "vireo_iommu_functions", labels, n[i]);
	}
}
METRICS_SOURCE(iommu, vtd_write_metrics);

/* `iommu`: the units and their domains, then the audit. */
__cold static void vtd_cmd_show(const char *args)
{
	struct vtd_audit all = { 0 };
	unsigned i, k;

	(void)args;
	if (!vtd_nunits)
		kprintf("iommu: no remapping unit in use (iommu=%s)\n", vtd_mode_choices[vtd_mode]);
	for (i = 0; i < vtd_nunits; i++) {
		struct vtd_unit *u = vtd_units[i];
		u64 n[VTD_STATE_COUNT] = { 0 };

		vtd_count(u, n);
		kprintf("iommu: vtd%u translation %s, %u device(s) covered, %u domain(s)\n", u->index,
			u->on && !u->broken ? "on" : "broken", u->covered, u->ndomains);
		kprintf("iommu: vtd%u iommu=%s: functions translated %lu blocked %lu pass-through %lu\n",
			u->index, vtd_mode_choices[vtd_mode], n[VTD_STATE_TRANSLATED], n[VTD_STATE_BLOCKED],
			n[VTD_STATE_PASS]);
		vtd_ir_show(u->index);
		for (k = 0; k < u->ndomains; k++) {
			struct vtd_domain *d = &u->domains[k];

			kprintf("iommu: domain %u %02x:%02x.%u pages ro %lu rw %lu tables %lu faults %lu "
				"unmapped %lu invalidations page %lu domain %lu flushes %lu\n", d->did,
				d->bdf >> 8, (d->bdf >> 3) & 31, d->bdf & 7, d->pages_ro, d->pages_rw,
				d->pt.table_pages, d->faults, d->unmapped, d->inval_page, d->inval_dom,
				d->flushes);
			if (u->on && !u->broken) {
				struct vtd_audit a = { 0 };

				vtd_pt_walk(&d->pt, vtd_audit_leaf, &a);
				if (a.shared)
					kprintf("dma: audit: domain %u: %lu shared, first %#lx\n", d->did,
						a.shared, a.first_shared);
				all.writable += a.writable;
				all.shared += a.shared;
				all.reserved += a.reserved;
				all.readable += a.readable;
				all.ro_image += a.ro_image;
				all.ro_other += a.ro_other;
			}
		}
	}
	if (!vtd_nunits)
		return;
	kprintf("dma: audit: %lu device-writable pages, %lu shared, %lu reserved-region\n", all.writable,
		all.shared, all.reserved);
	/* Mapped now, then every readable map since boot (kernel/mm/dma.c). */
	kprintf("dma: audit: %lu device-readable pages, %lu image read-only, %lu other; %lu other since boot\n",
		all.readable, all.ro_image, all.ro_other, dma_ro_exposed());
}
SHELL_CMD(iommu, .name = "iommu", .fn = vtd_cmd_show, .help = "DMA remapping units and domains");

/* The test seam (debug/debug.c: the shell's iommu-stray;
 * debug/virtio_selftest.c: selftest=iommu-fault). */
int vtd_stray_next(void)
{
	if (!vtd_nunits)
		return -ENODEV;
	vtd_stray_nth = vtd_writable_maps + 1;
	return 0;
}
