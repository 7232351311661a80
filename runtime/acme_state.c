/*
 * TLS and ACME state kept on the store (runtime/acme_state.h; make
 * STORAGE=1 with make TLS=1 only: docs/https.md "Kept on the store").
 *
 * Six records, each one store key the runtime owns (runtime/store_rt.h:
 * 0x00 'K' then a name; apps can neither read nor write them), each a
 * runtime/keep_rec.h record written by one put, so after a crash a record
 * is the old one or the new one, whole, never a mix:
 *
 *   tls.gen       the generated pair: tls.names=, certificate DER, key DER
 *   acme.account  directory URL, account key DER, account URL
 *   acme.cert     directory, names, PEM chain, key DER, issued at (Unix s)
 *   acme.state    directory, failures in a row, next attempt at, last
 *                 attempt started at (Unix s)
 *   acme.order    directory, names, the order's URL, its key's DER (the
 *                 CSR's): written when the CA creates an order, emptied
 *                 once the certificate is issued; a boot that finds one
 *                 takes that order up (acme_client.h, cfg.order) rather
 *                 than making another
 *   acme.ari      directory, the served certificate's RFC 9773
 *                 identifier, the renewalInfo URL, the CA's window
 *                 (start, end), the next poll (the CA's Retry-After, or
 *                 the backoff after a failed poll) and the renewal moment
 *                 drawn in the window (Unix s): written after each poll
 *                 and at issue; a boot serving that certificate polls on
 *                 from there (the identifier is computed from the kept
 *                 certificate itself and must match)
 *
 * Read once at boot, before HTTPS listens, into memory held only until
 * acme_start() took what it needs (then wiped and freed); each is checked
 * (the record's framing, then by its user: the key parses and is the
 * certificate's, the directory and names are today's, the certificate is
 * not over) and a refused one is said once, never used, and replaced by
 * the next write. Keys are never logged: the lines say which record and
 * why, never a value.
 *
 * Bounds: a record read is at most KEEP_VALUE_MAX (72 KiB: a chain of
 * ACME_BODY_MAX, 64 KiB, the largest tls_keys_load() takes, a key, the
 * names and the directory); acme.order and acme.ari at most
 * KEEP_SMALL_MAX (4 KiB: 512 + 2,032 names + 512 + 121 bytes, and
 * 512 + 128 + 512 + 32, with their 5-byte header and 4 bytes a field);
 * a larger one is refused. At most the six are held at once at boot
 * (4 x 72 + 2 x 4 = 296 KiB of kernel heap at worst, for the boot's
 * moments); a write holds its record for the length of the put call (the
 * store copies it).
 */
#ifdef VIREO_TLS
#include "runtime/acme_state.h"

#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lib/string.h"
#include "mbedtls/pk.h"
#include "net/tls/tls.h"
#include "net/tls/tls_cert.h"
#include "net/tls/tls_keys.h"
#include "net/acme/acme_renew.h"
#include "net/acme/acme_sign.h"
#include "runtime/http/https.h"
#include "runtime/keep_rec.h"
#include "runtime/store_rt.h"

#define KEEP_VALUE_MAX (72u * 1024)
#define KEEP_SMALL_MAX (4u * 1024)	/* acme.order, acme.ari */
#define KEEP_KEY_DER_MAX 512u	/* P-256's DER is 121 bytes */
#define KEEP_BUSY_MS 10u	/* a read refused -EBUSY: again that much later, */
#define KEEP_BUSY_TRIES 200u	/* at most this often (2 s in all) */

enum { KR_GEN, KR_ACCOUNT, KR_CERT, KR_STATE, KR_ORDER, KR_ARI, KR_N };
/* the record kinds in keep_rec.h's header */
static const u8 keep_kind[KR_N] = { 1, 2, 3, 4, 5, 6 };
static const u8 keep_nfields[KR_N] = { 3, 3, 5, 4, 4, 7 };
static const char *const keep_name[KR_N] = { "tls.gen", "acme.account", "acme.cert", "acme.state", "acme.order",
					     "acme.ari" };

