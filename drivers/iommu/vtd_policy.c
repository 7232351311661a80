/* The VT-d policy's decisions (drivers/iommu/vtd_policy.h), pure: the host
 * tests run this very code (tests/host/drivers/iommu/test_vtd_policy.c). */
#include "drivers/iommu/vtd_policy.h"

const char *const vtd_mode_choices[] = { "off", "permissive", "strict", "on", NULL };
const char *const vtd_state_names[VTD_STATE_COUNT] = { "blocked", "translated", "pass-through" };

enum vtd_mode vtd_policy_mode(int value)
{
	if (value == VTD_MODE_OFF || value == VTD_MODE_PERMISSIVE)
		return (enum vtd_mode)value;
	return VTD_MODE_STRICT;
}

bool vtd_policy_unit_usable(enum vtd_mode mode, bool has_pt)
{
	mode = vtd_policy_mode((int)mode);
	if (mode == VTD_MODE_OFF)
		return false;
	return mode == VTD_MODE_STRICT || has_pt;
}

enum vtd_start vtd_policy_start(enum vtd_mode mode, bool has_rmrr)
{
	if (vtd_policy_mode((int)mode) != VTD_MODE_STRICT)
		return VTD_START_PASS;	/* permissive: today's behaviour, RMRR devices included */
	return has_rmrr ? VTD_START_RESERVED : VTD_START_BLOCKED;
}

enum vtd_state vtd_policy_state(u16 did, u16 did_pass, u16 did_block, u64 domain_pages)
{
	if (did == did_pass)
		return VTD_STATE_PASS;
	if (did == did_block || !domain_pages)
		return VTD_STATE_BLOCKED;
	return VTD_STATE_TRANSLATED;
}
