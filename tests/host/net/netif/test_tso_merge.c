/* net/netif/tso_merge.c (segment merging for HOST_TSO4/6) and drivers/virtio/net/vnet_gso.c
 * (the offload header, feature dependencies): good and edge inputs. Every
 * merged frame is cut again here as a device would (gso_size payload per
 * segment, PSH/FIN on the last only, IPv4 id + 1 per segment) and must give
 * back the segments that went in, byte for byte but for the IPv4 id and the
 * checksums. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/net/virtio_net_reg.h"
#include "drivers/virtio/net/vnet_gso.h"
#include "net/netif/tso_merge.h"
#include "lib/byteorder.h"

#define MSS 1460u
#define MAXF 80

static u8 body[MAXF * MSS];	/* the "site file": payload pieces point into it */
struct frame {
	u8 hdr[TSO_HDR_MAX];
	u32 hlen, len;		/* headers; whole frame */
	struct tso_piece pcs[2];
	unsigned n;
};
static struct frame fr[MAXF];

struct fspec {
	bool v6;
	u16 sport;
	u32 seq, ack;
	u8 flags;
	u32 payload;
	const u8 *data;		/* NULL: body + (seq - 1000) */
	u16 id;
	u8 opts;		/* TCP option bytes (multiple of 4) */
};

