/* The composition root's entry to debug/ (debug.h), and VT-d's test hooks:
 * iommu.stray= (straight into the seam, vtd_stray_nth) and the shell's
 * iommu-stray and iommu-ir-sid. */
#include "debug/debug.h"
#include "debug/vnet_echo.h"
#include "drivers/iommu/vtd.h"
#include "drivers/iommu/vtd_ir.h"
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

/* "BB:DD.F" (hex) -> bus << 8 | dev << 3 | fn; the rest after it in *end. */
static int debug_bdf(const char *s, u16 *bdf, const char **end)
{
	unsigned v[3] = { 0 }, part = 0, digits = 0;

	for (; *s == ' '; s++)
		;
	for (; *s && *s != ' '; s++) {
		char c = *s;

		if ((c == ':' && part == 0) || (c == '.' && part == 1)) {
			if (!digits)
				return -EINVAL;
			part++;
			digits = 0;
		} else if (c >= '0' && c <= '9' && digits < 2) {
			v[part] = v[part] * 16 + (unsigned)(c - '0');
			digits++;
		} else if (c >= 'a' && c <= 'f' && digits < 2) {
			v[part] = v[part] * 16 + (unsigned)(c - 'a' + 10);
			digits++;
		} else {
			return -EINVAL;
		}
	}
	if (part != 2 || !digits || v[1] > 31 || v[2] > 7)
		return -EINVAL;
	*bdf = (u16)(v[0] << 8 | v[1] << 3 | v[2]);
	*end = s;
	return 0;
}

/* `iommu-ir-sid BB:DD.F BB:DD.F` (debug only): the first requester's
 * interrupt remapping entries name the second as their source, so the unit
 * refuses the first one's interrupts (source-id validation); the same
 * command with the two swapped puts them back. */
static void debug_cmd_ir_sid(const char *args)
{
	u16 from, to;
	const char *rest;
	unsigned n;

	if (debug_bdf(args, &from, &rest) || debug_bdf(rest, &to, &rest)) {
		kprintf("iommu-ir-sid: usage: iommu-ir-sid BB:DD.F BB:DD.F\n");
		return;
	}
	n = vtd_ir_sid_swap(from, to);
	kprintf("iommu-ir-sid: %u entr%s of %02x:%02x.%u now name %02x:%02x.%u\n", n, n == 1 ? "y" : "ies",
		from >> 8, (from >> 3) & 31, from & 7, to >> 8, (to >> 3) & 31, to & 7);
}
SHELL_CMD(iommu_ir_sid, .name = "iommu-ir-sid", .fn = debug_cmd_ir_sid, .debug = true, .usage = "BB:DD.F BB:DD.F",
	  .help = "make one requester's interrupt remapping entries name another (source-id test)");
