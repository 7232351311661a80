/* The zone apps/dns serves: an image apps/dns/mkzone.py compiles from a zone
 * file at build time. The same bytes are the built-in zone (a C array in
 * the image) and EFI/vireo/app/zone.bin on the ESP, which replaces it at
 * boot without a rebuild. dns_zone_open() checks every byte of an image
 * once, so the engine (dnsmsg.c) can then trust it; nothing is parsed at
 * query time.
 *
 * Layout, little-endian, every offset from the image's start:
 *   header   64 bytes: "VIREODNS", format (1), total length, a SipHash-2-4
 *            checksum (key "vireo dns zone 1") of bytes [24, total), the
 *            SOA serial, the apex node, counts and offsets of the tables.
 *   nodes    16 bytes each: every name that exists in the zone (owners and
 *            the empty non-terminals between them and the apex), sorted by
 *            their lowercase wire form (byte order, a shorter name first
 *            when one is a prefix of another); each with its records' range
 *            and flags (a delegation; "*.<this name>" exists).
 *   records  16 bytes each, a node's records contiguous and sorted by type.
 *   data     names (wire form, lowercase) and record data.
 */
#ifndef VIREO_DNS_ZONE_H
#define VIREO_DNS_ZONE_H

#include "vireo/types.h"

#define DNS_ZONE_MAGIC "VIREODNS"
#define DNS_ZONE_FORMAT 1
#define DNS_ZONE_HDR_LEN 64
#define DNS_ZONE_CHECK_KEY "vireo dns zone 1"
#define DNS_RR_NO_NAME 0xffff
/* The largest RRset mkzone.py accepts: the sum over its records of 12 +
 * data bytes (a 2-byte owner pointer and 10 fixed bytes each), so that it
 * always fits a TCP answer of DNS_TCP_ANSWER_MAX (8,192) bytes beside the
 * header, the question and the OPT record. Checked again at load. */
#define DNS_RRSET_MAX 7680

#define DNS_NODE_DELEG 1	/* NS below the apex: a zone cut */
#define DNS_NODE_WILD 2		/* "*.<this name>" exists: the source of synthesis */

struct dns_znode {
	u32 name;	/* offset of the lowercase wire name */
	u16 name_len;	/* 1..255, the root's 0 included */
	u16 flags;	/* DNS_NODE_* */
	u32 rr_first;	/* its records: [rr_first, rr_first + rr_count) */
	u32 rr_count;
};

struct dns_zrr {
	u16 type;
	u16 rdlen;
	u32 ttl;
	u32 rdata;	/* offset of the record's data */
	/* Offsets in the data of a name written compressed (NS, CNAME, PTR:
	 * 0, MX: 2) and of a name whose in-zone addresses go in additional
	 * data (NS: 0, MX: 2, SRV: 6); DNS_RR_NO_NAME if none. SOA's two
	 * names are written compressed by type. */
	u16 cname_off;
	u16 add_off;
};

_Static_assert(sizeof(struct dns_znode) == 16 && sizeof(struct dns_zrr) == 16, "zone image layout");

/* An image dns_zone_open() accepted: pointers into it. */
struct dns_zone {
	const u8 *base;
	u32 len;
	u32 serial;
	const struct dns_znode *nodes;
	u32 nnodes;
	const struct dns_zrr *rrs;
	u32 nrrs;
	const u8 *data;
	u32 data_len;
	u32 apex;	/* node index */
	const u8 *apex_name;
	u16 apex_len;
};

/* Checks the image img[0..len) (8-byte aligned) and fills *z on success
 * (0). Otherwise -1 with what is wrong in err (NUL-terminated): the first
 * problem found. Checked: header, format, length, checksum, every table in
 * bounds, every name well formed and lowercase, nodes strictly sorted and
 * all at or below the apex, each one's parent present, flags true to the
 * data, records in range and sorted by type, a CNAME alone, name offsets
 * landing on whole names inside the data, SOA and NS at the apex, RRsets
 * within DNS_RRSET_MAX. */
int dns_zone_open(struct dns_zone *z, const u8 *img, size_t len, char *err, size_t errlen);

/* The image's name data at off (after dns_zone_open, trusted). */
static inline const u8 *dns_zone_name(const struct dns_zone *z, const struct dns_znode *n)
{
	return z->data + n->name;
}

static inline const u8 *dns_zone_rdata(const struct dns_zone *z, const struct dns_zrr *rr)
{
	return z->data + rr->rdata;
}

/* The built-in zone: mkzone.py's C output (make APP=apps/dns DNS_ZONE=). */
extern const u8 dns_zone_builtin[];
extern const u32 dns_zone_builtin_len;

#endif
