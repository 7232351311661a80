/*
 * apps/proxy's pure parts (host-tested: tests/test_pxhead.c): the
 * upstream list, which header fields are hop-by-hop, the request target
 * sent upstream, the choice of an upstream, latency quantiles, the
 * Forwarded element (RFC 7239), durations in the configuration.
 */
#ifndef APPS_PROXY_PXHEAD_H
#define APPS_PROXY_PXHEAD_H

#include "vireo/types.h"

#define PX_UPSTREAMS_MAX 4	/* one HTTP client pool each (VIREO_HTTP_POOLS_MAX) */
#define PX_HOST_MAX 253

struct px_upstream_addr {
	char host[PX_HOST_MAX + 1];	/* a name or an address literal, no brackets */
	u16 port;
	bool tls;	/* https://: TLS, the certificate verified for host */
};

/* "host:port,[v6]:port,..." into out[0..max): the count (>= 1), or
 * -EINVAL (an empty item, no port, a port of 0 or over 65535, a host of a
 * byte other than [A-Za-z0-9.-:] or too long) or -E2BIG (more than max).
 * An item may start with "http://" or "https://" (lower case; tls set),
 * and then its port may be left out (80, 443); nothing may follow the
 * port (no path, no user). */
int px_parse_upstreams(const char *s, struct px_upstream_addr *out, unsigned max);

/* Whether the field name name[0..n) is lit (lower case), ignoring case. */
bool px_name_is(const char *name, size_t n, const char *lit);

/* Whether a field is hop-by-hop (RFC 9110 7.6.1), never passed on:
 * Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding,
 * Upgrade, and every field the message's Connection names (conn: the
 * Connection values joined by ",", or NULL). */
bool px_hop_by_hop(const char *name, size_t n, const char *conn);

/* Whether a request asks to switch protocols (a WebSocket): its Connection
 * (conn: the values joined by ",", or NULL) names "upgrade" and its
 * Upgrade value (upgrade, or NULL) is a list of protocols (printable, no
 * '"' or ';'), passed on as it came. */
bool px_upgrade(const char *conn, const char *upgrade);

/* The origin-form target for a decoded path (as the runtime gives it) and
 * its raw query ("" for none): every byte but RFC 3986's pchar and '/'
 * percent-encoded again. Its length, or 0 when it does not fit out[size]. */
size_t px_target(const char *path, const char *query, char *out, size_t size);

/* The same for the path as it came (vireo_req_raw_path(): "%2F" stays
 * "%2F", not "/"): its escapes kept, any other byte outside pchar and '/'
 * encoded (the runtime's parser let none through). */
size_t px_target_raw(const char *raw, const char *query, char *out, size_t size);

/* One upstream's state, as the choice sees it. */
struct px_choice {
	u32 active;		/* requests on it now */
	u64 down_until;		/* ejected until then (ms), 0: up */
	bool tried;		/* this request failed on it already */
};
/* The upstream for the next request among up[0..n): those not tried and
 * not ejected at now; round-robin from *rr (which advances), or with
 * least the one with the fewest active requests (ties round-robin). When
 * every untried one is ejected, the ejected one whose cool-down ends
 * first (a proxy with every upstream down still tries). -1: all tried. */
int px_choose(const struct px_choice *up, unsigned n, u64 now, bool least, u32 *rr);
/* Whether up[i] may take the request at now (not tried, not ejected); an
 * ejected one becomes *rested when its cool-down ends before *rested's
 * (-1: none yet). px_choose's and px_hash_choose's common step. */
bool px_usable(const struct px_choice *up, unsigned i, u64 now, int *rested);

/* Latency buckets (ms upper bounds; the last catches the rest). */
#define PX_LAT_BUCKETS 12
extern const u32 px_lat_bounds[PX_LAT_BUCKETS];
/* The bucket of ms. */
unsigned px_lat_bucket(u64 ms);
/* The q-th per mille quantile (500: p50, 990: p99) of counts[], as its
 * bucket's upper bound in ms; 0 when there are none. */
u32 px_lat_quantile(const u64 counts[PX_LAT_BUCKETS], unsigned permille);

/* One Forwarded element (RFC 7239 section 4) into out[size]:
 * "for=NODE;proto=http|https[;host=HOST]". NODE is the client's address
 * text: IPv4 as is, IPv6 (any ':' in it) quoted and bracketed
 * ("for=\"[2001:db8::1]\""), "unknown" when addr is NULL, "" or has a
 * byte no address text has (other than hex digits, '.' and ':'). HOST (the
 * request's Host, NULL or "": left out) is a token when every byte is a
 * tchar, else a quoted-string with '"' and '\\' escaped; one with a control
 * byte is left out. Its length, or 0 when it does not fit. */
size_t px_forwarded(const char *addr, bool https, const char *host, char *out, size_t size);

/* An upstream's health as its checks see it: up until fall checks in a
 * row fail, then down until rise checks in a row pass. */
struct px_health {
	bool down;
	u32 run;	/* failures in a row while up, passes in a row while down */
};
/* One check's result into h: +1 when it brought the upstream up, -1 when it
 * took it down, 0 when the state stays (rise and fall >= 1). */
int px_health_step(struct px_health *h, bool ok, u32 rise, u32 fall);

/* A duration in the configuration: "N" or "Nms" (milliseconds) or "Ns"
 * (seconds), in [min_ms, max_ms]: 0 and *ms, or -EINVAL. */
int px_parse_ms(const char *s, u64 min_ms, u64 max_ms, u64 *ms);

#endif
