/* Panic and exception reporting, reboot and halt. */
#include <stdarg.h>

#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/mm/mm.h"
#include "kernel/panic.h"
#include "kernel/shell.h"

static const char *const exc_names[32] = {
	"divide error", "debug", "NMI", "breakpoint", "overflow", "bound range",
	"invalid opcode", "device not available", "double fault", "coprocessor overrun",
	"invalid TSS", "segment not present", "stack fault", "general protection",
	"page fault", "reserved", "x87 error", "alignment check", "machine check",
	"SIMD error", "virtualization", "control protection", "reserved", "reserved",
	"reserved", "reserved", "reserved", "reserved", "hypervisor injection",
	"VMM communication", "security", "reserved",
};

static struct {
	u64 lo, hi;
} stacks[8];
static unsigned nstacks;
static u8 reset_space;	/* 1 = memory, 2 = I/O (ACPI GAS) */
static u64 reset_addr;
static u8 reset_value;
static int in_panic;

void panic_add_stack(u64 lo, u64 hi)
{
	if (nstacks < ARRAY_SIZE(stacks))
		stacks[nstacks++] = (typeof(stacks[0])){ lo, hi };
}

void panic_set_acpi_reset(u8 space, u64 addr, u8 value)
{
	reset_space = space;
	reset_addr = addr;
	reset_value = value;
}

static bool panic_on_stack(u64 a, u64 len)
{
	unsigned i;

	for (i = 0; i < nstacks; i++)
		if (a >= stacks[i].lo && a + len <= stacks[i].hi)
			return true;
	return false;
}

static void panic_backtrace(u64 rip, u64 rbp)
{
	u64 base = mm_image_base();
	int depth;

	kprintf("backtrace (addr2line -e build/vireo.so <offset>):\n");
	kprintf("  #0  0x%016lx  vireo+%#lx\n", rip, rip - base);
	for (depth = 1; depth < 32 && rbp; depth++) {
		u64 *fp = (u64 *)rbp;
		u64 ret;

		if ((rbp & 7) || !panic_on_stack(rbp, 16))
			break;
		ret = fp[1];
		if (ret == 0)
			break;
		kprintf("  #%-2d 0x%016lx  vireo+%#lx\n", depth, ret, ret - base);
		if (fp[0] <= rbp)	/* frames must move up the stack */
			break;
		rbp = fp[0];
	}
}

enum { PANIC_HALT, PANIC_REBOOT };
static const char *const panic_choices[] = { "halt", "reboot", NULL };
static int panic_action = PANIC_HALT;
CMDLINE_PARAM(panic, .key = "panic", .type = CMDLINE_ENUM, .dst = &panic_action, .choices = panic_choices,
	      .def = "halt", .help = "what a panic does after printing");

static void __attribute__((noreturn)) panic_finish(void)
{
	if (panic_action == PANIC_REBOOT) {
		kprintf("vireo: rebooting\n");
		machine_reboot();
	}
	kprintf("vireo: halted\n");
	machine_halt();
}

static bool panic_enter(void)
{
	cli();
	if (in_panic++) {
		/* A fault while reporting a fault: say so once, stop. */
		if (in_panic == 2)
			kprintf("vireo: panic: recursive fault during panic\n");
		machine_halt();
	}
	console_panic_mode();
	return true;
}

void panic(const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	u64 rbp;

	panic_enter();
	va_start(ap, fmt);
	kvsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	kprintf("vireo: panic: %s\n", msg);
	__asm__ __volatile__("mov %%rbp, %0" : "=r"(rbp));
	panic_backtrace((u64)__builtin_return_address(0), rbp ? *(u64 *)rbp : 0);
	panic_finish();
}

static void panic_cmd(const char *args)
{
	(void)args;
	panic("shell: requested panic");
}
SHELL_CMD(panic, .name = "panic", .fn = panic_cmd, .debug = true,
	  .help = "panic now, with the network up (tests the panic path and its syslog frames)");

