/* Fixed-width types shared by the kernel and the host-built pure code. */
#ifndef VIREO_TYPES_H
#define VIREO_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

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

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a) ((x) & ~((__typeof__(x))(a) - 1))
#define IS_POW2(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define PAGE_SIZE 4096u

/* Error codes: functions return 0 or one of these, negated. */
#define EPERM 1
#define ENOENT 2
#define EIO 5
#define EAGAIN 11
#define E2BIG 7
#define ENOMEM 12
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define ENODEV 19
#define EINVAL 22
#define ENOSPC 28
#define EROFS 30
#define EPIPE 32
#define ERANGE 34
#define EPROTO 71
#define EOVERFLOW 75
#define EBADMSG 74
#define ENOTSUP 95
#define ETIMEDOUT 110
#define EALREADY 114

#endif
