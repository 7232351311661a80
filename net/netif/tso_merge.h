/* tso_merge: joins consecutive TCP segments of one flow, as the stack handed
 * them to the netif in one transmit burst, into one frame for the device to
 * cut again (VIRTIO_NET_F_HOST_TSO4/6). Pure code over frame bytes: no lwIP,
 * no rings. The netif glue (net/netif/tso_out.c) feeds it frames and sends what it
 * builds.
 *
 * Why merge in the netif rather than let lwIP build 64 KiB segments: lwIP's
 * congestion control, retransmission and the unacked queue all stay in real
 * MSS units, untouched (no patch to the fetched source); a retransmission is
 * one lwIP segment and goes out alone, exactly as without the offload. What
 * the offload saves is the per-frame cost below the stack, which is where
 * the emulated guest spends its time: one ring slot, one device header, one
 * host-side write per merged frame instead of per MSS. Measured under TCG on
 * a tap (wrk, 64 KiB body, 8 s runs, -m 256, on a 2-core host shared with
 * other work, load 7-8): one connection 20-28 MB/s segment by segment,
 * 38-59 MB/s merged (~40 segments per offloaded frame, ring never full);
 * 32 connections 8-10 MB/s either way: that figure is limited elsewhere
 * (issue 15's collapse), not by the per-frame cost.
 *
 * The merged frame is exact: the device cuts it at gso_size = the first
 * segment's payload, so it may only hold segments that are
 *  - contiguous in sequence, same Ethernet/IP/TCP header apart from the
 *    sequence number, flags and the fields that carry a length, id or
 *    checksum (so the same 4-tuple, acknowledgment, window and options);
 *  - all exactly gso_size bytes of payload except the last (<= gso_size);
 *  - ACK set, none of SYN, RST, URG, ECE, CWR; FIN only on the last.
 * The device puts PSH (and FIN) on the last wire segment only, so the merged
 * header carries the union of PSH and the last segment's FIN; every other
 * flag is the same in all of them. Anything else goes out alone, in order.
 *
 * Bounds: the merged IP packet fits its 16-bit length field (65535 bytes
 * including the IP and TCP headers), a batch holds at most TSO_MAX_SEGS
 * segments and at most the caller's number of payload pieces (the ring's
 * scatter-gather budget; adjacent pieces, as a zero-copy body's are, are
 * joined into one). */
#ifndef VIREO_TSO_MERGE_H
#define VIREO_TSO_MERGE_H

#include "lib/types.h"

#define TSO_HDR_MAX	136u	/* Ethernet 14 + IPv4 with options 60 + TCP 60, rounded */
#define TSO_MAX_SEGS	64u	/* segments per merged frame */
#define TSO_MAX_PIECES	32u	/* payload pieces per merged frame (cap on max_pieces) */
#define TSO_IP_MAX	65535u	/* IPv4 total length / IPv6 payload length field */

#define TSO_TCP_FIN	0x01u
#define TSO_TCP_SYN	0x02u
#define TSO_TCP_RST	0x04u
#define TSO_TCP_PSH	0x08u
#define TSO_TCP_ACK	0x10u
#define TSO_TCP_URG	0x20u
#define TSO_TCP_ECE	0x40u
#define TSO_TCP_CWR	0x80u

struct tso_piece {
	const u8 *addr;
	u32 len;
};

/* What tso_parse found in one frame. */
struct tso_seg {
	u32 l3, l4, hlen;	/* IP header, TCP header, first payload byte */
	bool v6;
	u32 seq;
	u8 flags;
	u32 payload;		/* TCP payload bytes */
};

struct tso_batch {
	u8 hdr[TSO_HDR_MAX];	/* the first segment's headers; patched by tso_finish */
	struct tso_seg first;
	u32 next_seq;		/* sequence number the next segment must carry */
	u32 payload;		/* payload bytes merged so far */
	u16 gso_size;		/* the first segment's payload */
	u8 psh_fin;		/* PSH seen in any segment, FIN of the last */
	bool closed;		/* the last segment was short or had FIN */
	unsigned max_pieces;	/* 1..TSO_MAX_PIECES */
	bool v4, v6;		/* families the device segments */
	unsigned nseg, npiece;
	struct tso_piece piece[TSO_MAX_PIECES];	/* payload only */
	void *tok[TSO_MAX_SEGS];		/* one per segment, in order */
};

enum tso_verdict {
	TSO_ADDED,	/* the frame is in the batch */
	TSO_FULL,	/* cannot join this batch: finish and send it, then add again */
	TSO_ALONE,	/* not mergeable: send the batch, then this frame as it is */
};

/* Parses a frame whose Ethernet, IP and TCP headers all lie in pcs[0]
 * (frame_len bytes over all pieces). Returns 0 for an IPv4 (not a fragment)
 * or IPv6 (TCP directly after the fixed header) TCP segment whose IP length
 * field matches frame_len, or -ENOTSUP. */
int tso_merge_parse(const struct tso_piece *pcs, unsigned n, u32 frame_len, struct tso_seg *out);

/* An empty batch; max_pieces is the payload pieces a merged frame may have
 * (clamped to 1..TSO_MAX_PIECES); v4, v6: the families that may be merged. */
void tso_merge_init(struct tso_batch *b, unsigned max_pieces, bool v4, bool v6);

/* Empties a batch (after its frame was sent), keeping its settings. */
void tso_merge_reset(struct tso_batch *b);

/* Offers one frame (pieces pcs[0..n), frame_len bytes; tok comes back in
 * b->tok). A frame that is not a mergeable segment is TSO_ALONE whatever
 * the batch holds. */
enum tso_verdict tso_merge_add(struct tso_batch *b, const struct tso_piece *pcs, unsigned n, u32 frame_len,
			 void *tok);

/* Completes the merged header in b->hdr (first.hlen bytes): IP length and,
 * for IPv4, the header checksum; TCP flags with PSH/FIN of the merge. The
 * TCP checksum is left for the device (NEEDS_CSUM, seeded by the driver).
 * Call with b->nseg >= 2; the payload is b->piece[0..npiece). */
void tso_merge_finish(struct tso_batch *b);

#endif
