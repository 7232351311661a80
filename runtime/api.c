/*
 * The application API's core (include/vireo/app.h, metrics.h, files.h): the
 * registry of apps, handles, logging, the apps' memory, timers and deferred
 * work on the event loop, addresses, declared metrics on /metrics, the baked
 * files. HTTP exchanges live in server.c, TCP/UDP services in services.c.
 */
#include <stdarg.h>

#include "kernel/boot_info.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/loop.h"
#include "lib/linkset.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"
#include "lib/types.h"
#include "lib/metrics.h"
#include "kernel/random.h"
#include "kernel/time/wallclock.h"
#include "net/port/netmem.h"
#include "runtime/api.h"
#include "runtime/http/http.h"
#include "runtime/http/server.h"
#include "runtime/site.h"
#include "vireo/files.h"
#include "vireo/metrics.h"

/* ---- handles ---- */

/* The table is taken from the heap by api_apps_start() (the EFI image's
 * .bss is bounded: linker/vireo.ld), sized from the boot's plan: its
 * holders are the exchanges in progress (each from its dispatch until its
 * response is handed to lwIP whole, in a buffer set: at most
 * netmem.http_bufs plain ones) and a TCP service's connections (for their
 * life, within the services' fixed limits, which the table's old 256
 * slots held), so it starts at 2 x http_bufs + API_HANDLE_SLOTS, rounded
 * up to a power of two (2,048 slots, 32 KiB, at -m 256). It doubles
 * whenever a new id would fill more than half of it (HTTPS exchanges, in
 * sets of their own), up to API_HANDLE_SLOTS_MAX; at most half full, a new
 * id's probe from the cursor is short (docs/appliance.md). */
static struct {
	struct api_slot {
		void *obj;
		u32 gen;	/* API_HANDLE_GEN_BITS, never 0 */
		u8 kind;
	} *slot;
	u32 size, cursor, live;
} api_h;

static bool api_handles_alloc(void)
{
	u32 size = API_HANDLE_SLOTS;

	while (size < 2 * netmem.http_bufs + API_HANDLE_SLOTS && size < API_HANDLE_SLOTS_MAX)
		size *= 2;
	if (!api_h.slot) {
		api_h.slot = kzalloc(size * sizeof *api_h.slot);
		api_h.size = api_h.slot ? size : 0;
	}
	return api_h.slot != NULL;
}

/* Twice the slots, the ids in use unchanged (a slot keeps its index). */
__cold static bool api_handles_grow(void)
{
	struct api_slot *t;

	if (api_h.size >= API_HANDLE_SLOTS_MAX)
		return false;
	t = kzalloc(2 * (size_t)api_h.size * sizeof *t);
	if (!t)
		return false;
	__builtin_memcpy(t, api_h.slot, api_h.size * sizeof *t);
	kfree(api_h.slot);
	api_h.slot = t;
	api_h.cursor = api_h.size;	/* the new half is all free */
	api_h.size *= 2;
	return true;
}

u32 api_handle_new(enum api_handle_kind kind, void *obj)
{
	u32 i, s;

	if (!api_h.slot)
		return 0;
	if (api_h.live + 1 > api_h.size / 2 && !api_handles_grow() && api_h.live >= api_h.size)
		return 0;
	for (i = 0; i < api_h.size; i++) {
		s = (api_h.cursor + i) & (api_h.size - 1);
		if (api_h.slot[s].obj)
			continue;
		api_h.slot[s].gen = (api_h.slot[s].gen + 1) & ((1u << API_HANDLE_GEN_BITS) - 1);
		if (!api_h.slot[s].gen)
			api_h.slot[s].gen = 1;
		api_h.slot[s].obj = obj;
		api_h.slot[s].kind = (u8)kind;
		api_h.cursor = s + 1;
		api_h.live++;
		return api_h.slot[s].gen << API_HANDLE_SLOT_BITS | s;
	}
	return 0;
}

static struct api_slot *api_handle_slot(u32 id)
{
	u32 s = id & ((1u << API_HANDLE_SLOT_BITS) - 1);

	if (!id || s >= api_h.size || !api_h.slot[s].obj || api_h.slot[s].gen != id >> API_HANDLE_SLOT_BITS)
		return NULL;
	return &api_h.slot[s];
}