static u16 ip4_sum(const u8 *ip, u32 len)
{
	u32 s = 0;

	for (u32 i = 0; i < len; i += 2)
		s += (u32)(ip[i] << 8 | ip[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (u16)~s;
}

static struct frame *mk(struct frame *f, struct fspec s)
{
	u8 *h = f->hdr;
	u32 l4, tl = 20u + s.opts;

	memset(f, 0, sizeof(*f));
	memcpy(h, "\x52\x54\x00\x12\x34\x56\x02\x00\x00\x00\x00\x01", 12);
	if (s.v6) {
		put_be16(h + 12, 0x86dd);
		h[14] = 0x60;
		put_be16(h + 18, tl + s.payload);
		h[20] = 6;
		h[21] = 64;
		memset(h + 22, 0xfd, 16);
		memset(h + 38, 0xfe, 16);
		l4 = 54;
	} else {
		put_be16(h + 12, 0x0800);
		h[14] = 0x45;
		put_be16(h + 16, 20 + tl + s.payload);
		put_be16(h + 18, s.id);
		h[22] = 255;
		h[23] = 6;
		memcpy(h + 26, "\x0a\x4d\x00\x02\x0a\x4d\x00\x01", 8);
		put_be16(h + 24, ip4_sum(h + 14, 20));
		l4 = 34;
	}
	put_be16(h + l4, 80);
	put_be16(h + l4 + 2, s.sport);
	put_be32(h + l4 + 4, s.seq);
	put_be32(h + l4 + 8, s.ack);
	h[l4 + 12] = (u8)((tl / 4) << 4);
	h[l4 + 13] = s.flags;
	put_be16(h + l4 + 14, 8192);
	put_be16(h + l4 + 16, 0xbeef);	/* whatever the stack left */
	memset(h + l4 + 20, 1, s.opts);	/* NOPs */
	f->hlen = l4 + tl;
	f->len = f->hlen + s.payload;
	f->pcs[0] = (struct tso_piece){ h, f->hlen };
	f->n = 1;
	if (s.payload) {
		f->pcs[1] = (struct tso_piece){ s.data ? s.data : body + (s.seq - 1000), s.payload };
		f->n = 2;
	}
	return f;
}

static enum tso_verdict add(struct tso_batch *b, struct frame *f)
{
	return tso_merge_add(b, f->pcs, f->n, f->len, f);
}

/* n full segments of one flow from seq 1000, the last `last` bytes. */
static void flow(unsigned n, u32 last, bool v6, u8 last_flags)
{
	for (unsigned i = 0; i < n; i++) {
		u32 pl = i + 1 == n ? last : MSS;

		mk(&fr[i], (struct fspec){ .v6 = v6, .sport = 40000, .seq = 1000 + i * MSS, .ack = 77,
					   .flags = (u8)(TSO_TCP_ACK | (i + 1 == n ? last_flags : 0)),
					   .payload = pl, .id = (u16)(100 + i) });
	}
}

/* Cuts the merged frame as a device would and compares every segment with
 * the frame that went in. */
static void check_resegment(struct tso_batch *b)
{
	const struct tso_seg *f = &b->first;
	u32 off = 0;
	u8 pay[MAXF * MSS];
	unsigned k = 0;

	/* the payload, gathered */
	for (unsigned i = 0; i < b->npiece; i++) {
		memcpy(pay + off, b->piece[i].addr, b->piece[i].len);
		off += b->piece[i].len;
	}
	assert_int_equal(off, b->payload);
	if (f->v6) {
		assert_int_equal(b->hdr[18] << 8 | b->hdr[19], f->hlen - f->l4 + b->payload);
	} else {
		assert_int_equal(b->hdr[16] << 8 | b->hdr[17], f->hlen - f->l3 + b->payload);
		assert_int_equal(ip4_sum(b->hdr + f->l3, f->l4 - f->l3), 0);	/* valid header checksum */
	}
	for (u32 done = 0; done < b->payload; done += b->gso_size, k++) {
		struct frame *o = b->tok[k];
		u32 pl = b->payload - done < b->gso_size ? b->payload - done : b->gso_size;
		bool last = done + pl == b->payload;
		u8 h[TSO_HDR_MAX];
		u8 flags;

		assert_true(k < b->nseg);
		memcpy(h, b->hdr, f->hlen);
		put_be32(h + f->l4 + 4, f->seq + done);
		flags = h[f->l4 + 13];
		if (!last)
			flags &= (u8)~(TSO_TCP_PSH | TSO_TCP_FIN);
		h[f->l4 + 13] = flags;
		if (f->v6) {
			put_be16(h + 18, f->hlen - f->l4 + pl);
		} else {
			put_be16(h + 16, f->hlen - f->l3 + pl);
			/* id and checksum: the device's business; compare the rest */
			memcpy(h + 18, o->hdr + 18, 2);
			memcpy(h + 24, o->hdr + 24, 2);
		}
		memcpy(h + f->l4 + 16, o->hdr + f->l4 + 16, 2);
		assert_int_equal(o->len, f->hlen + pl);
		/* PSH anywhere becomes PSH on the last: only the last may differ */
		if (last)
			h[f->l4 + 13] = (u8)((h[f->l4 + 13] & ~TSO_TCP_PSH) | (o->hdr[f->l4 + 13] & TSO_TCP_PSH));
		assert_memory_equal(h, o->hdr, f->hlen);
		assert_memory_equal(pay + done, o->pcs[1].addr, pl);
	}
	assert_int_equal(k, b->nseg);
}

static struct tso_batch B;

static void test_merge_v4(void **state)
{
	flow(5, 700, false, TSO_TCP_PSH);
	tso_merge_init(&B, 15, true, true);
	for (int i = 0; i < 5; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	assert_int_equal(B.nseg, 5);
	assert_int_equal(B.gso_size, MSS);
	assert_int_equal(B.npiece, 1);	/* the body is one run of memory */
	assert_int_equal(B.payload, 4 * MSS + 700);
	/* short last segment: nothing more joins */
	mk(&fr[5], (struct fspec){ .sport = 40000, .seq = 1000 + 4 * MSS + 700, .ack = 77, .flags = TSO_TCP_ACK,
				   .payload = MSS });
	assert_int_equal(add(&B, &fr[5]), TSO_FULL);
	tso_merge_finish(&B);
	assert_true(B.hdr[34 + 13] & TSO_TCP_PSH);
	check_resegment(&B);
}

static void test_merge_v6(void **state)
{
	flow(4, MSS, true, TSO_TCP_FIN | TSO_TCP_PSH);
	tso_merge_init(&B, 15, true, true);
	for (int i = 0; i < 4; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	assert_true(B.closed);	/* FIN: the flow ends here */
	tso_merge_finish(&B);
	assert_int_equal(B.hdr[54 + 13], TSO_TCP_ACK | TSO_TCP_FIN | TSO_TCP_PSH);
	check_resegment(&B);
}

static void test_psh_in_the_middle(void **state)
{
	flow(3, MSS, false, 0);
	fr[1].hdr[34 + 13] |= TSO_TCP_PSH;	/* end of one tcp_write, more follows */
	tso_merge_init(&B, 15, true, true);
	for (int i = 0; i < 3; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	tso_merge_finish(&B);
	assert_true(B.hdr[34 + 13] & TSO_TCP_PSH);
	/* the device keeps PSH for the last segment only: on the wire it
	 * moves from the middle segment to the last */
	fr[1].hdr[34 + 13] &= (u8)~TSO_TCP_PSH;
	fr[2].hdr[34 + 13] |= TSO_TCP_PSH;
	check_resegment(&B);
}

static void test_not_contiguous(void **state)
{
	flow(3, MSS, false, 0);
	mk(&fr[1], (struct fspec){ .sport = 40000, .seq = 1000 + 2 * MSS, .ack = 77, .flags = TSO_TCP_ACK,
				   .payload = MSS });
	tso_merge_init(&B, 15, true, true);
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[1]), TSO_FULL);	/* a hole */
	assert_int_equal(B.nseg, 1);
}

static void test_other_flow_or_header(void **state)
{
	struct fspec s = { .sport = 40000, .seq = 1000 + MSS, .ack = 77, .flags = TSO_TCP_ACK, .payload = MSS };

	flow(1, MSS, false, 0);
	tso_merge_init(&B, 15, true, true);
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	s.sport = 40001;
	assert_int_equal(add(&B, mk(&fr[1], s)), TSO_FULL);	/* other port */
	s.sport = 40000;
	s.ack = 78;
	assert_int_equal(add(&B, mk(&fr[1], s)), TSO_FULL);	/* newer ACK */
	s.ack = 77;
	s.opts = 4;
	assert_int_equal(add(&B, mk(&fr[1], s)), TSO_FULL);	/* other header length */
	s.opts = 0;
	mk(&fr[1], s);
	fr[1].hdr[29] ^= 1;					/* other source address */
	put_be16(fr[1].hdr + 24, 0);
	put_be16(fr[1].hdr + 24, ip4_sum(fr[1].hdr + 14, 20));
	assert_int_equal(add(&B, &fr[1]), TSO_FULL);
	mk(&fr[1], s);
	fr[1].hdr[0] ^= 2;					/* other destination MAC */
	assert_int_equal(add(&B, &fr[1]), TSO_FULL);
	s.v6 = true;
	assert_int_equal(add(&B, mk(&fr[1], s)), TSO_FULL);	/* other family */
	s.v6 = false;
	s.id = 999;						/* the id may differ */
	assert_int_equal(add(&B, mk(&fr[1], s)), TSO_ADDED);
	assert_int_equal(B.nseg, 2);
}

static void test_flags(void **state)
{
	static const u8 alone[] = { TSO_TCP_SYN | TSO_TCP_ACK, TSO_TCP_RST | TSO_TCP_ACK, TSO_TCP_URG | TSO_TCP_ACK,
				    TSO_TCP_ECE | TSO_TCP_ACK, TSO_TCP_CWR | TSO_TCP_ACK, 0 };

	flow(2, MSS, false, 0);
	tso_merge_init(&B, 15, true, true);
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	for (unsigned i = 0; i < sizeof(alone); i++) {
		fr[1].hdr[34 + 13] = alone[i];
		assert_int_equal(add(&B, &fr[1]), TSO_ALONE);
	}
	/* a pure ACK goes alone */
	mk(&fr[1], (struct fspec){ .sport = 40000, .seq = 1000 + MSS, .ack = 77, .flags = TSO_TCP_ACK });
	assert_int_equal(add(&B, &fr[1]), TSO_ALONE);
	/* FIN in the middle: nothing may follow it */
	tso_merge_init(&B, 15, true, true);
	flow(3, MSS, false, 0);
	fr[1].hdr[34 + 13] |= TSO_TCP_FIN;
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[1]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[2]), TSO_FULL);
	assert_int_equal(B.nseg, 2);
}

static void test_lone_retransmission(void **state)
{
	/* lwIP resends one segment from the middle of what it had sent: it
	 * stays a batch of one, which the netif sends as it came. */
	mk(&fr[0], (struct fspec){ .sport = 40000, .seq = 1000 + 7 * MSS, .ack = 90, .flags = TSO_TCP_ACK,
				   .payload = MSS });
	tso_merge_init(&B, 15, true, true);
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	assert_int_equal(B.nseg, 1);
	assert_ptr_equal(B.tok[0], &fr[0]);
	/* the next new data after it (a newer ACK) does not join */
	mk(&fr[1], (struct fspec){ .sport = 40000, .seq = 1000 + 8 * MSS, .ack = 91, .flags = TSO_TCP_ACK,
				   .payload = MSS });
	assert_int_equal(add(&B, &fr[1]), TSO_FULL);
}

static void test_short_then_more(void **state)
{
	flow(3, MSS, false, 0);
	mk(&fr[1], (struct fspec){ .sport = 40000, .seq = 1000 + MSS, .ack = 77, .flags = TSO_TCP_ACK, .payload = 1000 });
	mk(&fr[2], (struct fspec){ .sport = 40000, .seq = 1000 + MSS + 1000, .ack = 77, .flags = TSO_TCP_ACK,
				   .payload = 400 });
	tso_merge_init(&B, 15, true, true);
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[1]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[2]), TSO_FULL);	/* after a short one */
	/* larger than the first: another gso_size */
	mk(&fr[0], (struct fspec){ .sport = 40000, .seq = 1000, .ack = 77, .flags = TSO_TCP_ACK, .payload = 500 });
	mk(&fr[1], (struct fspec){ .sport = 40000, .seq = 1500, .ack = 77, .flags = TSO_TCP_ACK, .payload = 600 });
	tso_merge_init(&B, 15, true, true);
	assert_int_equal(add(&B, &fr[0]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[1]), TSO_FULL);
}

