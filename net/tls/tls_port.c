/* mbedTLS's platform for vireo: calloc/free over the TLS heap, randomness
 * from the kernel CSPRNG, and start-up (tls.h). */
#include "net/tls/tls.h"

#include "kernel/boot_info.h"
#include "kernel/console.h"
#include "kernel/mm/heap.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "kernel/shell.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lib/string.h"
#include "lib/metrics.h"
#include "mbedtls/platform_time.h"
#include "mbedtls/platform_util.h"
#include "mbedtls/ssl.h"
#include "psa/crypto.h"
#include "net/tls/tls_cert.h"
#include "net/tls/tls_held.h"
#include "net/tls/tls_keys.h"
#include "net/port/netmem.h"
#include "net/tls/tlsmem.h"

_Static_assert(TLSMEM_PAGE == PAGE_SIZE, "tlsmem.h plans in the page allocator's pages");

static struct heap tls_heap;
static bool tls_heap_up, tls_ok;
static struct tls_keys tls_keys;	/* loaded at boot, then moved into a served slot */
static struct boot_info *tls_bi;	/* the ESP's cert.pem and key.pem, if boot/ read them */
static bool tls_crypto_up;		/* the heap and PSA: TLS clients can run */
static mbedtls_x509_crt tls_ca;		/* the clients' trust anchors */
static int tls_ca_count;		/* certificates in tls_ca; 0: none, every client refused */

_Static_assert(BOOT_TLS_FILE_MAX == TLS_KEYS_MAX_INPUT, "boot/ reads what tls_keys_load() accepts");
_Static_assert(BOOT_TLS_CA_MAX == TLS_CA_MAX_INPUT, "boot/ reads what tls_ca_load() accepts");

void *vireo_tls_calloc(size_t n, size_t size)
{
	void *p;

	if (!tls_heap_up || (size != 0 && n > (size_t)-1 / size))
		return NULL;
	p = heap_alloc(&tls_heap, n * size, 16);
	if (p)
		memset(p, 0, n * size);
	return p;
}

void vireo_tls_free(void *p)
{
	heap_free(&tls_heap, p);
}

/* Record-buffer slots (net/tls/patches/0005; tlsmem.buf_slots, TLS_BUF_SLOTS
 * at the floor, one more per 8 HTTPS connections above it): how
 * many server connections hold their record buffers now, the most at once,
 * and the wakes that found none free (those wait: the read or write is
 * tried again from the next segment or poll). */
static u32 tls_slots_used, tls_slots_peak;
static u64 tls_slots_refused;

int mbedtls_ssl_idle_slot_take(void)
{
	if (tls_slots_used >= tlsmem.buf_slots) {
		tls_slots_refused++;
		return -1;
	}
	if (++tls_slots_used > tls_slots_peak)
		tls_slots_peak = tls_slots_used;
	return 0;
}

void mbedtls_ssl_idle_slot_give(void)
{
	if (tls_slots_used)
		tls_slots_used--;
}

/* mbedTLS's f_rng for everything that takes one (lwIP's altcp_tls through
 * ALTCP_MBEDTLS_RNG_DIRECT, net/port/patches/0008; the certificates and keys
 * made here): the kernel CSPRNG, with no DRBG of mbedTLS's on top. */
int vireo_tls_rng(void *ctx, unsigned char *out, size_t len)
{
	random_bytes(out, len);
	return 0;
}

/* MBEDTLS_PSA_CRYPTO_EXTERNAL_RNG: PSA's random bytes. */
psa_status_t mbedtls_psa_external_get_random(mbedtls_psa_external_random_context_t *ctx,
					     uint8_t *out, size_t size, size_t *olen)
{
	random_bytes(out, size);
	*olen = size;
	return PSA_SUCCESS;
}

/* MBEDTLS_PLATFORM_TIME_MACRO: the best wall clock (SNTP's, else the
 * firmware's provisional one), -1 while there is none, which
 * mbedtls_platform_gmtime_r() (tls_time.c) refuses: every certificate
 * then fails verification. */
