/* Finding a device in AML without an interpreter: its _HID as a string
 * constant. Shared by the GED scan (aml_s5.c) and the virtio-mmio scan
 * (virtio_mmio_parse.c). Pure code. */
#ifndef VIREO_AML_HID_H
#define VIREO_AML_HID_H

#include "lib/types.h"

#define AML_HID_STRING_PREFIX	0x0d	/* StringPrefix: NUL-terminated ASCII follows */

/* True if aml[i..] holds StringPrefix, the 8 characters of hid and the
 * terminating NUL, all inside aml[0..len) (i <= len). */
static inline bool aml_hid_at(const u8 *aml, u32 len, u32 i, const char hid[8])
{
	u32 k;

	if (len - i < 10 || aml[i] != AML_HID_STRING_PREFIX || aml[i + 9] != 0)
		return false;
	for (k = 0; k < 8; k++)
		if (aml[i + 1 + k] != (u8)hid[k])
			return false;
	return true;
}

#endif