void *api_handle_get(enum api_handle_kind kind, u32 id)
{
	struct api_slot *sl = api_handle_slot(id);

	return sl && sl->kind == kind ? sl->obj : NULL;
}

void api_handle_free(u32 id)
{
	struct api_slot *sl = api_handle_slot(id);

	if (!sl)
		return;
	sl->obj = NULL;
	sl->kind = API_H_NONE;
	api_h.live--;
}

u32 api_handles_live(void)
{
	return api_h.live;
}

/* ---- logging: one token bucket for every app line ---- */

static struct {
	u64 t_ms;
	u32 milli;		/* tokens x 1000 */
	bool primed;
	u64 dropped, lines, misuse;
} api_log;

static bool api_log_allow(void)
{
	u64 now = time_ns() / NSEC_PER_MSEC;
	u64 cap = (u64)VIREO_LOG_BURST * 1000;

	if (!api_log.primed) {
		api_log.primed = true;
		api_log.milli = (u32)cap;
		api_log.t_ms = now;
	}
	if (now > api_log.t_ms) {
		u64 add = (now - api_log.t_ms) * VIREO_LOG_RATE;	/* ms x per-second = milli */

		api_log.milli = (u32)MIN(cap, api_log.milli + add);
		api_log.t_ms = now;
	}
	if (api_log.milli < 1000) {
		api_log.dropped++;
		return false;
	}
	api_log.milli -= 1000;
	api_log.lines++;
	return true;
}

__cold static void api_vlog(const char *prefix, const char *fmt, va_list ap)
{
	char line[VIREO_LOG_LINE];

	if (!api_log_allow())
		return;
	kvsnprintf(line, sizeof line, fmt, ap);
	kprintf("%s%s\n", prefix, line);
}

void vireo_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	api_vlog("", fmt, ap);
	va_end(ap);
}

void vireo_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	api_vlog("warning: ", fmt, ap);
	va_end(ap);
}

int vireo_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void api_misuse(const char *fmt, ...)
{
	va_list ap;

	api_log.misuse++;
	va_start(ap, fmt);
	api_vlog("warning: app API: ", fmt, ap);
	va_end(ap);
}

/* ---- the apps' memory ---- */

static u64 api_mem_max = VIREO_APP_MEM_DEFAULT;
CMDLINE_PARAM(app_mem, .key = "app.mem", .type = CMDLINE_UINT, .dst = &api_mem_max, .min = 4096,
	      .max = 1073741824, .def = "4194304",
	      .help = "bytes the app may hold through vireo_alloc() (docs/apps.md)");

#define API_ALLOC_MAGIC 0x7669726561707021ull	/* "vireapp!" */

struct api_block {
	u64 size;	/* the caller's size */
	u64 check;	/* API_ALLOC_MAGIC ^ size ^ address; 0 once freed */
};
_Static_assert(sizeof(struct api_block) == VIREO_ALLOC_OVERHEAD, "vireo_alloc's header");

static struct {
	u64 used;	/* bytes incl. headers */
	u64 bad_frees, failures;
} api_mem;

void *vireo_alloc(size_t size)
{
	struct api_block *b;
	u64 total = (u64)size + sizeof *b;

	if (size > api_mem_max || api_mem.used + total > api_mem_max) {
		api_mem.failures++;
		return NULL;
	}
	b = kzalloc((size_t)total);
	if (!b) {
		api_mem.failures++;
		return NULL;
	}
	b->size = size;
	b->check = API_ALLOC_MAGIC ^ size ^ (u64)(uintptr_t)b;
	api_mem.used += total;
	return b + 1;
}

void vireo_free(void *p)
{
	struct api_block *b;

	if (!p)
		return;
	if ((uintptr_t)p % 8) {
		api_mem.bad_frees++;
		api_misuse("vireo_free(%p): not a vireo_alloc() block: refused", p);
		return;
	}
	b = (struct api_block *)p - 1;
	if (b->check != (API_ALLOC_MAGIC ^ b->size ^ (u64)(uintptr_t)b)) {
		api_mem.bad_frees++;
		api_misuse("vireo_free(%p): not a live vireo_alloc() block (freed twice?): refused", p);
		return;
	}
	b->check = 0;
	api_mem.used -= b->size + sizeof *b;
	kfree(b);
}

