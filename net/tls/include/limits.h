/* <limits.h> for mbedTLS in the freestanding kernel: GCC's own, without its
 * #include_next of a libc limits.h (there is none with -nostdinc). The same
 * as net/port/include/limits.h, which lwIP's files see. */
#ifndef VIREO_TLS_LIMITS_H
#define VIREO_TLS_LIMITS_H
#define _LIBC_LIMITS_H_ 1
#include_next <limits.h>
#endif
