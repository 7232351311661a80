/*
 * PVH entry, C half: boot/pvh_entry.S arrives here in long mode on the kernel
 * stack. Everything the kernel needs is copied from hvm_start_info into one
 * struct boot_info (boot/pvh_info.c does the conversion), then kernel_main,
 * exactly as the UEFI path does. No firmware is called; none is needed.
 */
#include "boot/cmos_rtc.h"
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

static u8 pvh_cmos(u8 reg)
{
	outb(0x70, reg);
	return inb(0x71);
}

/* The CMOS RTC's time, the provisional wall clock (no firmware here to
 * ask): its registers read once no update is in progress, twice, until
 * two reads agree (an update that began between them shows as a
 * difference). An update keeps UIP set for under 2.3 ms; 100,000 reads
 * of register A (each at least a port exit) outlast it. No RTC (all
 * ones at the ports, e.g. microvm with rtc=off) or no valid date leaves
 * rtc_unix_s 0: "clock: none until SNTP". */
static void pvh_clock(struct boot_info *bi)
{
	static const u8 regs[] = { CMOS_SEC, CMOS_MIN, CMOS_HOUR, CMOS_MDAY, CMOS_MON, CMOS_YEAR, CMOS_B, CMOS_CENTURY };
	u8 r[2][CMOS_NREGS] = { { 0 } };

	if (pvh_cmos(CMOS_B) == 0xff)
		return;
	for (int tries = 0; tries < 4; tries++) {
		bool same = true;

		for (int k = 0; k < 2; k++) {
			u32 spins = 100000;

			while ((pvh_cmos(CMOS_A) & CMOS_A_UIP) && --spins)
				;
			if (!spins)
				return;
			for (size_t i = 0; i < sizeof regs; i++)
				r[k][regs[i]] = pvh_cmos(regs[i]);
		}
		for (size_t i = 0; i < sizeof regs; i++)
			same = same && r[0][regs[i]] == r[1][regs[i]];
		if (same) {
			bi->rtc_tsc = rdtsc();
			bi->rtc_unix_s = cmos_rtc_decode(r[0]);
			pvh_copy_name(bi->rtc_src, "the CMOS RTC", sizeof bi->rtc_src);
			return;
		}
	}
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
	pvh_clock(bi);
	kernel_main(bi);
}
