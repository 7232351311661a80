/* libFuzzer target for drivers/virtio/net/vnet_hdr.c receive checks. The input is:
 *   16 bytes of parameters: used_len, posted_len (le32 each), negotiated
 *   features, max_buffers, odd configurations, "buffer full" hints,
 *   receive TSO (byte 11: GUEST_TSO4, GUEST_TSO6);
 *   then the device-written bytes of the first buffer; the last 64 bytes
 *   double as up to 8 continuation buffers' (used, posted) lengths.
 * The first buffer is handed over in a heap block of exactly
 * min(used_len, posted_len) bytes, so ASan catches any read past what the
 * device wrote. After every call the reported fields are checked against the
 * lengths; any violation aborts. vnet_hdr_csum_complete gets the same bytes. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio/net/vnet_hdr.h"
#include "lib/byteorder.h"

#define CHECK(c)                                                                     \
	do {                                                                         \
		if (!(c)) {                                                          \
			fprintf(stderr, "fuzz_vnet_hdr: invariant failed: %s (line %d)\n", \
				#c, __LINE__);                                       \
			abort();                                                     \
		}                                                                    \
	} while (0)

#define PARAMS		16u
#define MAX_POSTED	(65536u + 64u)

/* Lengths mostly near interesting edges, sometimes anything. */
static u32 pick_len(u32 raw)
{
	switch (raw >> 30) {
	case 0:
		return raw & 0x3f;		/* around the header sizes */
	case 1:
		return raw & 0x7ff;		/* around 1514/1526 */
	case 2:
		return raw & 0x1ffff;		/* around 64K */
	default:
		return raw;			/* anything */
	}
}

static void check_fail(const struct vnet_rx_info *info, int ret)
{
	CHECK(ret == -EINVAL || ret == -EOVERFLOW || ret == -EBADMSG);
	CHECK(info->drop != VNET_DROP_NONE && info->drop < VNET_DROP_COUNT);
	CHECK(info->bufs_left == 0);
	CHECK(vnet_hdr_drop_name(info->drop)[0] != '?');
}

