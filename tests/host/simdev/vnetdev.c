/* vnetdev: a simulated virtio-net device; see vnetdev.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/simdev/vnetdev.h"

#define OFF_STATUS	offsetof(struct virtio_net_config, status)
#define OFF_MTU		offsetof(struct virtio_net_config, mtu)

_Static_assert(sizeof(((struct vnetdev *)0)->sd) == sizeof(struct simdev) &&
		       offsetof(struct vnetdev, kick) == offsetof(struct vnetdev, sd.kick),
	       "struct vnetdev's anonymous fields lie over its struct simdev");

static bool has(const struct vnetdev *v, unsigned bit)
{
	return (v->vd.features >> bit) & 1;
}

#define vd_err(v, qi, ...) sd_err(&(v)->sd, qi, __VA_ARGS__)

u32 vd_hdr_len(const struct vnetdev *v)
{
	return v->vd.modern || has(v, VIRTIO_NET_F_MRG_RXBUF) ? VIRTIO_NET_HDR_LEN
							       : VIRTIO_NET_HDR_LEN_LEGACY;
}

/* ---- control queue ---- */

static int ctrl_feature(u8 cls, u8 cmd)
{
	switch (cls) {
	case VIRTIO_NET_CTRL_RX:
		return cmd <= VIRTIO_NET_CTRL_RX_ALLMULTI ? VIRTIO_NET_F_CTRL_RX
			: cmd <= VIRTIO_NET_CTRL_RX_NOBCAST ? VIRTIO_NET_F_CTRL_RX_EXTRA : -1;
	case VIRTIO_NET_CTRL_MAC:
		return cmd == VIRTIO_NET_CTRL_MAC_TABLE_SET ? VIRTIO_NET_F_CTRL_RX
			: cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET ? VIRTIO_NET_F_CTRL_MAC_ADDR : -1;
	case VIRTIO_NET_CTRL_ANNOUNCE:
		return cmd == VIRTIO_NET_CTRL_ANNOUNCE_ACK ? VIRTIO_NET_F_GUEST_ANNOUNCE : -1;
	case VIRTIO_NET_CTRL_NOTF_COAL:
		return cmd <= VIRTIO_NET_CTRL_NOTF_COAL_RX_SET ? VIRTIO_NET_F_NOTF_COAL
			: cmd <= VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET ? VIRTIO_NET_F_VQ_NOTF_COAL : -1;
	}
	return -1;
}

