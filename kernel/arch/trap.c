/* GDT, TSS (with IST stacks) and IDT; the C side of every trap. */
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"
#include "kernel/time/time.h"

#define SEL_CODE 0x08
#define SEL_DATA 0x10
#define SEL_TSS 0x18
#define IST_DF 1
#define IST_NMI 2
#define IST_MC 3
#define IST_PAGES 2

struct tss {
	u32 rsvd0;
	u64 rsp[3];
	u64 rsvd1;
	u64 ist[7];
	u64 rsvd2;
	u16 rsvd3;
	u16 iomap_base;
} __attribute__((packed));
_Static_assert(sizeof(struct tss) == 104, "TSS layout");

struct idt_entry {
	u16 off_lo;
	u16 sel;
	u8 ist;
	u8 type;
	u16 off_mid;
	u32 off_hi;
	u32 rsvd;
} __attribute__((packed));
_Static_assert(sizeof(struct idt_entry) == 16, "IDT entry layout");

struct desc_ptr {
	u16 limit;
	u64 base;
} __attribute__((packed));

static u64 gdt[5] __attribute__((aligned(16)));
static struct tss tss __attribute__((aligned(16)));
static struct idt_entry idt[256] __attribute__((aligned(16)));

extern char isr_stubs[];
void gdt_load(const struct desc_ptr *gdtr, u16 code, u16 data, u16 tss_sel);
void irq_dispatch(u64 vector);
void trap_dispatch(struct trap_frame *f);

static void trap_idt_set(int vec, u8 ist)
{
	u64 a = (u64)(isr_stubs + 16 * vec);

	idt[vec] = (struct idt_entry){
		.off_lo = (u16)a,
		.sel = SEL_CODE,
		.ist = ist,
		.type = 0x8e,	/* present, ring 0, 64-bit interrupt gate */
		.off_mid = (u16)(a >> 16),
		.off_hi = (u32)(a >> 32),
	};
}

void trap_init(void)
{
	u64 t = (u64)&tss;
	struct desc_ptr gdtr = { sizeof(gdt) - 1, (u64)gdt };
	struct desc_ptr idtr = { sizeof(idt) - 1, (u64)idt };
	int v;

	gdt[0] = 0;
	gdt[1] = 0x00af9a000000ffffULL;	/* 64-bit code, ring 0 */
	gdt[2] = 0x00cf92000000ffffULL;	/* data, ring 0 */
	gdt[3] = (sizeof(tss) - 1) | (t & 0xffffff) << 16 | 0x89ULL << 40 | ((t >> 24) & 0xff) << 56;
	gdt[4] = t >> 32;
	tss.iomap_base = sizeof(tss);
	gdt_load(&gdtr, SEL_CODE, SEL_DATA, SEL_TSS);

	for (v = 0; v < 256; v++)
		trap_idt_set(v, 0);
	__asm__ __volatile__("lidt %0" :: "m"(idtr));
}

void trap_init_ist(void)
{
	static const u8 which[] = { IST_DF, IST_NMI, IST_MC };
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(which); i++) {
		u8 *stack = page_alloc(IST_PAGES);

		if (!stack)
			panic("no memory for IST stacks");
		tss.ist[which[i] - 1] = (u64)stack + IST_PAGES * PAGE_SIZE;
		panic_add_stack((u64)stack, (u64)stack + IST_PAGES * PAGE_SIZE);
	}
	trap_idt_set(8, IST_DF);
	trap_idt_set(2, IST_NMI);
	trap_idt_set(18, IST_MC);
}

void trap_dispatch(struct trap_frame *f)
{
	if (f->vector < 32) {
		if (f->vector == 2) {
			/* NMI: QEMU's `nmi` monitor command; report and carry on. */
			return;
		}
		panic_trap(f);
	}
	if (f->vector == VEC_TIMER)
		time_irq();
	irq_dispatch(f->vector);
}
