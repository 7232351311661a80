/* The composition root's entry to debug/ (debug.h), and VT-d's test hooks:
 * iommu.stray= (straight into the seam, vtd_stray_nth) and the shell's
 * iommu-stray. */
#include "debug/debug.h"
#include "debug/vnet_echo.h"
#include "drivers/iommu/vtd.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/shell.h"

CMDLINE_PARAM(vtd_stray, .key = "iommu.stray", .type = CMDLINE_UINT, .dst = &vtd_stray_nth,
	      .def = "0", .values = "0 or N",
	      .help = "self-test: the Nth device-writable buffer is handed to the device at its read-only "
		      "address, so the device's write faults; 0 = off");

bool debug_start(void)
{
	return vnet_echo_start();
}

/* `iommu-stray` (debug only): the next device-writable buffer any translated
 * device is given goes out at its read-only address, so the device's write
 * faults and the device is reset and probed again. */
static void debug_cmd_stray(const char *args)
{
	(void)args;
	if (vtd_stray_next() < 0) {
		kprintf("iommu-stray: no remapping unit in use\n");
		return;
	}
	kprintf("iommu-stray: armed: the next device-writable buffer gets a read-only address\n");
}
SHELL_CMD(iommu_stray, .name = "iommu-stray", .fn = debug_cmd_stray, .debug = true,
	  .help = "hand a device one writable buffer at its read-only address (fault and recovery test)");
