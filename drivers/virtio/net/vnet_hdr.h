/* vnet_hdr: the virtio-net per-packet header. Validates what the device
 * wrote into receive buffers (every field untrusted), fills transmit headers,
 * and computes Internet checksums for the offload paths. Pure code: no rings,
 * no device access. */
#ifndef VIREO_VNET_HDR_H
#define VIREO_VNET_HDR_H

#include "lib/types.h"
#include "drivers/virtio/net/virtio_net_reg.h"

#define VNET_ETH_HLEN		14u	/* smallest frame we accept */
#define VNET_FRAME_MAX		65535u	/* cap on a (merged) frame, header excluded */

/* Why a received buffer was dropped. Kept dense: indexes the driver's drop
 * counters and vnet_hdr_drop_name(). */
enum vnet_drop {
	VNET_DROP_NONE = 0,
	VNET_DROP_BAD_CONFIG,		/* caller's vnet_rx_cfg is invalid */
	VNET_DROP_TOO_LONG,		/* used_len > posted_len */
	VNET_DROP_TOO_SHORT,		/* no room for header + Ethernet header */
	VNET_DROP_BAD_NUM_BUFFERS,	/* 0, > max_buffers, or merging without MRG_RXBUF */
	VNET_DROP_BAD_FLAGS,		/* a flag the negotiated features forbid */
	VNET_DROP_BAD_CSUM_OFFSETS,	/* csum_start + csum_offset + 2 > frame */
	VNET_DROP_BAD_GSO,		/* gso_type not negotiated (UFO, USO, ECN, TSO off) */
	VNET_DROP_BAD_MERGE_LEN,	/* non-final merged buffer not filled, or empty final */
	VNET_DROP_FRAME_TOO_BIG,	/* merged frame > max_frame */
	VNET_DROP_MERGE_OVERRUN,	/* merge called with no buffer outstanding */
	VNET_DROP_BAD_GSO_SIZE,		/* GSO frame: gso_size 0 or more than the MTU carries */
	VNET_DROP_BAD_GSO_HEADERS,	/* GSO frame: not the TCP frame gso_type says, headers
					 * not in buffer 1, IP length past the frame, checksum
					 * offsets not the TCP checksum, hdr_len past the frame */
	VNET_DROP_COUNT
};

/* What the driver negotiated, for the receive checks. */
struct vnet_rx_cfg {
	u32 hdr_len;		/* vnet_hdr_len(): 12, or 10 for legacy w/o MRG_RXBUF */
	bool mrg_rxbuf;		/* VIRTIO_NET_F_MRG_RXBUF negotiated */
	bool guest_csum;	/* VIRTIO_NET_F_GUEST_CSUM negotiated */
	u16 max_buffers;	/* cap on num_buffers, 1..ring size (with mrg_rxbuf) */
	u32 max_frame;		/* cap on the frame, header excluded; 14..VNET_FRAME_MAX */
	/* Receive segmentation offload (GUEST_TSO4 / GUEST_TSO6): only with
	 * mrg_rxbuf and guest_csum. A GSO frame may be up to max_gso_frame
	 * (max_frame..VNET_FRAME_MAX); every other frame stays <= max_frame. */
	bool guest_tso4, guest_tso6;
	u32 max_gso_frame;
};

/* One received packet, as far as it has been validated. All offsets are
 * relative to the first buffer; the frame continues in buffers 2..num_buffers
 * (each starting at offset 0) when num_buffers > 1. */
struct vnet_rx_info {
	u32 frame_off;		/* first frame byte in buffer 1 (== hdr_len) */
	u32 first_len;		/* frame bytes in buffer 1 */
	u32 frame_len;		/* frame bytes so far; the whole frame once complete */
	u16 num_buffers;	/* buffers this packet spans, 1..max_buffers */
	u16 bufs_left;		/* buffers still to pass to vnet_hdr_rx_merge (0 = complete) */
	bool csum_valid;	/* DATA_VALID: device verified the checksum */
	bool needs_csum;	/* NEEDS_CSUM: checksum is partial, see below */
	u16 csum_start;		/* with needs_csum: frame offset where summing starts */
	u16 csum_offset;	/* ... and where (from csum_start) the result goes */
	/* A GSO frame (gso_type TCPV4 or TCPV6): one TCP segment the device
	 * coalesced from segments of gso_size payload bytes. Its Ethernet, IP
	 * and TCP headers (gso_hdrs bytes) are all in buffer 1, checked; the
	 * device's hdr_len is only a hint (§5.1.6.4.2) and is not used. */
	u8 gso_type;		/* VIRTIO_NET_HDR_GSO_NONE, _TCPV4 or _TCPV6 */
	u16 gso_size;
	u16 gso_hdrs;		/* Ethernet + IP + TCP header bytes, parsed */
	u32 gso_ip_end;		/* frame offset where the IP packet ends */
	u16 gso_hdr_len;	/* the device's hint */
	u32 frame_cap;		/* max_frame, or max_gso_frame for a GSO frame */
	enum vnet_drop drop;	/* VNET_DROP_NONE unless an error was returned */
	u16 skip;		/* after an error: buffers of the same packet still
				 * to come, to be discarded unparsed (0 when
				 * num_buffers itself was not believable) */
};

