/* Time: the TSC calibrated against the PIT, monotonic nanoseconds since
 * efi_main, and the LAPIC timer armed one-shot for the next deadline. */
#ifndef VIREO_TIME_H
#define VIREO_TIME_H

#include "lib/types.h"

#define NSEC_PER_SEC ((u64)1000000000)
#define NSEC_PER_MSEC ((u64)1000000)
#define NSEC_PER_USEC ((u64)1000)

/* Use the ACPI PM timer (3.579545 MHz, 24 or 32 bits) as the calibration
 * reference instead of the PIT; call before time_init(). */
void time_set_pm_timer(u16 port, u8 bits);
/* tsc0 is the TSC value that time_ns() counts from. */
void time_init(u64 tsc0);
u64 time_ns(void);
u64 time_tsc_to_ns(u64 ticks);
u64 time_tsc_hz(void);
u64 time_lapic_hz(void);
/* "pm-timer" or "pit": what the TSC was calibrated against. */
const char *time_reference(void);
/* Arms the LAPIC timer for an absolute time_ns() deadline (UINT64_MAX: off). */
void time_arm(u64 deadline_ns);
void time_irq(void);
void time_udelay(u64 us);

#endif