static struct {
	bool store, writable;
	u8 *val[KR_N];		/* as read at boot (kmalloc), NULL: none */
	size_t len[KR_N];
	struct keep_field f[KR_N][7];	/* at most keep_nfields[] */
	bool ok[KR_N];		/* its framing checked */
	unsigned reading;
	unsigned busy_tries;	/* reads refused -EBUSY (KEEP_BUSY_TRIES at most) */
	struct timer retry;
	void (*then)(void);
	struct work w;
	bool ro_said;
	void (*order_then)(void);	/* keep_order()'s, until its put is done */
} keep;

static int keep_rng(void *ctx, unsigned char *out, size_t len)
{
	(void)ctx;
	random_bytes(out, len);
	return 0;
}

static bool keep_now(u64 *s)
{
	u64 ns;

	if (wallclock_best(&ns) == WALLCLOCK_NONE)
		return false;
	*s = ns / 1000000000u;
	return true;
}

static void keep_wipe(u8 *p, size_t len)
{
	memset(p, 0, len);
	__asm__ volatile("" : : "r"(p) : "memory");	/* the wipe is not optimised away */
}

static void keep_refused(unsigned i, const char *why)
{
	kprintf("keep: %s on the store refused (%s): not used; replaced at its next write\n", keep_name[i], why);
	keep.ok[i] = false;
}

/* ---- writing ---- */

static void keep_written(int err, void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;

	if (err)
		kprintf("keep: %s: not kept on the store (%d); the one kept before stays\n", keep_name[i], err);
	else if (i != KR_STATE && i != KR_ARI)	/* (written at every attempt or poll: not said) */
		kprintf("keep: %s kept on the store\n", keep_name[i]);
	if (i == KR_ORDER && keep.order_then) {
		void (*then)(void) = keep.order_then;

		keep.order_then = NULL;
		then();
	}
}

/* Puts record i: true when the store took the put (keep_written() will
 * say how it went), false when it was never asked (said). */
static bool keep_put(unsigned i, const struct keep_field *f)
{
	char key[2 + 16];
	size_t klen = 2 + strlen(keep_name[i]), len = keep_rec_size(f, keep_nfields[i]);
	u8 *rec;
	int err;

	if (!keep.store)
		return false;
	if (!keep.writable) {
		if (!keep.ro_said)
			kprintf("keep: the store is read-only: TLS and ACME state is not kept from now on\n");
		keep.ro_said = true;
		return false;
	}
	rec = len <= KEEP_VALUE_MAX ? kmalloc(len) : NULL;
	if (!rec) {
		kprintf("keep: %s: not kept (%lu bytes: no memory or over %u)\n", keep_name[i], (unsigned long)len,
			KEEP_VALUE_MAX);
		return false;
	}
	memcpy(key, STORE_RT_PREFIX, 2);
	memcpy(key + 2, keep_name[i], klen - 2);
	keep_rec_put(rec, len, keep_kind[i], f, keep_nfields[i]);
	err = store_rt_put(key, klen, rec, len, keep_written, (void *)(uintptr_t)i);
	keep_wipe(rec, len);	/* the store copied it */
	kfree(rec);
	if (err)
		keep_written(err, (void *)(uintptr_t)i);
	return true;
}

static int keep_key_der(const mbedtls_pk_context *key, u8 *buf, size_t cap, const u8 **der)
{
	int n = mbedtls_pk_write_key_der((mbedtls_pk_context *)key, buf, cap);

	if (n <= 0)
		return -1;
	*der = buf + cap - (size_t)n;
	return n;
}

/* ---- boot: read the four ---- */

static void keep_read_next(void);

static void keep_retry(struct timer *t, void *arg)
{
	(void)t, (void)arg;
	keep_read_next();
}

static void keep_got(int err, const void *val, size_t len, void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	const char *why;

	if (err) {
		kprintf("keep: %s: the store could not read it (%d): not used; replaced at its next write\n",
			keep_name[i], err);
	} else if (len > (i >= KR_ORDER ? KEEP_SMALL_MAX : KEEP_VALUE_MAX)) {
		keep_refused(i, "larger than its bound");
	} else if ((keep.val[i] = kmalloc(len ? len : 1)) == NULL) {
		kprintf("keep: %s: no memory to read it (%lu bytes): not used\n", keep_name[i], (unsigned long)len);
	} else {
		memcpy(keep.val[i], val, len);
		keep.len[i] = len;
		why = keep_rec_get(keep.val[i], len, keep_kind[i], keep.f[i], keep_nfields[i]);
		keep.ok[i] = !why;
		if (why)
			keep_refused(i, why);
	}
	keep.reading++;
	keep_read_next();
}

