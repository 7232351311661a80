/* Segment merging for transmit segmentation offload; the rules and the
 * reasoning are in tso_merge.h. */
#include "lib/byteorder.h"
#include "lib/string.h"
#include "net/netif/tso_merge.h"

#define ETH_HLEN 14u

int tso_merge_parse(const struct tso_piece *pcs, unsigned n, u32 frame_len, struct tso_seg *out)
{
	const u8 *f;
	u32 have, doff;

	if (n == 0 || !pcs[0].addr)
		return -ENOTSUP;
	f = pcs[0].addr;
	have = pcs[0].len;
	if (have > frame_len || have < ETH_HLEN + 20)
		return -ENOTSUP;
	memset(out, 0, sizeof(*out));
	out->l3 = ETH_HLEN;
	if (get_be16(f + 12) == 0x0800) {
		const u8 *ip = f + ETH_HLEN;
		u32 ihl = (ip[0] & 0xfu) * 4u;

		if ((ip[0] >> 4) != 4 || ihl < 20 || have < ETH_HLEN + ihl || ip[9] != 6)
			return -ENOTSUP;
		if (((ip[6] & 0x3f) | ip[7]) != 0)	/* MF or an offset: a fragment */
			return -ENOTSUP;
		if ((u32)get_be16(ip + 2) != frame_len - ETH_HLEN)
			return -ENOTSUP;
		out->l4 = ETH_HLEN + ihl;
	} else if (get_be16(f + 12) == 0x86dd) {
		const u8 *ip = f + ETH_HLEN;

		if (have < ETH_HLEN + 40 || (ip[0] >> 4) != 6 || ip[6] != 6)
			return -ENOTSUP;
		if ((u32)get_be16(ip + 4) != frame_len - ETH_HLEN - 40)
			return -ENOTSUP;
		out->v6 = true;
		out->l4 = ETH_HLEN + 40;
	} else {
		return -ENOTSUP;
	}
	if (have < out->l4 + 20)
		return -ENOTSUP;
	doff = (u32)(f[out->l4 + 12] >> 4) * 4u;
	out->hlen = out->l4 + doff;
	if (doff < 20 || out->hlen > have || out->hlen > TSO_HDR_MAX || out->hlen > frame_len)
		return -ENOTSUP;
	out->seq = get_be32(f + out->l4 + 4);
	out->flags = f[out->l4 + 13];
	out->payload = frame_len - out->hlen;
	return 0;
}

void tso_merge_reset(struct tso_batch *b)
{
	b->nseg = 0;
	b->npiece = 0;
	b->payload = 0;
	b->psh_fin = 0;
	b->closed = false;
}

void tso_merge_init(struct tso_batch *b, unsigned max_pieces, bool v4, bool v6)
{
	tso_merge_reset(b);
	b->max_pieces = max_pieces < 1 ? 1 : max_pieces > TSO_MAX_PIECES ? TSO_MAX_PIECES : max_pieces;
	b->v4 = v4;
	b->v6 = v6;
}

/* Header bytes that may differ between segments of one merge: lengths, the
 * IPv4 id and checksum, the sequence number, flags and TCP checksum. */
static bool tso_merge_may_differ(const struct tso_seg *s, u32 i)
{
	if (i >= s->l3 && i < s->l4) {
		u32 o = i - s->l3;

		if (s->v6)
			return o == 4 || o == 5;
		return o == 2 || o == 3 || o == 4 || o == 5 || o == 10 || o == 11;
	}
	if (i >= s->l4) {
		u32 o = i - s->l4;

		return (o >= 4 && o < 8) || o == 13 || o == 16 || o == 17;
	}
	return false;
}

/* Appends the payload of a frame (the bytes after skip) to the batch's
 * pieces, joining adjacent ones. Returns false if the pieces do not fit
 * (the batch is then unchanged). */
