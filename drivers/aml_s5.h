/* The \_S5 (soft-off) sleep type from a DSDT or SSDT: a bounded byte scan of
 * the AML for Name(_S5_, Package () {...}), no interpreter. Pure code. */
#ifndef VIREO_AML_S5_H
#define VIREO_AML_S5_H

#include "kernel/types.h"

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

#endif
