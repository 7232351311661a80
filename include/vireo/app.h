/*
 * vireo's application API: the part every app uses. An app is one or more C
 * files under apps/NAME/ built into the image with `make APP=apps/NAME`
 * (docs/apps.md). It registers itself with VIREO_APP; its init function runs
 * once from the event loop after the network stack is up and registers the
 * app's HTTP routes (vireo/http.h), TCP and UDP services (vireo/net.h),
 * timers and deferred work (below). Configuration keys (vireo/config.h) and
 * metrics (vireo/metrics.h) are declared at file scope.
 *
 * Rules the runtime keeps for the app:
 * - Everything runs on one core in the event loop, run to completion: a
 *   callback is never interrupted by another, so apps need no locks. A
 *   callback that loops for long holds up the whole appliance.
 * - Apps never see lwIP or driver types; connections, requests and sockets
 *   are small handles passed by value (vireo_req, vireo_tcp, vireo_udp). A
 *   handle whose connection has ended is stale: every call on it returns
 *   -EPIPE (or NULL/"" for accessors) and does nothing, never touching
 *   freed memory.
 * - The runtime owns every memory limit: the app's own allocations go
 *   through vireo_alloc() against app.mem=; request bodies, response copies
 *   and connection buffers are the runtime's, with the bounds in each header.
 * - Misuse is refused, not crashed on: types make most of it a build error
 *   (-Werror); the rest returns an error code and logs one line.
 * - The runtime never calls back into the app from inside an API call the
 *   app made (no re-entrancy): callbacks come from the loop.
 */
#ifndef VIREO_API_APP_H
#define VIREO_API_APP_H

#include "vireo/string.h"	/* memcpy, memmove, memset, memcmp, strlen, strnlen,
				 * strcmp, strncmp, strlcpy */
#include "vireo/types.h"	/* u8..u64, s64, bool, size_t, the E* error codes */
#include "vireo/linkset.h"

/* ---- registration ---- */

/*
 * vireo's own apps, which every image carries (apps/echo: the Makefile's
 * IMAGE_APPS, docs/apps.md), define VIREO_BUILTIN before including the API:
 * their metric names are the runtime's (vireo_...), which other apps'
 * cannot take.
 */
#ifdef VIREO_BUILTIN
#define VIREO_BUILTIN_ true
#else
#define VIREO_BUILTIN_ false
#endif

struct vireo_app {
	const char *name;	/* 1..31 of [a-z0-9_-]: logs and /metrics labels */
	/* Called once at boot, after the configuration is parsed and the
	 * network stack is up (the link may come up later). Register routes
	 * and services here. Returns 0, or a negative E* code: the runtime
	 * logs "app NAME: init failed (CODE)" and keeps serving its own
	 * routes (/healthz, /metrics) and whatever the app registered. */
	int (*init)(void);
	const char *help;	/* one line, for the boot log */
	bool builtin;		/* VIREO_BUILTIN (set by VIREO_APP) */
};

/*
 * Registers an app at link time (the first argument names the
 * registration; the rest initialises a struct vireo_app):
 *
 *	static int hello_init(void) { ... }
 *	VIREO_APP(hello, .name = "hello", .init = hello_init, .help = "says hello");
 *
 * The runtime walks the apps linker set (vireo/linkset.h) at boot, in link
 * order. A registration without a name or init, or with a bad name, is
 * refused with a log line and its init is not called.
 */
