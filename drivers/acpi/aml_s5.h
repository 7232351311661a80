/* What vireo reads from AML without an interpreter, by bounded byte scans:
 * the \_S5 (soft-off) sleep type, the Generic Event Device, and the
 * platform devices the DSDT describes with a fixed window and an interrupt.
 * Pure code. */
#ifndef VIREO_AML_S5_H
#define VIREO_AML_S5_H

#include "lib/types.h"

/* Longest AML body scanned: the table length limit of acpi_tables.h. */
#define AML_S5_MAX_LEN	(1u << 20)

struct aml_s5 {
	u8 slp_typa;	/* SLP_TYPa for PM1a_CNT, 0..7 */
	u8 slp_typb;	/* SLP_TYPb for PM1b_CNT, 0..7 */
};

/*
 * Looks through aml[0..len) (a table's body, after its 36-byte header) for
 * NameOp [RootChar] "_S5_" PackageOp PkgLength NumElements followed by
 * integer constants (ZeroOp, OneOp, Byte/Word/DWord/QWordPrefix). The
 * package must lie inside aml[] (its PkgLength is not trusted), hold at
 * least one element, and give values 0..7; with a single element the two
 * types are packed in its low two bytes (the ACPI 1.0 form). The first
 * well-formed candidate wins.
 *
 * Cost: one pass over len bytes, O(1) work per "_S5_" candidate (PkgLength
 * is at most 4 bytes, two elements of at most 9 bytes each are read): no
 * recursion, so nesting depth costs nothing.
 *
 * Returns 0 with *out set; -ENOENT if no "_S5_" name is declared (e.g. it
 * is a Method, which needs an interpreter); -EBADMSG if one is but no
 * candidate is well-formed; -E2BIG if len > AML_S5_MAX_LEN; -EINVAL on NULL.
 */
int aml_find_s5(const u8 *aml, u32 len, struct aml_s5 *out);

/* The Generic Event Device of a hardware-reduced platform (ACPI 6.5
 * §5.6.9): its interrupt and the system-memory register its _EVT method
 * reads. QEMU microvm's: Interrupt(Edge, ActiveHigh){9} and
 * OperationRegion(EREG, SystemMemory, 0xfea00000, 4), whose bit 1 is the
 * power-down event (read clears it). */
#define AML_GED_SPAN	256u	/* bytes scanned after the _HID string */

struct aml_ged {
	u32 gsi;
	bool edge;
	bool active_low;
	u64 evt_addr;	/* the first SystemMemory OperationRegion in the device */
	u32 evt_len;
};

/*
 * Looks through aml[0..len) for the string "ACPI0013" (a _HID) and, within
 * the AML_GED_SPAN bytes after it (stopping at another such string), for an
 * Extended Interrupt descriptor (0x89, length >= 6, at least one GSI, GSI
 * 1..255) and an OperationRegion in SystemMemory whose offset and length are
 * integer constants, the length 4 to 4096 and the region below 2^47 without
 * wrapping. Not an interpreter: _EVT itself is not read; the caller knows
 * which bit means what. The first device that has both wins.
 *
 * Cost: one pass over len bytes, at most AML_GED_SPAN bytes per candidate.
 * Returns 0 with *out set; -ENOENT without an "ACPI0013" string; -EBADMSG
 * if none is well-formed; -E2BIG if len > AML_S5_MAX_LEN; -EINVAL on NULL.
 */
int aml_find_ged(const u8 *aml, u32 len, struct aml_ged *out);

/* A platform device as the AML describes it: a _HID string constant and the
 * first Memory32Fixed and Extended Interrupt resource descriptors after it
 * (its _CRS buffer, as QEMU microvm's virtio-mmio devices have them). Found
 * by a byte scan, so nothing in it is trusted: whoever drives the device
 * checks the window and the interrupt. */
#define AML_DEV_SPAN	256u	/* bytes scanned after the _HID string */

struct aml_dev {
	char hid[9];	/* the _HID's 8 characters ('0'..'Z'), NUL-terminated */
	bool mem, irq;	/* a Memory32Fixed, an Extended Interrupt was found */
	u32 base, size;	/* Memory32Fixed */
	u32 gsi;	/* the Extended Interrupt's first GSI */
};

/*
 * Every 8-character _HID-like string constant in aml[0..len) (StringPrefix,
 * 8 characters '0'..'Z', NUL) with the resources found within the AML_DEV_SPAN bytes
 * after it, stopping at the next such string: Memory32Fixed (0x86, length 9)
 * and Extended Interrupt (0x89, length >= 6, at least one GSI), each whole
 * inside the span. At most max are stored in out[], in AML order.
 *
 * Cost: one pass over len bytes, at most AML_DEV_SPAN more per string.
 * Returns the number found (more than max: the rest were not stored).
 */
u32 aml_find_devices(const u8 *aml, u32 len, struct aml_dev *out, u32 max);

#endif
