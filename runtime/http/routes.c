/* The HTTP server's route table (vireo/http.h): the apps' routes and the
 * runtime's own (/healthz, /metrics: registered first, by exchange.c),
 * registration checks and matching. No I/O, host-tested. */
#include "kernel/mm/mm.h"
#include "lib/types.h"
#include "runtime/api.h"

/* From the heap at boot, api_routes_alloc() (the EFI image's .bss is bounded). */
static struct {
	struct api_route *r;
	u32 n;
	u32 nruntime;		/* the first nruntime are the runtime's own */
} routes;

static size_t routes_strlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n <= max && s[n])
		n++;
	return n;
}

static bool routes_str_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* GET implies HEAD. */
static unsigned routes_mask(unsigned methods)
{
	return (methods & VIREO_GET) ? methods | VIREO_HEAD : methods;
}

__cold int vireo_http_route_add(const struct vireo_route *route)
{
	return api_route_add(route, 0);
}

__cold int api_route_add(const struct vireo_route *route, unsigned flags)
{
	struct api_route *rt;
	size_t len, i;

	if (!route || !route->handler || !route->path) {
		api_misuse("vireo_http_route: no route, path or handler: refused");
		return -EINVAL;
	}
	if (!route->methods || (route->methods & ~VIREO_METHODS_ALL)) {
		api_misuse("vireo_http_route %.64s: methods 0x%x: refused", route->path, route->methods);
		return -EINVAL;
	}
	len = routes_strlen(route->path, VIREO_HTTP_PATH_MAX);
	if (len == 0 || len > VIREO_HTTP_PATH_MAX || route->path[0] != '/') {
		api_misuse("vireo_http_route %.64s: a path starts with / and has at most %u bytes: refused",
			   route->path, VIREO_HTTP_PATH_MAX);
		return -EINVAL;
	}
	for (i = 0; i < len; i++) {
		u8 c = (u8)route->path[i];

		if (c <= 0x20 || c >= 0x7f) {
			api_misuse("vireo_http_route: a byte 0x%02x in the path: refused", c);
			return -EINVAL;
		}
	}
	if (route->max_body > VIREO_HTTP_BODY_MAX) {
		api_misuse("vireo_http_route %s: max_body %u over %u: refused", route->path, route->max_body,
			   VIREO_HTTP_BODY_MAX);
		return -EINVAL;
	}
	if (route->on_body ? route->max_body != 0 : route->on_body_end || route->body_limit) {
		api_misuse("vireo_http_route %s: on_body and the body fields: refused", route->path);
		return -EINVAL;
	}
	for (i = 0; i < routes.n; i++) {
		rt = &routes.r[i];
		if (rt->runtime && routes_str_eq(rt->r.path, route->path)) {
			api_misuse("vireo_http_route %s: a runtime route: refused", route->path);
			return -EEXIST;
		}
		if (rt->r.prefix == route->prefix && routes_str_eq(rt->r.path, route->path) &&
		    (routes_mask(rt->r.methods) & routes_mask(route->methods))) {
			api_misuse("vireo_http_route %s: routed already for some of these methods: refused",
				   route->path);
			return -EEXIST;
		}
	}
	if (!routes.r)
		return -ENOMEM;	/* api_apps_start() failed for want of memory */
	/* The runtime's routes come first (api_apps_start()), so an app's
	 * never take their slots. */
	if (routes.n == VIREO_HTTP_ROUTES_MAX + routes.nruntime) {
		api_misuse("vireo_http_route %s: %u routes already: refused", route->path, VIREO_HTTP_ROUTES_MAX);
		return -ENOSPC;
	}
	rt = &routes.r[routes.n++];
	rt->r = *route;
	rt->path_len = len;
	rt->runtime = (flags & API_ROUTE_RUNTIME) != 0;
	rt->plain = (flags & API_ROUTE_PLAIN) != 0;
	if (rt->runtime)
		routes.nruntime++;
	return 0;
}

/* Exact routes first (their methods merged by the caller through the
 * first match: two exact routes for one path split by method are found
 * by api_route_match_method). */
static bool routes_prefix_of(const struct api_route *rt, const char *path)
{
	size_t i;

	for (i = 0; i < rt->path_len; i++)
		if (path[i] != rt->r.path[i])
			return false;
	return true;
}

const struct api_route *api_route_match(const char *path)
{
	const struct api_route *best = NULL;
	u32 i;

	for (i = 0; i < routes.n; i++) {
		const struct api_route *rt = &routes.r[i];

		if (!rt->r.prefix && routes_str_eq(rt->r.path, path))
			return rt;
	}
	for (i = 0; i < routes.n; i++) {
		const struct api_route *rt = &routes.r[i];

		if (rt->r.prefix && routes_prefix_of(rt, path) && (!best || rt->path_len > best->path_len))
			best = rt;
	}
	return best;
}

/* Among the routes of rt's path and kind, the one serving method; rt itself
 * if none does (the caller answers 405 with the union of their methods). */
const struct api_route *api_route_for_method(const struct api_route *rt, unsigned method)
{
	u32 i;

	if (api_route_allows(rt, method))
		return rt;
	for (i = 0; i < routes.n; i++) {
		const struct api_route *o = &routes.r[i];

		if (o->r.prefix == rt->r.prefix && routes_str_eq(o->r.path, rt->r.path) &&
		    (routes_mask(o->r.methods) & method))
			return o;
	}
	return rt;
}

bool api_route_allows(const struct api_route *rt, unsigned method)
{
	return (routes_mask(rt->r.methods) & method) != 0;
}

const char *api_route_allow_header(const struct api_route *rt, char *buf, size_t size)
{
	static const char *const names[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS" };
	unsigned mask = 0;
	size_t n = 0;
	u32 i;

	for (i = 0; i < routes.n; i++) {
		const struct api_route *o = &routes.r[i];

		if (o->r.prefix == rt->r.prefix && routes_str_eq(o->r.path, rt->r.path))
			mask |= routes_mask(o->r.methods);
	}
	buf[0] = '\0';
	if (size < sizeof "Allow: GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS\r\n")
		return buf;
	for (const char *s = "Allow: "; *s; s++)
		buf[n++] = *s;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(mask & (1u << i)))
			continue;
		if (buf[n - 1] != ' ') {
			buf[n++] = ',';
			buf[n++] = ' ';
		}
		for (const char *s = names[i]; *s; s++)
			buf[n++] = *s;
	}
	buf[n++] = '\r';
	buf[n++] = '\n';
	buf[n] = '\0';
	return buf;
}

__cold int api_routes_alloc(void)
{
	if (!routes.r)
		routes.r = kzalloc((VIREO_HTTP_ROUTES_MAX + API_ROUTES_RUNTIME) * sizeof *routes.r);
	return routes.r ? 0 : -ENOMEM;
}

void api_routes_reset(void)
{
	routes.n = routes.nruntime;
}

u32 api_routes_count(void)
{
	return routes.n;
}