static void check_complete(const struct vnet_rx_cfg *cfg, const struct vnet_rx_info *info)
{
	CHECK(info->frame_len >= VNET_ETH_HLEN);
	CHECK(info->frame_len <= (info->gso_type ? cfg->max_gso_frame : cfg->max_frame));
	if (info->needs_csum)
		CHECK((u32)info->csum_start + info->csum_offset + 2 <= info->frame_len);
	if (info->gso_type == VIRTIO_NET_HDR_GSO_NONE)
		return;
	CHECK((info->gso_type == VIRTIO_NET_HDR_GSO_TCPV4 && cfg->guest_tso4) ||
	      (info->gso_type == VIRTIO_NET_HDR_GSO_TCPV6 && cfg->guest_tso6));
	CHECK(info->gso_size >= 1 && info->gso_size + 54u <= cfg->max_frame);
	CHECK(info->gso_hdrs >= VNET_ETH_HLEN + 40 && info->gso_hdrs <= info->first_len);
	CHECK(info->gso_hdrs <= info->gso_ip_end && info->gso_ip_end <= info->frame_len);
	CHECK(info->gso_hdr_len <= info->frame_len);
	CHECK(!info->needs_csum || info->csum_offset == 16);
	CHECK(vnet_hdr_rx_gso_segments(info) >= 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vnet_rx_cfg cfg;
	struct vnet_rx_info info, before;
	u32 used, posted, have, total;
	u8 feat, *buf;
	int ret;

	if (size < PARAMS)
		return 0;
	used = pick_len(get_le32(data));
	posted = pick_len(get_le32(data + 4)) % MAX_POSTED;
	feat = data[8];
	cfg = (struct vnet_rx_cfg){
		.hdr_len = vnet_hdr_len(feat & 1, feat & 2),
		.mrg_rxbuf = feat & 2,
		.guest_csum = feat & 4,
		.max_buffers = (u16)(data[9] % 17),		/* 0 is a bad config */
		.max_frame = (feat & 8) ? VNET_FRAME_MAX : 1514,
	};
	if (feat & 0x10)
		cfg.hdr_len = data[10] % 24;			/* sometimes nonsense */
	if (feat & 0x20)
		cfg.max_frame = get_le32(data + 12) % 70000;
	if (feat & 0x40)
		used = posted;		/* a full buffer, as merging requires */
	cfg.guest_tso4 = data[11] & 1;
	cfg.guest_tso6 = data[11] & 2;
	cfg.max_gso_frame = (data[11] & 4) ? cfg.max_frame : VNET_FRAME_MAX;

	/* The first buffer: exactly what the device may have written. */
	have = used < posted ? used : posted;
	buf = malloc(have ? have : 1);
	memset(buf, 0, have);
	memcpy(buf, data + PARAMS, MIN(have, (u32)(size - PARAMS)));

	ret = vnet_hdr_rx_check(&cfg, buf, used, posted, &info);
	if (ret) {
		check_fail(&info, ret);
		CHECK((ret == -EOVERFLOW) == (info.drop == VNET_DROP_TOO_LONG));
		if (used > posted)
			CHECK(ret == -EOVERFLOW || ret == -EINVAL);
		goto out;
	}
	CHECK(info.drop == VNET_DROP_NONE);
	CHECK(used <= posted);
	CHECK(info.frame_off == cfg.hdr_len);
	CHECK(info.frame_off + info.first_len == used);
	CHECK(info.frame_len == info.first_len);
	CHECK(info.first_len <= info.frame_cap);
	CHECK(info.frame_cap == (info.gso_type ? cfg.max_gso_frame : cfg.max_frame));
	CHECK(info.num_buffers >= 1);
	CHECK(info.num_buffers <= (cfg.mrg_rxbuf ? cfg.max_buffers : 1));
	CHECK(info.bufs_left == info.num_buffers - 1);
	if (!cfg.guest_csum)
		CHECK(!info.needs_csum && !info.csum_valid);
	if (!info.needs_csum)
		CHECK(info.csum_start == 0 && info.csum_offset == 0);
	if (info.num_buffers == 1) {
		check_complete(&cfg, &info);
		goto out;
	}
	CHECK(used == posted);

	/* Continuation buffers: (used, posted) pairs from the input's tail. */
	total = info.frame_len;
	for (u32 i = 0; i < 8; i++) {
		const u8 *p;
		u32 u, q;

		if (size < PARAMS + 8 * (i + 1))
			break;
		p = data + size - 8 * (i + 1);
		q = pick_len(get_le32(p + 4));
		u = (p[0] & 1) ? q : pick_len(get_le32(p));	/* often full */
		before = info;
		ret = vnet_hdr_rx_merge(&cfg, &info, u, q);
		if (ret) {
			check_fail(&info, ret);
			if (before.bufs_left == 0)
				CHECK(ret == -EINVAL);
			/* a failed packet takes nothing more */
			CHECK(vnet_hdr_rx_merge(&cfg, &info, 1, 1) == -EINVAL);
			break;
		}
		CHECK(before.bufs_left > 0);
		CHECK(u <= q);
		CHECK(before.bufs_left == 1 ? u >= 1 : u == q);
		CHECK(info.bufs_left == before.bufs_left - 1);
		total += u;
		CHECK(info.frame_len == total);
		CHECK(info.frame_len <= info.frame_cap);
		CHECK(info.first_len == before.first_len && info.frame_off == before.frame_off);
		CHECK(info.num_buffers == before.num_buffers);
		if (info.bufs_left == 0)
			check_complete(&cfg, &info);
	}

out:
	/* The checksum completer on the same bytes, offsets from the header. */
	if (have >= 4) {
		u8 *copy = malloc(have);
		u16 start = (u16)(buf[0] | buf[1] << 8), off = (u16)(buf[2] | buf[3] << 8);
		bool fits = (u32)start + off + 2 <= have;

		memcpy(copy, buf, have);
		ret = vnet_hdr_csum_complete(copy, have, start, off);
		CHECK(ret == (fits ? 0 : -EINVAL));
		for (u32 i = 0; i < have; i++)
			if (!fits || i < (u32)start + off || i >= (u32)start + off + 2)
				CHECK(copy[i] == buf[i]);
		free(copy);
	}
	free(buf);
	return 0;
}
