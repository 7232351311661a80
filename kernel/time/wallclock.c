/* Wall-clock time (see wallclock.h). The civil-date conversion counts in
 * 400-year eras from 0000-03-01, so leap days fall at the end of a year
 * and need no table. */
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"

static bool wallclock_known;
static u64 wallclock_offset;	/* unix ns minus monotonic ns */
static bool wallclock_prov_known;
static u64 wallclock_prov_offset;	/* the provisional clock's */

void wallclock_civil(u64 unix_s, struct civil_time *c)
{
	u64 days = unix_s / 86400, sod = unix_s % 86400;
	u64 z = days + 719468;		/* days since 0000-03-01 */
	u64 era = z / 146097, doe = z % 146097;
	u64 yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	u64 doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	u64 mp = (5 * doy + 2) / 153;
	u64 m = mp < 10 ? mp + 3 : mp - 9;

	c->year = (u32)(yoe + era * 400 + (m <= 2));
	c->month = (u32)m;
	c->day = (u32)(doy - (153 * mp + 2) / 5 + 1);
	c->hour = (u32)(sod / 3600);
	c->min = (u32)(sod / 60 % 60);
	c->sec = (u32)(sod % 60);
	c->wday = (u32)((days + 4) % 7);	/* 1970-01-01 was a Thursday */
}

u64 wallclock_from_civil(u32 year, u32 month, u32 day, u32 hour, u32 min, u32 sec)
{
	static const u8 mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
	u64 y, era, yoe, doy, doe;

	if (year < 1970 || year > 9999 || month < 1 || month > 12 || day < 1 || day > mdays[month - 1] ||
	    (month == 2 && day == 29 && !leap) || hour > 23 || min > 59 || sec > 59)
		return 0;
	/* The inverse of wallclock_civil: years start on March 1. */
	y = year - (month <= 2);
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return ((era * 146097 + doe - 719468) * 86400) + hour * 3600 + min * 60 + sec;
}

static int wallclock_digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

bool wallclock_parse_http_date(const char *s, u64 *unix_s)
{
	static const char wdays[] = "SunMonTueWedThuFriSat";
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	int day, year, hour, min, sec, month = -1, i;
	bool wday = false;
	u64 t;

	/* "Sun, 06 Nov 1994 08:49:37 GMT": exactly 29 characters */
	for (i = 0; i < 30; i++)
		if (!s[i])
			break;
	if (i != 29 || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
	    s[19] != ':' || s[22] != ':' || s[25] != ' ' || s[26] != 'G' || s[27] != 'M' || s[28] != 'T')
		return false;
	for (i = 0; i < 7; i++)
		if (s[0] == wdays[3 * i] && s[1] == wdays[3 * i + 1] && s[2] == wdays[3 * i + 2])
			wday = true;
	for (i = 0; i < 12; i++)
		if (s[8] == months[3 * i] && s[9] == months[3 * i + 1] && s[10] == months[3 * i + 2])
			month = i + 1;
	day = wallclock_digits(s + 5, 2);
	year = wallclock_digits(s + 12, 4);
	hour = wallclock_digits(s + 17, 2);
	min = wallclock_digits(s + 20, 2);
	sec = wallclock_digits(s + 23, 2);
	if (!wday || month < 0 || day < 0 || year < 0 || hour < 0 || min < 0 || sec < 0)
		return false;
	t = wallclock_from_civil((u32)year, (u32)month, (u32)day, (u32)hour, (u32)min, (u32)sec);
	if (!t)
		return false;
	*unix_s = t;
	return true;
}

