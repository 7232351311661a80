/* The PROXY protocol (HAProxy's, versions 1 and 2): the header a load
 * balancer or proxy sends first on a connection to say whose it is. vireo
 * takes it only from the prefixes proxy.trusted= lists (runtime/http/
 * server.c), on plain HTTP; anyone else's bytes are HTTP. A trusted peer
 * whose first bytes cannot start one speaks HTTP, and its requests'
 * X-Forwarded-For name the client. Pure code (runtime/http/proxyproto.c). */
#ifndef VIREO_RUNTIME_HTTP_PROXYPROTO_H
#define VIREO_RUNTIME_HTTP_PROXYPROTO_H

#include "lib/types.h"

/* The longest header taken: version 1's 107 bytes, or version 2's 16 bytes
 * and up to 520 of addresses and TLVs (the TLVs are skipped). A longer one
 * is refused: the bound on what a trusted peer makes the server hold
 * before HTTP starts. */
#define PROXYPROTO_MAX 536

struct proxyproto_hdr {
	u8 family;	/* 4 or 6: src and dst below; 0: LOCAL or UNKNOWN, the
			 * connection's own addresses stand (a health check) */
	u8 src[16], dst[16];	/* IPv6, or IPv4 in its mapped form ::ffff:a.b.c.d */
	u16 sport, dport;
};

/*
 * The header at the start of b[0..n): > 0, the bytes it takes (*h filled);
 * 0, not complete yet (n is below what it needs and every byte so far
 * fits); -EINVAL, not a PROXY header or a malformed one (version 1: not
 * "PROXY TCP4|TCP6|UNKNOWN" with two addresses of the family and two
 * ports 0-65535, single spaces, CRLF within 107 bytes; version 2: not
 * version 2, a command other than LOCAL/PROXY, a length the family's
 * addresses do not fit in); -E2BIG, longer than PROXYPROTO_MAX.
 */
int proxyproto_parse(const u8 *b, size_t n, struct proxyproto_hdr *h);

/* Whether b[0..n) (n >= 1) cannot start a PROXY header of either version
 * (a byte differs from both signatures): a trusted peer's plain HTTP. */
bool proxyproto_absent(const u8 *b, size_t n);

/*
 * X-Forwarded-For: the client of a request from a trusted peer. Starting
 * at hop (the connection's peer, 16-byte form: allow.h), while the address
 * at hand is in trusted, the next address to its left in the values
 * vals[0..n) (every X-Forwarded-For field of the head in order, each a
 * comma-separated list; a proxy appends its peer to the last, or adds a
 * field) becomes the one at hand: the rightmost untrusted address, so a
 * client's own X-Forwarded-For entries, left of what the trusted proxies
 * appended, are never taken. An element that is not a bare IPv4 or IPv6
 * address ("unknown", a port, brackets, an obfuscated name) stops the
 * walk at the trusted hop before it. The result goes to client[16];
 * returns the addresses taken from the values (0: hop stands).
 */
struct allow_list;
unsigned proxyproto_xff_client(const struct allow_list *trusted, const u8 hop[16], const char *const vals[],
			       size_t n, u8 client[16]);

#endif