static void test_size_bound(void **state)
{
	unsigned i;

	/* IPv4: 40 header bytes + 44 x 1460 = 64280 fits, a 45th does not */
	flow(46, MSS, false, 0);
	tso_merge_init(&B, 15, true, true);
	for (i = 0; i < 44; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[44]), TSO_FULL);
	tso_merge_finish(&B);
	check_resegment(&B);
	/* IPv6: the payload length excludes the fixed header: still 44 */
	flow(46, MSS, true, 0);
	tso_merge_init(&B, 15, true, true);
	for (i = 0; i < 44; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[44]), TSO_FULL);
	/* at most TSO_MAX_SEGS segments, however small */
	for (i = 0; i < MAXF; i++)
		mk(&fr[i], (struct fspec){ .sport = 1, .seq = 1000 + i * 100, .ack = 1, .flags = TSO_TCP_ACK,
					   .payload = 100 });
	tso_merge_init(&B, 15, true, true);
	for (i = 0; i < TSO_MAX_SEGS; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[i]), TSO_FULL);
	tso_merge_finish(&B);
	check_resegment(&B);
}

static void test_piece_bound(void **state)
{
	static u8 scattered[8][MSS];
	unsigned i;

	/* payload that is not adjacent (copied data): one piece each */
	for (i = 0; i < 5; i++) {
		memset(scattered[i], (int)i, MSS);
		mk(&fr[i], (struct fspec){ .sport = 2, .seq = 1000 + i * MSS, .ack = 1, .flags = TSO_TCP_ACK,
					   .payload = MSS, .data = scattered[4 - i] });
	}
	tso_merge_init(&B, 3, true, true);
	for (i = 0; i < 3; i++)
		assert_int_equal(add(&B, &fr[i]), TSO_ADDED);
	assert_int_equal(add(&B, &fr[3]), TSO_FULL);
	assert_int_equal(B.npiece, 3);
	tso_merge_finish(&B);
	check_resegment(&B);
	/* headers and payload in one piece (how lwIP builds copied data) */
	{
		static u8 one[3][14 + 40 + MSS];
		struct tso_piece p[3];

		tso_merge_init(&B, 15, true, true);
		for (i = 0; i < 3; i++) {
			mk(&fr[i], (struct fspec){ .sport = 3, .seq = 5000 + i * MSS, .ack = 1, .flags = TSO_TCP_ACK,
						   .payload = MSS, .data = scattered[i] });
			memcpy(one[i], fr[i].hdr, fr[i].hlen);
			memcpy(one[i] + fr[i].hlen, scattered[i], MSS);
			p[i] = (struct tso_piece){ one[i], fr[i].len };
			assert_int_equal(tso_merge_add(&B, &p[i], 1, fr[i].len, &fr[i]), TSO_ADDED);
		}
		assert_int_equal(B.npiece, 3);
		assert_ptr_equal(B.piece[1].addr, one[1] + fr[1].hlen);
		tso_merge_finish(&B);
		check_resegment(&B);
	}
}