size_t vireo_mem_used(void)
{
	return (size_t)api_mem.used;
}

size_t vireo_mem_limit(void)
{
	return (size_t)api_mem_max;
}

/* ---- the HTTP buffer budget (request bodies, copied responses) ---- */

static size_t api_buf;

bool api_buf_take(size_t n)
{
	if (n > VIREO_HTTP_BUF_BUDGET || api_buf + n > VIREO_HTTP_BUF_BUDGET)
		return false;
	api_buf += n;
	return true;
}

void api_buf_give(size_t n)
{
	api_buf -= MIN(n, api_buf);
}

size_t api_buf_held(void)
{
	return api_buf;
}

/* ---- time, timers, deferred work ---- */

u64 vireo_now_ms(void)
{
	return time_ns() / NSEC_PER_MSEC;
}

void vireo_random(void *buf, size_t len)
{
	if (buf && len)
		random_bytes(buf, len);
}

/* The app's ESP directory as boot/ left it (kernel_main hands it over). */
static const struct boot_file *api_esp;

__cold void api_esp_boot(const struct boot_info *bi)
{
	api_esp = &bi->files[BOOT_FILE_APP];
}

__cold int vireo_esp_file(const char *name, const void **data, size_t *len)
{
	const struct boot_dir_entry *tab;
	const u8 *bytes;
	u32 i;

	if (!api_esp || api_esp->state == BOOT_FILE_NONE || api_esp->state == BOOT_FILE_ABSENT)
		return -ENOENT;
	if (api_esp->state == BOOT_FILE_TOO_BIG || api_esp->state == BOOT_FILE_TOO_MANY)
		return -EOVERFLOW;
	if (api_esp->state != BOOT_FILE_OK || api_esp->dir_max > BOOT_DIR_MAX_FILES || api_esp->n > api_esp->dir_max ||
	    api_esp->len < (u64)api_esp->dir_max * sizeof *tab || !name)
		return -EIO;
	tab = (const struct boot_dir_entry *)(uintptr_t)api_esp->base;
	bytes = (const u8 *)(tab + api_esp->dir_max);
	/* boot/esp.c names each file "/name" (paths below the directory). */
	for (i = 0; i < api_esp->n; i++)
		if (tab[i].path[0] == '/' && !strncmp(tab[i].path + 1, name, sizeof tab[i].path - 1)) {
			*data = bytes + tab[i].off;
			*len = tab[i].len;
			return 0;
		}
	return -ENOENT;
}

bool vireo_wallclock(u64 *unix_s)
{
	u64 ns;

	if (!wallclock_now(&ns))
		return false;
	*unix_s = ns / 1000000000ull;
	return true;
}

#define API_TIMER_MAGIC 0x74696d6572212121ull
#define API_DEFER_MAGIC 0x6465666572212121ull

struct api_timer {
	struct timer t;
	vireo_timer_fn fn;
	void *arg;
	u64 magic;
};
_Static_assert(sizeof(struct api_timer) <= sizeof(struct vireo_timer), "struct vireo_timer's storage");

struct api_defer {
	struct work w;
	u64 magic;
};
_Static_assert(sizeof(struct api_defer) <= sizeof(struct vireo_defer), "struct vireo_defer's storage");

static void api_timer_fire(struct timer *t, void *arg)
{
	struct api_timer *at = arg;

	(void)t;
	at->fn((struct vireo_timer *)(void *)at, at->arg);
}

void vireo_timer_init(struct vireo_timer *t, vireo_timer_fn fn, void *arg)
{
	struct api_timer *at = (struct api_timer *)(void *)t;

	if (!t || !fn) {
		api_misuse("vireo_timer_init: no timer or function: refused");
		return;
	}
	if (at->magic == API_TIMER_MAGIC && at->t.armed)
		timer_stop(&at->t);
	timer_init(&at->t, api_timer_fire, at);
	at->fn = fn;
	at->arg = arg;
	at->magic = API_TIMER_MAGIC;
}

