/* The libc string routines mbedTLS calls that the kernel does not have
 * (net/tls/include/string.h declares them): strchr and strstr for the PEM
 * and X.509 parsers, strncpy for the certificate writer's validity. */
#include <stddef.h>
#include "net/tls/include/string.h"

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (*s == '\0')
			return NULL;
	}
}

char *strstr(const char *haystack, const char *needle)
{
	size_t n = strlen(needle);

	if (n == 0)
		return (char *)haystack;
	for (; *haystack != '\0'; haystack++)
		if (*haystack == *needle && strncmp(haystack, needle, n) == 0)
			return (char *)haystack;
	return NULL;
}

/* C's strncpy: at most n bytes, NUL-padded, not terminated when src has n
 * or more (mbedTLS terminates its copy itself). */
char *strncpy(char *dst, const char *src, size_t n)
{
	size_t i = 0;

	for (; i < n && src[i] != '\0'; i++)
		dst[i] = src[i];
	for (; i < n; i++)
		dst[i] = '\0';
	return dst;
}
