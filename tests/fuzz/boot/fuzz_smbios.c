/* libFuzzer target for boot/smbios.c: byte 0 picks what the rest is (even:
 * a structure table for smbios_collect; odd: an entry point for
 * smbios_entry, then the same bytes as a Base64 text).
 * Checks: no crash or over-read (ASan/UBSan; the table is copied to a
 * buffer of exactly its size); the collected command line is NUL-terminated
 * within its array, printable, and no longer than the values given; the
 * counts add up; a decoded length fits the room it was given. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/smbios.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct boot_smbios out;
	u8 *copy;
	size_t n;

	if (size < 1)
		return 0;
	copy = malloc(size - 1 ? size - 1 : 1);
	memcpy(copy, data + 1, size - 1);
	if (!(data[0] & 1)) {
		memset(&out, 0, sizeof out);
		smbios_collect(copy, size - 1, &out);
		n = strnlen(out.cmdline, sizeof out.cmdline);
		if (n == sizeof out.cmdline || n > size)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((out.cmdline[i] < 0x20 && out.cmdline[i] != '\t') || out.cmdline[i] > 0x7e)
				abort();
		if (out.used + out.refused + out.other_vireo > out.strings)
			abort();
		if (strnlen(out.refused_why, sizeof out.refused_why) == sizeof out.refused_why ||
		    strnlen(out.other_name, sizeof out.other_name) == sizeof out.other_name)
			abort();
	} else {
		u64 addr;
		u32 len;
		u8 dec[64];
		int got;

		if (smbios_entry(copy, size - 1, &addr, &len) == 0 && (len > SMBIOS_TABLE_MAX || !addr || !len))
			abort();
		got = smbios_base64((const char *)copy, size - 1, dec, data[0] >> 2 & 63);
		if (got > (data[0] >> 2 & 63))
			abort();
	}
	free(copy);
	return 0;
}
