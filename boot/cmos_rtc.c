/* The CMOS real-time clock's registers to Unix seconds (boot/cmos_rtc.h). */
#include "boot/cmos_rtc.h"
#include "kernel/time/wallclock.h"

/* A register's value, BCD or binary; 0xff (> every limit) when bad. */
static u32 cmos_val(u8 v, bool binary)
{
	if (binary)
		return v;
	if ((v & 0x0f) > 9 || (v >> 4) > 9)
		return 0xff;
	return (u32)(v >> 4) * 10 + (v & 0x0f);
}

u64 cmos_rtc_decode(const u8 r[CMOS_NREGS])
{
	bool binary = r[CMOS_B] & CMOS_B_BINARY;
	u32 sec = cmos_val(r[CMOS_SEC], binary), min = cmos_val(r[CMOS_MIN], binary);
	u32 mday = cmos_val(r[CMOS_MDAY], binary), mon = cmos_val(r[CMOS_MON], binary);
	u32 yy = cmos_val(r[CMOS_YEAR], binary), cent = cmos_val(r[CMOS_CENTURY], binary);
	u32 hour;

	if (r[CMOS_B] == 0xff)
		return 0;	/* nothing answers at the ports */
	if (r[CMOS_B] & CMOS_B_24H) {
		hour = cmos_val(r[CMOS_HOUR], binary);
	} else {
		hour = cmos_val(r[CMOS_HOUR] & 0x7f, binary);
		if (hour < 1 || hour > 12)
			return 0;
		hour = hour % 12 + (r[CMOS_HOUR] & 0x80 ? 12 : 0);
	}
	if (sec > 59 || min > 59 || hour > 23 || yy > 99)
		return 0;
	return wallclock_from_civil((cent >= 19 && cent <= 21 ? cent * 100 : 2000) + yy, mon, mday, hour, min, sec);
}
