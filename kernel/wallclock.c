/* Wall-clock time (see wallclock.h). The civil-date conversion counts in
 * 400-year eras from 0000-03-01, so leap days fall at the end of a year
 * and need no table. */
#include "kernel/time.h"
#include "kernel/wallclock.h"

static bool wallclock_known;
static u64 wallclock_offset;	/* unix ns minus monotonic ns */

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

int wallclock_set(u64 unix_ns, u64 now_ns)
{
	u64 s = unix_ns / 1000000000ULL;

	if (s < WALLCLOCK_MIN_S || s > WALLCLOCK_MAX_S || unix_ns < now_ns)
		return -ERANGE;
	wallclock_offset = unix_ns - now_ns;
	wallclock_known = true;
	return 0;
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

	if (!wallclock_now(&ns))
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
}