long vireo_tls_time(long *t)
{
	u64 ns = 0;
	long s = wallclock_best(&ns) == WALLCLOCK_NONE ? -1 : (long)(ns / NSEC_PER_SEC);

	if (t)
		*t = s;
	return s;
}

/* MBEDTLS_PLATFORM_MS_TIME_ALT: ages (session tickets) on the monotonic clock. */
mbedtls_ms_time_t mbedtls_ms_time(void)
{
	return (mbedtls_ms_time_t)(time_ns() / 1000000);
}

/* The certificate served (tls.h): the one new handshakes get, in one of
 * TLS_SERVED_SLOTS slots; the others hold replaced ones that handshakes
 * begun before the switch still use (tls_held.h). Where it came from, what
 * the console and /metrics say about it, and whether it is CA-issued (for
 * https.hsts=) go with it. */
static struct tls_held tls_served_slot[TLS_SERVED_SLOTS];
static struct tls_held_pool tls_served_pool = { tls_served_slot, TLS_SERVED_SLOTS };
static struct tls_held *tls_served;
static const char *const tls_sources[] = { "esp", "built-in", "generated", "acme" };
static const char *tls_source = "none";
static bool tls_served_ca;
static u64 tls_installs;		/* certificates installed after boot's */
static struct tls_cert_info tls_info;	/* of the leaf served, once tls_ok */
static struct tls_names tls_gen_names;	/* the generated certificate's names (2 KiB: not on the stack) */

/* The best wall clock in seconds (the firmware's until SNTP sets it). */
static bool tls_now_s(u64 *now)
{
	u64 ns;

	if (wallclock_best(&ns) == WALLCLOCK_NONE)
		return false;
	*now = ns / NSEC_PER_SEC;
	return true;
}

/* "2027-03-06T21:00:00Z", or "?" for a date the certificate's encoding
 * could not give (tls_cert_describe()'s 0). */
static const char *tls_date(u64 unix_s, char *buf, size_t size)
{
	struct civil_time c;

	if (!unix_s) {
		ksnprintf(buf, size, "?");
		return buf;
	}
	wallclock_civil(unix_s, &c);
	ksnprintf(buf, size, "%04u-%02u-%02uT%02u:%02u:%02uZ", (unsigned)c.year, (unsigned)c.month,
		  (unsigned)c.day, (unsigned)c.hour, (unsigned)c.min, (unsigned)c.sec);
	return buf;
}

/* vireo_tls_cert_expiry_seconds (only with a clock: a gauge an alert can
 * compare with a threshold) and vireo_tls_cert_info{source,names} 1. */
static void tls_cert_metrics(struct metrics_buf *b)
{
	char labels[48 + TLS_CERT_NAMES_TEXT];
	u64 now;

	metrics_family(b, "vireo_tls_cert_expiry_seconds", METRICS_GAUGE,
		       "Seconds from now (the best wall clock) to the served certificate's notAfter");
	if (tls_now_s(&now) && tls_info.not_after)
		metrics_sample_s64(b, "vireo_tls_cert_expiry_seconds", NULL,
				   (s64)tls_info.not_after - (s64)now);
	metrics_family(b, "vireo_tls_cert_info", METRICS_GAUGE,
		       "The served certificate: where it came from and its DNS and IP names");
	/* tls_cert_describe() left no quote, backslash or newline in names. */
	ksnprintf(labels, sizeof(labels), "source=\"%s\",names=\"%s\"", tls_source, tls_info.names);
	metrics_sample(b, "vireo_tls_cert_info", labels, 1);
	metrics_simple(b, "vireo_tls_cert_installs_total", METRICS_COUNTER,
		       "Certificates switched to while running (ACME, cert regen)", tls_installs);
	metrics_simple(b, "vireo_tls_certs_held", METRICS_GAUGE,
		       "Served certificates held: the current one and replaced ones handshakes still use",
		       tls_held_in_use(&tls_served_pool));
}

/* /metrics: the TLS heap and whether TLS could be offered. */
static bool tls_started;	/* tls_start() ran: /metrics has the TLS heap */

