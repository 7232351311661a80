/* Local APIC (xAPIC MMIO), the 8259 pair masked, IOAPIC redirection,
 * device vector allocation and MSI message composition. */
#include <arch.h>

#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/mm/mm.h"

#define LAPIC_ID 0x020
#define LAPIC_TPR 0x080
#define LAPIC_EOI 0x0b0
#define LAPIC_SVR 0x0f0
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360
#define LAPIC_LVT_ERROR 0x370
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR 0x390
#define LAPIC_TIMER_DIV 0x3e0
#define LVT_MASKED (1u << 16)

#define IOAPIC_REGSEL 0x00
#define IOAPIC_WIN 0x10
#define IOAPIC_VER 0x01
#define IOAPIC_REDTBL(n) (0x10 + 2 * (n))
#define MAX_IOAPICS 4

static u64 lapic_base;

static struct ioapic {
	u64 base;
	u32 gsi_base;
	u32 npins;
} ioapics[MAX_IOAPICS] = { { .base = 0xfec00000, .gsi_base = 0 } };
static u32 nioapics = 1;

/* ISA IRQ -> GSI, with polarity/trigger. Default identity, edge, high;
 * PC firmware routes the PIT (IRQ0) to GSI 2, which ACPI restates. */
static struct isa_route {
	bool set;
	u32 gsi;
	bool level, active_low;
} isa_routes[16];

static struct {
	irq_fn fn;
	void *arg;
} vectors[256];

struct irq_stats irq_stats;
static const struct irq_remap *irq_remap;

static u32 lapic_read(u32 reg)
{
	return mmio_r32(lapic_base + reg);
}

static void lapic_write(u32 reg, u32 v)
{
	mmio_w32(lapic_base + reg, v);
}

static u32 ioapic_read(struct ioapic *io, u32 reg)
{
	mmio_w32(io->base + IOAPIC_REGSEL, reg);
	return mmio_r32(io->base + IOAPIC_WIN);
}

static void ioapic_write(struct ioapic *io, u32 reg, u32 v)
{
	mmio_w32(io->base + IOAPIC_REGSEL, reg);
	mmio_w32(io->base + IOAPIC_WIN, v);
}

void irq_set_ioapic(u32 index, u64 base, u32 gsi_base)
{
	if (index >= MAX_IOAPICS)
		return;
	ioapics[index].base = base;
	ioapics[index].gsi_base = gsi_base;
	if (index >= nioapics)
		nioapics = index + 1;
}

void irq_set_isa_override(u8 isa_irq, u32 gsi, bool level, bool active_low)
{
	if (isa_irq >= 16)
		return;
	isa_routes[isa_irq] = (struct isa_route){ true, gsi, level, active_low };
}

static struct ioapic *ioapic_for(u32 gsi, u32 *pin)
{
	u32 i;

	for (i = 0; i < nioapics; i++) {
		struct ioapic *io = &ioapics[i];

		if (io->base && gsi >= io->gsi_base && gsi < io->gsi_base + io->npins) {
			*pin = gsi - io->gsi_base;
			return io;
		}
	}
	return NULL;
}

void apic_init(void)
{
	u64 base = rdmsr(MSR_APIC_BASE);
	u32 i, p;

	/* Mask both 8259s after remapping them away from the exception range. */
	outb(0x20, 0x11);
	outb(0xa0, 0x11);
	outb(0x21, 0xf0);
	outb(0xa1, 0xf8);
	outb(0x21, 0x04);
	outb(0xa1, 0x02);
	outb(0x21, 0x01);
	outb(0xa1, 0x01);
	outb(0x21, 0xff);
	outb(0xa1, 0xff);

	wrmsr(MSR_APIC_BASE, base | (1u << 11));	/* xAPIC global enable */
	lapic_base = (u64)mmio_map(base & ~0xfffULL, 4096);
	lapic_write(LAPIC_TPR, 0);
	lapic_write(LAPIC_LVT_LINT0, LVT_MASKED);
	lapic_write(LAPIC_LVT_ERROR, LVT_MASKED);
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_TIMER);
	lapic_write(LAPIC_TIMER_DIV, 0x3);	/* divide by 16 */
	lapic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS);

	for (i = 0; i < 16; i++)
		if (!isa_routes[i].set)
			isa_routes[i] = (struct isa_route){ true, i, false, false };
	for (i = 0; i < nioapics; i++) {
		struct ioapic *io = &ioapics[i];

		if (!io->base)
			continue;
		io->base = (u64)mmio_map(io->base, 4096);
		io->npins = ((ioapic_read(io, IOAPIC_VER) >> 16) & 0xff) + 1;
		for (p = 0; p < io->npins; p++) {
			ioapic_write(io, IOAPIC_REDTBL(p), 1u << 16);
			ioapic_write(io, IOAPIC_REDTBL(p) + 1, 0);
		}
	}
}

u32 lapic_id(void)
{
	return lapic_read(LAPIC_ID) >> 24;
}

void lapic_eoi(void)
{
	lapic_write(LAPIC_EOI, 0);
}

