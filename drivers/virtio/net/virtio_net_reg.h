/* virtio-net layouts (virtio 1.2 §5.1, plus the notification-coalescing
 * commands of the 1.3 drafts): feature bits, config space, the per-packet
 * header and the control-queue commands. Layouts only. All fields
 * little-endian (legacy devices use guest-native order, also LE on x86_64). */
#ifndef VIREO_VIRTIO_NET_REG_H
#define VIREO_VIRTIO_NET_REG_H

#include "lib/types.h"

#define VIRTIO_ID_NET	1	/* virtio device id, §5.1.1 */

/* Queue indices, §5.1.2: receiveqN = 2(N-1), transmitqN = 2(N-1)+1,
 * controlq = 2 * max pairs (2 without MQ/RSS). */
#define VIRTIO_NET_RXQ(n)	(2u * (n))	/* n counts from 0 */
#define VIRTIO_NET_TXQ(n)	(2u * (n) + 1u)

/* ---- feature bits, §5.1.3 (bit numbers) -------------------------------- */
#define VIRTIO_NET_F_CSUM		0	/* device takes partial csum (TX) */
#define VIRTIO_NET_F_GUEST_CSUM		1	/* driver takes partial csum (RX) */
#define VIRTIO_NET_F_CTRL_GUEST_OFFLOADS 2
#define VIRTIO_NET_F_MTU		3	/* config mtu valid */
#define VIRTIO_NET_F_MAC		5	/* config mac valid */
#define VIRTIO_NET_F_GUEST_TSO4		7
#define VIRTIO_NET_F_GUEST_TSO6		8
#define VIRTIO_NET_F_GUEST_ECN		9
#define VIRTIO_NET_F_GUEST_UFO		10
#define VIRTIO_NET_F_HOST_TSO4		11
#define VIRTIO_NET_F_HOST_TSO6		12
#define VIRTIO_NET_F_HOST_ECN		13
#define VIRTIO_NET_F_HOST_UFO		14
#define VIRTIO_NET_F_MRG_RXBUF		15	/* num_buffers, merged RX buffers */
#define VIRTIO_NET_F_STATUS		16	/* config status valid */
#define VIRTIO_NET_F_CTRL_VQ		17
#define VIRTIO_NET_F_CTRL_RX		18	/* RX mode + MAC class commands */
#define VIRTIO_NET_F_CTRL_VLAN		19
#define VIRTIO_NET_F_CTRL_RX_EXTRA	20	/* ALLUNI, NOMULTI, NOUNI, NOBCAST */
#define VIRTIO_NET_F_GUEST_ANNOUNCE	21
#define VIRTIO_NET_F_MQ			22
#define VIRTIO_NET_F_CTRL_MAC_ADDR	23
#define VIRTIO_NET_F_DEVICE_STATS	50
#define VIRTIO_NET_F_HASH_TUNNEL	51
#define VIRTIO_NET_F_VQ_NOTF_COAL	52	/* per-queue VQ_SET / VQ_GET */
#define VIRTIO_NET_F_NOTF_COAL		53	/* TX_SET / RX_SET */
#define VIRTIO_NET_F_GUEST_USO4		54
#define VIRTIO_NET_F_GUEST_USO6		55
#define VIRTIO_NET_F_HOST_USO		56
#define VIRTIO_NET_F_HASH_REPORT	57	/* header grows to 20 bytes */
#define VIRTIO_NET_F_GUEST_HDRLEN	59
#define VIRTIO_NET_F_RSS		60
#define VIRTIO_NET_F_RSC_EXT		61
#define VIRTIO_NET_F_STANDBY		62
#define VIRTIO_NET_F_SPEED_DUPLEX	63
/* Legacy only (§5.1.3.2): VIRTIO_NET_F_GSO 6; never negotiated here. */

/* ---- device configuration, §5.1.4 ---------------------------------------
 * Fields past mac exist only with their feature (status: STATUS;
 * max_virtqueue_pairs: MQ or RSS; mtu: MTU; speed/duplex: SPEED_DUPLEX;
 * rss_*: RSS or HASH_REPORT). Read them width-exact, never through this
 * struct as a whole, and re-read if config_generation changes. */