static void tls_metrics(struct metrics_buf *b)
{
	if (!tls_started)
		return;
	metrics_simple(b, "vireo_tls_ready", METRICS_GAUGE,
		       "1 when the certificate and key loaded and TLS can be offered", tls_ok);
	metrics_simple(b, "vireo_tls_heap_arena_bytes", METRICS_GAUGE, "TLS heap size (sized from memory at boot, net/tls/tlsmem.h)",
		       tls_heap.arena_bytes);
	metrics_simple(b, "vireo_tls_heap_in_use_bytes", METRICS_GAUGE, "TLS heap bytes allocated now",
		       tls_heap.in_use);
	metrics_simple(b, "vireo_tls_heap_peak_bytes", METRICS_GAUGE, "TLS heap bytes allocated at most",
		       tls_heap.peak);
	metrics_simple(b, "vireo_tls_heap_alloc_failures_total", METRICS_COUNTER,
		       "TLS allocations refused: the heap was full", tls_heap.failures);
	metrics_simple(b, "vireo_tls_buffer_slots_in_use", METRICS_GAUGE,
		       "HTTPS connections holding their record buffers now (at most the plan's slots; idle ones hold none)",
		       tls_slots_used);
	metrics_simple(b, "vireo_tls_buffer_slots_peak", METRICS_GAUGE,
		       "HTTPS connections holding their record buffers at most at once", tls_slots_peak);
	metrics_simple(b, "vireo_tls_buffer_slot_waits_total", METRICS_COUNTER,
		       "HTTPS reads, writes or setups that found every record-buffer slot taken", tls_slots_refused);
	if (!tls_ok)
		return;
	tls_cert_metrics(b);
}

METRICS_SOURCE(tls, tls_metrics);

static int tls_regen(void);

/* `cert`: the certificate served, never its key; `cert regen`: a new
 * generated one, served from the next handshake on. */
static void tls_cert_cmd(const char *args)
{
	char from[32], to[32];
	u64 now;
	bool clock;

	while (*args == ' ')
		args++;
	if (args[0] && strcmp(args, "regen") == 0) {
		tls_regen();
		return;
	}
	if (args[0]) {
		if (tls_cert_cmd_more)
			tls_cert_cmd_more(args);
		else
			kprintf("cert: usage: cert [regen]\n");
		return;
	}
	if (!tls_ok) {
		kprintf("cert: no certificate served (HTTPS off)\n");
		return;
	}
	clock = tls_now_s(&now);
	tls_date(tls_info.not_before, from, sizeof(from));
	tls_date(tls_info.not_after, to, sizeof(to));
	kprintf("source:     %s%s\n", tls_source,
		strcmp(tls_source, "generated") ? "" : tls_gen_keep.store ? " (kept on the store)" :
		tls_installs ? " (no store: kept in memory only)" : " (at boot; no store: kept in memory only)");
	kprintf("names:      %s\n", tls_info.names[0] ? tls_info.names : "(no DNS or IP SANs)");
	kprintf("not before: %s\n", from);
	if (clock && tls_info.not_after && tls_info.not_after >= now)
		kprintf("not after:  %s (in %lu d %lu h)\n", to, (unsigned long)((tls_info.not_after - now) / 86400),
			(unsigned long)((tls_info.not_after - now) % 86400 / 3600));
	else if (clock && tls_info.not_after)
		kprintf("not after:  %s (EXPIRED)\n", to);
	else
		kprintf("not after:  %s\n", to);
	kprintf("sha256:     ");
	for (int i = 0; i < 32; i++)
		kprintf(i < 31 ? "%02X:" : "%02X\n", tls_info.sha256[i]);
	kprintf("issuer:     %s\n", tls_served_ca ? "a CA (not self-signed)" : "self-signed");
	if (tls_cert_cmd_more)
		tls_cert_cmd_more("");
}
void (*tls_cert_cmd_more)(const char *args);
SHELL_CMD(cert, .name = "cert", .fn = tls_cert_cmd, .usage = "[regen|renew|ari]",
	  .help = "the HTTPS certificate served: source, names, validity, SHA-256 fingerprint, ACME's state; "
		  "regen: serve a newly generated self-signed one; renew: order one from acme.directory= now; "
		  "ari: ask the CA's renewal information now");

