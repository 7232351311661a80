/*
 * The CMOS real-time clock (the MC146818's registers, which QEMU's
 * mc146818rtc and PC firmware keep): the PVH entry's provisional wall
 * clock, where the UEFI entry has GetTime() (kernel/main.c). Decoding is
 * pure and host-tested (tests/host/boot/test_cmos_rtc.c); boot/pvh.c reads
 * the ports.
 */
#ifndef VIREO_CMOS_RTC_H
#define VIREO_CMOS_RTC_H

#include "lib/types.h"

/* The registers read, by their CMOS index. */
enum {
	CMOS_SEC = 0x00, CMOS_MIN = 0x02, CMOS_HOUR = 0x04, CMOS_MDAY = 0x07, CMOS_MON = 0x08,
	CMOS_YEAR = 0x09, CMOS_A = 0x0a, CMOS_B = 0x0b, CMOS_CENTURY = 0x32,
};
#define CMOS_NREGS	0x33
#define CMOS_A_UIP	0x80	/* an update is in progress: the registers may be mid-change */
#define CMOS_B_24H	0x02	/* hours 0-23 (else 1-12 with 0x80 for PM) */
#define CMOS_B_BINARY	0x04	/* binary (else BCD) */

/* Unix seconds of the time in r[] (the clock counts UTC, as QEMU's does
 * unless -rtc base=localtime), or 0 when it is not a valid date: a field
 * out of range, a BCD digit over 9, or all-ones (no RTC answers). The
 * century register (0x32, the ACPI FADT's usual one) is used when it holds
 * 19, 20 or 21; otherwise the year is 2000 + year. */
u64 cmos_rtc_decode(const u8 r[CMOS_NREGS]);

#endif
