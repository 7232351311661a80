/* Address allow-lists (runtime/http/allow.c): a comma-separated list of
 * IPv4 and IPv6 prefixes (CIDR), parsed once at boot, matched per request.
 * Every address is compared as IPv6: an IPv4 one as its mapped form
 * ::ffff:a.b.c.d, so A.B.C.D/n is ::ffff:A.B.C.D/(96 + n) and ::/0 matches
 * every client, IPv4 or IPv6. The metrics.allow= key is one (for /metrics). */
#ifndef VIREO_RUNTIME_HTTP_ALLOW_H
#define VIREO_RUNTIME_HTTP_ALLOW_H

#include "lib/types.h"
#include "lwip/ip_addr.h"

#define ALLOW_MAX 8	/* prefixes in one list */

struct allow_list {
	u8 n;
	struct {
		u8 a[16];	/* host bits zero */
		u8 len;		/* 0..128 */
	} p[ALLOW_MAX];
};

/* Parses s into *(struct allow_list *)out (a cmdline_opt's .parse; only on
 * success: a refused list leaves *out as it was). Returns 0, or -EINVAL with the bad prefix and why in why[why_len]:
 * a malformed address, a length out of range, host bits set below the
 * length, an empty entry or an empty list, more than ALLOW_MAX entries. */
int allow_parse(const char *s, void *out, char *why, size_t why_len);

/* An IPv6 address in text, the whole of s (no prefix, no zone) into
 * out[16]; false if malformed. */
bool allow_parse_v6(const char *s, u8 out[16]);

/* The 16-byte form every list compares: an IPv6 address as it is, an IPv4
 * one as ::ffff:a.b.c.d. allow_addr_v4 takes v4 in host order; allow_addr_ip
 * an lwIP address; allow_addr_to_ip is the inverse (a mapped address back to
 * IPv4). */
void allow_addr_v4(u8 a[16], u32 v4);
void allow_addr_ip(u8 a[16], const ip_addr_t *addr);
void allow_addr_to_ip(ip_addr_t *addr, const u8 a[16]);

/* Whether the first len bits (0..128) of a and prefix agree. */
bool allow_prefix_match(const u8 prefix[16], unsigned len, const u8 a[16]);

/* Whether the 16-byte (IPv6 or IPv4-mapped) address a lies in a prefix of l;
 * an empty list (n == 0, never parsed: the default) matches everyone. */
bool allow_match(const struct allow_list *l, const u8 a[16]);

/* Whether addr (an lwIP address, IPv4 or IPv6) lies in a prefix of l. */
bool allow_match_ip(const struct allow_list *l, const ip_addr_t *addr);

/* metrics.allow=: who may read /metrics (the default, empty, is everyone:
 * ::/0 as the key's table shows it). */
extern struct allow_list metrics_allow;

/* proxy.trusted=: the peers whose PROXY protocol header or X-Forwarded-For
 * names the client (runtime/http/proxyproto.h); empty (the default):
 * nobody's. Unlike metrics.allow=, an empty list matches no one: test n. */
extern struct allow_list proxy_trusted;

#endif