static u32 le32_at(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

/* Applies one command as a device would; returns the ack. */
static u8 ctrl_apply(struct vnetdev *v, struct vd_cmd *c)
{
	int feat = ctrl_feature(c->cls, c->cmd);
	u32 n_uc, n_mc;

	if (feat < 0 || !has(v, (unsigned)feat)) {
		vd_err(v, VD_CTRL, "command %u.%u needs a feature not negotiated", c->cls, c->cmd);
		return VIRTIO_NET_ERR;
	}
	switch (c->cls) {
	case VIRTIO_NET_CTRL_RX:
		if (c->len != 1 || c->data[0] > 1)
			goto bad;
		break;
	case VIRTIO_NET_CTRL_MAC:
		if (c->cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET) {
			if (c->len != 6)
				goto bad;
			break;
		}
		if (c->len < 8)
			goto bad;
		n_uc = le32_at(c->data);
		if (n_uc > VNET_CTRL_MAC_MAX || 4 + 6 * n_uc + 4 > c->len)
			goto bad;
		n_mc = le32_at(c->data + 4 + 6 * n_uc);
		if (n_mc > VNET_CTRL_MAC_MAX || c->len != 8 + 6 * (n_uc + n_mc))
			goto bad;
		break;
	case VIRTIO_NET_CTRL_ANNOUNCE:
		if (c->len != 0)
			goto bad;
		v->announce_acks++;
		break;
	case VIRTIO_NET_CTRL_NOTF_COAL:
		if (c->cmd == VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET) {
			u16 vqn = (u16)(c->data[0] | c->data[1] << 8);

			if (c->len != 12 || vqn > VIRTIO_NET_TXQ(0))
				goto bad;
			if (vqn == VIRTIO_NET_RXQ(0)) {
				v->coal_packets = le32_at(c->data + 4);
				v->coal_usecs = le32_at(c->data + 8);
				v->coal_by_vq = true;
				v->coal_sets++;
			}
		} else if (c->cmd == VIRTIO_NET_CTRL_NOTF_COAL_RX_SET) {
			if (c->len != 8)
				goto bad;
			v->coal_packets = le32_at(c->data);
			v->coal_usecs = le32_at(c->data + 4);
			v->coal_by_vq = false;
			v->coal_sets++;
		} else if (c->cmd == VIRTIO_NET_CTRL_NOTF_COAL_TX_SET) {
			if (c->len != 8)
				goto bad;
		} else {
			goto bad;	/* VQ_GET: the driver never sends it */
		}
		break;
	}
	return VIRTIO_NET_OK;
bad:
	vd_err(v, VD_CTRL, "command %u.%u with malformed data (%u bytes)", c->cls, c->cmd, c->len);
	return VIRTIO_NET_ERR;
}

void vd_ctrl_serve(struct vnetdev *v)
{
	struct fake_dev *q = &v->q[VD_CTRL];

	sd_posted(&v->sd, VD_CTRL);
	while (q->npending && v->ctrl_mode != VD_CTRL_SILENT) {
		const struct fake_buf *b = &q->pending[0];
		u8 bytes[2 + VNET_CTRL_DATA_MAX], ack;
		struct vd_cmd *c = &v->cmds[v->ncmds++ % VD_CMD_LOG];
		u32 n = sd_gather(b, bytes, sizeof bytes);

		memset(c, 0, sizeof(*c));
		if (n < 2 || n > sizeof bytes || b->in_len < 1) {
			vd_err(v, VD_CTRL, "control chain: %u readable, %u writable bytes", n, b->in_len);
			n = 2;
		}
		c->cls = bytes[0];
		c->cmd = bytes[1];
		c->len = n - 2;
		memcpy(c->data, bytes + 2, c->len);
		ack = ctrl_apply(v, c);
		if (v->ctrl_mode == VD_CTRL_ERR)
			ack = VIRTIO_NET_ERR;
		if (v->ctrl_mode == VD_CTRL_GARBAGE)
			ack = 0x5a;
		c->answered_ok = ack == VIRTIO_NET_OK;
		q->data = &ack;
		q->data_len = 1;
		fake_dev_complete(q, 0, v->ctrl_mode == VD_CTRL_BADLEN ? 0 : 1);
	}
}

/* ---- transmit ---- */

static void tx_record(struct vnetdev *v, const struct fake_buf *b)
{
	struct vd_txframe *f = &v->tx[v->ntx++ % VD_TX_LOG];
	u32 hl = vd_hdr_len(v), n;
	u8 *all;

	all = malloc(VD_TX_MAX);
	n = sd_gather(b, all, VD_TX_MAX);
	free(f->data);
	memset(f, 0, sizeof(*f));
	if (b->in_len)
		vd_err(v, VD_TX, "transmit buffer with %u writable bytes", b->in_len);
	if (n < hl || n > VD_TX_MAX) {
		vd_err(v, VD_TX, "transmit buffer of %u bytes", n);
		free(all);
		return;
	}
	memcpy(f->hdr, all, hl);
	f->len = n - hl;
	f->data = malloc(f->len ? f->len : 1);
	memcpy(f->data, all + hl, f->len);
	free(all);
	/* What a device may refuse: flags beyond NEEDS_CSUM, NEEDS_CSUM
	 * without CSUM, GSO, offsets past the frame. */
	if ((f->hdr[0] & ~VIRTIO_NET_HDR_F_NEEDS_CSUM) || f->hdr[1] != VIRTIO_NET_HDR_GSO_NONE)
		v->tx_bad++;
	if (f->hdr[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		u32 start = (u32)(f->hdr[6] | f->hdr[7] << 8), off = (u32)(f->hdr[8] | f->hdr[9] << 8);

		if (!has(v, VIRTIO_NET_F_CSUM) || start + off + 2 > f->len)
			v->tx_bad++;
	}
}

unsigned vd_tx_complete(struct vnetdev *v, unsigned max, bool reverse)
{
	struct fake_dev *q = &v->q[VD_TX];
	unsigned done = 0;

	if (!v->live[VD_TX])
		return 0;
	sd_posted(&v->sd, VD_TX);
	while (done < max && q->npending) {
		unsigned i = reverse && !q->in_order ? q->npending - 1 : 0;

		tx_record(v, &q->pending[i]);
		fake_dev_complete(q, i, 0);
		done++;
	}
	return done;
}

unsigned vd_tx_pending(struct vnetdev *v)
{
	return sd_posted(&v->sd, VD_TX);
}

const struct vd_txframe *vd_tx_last(const struct vnetdev *v)
{
	return v->ntx ? &v->tx[(v->ntx - 1) % VD_TX_LOG] : NULL;
}

/* ---- the device's semantics (simdev's kick hook) ---- */

static void vd_kick(struct simdev *sd, unsigned qi)
{
	struct vnetdev *v = (struct vnetdev *)sd;

	if (qi == VD_CTRL)
		vd_ctrl_serve(v);
	else if (qi == VD_TX && v->tx_auto)
		vd_tx_complete(v, ~0u, false);
	else if (qi == VD_RX)
		sd_posted(sd, VD_RX);
}

/* ---- set-up ---- */

void vd_init(struct vnetdev *v, u64 features, u16 qsize)
{
	static const u8 mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

	memset(v, 0, sizeof(*v));
	sd_init(&v->sd, VIRTIO_ID_NET, features, sizeof(struct virtio_net_config));
	v->kick = vd_kick;
	v->qmax[VD_RX] = qsize;
	v->qmax[VD_TX] = qsize;
	v->qmax[VD_CTRL] = (features >> VIRTIO_NET_F_CTRL_VQ) & 1 ? 64 : 0;
	memcpy(v->cfg, mac, 6);
	vd_cfg_write16(v, OFF_STATUS, VIRTIO_NET_S_LINK_UP);
	vd_cfg_write16(v, OFF_MTU, 1500);
}

void vd_fini(struct vnetdev *v)
{
	sd_fini(&v->sd);
	for (unsigned i = 0; i < VD_TX_LOG; i++) {
		free(v->tx[i].data);
		v->tx[i].data = NULL;
	}
}

/* ---- config space ---- */

void vd_set_link(struct vnetdev *v, bool up, bool announce)
{
	vd_cfg_write16(v, OFF_STATUS, (u16)((up ? VIRTIO_NET_S_LINK_UP : 0) |
					    (announce ? VIRTIO_NET_S_ANNOUNCE : 0)));
	sd_config_interrupt(&v->sd);
}

/* ---- receive ---- */

u32 vd_rx_buflen(struct vnetdev *v, unsigned i)
{
	return i < vd_rx_posted(v) ? v->q[VD_RX].pending[i].in_len : 0;
}

void vd_put_hdr(const struct vnetdev *v, u8 *buf, const struct vd_hdr *h, u16 nbuf)
{
	static const struct vd_hdr zero = { .num_buffers = -1 };

	if (!h)
		h = &zero;
	memset(buf, 0, vd_hdr_len(v));
	buf[0] = h->flags;
	buf[1] = h->gso;
	buf[2] = (u8)h->hdr_len;
	buf[3] = (u8)(h->hdr_len >> 8);
	buf[4] = (u8)h->gso_size;
	buf[5] = (u8)(h->gso_size >> 8);
	buf[6] = (u8)h->csum_start;
	buf[7] = (u8)(h->csum_start >> 8);
	buf[8] = (u8)h->csum_offset;
	buf[9] = (u8)(h->csum_offset >> 8);
	if (vd_hdr_len(v) == VIRTIO_NET_HDR_LEN) {
		u16 nb = h->num_buffers >= 0 ? (u16)h->num_buffers : nbuf;

		buf[10] = (u8)nb;
		buf[11] = (u8)(nb >> 8);
	}
}

int vd_rx_frame(struct vnetdev *v, const struct vd_hdr *h, const u8 *frame, u32 len)
{
	struct fake_dev *q = &v->q[VD_RX];
	u32 hl = vd_hdr_len(v), total = hl + len, cover = 0, off = 0;
	unsigned nbuf = 0, posted = vd_rx_posted(v);
	u8 *pkt;

	while (cover < total) {
		if (nbuf == posted || (nbuf == 1 && !has(v, VIRTIO_NET_F_MRG_RXBUF)))
			return -1;
		cover += q->pending[nbuf++].in_len;
	}
	if (nbuf == 0)
		nbuf = 1;
	pkt = malloc(total);
	vd_put_hdr(v, pkt, h, (u16)nbuf);
	memcpy(pkt + hl, frame, len);
	for (unsigned k = 0; k < nbuf; k++) {
		u32 chunk = MIN(q->pending[0].in_len, total - off);

		q->data = pkt + off;
		q->data_len = chunk;
		fake_dev_complete(q, 0, chunk);
		off += chunk;
	}
	free(pkt);
	return (int)nbuf;
}
