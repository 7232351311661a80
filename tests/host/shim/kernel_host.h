/* Host stand-ins for the kernel services net/ and net/app use (time, heap,
 * pages, console, panic, entropy, memory statistics), with test controls. */
#ifndef VIREO_KERNEL_HOST_H
#define VIREO_KERNEL_HOST_H

#include "kernel/types.h"

/* time_ns() returns this fake clock; it moves only when a test says so. */
void shim_clock_advance_ms(u64 ms);
/* kmalloc/kzalloc blocks not yet kfree'd. */
long shim_kmalloc_live(void);
/* Make the next n kmalloc/kzalloc calls fail. */
void shim_kmalloc_fail_next(unsigned n);

#endif