int vireo_timer_start(struct vireo_timer *t, u32 ms)
{
	struct api_timer *at = (struct api_timer *)(void *)t;

	if (!t || at->magic != API_TIMER_MAGIC) {
		api_misuse("vireo_timer_start: timer not initialised: refused");
		return -EINVAL;
	}
	timer_start(&at->t, time_ns() + (u64)ms * NSEC_PER_MSEC);
	return 0;
}

bool vireo_timer_stop(struct vireo_timer *t)
{
	struct api_timer *at = (struct api_timer *)(void *)t;

	if (!t || at->magic != API_TIMER_MAGIC)
		return false;
	return timer_stop(&at->t);
}

bool vireo_timer_armed(const struct vireo_timer *t)
{
	const struct api_timer *at = (const struct api_timer *)(const void *)t;

	return t && at->magic == API_TIMER_MAGIC && at->t.armed;
}

void vireo_defer_init(struct vireo_defer *d, void (*fn)(void *arg), void *arg)
{
	struct api_defer *ad = (struct api_defer *)(void *)d;

	if (!d || !fn) {
		api_misuse("vireo_defer_init: no work or function: refused");
		return;
	}
	if (ad->magic == API_DEFER_MAGIC)
		work_cancel(&ad->w);
	work_init(&ad->w, fn, arg);
	ad->magic = API_DEFER_MAGIC;
}

int vireo_defer(struct vireo_defer *d)
{
	struct api_defer *ad = (struct api_defer *)(void *)d;

	if (!d || ad->magic != API_DEFER_MAGIC) {
		api_misuse("vireo_defer: work not initialised: refused");
		return -EINVAL;
	}
	work_queue(&ad->w);
	return 0;
}

bool vireo_defer_cancel(struct vireo_defer *d)
{
	struct api_defer *ad = (struct api_defer *)(void *)d;

	if (!d || ad->magic != API_DEFER_MAGIC)
		return false;
	return work_cancel(&ad->w);
}

/* ---- addresses ---- */

static size_t api_put_hex16(char *p, u32 v)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[4];
	size_t n = 0, i;

	do {
		tmp[n++] = hex[v & 15];
		v >>= 4;
	} while (v);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

__cold size_t vireo_addr_str(const struct vireo_addr *a, char *buf, size_t size)
{
	char tmp[VIREO_ADDR_STRLEN];
	size_t n = 0, i;

	if (!buf || !size)
		return 0;
	buf[0] = '\0';
	if (!a)
		return 0;
	if (a->family == VIREO_AF_INET) {
		n = (size_t)ksnprintf(tmp, sizeof tmp, "%u.%u.%u.%u", a->ip[0], a->ip[1], a->ip[2], a->ip[3]);
	} else if (a->family == VIREO_AF_INET6) {
		u32 g[8];
		int best = -1, best_len = 0, run = -1, run_len = 0;

		for (i = 0; i < 8; i++)
			g[i] = (u32)a->ip[2 * i] << 8 | a->ip[2 * i + 1];
		/* RFC 5952: the longest run of two or more zero groups, the
		 * first such, becomes "::". */
		for (i = 0; i < 8; i++) {
			if (g[i] == 0) {
				if (run < 0) {
					run = (int)i;
					run_len = 0;
				}
				if (++run_len > best_len && run_len >= 2) {
					best = run;
					best_len = run_len;
				}
			} else {
				run = -1;
			}
		}
		for (i = 0; i < 8; i++) {
			if (best >= 0 && (int)i == best) {
				tmp[n++] = ':';
				if (i == 0)
					tmp[n++] = ':';
				i += (size_t)best_len - 1;
				continue;
			}
			n += api_put_hex16(tmp + n, g[i]);
			if (i < 7)
				tmp[n++] = ':';
		}
		tmp[n] = '\0';
	} else {
		return 0;
	}
	if (n + 1 > size)
		return 0;
	for (i = 0; i <= n; i++)
		buf[i] = tmp[i];
	return n;
}

/* ---- the baked files ---- */

bool vireo_file_find(const char *path, struct vireo_file *f)
{
	const struct site_file *s = path ? site_lookup(path) : NULL;

	if (!s || !f)
		return false;
	f->path = s->path;
	f->data = s->data;
	f->len = s->len;
	f->content_type = s->content_type;
	f->etag = s->etag;
	f->mtime = s->mtime;
	f->priv = s;
	return true;
}

