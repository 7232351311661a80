/* virtio-net header checks and fills, §5.1.6. Every header byte and length
 * the device reports is untrusted; nothing here writes to a receive buffer. */
#include "lib/types.h"
#include "drivers/virtio/net/vnet_hdr.h"
#include "lib/byteorder.h"

/* Known RX flag bits. Others are ignored, as §5.1.6.4.2 requires. */
#define RX_KNOWN_FLAGS (VIRTIO_NET_HDR_F_NEEDS_CSUM | VIRTIO_NET_HDR_F_DATA_VALID | \
			VIRTIO_NET_HDR_F_RSC_INFO)

static const char *const drop_names[VNET_DROP_COUNT] = {
	[VNET_DROP_NONE]		= "none",
	[VNET_DROP_BAD_CONFIG]		= "bad_config",
	[VNET_DROP_TOO_LONG]		= "too_long",
	[VNET_DROP_TOO_SHORT]		= "too_short",
	[VNET_DROP_BAD_NUM_BUFFERS]	= "bad_num_buffers",
	[VNET_DROP_BAD_FLAGS]		= "bad_flags",
	[VNET_DROP_BAD_CSUM_OFFSETS]	= "bad_csum_offsets",
	[VNET_DROP_BAD_GSO]		= "bad_gso",
	[VNET_DROP_BAD_MERGE_LEN]	= "bad_merge_len",
	[VNET_DROP_FRAME_TOO_BIG]	= "frame_too_big",
	[VNET_DROP_MERGE_OVERRUN]	= "merge_overrun",
	[VNET_DROP_BAD_GSO_SIZE]	= "bad_gso_size",
	[VNET_DROP_BAD_GSO_HEADERS]	= "bad_gso_headers",
};

static int vnet_hdr_drop(struct vnet_rx_info *info, enum vnet_drop why, int err)
{
	info->drop = why;
	info->bufs_left = 0;
	info->skip = 0;
	return err;
}

/* Drop a packet whose num_buffers was believable: its later buffers are
 * discarded too, never parsed as packets of their own (as Linux does). */
static int vnet_hdr_drop_rest(struct vnet_rx_info *info, enum vnet_drop why, int err, u16 rest)
{
	vnet_hdr_drop(info, why, err);
	info->skip = rest;
	return err;
}

static bool vnet_hdr_cfg_ok(const struct vnet_rx_cfg *cfg)
{
	if (cfg->hdr_len != VIRTIO_NET_HDR_LEN && cfg->hdr_len != VIRTIO_NET_HDR_LEN_LEGACY)
		return false;
	if (cfg->mrg_rxbuf && (cfg->hdr_len != VIRTIO_NET_HDR_LEN || cfg->max_buffers == 0))
		return false;
	if (cfg->max_frame < VNET_ETH_HLEN || cfg->max_frame > VNET_FRAME_MAX)
		return false;
	/* Receive TSO only with mergeable buffers (virtio_net.c says why) and
	 * GUEST_CSUM (§5.1.3.1). */
	if (cfg->guest_tso4 || cfg->guest_tso6)
		return cfg->mrg_rxbuf && cfg->guest_csum && cfg->max_gso_frame >= cfg->max_frame &&
		       cfg->max_gso_frame <= VNET_FRAME_MAX;
	return true;
}

/* A GSO frame's headers, from the frame bytes in buffer 1 (f, avail bytes):
 * Ethernet, then IPv4 (not a fragment) or IPv6 as gso_type says, then TCP
 * directly, all within avail; NEEDS_CSUM must name the TCP checksum. Fills
 * gso_hdrs and gso_ip_end; the IP length is held against the whole frame
 * once it is known (vnet_hdr_rx_finish). Linux's tun writes a GSO frame's
 * linear length, not its header length, into hdr_len, so hdr_len is held
 * only to the frame's length. */