void tls_boot_files(struct boot_info *bi)
{
	tls_bi = bi;
}

static bool tls_file_there(const struct boot_file *f)
{
	return f->state != BOOT_FILE_NONE && f->state != BOOT_FILE_ABSENT;
}

/* A file boot/ found but could not hand over: says why, false. */
static bool tls_file_ok(const struct boot_file *f, const char *path)
{
	switch (f->state) {
	case BOOT_FILE_OK:
		if (f->base && f->len <= BOOT_TLS_FILE_MAX)
			return true;
		kprintf("tls: %s: %lu bytes at %#lx, not usable; HTTPS off, HTTP unaffected\n", path,
			(unsigned long)f->len, (unsigned long)f->base);
		return false;
	case BOOT_FILE_NONE:
	case BOOT_FILE_ABSENT:
		kprintf("tls: %s: missing (give both " BOOT_TLS_CERT_PATH " and " BOOT_TLS_KEY_PATH
			", or neither); HTTPS off, HTTP unaffected\n", path);
		return false;
	case BOOT_FILE_TOO_BIG:
		kprintf("tls: %s: larger than %u bytes, refused; HTTPS off, HTTP unaffected\n", path,
			BOOT_TLS_FILE_MAX);
		return false;
	default:
		kprintf("tls: %s: could not be read (EFI status %#lx); HTTPS off, HTTP unaffected\n", path,
			(unsigned long)f->status);
		return false;
	}
}

/* The ESP's pair when boot/ found either file (then it is that pair or no
 * HTTPS: a broken key on the ESP must not silently fall back to the built-in
 * or a generated one), else the pair given to make, else one generated now.
 * Logs what it loaded, or why not. */

/* ---- the generated pair kept on the store (tls.h's tls_gen_keep) ---- */
struct tls_gen_keep tls_gen_keep;
static const char *tls_gen_list = "";	/* the tls.names= the generated pair is for */

/* The pair an earlier boot generated, when the store has one that fits
 * (the keeper says so). */
static bool tls_gen_kept(void)
{
	if (!tls_gen_keep.load || tls_gen_keep.load(&tls_keys, tls_gen_list) != 0)
		return false;
	tls_source = "generated";
	tls_cert_describe(&tls_keys.chain, &tls_info);
	return true;
}

/* No certificate from the ESP or from make: a key and a certificate made
 * now (tls_cert.h), for tls.names= or the default names. */
static int tls_generate(const char *list)
{
	struct tls_names *names = &tls_gen_names;
	char err[160], desc[32], to[32];
	u64 now = 0, nb, na, t0;
	bool clock = tls_now_s(&now);

	/* A bad list is refused whole and said so; the default names stand. */
	if (!list || !list[0]) {
		tls_names_default(names);
	} else if (tls_names_parse(list, names, err, sizeof(err)) != 0) {
		kprintf("tls: warning: tls.names=%s: %s; the default names instead\n", list, err);
		tls_names_default(names);
	}
	tls_gen_list = list ? list : "";
	if (tls_gen_kept())
		return 0;
	tls_cert_validity(clock, now, &nb, &na);
	t0 = time_ns();
	if (tls_cert_generate(&tls_keys, names, nb, na, vireo_tls_rng, NULL, err, sizeof(err)) != 0) {
		kprintf("tls: %s; HTTPS off, HTTP unaffected\n", err);
		return -1;
	}
	tls_source = "generated";
	tls_cert_describe(&tls_keys.chain, &tls_info);
	kprintf("tls: %s key and self-signed certificate generated at boot in %lu ms (names %s; not after %s%s; "
		"browsers will warn)\n", tls_keys_describe(&tls_keys, desc, sizeof(desc)),
		(unsigned long)((time_ns() - t0) / 1000000), tls_info.names, tls_date(na, to, sizeof(to)),
		clock ? "" : ", no clock: a fixed window");
	if (tls_gen_keep.save)
		tls_gen_keep.save(&tls_keys, tls_gen_list);
	else
		kprintf("tls: warning: no store: the generated key is kept in memory only; a new key and "
			"certificate at every boot\n");
	return 0;
}

