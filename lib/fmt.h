/* printf-style formatting into caller buffers; no I/O, no floating point. */
#ifndef VIREO_FMT_H
#define VIREO_FMT_H

#include <stdarg.h>
#include "lib/types.h"

/* Format into buf[size] with C99 snprintf semantics: writes at most size-1
 * characters plus a NUL (nothing when size == 0; buf may then be NULL) and
 * returns the length the full output would have had, or -1 if that exceeds
 * INT_MAX. Flags - 0 + space #, width and precision (also *), lengths
 * hh h l ll z t j, conversions d i u x X o c s p %. %p prints 0x-prefixed
 * hex, a NULL %s prints "(null)" (cut by precision like any string); an
 * unknown conversion is copied to the output literally. */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);

/* As kvsnprintf, with the arguments inline. */
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
