/* <stdio.h> for lwIP in the freestanding kernel: mem.c includes it for
 * snprintf() under MEM_OVERFLOW_CHECK only, and output goes through
 * LWIP_PLATFORM_DIAG (kprintf) everywhere else. */
#ifndef VIREO_LWIP_STDIO_H
#define VIREO_LWIP_STDIO_H
#include <stddef.h>
#include <stdarg.h>
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#define snprintf ksnprintf
#endif
