/* <string.h> for mbedTLS in the freestanding kernel: the kernel's routines,
 * plus strchr and strstr (PEM and X.509 parsing) and strncpy (the certificate
 * writer), in net/tls/tls_libc.c. */
#ifndef VIREO_TLS_STRING_H
#define VIREO_TLS_STRING_H
#include "lib/string.h"
char *strchr(const char *s, int c);
char *strstr(const char *haystack, const char *needle);
char *strncpy(char *dst, const char *src, size_t n);
/* The kernel builds with -fno-builtin, so each of mbedTLS's unaligned
 * loads and stores (memcpy of 4 or 8 bytes in its GET/PUT_UINT macros and
 * mbedtls_xor) was a call into memcpy, a third of the HTTPS profile under
 * TCG. Through the builtins GCC turns constant small sizes into moves and
 * calls the kernel's routines for the rest. */
#define memcpy(d, s, n) __builtin_memcpy((d), (s), (n))
#define memset(d, c, n) __builtin_memset((d), (c), (n))
#define memcmp(a, b, n) __builtin_memcmp((a), (b), (n))
#endif
