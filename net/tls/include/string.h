/* <string.h> for mbedTLS in the freestanding kernel: the kernel's routines,
 * plus strchr and strstr (PEM and X.509 parsing), in net/tls/tls_libc.c. */
#ifndef VIREO_TLS_STRING_H
#define VIREO_TLS_STRING_H
#include "kernel/string.h"
char *strchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
#endif
