/* vnet_ctrl: virtio-net control-queue commands (§5.1.6.5). Builders fill a
 * caller-owned struct vnet_ctrl_cmd; checkers judge the device's reply. Pure
 * code: the driver owns the queue, the chain and the waiting. */
#ifndef VIREO_VNET_CTRL_H
#define VIREO_VNET_CTRL_H

#include "lib/types.h"
#include "drivers/virtio/net/virtio_net_reg.h"

#define VNET_CTRL_MAC_MAX	32u	/* unicast + multicast entries in one TABLE_SET */
#define VNET_CTRL_DATA_MAX	(2u * 4u + VNET_CTRL_MAC_MAX * 6u)
#define VNET_CTRL_RESULT_MAX	8u	/* struct virtio_net_ctrl_coal (VQ_GET) */
#define VNET_CTRL_ACK_UNSET	0xffu	/* what ack holds until the device writes it */

/* One command in DMA-able memory the driver owns until the device used it.
 * Chain, in this order:
 *   out  hdr     2 bytes (class, command)
 *   out  data    data_len bytes; no element when data_len == 0
 *   in   ack     1 byte
 *   in   result  result_len bytes; no element when result_len == 0
 * so 2 to 4 elements. A legacy device without VIRTIO_F_ANY_LAYOUT expects
 * each field in its own element, the MAC table as two: when data_split is
 * non-zero, emit data[0..data_split) and data[data_split..data_len) apart.
 * VERSION_1 devices take any split. */
struct vnet_ctrl_cmd {
	u8  hdr[2];
	u8  data[VNET_CTRL_DATA_MAX];
	u32 data_len;
	u32 data_split;				/* MAC_TABLE_SET: unicast table length */
	u8  ack;				/* device-written */
	u8  result[VNET_CTRL_RESULT_MAX];	/* device-written */
	u32 result_len;
};

/* Every builder clears *cmd, fills it, sets ack to VNET_CTRL_ACK_UNSET and
 * returns data_len (>= 0) or a negative error; on error *cmd is all zero
 * apart from the unset ack. Feature gating is the caller's: see
 * vnet_ctrl_feature(). */

/* VIRTIO_NET_CTRL_RX: mode is VIRTIO_NET_CTRL_RX_PROMISC..NOBCAST. Returns 1,
 * or -EINVAL for an unknown mode. */
int vnet_ctrl_rx_mode(struct vnet_ctrl_cmd *cmd, u8 mode, bool on);

/* VIRTIO_NET_CTRL_MAC_TABLE_SET: n_uc unicast then n_mc multicast addresses
 * (either may be 0; arrays may be NULL when their count is 0). Returns
 * 8 + 6 * (n_uc + n_mc), -E2BIG above VNET_CTRL_MAC_MAX entries, or -EINVAL
 * if an address is in the wrong list (multicast bit, 01 in byte 0). */
int vnet_ctrl_mac_table(struct vnet_ctrl_cmd *cmd, const u8 (*uc)[6], u32 n_uc,
			const u8 (*mc)[6], u32 n_mc);

/* VIRTIO_NET_CTRL_MAC_ADDR_SET. Returns 6, or -EINVAL for a multicast or
 * all-zero address. */
int vnet_ctrl_mac_addr(struct vnet_ctrl_cmd *cmd, const u8 mac[6]);

/* VIRTIO_NET_CTRL_ANNOUNCE_ACK (no data). Returns 0. */
int vnet_ctrl_announce_ack(struct vnet_ctrl_cmd *cmd);

/* VIRTIO_NET_CTRL_NOTF_COAL_TX_SET (tx) or _RX_SET: parameters for all
 * transmit or receive queues. Returns 8. */
int vnet_ctrl_coal_set(struct vnet_ctrl_cmd *cmd, bool tx, u32 max_packets, u32 max_usecs);

/* VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET for queue vqn (an enabled RX/TX queue,
 * not the control queue). Returns 12. */
int vnet_ctrl_coal_vq_set(struct vnet_ctrl_cmd *cmd, u16 vqn, u32 max_packets,
			  u32 max_usecs);

/* VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET for queue vqn; result_len is 8. Read
 * the reply with vnet_ctrl_coal_vq_result(). Returns 4. */
int vnet_ctrl_coal_vq_get(struct vnet_ctrl_cmd *cmd, u16 vqn);

/* Feature bit the command needs negotiated (VIRTIO_NET_F_*), or -EINVAL for
 * a class/command pair the builders do not make. */
int vnet_ctrl_feature(const struct vnet_ctrl_cmd *cmd);

/* Judge the reply to a command without result: the device must have written
 * exactly the ack byte (used_len == 1). Returns 0 if *ack is VIRTIO_NET_OK,
 * -EIO if VIRTIO_NET_ERR, -EPROTO for any other length or value. */
int vnet_ctrl_ack_check(const u8 *ack, u32 used_len);

/* Judge the reply to VQ_GET (used_len must be 1 + 8) and, only if it is
 * VIRTIO_NET_OK, decode the parameters. Returns 0, -EIO, -EPROTO as above,
 * or -EINVAL if cmd is not a VQ_GET. Outputs are untouched on error. */
int vnet_ctrl_coal_vq_result(const struct vnet_ctrl_cmd *cmd, u32 used_len,
			     u32 *max_packets, u32 *max_usecs);

#endif
