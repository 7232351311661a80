/* lwIP compiler/platform port for vireo: x86_64, GCC, freestanding. Maps
 * lwIP's diagnostics and assertions onto the kernel console and panic(). */
#ifndef VIREO_LWIP_ARCH_CC_H
#define VIREO_LWIP_ARCH_CC_H

#include <stddef.h>
#include <stdint.h>

/* Kernel services lwIP calls. These repeat kernel/console.h, kernel/panic.h
 * and the entropy source's header so lwIP sources need no kernel header;
 * net/port/lwip_port.c includes both, which makes any drift a compile error. */
int kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void panic(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Uniformly random 32 bits (kernel entropy): TCP ISNs, ports, DHCP xids. */
uint32_t random_u32(void);

/* Headers a freestanding build lacks or should not use. GCC's own stddef.h,
 * stdint.h and stdarg.h are used; limits.h, inttypes.h, ctype.h and unistd.h
 * are replaced by the definitions below. */
#define LWIP_NO_INTTYPES_H	1
#define LWIP_NO_LIMITS_H	1
#define LWIP_NO_CTYPE_H		1
#define LWIP_NO_UNISTD_H	1

#define INT_MAX			__INT_MAX__
typedef long ssize_t;
#define SSIZE_MAX		__LONG_MAX__

/* printf formats for lwIP's types, as lib/fmt.c understands them. */
#define X8_F	"02x"
#define U16_F	"hu"
#define S16_F	"hd"
#define X16_F	"hx"
#define U32_F	"u"
#define S32_F	"d"
#define X32_F	"x"
#define SZT_F	"zu"

#define BYTE_ORDER		LITTLE_ENDIAN
#define lwip_htons(x)		((u16_t)__builtin_bswap16((u16_t)(x)))
#define lwip_htonl(x)		((u32_t)__builtin_bswap32((u32_t)(x)))

/* lwIP strings end in '\n' already; kprintf adds nothing. */
#define LWIP_PLATFORM_DIAG(x)	do { kprintf x; } while (0)
/* An assertion names its file and line in the pinned lwIP release, not its
 * message: the messages cost 9.7 KB of the image (7.3 KB of strings, 1.8 KB
 * of code passing them), and file:line finds the check as surely. */
#define LWIP_PLATFORM_ASSERT(x)	panic("lwip: assertion failed at %s:%d", __FILE_NAME__, __LINE__)

#endif