const char *vireo_content_type(const char *path)
{
	return http_content_type(path ? path : "");
}

/* ---- metrics ---- */

void vireo_histogram_observe(struct vireo_histogram *h, u64 v)
{
	u32 i;

	for (i = 0; i < h->n && v > h->le[i]; i++)
		;
	h->counts[i]++;
	h->sum += v;
	h->count++;
}

void vireo_counter_vec_add(struct vireo_counter_vec *c, u32 i, u64 n)
{
	if (i >= c->n) {
		api_misuse("vireo_counter_vec_add: index %u of %u: ignored", i, c->n);
		return;
	}
	c->v[i] += n;
}

/* The linker sets of VIREO_APP and VIREO_COUNTER...; empty without apps. */
LINKSET_DECLARE(apps, const struct vireo_app);
LINKSET_DECLARE(metrics, struct vireo_metric);

bool api_name_ok(const char *s, size_t max, bool metric)
{
	size_t n;

	if (!s || !*s)
		return false;
	for (n = 0; s[n]; n++) {
		char c = s[n];
		bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9' && (n || !metric)) || c == '_' ||
			  (metric ? (c >= 'A' && c <= 'Z') : c == '-');

		if (!ok || n >= max)
			return false;
	}
	return true;
}

static bool api_str_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static bool api_help_ok(const char *s)
{
	if (!s)
		return false;
	for (; *s; s++)
		if (*s == '\n' || *s == '\\')
			return false;
	return true;
}

/* What is wrong with a family's name and help, or NULL. */
static const char *api_family_why(const char *name, const char *help, bool builtin)
{
	if (!name || !api_name_ok(name, 200, true))
		return "a name must be [a-zA-Z_][a-zA-Z0-9_]*";
	if (!builtin && name[0] == 'v' && name[1] == 'i' && name[2] == 'r' && name[3] == 'e' && name[4] == 'o' &&
	    name[5] == '_')
		return "vireo_ names are the runtime's";
	if (!api_help_ok(help))
		return "help must be one line without backslashes";
	return NULL;
}

static const char *api_metric_why(struct vireo_metric *const *set, size_t n, size_t k)
{
	const struct vireo_metric *m = set[k];
	const char *why = api_family_why(m->name, m->help, m->builtin);
	size_t i;

	if (why)
		return why;
	for (i = 0; i < k; i++)
		if (set[i]->name && api_str_eq(set[i]->name, m->name))
			return "declared twice";
	if (m->kind == VIREO_METRIC_HISTOGRAM) {
		const struct vireo_histogram *h = m->value;

		for (i = 1; i < h->n; i++)
			if (h->le[i] <= h->le[i - 1])
				return "buckets must be ascending";
	}
	if (m->kind == VIREO_METRIC_COUNTER_VEC) {
		const struct vireo_counter_vec *c = m->value;

		if (!api_name_ok(c->label, 100, true) || api_str_eq(c->label, "le"))
			return "a label name must be [a-zA-Z_][a-zA-Z0-9_]*, not le";
		for (i = 0; i < c->n; i++)
			if (!c->values[i])
				return "a label value is NULL";
	}
	return NULL;
}

static void api_metrics_check(void)
{
	struct vireo_metric *const *set = LINKSET_BEGIN(metrics);
	size_t n = LINKSET_COUNT(metrics), k;

	for (k = 0; k < n; k++) {
		const char *why = api_metric_why(set, n, k);

		set[k]->refused = why != NULL;
		if (why)
			api_misuse("metric %.64s: %s: left out of /metrics", set[k]->name ? set[k]->name : "(null)",
				   why);
	}
}

static void api_write_histogram(struct metrics_buf *b, const struct vireo_metric *m)
{
	const struct vireo_histogram *h = m->value;
	char name[224], le[32];
	u64 cum = 0;
	u32 i;

	ksnprintf(name, sizeof name, "%s_bucket", m->name);
	for (i = 0; i <= h->n; i++) {
		cum += h->counts[i];
		if (i < h->n)
			ksnprintf(le, sizeof le, "%llu", (unsigned long long)h->le[i]);
		metrics_sample1(b, name, "le", i < h->n ? le : "+Inf", cum);
	}
	ksnprintf(name, sizeof name, "%s_sum", m->name);
	metrics_sample(b, name, NULL, h->sum);
	ksnprintf(name, sizeof name, "%s_count", m->name);
	metrics_sample(b, name, NULL, h->count);
}

