/*
 * DNS messages (dns_msg.h): the query and the response's checks. Pure
 * (host tests in tests/host/net/clients/test_dns_msg.c, a fuzzer in
 * tests/fuzz/net/clients/fuzz_dns_msg.c). A response is read once, front
 * to back, every offset checked against its length before the byte is
 * read; names are decoded into a 256-byte buffer, so nothing it says can
 * make the parser hold or loop more than that.
 */
#include "net/clients/dns_msg.h"

#define DNS_WIRE_NAME_MAX 255	/* RFC 1035 section 3.1: labels, length bytes, the root */

static u16 rd16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static u32 rd32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

static char dns_lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c + 'a' - 'A') : c;
}

int dns_msg_name_norm(const char *name, char out[DNS_NAME_MAX + 1])
{
	size_t n = 0, label = 0;

	for (const char *s = name; *s; s++) {
		char c = dns_lower(*s);

		if (c == '.') {
			if (label == 0 || (s[1] == '\0' && n == 0))
				return -EINVAL;
			if (s[1] == '\0')
				break;	/* the root's trailing dot */
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_') {
			if (++label > 63)
				return -EINVAL;
		} else {
			return -EINVAL;
		}
		if (n == DNS_NAME_MAX)
			return -EINVAL;
		out[n++] = c;
	}
	if (n == 0 || label == 0)
		return -EINVAL;
	out[n] = '\0';
	return 0;
}

int dns_msg_query(u8 *buf, size_t cap, u16 id, const char *name, u16 qtype)
{
	char norm[DNS_NAME_MAX + 1];
	size_t n, o = DNS_HDR_LEN, start = 0;

	if (dns_msg_name_norm(name, norm) < 0)
		return -EINVAL;
	n = __builtin_strlen(norm);
	if (cap < DNS_HDR_LEN + n + 2 + 4)
		return -ENOSPC;
	__builtin_memset(buf, 0, DNS_HDR_LEN);
	buf[0] = (u8)(id >> 8);
	buf[1] = (u8)id;
	buf[2] = 0x01;	/* RD */
	buf[5] = 1;	/* QDCOUNT */
	for (size_t i = 0; i <= n; i++) {
		if (i == n || norm[i] == '.') {
			buf[o++] = (u8)(i - start);
			__builtin_memcpy(buf + o, norm + start, i - start);
			o += i - start;
			start = i + 1;
		}
	}
	buf[o++] = 0;
	buf[o++] = (u8)(qtype >> 8);
	buf[o++] = (u8)qtype;
	buf[o++] = 0;
	buf[o++] = 1;	/* IN */
	return (int)o;
}

/*
 * The name at p[*off..) into out (dotted, lowercased, "" for the root);
 * *off moves past it where it is written (not where a pointer led). A
 * pointer must lead strictly before the first byte of the labels it ends
 * (those read since the last jump), so each jump goes further back and
 * the walk ends; the name's wire length is bounded too. 0 or -1.
 */
static int dns_name(const u8 *p, size_t len, size_t *off, char out[DNS_WIRE_NAME_MAX + 1])
{
	size_t o = *off, seg = o, wire = 0, n = 0;
	bool jumped = false;

	for (;;) {
		u8 l;

		if (o >= len)
			return -1;
		l = p[o];
		if ((l & 0xc0) == 0xc0) {
			size_t to;

			if (o + 1 >= len)
				return -1;
			to = (size_t)(l & 0x3f) << 8 | p[o + 1];
			if (to >= seg)
				return -1;
			if (!jumped)
				*off = o + 2;
			jumped = true;
			o = seg = to;
			continue;
		}
		if (l & 0xc0)
			return -1;	/* 0x40, 0x80: extended and reserved label types */
		wire += 1u + l;
		if (wire > DNS_WIRE_NAME_MAX)
			return -1;
		if (l == 0)
			break;
		if (o + 1 + l > len)
			return -1;
		if (n)
			out[n++] = '.';
		for (size_t i = 0; i < l; i++) {
			char c = (char)p[o + 1 + i];

			if (c == '.' || c == '\0')
				return -1;	/* would read as another name */
			out[n++] = dns_lower(c);
		}
		o += 1u + l;
	}
	out[n] = '\0';
	if (!jumped)
		*off = o + 1;
	return 0;
}

/* Whether zone is name or one of its ancestors ("" is the root's). */
static bool dns_in_zone(const char *name, const char *zone)
{
	size_t n = __builtin_strlen(name), z = __builtin_strlen(zone);

	if (z == 0)
		return true;
	if (z > n)
		return false;
	return __builtin_memcmp(name + n - z, zone, z) == 0 && (z == n || name[n - z - 1] == '.');
}

static u32 dns_ttl(u32 t)
{
	return t > DNS_TTL_MAX ? 0 : t;
}

/* A resource record's fixed part after its owner name. */
struct dns_rr {
	u16 type, class;
	u32 ttl;
	size_t rdata, rdlen;
};

