/* The compressed UEFI image's payload header (make ZIMAGE=1): written by
 * tools/zpack.c, read by boot/zstub.c. The payload is the kernel's PE laid
 * out as the firmware's loader would lay it out in memory (headers and
 * sections at their RVAs, the rest zero), trailing zeros dropped, then
 * compressed (boot/lz.h). */
#ifndef VIREO_BOOT_ZIMAGE_H
#define VIREO_BOOT_ZIMAGE_H

#include "lib/types.h"

#define ZIMAGE_MAGIC "vireoZ1"

struct zimage_hdr {
	char magic[8];		/* ZIMAGE_MAGIC and its NUL */
	u32 raw_len;		/* bytes the stream decodes to */
	u32 mem_size;		/* the PE's SizeOfImage: raw_len and zeros */
	u32 entry;		/* the PE's AddressOfEntryPoint */
	u32 comp_len;		/* the stream's bytes, right after this header */
};

#endif
