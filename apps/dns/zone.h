/* The zone apps/dns serves: a table apps/dns/mkzone.py writes from a zone
 * file at build time (read-only data, nothing parsed at run time).
 *
 * Names are in wire form (length-prefixed labels ending in the root's 0),
 * lowercased. The records are sorted by owner name (byte order of that form,
 * a shorter name first when one is a prefix of another) then by type, so one
 * binary search finds an owner's records; nodes lists every name that exists
 * in the zone, owners and the empty non-terminals between them and the apex,
 * in the same order, which tells NXDOMAIN from NODATA. */
#ifndef VIREO_DNS_ZONE_H
#define VIREO_DNS_ZONE_H

#include "lib/types.h"

#define DNS_RR_NO_NAME 0xffff

struct dns_name {
	const u8 *wire;
	u16 len;	/* 1..255, the root's 0 included */
};

struct dns_rr {
	const u8 *name;	/* owner, lowercase wire form */
	u16 name_len;
	u16 type;
	u32 ttl;
	const u8 *rdata;
	u16 rdlen;
	/* Offset in rdata of a name written compressed and followed for
	 * additional data (CNAME and NS: 0, MX: 2), DNS_RR_NO_NAME if none. */
	u16 rdname;
};

struct dns_zone {
	struct dns_name apex;	/* the SOA's owner */
	const struct dns_rr *rrs;
	u32 nrrs;
	const struct dns_name *nodes;
	u32 nnodes;
};

#endif
