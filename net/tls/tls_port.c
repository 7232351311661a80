/* mbedTLS's platform for vireo: calloc/free over the TLS heap, randomness
 * from the kernel CSPRNG, and start-up (tls.h). */
#include "net/tls/tls.h"

#include "kernel/boot_info.h"
#include "kernel/console.h"
#include "kernel/mm/heap.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lib/string.h"
#include "lib/metrics.h"
#include "mbedtls/entropy.h"
#include "mbedtls/platform_time.h"
#include "mbedtls/platform_util.h"
#include "psa/crypto.h"
#include "net/tls/tls_keys.h"

#define TLS_HEAP_PAGES	(TLS_HEAP_BYTES / PAGE_SIZE)

static struct heap tls_heap;
static bool tls_heap_up, tls_ok;
static struct tls_keys tls_keys;
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

/* MBEDTLS_ENTROPY_HARDWARE_ALT: the entropy module's only source. */
int mbedtls_hardware_poll(void *data, unsigned char *out, size_t len, size_t *olen)
{
	random_bytes(out, len);
	*olen = len;
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

static int tls_rng(void *ctx, unsigned char *out, size_t len)
{
	random_bytes(out, len);
	return 0;
}

/* /metrics: the TLS heap and whether TLS could be offered. */
static bool tls_started;	/* tls_start() ran: /metrics has the TLS heap */

static void tls_metrics(struct metrics_buf *b)
{
	if (!tls_started)
		return;
	metrics_simple(b, "vireo_tls_ready", METRICS_GAUGE,
		       "1 when the certificate and key loaded and TLS can be offered", tls_ok);
	metrics_simple(b, "vireo_tls_heap_arena_bytes", METRICS_GAUGE, "TLS heap size (TLS_HEAP_BYTES)",
		       tls_heap.arena_bytes);
	metrics_simple(b, "vireo_tls_heap_in_use_bytes", METRICS_GAUGE, "TLS heap bytes allocated now",
		       tls_heap.in_use);
	metrics_simple(b, "vireo_tls_heap_peak_bytes", METRICS_GAUGE, "TLS heap bytes allocated at most",
		       tls_heap.peak);
	metrics_simple(b, "vireo_tls_heap_alloc_failures_total", METRICS_COUNTER,
		       "TLS allocations refused: the heap was full", tls_heap.failures);
}

METRICS_SOURCE(tls, tls_metrics);

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
 * one), else the built-in pair. Logs what it loaded, or why not. */
static bool tls_from_esp;	/* the pair served is the ESP's */

static int tls_load_keys(void)
{
	struct boot_file *fc, *fk;
	char err[160], desc[32];
	int ret = -1, blame;
	bool tried = false, cert_ok, key_ok;

	if (!tls_bi || (!tls_file_there(&tls_bi->files[BOOT_FILE_TLS_CERT]) &&
			!tls_file_there(&tls_bi->files[BOOT_FILE_TLS_KEY]))) {
		if (tls_keys_load(&tls_keys, tls_builtin_cert, tls_builtin_cert_len, tls_builtin_key,
				  tls_builtin_key_len, tls_rng, NULL, err, sizeof(err)) != 0) {
			kprintf("tls: %s; HTTPS off, HTTP unaffected\n", err);
			return -1;
		}
		kprintf("tls: %s key, %s certificate%s\n", tls_keys_describe(&tls_keys, desc, sizeof(desc)),
			tls_builtin_is_dev ? "self-signed DEVELOPMENT" : "built-in",
			tls_builtin_is_dev ? " (generated by make for this clone; browsers will warn)" : "");
		return 0;
	}
	fc = &tls_bi->files[BOOT_FILE_TLS_CERT];
	fk = &tls_bi->files[BOOT_FILE_TLS_KEY];
	cert_ok = tls_file_ok(fc, BOOT_TLS_CERT_PATH);	/* each says what is wrong with it */
	key_ok = tls_file_ok(fk, BOOT_TLS_KEY_PATH);
	if (cert_ok && key_ok) {
		tried = true;
		ret = tls_keys_load(&tls_keys, (const unsigned char *)(uintptr_t)fc->base, fc->len,
				    (const unsigned char *)(uintptr_t)fk->base, fk->len, tls_rng, NULL, err,
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
	tls_from_esp = true;
	kprintf("tls: %s key, certificate from the ESP (" BOOT_TLS_CERT_PATH ", " BOOT_TLS_KEY_PATH
		"; preferred over the %s one)\n", tls_keys_describe(&tls_keys, desc, sizeof(desc)),
		tls_builtin_is_dev ? "built-in development" : "built-in");
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

int tls_start(void)
{
	void *arena;

	tls_started = true;
	if (!tls_heap_up) {
		arena = page_alloc(TLS_HEAP_PAGES);
		if (!arena) {
			kprintf("tls: no %u KiB for the TLS heap; HTTPS off\n", TLS_HEAP_BYTES / 1024);
			return -1;
		}
		heap_init(&tls_heap);
		heap_add_arena(&tls_heap, arena, TLS_HEAP_BYTES);
		tls_heap_up = true;
	}
	if (psa_crypto_init() != PSA_SUCCESS) {
		kprintf("tls: PSA crypto did not initialize; HTTPS off\n");
		return -1;
	}
	tls_crypto_up = true;
	tls_load_ca();
	if (tls_load_keys() != 0)
		return -1;
	tls_ok = true;
	return 0;
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
	return tls_ok && (tls_from_esp || !tls_builtin_is_dev) && tls_keys_ca_issued(&tls_keys);
}

struct tls_keys *tls_server_keys(void)
{
	return tls_ok ? &tls_keys : NULL;
}