static bool vnet_hdr_rx_gso_headers(const u8 *f, u32 avail, struct vnet_rx_info *info)
{
	const u32 l3 = VNET_ETH_HLEN;
	u32 l4, ip_end, hdrs;
	u16 type;

	if (avail < l3)
		return false;
	type = (u16)(f[12] << 8 | f[13]);
	if (info->gso_type == VIRTIO_NET_HDR_GSO_TCPV4) {
		u32 ihl;

		if (type != 0x0800 || avail < l3 + 20 || (f[l3] >> 4) != 4)
			return false;
		ihl = (f[l3] & 0xfu) * 4u;
		if (ihl < 20 || avail < l3 + ihl || f[l3 + 9] != 6 ||
		    ((f[l3 + 6] & 0x3f) | f[l3 + 7]) != 0)		/* MF or an offset */
			return false;
		l4 = l3 + ihl;
		ip_end = l3 + (u32)(f[l3 + 2] << 8 | f[l3 + 3]);
	} else {
		if (type != 0x86dd || avail < l3 + 40 || (f[l3] >> 4) != 6 || f[l3 + 6] != 6)
			return false;
		l4 = l3 + 40;
		ip_end = l4 + (u32)(f[l3 + 4] << 8 | f[l3 + 5]);	/* 0 (jumbo) fails below */
	}
	if (avail < l4 + 20 || (f[l4 + 12] >> 4) < 5)
		return false;
	hdrs = l4 + (u32)(f[l4 + 12] >> 4) * 4u;
	if (hdrs > avail || ip_end < hdrs)
		return false;
	if (info->needs_csum && (info->csum_start != l4 || info->csum_offset != 16))
		return false;
	info->gso_hdrs = (u16)hdrs;
	info->gso_ip_end = ip_end;
	return true;
}

/* The last checks, once the whole frame length is known. */
static int vnet_hdr_rx_finish(struct vnet_rx_info *info)
{
	if (info->frame_len < VNET_ETH_HLEN)
		return vnet_hdr_drop(info, VNET_DROP_TOO_SHORT, -EBADMSG);
	if (info->needs_csum &&
	    (u32)info->csum_start + info->csum_offset + 2u > info->frame_len)
		return vnet_hdr_drop(info, VNET_DROP_BAD_CSUM_OFFSETS, -EBADMSG);
	if (info->gso_type != VIRTIO_NET_HDR_GSO_NONE &&
	    (info->gso_ip_end > info->frame_len || info->gso_hdr_len > info->frame_len))
		return vnet_hdr_drop(info, VNET_DROP_BAD_GSO_HEADERS, -EBADMSG);
	return 0;
}

u32 vnet_hdr_rx_gso_segments(const struct vnet_rx_info *info)
{
	u32 payload;

	if (info->gso_type == VIRTIO_NET_HDR_GSO_NONE || info->gso_size == 0 ||
	    info->gso_ip_end <= info->gso_hdrs)
		return 1;
	payload = info->gso_ip_end - info->gso_hdrs;
	return (payload + info->gso_size - 1u) / info->gso_size;
}

u32 vnet_hdr_len(bool version_1, bool mrg_rxbuf)
{
	return version_1 || mrg_rxbuf ? VIRTIO_NET_HDR_LEN : VIRTIO_NET_HDR_LEN_LEGACY;
}