static void keep_then(void *arg)
{
	(void)arg;
	keep.then();
}

static void keep_read_next(void)
{
	char key[2 + 16];
	int err;

	while (keep.reading < KR_N) {
		unsigned i = keep.reading;
		size_t klen = 2 + strlen(keep_name[i]);

		memcpy(key, STORE_RT_PREFIX, 2);
		memcpy(key + 2, keep_name[i], klen - 2);
		err = store_rt_get(key, klen, keep_got, (void *)(uintptr_t)i);
		if (!err)
			return;	/* keep_got goes on */
		if (err == -EBUSY && keep.busy_tries++ < KEEP_BUSY_TRIES) {
			/* an app's reads hold the store's 16: a moment later */
			timer_init(&keep.retry, keep_retry, NULL);
			timer_start(&keep.retry, time_ns() + KEEP_BUSY_MS * NSEC_PER_MSEC);
			return;
		}
		if (err != -ENOENT)
			kprintf("keep: %s: the store could not read it (%d): not used\n", keep_name[i], err);
		keep.reading++;
	}
	tls_gen_keep.store = keep.writable;	/* (or a pair kept: keep_gen_load) */
	keep.then();
}

static void keep_opened(int err, void *arg)
{
	(void)arg;
	keep.store = err == 0 || err == -EROFS;
	keep.writable = err == 0;
	if (!keep.store) {
		/* tls_start() warns: no store, the key in memory only */
		tls_gen_keep.store = false;
		tls_gen_keep.save = NULL;
		tls_gen_keep.load = NULL;
		keep.then();
		return;
	}
	keep_read_next();
}

static void keep_gen_save(const struct tls_keys *k, const char *names);
static int keep_gen_load(struct tls_keys *k, const char *names);

static void keep_boot(void (*then)(void))
{
	int err;

	keep.then = then;
	tls_gen_keep.save = keep_gen_save;
	tls_gen_keep.load = keep_gen_load;
	err = store_rt_open(keep_opened, NULL);
	if (err) {
		kprintf("keep: the store could not be opened (%d): TLS and ACME state in memory only\n", err);
		tls_gen_keep.save = NULL;
		tls_gen_keep.load = NULL;
		work_init(&keep.w, keep_then, NULL);
		work_queue(&keep.w);
	}
}

static void keep_boot_done(void)
{
	tls_gen_keep.load = NULL;
	for (unsigned i = 0; i < KR_N; i++) {
		if (keep.val[i]) {
			keep_wipe(keep.val[i], keep.len[i]);
			kfree(keep.val[i]);
		}
		keep.val[i] = NULL;
		keep.ok[i] = false;
	}
}

/* ---- the generated pair ---- */

/* tls.h's load(): the kept pair, if it is for names, the key is the
 * certificate's and a day or more is left. */
static int keep_gen_load(struct tls_keys *k, const char *names)
{
	struct keep_field *f = keep.f[KR_GEN];
	struct tls_cert_info info;
	char err[160], desc[32];
	const char *why = err;
	u64 now;

	if (!keep.ok[KR_GEN])
		return -1;
	if (!keep_str_is(&f[0], names))
		why = "made for other tls.names=";
	else if (tls_keys_load(k, f[1].p, f[1].len, f[2].p, f[2].len, keep_rng, NULL, err, sizeof err) != 0)
		;	/* err says why */
	else if (tls_cert_describe(&k->chain, &info), keep_now(&now) && info.not_after < now + 86400) {
		tls_keys_free(k);
		why = "it ends within a day";
	} else {
		struct civil_time c;

		wallclock_civil(info.not_after, &c);
		kprintf("tls: %s key and self-signed certificate kept on the store from an earlier boot (names %s; "
			"not after %04u-%02u-%02uT%02u:%02u:%02uZ; browsers will warn)\n",
			tls_keys_describe(k, desc, sizeof desc), info.names, (unsigned)c.year, (unsigned)c.month,
			(unsigned)c.day, (unsigned)c.hour, (unsigned)c.min, (unsigned)c.sec);
		tls_gen_keep.store = true;
		return 0;
	}
	kprintf("tls: the generated certificate kept on the store is not used (%s): a new one replaces it\n", why);
	return -1;
}