struct virtio_net_config {
	u8   mac[6];
	le16 status;				/* VIRTIO_NET_S_* */
	le16 max_virtqueue_pairs;		/* 1..0x8000 */
	le16 mtu;				/* 68..65535 */
	le32 speed;				/* Mbit/s; > 0x7fffffff: unknown */
	u8   duplex;				/* 0 half, 1 full, else unknown */
	u8   rss_max_key_size;
	le16 rss_max_indirection_table_length;
	le32 supported_hash_types;
	le32 supported_tunnel_types;
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_net_config, mac) == 0, "spec");
_Static_assert(offsetof(struct virtio_net_config, status) == 6, "spec");
_Static_assert(offsetof(struct virtio_net_config, max_virtqueue_pairs) == 8, "spec");
_Static_assert(offsetof(struct virtio_net_config, mtu) == 10, "spec");
_Static_assert(offsetof(struct virtio_net_config, speed) == 12, "spec");
_Static_assert(offsetof(struct virtio_net_config, duplex) == 16, "spec");
_Static_assert(offsetof(struct virtio_net_config, rss_max_key_size) == 17, "spec");
_Static_assert(offsetof(struct virtio_net_config, rss_max_indirection_table_length) == 18, "spec");
_Static_assert(offsetof(struct virtio_net_config, supported_hash_types) == 20, "spec");
_Static_assert(offsetof(struct virtio_net_config, supported_tunnel_types) == 24, "spec");
_Static_assert(sizeof(struct virtio_net_config) == 28, "spec");

#define VIRTIO_NET_S_LINK_UP	1u
#define VIRTIO_NET_S_ANNOUNCE	2u

/* ---- per-packet header, §5.1.6 ------------------------------------------
 * Length: 12 bytes with VERSION_1 (num_buffers always present) or with
 * legacy + MRG_RXBUF; 10 bytes legacy without MRG_RXBUF; 20 with
 * HASH_REPORT (not used by vireo). */
struct virtio_net_hdr {
	u8   flags;			/* VIRTIO_NET_HDR_F_* */
	u8   gso_type;			/* VIRTIO_NET_HDR_GSO_* */
	le16 hdr_len;			/* hint only */
	le16 gso_size;
	le16 csum_start;
	le16 csum_offset;
	le16 num_buffers;		/* RX with MRG_RXBUF; 0 on TX */
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_net_hdr, flags) == 0, "spec");
_Static_assert(offsetof(struct virtio_net_hdr, gso_type) == 1, "spec");
_Static_assert(offsetof(struct virtio_net_hdr, hdr_len) == 2, "spec");
_Static_assert(offsetof(struct virtio_net_hdr, gso_size) == 4, "spec");
_Static_assert(offsetof(struct virtio_net_hdr, csum_start) == 6, "spec");
_Static_assert(offsetof(struct virtio_net_hdr, csum_offset) == 8, "spec");
_Static_assert(offsetof(struct virtio_net_hdr, num_buffers) == 10, "spec");
_Static_assert(sizeof(struct virtio_net_hdr) == 12, "spec");

#define VIRTIO_NET_HDR_LEN		12u	/* VERSION_1, or legacy + MRG_RXBUF */
#define VIRTIO_NET_HDR_LEN_LEGACY	10u	/* legacy without MRG_RXBUF */
#define VIRTIO_NET_HDR_LEN_HASH		20u	/* with HASH_REPORT */

#define VIRTIO_NET_HDR_F_NEEDS_CSUM	1u	/* csum_start/offset valid */
#define VIRTIO_NET_HDR_F_DATA_VALID	2u	/* RX: device checked the csum */
#define VIRTIO_NET_HDR_F_RSC_INFO	4u	/* RX, RSC_EXT only */

#define VIRTIO_NET_HDR_GSO_NONE		0u
#define VIRTIO_NET_HDR_GSO_TCPV4	1u
#define VIRTIO_NET_HDR_GSO_UDP		3u
#define VIRTIO_NET_HDR_GSO_TCPV6	4u
#define VIRTIO_NET_HDR_GSO_UDP_L4	5u
#define VIRTIO_NET_HDR_GSO_ECN		0x80u	/* flag on top of the type */

/* ---- control virtqueue, §5.1.6.5 ----------------------------------------
 * Each command: class, command, command-specific data (device-readable),
 * then the ack byte and any command-specific result (device-writable). */