int vnet_hdr_rx_check(const struct vnet_rx_cfg *cfg, const u8 *buf, u32 used_len,
		  u32 posted_len, struct vnet_rx_info *out)
{
	u8 flags, gso;
	u16 nbuf = 1;

	*out = (struct vnet_rx_info){ .drop = VNET_DROP_NONE };
	if (!vnet_hdr_cfg_ok(cfg))
		return vnet_hdr_drop(out, VNET_DROP_BAD_CONFIG, -EINVAL);
	if (used_len > posted_len)
		return vnet_hdr_drop(out, VNET_DROP_TOO_LONG, -EOVERFLOW);
	if (used_len < cfg->hdr_len)
		return vnet_hdr_drop(out, VNET_DROP_TOO_SHORT, -EBADMSG);

	flags = buf[0];
	gso = buf[1];
	/* Without MRG_RXBUF the field is not ours to read: legacy headers lack
	 * it, and QEMU leaves it unwritten in 12-byte VERSION_1 headers. */
	if (cfg->mrg_rxbuf) {
		nbuf = get_le16(buf + 10);
		if (nbuf == 0 || nbuf > cfg->max_buffers)
			return vnet_hdr_drop(out, VNET_DROP_BAD_NUM_BUFFERS, -EBADMSG);
	}
	/* RSC_INFO needs RSC_EXT and the csum bits need GUEST_CSUM (§5.1.6.4.1);
	 * RSC_EXT is never negotiated. */
	if ((flags & VIRTIO_NET_HDR_F_RSC_INFO) ||
	    (!cfg->guest_csum && (flags & RX_KNOWN_FLAGS)))
		return vnet_hdr_drop_rest(out, VNET_DROP_BAD_FLAGS, -EBADMSG, (u16)(nbuf - 1));
	/* TCPV4/TCPV6 only as negotiated; never UDP, USO or ECN (no GUEST_ECN). */
	if (gso != VIRTIO_NET_HDR_GSO_NONE &&
	    !(gso == VIRTIO_NET_HDR_GSO_TCPV4 && cfg->guest_tso4) &&
	    !(gso == VIRTIO_NET_HDR_GSO_TCPV6 && cfg->guest_tso6))
		return vnet_hdr_drop_rest(out, VNET_DROP_BAD_GSO, -EBADMSG, (u16)(nbuf - 1));

	out->frame_off = cfg->hdr_len;
	out->first_len = used_len - cfg->hdr_len;
	out->frame_len = out->first_len;
	out->num_buffers = nbuf;
	out->bufs_left = (u16)(nbuf - 1);
	out->csum_valid = flags & VIRTIO_NET_HDR_F_DATA_VALID;
	out->needs_csum = flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
	if (out->needs_csum) {
		out->csum_start = get_le16(buf + 6);
		out->csum_offset = get_le16(buf + 8);
	}
	out->gso_type = gso;
	out->frame_cap = gso != VIRTIO_NET_HDR_GSO_NONE ? cfg->max_gso_frame : cfg->max_frame;
	if (out->frame_len > out->frame_cap)
		return vnet_hdr_drop_rest(out, VNET_DROP_FRAME_TOO_BIG, -EBADMSG, (u16)(nbuf - 1));
	if (gso != VIRTIO_NET_HDR_GSO_NONE) {
		/* The MSS must fit a max_frame frame behind 40 bytes of IP and TCP. */
		u32 mss_max = cfg->max_frame > VNET_ETH_HLEN + 40 ? cfg->max_frame - VNET_ETH_HLEN - 40 : 0;

		out->gso_size = get_le16(buf + 4);
		out->gso_hdr_len = get_le16(buf + 2);
		if (out->gso_size == 0 || out->gso_size > mss_max)
			return vnet_hdr_drop_rest(out, VNET_DROP_BAD_GSO_SIZE, -EBADMSG, (u16)(nbuf - 1));
		if (!vnet_hdr_rx_gso_headers(buf + cfg->hdr_len, out->first_len, out))
			return vnet_hdr_drop_rest(out, VNET_DROP_BAD_GSO_HEADERS, -EBADMSG, (u16)(nbuf - 1));
	}
	if (nbuf == 1)
		return vnet_hdr_rx_finish(out);
	/* §5.1.6.3.2: all buffers but the last are used to their full length. */
	if (used_len != posted_len)
		return vnet_hdr_drop_rest(out, VNET_DROP_BAD_MERGE_LEN, -EBADMSG, (u16)(nbuf - 1));
	return 0;
}

int vnet_hdr_rx_merge(const struct vnet_rx_cfg *cfg, struct vnet_rx_info *info,
		  u32 used_len, u32 posted_len)
{
	if (!vnet_hdr_cfg_ok(cfg))
		return vnet_hdr_drop(info, VNET_DROP_BAD_CONFIG, -EINVAL);
	if (info->drop != VNET_DROP_NONE || info->bufs_left == 0)
		return vnet_hdr_drop(info, VNET_DROP_MERGE_OVERRUN, -EINVAL);
	if (used_len > posted_len)
		return vnet_hdr_drop_rest(info, VNET_DROP_TOO_LONG, -EOVERFLOW, (u16)(info->bufs_left - 1));
	if (info->bufs_left > 1 ? used_len != posted_len : used_len == 0)
		return vnet_hdr_drop_rest(info, VNET_DROP_BAD_MERGE_LEN, -EBADMSG, (u16)(info->bufs_left - 1));
	if (info->frame_len > info->frame_cap || used_len > info->frame_cap - info->frame_len)
		return vnet_hdr_drop_rest(info, VNET_DROP_FRAME_TOO_BIG, -EBADMSG, (u16)(info->bufs_left - 1));
	info->frame_len += used_len;
	if (--info->bufs_left == 0)
		return vnet_hdr_rx_finish(info);
	return 0;
}

const char *vnet_hdr_drop_name(enum vnet_drop reason)
{
	if ((unsigned)reason >= VNET_DROP_COUNT)
		return "?";
	return drop_names[reason];
}

