/* Segmentation offload headers and virtio-net feature dependencies. */
#include "lib/types.h"
#include "drivers/virtio/net/virtio_net_reg.h"
#include "drivers/virtio/net/vnet_gso.h"
#include "drivers/virtio/net/vnet_hdr.h"

#define B(x) (1ULL << (x))

/* Feature, and the features of which it needs at least one (§5.1.3.1). */
static const struct {
	u8 bit;
	u64 needs_any;
} deps[] = {
	{ VIRTIO_NET_F_GUEST_TSO4, B(VIRTIO_NET_F_GUEST_CSUM) },
	{ VIRTIO_NET_F_GUEST_TSO6, B(VIRTIO_NET_F_GUEST_CSUM) },
	{ VIRTIO_NET_F_GUEST_ECN, B(VIRTIO_NET_F_GUEST_TSO4) | B(VIRTIO_NET_F_GUEST_TSO6) },
	{ VIRTIO_NET_F_GUEST_UFO, B(VIRTIO_NET_F_GUEST_CSUM) },
	{ VIRTIO_NET_F_GUEST_USO4, B(VIRTIO_NET_F_GUEST_CSUM) },
	{ VIRTIO_NET_F_GUEST_USO6, B(VIRTIO_NET_F_GUEST_CSUM) },
	{ VIRTIO_NET_F_HOST_TSO4, B(VIRTIO_NET_F_CSUM) },
	{ VIRTIO_NET_F_HOST_TSO6, B(VIRTIO_NET_F_CSUM) },
	{ VIRTIO_NET_F_HOST_ECN, B(VIRTIO_NET_F_HOST_TSO4) | B(VIRTIO_NET_F_HOST_TSO6) },
	{ VIRTIO_NET_F_HOST_UFO, B(VIRTIO_NET_F_CSUM) },
	{ VIRTIO_NET_F_HOST_USO, B(VIRTIO_NET_F_CSUM) },
	{ VIRTIO_NET_F_CTRL_RX, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_CTRL_VLAN, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_GUEST_ANNOUNCE, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_MQ, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_CTRL_MAC_ADDR, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_NOTF_COAL, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_VQ_NOTF_COAL, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_RSS, B(VIRTIO_NET_F_CTRL_VQ) },
	{ VIRTIO_NET_F_RSC_EXT, B(VIRTIO_NET_F_HOST_TSO4) | B(VIRTIO_NET_F_HOST_TSO6) },
};

u64 vnet_features_fixup(u64 f)
{
	bool changed;

	do {
		changed = false;
		for (unsigned i = 0; i < sizeof(deps) / sizeof(deps[0]); i++) {
			if ((f & B(deps[i].bit)) && !(f & deps[i].needs_any)) {
				f &= ~B(deps[i].bit);
				changed = true;
			}
		}
	} while (changed);
	return f;
}

int vnet_tx_gso_hdr(u8 *vhdr, const u8 *frame, u32 hlen, u16 csum_start, u16 gso_size, bool tso4,
		    bool tso6)
{
	u16 type;
	u8 gso;
	u32 end;

	if (gso_size == 0 || hlen < VNET_ETH_HLEN || (u32)csum_start + 20 > hlen)
		return -ENOTSUP;
	type = (u16)(frame[12] << 8 | frame[13]);
	if (type == 0x0800 && tso4)
		gso = VIRTIO_NET_HDR_GSO_TCPV4;
	else if (type == 0x86dd && tso6)
		gso = VIRTIO_NET_HDR_GSO_TCPV6;
	else
		return -ENOTSUP;
	end = csum_start + (u32)(frame[csum_start + 12] >> 4) * 4u;
	if (end < (u32)csum_start + 20 || end > hlen)
		return -ENOTSUP;
	vhdr[1] = gso;
	vhdr[2] = (u8)end;		/* hdr_len, le16 */
	vhdr[3] = (u8)(end >> 8);
	vhdr[4] = (u8)gso_size;		/* gso_size, le16 */
	vhdr[5] = (u8)(gso_size >> 8);
	return 0;
}
