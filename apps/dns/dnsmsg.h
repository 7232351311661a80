/* apps/dns's engine: one query in, one response out, from a zone image
 * (zone.h, checked by dns_zone_open). Pure code: no allocation, no I/O,
 * built for the host tests and the fuzzer too. The glue (dns.c) owns
 * sockets, rate limiting, TCP and the configuration.
 *
 * What it answers (RFC 1034/1035, 2181, 2308, 3225, 3597, 4035, 4592, 5001,
 * 6604, 6891, 7873, 8482, 9471):
 *  - a query is parsed with every length checked: a 12-byte header, QR
 *    clear, QDCOUNT 1, ANCOUNT and NSCOUNT 0, at most one additional
 *    record, which must be an OPT (EDNS0) at the root with well-formed
 *    options; the question's name has no compression pointer, labels of at
 *    most 63 bytes and at most 255 bytes in all; nothing may follow the
 *    last record. Anything else: FORMERR (header only). Shorter than a
 *    header, or a response (QR set): no answer at all (dns_respond returns
 *    0), so two servers never answer each other.
 *  - opcode other than QUERY: NOTIMP; EDNS version other than 0: BADVERS;
 *    AXFR/IXFR, a class other than IN (CHAOS version.bind, id.server when
 *    configured), or a name outside the zone: REFUSED.
 *  - in the zone: exact matches, then wildcards (RFC 4592: the closest
 *    encloser's "*" child, synthesized with the query's name, NODATA when
 *    the wildcard has no such type, NXDOMAIN when there is none); CNAME
 *    chains followed inside the zone, at most DNS_CNAME_HOPS CNAMEs, a loop
 *    ending where a name comes back (each CNAME once, NOERROR); a chain
 *    into a delegation ends with its referral; the last lookup's RCODE
 *    (RFC 6604).
 *  - delegations: a referral (NS in authority, AA clear, glue in
 *    additional: every in-domain address or TC, RFC 9471; sibling glue when
 *    it fits); DS at a delegation is answered from this, the parent, side
 *    (RFC 4035 3.1.4.1).
 *  - additional data: the zone's A/AAAA of NS, MX and SRV targets.
 *  - NXDOMAIN and NODATA carry the SOA in authority, its TTL the smaller
 *    of its own and its MINIMUM (RFC 2308). ANY gets one RRset over UDP
 *    (RFC 8482) and every one over TCP.
 *  - AA set on authoritative answers, RD copied, RA clear; the question
 *    keeps the query's case; names compressed (owners, and the names in
 *    NS, CNAME, PTR, MX and SOA data; RFC 3597 4).
 *  - EDNS: the OPT's DO bit copied (RFC 3225 3); NSID (RFC 5001) and DNS
 *    cookies (RFC 7873, the server cookie of RFC 9018) when configured.
 *  - size: UDP answers fit 512 bytes, or the query's EDNS size clamped to
 *    [512, DNS_UDP_MAX]; TCP answers fit the caller's buffer (at most
 *    65535). What does not fit is cut at a whole record with TC set
 *    (additional data other than in-domain glue is left out without TC,
 *    RFC 2181 9). */
#ifndef VIREO_DNS_DNSMSG_H
#define VIREO_DNS_DNSMSG_H

#include "zone.h"
#include "vireo/siphash.h"
#include "vireo/types.h"

#define DNS_HDR_LEN 12
#define DNS_UDP_MIN 512
/* The largest UDP answer whatever EDNS asks: 1232 keeps a reply in one
 * IPv6 packet on a 1280-byte path (the 2020 DNS flag day value). */
#define DNS_UDP_MAX 1232
/* CNAMEs written in one answer at most; a longer chain ends after the
 * last one written, NOERROR, for the resolver to go on. */
#define DNS_CNAME_HOPS 8
/* Names remembered for compression per message; more are written whole. */
#define DNS_COMP_NAMES 64

#define DNS_TYPE_A 1
#define DNS_TYPE_NS 2
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_SOA 6
#define DNS_TYPE_PTR 12
#define DNS_TYPE_MX 15
#define DNS_TYPE_TXT 16
#define DNS_TYPE_AAAA 28
#define DNS_TYPE_SRV 33
#define DNS_TYPE_OPT 41
#define DNS_TYPE_DS 43
#define DNS_TYPE_IXFR 251
#define DNS_TYPE_AXFR 252
#define DNS_TYPE_ANY 255

