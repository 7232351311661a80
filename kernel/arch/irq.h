/* Interrupts: IDT vectors, the local APIC, IOAPIC routing and MSI messages. */
#ifndef VIREO_IRQ_H
#define VIREO_IRQ_H

#include "lib/types.h"

#define VEC_TIMER 0x20		/* LAPIC one-shot timer */
#define VEC_DYN_FIRST 0x30	/* allocated to devices (IOAPIC pins, MSI, MSI-X) */
#define VEC_DYN_LAST 0xef
#define VEC_SPURIOUS 0xff

typedef void (*irq_fn)(void *arg);

/* Saved by kernel/arch/entry.S, in push order reversed. */
struct trap_frame {
	u64 r15, r14, r13, r12, r11, r10, r9, r8;
	u64 rbp, rdi, rsi, rdx, rcx, rbx, rax;
	u64 vector, error;
	u64 rip, cs, rflags, rsp, ss;
};

void trap_init(void);		/* GDT, TSS, IDT: exceptions from here on */
void trap_init_ist(void);	/* after mm: separate stacks for #DF, NMI, #MC */
void apic_init(void);		/* LAPIC on, 8259 masked, IOAPIC pins masked */

/* Allocates a vector that calls fn(arg); returns the vector or -ENOSPC. */
int irq_alloc_vector(irq_fn fn, void *arg);
void irq_free_vector(int vec);
/* Routes an ISA IRQ (through MADT overrides) to a new vector; returns it. */
int irq_route_isa(u8 isa_irq, irq_fn fn, void *arg);
/* Routes an IOAPIC GSI to a new vector; returns it or a negative error. */
int irq_route_gsi(u32 gsi, bool level, bool active_low, irq_fn fn, void *arg);
void irq_mask_gsi(u32 gsi, bool masked);
/* Address/data pair for an MSI or MSI-X message to this CPU, in
 * compatibility format (what the VT-d fault event, which is not remapped,
 * uses). */
void msi_compose(int vector, u64 *addr, u32 *data);
/* The same for a message requester sid (bus << 8 | dev << 3 | fn) sends:
 * remappable when an interrupt remapping is installed and takes it. */
void msi_compose_for(u16 sid, int vector, u64 *addr, u32 *data);

/* Interrupt remapping (drivers/iommu/vtd_ir.c installs it once a unit's
 * table is live). ioapic: the remappable redirection entry for pin of the
 * idx-th IOAPIC (irq_set_ioapic's index) routed to vector, with its entry
 * written in the table; msi: the remappable address and data for requester
 * sid. Each returns 0 or a negative error; on error the source keeps its
 * compatibility format. */
struct irq_remap {
	int (*ioapic)(u32 idx, u32 pin, int vector, bool level, bool active_low, bool masked, u64 *rte);
	int (*msi)(u16 sid, int vector, u64 *addr, u32 *data);
};
/* Installs r (routes from now on use it) and moves every IOAPIC pin routed
 * so far to remappable format. Returns how many routed pins stay in
 * compatibility format (r refused them). */
unsigned irq_remap_install(const struct irq_remap *r);

/* Interrupt controller facts from ACPI (defaults: one IOAPIC at 0xfec00000). */
void irq_set_ioapic(u32 index, u64 base, u32 gsi_base);
void irq_set_isa_override(u8 isa_irq, u32 gsi, bool level, bool active_low);

void lapic_eoi(void);
u32 lapic_id(void);
void lapic_timer_oneshot(u32 ticks);
u32 lapic_timer_current(void);
void lapic_timer_start_calibration(void);

struct irq_stats {
	u64 count[256];
	u64 spurious;
	u64 unhandled;
};
extern struct irq_stats irq_stats;

#endif