struct virtio_net_ctrl_hdr {
	u8 class;
	u8 cmd;
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_net_ctrl_hdr) == 2, "spec");

#define VIRTIO_NET_OK	0u	/* ack values */
#define VIRTIO_NET_ERR	1u

#define VIRTIO_NET_CTRL_RX		0	/* needs CTRL_RX (0, 1) / CTRL_RX_EXTRA (2..5) */
#define  VIRTIO_NET_CTRL_RX_PROMISC	0	/* data: u8 0 off / 1 on */
#define  VIRTIO_NET_CTRL_RX_ALLMULTI	1
#define  VIRTIO_NET_CTRL_RX_ALLUNI	2
#define  VIRTIO_NET_CTRL_RX_NOMULTI	3
#define  VIRTIO_NET_CTRL_RX_NOUNI	4
#define  VIRTIO_NET_CTRL_RX_NOBCAST	5

#define VIRTIO_NET_CTRL_MAC		1	/* needs CTRL_RX */
#define  VIRTIO_NET_CTRL_MAC_TABLE_SET	0	/* data: two virtio_net_ctrl_mac tables */
#define  VIRTIO_NET_CTRL_MAC_ADDR_SET	1	/* data: u8 mac[6]; needs CTRL_MAC_ADDR */

/* One MAC table: le32 entries, then entries * 6 bytes. TABLE_SET sends the
 * unicast table, then the multicast table; either may be empty. */
struct virtio_net_ctrl_mac {
	le32 entries;
	u8   macs[][6];
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_net_ctrl_mac) == 4, "spec");

#define VIRTIO_NET_CTRL_VLAN		2	/* needs CTRL_VLAN; data: le16 vid */
#define  VIRTIO_NET_CTRL_VLAN_ADD	0
#define  VIRTIO_NET_CTRL_VLAN_DEL	1

#define VIRTIO_NET_CTRL_ANNOUNCE	3	/* needs GUEST_ANNOUNCE */
#define  VIRTIO_NET_CTRL_ANNOUNCE_ACK	0	/* no data */

#define VIRTIO_NET_CTRL_MQ		4
#define  VIRTIO_NET_CTRL_MQ_VQ_PAIRS_SET 0	/* data: le16 virtqueue_pairs */

#define VIRTIO_NET_CTRL_GUEST_OFFLOADS	5
#define  VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET 0	/* data: le64 offloads */

#define VIRTIO_NET_CTRL_NOTF_COAL	6
#define  VIRTIO_NET_CTRL_NOTF_COAL_TX_SET 0	/* NOTF_COAL; data: virtio_net_ctrl_coal */
#define  VIRTIO_NET_CTRL_NOTF_COAL_RX_SET 1	/* NOTF_COAL; data: virtio_net_ctrl_coal */
#define  VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET 2	/* VQ_NOTF_COAL; data: virtio_net_ctrl_coal_vq */
#define  VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET 3	/* VQ_NOTF_COAL; data: vq_index + reserved,
						 * result (after ack): virtio_net_ctrl_coal */

/* Coalescing parameters (Linux names the TX/RX uses virtio_net_ctrl_coal_tx
 * and _rx; same layout). max_packets == 0 or max_usecs == 0: notify after
 * every packet. */
struct virtio_net_ctrl_coal {
	le32 max_packets;
	le32 max_usecs;
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_net_ctrl_coal, max_packets) == 0, "spec");
_Static_assert(offsetof(struct virtio_net_ctrl_coal, max_usecs) == 4, "spec");
_Static_assert(sizeof(struct virtio_net_ctrl_coal) == 8, "spec");

struct virtio_net_ctrl_coal_vq {
	le16 vq_index;			/* an enabled receive or transmit queue */
	le16 reserved;			/* 0; ignored by the device */
	struct virtio_net_ctrl_coal coal;
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_net_ctrl_coal_vq, vq_index) == 0, "spec");
_Static_assert(offsetof(struct virtio_net_ctrl_coal_vq, reserved) == 2, "spec");
_Static_assert(offsetof(struct virtio_net_ctrl_coal_vq, coal) == 4, "spec");
_Static_assert(sizeof(struct virtio_net_ctrl_coal_vq) == 12, "spec");

#endif