#define VIREO_APP(id, ...)                                                                    \
	static const struct vireo_app vireo_appreg_##id = { .builtin = VIREO_BUILTIN_, __VA_ARGS__ }; \
	VIREO_LINKSET_ADD(apps, const struct vireo_app, id, vireo_appreg_##id)

/* ---- the app's files on the ESP ---- */

/*
 * The file `name` of the ESP's EFI/vireo/app/ directory (the app's own
 * files), read by the boot loader before the kernel starts: at most 8 MiB
 * and 256 files in all, UTF-8 names (a name boot/ cannot keep is left out:
 * -ENOENT), read-only, 8-byte aligned,
 * for the image's life. Returns 0 with *data and *len set; -ENOENT when
 * there is no such file (or vireo booted without UEFI: PVH), -EOVERFLOW
 * when the directory was over those bounds, -EIO when the firmware could
 * not read it (or a name outside the set was in it). The bytes are whatever
 * was written there: the app checks them before use (apps/dns: a compiled
 * zone).
 */
int vireo_esp_file(const char *name, const void **data, size_t *len);

/* ---- logging ---- */

/*
 * One line on the console (and syslog= when set), formatted like kprintf
 * (no floating point); the newline is added. At most VIREO_LOG_LINE bytes
 * are kept. Lines are rate-limited together (VIREO_LOG_RATE per second,
 * bursts of VIREO_LOG_BURST) so a remote peer cannot flood the console
 * through an app; dropped lines are counted on /metrics
 * (vireo_app_log_dropped_total). vireo_warn() prefixes "warning: ".
 */
#define VIREO_LOG_LINE 256
#define VIREO_LOG_RATE 20
#define VIREO_LOG_BURST 50
void vireo_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vireo_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * An app's own stream of lines (an access log), apart from vireo_log()'s
 * rate limit: line[0..len) (no newline; a control byte is written as '?';
 * more than VIREO_LOG_STREAM_LINE bytes are cut) to the console
 * (VIREO_LOG_CONSOLE: the serial and virtio consoles and the log ring, not
 * syslog=) and/or to syslog= (VIREO_LOG_SYSLOG: queued on its client's
 * 64-line ring, sent from the loop; lines over 256 bytes cut there).
 * Nothing waits: the console takes VIREO_LOG_STREAM_RATE lines a second
 * (about what a 115,200-baud UART writes), syslog what its ring has room
 * for. Returns the destinations that took the line; one asked for and
 * missing dropped it (the app counts that), as does syslog when syslog= is
 * off.
 */
#define VIREO_LOG_CONSOLE 1u
#define VIREO_LOG_SYSLOG 2u
#define VIREO_LOG_STREAM_LINE 512
#define VIREO_LOG_STREAM_RATE 100
unsigned vireo_log_stream(unsigned to, const char *line, size_t len);

/* snprintf into buf[size] (always NUL-terminated when size > 0), kprintf's
 * formats (no floating point); returns the length the whole text needs. */
int vireo_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- memory ---- */

/*
 * Zeroed memory for the app, or NULL when the kernel heap is short or the
 * app would hold more than app.mem= bytes (default VIREO_APP_MEM_DEFAULT)
 * counting VIREO_ALLOC_OVERHEAD per block. vireo_free(NULL) does nothing;
 * freeing a pointer vireo_alloc() did not return (or twice) is refused
 * with a log line when the runtime can tell (a header check), and counted
 * on /metrics (vireo_app_mem_bad_frees_total).
 */
#define VIREO_APP_MEM_DEFAULT (4u << 20)
#define VIREO_ALLOC_OVERHEAD 16u
void *vireo_alloc(size_t size);
void vireo_free(void *p);
size_t vireo_mem_used(void);	/* bytes held now, overhead included */
size_t vireo_mem_limit(void);	/* app.mem= */

/* ---- time ---- */

/* Milliseconds since boot (monotonic). */
u64 vireo_now_ms(void);

/* The wall clock (ntp=): seconds since 1970-01-01 UTC into *unix_s and
 * true, or false while it is unknown. */
bool vireo_wallclock(u64 *unix_s);

/* ---- randomness ---- */

/* len bytes from the kernel's ChaCha20 generator (seeded from RDRAND/RDSEED,
 * TSC jitter and virtio-rng): for keys, secrets, unguessable identifiers. */
void vireo_random(void *buf, size_t len);

/* ---- timers ---- */

/* Opaque storage the app owns (static, or in its own allocation). Zero it
 * or not: vireo_timer_init() must come first. */
struct vireo_timer {
	void *priv[8];
};
typedef void (*vireo_timer_fn)(struct vireo_timer *t, void *arg);

/* Prepares t to call fn(t, arg) from the loop. Re-initialising an armed
 * timer stops it first. */
void vireo_timer_init(struct vireo_timer *t, vireo_timer_fn fn, void *arg);
/* Arms t to fire once, ms milliseconds from now (0: at the next turn of the
 * loop); an armed t is moved. For a periodic timer, start it again from its
 * callback. Returns 0, or -EINVAL (logged) if t was never initialised. */
int vireo_timer_start(struct vireo_timer *t, u32 ms);
/* Disarms t; true if it was armed. Stop a timer before freeing its memory. */
bool vireo_timer_stop(struct vireo_timer *t);
bool vireo_timer_armed(const struct vireo_timer *t);

/* ---- deferred work ---- */

/* Work run once from the loop, after the current callback returns: a way
 * to continue outside a callback. Opaque storage, as for timers. */
struct vireo_defer {
	void *priv[6];
};
void vireo_defer_init(struct vireo_defer *d, void (*fn)(void *arg), void *arg);
/* Queues d (a no-op while it is queued). Returns 0, or -EINVAL (logged) if
 * d was never initialised. */
int vireo_defer(struct vireo_defer *d);
/* Takes d off the queue; true if it was queued. Do this before freeing d. */
bool vireo_defer_cancel(struct vireo_defer *d);

/* ---- addresses ---- */

#define VIREO_AF_INET 4
#define VIREO_AF_INET6 6
/* A peer: IPv4 (family 4, ip[0..4) in network order) or IPv6 (family 6,
 * ip[0..16)), and a port. */
struct vireo_addr {
	u8 family;
	u8 ip[16];
	u16 port;
};
/* "192.0.2.1" or "2001:db8::1" (no port) into buf[size], NUL-terminated;
 * returns the length, or 0 if it does not fit (buf is then ""). 46 bytes
 * always suffice (VIREO_ADDR_STRLEN). */
#define VIREO_ADDR_STRLEN 46
size_t vireo_addr_str(const struct vireo_addr *a, char *buf, size_t size);

#endif
