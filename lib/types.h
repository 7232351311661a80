/* Fixed-width types shared by the kernel and the host-built pure code: the
 * app API's (include/vireo/types.h: u8..s64, the E* codes, ARRAY_SIZE,
 * ALIGN_UP, MIN, MAX) and what only the tree uses. */
#ifndef VIREO_TYPES_H
#define VIREO_TYPES_H

#include "vireo/types.h"

/* Device-visible little-endian fields. x86_64 is little-endian, so these are
 * plain integers; the names document which fields a device reads or writes. */
typedef uint16_t le16;
typedef uint32_t le32;
typedef uint64_t le64;

/* An address as a device must see it (after dma_map). */
typedef uint64_t dma_addr_t;

/* Set-up and reporting functions inside a file whose hot path keeps -O2:
 * GCC optimises a cold function for size and places it apart, as the
 * Makefile's COLD_SRCS do for whole files (the image stays under 300 KiB). */
#define __cold __attribute__((cold))

#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define IS_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)

#define PAGE_SIZE 4096u

#endif