void lapic_timer_start_calibration(void)
{
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | VEC_TIMER);
	lapic_write(LAPIC_TIMER_INIT, 0xffffffff);
}

u32 lapic_timer_current(void)
{
	return lapic_read(LAPIC_TIMER_CUR);
}

void lapic_timer_oneshot(u32 ticks)
{
	lapic_write(LAPIC_LVT_TIMER, VEC_TIMER);	/* one-shot, unmasked */
	lapic_write(LAPIC_TIMER_INIT, ticks);		/* 0 stops it */
}

int irq_alloc_vector(irq_fn fn, void *arg)
{
	int v;

	for (v = VEC_DYN_FIRST; v <= VEC_DYN_LAST; v++) {
		if (!vectors[v].fn) {
			vectors[v].fn = fn;
			vectors[v].arg = arg;
			return v;
		}
	}
	return -ENOSPC;
}

void irq_free_vector(int vec)
{
	if (vec >= VEC_DYN_FIRST && vec <= VEC_DYN_LAST)
		vectors[vec].fn = NULL;
}

int irq_route_gsi(u32 gsi, bool level, bool active_low, irq_fn fn, void *arg)
{
	struct ioapic *io;
	u32 pin, lo;
	int vec;

	io = ioapic_for(gsi, &pin);
	if (!io)
		return -ENODEV;
	vec = irq_alloc_vector(fn, arg);
	if (vec < 0)
		return vec;
	lo = (u32)vec | (level ? 1u << 15 : 0) | (active_low ? 1u << 13 : 0);
	if (irq_remap) {
		u64 rte;

		if (!irq_remap->ioapic((u32)(io - ioapics), pin, vec, level, active_low, false, &rte)) {
			ioapic_write(io, IOAPIC_REDTBL(pin) + 1, (u32)(rte >> 32));
			ioapic_write(io, IOAPIC_REDTBL(pin), (u32)rte);
			return vec;
		}
	}
	ioapic_write(io, IOAPIC_REDTBL(pin) + 1, lapic_id() << 24);
	ioapic_write(io, IOAPIC_REDTBL(pin), lo);
	return vec;
}

unsigned irq_remap_install(const struct irq_remap *r)
{
	unsigned left = 0;
	u32 i, p;

	irq_remap = r;
	for (i = 0; i < nioapics; i++) {
		struct ioapic *io = &ioapics[i];

		for (p = 0; io->base && p < io->npins; p++) {
			u32 lo = ioapic_read(io, IOAPIC_REDTBL(p)), hi = ioapic_read(io, IOAPIC_REDTBL(p) + 1);
			u64 rte;

			if ((lo & 0xff) == 0 || (hi & (1u << 16)))
				continue;	/* never routed, or remappable already */
			if (r->ioapic(i, p, (int)(lo & 0xff), lo & (1u << 15), lo & (1u << 13), lo & (1u << 16),
				      &rte)) {
				left++;
				continue;
			}
			/* Not masked (an edge while masked is lost): the high half
			 * first, and the old low half with it is already the new
			 * entry whenever the handle is below 32768 (its bit 15 is
			 * the low half's bit 11); then the low half. */
			ioapic_write(io, IOAPIC_REDTBL(p) + 1, (u32)(rte >> 32));
			ioapic_write(io, IOAPIC_REDTBL(p), (u32)rte);
		}
	}
	return left;
}

void irq_mask_gsi(u32 gsi, bool masked)
{
	struct ioapic *io;
	u32 pin, lo;

	io = ioapic_for(gsi, &pin);
	if (!io)
		return;
	lo = ioapic_read(io, IOAPIC_REDTBL(pin));
	lo = masked ? lo | (1u << 16) : lo & ~(1u << 16);
	ioapic_write(io, IOAPIC_REDTBL(pin), lo);
}

int irq_route_isa(u8 isa_irq, irq_fn fn, void *arg)
{
	struct isa_route *r;

	if (isa_irq >= 16)
		return -EINVAL;
	r = &isa_routes[isa_irq];
	return irq_route_gsi(r->gsi, r->level, r->active_low, fn, arg);
}

void msi_compose(int vector, u64 *addr, u32 *data)
{
	*addr = 0xfee00000ULL | ((u64)lapic_id() << 12);
	*data = (u32)vector;	/* fixed delivery, edge */
}

void msi_compose_for(u16 sid, int vector, u64 *addr, u32 *data)
{
	if (irq_remap && !irq_remap->msi(sid, vector, addr, data))
		return;
	msi_compose(vector, addr, data);
}

/* Called from trap_dispatch for vectors >= 32. */
void irq_dispatch(u64 vector)
{
	irq_stats.count[vector & 0xff]++;
	if (vector == VEC_SPURIOUS) {
		irq_stats.spurious++;
		return;		/* no EOI for spurious */
	}
	if (vector != VEC_TIMER) {
		if (vectors[vector].fn)
			vectors[vector].fn(vectors[vector].arg);
		else
			irq_stats.unhandled++;
	}
	lapic_eoi();
}
