/* virtio-net control-queue command encoding, §5.1.6.5. Multi-byte fields
 * are written byte by byte (little-endian), so no alignment is assumed. */
#include "lib/types.h"
#include <arch.h>
#include "drivers/virtio/net/vnet_ctrl.h"
#include "lib/byteorder.h"
#include "lib/string.h"

#define MAC_LEN 6u

static void vnet_ctrl_start(struct vnet_ctrl_cmd *cmd, u8 class, u8 command)
{
	memset(cmd, 0, sizeof *cmd);
	cmd->hdr[0] = class;
	cmd->hdr[1] = command;
	cmd->ack = VNET_CTRL_ACK_UNSET;
}

static int vnet_ctrl_fail(struct vnet_ctrl_cmd *cmd, int err)
{
	vnet_ctrl_start(cmd, 0, 0);
	return err;
}

static bool vnet_ctrl_is_multicast(const u8 *mac)
{
	return mac[0] & 1;
}

static u32 vnet_ctrl_put_macs(u8 *p, const u8 (*macs)[6], u32 n)
{
	put_le32(p, n);
	for (u32 i = 0; i < n; i++)
		for (u32 j = 0; j < MAC_LEN; j++)
			p[4 + i * MAC_LEN + j] = macs[i][j];
	return 4 + n * MAC_LEN;
}

static void vnet_ctrl_put_coal(u8 *p, u32 max_packets, u32 max_usecs)
{
	put_le32(p, max_packets);
	put_le32(p + 4, max_usecs);
}

int vnet_ctrl_rx_mode(struct vnet_ctrl_cmd *cmd, u8 mode, bool on)
{
	if (mode > VIRTIO_NET_CTRL_RX_NOBCAST)
		return vnet_ctrl_fail(cmd, -EINVAL);
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_RX, mode);
	cmd->data[0] = on ? 1 : 0;
	cmd->data_len = 1;
	return 1;
}

int vnet_ctrl_mac_table(struct vnet_ctrl_cmd *cmd, const u8 (*uc)[6], u32 n_uc,
			const u8 (*mc)[6], u32 n_mc)
{
	if (n_uc > VNET_CTRL_MAC_MAX || n_mc > VNET_CTRL_MAC_MAX - n_uc)
		return vnet_ctrl_fail(cmd, -E2BIG);
	for (u32 i = 0; i < n_uc; i++)
		if (vnet_ctrl_is_multicast(uc[i]))
			return vnet_ctrl_fail(cmd, -EINVAL);
	for (u32 i = 0; i < n_mc; i++)
		if (!vnet_ctrl_is_multicast(mc[i]))
			return vnet_ctrl_fail(cmd, -EINVAL);
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_TABLE_SET);
	cmd->data_split = vnet_ctrl_put_macs(cmd->data, uc, n_uc);
	cmd->data_len = cmd->data_split + vnet_ctrl_put_macs(cmd->data + cmd->data_split, mc, n_mc);
	return (int)cmd->data_len;
}

int vnet_ctrl_mac_addr(struct vnet_ctrl_cmd *cmd, const u8 mac[6])
{
	u8 any = 0;

	for (u32 i = 0; i < MAC_LEN; i++)
		any |= mac[i];
	if (!any || vnet_ctrl_is_multicast(mac))
		return vnet_ctrl_fail(cmd, -EINVAL);
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_MAC, VIRTIO_NET_CTRL_MAC_ADDR_SET);
	for (u32 i = 0; i < MAC_LEN; i++)
		cmd->data[i] = mac[i];
	cmd->data_len = MAC_LEN;
	return MAC_LEN;
}

int vnet_ctrl_announce_ack(struct vnet_ctrl_cmd *cmd)
{
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_ANNOUNCE, VIRTIO_NET_CTRL_ANNOUNCE_ACK);
	return 0;
}

int vnet_ctrl_coal_set(struct vnet_ctrl_cmd *cmd, bool tx, u32 max_packets, u32 max_usecs)
{
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_NOTF_COAL,
	      tx ? VIRTIO_NET_CTRL_NOTF_COAL_TX_SET : VIRTIO_NET_CTRL_NOTF_COAL_RX_SET);
	vnet_ctrl_put_coal(cmd->data, max_packets, max_usecs);
	cmd->data_len = sizeof(struct virtio_net_ctrl_coal);
	return (int)cmd->data_len;
}