static void keep_gen_save(const struct tls_keys *k, const char *names)
{
	u8 buf[KEEP_KEY_DER_MAX];
	const u8 *der;
	int n;

	if (!keep.store) {
		kprintf("tls: warning: no store: the generated key is kept in memory only; a new key and "
			"certificate at every boot\n");
		return;
	}
	tls_gen_keep.store = keep.writable;	/* `cert` says whether this one is kept */
	n = k ? keep_key_der(&k->key, buf, sizeof buf, &der) : -1;
	if (n < 0) {
		kprintf("keep: tls.gen: the key could not be written: not kept\n");
		return;
	}
	keep_put(KR_GEN, (struct keep_field[]){ { names, strlen(names) },
						{ k->chain.raw.p, k->chain.raw.len },
						{ der, (size_t)n } });
	keep_wipe(buf, sizeof buf);
}

/* ---- ACME ---- */

static bool keep_account(const char *dir, mbedtls_pk_context *key, char *url, size_t cap)
{
	struct keep_field *f = keep.f[KR_ACCOUNT];

	if (!keep.ok[KR_ACCOUNT])
		return false;
	if (!keep_str_is(&f[0], dir)) {
		kprintf("keep: acme.account is for another directory: a new account replaces it\n");
		return false;
	}
	if (f[2].len >= cap) {
		keep_refused(KR_ACCOUNT, "an account URL too long");
		return false;
	}
	mbedtls_pk_init(key);
	if (mbedtls_pk_parse_key(key, f[1].p, f[1].len, NULL, 0, keep_rng, NULL) != 0 ||
	    mbedtls_pk_get_type(key) != MBEDTLS_PK_ECKEY) {
		mbedtls_pk_free(key);
		keep_refused(KR_ACCOUNT, "not a P-256 key");
		return false;
	}
	memcpy(url, f[2].p, f[2].len);
	url[f[2].len] = '\0';
	return true;
}

static void keep_account_keep(const char *dir, const mbedtls_pk_context *key, const char *url)
{
	u8 buf[KEEP_KEY_DER_MAX];
	const u8 *der;
	int n = keep_key_der(key, buf, sizeof buf, &der);

	if (n < 0) {
		kprintf("keep: acme.account: the key could not be written: not kept\n");
		return;
	}
	keep_put(KR_ACCOUNT, (struct keep_field[]){ { dir, strlen(dir) }, { der, (size_t)n }, { url, strlen(url) } });
	keep_wipe(buf, sizeof buf);
}

static void keep_state_get(const char *dir, struct acme_kept_state *st)
{
	struct keep_field *f = keep.f[KR_STATE];

	memset(st, 0, sizeof *st);
	if (!keep.ok[KR_STATE] || !keep_str_is(&f[0], dir))
		return;
	if (!keep_u64_get(&f[1], &st->failures) || !keep_u64_get(&f[2], &st->next_at) ||
	    !keep_u64_get(&f[3], &st->attempt_at) || st->failures > 64) {
		memset(st, 0, sizeof *st);
		keep_refused(KR_STATE, "numbers that do not read");
	}
}

