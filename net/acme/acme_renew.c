/* Renewal timing (acme_renew.h). */
#include "net/acme/acme_renew.h"

#include "kernel/time/wallclock.h"

u64 acme_renew_at(const struct acme_renew_in *in)
{
	u64 life, left, at;

	if (in->ari && in->ari_start < in->ari_end) {
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
