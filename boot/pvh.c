/*
 * PVH entry, C half: boot/pvh_entry.S arrives here in long mode on the kernel
 * stack. Everything the kernel needs is copied from hvm_start_info into one
 * struct boot_info (boot/pvh_info.c does the conversion), then kernel_main,
 * exactly as the UEFI path does. No firmware is called; none is needed.
 */
#include "boot/pvh_info.h"
#include "kernel/arch/io.h"

extern char ImageBase[], __image_end[];
extern u8 pvh_stack[];
extern u64 pvh_entry_tsc;

static struct boot_info pvh_bi __attribute__((aligned(4096)));

/* Everything below 4 GiB is identity-mapped by the entry code. */
static const void *pvh_phys(u64 pa, u64 len)
{
	if (!pa || len > (1ULL << 32) || pa > (1ULL << 32) - len)
		return NULL;
	return (const void *)pa;
}

/* The kernel's console is not up yet: a failure here is told on COM1 by
 * polling, then the CPU halts. */
static void pvh_early_say(const char *s)
{
	for (; *s; s++) {
		u32 spins = 100000;

		while (!(inb(0x3fd) & 0x20) && --spins)
			;
		outb(0x3f8, (u8)*s);
	}
}

static void pvh_copy_name(char *dst, const char *s, size_t n)
{
	size_t i;

	for (i = 0; s[i] && i < n - 1; i++)
		dst[i] = s[i];
	dst[i] = '\0';
}

void pvh_main(u64 start_info) __attribute__((noreturn, used));
void pvh_main(u64 start_info)
{
	struct boot_info *bi = &pvh_bi;
	u64 t = rdtsc();
	const char *why;

	bi->magic = BOOT_INFO_MAGIC;
	bi->tsc.efi_main = pvh_entry_tsc;
	bi->tsc.before_exit = t;
	bi->tsc.after_exit = t;
	pvh_copy_name(bi->stamp_names[0], "pvh_entry", sizeof bi->stamp_names[0]);
	pvh_copy_name(bi->stamp_names[1], "long_mode", sizeof bi->stamp_names[1]);
	bi->image_base = (u64)ImageBase;
	bi->image_size = (u64)(__image_end - ImageBase);
	bi->stack_base = (u64)pvh_stack;
	bi->stack_size = (BOOT_STACK_PAGES + 1) * 4096ULL;
	bi->self_base = (u64)bi;
	bi->self_size = (sizeof *bi + 4095) & ~4095ULL;
	if (pvh_fill_boot_info(bi, start_info, pvh_phys, bi->image_base, bi->image_base + bi->image_size, &why)) {
		pvh_early_say("vireo: pvh: ");
		pvh_early_say(why);
		pvh_early_say("; halted\r\n");
		for (;;)
			__asm__ __volatile__("cli; hlt");
	}
	kernel_main(bi);
}