static void api_write_writers(struct metrics_buf *b);
static bool api_metrics_on;	/* api_apps_start() checked the apps' metrics */
void (*api_services_metrics)(struct metrics_buf *b);
void (*api_resolve_metrics)(struct metrics_buf *b);

__cold static void api_write_metrics(struct metrics_buf *b)
{
	struct vireo_metric *const *set = LINKSET_BEGIN(metrics);
	size_t n = LINKSET_COUNT(metrics), k;
	const struct api_http_stats *h = &api_http_stats;

	if (!api_metrics_on)
		return;
	metrics_simple(b, "vireo_app_misuse_total", METRICS_COUNTER,
		       "Application API calls refused as misuse (each logged, rate-limited).", api_log.misuse);
	metrics_simple(b, "vireo_app_log_lines_total", METRICS_COUNTER, "Lines the apps logged.", api_log.lines);
	metrics_simple(b, "vireo_app_log_dropped_total", METRICS_COUNTER,
		       "App log lines dropped by the rate limit.", api_log.dropped);
	metrics_simple(b, "vireo_app_mem_bytes", METRICS_GAUGE, "Bytes the apps hold through vireo_alloc().",
		       api_mem.used);
	metrics_simple(b, "vireo_app_mem_limit_bytes", METRICS_GAUGE, "app.mem=: the apps' memory limit.",
		       api_mem_max);
	metrics_simple(b, "vireo_app_mem_failures_total", METRICS_COUNTER,
		       "vireo_alloc() calls refused (limit or kernel heap).", api_mem.failures);
	metrics_simple(b, "vireo_app_mem_bad_frees_total", METRICS_COUNTER,
		       "vireo_free() calls refused (not a live block).", api_mem.bad_frees);
	metrics_simple(b, "vireo_app_http_requests_total", METRICS_COUNTER,
		       "Requests handed to an app's route handler.", h->requests);
	metrics_simple(b, "vireo_app_http_lost_total", METRICS_COUNTER,
		       "App exchanges whose connection ended before the response did.", h->lost);
	metrics_simple(b, "vireo_app_http_deferred_timeouts_total", METRICS_COUNTER,
		       "Handlers that did not answer within the deferral limit (503).", h->deferred_timeouts);
	metrics_family(b, "vireo_app_http_refused_total", METRICS_COUNTER,
		       "Requests to app routes refused by the runtime, by reason.");
	metrics_sample1(b, "vireo_app_http_refused_total", "reason", "method", h->method_refusals);
	metrics_sample1(b, "vireo_app_http_refused_total", "reason", "body_too_large", h->body_too_large);
	metrics_sample1(b, "vireo_app_http_refused_total", "reason", "budget", h->budget_refusals);
	metrics_simple(b, "vireo_app_http_buffer_bytes", METRICS_GAUGE,
		       "Request bodies and copied responses held, all connections.", api_buf);
	if (api_services_metrics)
		api_services_metrics(b);
	if (api_resolve_metrics)
		api_resolve_metrics(b);

	for (k = 0; k < n; k++) {
		const struct vireo_metric *m = set[k];

		if (m->refused)
			continue;
		switch (m->kind) {
		case VIREO_METRIC_COUNTER:
			metrics_simple(b, m->name, METRICS_COUNTER, m->help,
				       ((const struct vireo_counter *)m->value)->v);
			break;
		case VIREO_METRIC_GAUGE:
			metrics_family(b, m->name, METRICS_GAUGE, m->help);
			metrics_sample_s64(b, m->name, NULL, ((const struct vireo_gauge *)m->value)->v);
			break;
		case VIREO_METRIC_HISTOGRAM:
			metrics_family(b, m->name, METRICS_HISTOGRAM, m->help);
			api_write_histogram(b, m);
			break;
		case VIREO_METRIC_COUNTER_VEC: {
			const struct vireo_counter_vec *c = m->value;

			metrics_family(b, m->name, METRICS_COUNTER, m->help);
			for (u32 i = 0; i < c->n; i++)
				metrics_sample1(b, m->name, c->label, c->values[i], c->v[i]);
			break;
		}
		}
	}
	api_write_writers(b);
}