/* The kept certificate for dir and names into k: 0, or -1 (said why). */
static int keep_cert(const char *dir, const char *names, struct tls_keys *k, const struct acme_kept_state *st,
		     bool *stale_state)
{
	struct keep_field *f = keep.f[KR_CERT];
	struct tls_cert_info info;
	char err[160];
	u64 issued_at, now;

	if (!keep.ok[KR_CERT])
		return -1;
	if (!keep_str_is(&f[0], dir) || !keep_str_is(&f[1], names)) {
		kprintf("keep: acme.cert is for another directory or other names: ordering a new one\n");
		return -1;
	}
	if (!keep_u64_get(&f[4], &issued_at)) {
		keep_refused(KR_CERT, "an issue time that does not read");
		return -1;
	}
	if (tls_keys_load(k, f[2].p, f[2].len, f[3].p, f[3].len, keep_rng, NULL, err, sizeof err) != 0) {
		keep_refused(KR_CERT, err);
		return -1;
	}
	tls_cert_describe(&k->chain, &info);
	if (keep_now(&now) && info.not_after < now + 60) {
		tls_keys_free(k);
		kprintf("keep: acme.cert has ended: ordering a new one\n");
		return -1;
	}
	/* the kept state's attempt started before this certificate was
	 * issued: it is over (the crash fell between the two writes) */
	*stale_state = st->attempt_at && issued_at && st->attempt_at < issued_at;
	return 0;
}

/* url is on dir's origin (https://host[:port]) and one the client takes. */
static bool keep_url_on(const struct keep_field *f, const char *dir, char *out, size_t cap)
{
	size_t o = 8;

	while (dir[o] && dir[o] != '/')
		o++;
	if (f->len >= cap || f->len <= o || memcmp(f->p, dir, o) != 0 || ((const char *)f->p)[o] != '/')
		return false;
	memcpy(out, f->p, f->len);
	out[f->len] = '\0';
	return acme_url_ok(out, f->len);
}

/* acme.ari for the certificate r serves (its identifier just computed). */
static void keep_ari_get(struct acme_resume *r)
{
	struct keep_field *f = keep.f[KR_ARI];

	if (!keep.ok[KR_ARI] || !r->ari_id[0] || !keep_str_is(&f[0], r->directory))
		return;
	if (!keep_str_is(&f[1], r->ari_id))
		return;	/* an earlier certificate's: this one asks afresh */
	if (!keep_url_on(&f[2], r->directory, r->ari_url, sizeof r->ari_url) || !keep_u64_get(&f[3], &r->ari_start) ||
	    !keep_u64_get(&f[4], &r->ari_end) || !keep_u64_get(&f[5], &r->ari_next) ||
	    !keep_u64_get(&f[6], &r->renew_at) || r->ari_end < r->ari_start) {
		keep_refused(KR_ARI, "a URL or numbers that do not read");
		return;
	}
	r->ari_kept = true;
}

/* acme.order: an order to take up, its key into r->order_key. */
static void keep_order_get(struct acme_resume *r)
{
	struct keep_field *f = keep.f[KR_ORDER];
	mbedtls_pk_context *key = r->order_key;

	if (!keep.ok[KR_ORDER] || f[2].len == 0)
		return;	/* none, or emptied at the last issue */
	if (!keep_str_is(&f[0], r->directory) || !keep_str_is(&f[1], r->names)) {
		kprintf("keep: acme.order is for another directory or other names: not taken up\n");
		return;
	}
	if (!keep_url_on(&f[2], r->directory, r->order, sizeof r->order)) {
		r->order[0] = '\0';
		keep_refused(KR_ORDER, "not an order URL on the directory's host");
		return;
	}
	mbedtls_pk_init(key);
	if (mbedtls_pk_parse_key(key, f[3].p, f[3].len, NULL, 0, keep_rng, NULL) != 0 ||
	    mbedtls_pk_get_type(key) != MBEDTLS_PK_ECKEY) {
		mbedtls_pk_free(key);
		r->order[0] = '\0';
		keep_refused(KR_ORDER, "not a P-256 key");
		return;
	}
	kprintf("acme: an order cut short by a restart is kept on the store: taking it up (no new order)\n");
}