#define DNS_RCODE_NOERROR 0
#define DNS_RCODE_FORMERR 1
#define DNS_RCODE_SERVFAIL 2
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_NOTIMP 4
#define DNS_RCODE_REFUSED 5
#define DNS_RCODE_BADVERS 16	/* extended: 1 in the OPT, 0 in the header */

#define DNS_CLASS_IN 1
#define DNS_CLASS_CH 3

#define DNS_OPT_NSID 3
#define DNS_OPT_COOKIE 10
#define DNS_NSID_MAX 64		/* bytes of NSID the server may be given */
#define DNS_COOKIE_CLIENT 8
#define DNS_COOKIE_SERVER 16	/* RFC 9018: version, reserved, time, hash */
/* A server cookie is good for an hour, and up to 5 minutes from the future
 * (RFC 9018 4.3). */
#define DNS_COOKIE_LIFE_S 3600
#define DNS_COOKIE_SKEW_S 300

/* What the server says besides the zone, set by the glue from its
 * configuration. */
struct dns_server {
	const struct dns_zone *zone;
	const u8 *nsid;		/* NSID payload (RFC 5001); NULL or nsid_len 0: off */
	u16 nsid_len;		/* at most DNS_NSID_MAX */
	bool cookies;		/* answer DNS cookies (RFC 7873) */
	struct siphash_key cookie_key;	/* the server secret */
	bool chaos;		/* answer CH TXT version.bind/version.server and id.server/hostname.bind */
	const char *version;	/* version.bind's text */
	const char *id;		/* id.server's text */
};

/* Who asked, for the server cookie: the source address and the time. */
struct dns_peer {
	const u8 *addr;	/* 4 or 16 bytes, NULL: none (cookies are then never valid) */
	u8 alen;
	u32 now_s;	/* seconds on any clock that only goes forward */
};

enum dns_cookie_state {
	DNS_COOKIE_NONE,	/* no COOKIE option, or cookies off */
	DNS_COOKIE_NEW,		/* a client cookie only, or a server cookie that did not check */
	DNS_COOKIE_GOOD,	/* a server cookie of ours for this client: its address is proven */
};

/* What came in and what went out, for metrics and for dns_slip(). */
struct dns_result {
	u16 rcode;	/* DNS_RCODE_*, the extended value for BADVERS */
	u16 qtype;
	u16 qlen;	/* header + question bytes of the response (0: none) */
	u16 ancount;
	bool edns;	/* the query had an OPT record */
	bool truncated;	/* TC set */
	bool referral;
	u8 cookie;	/* enum dns_cookie_state */
};

/* Answers the query q[0..qlen) from peer p into out[0..outcap). tcp: the
 * answer goes over TCP (no 512-byte or EDNS limit, only outcap). Returns
 * the response's length, or 0 when nothing must be sent (see above).
 * outcap must be at least DNS_UDP_MIN. */
size_t dns_respond(const struct dns_server *s, const struct dns_peer *p, const u8 *q, size_t qlen, u8 *out,
		   size_t outcap, bool tcp, struct dns_result *res);

/* Turns a response into the response-rate limiter's "slip": header and
 * question only, TC set, so a real client retries over TCP. Returns the
 * new length (0 if the response had no question to keep). */
size_t dns_slip(u8 *resp, size_t len, const struct dns_result *res);

/* TCP framing: a 2-byte big-endian length, then that many bytes. The
 * reader keeps one message of at most DNS_TCP_QUERY_MAX bytes. */
#define DNS_TCP_QUERY_MAX 1024
struct dns_tcp_reader {
	u8 buf[2 + DNS_TCP_QUERY_MAX];
	u16 have;
};
/* Feeds up to len bytes; returns how many it took (it stops after a whole
 * message). *msg_len is set when buf[2..2+*msg_len) holds one whole
 * message (call dns_tcp_next before feeding more), else 0. Returns -1 on a
 * length of 0 or over DNS_TCP_QUERY_MAX (close the connection). */
long dns_tcp_feed(struct dns_tcp_reader *r, const u8 *data, size_t len, size_t *msg_len);
void dns_tcp_next(struct dns_tcp_reader *r);

#endif
