/* libFuzzer target for drivers/aml_s5.c (aml_find_s5 and aml_find_ged). The input is a table body as
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
	free(buf);
	return 0;
}