int vnet_ctrl_coal_vq_set(struct vnet_ctrl_cmd *cmd, u16 vqn, u32 max_packets,
			  u32 max_usecs)
{
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET);
	put_le16(cmd->data, vqn);	/* reserved (data[2..3]) stays 0 */
	vnet_ctrl_put_coal(cmd->data + offsetof(struct virtio_net_ctrl_coal_vq, coal), max_packets,
		 max_usecs);
	cmd->data_len = sizeof(struct virtio_net_ctrl_coal_vq);
	return (int)cmd->data_len;
}

int vnet_ctrl_coal_vq_get(struct vnet_ctrl_cmd *cmd, u16 vqn)
{
	vnet_ctrl_start(cmd, VIRTIO_NET_CTRL_NOTF_COAL, VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET);
	put_le16(cmd->data, vqn);
	cmd->data_len = offsetof(struct virtio_net_ctrl_coal_vq, coal);
	cmd->result_len = sizeof(struct virtio_net_ctrl_coal);
	return (int)cmd->data_len;
}

int vnet_ctrl_feature(const struct vnet_ctrl_cmd *cmd)
{
	u8 command = cmd->hdr[1];

	switch (cmd->hdr[0]) {
	case VIRTIO_NET_CTRL_RX:
		if (command <= VIRTIO_NET_CTRL_RX_ALLMULTI)
			return VIRTIO_NET_F_CTRL_RX;
		if (command <= VIRTIO_NET_CTRL_RX_NOBCAST)
			return VIRTIO_NET_F_CTRL_RX_EXTRA;
		break;
	case VIRTIO_NET_CTRL_MAC:
		/* ADDR_SET also needs CTRL_RX for the class as a whole. */
		if (command == VIRTIO_NET_CTRL_MAC_TABLE_SET)
			return VIRTIO_NET_F_CTRL_RX;
		if (command == VIRTIO_NET_CTRL_MAC_ADDR_SET)
			return VIRTIO_NET_F_CTRL_MAC_ADDR;
		break;
	case VIRTIO_NET_CTRL_ANNOUNCE:
		if (command == VIRTIO_NET_CTRL_ANNOUNCE_ACK)
			return VIRTIO_NET_F_GUEST_ANNOUNCE;
		break;
	case VIRTIO_NET_CTRL_NOTF_COAL:
		if (command <= VIRTIO_NET_CTRL_NOTF_COAL_RX_SET)
			return VIRTIO_NET_F_NOTF_COAL;
		if (command <= VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET)
			return VIRTIO_NET_F_VQ_NOTF_COAL;
		break;
	}
	return -EINVAL;
}

int vnet_ctrl_ack_check(const u8 *ack, u32 used_len)
{
	u8 v = READ_ONCE(*ack);	/* device-written: read once */

	if (used_len != 1)
		return -EPROTO;
	if (v == VIRTIO_NET_OK)
		return 0;
	return v == VIRTIO_NET_ERR ? -EIO : -EPROTO;
}

int vnet_ctrl_coal_vq_result(const struct vnet_ctrl_cmd *cmd, u32 used_len,
			     u32 *max_packets, u32 *max_usecs)
{
	u8 ack = READ_ONCE(cmd->ack);
	u32 full = 1 + sizeof(struct virtio_net_ctrl_coal);

	if (cmd->hdr[0] != VIRTIO_NET_CTRL_NOTF_COAL ||
	    cmd->hdr[1] != VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET ||
	    cmd->result_len != sizeof(struct virtio_net_ctrl_coal))
		return -EINVAL;
	/* On ERR the device may or may not have written the result; either
	 * way the values are to be ignored. */
	if (ack == VIRTIO_NET_ERR && (used_len == 1 || used_len == full))
		return -EIO;
	if (used_len != full || ack != VIRTIO_NET_OK)
		return -EPROTO;
	*max_packets = get_le32(cmd->result);
	*max_usecs = get_le32(cmd->result + 4);
	return 0;
}
