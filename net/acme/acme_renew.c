/* Renewal timing (acme_renew.h). */
#include "net/acme/acme_renew.h"

#include "kernel/time/wallclock.h"

u64 acme_renew_at(const struct acme_renew_in *in)
{
	u64 life, left, at;

	if (in->ari && in->ari_start < in->ari_end && in->ari_start < in->not_after) {
		at = in->ari_start + in->rnd % (in->ari_end - in->ari_start);
		return at < in->now ? in->now : at;
	}
	if (in->not_after <= in->not_before || in->not_after <= in->now)
		return in->now;
	life = in->not_after - in->not_before;
	left = life <= ACME_SHORT_S ? life / 2 : life / 3;
	at = in->not_after - left;
	at -= in->rnd % (life / ACME_JITTER_DIV + 1);
	return at < in->now ? in->now : at;
}

u64 acme_backoff_s(unsigned failures, u64 retry_after_s, u64 rnd)
{
	u64 b = ACME_BACKOFF_CAP_S, wait;

	if (failures == 0)
		failures = 1;
	if (failures <= 20 && ((u64)ACME_BACKOFF_BASE_S << (failures - 1)) < ACME_BACKOFF_CAP_S)
		b = (u64)ACME_BACKOFF_BASE_S << (failures - 1);
	wait = b - b / 2 + rnd % (b / 2 + 1);
	if (retry_after_s > ACME_RETRY_AFTER_MAX_S)
		retry_after_s = ACME_RETRY_AFTER_MAX_S;
	return wait < retry_after_s ? retry_after_s : wait;
}

bool acme_retry_after(const char *s, u64 now, u64 *secs)
{
	u64 v = 0, at;
	size_t i = 0;

	if (s[0] >= '0' && s[0] <= '9') {
		for (; s[i] >= '0' && s[i] <= '9'; i++)
			if (v <= ACME_RETRY_AFTER_MAX_S)
				v = v * 10 + (u64)(s[i] - '0');
		if (s[i] != '\0')
			return false;
		*secs = v > ACME_RETRY_AFTER_MAX_S ? ACME_RETRY_AFTER_MAX_S : v;
		return true;
	}
	if (!wallclock_parse_http_date(s, &at))
		return false;
	*secs = at > now ? at - now : 0;
	if (*secs > ACME_RETRY_AFTER_MAX_S)
		*secs = ACME_RETRY_AFTER_MAX_S;
	return true;
}

static bool acme_digits(const char *s, unsigned n, u32 *v)
{
	*v = 0;
	for (unsigned i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (u32)(s[i] - '0');
	}
	return true;
}

bool acme_rfc3339(const char *s, size_t n, u64 *unix_s)
{
	u32 y, mo, d, h, mi, sec, oh = 0, om = 0;
	size_t k = 19;
	char sign = 0;
	u64 t, off;

	if (n < 20 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' ||
	    !acme_digits(s, 4, &y) || !acme_digits(s + 5, 2, &mo) || !acme_digits(s + 8, 2, &d) ||
	    !acme_digits(s + 11, 2, &h) || !acme_digits(s + 14, 2, &mi) || !acme_digits(s + 17, 2, &sec))
		return false;
	if (s[k] == '.') {
		size_t f = ++k;

		while (k < n && k - f < 10 && s[k] >= '0' && s[k] <= '9')
			k++;
		if (k == f || k - f > 9)
			return false;
	}
	if (k < n && (s[k] == 'Z' || s[k] == 'z')) {
		k++;
	} else if (k + 6 == n && (s[k] == '+' || s[k] == '-') && s[k + 3] == ':' && acme_digits(s + k + 1, 2, &oh) &&
		   acme_digits(s + k + 4, 2, &om) && oh <= 23 && om <= 59) {
		sign = s[k];
		k += 6;
	} else {
		return false;
	}
	if (k != n)
		return false;
	/* a leap second (60) counts as the next second's start */
	t = wallclock_from_civil(y, mo, d, h, mi, sec == 60 ? 59 : sec);
	if (t == 0 && !(y == 1970 && mo == 1 && d == 1 && h == 0 && mi == 0 && sec == 0))
		return false;
	t += sec == 60;
	off = (u64)oh * 3600 + (u64)om * 60;
	if (sign == '+') {	/* local time ahead of UTC */
		if (off > t)
			return false;
		t -= off;
	} else if (sign == '-') {
		t += off;
	}
	*unix_s = t;
	return true;
}
