/* The two libc string routines mbedTLS's PEM and X.509 parsers call that the
 * kernel does not have (net/tls/include/string.h declares them). */
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