static int dns_rr(const u8 *p, size_t len, size_t *off, char owner[DNS_WIRE_NAME_MAX + 1], struct dns_rr *rr)
{
	size_t o;

	if (dns_name(p, len, off, owner) < 0)
		return -1;
	o = *off;
	if (len - o < 10)
		return -1;
	rr->type = rd16(p + o);
	rr->class = rd16(p + o + 2);
	rr->ttl = dns_ttl(rd32(p + o + 4));
	rr->rdlen = rd16(p + o + 8);
	rr->rdata = o + 10;
	if (len - rr->rdata < rr->rdlen)
		return -1;
	*off = rr->rdata + rr->rdlen;
	return 0;
}

#define BAD(s)                  \
	do {                    \
		*why = (s);     \
		return -EBADMSG; \
	} while (0)

int dns_msg_parse(const u8 *p, size_t len, u16 id, const char *name, u16 qtype, struct dns_answer *a,
		  const char **why)
{
	char want[DNS_NAME_MAX + 1], target[DNS_WIRE_NAME_MAX + 1], owner[DNS_WIRE_NAME_MAX + 1];
	size_t off = DNS_HDR_LEN, alen = qtype == DNS_TYPE_AAAA ? 16 : 4;
	u32 an, ns, ttl = DNS_TTL_MAX, cnames = 0;
	u8 rcode;
	struct dns_rr rr;

	__builtin_memset(a, 0, sizeof *a);
	*why = "";
	if ((qtype != DNS_TYPE_A && qtype != DNS_TYPE_AAAA) || dns_msg_name_norm(name, want) < 0)
		BAD("not a question this parser asks");
	if (len < DNS_HDR_LEN)
		BAD("shorter than a header");
	if (rd16(p) != id)
		BAD("another id");
	if (!(p[2] & 0x80))
		BAD("not a response");
	if ((p[2] >> 3 & 0xf) != 0)
		BAD("another opcode");
	if (rd16(p + 4) != 1)
		BAD("not one question");
	an = rd16(p + 6);
	ns = rd16(p + 8);
	/* Every record takes at least 11 bytes (a root owner, 10 fixed), the
	 * question at least 5. */
	if (len - DNS_HDR_LEN < 5 || (an + ns) * 11u > len - DNS_HDR_LEN - 5)
		BAD("counts the message cannot hold");
	if (dns_name(p, len, &off, target) < 0 || len - off < 4)
		BAD("a bad question");
	if (__builtin_strcmp(target, want) != 0)
		BAD("another name's answer");
	if (rd16(p + off) != qtype || rd16(p + off + 2) != 1)
		BAD("another type or class");
	off += 4;
	if (p[2] & 0x02) {
		*why = "truncated";
		return -EAGAIN;
	}
	rcode = p[3] & 0xf;
	if (rcode == 2 || rcode == 4 || rcode == 5) {
		*why = "the server failed or refused";
		return -EAGAIN;
	}
	if (rcode != 0 && rcode != 3)
		BAD("an unknown response code");

	a->alen = (u8)alen;
	for (u32 i = 0; i < an; i++) {
		if (dns_rr(p, len, &off, owner, &rr) < 0)
			BAD("an answer runs past the end");
		if (rr.class != 1 || __builtin_strcmp(owner, target) != 0)
			continue;	/* another name's: not trusted */
		if (rr.type == DNS_TYPE_CNAME) {
			size_t t = rr.rdata;

			if (++cnames > DNS_CNAME_MAX)
				BAD("too many aliases");
			if (dns_name(p, len, &t, target) < 0 || t != rr.rdata + rr.rdlen || target[0] == '\0')
				BAD("a bad alias");
			ttl = MIN(ttl, rr.ttl);
		} else if (rr.type == qtype) {
			if (rr.rdlen != alen)
				BAD("an address of the wrong length");
			if (a->n < DNS_ADDRS_MAX) {
				__builtin_memcpy(a->addr[a->n++], p + rr.rdata, alen);
				ttl = MIN(ttl, rr.ttl);
			}
		}
	}
	if (rcode == 0 && a->n) {
		a->result = DNS_ANSWER;
		a->ttl = ttl;
		return 0;
	}
	a->n = 0;
	a->result = rcode == 3 ? DNS_NXDOMAIN : DNS_NODATA;
	for (u32 i = 0; i < ns; i++) {
		if (dns_rr(p, len, &off, owner, &rr) < 0)
			BAD("an authority record runs past the end");
		if (rr.type != DNS_TYPE_SOA || rr.class != 1 || !dns_in_zone(target, owner) || a->has_soa)
			continue;
		if (rr.rdlen < 22)	/* two names of one byte at least, five numbers */
			BAD("a short SOA");
		a->has_soa = true;
		a->ttl = MIN(MIN(ttl, rr.ttl), dns_ttl(rd32(p + rr.rdata + rr.rdlen - 4)));
	}
	return 0;
}