METRICS_SOURCE(app, api_write_metrics);

/* ---- families written at scrape time ---- */

struct vireo_metrics_out {
	struct metrics_buf *b;
	struct api_writer *w;
	bool skip;		/* the family last begun was refused */
};

static struct api_writer {
	void (*fn)(struct vireo_metrics_out *o, void *arg);
	void *arg;
	bool builtin;		/* registered by one of vireo's own apps */
	bool warned;		/* its first refusal was logged */
} api_writers[VIREO_METRICS_WRITERS];
static u32 api_nwriters;
static const struct vireo_app *api_app_running;	/* the app whose init runs */

__cold int vireo_metrics_writer(void (*fn)(struct vireo_metrics_out *o, void *arg), void *arg)
{
	struct api_writer *w;

	if (!fn || api_nwriters == VIREO_METRICS_WRITERS) {
		api_misuse("vireo_metrics_writer: %s: refused", fn ? "all taken" : "no function");
		return fn ? -ENOSPC : -EINVAL;
	}
	w = &api_writers[api_nwriters++];
	w->fn = fn;
	w->arg = arg;
	w->builtin = api_app_running && api_app_running->builtin;
	return 0;
}

__cold void vireo_metrics_family(struct vireo_metrics_out *o, const char *name, enum vireo_metric_kind kind,
				 const char *help)
{
	const char *why = api_family_why(name, help, o->w->builtin);

	if (!why && kind != VIREO_METRIC_COUNTER && kind != VIREO_METRIC_GAUGE)
		why = "a written family is a counter or a gauge";
	o->skip = why != NULL;
	if (!why) {
		metrics_family(o->b, name, kind == VIREO_METRIC_GAUGE ? METRICS_GAUGE : METRICS_COUNTER, help);
	} else if (!o->w->warned) {
		o->w->warned = true;
		api_misuse("metric %.64s: %s: left out of /metrics", name ? name : "(null)", why);
	} else {
		api_log.misuse++;
	}
}

__cold void vireo_metrics_sample(struct vireo_metrics_out *o, const char *name, const char *label,
				 const char *value, u64 v)
{
	if (o->skip || !name)
		return;
	if (!label)
		metrics_sample(o->b, name, NULL, v);
	else if (api_name_ok(label, 100, true) && value)
		metrics_sample1(o->b, name, label, value, v);
	else
		api_log.misuse++;
}

__cold static void api_write_writers(struct metrics_buf *b)
{
	struct vireo_metrics_out o = { .b = b };
	u32 i;

	for (i = 0; i < api_nwriters; i++) {
		o.w = &api_writers[i];
		o.skip = false;
		o.w->fn(&o, o.w->arg);
	}
}

/* ---- the apps ---- */

__cold int api_apps_start(void)
{
	const struct vireo_app *const *set = LINKSET_BEGIN(apps);
	size_t n = LINKSET_COUNT(apps), i;
	int failed = 0, err;

	api_metrics_check();
	api_metrics_on = true;
	/* The tables, from the heap once (the EFI image's .bss is bounded). */
	if (!api_handles_alloc() || api_routes_alloc()) {
		kprintf("app: no memory for the API's tables: no app started\n");
		return (int)n;
	}
	/* The runtime's own routes first: no app can take them. */
	if (!api_routes_count())
		http_server_routes();
	for (i = 0; i < n; i++) {
		const struct vireo_app *a = set[i];

		if (!a->name || !api_name_ok(a->name, 31, false) || !a->init) {
			api_misuse("app %.32s: a name of 1..31 [a-z0-9_-] and an init are needed: not started",
				   a->name ? a->name : "(null)");
			failed++;
			continue;
		}
		kprintf("app %s: %s\n", a->name, a->help ? a->help : "");
		api_app_running = a;
		err = a->init();
		api_app_running = NULL;
		if (err) {
			kprintf("app %s: init failed (%d)\n", a->name, err);
			failed++;
		}
	}
	return failed;
}
