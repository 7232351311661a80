/*
 * vireo's application API: the memory and string functions (the kernel's
 * own, lib/string.c; the compiler may also emit calls to memcpy, memset,
 * memmove and memcmp). There is no other C library.
 */
#ifndef VIREO_API_STRING_H
#define VIREO_API_STRING_H

#include "vireo/types.h"

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
/* Copies at most size-1 bytes and always NUL-terminates (size > 0). */
size_t strlcpy(char *dst, const char *src, size_t size);

#endif
