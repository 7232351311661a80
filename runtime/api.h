/* The runtime side of the application API (include/vireo/): what server.c,
 * services.c and app.c share. Apps never include this. */
#ifndef VIREO_NET_APP_API_H
#define VIREO_NET_APP_API_H

#include "lib/types.h"
#include "vireo/http.h"

/* ---- handles: small ids for runtime objects, stale once freed ---- */

/* id = generation << API_HANDLE_SLOT_BITS | slot; a slot's generation moves
 * on every new id, so an old id does not find the next object in the slot
 * (until the generation wraps, 65,535 ids later in that slot). 0 is never
 * an id. The table is sized at boot from the plan (at least
 * API_HANDLE_SLOTS: api.c) and doubles while a new id would fill more than
 * half of it, up to API_HANDLE_SLOTS_MAX. */
#define API_HANDLE_SLOTS 256
#define API_HANDLE_SLOT_BITS 16
#define API_HANDLE_GEN_BITS (32 - API_HANDLE_SLOT_BITS)
#define API_HANDLE_SLOTS_MAX (1u << API_HANDLE_SLOT_BITS)
enum api_handle_kind { API_H_NONE, API_H_REQ, API_H_TCP };
/* A fresh id for obj, or 0 when every slot is taken. */
u32 api_handle_new(enum api_handle_kind kind, void *obj);
/* The object, or NULL if id is stale, 0 or of another kind. */
void *api_handle_get(enum api_handle_kind kind, u32 id);
/* Retires id (a stale id is ignored). */
void api_handle_free(u32 id);
u32 api_handles_live(void);

/* ---- routes (runtime/http/routes.c; pure) ---- */

struct api_route {
	struct vireo_route r;
	size_t path_len;
	bool runtime;		/* the runtime's own (/healthz, /metrics): every
				 * method, no body; not an app's to take */
	bool plain;		/* served on plain HTTP under http.redirect= too */
};

/* The runtime's own routes, registered first (runtime/http/exchange.c). */
#define API_ROUTES_RUNTIME 3	/* /healthz, /metrics, ACME's HTTP-01 (TLS=1) */
#define API_ROUTE_RUNTIME 1u
#define API_ROUTE_PLAIN 2u
/* vireo_http_route() for the runtime (flags: API_ROUTE_*): the same checks,
 * and no app can route a path the runtime routes. */
int api_route_add(const struct vireo_route *route, unsigned flags);

/* The route for path (NUL-terminated): the exact one, else the longest
 * prefix; NULL if none. Method is not looked at: see api_route_allows. */
const struct api_route *api_route_match(const char *path);
/* Among the routes with rt's path and prefix flag (split by method), the
 * one serving method; rt itself if none does (then 405). */
const struct api_route *api_route_for_method(const struct api_route *rt, unsigned method);
/* Whether the route serves method (a VIREO_* bit; GET implies HEAD). */
bool api_route_allows(const struct api_route *rt, unsigned method);
/* "Allow: GET, HEAD, ...\r\n" for rt into buf[size]; returns buf. */
const char *api_route_allow_header(const struct api_route *rt, char *buf, size_t size);
/* The table, from the heap (api_apps_start()). 0 or -ENOMEM. */
int api_routes_alloc(void);
/* Forget every app's route (host tests); the runtime's stay. */
void api_routes_reset(void);
u32 api_routes_count(void);

/* ---- the rest ---- */

/* Runs every VIREO_APP's init in link order, after checking the apps'
 * and metrics' registrations; registers the API's /metrics source. Called
 * once by app_start(). Returns the number of apps whose init failed. */
int api_apps_start(void);
/* Keeps bi's EFI/vireo/app/ directory for vireo_esp_file(). */
struct boot_info;
void api_esp_boot(const struct boot_info *bi);
/* A refusal of misuse: counted on /metrics (vireo_app_misuse_total) and
 * logged (rate-limited with the apps' own lines). */
void api_misuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Bytes held against VIREO_HTTP_BUF_BUDGET: true and counted if n more
 * fit, false (nothing counted) otherwise. */
bool api_buf_take(size_t n);
void api_buf_give(size_t n);
size_t api_buf_held(void);

/* The HTTP side (server.c): counts for /metrics. */
struct api_http_stats {
	u64 requests;		/* handed to an app's handler */
	u64 deferred_timeouts;	/* the handler never answered: 503 */
	u64 lost;		/* exchanges whose connection ended first */
	u64 budget_refusals;	/* 503: VIREO_HTTP_BUF_BUDGET or a body share (conn.h) */
	u64 body_too_large;	/* 413 */
	u64 method_refusals;	/* 405 on a route */
};
extern struct api_http_stats api_http_stats;

/* An app's or a service's name (metric false: 1..max of [a-z0-9_-]) or a
 * metric's (metric true: [a-zA-Z_][a-zA-Z0-9_]*, at most max). */
bool api_name_ok(const char *s, size_t max, bool metric);

/* A vireo_addr from lwIP's address and a port (services.c). */
struct ip_addr;
void api_addr_of(const struct ip_addr *ip, u16 port, struct vireo_addr *a);

/* Power off / tests: close every app service (listeners and connections). */
void api_services_stop(void);
/* The services' /metrics families, written by the app source (api.c):
 * set by services.c once an app registers a service, NULL before. */
struct metrics_buf;
extern void (*api_services_metrics)(struct metrics_buf *b);
/* The resolver's families (runtime/resolve.c), once an app resolved. */
extern void (*api_resolve_metrics)(struct metrics_buf *b);

#endif