static int tls_load_keys(const char *names)
{
	struct boot_file *fc, *fk;
	char err[160], desc[32];
	int ret = -1, blame;
	bool tried = false, cert_ok, key_ok;

	if (!tls_bi || (!tls_file_there(&tls_bi->files[BOOT_FILE_TLS_CERT]) &&
			!tls_file_there(&tls_bi->files[BOOT_FILE_TLS_KEY]))) {
		if (!tls_builtin_cert_len)
			return tls_generate(names);
		if (tls_keys_load(&tls_keys, tls_builtin_cert, tls_builtin_cert_len, tls_builtin_key,
				  tls_builtin_key_len, vireo_tls_rng, NULL, err, sizeof(err)) != 0) {
			kprintf("tls: %s; HTTPS off, HTTP unaffected\n", err);
			return -1;
		}
		tls_source = "built-in";
		kprintf("tls: %s key, built-in certificate (given to make)\n",
			tls_keys_describe(&tls_keys, desc, sizeof(desc)));
		return 0;
	}
	fc = &tls_bi->files[BOOT_FILE_TLS_CERT];
	fk = &tls_bi->files[BOOT_FILE_TLS_KEY];
	cert_ok = tls_file_ok(fc, BOOT_TLS_CERT_PATH);	/* each says what is wrong with it */
	key_ok = tls_file_ok(fk, BOOT_TLS_KEY_PATH);
	if (cert_ok && key_ok) {
		tried = true;
		ret = tls_keys_load(&tls_keys, (const unsigned char *)(uintptr_t)fc->base, fc->len,
				    (const unsigned char *)(uintptr_t)fk->base, fk->len, vireo_tls_rng, NULL, err,
				    sizeof(err));
	}
	/* The key is parsed into the TLS heap (or refused): its file's bytes
	 * need not stay in memory. */
	if (fk->state == BOOT_FILE_OK && fk->base && fk->len <= BOOT_TLS_FILE_MAX)
		mbedtls_platform_zeroize((void *)(uintptr_t)fk->base, fk->len);
	fk->len = 0;
	if (ret != 0) {
		if (tried) {
			blame = tls_keys_blame(err);
			kprintf("tls: %s: %s; HTTPS off, HTTP unaffected\n",
				blame == TLS_KEYS_BLAME_CERT ? BOOT_TLS_CERT_PATH :
				blame == TLS_KEYS_BLAME_KEY ? BOOT_TLS_KEY_PATH :
				BOOT_TLS_KEY_PATH " and " BOOT_TLS_CERT_PATH, err);
		}
		return -1;
	}
	tls_source = "esp";
	kprintf("tls: %s key, certificate from the ESP (" BOOT_TLS_CERT_PATH ", " BOOT_TLS_KEY_PATH ")%s\n",
		tls_keys_describe(&tls_keys, desc, sizeof(desc)),
		tls_builtin_cert_len ? ", preferred over the built-in one" : "");
	return 0;
}

/* The clients' CA bundle: the ESP's EFI/vireo/tls/ca.pem when boot/ found
 * one (that or none: a bad bundle on the ESP does not fall back to the
 * built-in one), else the built-in one (make TLS_CA=), else none. Logs
 * which, and how many certificates. */
