/* apps/dns: checking a compiled zone image before it is served (zone.h).
 * Pure code, built for the host tests and the fuzzer too. Every field is
 * treated as hostile: an image from the ESP is whatever was written there. */
#include "zone.h"
#include "vireo/byteorder.h"
#include "vireo/siphash.h"
#include "vireo/string.h"

#define DNS_TYPE_NS 2
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_SOA 6
#define DNS_TYPE_DS 43

static int zone_fail(char *err, size_t errlen, const char *what, u64 where)
{
	char num[24];
	size_t n = 0, o = 0;

	if (!errlen)
		return -1;
	while (what[o] && o + 1 < errlen) {
		err[o] = what[o];
		o++;
	}
	err[o] = 0;
	if (where == (u64)-1)
		return -1;
	do {
		num[n++] = (char)('0' + where % 10);
		where /= 10;
	} while (where);
	if (o + n + 2 >= errlen)
		return -1;
	err[o++] = ' ';
	err[o++] = '#';
	while (n)
		err[o++] = num[--n];
	err[o] = 0;
	return -1;
}

#define FAIL(what, where) return zone_fail(err, errlen, (what), (u64)(where))
#define NOWHERE ((u64)-1)

/* A wire name at data[off..limit): whole, lowercase, labels 1..63, at most
 * 255 bytes. Returns its length, 0 if it is not one. lower: labels must be
 * lowercase (node names; names in record data keep the zone file's case). */
static size_t zone_name_ok(const u8 *data, size_t off, size_t limit, bool lower)
{
	size_t i = off;

	while (i < limit) {
		u8 l = data[i];

		if (l == 0)
			return i + 1 - off;
		if (l > 63 || limit - i - 1 < l || i + 1 + l - off > 254)
			return 0;
		for (unsigned k = 1; k <= l; k++)
			if (lower && data[i + k] >= 'A' && data[i + k] <= 'Z')
				return 0;
		i += l + 1u;
	}
	return 0;
}

