/* Boot timeline: named TSC stamps, printed relative to efi_main. */
#ifndef VIREO_TIMELINE_H
#define VIREO_TIMELINE_H

#include "lib/types.h"

void timeline_mark(const char *name);
void timeline_mark_at(const char *name, u64 tsc);
/* Prints `boot: timeline ...` with milliseconds since efi_main. */
void timeline_print(void);
/* Nanoseconds from efi_main to the named stamp, or 0 if absent. */
u64 timeline_ns(const char *name);

#endif
