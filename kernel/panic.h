/* panic(): the kernel's own invariants broke. Prints `vireo: panic: ...`,
 * registers when a trap caused it, a frame-pointer backtrace, then halts or
 * reboots as panic=halt|reboot says. */
#ifndef VIREO_PANIC_H
#define VIREO_PANIC_H

#include "kernel/arch/irq.h"
#include "lib/types.h"

void panic(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void panic_trap(struct trap_frame *f) __attribute__((noreturn));
/* Reset the machine: ACPI reset register, 0xcf9, 8042, then a triple fault. */
void machine_reboot(void) __attribute__((noreturn));
void machine_halt(void) __attribute__((noreturn));
/* Set once ACPI is parsed; 0 space means "none". */
void panic_set_acpi_reset(u8 space, u64 addr, u8 value);
/* Stack ranges a backtrace may walk. */
void panic_add_stack(u64 lo, u64 hi);

#endif
