/* virtio-net's feature negotiation as vireo configures it: the feature
 * names the bus logs, the vnet.tso= and vnet.guest_tso= keys, and the
 * fixup the bus applies to what the driver wants before it offers it
 * (drivers/virtio/net/virtio_net.c's virtio_driver). */
#include "drivers/virtio/virtio.h"
#include "drivers/virtio/net/virtio_net_reg.h"
#include "drivers/virtio/net/vnet_features.h"
#include "drivers/virtio/net/vnet_gso.h"
#include "kernel/cmdline.h"

static bool tso = true;
static bool guest_tso = true;
CMDLINE_PARAM(tso, .key = "vnet.tso", .type = CMDLINE_BOOL, .dst = &tso, .def = "on",
	      .help = "transmit segmentation offload (HOST_TSO4/6) when the device offers it");
CMDLINE_PARAM(guest_tso, .key = "vnet.guest_tso", .type = CMDLINE_BOOL, .dst = &guest_tso, .def = "on",
	      .help = "receive segmentation offload (GUEST_TSO4/6) when the device offers it and MRG_RXBUF");

const struct virtio_feature_name vnet_net_feature_names[] = {
	{ VIRTIO_NET_F_CSUM, "CSUM" },
	{ VIRTIO_NET_F_GUEST_CSUM, "GUEST_CSUM" },
	{ VIRTIO_NET_F_MTU, "MTU" },
	{ VIRTIO_NET_F_MAC, "MAC" },
	{ VIRTIO_NET_F_GUEST_TSO4, "GUEST_TSO4" },
	{ VIRTIO_NET_F_GUEST_TSO6, "GUEST_TSO6" },
	{ VIRTIO_NET_F_HOST_TSO4, "HOST_TSO4" },
	{ VIRTIO_NET_F_HOST_TSO6, "HOST_TSO6" },
	{ VIRTIO_NET_F_MRG_RXBUF, "MRG_RXBUF" },
	{ VIRTIO_NET_F_STATUS, "STATUS" },
	{ VIRTIO_NET_F_CTRL_VQ, "CTRL_VQ" },
	{ VIRTIO_NET_F_CTRL_RX, "CTRL_RX" },
	{ VIRTIO_NET_F_GUEST_ANNOUNCE, "GUEST_ANNOUNCE" },
	{ VIRTIO_NET_F_CTRL_MAC_ADDR, "CTRL_MAC_ADDR" },
	{ VIRTIO_NET_F_VQ_NOTF_COAL, "VQ_NOTF_COAL" },
	{ VIRTIO_NET_F_NOTF_COAL, "NOTF_COAL" },
	{ 0, NULL },
};

/* vnet.tso=off and vnet.guest_tso=off keep segmentation offload out of the
 * negotiation; then whatever lacks its requirement goes (HOST_TSO4/6 without
 * CSUM, GUEST_TSO4/6 without GUEST_CSUM).
 *
 * Receive TSO only with MRG_RXBUF. Without it every receive buffer would
 * have to hold the largest GSO frame (12 + 65535 B: 17 pages), so the pool's
 * 256 buffers would take 17 MiB instead of 1 MiB, or the pool would shrink
 * to 15 buffers for the same memory; Linux's "big packets" mode is that
 * trade. Every device that offers GUEST_TSO also offers MRG_RXBUF (QEMU,
 * vhost-net, Linux's tun), so without it the offload is simply not
 * negotiated and frames arrive as today. */
u64 vnet_net_features_fixup(u64 want)
{
	if (!tso)
		want &= ~(VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_HOST_TSO6));
	if (!guest_tso || !(want & VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF)))
		want &= ~(VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO4) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_TSO6));
	return vnet_features_fixup(want);
}