static void test_family_and_parse(void **state)
{
	struct tso_seg s;

	flow(1, MSS, true, 0);
	tso_merge_init(&B, 15, true, false);	/* HOST_TSO4 only */
	assert_int_equal(add(&B, &fr[0]), TSO_ALONE);
	tso_merge_init(&B, 15, false, true);
	flow(1, MSS, false, 0);
	assert_int_equal(add(&B, &fr[0]), TSO_ALONE);
	/* parse: a length that disagrees with the frame, a fragment, UDP,
	 * headers not in the first piece, ARP */
	flow(1, MSS, false, 0);
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len, &s), 0);
	assert_int_equal(s.hlen, 54);
	assert_int_equal(s.payload, MSS);
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len + 1, &s), -ENOTSUP);
	fr[0].hdr[20] = 0x20;	/* MF */
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len, &s), -ENOTSUP);
	flow(1, MSS, false, 0);
	fr[0].hdr[23] = 17;
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len, &s), -ENOTSUP);
	flow(1, MSS, false, 0);
	fr[0].pcs[0].len = 40;
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len, &s), -ENOTSUP);
	flow(1, MSS, false, 0);
	fr[0].hdr[34 + 12] = 0x40;	/* data offset 16 bytes */
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len, &s), -ENOTSUP);
	flow(1, MSS, false, 0);
	put_be16(fr[0].hdr + 12, 0x0806);
	assert_int_equal(tso_merge_parse(fr[0].pcs, fr[0].n, fr[0].len, &s), -ENOTSUP);
	assert_int_equal(tso_merge_parse(fr[0].pcs, 0, fr[0].len, &s), -ENOTSUP);
}

