/* ACPI in the kernel: parse the firmware's tables once (drivers/acpi/acpi_tables.c
 * does the checking) and hand the facts to the interrupt, time and reset code. */
#ifndef VIREO_ACPI_H
#define VIREO_ACPI_H

#include "drivers/acpi/acpi_tables.h"
#include "drivers/acpi/aml_s5.h"
#include "kernel/boot_info.h"

/* Parses the tables and applies IOAPICs, ISA overrides, the reset register
 * and the PM timer. Returns 0, or a negative error with PC defaults kept. */
int acpi_init(const struct boot_info *bi);
/* After apic_init and time_init: ACPI mode on, the SCI routed, the power
 * button enabled and S5 registered as the off method (kernel/power.h).
 * Logs why not when the platform has no such thing. */
void acpi_power_init(void);
/* The parsed tables, or NULL when there were none. */
const struct acpi_info *acpi_get(void);
/* The platform devices the DSDT describes with a _HID string (struct
 * aml_dev: its fixed window and interrupt, unchecked), published for the
 * bus that drives them to read (virtio-mmio: "LNRO0005"); *n of them, 0
 * without ACPI or a usable DSDT. Valid from acpi_init on. */
const struct aml_dev *acpi_devices(u32 *n);

#endif
