/* Wall-clock time: unknown until a source (net/clients/sntp.c) sets it, then the
 * monotonic clock (time_ns) plus an offset. Formatting is pure.
 *
 * Before that, a provisional clock may be known: the firmware's (UEFI
 * GetTime() at boot, read before ExitBootServices: boot/efi_main.c),
 * printed with its source and kept apart. The HTTP Date header and
 * Last-Modified take the best clock (wallclock_http_now(), as nginx takes
 * the system's, so a site's caching works without ntp=); wallclock_now()
 * and what needs a synchronised time (log stamps, the app API's
 * vireo_wallclock()) wait for a source; wallclock_best() says which clock it
 * has, so a check that must fail closed without a clock (certificates) can
 * tell "no clock" from "the firmware's" from "synchronised". */
#ifndef VIREO_WALLCLOCK_H
#define VIREO_WALLCLOCK_H

#include "lib/types.h"

/* Plausible wall-clock times: a source's answer outside them is refused
 * (2024-01-01T00:00:00Z .. 2105-12-31T23:59:59Z; NTP's era 0 ends 2036,
 * its era 1 runs past this). */
#define WALLCLOCK_MIN_S 1704067200ULL
#define WALLCLOCK_MAX_S 4291747199ULL

struct civil_time {
	u32 year, month, day;		/* month 1-12, day 1-31 */
	u32 hour, min, sec, wday;	/* wday 0 = Sunday */
};

/* Days since 1970-01-01 and seconds of the day into a UTC civil date. */
void wallclock_civil(u64 unix_s, struct civil_time *c);

/* The inverse: Unix seconds of a UTC date and time, or 0 if a field is out
 * of range (years 1970-9999, a day the month has, 23:59:59 at most). */
u64 wallclock_from_civil(u32 year, u32 month, u32 day, u32 hour, u32 min, u32 sec);

/* An IMF-fixdate (s NUL-terminated, exactly 29 characters, names and
 * ranges checked) into *unix_s; false, *unix_s untouched, for anything
 * else (RFC 9110's two obsolete forms included: a recipient may treat
 * an If-Modified-Since it cannot read as absent). */
bool wallclock_parse_http_date(const char *s, u64 *unix_s);

/* "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110's IMF-fixdate, 29 characters)
 * into buf[size]; returns its length, or 0 if it does not fit. */
size_t wallclock_http_date(u64 unix_s, char *buf, size_t size);

/* "2026-12-04T20:38:11.123Z" (24 characters); 0 if it does not fit. */
size_t wallclock_iso(u64 unix_ns, char *buf, size_t size);

/* Sets the clock: unix_ns was the time at monotonic now_ns (time_ns()).
 * Refused (-ERANGE) outside WALLCLOCK_MIN_S..MAX_S. */
int wallclock_set(u64 unix_ns, u64 now_ns);

/* UEFI's EFI_TIME fields (TimeZone in minutes, Localtime = UTC -
 * TimeZone, or 2047 unspecified: read as UTC) into Unix seconds; 0 when a
 * field is out of range. */
u64 wallclock_from_efi(u32 year, u32 month, u32 day, u32 hour, u32 min, u32 sec, s16 tz);

/* Sets the provisional clock (unix_ns at monotonic now_ns), once and only
 * while no source has set the clock: 0, -ERANGE (outside WALLCLOCK_MIN_S..
 * MAX_S), -EALREADY. */
int wallclock_set_provisional(u64 unix_ns, u64 now_ns);

enum wallclock_source {
	WALLCLOCK_NONE,		/* no clock */
	WALLCLOCK_PROVISIONAL,	/* the firmware's, not synchronised */
	WALLCLOCK_SYNCED,	/* set by a source (SNTP) */
};

/* The best time known into *unix_ns (untouched with WALLCLOCK_NONE) and
 * where it comes from. */
enum wallclock_source wallclock_best(u64 *unix_ns);

/* The time now, false while no source has set it (the provisional clock
 * does not count). */
bool wallclock_now(u64 *unix_ns);

/* The HTTP Date of now, cached per second: length, or 0 while unknown. */
size_t wallclock_http_now(char *buf, size_t size);

/* The console's line stamp: "[2026-12-04T20:38:11.123Z] ", or 0 while
 * unknown (kernel/console.c calls it at every line start). */
size_t wallclock_stamp(char *buf, size_t size);

/* Forget the clock (host tests). */
void wallclock_reset(void);

#endif