/* ---- drivers/virtio/net/vnet_gso.c ---- */

#define F(x) (1ULL << VIRTIO_NET_F_##x)

static void test_features_fixup(void **state)
{
	u64 all = F(CSUM) | F(HOST_TSO4) | F(HOST_TSO6) | F(HOST_ECN) | F(GUEST_CSUM) | F(CTRL_VQ) | F(CTRL_RX) |
		  F(MRG_RXBUF) | (1ULL << 32);

	assert_true(vnet_features_fixup(all) == all);
	/* no CSUM: TSO goes, and ECN with it */
	assert_true(vnet_features_fixup(all & ~F(CSUM)) == (all & ~(F(CSUM) | F(HOST_TSO4) | F(HOST_TSO6) |
									F(HOST_ECN))));
	/* ECN needs either TSO */
	assert_true(vnet_features_fixup(all & ~F(HOST_TSO4)) == (all & ~F(HOST_TSO4)));
	assert_true(vnet_features_fixup(all & ~(F(HOST_TSO4) | F(HOST_TSO6))) ==
		    (all & ~(F(HOST_TSO4) | F(HOST_TSO6) | F(HOST_ECN))));
	/* the control queue's commands need the control queue */
	assert_true(vnet_features_fixup(all & ~F(CTRL_VQ)) == (all & ~(F(CTRL_VQ) | F(CTRL_RX))));
	assert_true(vnet_features_fixup(F(GUEST_TSO4) | F(GUEST_ECN)) == 0);
	assert_true(vnet_features_fixup(0) == 0);
}

static void test_gso_hdr(void **state)
{
	u8 vh[12];

	flow(1, MSS, false, 0);
	memset(vh, 0, sizeof vh);
	vh[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 34, MSS, true, true), 0);
	assert_int_equal(vh[0], VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(vh[1], VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(vh[2] | vh[3] << 8, 54);
	assert_int_equal(vh[4] | vh[5] << 8, MSS);
	assert_int_equal(vh[10] | vh[11] << 8, 0);
	mk(&fr[0], (struct fspec){ .v6 = true, .seq = 1, .flags = TSO_TCP_ACK, .payload = 1200, .opts = 12 });
	memset(vh, 0, sizeof vh);
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 54, 1200, true, true), 0);
	assert_int_equal(vh[1], VIRTIO_NET_HDR_GSO_TCPV6);
	assert_int_equal(vh[2] | vh[3] << 8, 54 + 32);
	/* refused, nothing written */
	memset(vh, 0, sizeof vh);
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 54, 1200, true, false), -ENOTSUP);
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 54, 0, true, true), -ENOTSUP);
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, 60, 54, 1200, true, true), -ENOTSUP);	/* TCP cut */
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 200, 1200, true, true), -ENOTSUP);
	fr[0].hdr[54 + 12] = 0x10;	/* data offset 4 */
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 54, 1200, true, true), -ENOTSUP);
	put_be16(fr[0].hdr + 12, 0x0806);
	assert_int_equal(vnet_tx_gso_hdr(vh, fr[0].hdr, fr[0].hlen, 54, 1200, true, true), -ENOTSUP);
	for (unsigned i = 0; i < sizeof vh; i++)
		assert_int_equal(vh[i], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_v4),
		cmocka_unit_test(test_merge_v6),
		cmocka_unit_test(test_psh_in_the_middle),
		cmocka_unit_test(test_not_contiguous),
		cmocka_unit_test(test_other_flow_or_header),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_lone_retransmission),
		cmocka_unit_test(test_short_then_more),
		cmocka_unit_test(test_size_bound),
		cmocka_unit_test(test_piece_bound),
		cmocka_unit_test(test_family_and_parse),
		cmocka_unit_test(test_features_fixup),
		cmocka_unit_test(test_gso_hdr),
	};

	for (unsigned i = 0; i < sizeof(body); i++)
		body[i] = (u8)(i * 7 + (i >> 8));
	return cmocka_run_group_tests(tests, NULL, NULL);
}
