/* <limits.h> for lwIP in the freestanding kernel: GCC's own, without its
 * #include_next of a libc limits.h (there is none with -nostdinc). lwIP's
 * core does not include it; mbedTLS's headers do, through lwIP's
 * altcp_tls.h in make TLS=1 builds. */
#ifndef VIREO_LWIP_LIMITS_H
#define VIREO_LWIP_LIMITS_H
#define _LIBC_LIMITS_H_ 1
#include_next <limits.h>
#endif
