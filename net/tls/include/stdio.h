/* <stdio.h> for mbedTLS in the freestanding kernel: only snprintf is used
 * (MBEDTLS_PLATFORM_SNPRINTF_MACRO names the kernel's ksnprintf). */
#ifndef VIREO_TLS_STDIO_H
#define VIREO_TLS_STDIO_H
#include <stddef.h>
#include <stdarg.h>
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
