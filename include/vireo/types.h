/*
 * vireo's application API: fixed-width types, the error codes every call
 * returns (negated) and a few macros. The kernel uses the same ones
 * (lib/types.h includes this header), so an app's u32 is the kernel's.
 */
#ifndef VIREO_API_TYPES_H
#define VIREO_API_TYPES_H

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

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define ALIGN_UP(x, a) (((x) + ((a) - 1)) & ~((__typeof__(x))(a) - 1))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

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
#define ENETUNREACH 101
#define ENOTCONN 107
#define ETIMEDOUT 110
#define EALREADY 114
#define ECANCELED 125

#endif
