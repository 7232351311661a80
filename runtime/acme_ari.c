/* RFC 9773's polling plan (runtime/acme_ari.h), make STORAGE=1. */
#include "runtime/acme_ari.h"

#include "net/acme/acme_renew.h"

enum acme_ari_do acme_ari_due(const struct acme_ari_poll *p, u64 now)
{
	if (p->off)
		return ACME_ARI_OFF;
	if (now < p->next)
		return ACME_ARI_WAIT;
	return p->url ? ACME_ARI_POLL : ACME_ARI_DIR;
}

void acme_ari_dir_read(struct acme_ari_poll *p, bool ok, bool has_url, u64 now, u64 rnd)
{
	if (!ok) {
		p->failures++;
		p->next = now + acme_backoff_s(p->failures, 0, rnd);
		return;
	}
	p->url = has_url;
	p->fresh = has_url;
	p->off = !has_url;
	p->next = now;	/* polled at once */
}

bool acme_ari_polled(struct acme_ari_poll *p, int status, bool window, u64 retry_s, u64 now, u64 rnd)
{
	bool stale;

	if (status == 200 && window) {
		p->failures = 0;
		p->fresh = false;	/* a later stale failure reads the directory at once */
		if (!retry_s)
			retry_s = ACME_ARI_POLL_S;
		p->next = now + (retry_s < ACME_ARI_POLL_MIN_S ? ACME_ARI_POLL_MIN_S :
				 retry_s > ACME_ARI_POLL_MAX_S ? ACME_ARI_POLL_MAX_S : retry_s);
		return true;
	}
	p->failures++;
	stale = status == 200 || (status >= 400 && status < 500 && status != 429);
	if (stale && !p->fresh) {
		/* a URL the directory has not named lately: read it now */
		p->url = false;
		p->next = now;
		return false;
	}
	if (stale) {
		p->url = false;	/* the directory again, after the backoff */
		p->fresh = false;
	}
	p->next = now + acme_backoff_s(p->failures, retry_s, rnd);
	return false;
}