static void tls_load_ca(void)
{
	struct boot_file *f = tls_bi ? &tls_bi->files[BOOT_FILE_TLS_CA] : NULL;
	const unsigned char *p = tls_builtin_ca;
	size_t len = tls_builtin_ca_len;
	const char *from = "built in (make TLS_CA=)";
	size_t before = tls_heap.in_use;
	char err[96];
	int n;

	if (f && tls_file_there(f)) {
		if (f->state != BOOT_FILE_OK || !f->base || f->len > BOOT_TLS_CA_MAX) {
			kprintf("tls: " BOOT_TLS_CA_PATH ": %s; TLS clients refuse every server (no CA)\n",
				f->state == BOOT_FILE_TOO_BIG ? "larger than 256 KiB, refused" : "could not be read");
			return;
		}
		p = (const unsigned char *)(uintptr_t)f->base;
		len = f->len;
		from = "from the ESP (" BOOT_TLS_CA_PATH ")";
	} else if (!len) {
		kprintf("tls: no CA bundle (neither " BOOT_TLS_CA_PATH " nor make TLS_CA=): TLS clients refuse "
			"every server\n");
		return;
	}
	n = tls_ca_load(&tls_ca, p, len, err, sizeof err);
	if (n > 0 && tls_heap.in_use - before > TLS_CA_HEAP_BYTES) {
		mbedtls_x509_crt_free(&tls_ca);
		ksnprintf(err, sizeof err, "CA bundle: needs %lu bytes of the TLS heap, more than %u",
			  (unsigned long)(tls_heap.in_use - before), TLS_CA_HEAP_BYTES);
		n = -1;
	}
	if (n < 0) {
		kprintf("tls: %s %s; TLS clients refuse every server (no CA)\n", err, from);
		return;
	}
	tls_ca_count = n;
	kprintf("tls: TLS clients trust %s %s (%lu bytes of the TLS heap)\n", err, from,
		(unsigned long)(tls_heap.in_use - before));
}

mbedtls_x509_crt *tls_client_ca(void)
{
	return tls_ca_count ? &tls_ca : NULL;
}

bool tls_client_ready(void)
{
	return tls_crypto_up;
}

int tls_start(const char *names)
{
	void *arena;

	tls_started = true;
	if (!tls_heap_up) {
		struct mm_stats ms;
		u64 plan_for;

		/* The heap is one run of pages: planned for a quarter less RAM
		 * at a time while the frame allocator has no run that long
		 * (tlsmem.h). Not zeroed: the heap writes its block headers and
		 * vireo_tls_calloc() zeroes what it hands out. */
		mm_get_stats(&ms);
		/* the RAM lwIP's heap was planned for (it holds the lwIP part
		 * of this plan: vireo_lwip_init()), never more */
		plan_for = netmem.usable && netmem.usable < ms.usable_bytes ? netmem.usable : ms.usable_bytes;
		do {
			tlsmem_plan(plan_for, &tlsmem);
			arena = page_alloc_raw(tlsmem.heap_bytes / PAGE_SIZE);
		} while (!arena && (plan_for = tlsmem_smaller(plan_for)) != 0);
		if (!arena) {
			kprintf("tls: no %lu KiB for the TLS heap; HTTPS off\n", (unsigned long)(tlsmem.heap_bytes >> 10));
			return -1;
		}
		kprintf("tls: %lu MiB usable: %u HTTPS connections, TLS heap %lu KiB, %u with record buffers at once "
			"(net/tls/tlsmem.h)\n",
			(unsigned long)(ms.usable_bytes >> 20), tlsmem.https_conns,
			(unsigned long)(tlsmem.heap_bytes >> 10), tlsmem.buf_slots);
		heap_init(&tls_heap);
		heap_add_arena(&tls_heap, arena, tlsmem.heap_bytes);
		tls_heap_up = true;
	}
	if (psa_crypto_init() != PSA_SUCCESS) {
		kprintf("tls: PSA crypto did not initialize; HTTPS off\n");
		return -1;
	}
	tls_crypto_up = true;
	tls_load_ca();
	if (tls_load_keys(names) != 0)
		return -1;
	if (strcmp(tls_source, "generated") != 0) {
		char err[160];

		/* The names a later `cert regen` generates for. */
		if (!names || !names[0] || tls_names_parse(names, &tls_gen_names, err, sizeof(err)) != 0)
			tls_names_default(&tls_gen_names);
		tls_cert_describe(&tls_keys.chain, &tls_info);
	}
	tls_served_ca = tls_keys_ca_issued(&tls_keys);
	tls_served = tls_held_take(&tls_served_pool, &tls_keys);
	tls_ok = true;
	return 0;
}

