/* apps/dns's engine (see dnsmsg.h). */
#include "dnsmsg.h"
#include "vireo/byteorder.h"
#include "vireo/string.h"

#define DNS_OPT_LEN 11		/* root name, type, class, TTL, RDLENGTH */
#define DNS_ANSWERED_MAX 32	/* records whose targets get additional data */
#define DNS_NO_NODE 0xffffffffu

/* ---- names ---- */

static u8 dns_lower(u8 c)
{
	return c >= 'A' && c <= 'Z' ? (u8)(c + 32) : c;
}

/* Length of an uncompressed wire name from the zone image (checked). */
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

/* ---- the zone image ---- */

static u32 dns_node_find(const struct dns_zone *z, const u8 *name, size_t len)
{
	u32 lo = 0, hi = z->nnodes;

	while (lo < hi) {
		u32 mid = lo + (hi - lo) / 2;
		const struct dns_znode *n = &z->nodes[mid];
		int c = dns_name_cmp(z->data + n->name, n->name_len, name, len);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return DNS_NO_NODE;
}

/* The first record of type at node n, or NULL. */
static const struct dns_zrr *dns_rrset(const struct dns_zone *z, u32 n, u16 type)
{
	const struct dns_znode *nd = &z->nodes[n];

	for (u32 i = nd->rr_first; i < nd->rr_first + nd->rr_count; i++)
		if (z->rrs[i].type == type)
			return &z->rrs[i];
	return NULL;
}

/* Where a name lands in the zone, looked up from the apex down: its own
 * node (exact), the deepest node above it that exists (the closest
 * encloser, RFC 4592 3.3.1), and the first delegation on the way (cut),
 * DNS_NO_NODE for each that is not there. name must be at or below the
 * apex. */
struct dns_lookup {
	u32 exact, ce, cut;
};

static void dns_lookup(const struct dns_zone *z, const u8 *name, size_t len, struct dns_lookup *lk)
{
	size_t starts[128];
	unsigned n = 0;

	lk->cut = DNS_NO_NODE;
	lk->exact = len == z->apex_len ? z->apex : DNS_NO_NODE;
	lk->ce = z->apex;
	for (size_t i = 0; name[i] && n < ARRAY_SIZE(starts); i += name[i] + 1u)
		starts[n++] = i;
	/* starts[n-1] is the last label; the apex is the suffix of apex_len. */
	while (n--) {
		size_t l = len - starts[n];
		u32 node;

		if (l <= z->apex_len)
			continue;	/* the apex, or above it */
		node = dns_node_find(z, name + starts[n], l);
		if (node == DNS_NO_NODE)
			return;	/* nothing exists below a name that does not */
		lk->ce = node;
		if (l == len)
			lk->exact = node;
		if (z->nodes[node].flags & DNS_NODE_DELEG) {
			lk->cut = node;
			return;
		}
	}
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
static bool dns_put_rr(struct dns_writer *w, const struct dns_zone *z, const u8 *owner, const struct dns_zrr *rr,
		       u32 ttl)
{
	size_t save = w->len, rdpos;
	unsigned save_comp = w->ncomp;
	const u8 *rd = dns_zone_rdata(z, rr);
	u8 fixed[10];
	bool ok;

	put_be16(fixed, rr->type);
	put_be16(fixed + 2, DNS_CLASS_IN);
	put_be32(fixed + 4, ttl);
	put_be16(fixed + 8, 0);
	ok = dns_put_name(w, owner) && dns_put(w, fixed, sizeof fixed);
	rdpos = w->len;
	if (ok && rr->type == DNS_TYPE_SOA) {
		size_t m = dns_wire_len(rd);
		size_t r = dns_wire_len(rd + m);

		ok = dns_put_name(w, rd) && dns_put_name(w, rd + m) &&
		     dns_put(w, rd + m + r, rr->rdlen - m - r);
	} else if (ok && rr->cname_off != DNS_RR_NO_NAME) {
		/* the name ends the data (dns_zone_open checked) */
		ok = dns_put(w, rd, rr->cname_off) && dns_put_name(w, rd + rr->cname_off);
	} else if (ok) {
		ok = dns_put(w, rd, rr->rdlen);
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
	size_t name_len;
	u16 qtype, qclass, udp_size;
	bool edns, do_bit, nsid;
	u8 edns_version;
	u8 cookie[DNS_COOKIE_CLIENT + 32];	/* client cookie, then the server cookie */
	u8 cookie_len;	/* 0: no COOKIE option */
	size_t end_of_question;
};

/* 0, or an RCODE: FORMERR (any malformation). */
static int dns_parse(const struct dns_server *s, const u8 *q, size_t qlen, struct dns_query *out)
{
	size_t pos = DNS_HDR_LEN, n = 0;

	if (get_be16(q + 4) != 1 || get_be16(q + 6) != 0 || get_be16(q + 8) != 0 || get_be16(q + 10) > 1)
		return DNS_RCODE_FORMERR;
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
	out->edns = out->do_bit = out->nsid = false;
	out->cookie_len = 0;
	if (get_be16(q + 10) == 1) {
		size_t rdlen, opt;

		/* An OPT record: the root's name, type 41, class = UDP size,
		 * TTL = extended RCODE, version, DO and flags; then options. */
		if (qlen - pos < DNS_OPT_LEN || q[pos] != 0 || get_be16(q + pos + 1) != DNS_TYPE_OPT)
			return DNS_RCODE_FORMERR;
		out->edns = true;
		out->udp_size = get_be16(q + pos + 3);
		out->edns_version = q[pos + 6];
		out->do_bit = (q[pos + 7] & 0x80) != 0;
		rdlen = get_be16(q + pos + 9);
		pos += DNS_OPT_LEN;
		if (qlen - pos < rdlen)
			return DNS_RCODE_FORMERR;
		for (opt = 0; opt < rdlen;) {
			u16 code, olen;

			if (rdlen - opt < 4 || rdlen - opt - 4 < get_be16(q + pos + opt + 2))
				return DNS_RCODE_FORMERR;
			code = get_be16(q + pos + opt);
			olen = get_be16(q + pos + opt + 2);
			if (code == DNS_OPT_NSID)
				out->nsid = true;
			if (code == DNS_OPT_COOKIE && s->cookies && !out->cookie_len) {
				/* A client cookie, and maybe a server cookie of
				 * 8 to 32 bytes (RFC 7873 4): else FORMERR. */
				if (olen != DNS_COOKIE_CLIENT && (olen < DNS_COOKIE_CLIENT + 8 || olen > DNS_COOKIE_CLIENT + 32))
					return DNS_RCODE_FORMERR;
				memcpy(out->cookie, q + pos + opt + 4, olen);
				out->cookie_len = (u8)olen;
			}
			opt += 4u + olen;
		}
		pos += rdlen;
	}
	return pos == qlen ? 0 : DNS_RCODE_FORMERR;
}

/* ---- cookies (RFC 7873, the server cookie of RFC 9018) ---- */

/* The 8-byte hash of the server cookie: SipHash-2-4 of client cookie,
 * version, reserved, time and the client's address. */
static u64 dns_cookie_hash(const struct dns_server *s, const struct dns_peer *p, const u8 *client,
			   const u8 *head)
{
	u8 in[DNS_COOKIE_CLIENT + 8 + 16];
	size_t n = 0;

	memcpy(in, client, DNS_COOKIE_CLIENT);
	n += DNS_COOKIE_CLIENT;
	memcpy(in + n, head, 8);
	n += 8;
	if (p->addr) {
		memcpy(in + n, p->addr, MIN(p->alen, 16));
		n += MIN(p->alen, 16);
	}
	return siphash24(&s->cookie_key, in, n);
}

static bool dns_cookie_good(const struct dns_server *s, const struct dns_peer *p, const u8 *c, size_t len)
{
	u32 t, age;

	if (!p->addr || len != DNS_COOKIE_CLIENT + DNS_COOKIE_SERVER || c[8] != 1)
		return false;
	t = get_be32(c + 12);
	age = p->now_s - t;	/* serial-number arithmetic: a time ahead wraps high */
	if (age > DNS_COOKIE_LIFE_S && t - p->now_s > DNS_COOKIE_SKEW_S)
		return false;
	return get_le64(c + 16) == dns_cookie_hash(s, p, c, c + 8);
}

/* The option we send: the client cookie and a fresh server cookie. */
static void dns_cookie_make(const struct dns_server *s, const struct dns_peer *p, const u8 *client, u8 *o)
{
	u8 head[8] = { 1, 0, 0, 0 };

	put_be32(head + 4, p->now_s);
	put_be16(o, DNS_OPT_COOKIE);
	put_be16(o + 2, DNS_COOKIE_CLIENT + DNS_COOKIE_SERVER);
	memcpy(o + 4, client, DNS_COOKIE_CLIENT);
	memcpy(o + 4 + DNS_COOKIE_CLIENT, head, 8);
	put_le64(o + 4 + DNS_COOKIE_CLIENT + 8, dns_cookie_hash(s, p, client, head));
}

/* ---- answering ---- */

struct dns_ans {
	const struct dns_server *s;
	const struct dns_zone *z;
	const struct dns_query *qy;
	struct dns_writer *w;
	struct dns_result *res;
	bool tcp, aa;
	const struct dns_zrr *answered[DNS_ANSWERED_MAX];	/* for additional data */
	unsigned nanswered;
};

/* The SOA in authority for a negative answer (RFC 2308 3: its TTL the
 * smaller of its own and its MINIMUM). */
static void dns_put_soa(struct dns_ans *a)
{
	const struct dns_zrr *rr = dns_rrset(a->z, a->z->apex, DNS_TYPE_SOA);
	u32 min = get_be32(dns_zone_rdata(a->z, rr) + rr->rdlen - 4);

	if (dns_put_rr(a->w, a->z, a->z->apex_name, rr, MIN(rr->ttl, min)))
		a->w->ns++;
	else
		a->res->truncated = true;
}

/* The A and AAAA records of in-zone name t; false when one did not fit. */
static bool dns_put_addrs(struct dns_ans *a, const u8 *t, size_t tl)
{
	const struct dns_znode *nd;
	u32 node = dns_node_find(a->z, t, tl);

	if (node == DNS_NO_NODE)
		return true;
	nd = &a->z->nodes[node];
	for (u32 k = nd->rr_first; k < nd->rr_first + nd->rr_count; k++) {
		const struct dns_zrr *g = &a->z->rrs[k];

		if (g->type != DNS_TYPE_A && g->type != DNS_TYPE_AAAA)
			continue;
		if (!dns_put_rr(a->w, a->z, dns_zone_name(a->z, nd), g, g->ttl))
			return false;
		a->w->ar++;
	}
	return true;
}

/* Additional data for rrs[0..n): the zone's A and AAAA of each target
 * name, once each. in_domain: the cut's name; a target at or below it is
 * glue that must all fit, or TC (RFC 9471); those go first, every other
 * in-zone target after, left out without TC when it does not fit (RFC 2181
 * 9). NULL: no glue, every target optional. */
static void dns_put_additional(struct dns_ans *a, const struct dns_zrr *const *rrs, unsigned n,
			       const u8 *in_domain, size_t in_len)
{
	for (int pass = in_domain ? 0 : 1; pass < 2; pass++) {
		for (unsigned i = 0; i < n; i++) {
			u8 t[256], o[256];
			size_t tl;
			bool dup = false, glue;

			if (rrs[i]->add_off == DNS_RR_NO_NAME)
				continue;
			tl = dns_lower_copy(t, dns_zone_rdata(a->z, rrs[i]) + rrs[i]->add_off);
			glue = in_domain && dns_under(t, tl, in_domain, in_len);
			if (glue != (pass == 0) || !dns_under(t, tl, a->z->apex_name, a->z->apex_len))
				continue;
			for (unsigned j = 0; j < i && !dup; j++)
				dup = rrs[j]->add_off != DNS_RR_NO_NAME &&
				      dns_lower_copy(o, dns_zone_rdata(a->z, rrs[j]) + rrs[j]->add_off) == tl &&
				      memcmp(o, t, tl) == 0;
			if (dup || dns_put_addrs(a, t, tl))
				continue;
			if (pass == 0)
				a->res->truncated = true;
			return;
		}
	}
}

/* The cut's NS in authority, glue in additional. */
static void dns_put_referral(struct dns_ans *a, u32 cut)
{
	const struct dns_znode *nd = &a->z->nodes[cut];
	const u8 *name = dns_zone_name(a->z, nd);
	const struct dns_zrr *ns[DNS_ANSWERED_MAX];
	unsigned nns = 0;

	a->res->referral = true;
	for (u32 i = nd->rr_first; i < nd->rr_first + nd->rr_count; i++) {
		const struct dns_zrr *rr = &a->z->rrs[i];

		if (rr->type != DNS_TYPE_NS)
			continue;
		if (!dns_put_rr(a->w, a->z, name, rr, rr->ttl)) {
			a->res->truncated = true;
			return;
		}
		a->w->ns++;
		if (nns < ARRAY_SIZE(ns))
			ns[nns++] = rr;
	}
	dns_put_additional(a, ns, nns, name, nd->name_len);
}

/* Writes the records of node (owned by name) that answer qtype into the
 * answer section: 1 if any, 0 if none, -1 when one did not fit (TC set). */
static int dns_put_answer(struct dns_ans *a, u32 node, const u8 *name)
{
	const struct dns_znode *nd = &a->z->nodes[node];
	u16 qtype = a->qy->qtype;
	bool any = false;

	for (u32 i = nd->rr_first; i < nd->rr_first + nd->rr_count; i++) {
		const struct dns_zrr *rr = &a->z->rrs[i];

		if (qtype == DNS_TYPE_ANY) {
			/* Over UDP one RRset only, the first (RFC 8482). */
			if (!a->tcp && any && rr->type != a->z->rrs[i - 1].type)
				break;
		} else if (rr->type != qtype) {
			continue;
		}
		if (!dns_put_rr(a->w, a->z, name, rr, rr->ttl)) {
			a->res->truncated = true;
			return -1;
		}
		a->w->an++;
		any = true;
		if (a->nanswered < DNS_ANSWERED_MAX)
			a->answered[a->nanswered++] = rr;
	}
	return any;
}

/* The answer, authority and additional sections; returns the RCODE. */
static int dns_answer(struct dns_ans *a)
{
	const struct dns_zone *z = a->z;
	/* The names of the chain so far: the question's, then each CNAME's
	 * target, to stop where one comes back (a loop). */
	u8 chain[DNS_CNAME_HOPS + 1][256];
	size_t chain_len[DNS_CNAME_HOPS + 1];
	unsigned hops = 0;

	memcpy(chain[0], a->qy->name, a->qy->name_len);
	chain_len[0] = a->qy->name_len;
	for (;;) {
		const u8 *cur = chain[hops];
		size_t cur_len = chain_len[hops];
		struct dns_lookup lk;
		u32 node;
		const struct dns_zrr *cname;
		int got;

		dns_lookup(z, cur, cur_len, &lk);
		if (lk.cut != DNS_NO_NODE && !(lk.cut == lk.exact && a->qy->qtype == DNS_TYPE_DS)) {
			/* Below a delegation: a referral. After a CNAME the
			 * answer so far is ours, so AA stays. */
			if (hops == 0)
				a->aa = false;
			dns_put_referral(a, lk.cut);
			return DNS_RCODE_NOERROR;
		}
		node = lk.exact;
		if (node == DNS_NO_NODE) {
			/* RFC 4592: the closest encloser's wildcard, if any. */
			const struct dns_znode *ce = &z->nodes[lk.ce];
			u8 wild[256];

			if (!(ce->flags & DNS_NODE_WILD)) {
				dns_put_soa(a);
				return DNS_RCODE_NXDOMAIN;
			}
			wild[0] = 1;
			wild[1] = '*';
			memcpy(wild + 2, dns_zone_name(z, ce), ce->name_len);
			node = dns_node_find(z, wild, ce->name_len + 2u);
		}
		if (node == DNS_NO_NODE) {	/* the image was checked: not reached */
			dns_put_soa(a);
			return DNS_RCODE_NXDOMAIN;
		}
		/* The node's records, owned by the name asked for (a wildcard's
		 * are synthesized with it). */
		got = dns_put_answer(a, node, cur);
		if (got < 0)
			return DNS_RCODE_NOERROR;
		if (got) {
			dns_put_additional(a, a->answered, a->nanswered, NULL, 0);
			return DNS_RCODE_NOERROR;
		}
		cname = a->qy->qtype == DNS_TYPE_CNAME ? NULL : dns_rrset(z, node, DNS_TYPE_CNAME);
		if (!cname) {
			dns_put_soa(a);	/* NODATA */
			return DNS_RCODE_NOERROR;
		}
		if (hops == DNS_CNAME_HOPS)	/* a longer chain: the resolver goes on */
			return DNS_RCODE_NOERROR;
		if (!dns_put_rr(a->w, z, cur, cname, cname->ttl)) {
			a->res->truncated = true;
			return DNS_RCODE_NOERROR;
		}
		a->w->an++;
		hops++;
		chain_len[hops] = dns_lower_copy(chain[hops], dns_zone_rdata(z, cname));
		if (!dns_under(chain[hops], chain_len[hops], z->apex_name, z->apex_len))
			return DNS_RCODE_NOERROR;	/* out of the zone: the resolver goes on */
		for (unsigned i = 0; i < hops; i++)
			if (chain_len[i] == chain_len[hops] && memcmp(chain[i], chain[hops], chain_len[i]) == 0)
				return DNS_RCODE_NOERROR;	/* a loop: each CNAME once */
	}
}

/* CHAOS: version.bind/version.server and id.server/hostname.bind as TXT,
 * when configured; else REFUSED. */
static int dns_chaos(struct dns_ans *a)
{
	static const u8 version_bind[] = "\7version\4bind", version_server[] = "\7version\6server",
			id_server[] = "\2id\6server", hostname_bind[] = "\10hostname\4bind";
	const struct dns_query *qy = a->qy;
	const char *text = NULL;
	u8 rr[2 + 10 + 256];
	size_t tl;

	if (!a->s->chaos || (qy->qtype != DNS_TYPE_TXT && qy->qtype != DNS_TYPE_ANY))
		return DNS_RCODE_REFUSED;
	if ((qy->name_len == sizeof version_bind && !memcmp(qy->name, version_bind, sizeof version_bind)) ||
	    (qy->name_len == sizeof version_server && !memcmp(qy->name, version_server, sizeof version_server)))
		text = a->s->version;
	else if ((qy->name_len == sizeof id_server && !memcmp(qy->name, id_server, sizeof id_server)) ||
		 (qy->name_len == sizeof hostname_bind && !memcmp(qy->name, hostname_bind, sizeof hostname_bind)))
		text = a->s->id;
	if (!text)
		return DNS_RCODE_REFUSED;
	tl = MIN(strlen(text), 255);
	put_be16(rr, 0xc000 | DNS_HDR_LEN);	/* the question's name */
	put_be16(rr + 2, DNS_TYPE_TXT);
	put_be16(rr + 4, DNS_CLASS_CH);
	put_be32(rr + 6, 0);
	put_be16(rr + 10, (u16)(tl + 1));
	rr[12] = (u8)tl;
	memcpy(rr + 13, text, tl);
	if (dns_put(a->w, rr, 13 + tl))
		a->w->an++;
	else
		a->res->truncated = true;
	return DNS_RCODE_NOERROR;
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

size_t dns_respond(const struct dns_server *s, const struct dns_peer *p, const u8 *q, size_t qlen, u8 *out,
		   size_t outcap, bool tcp, struct dns_result *res)
{
	struct dns_query qy;
	struct dns_writer w = { .p = out };
	struct dns_ans a = { .s = s, .z = s->zone, .qy = &qy, .w = &w, .res = res, .tcp = tcp, .aa = true };
	size_t limit, opt_len = 0;
	bool nsid = false, cookie = false;
	int rc;

	memset(res, 0, sizeof *res);
	if (qlen < DNS_HDR_LEN || outcap < DNS_UDP_MIN || (q[2] & 0x80))
		return 0;
	if (((q[2] >> 3) & 0xf) != 0)
		return dns_header_only(q, out, DNS_RCODE_NOTIMP, res);
	rc = dns_parse(s, q, qlen, &qy);
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
	if (qy.edns) {
		/* The OPT and its options go last; their room is kept. */
		nsid = qy.nsid && s->nsid && s->nsid_len && qy.edns_version == 0;
		cookie = qy.cookie_len != 0;
		opt_len = DNS_OPT_LEN + (nsid ? 4u + s->nsid_len : 0) +
			  (cookie ? 4u + DNS_COOKIE_CLIENT + DNS_COOKIE_SERVER : 0);
		if (cookie) {
			res->cookie = dns_cookie_good(s, p, qy.cookie, qy.cookie_len) ? DNS_COOKIE_GOOD : DNS_COOKIE_NEW;
		}
	}
	/* The header and the question as asked (its case kept). */
	w.cap = limit - opt_len;
	dns_header_only(q, out, 0, res);
	put_be16(out + 4, 1);
	memcpy(out + DNS_HDR_LEN, q + DNS_HDR_LEN, qy.end_of_question - DNS_HDR_LEN);
	w.len = qy.end_of_question;
	res->qlen = (u16)w.len;
	for (size_t i = DNS_HDR_LEN; out[i]; i += out[i] + 1u)
		dns_remember(&w, i);
	if (qy.edns && qy.edns_version != 0) {
		rc = DNS_RCODE_BADVERS;
		a.aa = false;
	} else if (qy.qclass == DNS_CLASS_CH) {
		rc = dns_chaos(&a);
		a.aa = rc == DNS_RCODE_NOERROR;
	} else if (qy.qclass != DNS_CLASS_IN || qy.qtype == DNS_TYPE_AXFR || qy.qtype == DNS_TYPE_IXFR ||
		   !dns_under(qy.name, qy.name_len, a.z->apex_name, a.z->apex_len)) {
		rc = DNS_RCODE_REFUSED;
		a.aa = false;
	} else {
		rc = dns_answer(&a);
	}
	res->rcode = (u16)rc;
	res->ancount = w.an;
	if (res->truncated)
		out[2] |= 0x02;
	if (a.aa)
		out[2] |= 0x04;
	out[3] = (u8)(rc & 0xf);
	put_be16(out + 6, w.an);
	put_be16(out + 8, w.ns);
	if (qy.edns) {
		u8 *o = out + w.len;	/* room kept above */
		size_t k = DNS_OPT_LEN;

		o[0] = 0;
		put_be16(o + 1, DNS_TYPE_OPT);
		put_be16(o + 3, DNS_UDP_MAX);
		o[5] = (u8)(rc >> 4);	/* the extended RCODE's upper bits */
		o[6] = 0;		/* version */
		o[7] = qy.do_bit ? 0x80 : 0;	/* DO copied (RFC 3225 3) */
		o[8] = 0;
		if (nsid) {
			put_be16(o + k, DNS_OPT_NSID);
			put_be16(o + k + 2, s->nsid_len);
			memcpy(o + k + 4, s->nsid, s->nsid_len);
			k += 4u + s->nsid_len;
		}
		if (cookie) {
			dns_cookie_make(s, p, qy.cookie, o + k);
			k += 4u + DNS_COOKIE_CLIENT + DNS_COOKIE_SERVER;
		}
		put_be16(o + 9, (u16)(k - DNS_OPT_LEN));
		w.len += k;
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
