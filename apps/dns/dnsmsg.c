/* apps/dns's engine (see dnsmsg.h). */
#include "apps/dns/dnsmsg.h"
#include "lib/byteorder.h"
#include "lib/string.h"

#define DNS_CLASS_IN 1
#define DNS_OPT_LEN 11	/* root name, type, class, TTL, RDLENGTH 0 */
#define DNS_ANSWERED_MAX 32	/* answer records whose targets get additional data */

/* ---- names ---- */

static u8 dns_lower(u8 c)
{
	return c >= 'A' && c <= 'Z' ? (u8)(c + 32) : c;
}

/* Length of an uncompressed wire name from the zone table (trusted). */
static size_t dns_wire_len(const u8 *n)
{
	size_t i = 0;

	while (n[i])
		i += n[i] + 1u;
	return i + 1;
}

static int dns_name_cmp(const u8 *a, size_t la, const u8 *b, size_t lb)
{
	int c = memcmp(a, b, MIN(la, lb));

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

/* n (wire, lowercase) is top or below it, at a label boundary. */
static bool dns_under(const u8 *n, size_t ln, const u8 *top, size_t ltop)
{
	size_t i = 0;

	while (ln - i >= ltop) {
		if (ln - i == ltop)
			return memcmp(n + i, top, ltop) == 0;
		if (n[i] == 0)
			return false;
		i += n[i] + 1u;
	}
	return false;
}

/* The lowercase copy of a trusted wire name; returns its length. */
static size_t dns_lower_copy(u8 dst[256], const u8 *src)
{
	size_t len = dns_wire_len(src);

	for (size_t i = 0; i < len; i++)
		dst[i] = dns_lower(src[i]);
	return len;
}

/* ---- the zone table ---- */

/* [*first, return) are the records owned by name. */
static u32 dns_rr_range(const struct dns_zone *z, const u8 *name, size_t len, u32 *first)
{
	u32 lo = 0, hi = z->nrrs;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;

		if (dns_name_cmp(z->rrs[mid].name, z->rrs[mid].name_len, name, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	while (hi < z->nrrs && dns_name_cmp(z->rrs[hi].name, z->rrs[hi].name_len, name, len) == 0)
		hi++;
	return hi;
}

static bool dns_node_exists(const struct dns_zone *z, const u8 *name, size_t len)
{
	u32 lo = 0, hi = z->nnodes;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		int c = dns_name_cmp(z->nodes[mid].wire, z->nodes[mid].len, name, len);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool dns_has_type(const struct dns_zone *z, u32 first, u32 end, u16 type)
{
	for (u32 i = first; i < end; i++)
		if (z->rrs[i].type == type)
			return true;
	return false;
}

/* The closest delegation (NS below the apex) at or above name, or NULL. */
static const u8 *dns_find_cut(const struct dns_zone *z, const u8 *name, size_t len, size_t *cut_len)
{
	size_t starts[128], n = 0, i = 0;

	while (name[i] && n < ARRAY_SIZE(starts)) {
		starts[n++] = i;
		i += name[i] + 1u;
	}
	/* From just below the apex down to the name itself. */
	while (n--) {
		const u8 *s = name + starts[n];
		size_t l = len - starts[n];
		u32 first, end;

		if (l <= z->apex.len)
			continue;
		end = dns_rr_range(z, s, l, &first);
		if (dns_has_type(z, first, end, DNS_TYPE_NS)) {
			*cut_len = l;
			return s;
		}
	}
	return NULL;
}

/* ---- the writer ---- */

struct dns_writer {
	u8 *p;
	size_t len, cap;
	u16 comp[DNS_COMP_NAMES];	/* offsets of names (and their suffixes) already written */
	unsigned ncomp;
	u16 an, ns, ar;
};

/* The name at off in the message (ours, so well formed) equals wire name s,
 * ignoring case. */
static bool dns_name_at(const struct dns_writer *w, size_t off, const u8 *s)
{
	for (unsigned hops = 0; hops < 128;) {
		u8 l = w->p[off];

		if ((l & 0xc0) == 0xc0) {
			off = (size_t)(l & 0x3f) << 8 | w->p[off + 1];
			hops++;
			continue;
		}
		if (l != *s)
			return false;
		if (l == 0)
			return true;
		for (unsigned i = 1; i <= l; i++)
			if (dns_lower(w->p[off + i]) != dns_lower(s[i]))
				return false;
		off += l + 1u;
		s += l + 1u;
	}
	return false;
}

static void dns_remember(struct dns_writer *w, size_t off)
{
	if (off < 0x4000 && w->ncomp < DNS_COMP_NAMES)
		w->comp[w->ncomp++] = (u16)off;
}

static bool dns_put(struct dns_writer *w, const void *src, size_t n)
{
	if (w->cap - w->len < n)
		return false;
	memcpy(w->p + w->len, src, n);
	w->len += n;
	return true;
}

/* Writes wire name n, compressed against the names already written. */
static bool dns_put_name(struct dns_writer *w, const u8 *n)
{
	size_t pos = 0;
	unsigned known = w->ncomp;

	for (;;) {
		if (n[pos] == 0)
			break;
		for (unsigned c = 0; c < known; c++) {
			if (!dns_name_at(w, w->comp[c], n + pos))
				continue;
			if (w->cap - w->len < pos + 2)
				return false;
			for (size_t i = 0; i < pos; i += n[i] + 1u)
				dns_remember(w, w->len + i);
			memcpy(w->p + w->len, n, pos);
			put_be16(w->p + w->len + pos, (u16)(0xc000 | w->comp[c]));
			w->len += pos + 2;
			return true;
		}
		pos += n[pos] + 1u;
	}
	if (w->cap - w->len < pos + 1)
		return false;
	for (size_t i = 0; i < pos; i += n[i] + 1u)
		dns_remember(w, w->len + i);
	memcpy(w->p + w->len, n, pos + 1);
	w->len += pos + 1;
	return true;
}

/* One record, whole or not at all. */
static bool dns_put_rr(struct dns_writer *w, const u8 *owner, const struct dns_rr *rr, u32 ttl)
{
	size_t save = w->len, rdpos;
	unsigned save_comp = w->ncomp;
	u8 fixed[10];
	bool ok;

	put_be16(fixed, rr->type);
	put_be16(fixed + 2, DNS_CLASS_IN);
	put_be32(fixed + 4, ttl);
	put_be16(fixed + 8, 0);
	ok = dns_put_name(w, owner) && dns_put(w, fixed, sizeof fixed);
	rdpos = w->len;
	if (ok && rr->type == DNS_TYPE_SOA) {
		size_t m = dns_wire_len(rr->rdata);
		size_t r = dns_wire_len(rr->rdata + m);

		ok = dns_put_name(w, rr->rdata) && dns_put_name(w, rr->rdata + m) &&
		     dns_put(w, rr->rdata + m + r, rr->rdlen - m - r);
	} else if (ok && rr->rdname != DNS_RR_NO_NAME) {
		size_t nl = dns_wire_len(rr->rdata + rr->rdname);

		ok = dns_put(w, rr->rdata, rr->rdname) && dns_put_name(w, rr->rdata + rr->rdname) &&
		     dns_put(w, rr->rdata + rr->rdname + nl, rr->rdlen - rr->rdname - nl);
	} else if (ok) {
		ok = dns_put(w, rr->rdata, rr->rdlen);
	}
	if (!ok) {
		w->len = save;
		w->ncomp = save_comp;
		return false;
	}
	put_be16(w->p + rdpos - 2, (u16)(w->len - rdpos));
	return true;
}

/* ---- queries ---- */

struct dns_query {
	u8 name[256];	/* lowercase */
	size_t name_len, name_off;
	u16 qtype, qclass, udp_size;
	bool edns;
	u8 edns_version;
	size_t end_of_question;
};

/* 0, or an RCODE: FORMERR (any malformation). */
static int dns_parse(const u8 *q, size_t qlen, struct dns_query *out)
{
	size_t pos = DNS_HDR_LEN, n = 0;

	if (get_be16(q + 4) != 1 || get_be16(q + 6) != 0 || get_be16(q + 8) != 0 || get_be16(q + 10) > 1)
		return DNS_RCODE_FORMERR;
	out->name_off = pos;
	for (;;) {
		u8 l;

		if (pos >= qlen)
			return DNS_RCODE_FORMERR;
		l = q[pos];
		if (l & 0xc0)	/* a pointer (nothing to point at yet) or an obsolete label type */
			return DNS_RCODE_FORMERR;
		if (n + l + 1u > 255 || qlen - pos - 1 < l)
			return DNS_RCODE_FORMERR;
		out->name[n++] = l;
		for (unsigned i = 1; i <= l; i++)
			out->name[n++] = dns_lower(q[pos + i]);
		pos += l + 1u;
		if (l == 0)
			break;
	}
	out->name_len = n;
	if (qlen - pos < 4)
		return DNS_RCODE_FORMERR;
	out->qtype = get_be16(q + pos);
	out->qclass = get_be16(q + pos + 2);
	pos += 4;
	out->end_of_question = pos;
	out->edns = false;
	if (get_be16(q + 10) == 1) {
		size_t rdlen, opt;

		/* An OPT record: the root's name, type 41, class = UDP size,
		 * TTL = extended RCODE, version, flags; then its options. */
		if (qlen - pos < DNS_OPT_LEN || q[pos] != 0 || get_be16(q + pos + 1) != DNS_TYPE_OPT)
			return DNS_RCODE_FORMERR;
		out->edns = true;
		out->udp_size = get_be16(q + pos + 3);
		out->edns_version = q[pos + 6];
		rdlen = get_be16(q + pos + 9);
		pos += DNS_OPT_LEN;
		if (qlen - pos < rdlen)
			return DNS_RCODE_FORMERR;
		for (opt = 0; opt < rdlen;) {
			if (rdlen - opt < 4 || rdlen - opt - 4 < get_be16(q + pos + opt + 2))
				return DNS_RCODE_FORMERR;
			opt += 4u + get_be16(q + pos + opt + 2);
		}
		pos += rdlen;
	}
	return pos == qlen ? 0 : DNS_RCODE_FORMERR;
}

/* The SOA in authority for a negative answer (RFC 2308 3: its TTL the
 * smaller of its own and its MINIMUM). */
static bool dns_put_soa(const struct dns_zone *z, struct dns_writer *w)
{
	u32 first, end = dns_rr_range(z, z->apex.wire, z->apex.len, &first);

	for (u32 i = first; i < end; i++) {
		const struct dns_rr *rr = &z->rrs[i];

		if (rr->type == DNS_TYPE_SOA) {
			u32 min = get_be32(rr->rdata + rr->rdlen - 4);

			if (!dns_put_rr(w, rr->name, rr, MIN(rr->ttl, min)))
				return false;
			w->ns++;
			return true;
		}
	}
	return true;
}

/* A and AAAA of the targets of answers[0..n) that are in the zone, once each. */
static void dns_put_additional(const struct dns_zone *z, struct dns_writer *w, const struct dns_rr *const *rrs,
			       unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		u8 t[256];
		size_t tl;
		u32 first, end;
		bool dup = false;

		if (rrs[i]->rdname == DNS_RR_NO_NAME || rrs[i]->type == DNS_TYPE_CNAME)
			continue;
		tl = dns_lower_copy(t, rrs[i]->rdata + rrs[i]->rdname);
		for (unsigned j = 0; j < i && !dup; j++) {
			u8 o[256];

			if (rrs[j]->rdname != DNS_RR_NO_NAME && rrs[j]->type != DNS_TYPE_CNAME)
				dup = dns_lower_copy(o, rrs[j]->rdata + rrs[j]->rdname) == tl && memcmp(o, t, tl) == 0;
		}
		if (dup || !dns_under(t, tl, z->apex.wire, z->apex.len))
			continue;
		end = dns_rr_range(z, t, tl, &first);
		for (u32 k = first; k < end; k++) {
			const struct dns_rr *g = &z->rrs[k];

			if (g->type != DNS_TYPE_A && g->type != DNS_TYPE_AAAA)
				continue;
			if (!dns_put_rr(w, g->name, g, g->ttl))
				return;	/* additional data left out, no TC (RFC 2181 9) */
			w->ar++;
		}
	}
}

/* The answer, authority and additional sections; returns the RCODE. */
static int dns_answer(const struct dns_zone *z, const struct dns_query *qy, struct dns_writer *w, bool tcp,
		      struct dns_result *res, bool *aa)
{
	const struct dns_rr *answered[DNS_ANSWERED_MAX];
	unsigned nanswered = 0;
	u8 cur[256];
	size_t cur_len = qy->name_len;
	const u8 *cut;
	size_t cut_len;

	memcpy(cur, qy->name, cur_len);
	for (unsigned hops = 0;; hops++) {
		u32 first, end;
		bool any = false;

		cut = dns_find_cut(z, cur, cur_len, &cut_len);
		if (cut && hops == 0) {
			/* A referral: the child's NS in authority, glue in additional. */
			const struct dns_rr *ns[DNS_ANSWERED_MAX];
			unsigned nns = 0;

			*aa = false;
			res->referral = true;
			end = dns_rr_range(z, cut, cut_len, &first);
			for (u32 i = first; i < end; i++) {
				if (z->rrs[i].type != DNS_TYPE_NS)
					continue;
				if (!dns_put_rr(w, z->rrs[i].name, &z->rrs[i], z->rrs[i].ttl)) {
					res->truncated = true;
					return DNS_RCODE_NOERROR;
				}
				w->ns++;
				if (nns < ARRAY_SIZE(ns))
					ns[nns++] = &z->rrs[i];
			}
			dns_put_additional(z, w, ns, nns);
			return DNS_RCODE_NOERROR;
		}
		if (cut)	/* a CNAME into a delegated child: the resolver follows it */
			return DNS_RCODE_NOERROR;
		end = dns_rr_range(z, cur, cur_len, &first);
		if (first == end) {
			bool exists = dns_node_exists(z, cur, cur_len);

			if (!dns_put_soa(z, w))
				res->truncated = true;
			return exists ? DNS_RCODE_NOERROR : DNS_RCODE_NXDOMAIN;
		}
		for (u32 i = first; i < end; i++) {
			const struct dns_rr *rr = &z->rrs[i];

			if (qy->qtype == DNS_TYPE_ANY) {
				/* Over UDP one RRset only, the first (RFC 8482). */
				if (!tcp && any && rr->type != z->rrs[i - 1].type)
					break;
			} else if (rr->type != qy->qtype) {
				continue;
			}
			if (!dns_put_rr(w, cur, rr, rr->ttl)) {
				res->truncated = true;
				return DNS_RCODE_NOERROR;
			}
			w->an++;
			any = true;
			if (nanswered < DNS_ANSWERED_MAX)
				answered[nanswered++] = rr;
		}
		if (any) {
			dns_put_additional(z, w, answered, nanswered);
			return DNS_RCODE_NOERROR;
		}
		if (qy->qtype != DNS_TYPE_CNAME && dns_has_type(z, first, end, DNS_TYPE_CNAME)) {
			const struct dns_rr *rr = &z->rrs[first];	/* a CNAME is alone at its name */

			if (hops == DNS_CNAME_HOPS)	/* a loop, or a chain too long */
				return DNS_RCODE_SERVFAIL;
			if (!dns_put_rr(w, cur, rr, rr->ttl)) {
				res->truncated = true;
				return DNS_RCODE_NOERROR;
			}
			w->an++;
			cur_len = dns_lower_copy(cur, rr->rdata);
			if (!dns_under(cur, cur_len, z->apex.wire, z->apex.len))
				return DNS_RCODE_NOERROR;	/* out of the zone: the resolver goes on */
			continue;
		}
		/* NODATA */
		if (!dns_put_soa(z, w))
			res->truncated = true;
		return DNS_RCODE_NOERROR;
	}
}

static size_t dns_header_only(const u8 *q, u8 *out, int rcode, struct dns_result *res)
{
	memset(out, 0, DNS_HDR_LEN);
	out[0] = q[0];
	out[1] = q[1];
	out[2] = (u8)(0x80 | (q[2] & 0x79));	/* QR, the opcode and RD copied */
	out[3] = (u8)rcode;
	res->rcode = (u16)rcode;
	return DNS_HDR_LEN;
}

size_t dns_respond(const struct dns_zone *z, const u8 *q, size_t qlen, u8 *out, size_t outcap, bool tcp,
		   struct dns_result *res)
{
	struct dns_query qy;
	struct dns_writer w = { .p = out };
	size_t limit;
	bool aa = true;
	int rc;

	memset(res, 0, sizeof *res);
	if (qlen < DNS_HDR_LEN || outcap < DNS_UDP_MIN || (q[2] & 0x80))
		return 0;
	if (((q[2] >> 3) & 0xf) != 0)
		return dns_header_only(q, out, DNS_RCODE_NOTIMP, res);
	rc = dns_parse(q, qlen, &qy);
	if (rc)
		return dns_header_only(q, out, rc, res);
	res->qtype = qy.qtype;
	res->edns = qy.edns;
	if (tcp)
		limit = MIN(outcap, 65535);
	else if (qy.edns)
		limit = MIN(outcap, MIN(DNS_UDP_MAX, MAX(DNS_UDP_MIN, qy.udp_size)));
	else
		limit = DNS_UDP_MIN;
	/* The header and the question as asked (its case kept). */
	w.cap = limit - (qy.edns ? DNS_OPT_LEN : 0);
	dns_header_only(q, out, 0, res);
	put_be16(out + 4, 1);
	memcpy(out + DNS_HDR_LEN, q + DNS_HDR_LEN, qy.end_of_question - DNS_HDR_LEN);
	w.len = qy.end_of_question;
	res->qlen = (u16)w.len;
	for (size_t i = DNS_HDR_LEN; out[i]; i += out[i] + 1u)
		dns_remember(&w, i);
	if (qy.edns && qy.edns_version != 0) {
		rc = DNS_RCODE_BADVERS;
		aa = false;
	} else if (qy.qclass != DNS_CLASS_IN || qy.qtype == DNS_TYPE_AXFR || qy.qtype == DNS_TYPE_IXFR ||
		   !dns_under(qy.name, qy.name_len, z->apex.wire, z->apex.len)) {
		rc = DNS_RCODE_REFUSED;
		aa = false;
	} else {
		rc = dns_answer(z, &qy, &w, tcp, res, &aa);
	}
	res->rcode = (u16)rc;
	res->ancount = w.an;
	if (res->truncated)
		out[2] |= 0x02;
	if (aa)
		out[2] |= 0x04;
	out[3] = (u8)(rc & 0xf);
	put_be16(out + 6, w.an);
	put_be16(out + 8, w.ns);
	if (qy.edns) {
		u8 *o = out + w.len;	/* room kept above */

		o[0] = 0;
		put_be16(o + 1, DNS_TYPE_OPT);
		put_be16(o + 3, DNS_UDP_MAX);
		o[5] = (u8)(rc >> 4);	/* the extended RCODE's upper bits */
		o[6] = 0;		/* version */
		o[7] = 0;
		o[8] = 0;		/* flags: DO clear, no DNSSEC here */
		put_be16(o + 9, 0);
		w.len += DNS_OPT_LEN;
		w.ar++;
	}
	put_be16(out + 10, w.ar);
	return w.len;
}

size_t dns_slip(u8 *resp, size_t len, const struct dns_result *res)
{
	if (res->qlen == 0 || res->qlen > len)
		return 0;
	resp[2] |= 0x02;
	put_be16(resp + 6, 0);
	put_be16(resp + 8, 0);
	put_be16(resp + 10, 0);
	return res->qlen;
}

long dns_tcp_feed(struct dns_tcp_reader *r, const u8 *data, size_t len, size_t *msg_len)
{
	size_t took = 0;

	*msg_len = 0;
	while (took < len) {
		size_t want;

		if (r->have < 2) {
			r->buf[r->have++] = data[took++];
			if (r->have == 2) {
				want = get_be16(r->buf);
				if (want == 0 || want > DNS_TCP_QUERY_MAX)
					return -1;
			}
			continue;
		}
		want = 2u + get_be16(r->buf) - r->have;
		want = MIN(want, len - took);
		memcpy(r->buf + r->have, data + took, want);
		r->have = (u16)(r->have + want);
		took += want;
		if (r->have == 2u + get_be16(r->buf))
			break;
	}
	if (r->have >= 2 && r->have == 2u + get_be16(r->buf))
		*msg_len = get_be16(r->buf);
	return (long)took;
}

void dns_tcp_next(struct dns_tcp_reader *r)
{
	r->have = 0;
}
