/* apps/dns's engine: one query in, one response out, from a zone table
 * (zone.h). Pure code: no allocation, no I/O, built for the host tests and
 * the fuzzer too. The glue (dns.c) owns sockets, rate limiting and TCP.
 *
 * What it answers (RFC 1034/1035, 2181, 2308, 6891):
 *  - a query is parsed with every length checked: a 12-byte header, QR
 *    clear, QDCOUNT 1, ANCOUNT and NSCOUNT 0, at most one additional
 *    record, which must be an OPT (EDNS0) at the root; the question's name
 *    has no compression pointer, labels of at most 63 bytes and at most 255
 *    bytes in all; nothing may follow the last record. Anything else:
 *    FORMERR (header only). Shorter than a header, or a response (QR set):
 *    no answer at all (dns_respond returns 0), so two servers never answer
 *    each other.
 *  - opcode other than QUERY: NOTIMP; EDNS version other than 0: BADVERS;
 *    class other than IN, AXFR/IXFR, or a name outside the zone: REFUSED.
 *  - in the zone: exact matches (no wildcards), CNAME chains followed
 *    inside the zone for at most DNS_CNAME_HOPS links, referrals at a
 *    delegation (NS in authority, AA clear, glue in additional), A/AAAA of
 *    in-zone NS and MX targets in additional, NXDOMAIN and NODATA with the
 *    SOA in authority (its TTL the smaller of its own and its minimum).
 *    ANY gets one RRset over UDP (RFC 8482) and every one over TCP.
 *  - AA set on authoritative answers, RD copied, RA clear; the question
 *    keeps the query's case; names are compressed.
 *  - size: UDP answers fit 512 bytes, or the query's EDNS size clamped to
 *    [512, DNS_UDP_MAX]; TCP answers fit the caller's buffer (at most
 *    65535). What does not fit is cut at a whole record with TC set (missing
 *    additional data is left out without TC, RFC 2181 9). */
#ifndef VIREO_DNS_DNSMSG_H
#define VIREO_DNS_DNSMSG_H

#include "apps/dns/zone.h"
#include "lib/types.h"

#define DNS_HDR_LEN 12
#define DNS_UDP_MIN 512
/* The largest UDP answer whatever EDNS asks: 1232 keeps a reply in one
 * IPv6 packet on a 1280-byte path (the 2020 DNS flag day value). */
#define DNS_UDP_MAX 1232
#define DNS_CNAME_HOPS 8
/* Names remembered for compression per message; more are written whole. */
#define DNS_COMP_NAMES 64

#define DNS_TYPE_A 1
#define DNS_TYPE_NS 2
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_SOA 6
#define DNS_TYPE_MX 15
#define DNS_TYPE_TXT 16
#define DNS_TYPE_AAAA 28
#define DNS_TYPE_OPT 41
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

/* What came in and what went out, for metrics and for dns_slip(). */
struct dns_result {
	u16 rcode;	/* DNS_RCODE_*, the extended value for BADVERS */
	u16 qtype;
	u16 qlen;	/* header + question bytes of the response (0: none) */
	u16 ancount;
	bool edns;	/* the query had an OPT record */
	bool truncated;	/* TC set */
	bool referral;
};

/* Answers the query q[0..qlen) into out[0..outcap). tcp: the answer goes
 * over TCP (no 512-byte or EDNS limit, only outcap). Returns the response's
 * length, or 0 when nothing must be sent (see above). outcap must be at
 * least DNS_UDP_MIN. */
size_t dns_respond(const struct dns_zone *z, const u8 *q, size_t qlen, u8 *out, size_t outcap, bool tcp,
		   struct dns_result *res);

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