void vnet_hdr_tx_hdr(u8 *hdr, size_t hdr_len, bool csum_offload, u16 csum_start,
		 u16 csum_offset)
{
	for (size_t i = 0; i < hdr_len; i++)
		hdr[i] = 0;
	if (!csum_offload || hdr_len < VIRTIO_NET_HDR_LEN_LEGACY)
		return;
	hdr[0] = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	put_le16(hdr + 6, csum_start);
	put_le16(hdr + 8, csum_offset);
}

u32 vnet_hdr_csum_add(u32 sum, const u8 *p, u32 len)
{
	u64 acc = sum;
	u32 i;

	for (i = 0; i + 1 < len; i += 2)
		acc += (u32)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		acc += (u32)p[len - 1] << 8;
	while (acc >> 32)
		acc = (acc & 0xffffffffu) + (acc >> 32);
	return (u32)acc;
}

u16 vnet_hdr_csum_fold(u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (u16)~sum;
}

int vnet_hdr_csum_complete(u8 *frame, u32 len, u16 start, u16 offset)
{
	u32 at = (u32)start + offset;
	u16 c;

	if (at + 2u > len)
		return -EINVAL;
	/* The field holds the pseudo-header sum and is part of the range. */
	c = vnet_hdr_csum_fold(vnet_hdr_csum_add(0, frame + start, len - start));
	if (c == 0)
		c = 0xffff;	/* same value in ones' complement; 0 means "none" for UDP */
	frame[at] = (u8)(c >> 8);
	frame[at + 1] = (u8)c;
	return 0;
}

/* TCP checksum offload (§5.1.6.2): the device sums from csum_start to the
 * end of the frame and stores the result at csum_start + csum_offset; the
 * field must hold the pseudo-header sum (RFC 793 / RFC 8200 §8.1) first. */
int vnet_hdr_tx_csum_prep(u8 *hdr, u32 hlen, u16 *start, u16 *offset)
{
	u32 sum = 0, l3 = VNET_ETH_HLEN, l4, l4_len;
	u16 type;
	u8 v[2];

	if (hlen < VNET_ETH_HLEN)
		return -ENOTSUP;
	type = (u16)(hdr[12] << 8 | hdr[13]);
	if (type == 0x0800) {			/* IPv4 */
		u32 ihl, tot;

		if (hlen < l3 + 20 || (hdr[l3] >> 4) != 4)
			return -ENOTSUP;
		ihl = (hdr[l3] & 0xfu) * 4u;
		tot = (u32)(hdr[l3 + 2] << 8 | hdr[l3 + 3]);
		/* A fragment's TCP checksum covers the whole segment: not ours. */
		if (hdr[l3 + 9] != 6 || ihl < 20 || tot < ihl ||
		    ((hdr[l3 + 6] & 0x3f) | hdr[l3 + 7]) != 0)
			return -ENOTSUP;
		l4 = l3 + ihl;
		l4_len = tot - ihl;
		sum = vnet_hdr_csum_add(sum, hdr + l3 + 12, 8);	/* source, destination */
	} else if (type == 0x86dd) {		/* IPv6, TCP directly after the fixed header */
		if (hlen < l3 + 40 || (hdr[l3] >> 4) != 6 || hdr[l3 + 6] != 6)
			return -ENOTSUP;
		l4 = l3 + 40;
		l4_len = (u32)(hdr[l3 + 4] << 8 | hdr[l3 + 5]);
		sum = vnet_hdr_csum_add(sum, hdr + l3 + 8, 32);
	} else {
		return -ENOTSUP;
	}
	if (l4_len < 20 || hlen < l4 + 18)
		return -ENOTSUP;
	v[0] = 0;
	v[1] = 6;
	sum = vnet_hdr_csum_add(sum, v, 2);
	v[0] = (u8)(l4_len >> 8);
	v[1] = (u8)l4_len;
	sum = vnet_hdr_csum_add(sum, v, 2);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	hdr[l4 + 16] = (u8)(sum >> 8);	/* not complemented: the device adds the rest */
	hdr[l4 + 17] = (u8)sum;
	*start = (u16)l4;
	*offset = 16;
	return 0;
}

/* Is the frame an IPv4 fragment? (Its L4 checksum covers the reassembled
 * datagram, so a per-frame checksum verdict says nothing about it.) */
bool vnet_hdr_is_ipv4_fragment(const u8 *frame, u32 len)
{
	if (len < VNET_ETH_HLEN + 20 || frame[12] != 0x08 || frame[13] != 0x00)
		return false;
	return ((frame[VNET_ETH_HLEN + 6] & 0x3f) | frame[VNET_ETH_HLEN + 7]) != 0;
}