void panic_trap(struct trap_frame *f)
{
	const char *name = f->vector < 32 ? exc_names[f->vector] : "interrupt";
	u64 cr2 = read_cr2();

	panic_enter();
	if (f->vector == 8 && panic_on_stack(cr2, 1) == false && cr2 && mm_is_guard(cr2))
		kprintf("vireo: panic: kernel stack overflow (double fault, guard page %#lx)\n", cr2);
	else if (f->vector == 14 && mm_is_guard(cr2))
		kprintf("vireo: panic: kernel stack overflow (guard page %#lx)\n", cr2);
	else
		kprintf("vireo: panic: exception %lu (%s) error %#lx at rip %#lx\n", f->vector, name,
			f->error, f->rip);
	if (f->vector == 14)
		kprintf("page fault: cr2=0x%016lx %s %s %s%s\n", cr2, f->error & 1 ? "protection" : "not-present",
			f->error & 2 ? "write" : "read", f->error & 4 ? "user" : "kernel",
			f->error & 16 ? " instruction-fetch" : "");
	kprintf("rax=%016lx rbx=%016lx rcx=%016lx rdx=%016lx\n", f->rax, f->rbx, f->rcx, f->rdx);
	kprintf("rsi=%016lx rdi=%016lx rbp=%016lx rsp=%016lx\n", f->rsi, f->rdi, f->rbp, f->rsp);
	kprintf("r8 =%016lx r9 =%016lx r10=%016lx r11=%016lx\n", f->r8, f->r9, f->r10, f->r11);
	kprintf("r12=%016lx r13=%016lx r14=%016lx r15=%016lx\n", f->r12, f->r13, f->r14, f->r15);
	kprintf("rip=%016lx cs=%04lx ss=%04lx rflags=%08lx\n", f->rip, f->cs, f->ss, f->rflags);
	kprintf("cr0=%016lx cr2=%016lx cr3=%016lx cr4=%016lx\n", read_cr0(), cr2, read_cr3(), read_cr4());
	panic_backtrace(f->rip, f->rbp);
	panic_finish();
}

void machine_halt(void)
{
	cli();
	for (;;)
		__asm__ __volatile__("hlt");
}

void machine_reboot(void)
{
	struct {
		u16 limit;
		u64 base;
	} __attribute__((packed)) null_idt = { 0, 0 };
	int i;

	/* Each path logs before it is tried, so the last "vireo: reset:" line
	 * names the one that worked (tests check it is the FADT's on q35). */
	cli();
	if (reset_space == 2 && reset_addr <= 0xffff) {
		kprintf("vireo: reset: ACPI FADT reset register (I/O port %#lx, value %#x)\n", reset_addr,
			reset_value);
		outb((u16)reset_addr, reset_value);
	} else if (reset_space == 1 && reset_addr) {
		kprintf("vireo: reset: ACPI FADT reset register (memory, value %#x)\n", reset_value);
		mmio_w8(reset_addr, reset_value);
	}
	for (i = 0; i < 100000; i++)
		pause();
	kprintf("vireo: reset: PIIX/ICH reset control (port 0xcf9)\n");
	outb(0xcf9, 0x02);	/* system reset, then hard */
	outb(0xcf9, 0x06);
	for (i = 0; i < 100000; i++)
		pause();
	kprintf("vireo: reset: keyboard controller (8042 pulse)\n");
	for (i = 0; i < 1000 && (inb(0x64) & 0x02); i++)
		pause();
	outb(0x64, 0xfe);	/* 8042 pulse reset line */
	for (i = 0; i < 100000; i++)
		pause();
	/* Last resort: no IDT, then an exception, is a triple fault. */
	kprintf("vireo: reset: triple fault\n");
	__asm__ __volatile__("lidt %0; int3" :: "m"(null_idt));
	machine_halt();
}