static char *wallclock_dec(char *p, u32 v, int width)
{
	for (int i = width - 1; i >= 0; i--, v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + width;
}

static char *wallclock_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

size_t wallclock_http_date(u64 unix_s, char *buf, size_t size)
{
	static const char *const wdays[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct civil_time c;
	char *p = buf;

	if (size < 30)
		return 0;
	wallclock_civil(unix_s, &c);
	p = wallclock_str(p, wdays[c.wday]);
	p = wallclock_str(p, ", ");
	p = wallclock_dec(p, c.day, 2);
	*p++ = ' ';
	p = wallclock_str(p, months[c.month - 1]);
	*p++ = ' ';
	p = wallclock_dec(p, c.year % 10000, 4);
	*p++ = ' ';
	p = wallclock_dec(p, c.hour, 2);
	*p++ = ':';
	p = wallclock_dec(p, c.min, 2);
	*p++ = ':';
	p = wallclock_dec(p, c.sec, 2);
	p = wallclock_str(p, " GMT");
	*p = '\0';
	return (size_t)(p - buf);
}

size_t wallclock_iso(u64 unix_ns, char *buf, size_t size)
{
	struct civil_time c;
	char *p = buf;

	if (size < 25)
		return 0;
	wallclock_civil(unix_ns / 1000000000ULL, &c);
	p = wallclock_dec(p, c.year % 10000, 4);
	*p++ = '-';
	p = wallclock_dec(p, c.month, 2);
	*p++ = '-';
	p = wallclock_dec(p, c.day, 2);
	*p++ = 'T';
	p = wallclock_dec(p, c.hour, 2);
	*p++ = ':';
	p = wallclock_dec(p, c.min, 2);
	*p++ = ':';
	p = wallclock_dec(p, c.sec, 2);
	*p++ = '.';
	p = wallclock_dec(p, (u32)(unix_ns / 1000000ULL % 1000), 3);
	*p++ = 'Z';
	*p = '\0';
	return (size_t)(p - buf);
}

/* unix_ns at now_ns into *offset (and *known) if plausible. */
__attribute__((noinline)) static int wallclock_take(u64 unix_ns, u64 now_ns, u64 *offset, bool *known)
{
	u64 s = unix_ns / 1000000000ULL;

	if (s < WALLCLOCK_MIN_S || s > WALLCLOCK_MAX_S || unix_ns < now_ns)
		return -ERANGE;
	*offset = unix_ns - now_ns;
	*known = true;
	return 0;
}

int wallclock_set(u64 unix_ns, u64 now_ns)
{
	return wallclock_take(unix_ns, now_ns, &wallclock_offset, &wallclock_known);
}

u64 wallclock_from_efi(u32 year, u32 month, u32 day, u32 hour, u32 min, u32 sec, s16 tz)
{
	u64 s = wallclock_from_civil(year, month, day, hour, min, sec);

	if (!s || (tz != 2047 && (tz < -1440 || tz > 1440)))
		return 0;
	if (tz == 2047)
		return s;
	if ((s64)s + tz * 60 <= 0)
		return 0;
	return (u64)((s64)s + tz * 60);
}

int wallclock_set_provisional(u64 unix_ns, u64 now_ns)
{
	if (wallclock_known || wallclock_prov_known)
		return -EALREADY;
	return wallclock_take(unix_ns, now_ns, &wallclock_prov_offset, &wallclock_prov_known);
}

enum wallclock_source wallclock_best(u64 *unix_ns)
{
	if (wallclock_now(unix_ns))
		return WALLCLOCK_SYNCED;
	if (!wallclock_prov_known)
		return WALLCLOCK_NONE;
	*unix_ns = time_ns() + wallclock_prov_offset;
	return WALLCLOCK_PROVISIONAL;
}

bool wallclock_now(u64 *unix_ns)
{
	if (!wallclock_known)
		return false;
	*unix_ns = time_ns() + wallclock_offset;
	return true;
}

size_t wallclock_http_now(char *buf, size_t size)
{
	static u64 cached_s = ~0ULL;
	static char cached[32];
	static size_t cached_len;
	u64 ns;

	if (wallclock_best(&ns) == WALLCLOCK_NONE)
		return 0;
	if (ns / 1000000000ULL != cached_s) {
		cached_s = ns / 1000000000ULL;
		cached_len = wallclock_http_date(cached_s, cached, sizeof cached);
	}
	if (!cached_len || size <= cached_len)
		return 0;
	for (size_t i = 0; i <= cached_len; i++)
		buf[i] = cached[i];
	return cached_len;
}

size_t wallclock_stamp(char *buf, size_t size)
{
	u64 ns;
	size_t n;

	if (size < 28 || !wallclock_now(&ns))
		return 0;
	buf[0] = '[';
	n = wallclock_iso(ns, buf + 1, size - 1);
	if (!n)
		return 0;
	buf[1 + n] = ']';
	buf[2 + n] = ' ';
	buf[3 + n] = '\0';
	return n + 3;
}

void wallclock_reset(void)
{
	wallclock_known = false;
	wallclock_offset = 0;
	wallclock_prov_known = false;
	wallclock_prov_offset = 0;
}
