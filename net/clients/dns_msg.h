/* DNS (RFC 1035) messages for the resolver: the query a client sends and a
 * hostile-input parser for the answer (RFC 2308's negative answers, RFC
 * 2181's TTL rules). Pure: no state, no allocation; every response is
 * treated as spoofable (its id, question, names, counts, lengths and
 * compression pointers are all checked before use). */
#ifndef VIREO_NET_DNS_MSG_H
#define VIREO_NET_DNS_MSG_H

#include "lib/types.h"

#define DNS_PORT 53
#define DNS_NAME_MAX 253		/* dotted, without the root's trailing dot */
#define DNS_HDR_LEN 12
/* A query: the header, the name in labels (DNS_NAME_MAX + 2 bytes: a
 * length byte before each label, the root's zero), type and class. */
#define DNS_QUERY_MAX (DNS_HDR_LEN + DNS_NAME_MAX + 2 + 4)
#define DNS_UDP_MAX 512			/* RFC 1035 section 4.2.1, no EDNS: longer is truncated */
#define DNS_TYPE_A 1
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_SOA 6
#define DNS_TYPE_AAAA 28
#define DNS_ADDRS_MAX 8			/* addresses kept from one answer; more are ignored */
#define DNS_CNAME_MAX 8			/* aliases followed in one answer */
#define DNS_TTL_MAX 0x7fffffffu		/* RFC 2181 section 8: above it counts as 0 */

/* A query for name (dotted, an optional trailing dot, labels of 1..63,
 * at most DNS_NAME_MAX) of type qtype, class IN, recursion desired, with
 * id, into buf[0..cap). Returns its length, or -EINVAL (a bad name) or
 * -ENOSPC (cap too small: DNS_QUERY_MAX always suffices). */
int dns_msg_query(u8 *buf, size_t cap, u16 id, const char *name, u16 qtype);

enum dns_result {
	DNS_ANSWER = 1,		/* addresses (n >= 1) */
	DNS_NXDOMAIN,		/* the name does not exist (RCODE 3) */
	DNS_NODATA,		/* it exists, with no record of the type asked */
};

struct dns_answer {
	enum dns_result result;
	u8 n;				/* addresses in addr[], DNS_ANSWER only */
	u8 alen;			/* 4 (A) or 16 (AAAA) */
	u8 addr[DNS_ADDRS_MAX][16];
	/* DNS_ANSWER: the least TTL of the records used (the aliases' and the
	 * addresses'). Negative: the least of the SOA's TTL and its MINIMUM
	 * (RFC 2308 section 5), or none when the authority has no SOA for the
	 * name or an ancestor of it (has_soa false: not to be cached long). */
	u32 ttl;
	bool has_soa;
};

/*
 * Checks a response p[0..len) to the query (id, name, qtype) and fills *a.
 * Refused (-EBADMSG, *why set to a short static reason): shorter than a
 * header, not a response, another id, opcode or question (one question,
 * the same name case-insensitively, type and class IN), counts the message
 * cannot hold, a name that runs past the end, has a bad label type, is
 * longer than 255 bytes, or follows a compression pointer that is not
 * strictly backwards (no loop can be built), a record running past the
 * end. -EAGAIN: the server failed (SERVFAIL, REFUSED, NOTIMP, truncated:
 * ask another). Records for other names, of other types or classes, or
 * beyond DNS_ADDRS_MAX are ignored; aliases are followed in order from the
 * name asked, at most DNS_CNAME_MAX.
 */
int dns_msg_parse(const u8 *p, size_t len, u16 id, const char *name, u16 qtype, struct dns_answer *a,
		  const char **why);

/* Copies name lowercased and without a trailing dot into out[DNS_NAME_MAX + 1]:
 * 0, or -EINVAL when it is not a host name dns_msg_query() takes. */
int dns_msg_name_norm(const char *name, char out[DNS_NAME_MAX + 1]);

#endif