static int zone_cmp(const u8 *a, size_t la, const u8 *b, size_t lb)
{
	int c = memcmp(a, b, la < lb ? la : lb);

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

static bool zone_find(const struct dns_zone *z, const u8 *name, size_t len)
{
	u32 lo = 0, hi = z->nnodes;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		const struct dns_znode *n = &z->nodes[mid];
		int c = zone_cmp(z->data + n->name, n->name_len, name, len);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* name (wire, trusted here) is the apex or below it. */
static bool zone_under(const u8 *name, size_t len, const u8 *apex, size_t alen)
{
	size_t i = 0;

	while (len - i >= alen) {
		if (len - i == alen)
			return memcmp(name + i, apex, alen) == 0;
		i += name[i] + 1u;
	}
	return false;
}

static int zone_check_rr(const struct dns_zone *z, const struct dns_zrr *rr, u32 idx, char *err, size_t errlen)
{
	const u8 *d;
	size_t m, r;

	if (rr->rdata > z->data_len || z->data_len - rr->rdata < rr->rdlen)
		FAIL("zone image: record data out of bounds, record", idx);
	d = z->data + rr->rdata;
	if (rr->type == 41 || rr->type == 0 || (rr->type >= 128 && rr->type <= 255))
		FAIL("zone image: a meta type as data, record", idx);
	if (rr->ttl > 0x7fffffff)
		FAIL("zone image: TTL over 2^31-1, record", idx);
	if (rr->type == DNS_TYPE_SOA) {
		m = zone_name_ok(d, 0, rr->rdlen, false);
		r = m ? zone_name_ok(d, m, rr->rdlen, false) : 0;
		if (!m || !r || rr->rdlen != m + r + 20)
			FAIL("zone image: malformed SOA, record", idx);
	}
	if (rr->cname_off != DNS_RR_NO_NAME) {
		/* Only where a client may find a compressed name (RFC 3597 4). */
		if (rr->type != DNS_TYPE_NS && rr->type != DNS_TYPE_CNAME && rr->type != 12 && rr->type != 15)
			FAIL("zone image: a compressed name in a type that has none, record", idx);
		if (rr->cname_off >= rr->rdlen ||
		    zone_name_ok(d, rr->cname_off, rr->rdlen, false) != (size_t)rr->rdlen - rr->cname_off)
			FAIL("zone image: a name offset not ending the data, record", idx);
	}
	if (rr->type == DNS_TYPE_CNAME && rr->cname_off != 0)
		FAIL("zone image: a CNAME without its name, record", idx);
	if (rr->add_off != DNS_RR_NO_NAME &&
	    (rr->add_off >= rr->rdlen || !zone_name_ok(d, rr->add_off, rr->rdlen, false)))
		FAIL("zone image: a bad additional-name offset, record", idx);
	return 0;
}

int dns_zone_open(struct dns_zone *z, const u8 *img, size_t len, char *err, size_t errlen)
{
	static const u8 key_bytes[16] = DNS_ZONE_CHECK_KEY;
	struct siphash_key key;
	u32 total, nodes_off, rrs_off, data_off, next_rr = 0;
	const struct dns_znode *apex;

	memset(z, 0, sizeof *z);
	if (len < DNS_ZONE_HDR_LEN || memcmp(img, DNS_ZONE_MAGIC, 8) != 0)
		FAIL("not a zone image (no VIREODNS header): compile the zone with apps/dns/mkzone.py --bin", NOWHERE);
	if (((uintptr_t)img & 7) != 0)
		FAIL("zone image: not 8-byte aligned in memory", NOWHERE);
	if (get_le32(img + 8) != DNS_ZONE_FORMAT)
		FAIL("zone image: format version is not 1 (another mkzone.py?); format", get_le32(img + 8));
	total = get_le32(img + 12);
	if (total != len)
		FAIL("zone image: its header's length is not the file's; header says", total);
	siphash_key_from_bytes(&key, key_bytes);
	if (siphash24(&key, img + 24, len - 24) != get_le64(img + 16))
		FAIL("zone image: checksum mismatch (damaged or edited)", NOWHERE);
	z->base = img;
	z->len = total;
	z->serial = get_le32(img + 24);
	z->apex = get_le32(img + 28);
	z->nnodes = get_le32(img + 32);
	z->nrrs = get_le32(img + 36);
	nodes_off = get_le32(img + 40);
	rrs_off = get_le32(img + 44);
	data_off = get_le32(img + 48);
	z->data_len = get_le32(img + 52);
	/* Tables in order, aligned, in bounds; the counts bounded by the
	 * length so the products below cannot overflow. */
	if (z->nnodes == 0 || z->nnodes > len / 16 || z->nrrs > len / 16 || nodes_off != DNS_ZONE_HDR_LEN ||
	    rrs_off != nodes_off + z->nnodes * 16u || data_off != rrs_off + z->nrrs * 16u || data_off > len ||
	    len - data_off != z->data_len)
		FAIL("zone image: tables out of bounds", NOWHERE);
	z->nodes = (const struct dns_znode *)(img + nodes_off);
	z->rrs = (const struct dns_zrr *)(img + rrs_off);
	z->data = img + data_off;
	if (z->apex >= z->nnodes)
		FAIL("zone image: apex out of range", z->apex);
	for (u32 i = 0; i < z->nnodes; i++) {
		const struct dns_znode *n = &z->nodes[i];

		if (n->name >= z->data_len || n->name_len == 0 ||
		    zone_name_ok(z->data, n->name, z->data_len, true) != n->name_len)
			FAIL("zone image: a malformed or uppercase node name, node", i);
		if (i && zone_cmp(z->data + z->nodes[i - 1].name, z->nodes[i - 1].name_len, z->data + n->name,
				  n->name_len) >= 0)
			FAIL("zone image: nodes out of order, node", i);
		if (n->rr_first != next_rr || n->rr_count > z->nrrs - next_rr)
			FAIL("zone image: record ranges not contiguous, node", i);
		next_rr += n->rr_count;
		if (n->flags & ~(DNS_NODE_DELEG | DNS_NODE_WILD))
			FAIL("zone image: unknown node flags, node", i);
	}
	if (next_rr != z->nrrs)
		FAIL("zone image: records no node owns", next_rr);
	apex = &z->nodes[z->apex];
	z->apex_name = z->data + apex->name;
	z->apex_len = apex->name_len;
	for (u32 i = 0; i < z->nnodes; i++) {
		const struct dns_znode *n = &z->nodes[i];
		const u8 *name = z->data + n->name;
		bool has_ns = false, has_cname = false, has_ds = false, has_soa = false;
		u8 wild[257];
		u32 set_bytes = 0;

		if (!zone_under(name, n->name_len, z->apex_name, z->apex_len))
			FAIL("zone image: a node outside the apex, node", i);
		if (i != z->apex && !zone_find(z, name + name[0] + 1, n->name_len - name[0] - 1u))
			FAIL("zone image: a node whose parent is missing, node", i);
		for (u32 k = n->rr_first; k < n->rr_first + n->rr_count; k++) {
			const struct dns_zrr *rr = &z->rrs[k];

			if (zone_check_rr(z, rr, k, err, errlen))
				return -1;
			if (k > n->rr_first && rr->type < z->rrs[k - 1].type)
				FAIL("zone image: records not sorted by type, record", k);
			if (k > n->rr_first && rr->type != z->rrs[k - 1].type)
				set_bytes = 0;
			set_bytes += 12u + rr->rdlen;
			if (set_bytes > DNS_RRSET_MAX)
				FAIL("zone image: an RRset over 7680 bytes, record", k);
			has_ns |= rr->type == DNS_TYPE_NS;
			has_cname |= rr->type == DNS_TYPE_CNAME;
			has_ds |= rr->type == DNS_TYPE_DS;
			has_soa |= rr->type == DNS_TYPE_SOA;
		}
		if (has_cname && n->rr_count != 1)
			FAIL("zone image: a CNAME beside other data, node", i);
		if (has_soa != (i == z->apex) || (i == z->apex && !has_ns))
			FAIL("zone image: SOA and NS must be at the apex (SOA only there), node", i);
		if (((n->flags & DNS_NODE_DELEG) != 0) != (has_ns && i != z->apex))
			FAIL("zone image: delegation flag not true to the data, node", i);
		if (has_ds && !(n->flags & DNS_NODE_DELEG))
			FAIL("zone image: DS off a delegation, node", i);
		if (n->name_len > 253) {	/* "*." would not fit: no wildcard child */
			if (n->flags & DNS_NODE_WILD)
				FAIL("zone image: wildcard flag not true to the data, node", i);
			continue;
		}
		wild[0] = 1;
		wild[1] = '*';
		memcpy(wild + 2, name, n->name_len);
		if (((n->flags & DNS_NODE_WILD) != 0) != zone_find(z, wild, n->name_len + 2u))
			FAIL("zone image: wildcard flag not true to the data, node", i);
	}
	return 0;
}