/* Header length for the negotiated features: 12 with VERSION_1 or
 * MRG_RXBUF, 10 for a legacy device without MRG_RXBUF. */
u32 vnet_hdr_len(bool version_1, bool mrg_rxbuf);

/* Check the first (or only) buffer of a received packet. buf holds used_len
 * device-written bytes; posted_len is the writable length we posted. Reads
 * only buf[0..hdr_len). Returns 0 with *out filled (out->bufs_left > 0 means
 * pass the remaining buffers to vnet_hdr_rx_merge before using the frame), or
 * -EINVAL (bad cfg), -EOVERFLOW (used_len > posted_len), -EBADMSG (bad header
 * or length) with out->drop saying why. */
int vnet_hdr_rx_check(const struct vnet_rx_cfg *cfg, const u8 *buf, u32 used_len,
		  u32 posted_len, struct vnet_rx_info *out);

/* Wire segments a complete GSO frame stands for (its TCP payload cut at
 * gso_size, at least 1); 1 for any other frame. */
u32 vnet_hdr_rx_gso_segments(const struct vnet_rx_info *info);

/* Account the next buffer of a merged packet (MRG_RXBUF, num_buffers > 1).
 * Every buffer but the last must be filled to its posted length; the last
 * must hold at least one byte; the total frame must fit cfg->max_frame.
 * When the last buffer is in, the checksum offsets are checked against the
 * whole frame. Returns 0 (info updated), or a negative error with info->drop
 * set; after an error the packet must be dropped whole. */
int vnet_hdr_rx_merge(const struct vnet_rx_cfg *cfg, struct vnet_rx_info *info,
		  u32 used_len, u32 posted_len);

/* Counter name for a drop reason ("?" if out of range). */
const char *vnet_hdr_drop_name(enum vnet_drop reason);

/* Fill a transmit header of hdr_len bytes (10 or 12): all zero (num_buffers
 * 0, GSO_NONE) except, with csum_offload, NEEDS_CSUM and the offsets. Use
 * csum_offload only with VIRTIO_NET_F_CSUM negotiated, after seeding the
 * checksum field with the pseudo-header sum. Fields past hdr_len are not
 * written. */
void vnet_hdr_tx_hdr(u8 *hdr, size_t hdr_len, bool csum_offload, u16 csum_start,
		 u16 csum_offset);

/* Add len bytes at p to a 32-bit ones'-complement accumulator (big-endian
 * 16-bit words, an odd last byte padded with zero). Returns the new sum;
 * chain calls only at even lengths. */
u32 vnet_hdr_csum_add(u32 sum, const u8 *p, u32 len);

/* Fold an accumulator to 16 bits and complement it: the value to store. */
u16 vnet_hdr_csum_fold(u32 sum);

/* Complete a partial checksum in a contiguous frame, as a device does for
 * NEEDS_CSUM: sum frame[start..len), store the folded result big-endian at
 * start + offset. Returns 0, or -EINVAL if start + offset + 2 > len. */
int vnet_hdr_csum_complete(u8 *frame, u32 len, u16 start, u16 offset);

/* Prepare TCP checksum offload for a frame whose Ethernet, IP and TCP
 * headers are the first hlen bytes at hdr (writable): IPv4 that is not a
 * fragment, or IPv6 with TCP as the first next header. Writes the
 * pseudo-header sum into the TCP checksum field and sets *start and *offset for
 * vnet_hdr_tx_hdr(). Returns 0, or -ENOTSUP (not such a frame, or headers not
 * all within hlen; nothing written). */
int vnet_hdr_tx_csum_prep(u8 *hdr, u32 hlen, u16 *start, u16 *offset);

/* True if frame (Ethernet first) is an IPv4 fragment. */
bool vnet_hdr_is_ipv4_fragment(const u8 *frame, u32 len);

#endif
