/* libFuzzer target for drivers/acpi/aml_s5.c (aml_find_s5, aml_find_ged, aml_find_devices). The input is a table body as
 * given, copied to an exact-size buffer (a read past it is an ASan report).
 * Checks: only the documented errors; success gives 3-bit values and is
 * repeatable (the scan keeps no state between calls). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <arch.h>
#include "drivers/acpi/aml_s5.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct aml_s5 s, again;
	struct aml_ged g, g2;
	struct aml_dev devs[4];
	u32 ndevs;
	u8 *buf;
	int r;

	if (size > AML_S5_MAX_LEN)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	r = aml_find_s5(buf, (u32)size, &s);
	if (r != 0 && r != -ENOENT && r != -EBADMSG)
		abort();
	if (r == 0) {
		if (s.slp_typa > 7 || s.slp_typb > 7)
			abort();
		if (aml_find_s5(buf, (u32)size, &again) != 0 ||
		    again.slp_typa != s.slp_typa || again.slp_typb != s.slp_typb)
			abort();
	}
	r = aml_find_ged(buf, (u32)size, &g);
	if (r != 0 && r != -ENOENT && r != -EBADMSG)
		abort();
	if (r == 0) {
		if (g.gsi < 1 || g.gsi > 255 || g.evt_len < 4 || g.evt_len > 4096 || (g.evt_addr & 3) ||
		    g.evt_addr + g.evt_len > (1ULL << 47))
			abort();
		if (aml_find_ged(buf, (u32)size, &g2) != 0 || memcmp(&g, &g2, sizeof g) != 0)
			abort();
	}
	/* Devices: at most the 4 asked for stored, each _HID 8 characters
	 * '0'..'Z' and NUL-terminated; as many found as a rescan finds. */
	ndevs = aml_find_devices(buf, (u32)size, devs, 4);
	for (u32 i = 0; i < ndevs && i < 4; i++)
		if (strlen(devs[i].hid) != 8)
			abort();
	if (ndevs > size / 10 || aml_find_devices(buf, (u32)size, devs, 0) != ndevs)
		abort();
	free(buf);
	return 0;
}