static void keep_resume(struct acme_resume *r)
{
	struct acme_kept_state st;
	struct tls_keys k;
	bool stale = false;
	u64 now;

	keep_state_get(r->directory, &st);
	if (keep_cert(r->directory, r->names, &k, &st, &stale) == 0) {
		struct tls_cert_info info;

		/* RFC 9773's identifier from the certificate itself: its AKI
		 * and serial (before the install takes k) */
		if (acme_ari_cert_id(&k.chain, r->ari_id, sizeof r->ari_id) != 0)
			r->ari_id[0] = '\0';
		tls_cert_describe(&k.chain, &info);
		if (https_cert_install(&k, "acme") == 0) {
			r->have = true;
			r->not_before = info.not_before;
			r->not_after = info.not_after;
			kprintf("acme: certificate for %u name%s kept on the store (not after %lu); serving it, no new "
				"order\n", r->n_names, r->n_names == 1 ? "" : "s", (unsigned long)info.not_after);
		} else {
			tls_keys_free(&k);
			r->ari_id[0] = '\0';
		}
	}
	if (r->have)
		keep_ari_get(r);
	keep_order_get(r);
	if (stale)
		memset(&st, 0, sizeof st);
	r->failures = (unsigned)st.failures;
	if (st.failures) {
		if (keep_now(&now))
			r->wait_s = st.next_at > now ? st.next_at - now : 0;
		else
			r->wait_s = acme_backoff_s(r->failures, 0, random_u64());
		/* an order cut short once is taken up at once; cut short
		 * again (a boot that crashes or is killed while taking it
		 * up: failures 2 and more in a row), it waits the backoff
		 * the cut attempt kept (acme_backoff_s(): doubling to 6 h),
		 * so a crash loop never asks the CA at each reboot */
		if (r->order[0] && r->failures < ACME_RESUME_AT_ONCE_MAX + 1)
			r->wait_s = 0;
		if (r->wait_s)
			kprintf("acme: an earlier boot's attempt failed or was cut short (%u in a row): next attempt in "
				"%lu s%s\n", r->failures, (unsigned long)r->wait_s,
				r->order[0] ? " (the kept order taken up then)" : "");
	}
	keep_boot_done();
}

static void keep_issued(const char *dir, const char *names, const char *chain, size_t chain_len, const u8 *key,
			size_t key_len)
{
	u8 at[8];
	u64 now = 0;

	keep_now(&now);
	keep_u64_put(at, now);
	keep_put(KR_CERT, (struct keep_field[]){ { dir, strlen(dir) }, { names, strlen(names) }, { chain, chain_len },
						 { key, key_len }, { at, 8 } });
}

static void keep_state(const char *dir, const struct acme_kept_state *st)
{
	u8 n[3][8];

	keep_u64_put(n[0], st->failures);
	keep_u64_put(n[1], st->next_at);
	keep_u64_put(n[2], st->attempt_at);
	keep_put(KR_STATE, (struct keep_field[]){ { dir, strlen(dir) }, { n[0], 8 }, { n[1], 8 }, { n[2], 8 } });
}

static void keep_order(const char *dir, const char *names, const char *url, const mbedtls_pk_context *key,
		       void (*then)(void))
{
	u8 buf[KEEP_KEY_DER_MAX];
	const u8 *der = buf;
	bool put = false;
	int n = 0;

	keep.order_then = then;
	if (key && (n = keep_key_der(key, buf, sizeof buf, &der)) < 0)
		kprintf("keep: acme.order: the key could not be written: not kept\n");
	else
		put = keep_put(KR_ORDER, (struct keep_field[]){ { dir, strlen(dir) }, { names, strlen(names) },
								{ url, strlen(url) }, { der, (size_t)n } });
	keep_wipe(buf, sizeof buf);
	if (!put && keep.order_then) {	/* never asked: on at once */
		keep.order_then = NULL;
		then();
	}
}

static void keep_ari(const char *dir, const struct acme_kept_ari *a)
{
	u8 n[4][8];

	keep_u64_put(n[0], a->start);
	keep_u64_put(n[1], a->end);
	keep_u64_put(n[2], a->next);
	keep_u64_put(n[3], a->renew_at);
	keep_put(KR_ARI, (struct keep_field[]){ { dir, strlen(dir) }, { a->id, strlen(a->id) }, { a->url, strlen(a->url) },
						{ n[0], 8 }, { n[1], 8 }, { n[2], 8 }, { n[3], 8 } });
}

static const struct acme_keep keep_store = {
	.boot = keep_boot,
	.boot_done = keep_boot_done,
	.account = keep_account,
	.account_keep = keep_account_keep,
	.resume = keep_resume,
	.issued = keep_issued,
	.state = keep_state,
	.order = keep_order,
	.ari = keep_ari,
};
ACME_KEEP(keep_store);

#endif
