/* The VT-d policy (iommu=), as pure functions (drivers/iommu/vtd_policy.c):
 * what each PCI function a unit covers gets when translation turns on,
 * whether a unit can be used at all, and how a context entry is counted
 * in the `iommu` verb and /metrics. drivers/iommu/vtd.c applies them. */
#ifndef VIREO_VTD_POLICY_H
#define VIREO_VTD_POLICY_H

#include "lib/types.h"

/* iommu=: the values in the order of vtd_mode_choices; on is strict. */
enum vtd_mode { VTD_MODE_OFF, VTD_MODE_PERMISSIVE, VTD_MODE_STRICT, VTD_MODE_ON };
extern const char *const vtd_mode_choices[];	/* "off", "permissive", "strict", "on", NULL */

/* The mode in force for the value iommu= took (on: strict; anything out
 * of range: strict, the safe side). */
enum vtd_mode vtd_policy_mode(int value);

/* Whether a unit is turned on in mode: never when off; permissive needs
 * the pass-through capability (ECAP.PT) for the functions it does not
 * translate, strict does not (they are blocked). */
bool vtd_policy_unit_usable(enum vtd_mode mode, bool has_pt);

/* A covered function's context entry when translation turns on, before
 * any driver attaches. */
enum vtd_start {
	VTD_START_BLOCKED,	/* the unit's blocking domain: every DMA faults */
	VTD_START_PASS,		/* pass-through: physical addresses */
	VTD_START_RESERVED,	/* a domain of its own holding only its RMRRs' identity maps */
};
enum vtd_start vtd_policy_start(enum vtd_mode mode, bool has_rmrr);

/* How one present context entry is counted: in the pass-through domain,
 * in the blocking one, or in a domain of its own that maps something the
 * device was given (translated) or nothing (emptied after a failed probe
 * or removal, or holding only RMRR identity maps: blocked). */
enum vtd_state { VTD_STATE_BLOCKED, VTD_STATE_TRANSLATED, VTD_STATE_PASS, VTD_STATE_COUNT };
extern const char *const vtd_state_names[VTD_STATE_COUNT];	/* "blocked", "translated", "pass-through" */
enum vtd_state vtd_policy_state(u16 did, u16 did_pass, u16 did_block, u64 domain_pages);

#endif