static bool tso_merge_add_pieces(struct tso_batch *b, const struct tso_piece *pcs, unsigned n, u32 skip)
{
	unsigned np = b->npiece, nt = 0;
	struct tso_piece grown = np ? b->piece[np - 1] : (struct tso_piece){ NULL, 0 };
	struct tso_piece tmp[TSO_MAX_PIECES];

	for (unsigned i = 0; i < n; i++) {
		struct tso_piece *tail = nt ? &tmp[nt - 1] : np ? &grown : NULL;
		const u8 *a = pcs[i].addr;
		u32 len = pcs[i].len;

		if (skip >= len) {
			skip -= len;
			continue;
		}
		a += skip;
		len -= skip;
		skip = 0;
		if (tail && tail->addr + tail->len == a) {
			tail->len += len;
			continue;
		}
		if (np + nt >= b->max_pieces)
			return false;
		tmp[nt++] = (struct tso_piece){ a, len };
	}
	if (np)
		b->piece[np - 1] = grown;
	for (unsigned i = 0; i < nt; i++)
		b->piece[np + i] = tmp[i];
	b->npiece = np + nt;
	return true;
}

enum tso_verdict tso_merge_add(struct tso_batch *b, const struct tso_piece *pcs, unsigned n, u32 frame_len,
			 void *tok)
{
	const u8 bad = TSO_TCP_SYN | TSO_TCP_RST | TSO_TCP_URG | TSO_TCP_ECE | TSO_TCP_CWR;
	struct tso_seg s;
	const struct tso_seg *f = &b->first;
	u32 iplen;

	if (tso_merge_parse(pcs, n, frame_len, &s) < 0 || s.payload == 0 || (s.flags & bad) ||
	    !(s.flags & TSO_TCP_ACK) || !(s.v6 ? b->v6 : b->v4))
		return TSO_ALONE;
	if (b->nseg == 0) {
		if (s.payload > 0xffffu || s.hlen - s.l3 + s.payload > TSO_IP_MAX + (s.v6 ? 40u : 0u))
			return TSO_ALONE;
		memcpy(b->hdr, pcs[0].addr, s.hlen);
		b->first = s;
		b->gso_size = (u16)s.payload;
		b->payload = 0;
		b->npiece = 0;
		if (!tso_merge_add_pieces(b, pcs, n, s.hlen))
			return TSO_ALONE;
		b->payload = s.payload;
		b->next_seq = s.seq + s.payload;
		b->psh_fin = s.flags & (TSO_TCP_PSH | TSO_TCP_FIN);
		b->closed = (s.flags & TSO_TCP_FIN) != 0;
		b->tok[0] = tok;
		b->nseg = 1;
		return TSO_ADDED;
	}
	if (b->closed || b->nseg >= TSO_MAX_SEGS || s.hlen != f->hlen || s.l4 != f->l4 || s.v6 != f->v6 ||
	    s.seq != b->next_seq || s.payload > b->gso_size)
		return TSO_FULL;
	/* IPv4 total length counts the IP header; IPv6 payload length does not. */
	iplen = f->hlen - f->l3 + b->payload + s.payload - (f->v6 ? 40u : 0u);
	if (iplen > TSO_IP_MAX)
		return TSO_FULL;
	for (u32 i = 0; i < s.hlen; i++)
		if (pcs[0].addr[i] != b->hdr[i] && !tso_merge_may_differ(f, i))
			return TSO_FULL;
	if (!tso_merge_add_pieces(b, pcs, n, s.hlen))
		return TSO_FULL;
	b->payload += s.payload;
	b->next_seq += s.payload;
	b->psh_fin = (u8)((b->psh_fin & TSO_TCP_PSH) | (s.flags & (TSO_TCP_PSH | TSO_TCP_FIN)));
	b->closed = (s.flags & TSO_TCP_FIN) || s.payload < b->gso_size;
	b->tok[b->nseg++] = tok;
	return TSO_ADDED;
}

void tso_merge_finish(struct tso_batch *b)
{
	const struct tso_seg *f = &b->first;
	u8 *ip = b->hdr + f->l3;
	u8 *tcp = b->hdr + f->l4;

	if (f->v6) {
		put_be16(ip + 4, (u16)(f->hlen - f->l4 + b->payload));
	} else {
		u32 sum = 0, ihl = f->l4 - f->l3;

		put_be16(ip + 2, (u16)(f->hlen - f->l3 + b->payload));
		put_be16(ip + 10, 0);
		for (u32 i = 0; i < ihl; i += 2)
			sum += get_be16(ip + i);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		put_be16(ip + 10, (u16)~sum);
	}
	tcp[13] = (u8)((tcp[13] & ~(TSO_TCP_PSH | TSO_TCP_FIN)) | b->psh_fin);
}