int tls_served_install(struct tls_keys *k, const char *source)
{
	struct tls_held *h, *old = tls_served;
	const char *src = NULL;
	char desc[32], to[32];
	size_t bytes;

	for (size_t i = 0; i < ARRAY_SIZE(tls_sources); i++)
		if (source && !strcmp(source, tls_sources[i]))
			src = tls_sources[i];
	if (!src || !k || !k->loaded || !k->chain.raw.p)
		return -EINVAL;
	if (!tls_ok)
		return -ENODEV;
	bytes = tls_keys_heap_bytes(k);
	if (bytes > TLS_SERVED_BYTES_MAX) {
		kprintf("tls: a %s certificate and key of about %lu bytes refused: more than the %u a served one may "
			"hold of the TLS heap\n", src, (unsigned long)bytes, TLS_SERVED_BYTES_MAX);
		return -E2BIG;
	}
	h = tls_held_take(&tls_served_pool, k);
	if (!h) {
		kprintf("tls: a %s certificate refused: %u replaced ones are still in handshakes; try again\n", src,
			TLS_SERVED_SLOTS - 1);
		return -EBUSY;
	}
	tls_served = h;
	tls_source = src;
	tls_served_ca = tls_keys_ca_issued(&h->keys);
	tls_cert_describe(&h->keys.chain, &tls_info);
	tls_installs++;
	if (old)
		tls_held_retire(old);
	kprintf("tls: serving a new certificate: %s, %s key, names %s, not after %s, sha256 %02X:%02X:%02X:%02X...\n",
		src, tls_keys_describe(&h->keys, desc, sizeof(desc)), tls_info.names,
		tls_date(tls_info.not_after, to, sizeof(to)), tls_info.sha256[0], tls_info.sha256[1],
		tls_info.sha256[2], tls_info.sha256[3]);
	return 0;
}

/* `cert regen`: a new key and self-signed certificate for the names the
 * boot's was made for (or would have been: tls.names=, else the default
 * ones), served from the next handshake on. */
static int tls_regen(void)
{
	struct tls_keys k;
	char err[160];
	u64 now = 0, nb, na, t0 = time_ns();
	bool clock;
	int ret;

	if (!tls_ok) {
		kprintf("cert: no certificate served (HTTPS off)\n");
		return -ENODEV;
	}
	clock = tls_now_s(&now);
	tls_cert_validity(clock, now, &nb, &na);
	if (tls_cert_generate(&k, &tls_gen_names, nb, na, vireo_tls_rng, NULL, err, sizeof(err)) != 0) {
		kprintf("cert: %s; the certificate served is unchanged\n", err);
		return -ENOMEM;
	}
	ret = tls_served_install(&k, "generated");
	if (ret) {
		tls_keys_free(&k);
		kprintf("cert: not installed (%d); the certificate served is unchanged\n", ret);
		return ret;
	}
	kprintf("cert: generated and installed in %lu ms\n", (unsigned long)((time_ns() - t0) / 1000000));
	if (tls_gen_keep.save)
		tls_gen_keep.save(tls_server_keys(), tls_gen_list);
	return 0;
}

struct tls_held *tls_served_current(void)
{
	return tls_ok ? tls_served : NULL;
}

bool tls_ready(void)
{
	return tls_ok;
}

void tls_heap_get_stats(struct tls_heap_stats *s)
{
	s->arena = tls_heap.arena_bytes;
	s->in_use = tls_heap.in_use;
	s->peak = tls_heap.peak;
	s->allocs = tls_heap.allocs;
	s->failures = tls_heap.failures;
}

bool tls_serving_ca_issued(void)
{
	return tls_ok && strcmp(tls_source, "generated") != 0 && tls_served_ca;
}

struct tls_keys *tls_server_keys(void)
{
	return tls_ok && tls_served ? &tls_served->keys : NULL;
}
