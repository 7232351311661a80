/*
 * virtio-net driver (device id 1). Receive: page-sized buffers stay posted;
 * every used length and header is checked (vnet_hdr.c) before a frame is
 * looked at, and a bad one is dropped, counted by reason, and its buffer
 * reposted. The interrupt only disables the queue's callbacks and queues
 * the poll (NAPI style); the poll runs from the loop with a budget.
 */
#include <arch.h>

#include "drivers/virtio.h"
#include "drivers/virtio_net.h"
#include "drivers/virtio_net_reg.h"
#include "drivers/vnet_ctrl.h"
#include "kernel/console.h"
#include "kernel/io.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/random.h"
#include "kernel/string.h"
#include "kernel/time.h"

#define RX_BUDGET 64
#define RX_MAX_BUFS 256
#define TX_MAX_SG 8
#define CTRL_TIMEOUT_NS (100 * NSEC_PER_MSEC)

struct rxbuf {
	struct rxbuf *next_free;
	u32 cap;
	u8 data[] __attribute__((aligned(64)));
};

struct txslot {
	u8 hdr[VIRTIO_NET_HDR_LEN];
	void *token;
	struct txslot *next_free;
};

struct vnet {
	struct virtio_dev *vd;
	struct virtio_vq *rx, *tx, *ctrl;
	struct work rx_work, tx_work;
	struct vnet_rx_cfg rxcfg;
	struct rxbuf *free_rx;
	u32 nrx, buf_pages;
	struct txslot *slots, *free_tx;
	u8 mac[6];
	u16 mtu;
	bool link_up;
	struct vnet_qstats st[2];
	u64 rx_irqs_seen;
	struct vnet_ctrl_cmd cmd;
};

static struct vnet *first;
static bool echo;

static const char *const net_feature_names[64] = {
	[VIRTIO_NET_F_CSUM] = "CSUM",
	[VIRTIO_NET_F_GUEST_CSUM] = "GUEST_CSUM",
	[VIRTIO_NET_F_MTU] = "MTU",
	[VIRTIO_NET_F_MAC] = "MAC",
	[VIRTIO_NET_F_MRG_RXBUF] = "MRG_RXBUF",
	[VIRTIO_NET_F_STATUS] = "STATUS",
	[VIRTIO_NET_F_CTRL_VQ] = "CTRL_VQ",
	[VIRTIO_NET_F_CTRL_RX] = "CTRL_RX",
	[VIRTIO_NET_F_GUEST_ANNOUNCE] = "GUEST_ANNOUNCE",
	[VIRTIO_NET_F_CTRL_MAC_ADDR] = "CTRL_MAC_ADDR",
	[VIRTIO_NET_F_VQ_NOTF_COAL] = "VQ_NOTF_COAL",
	[VIRTIO_NET_F_NOTF_COAL] = "NOTF_COAL",
};

void vnet_set_echo(bool on)
{
	echo = on;
}

struct vnet *vnet_get(void)
{
	return first;
}

/* ---- control queue (polled: commands are rare and made from the loop) ---- */

static int ctrl_send(struct vnet *vn)
{
	struct vnet_ctrl_cmd *c = &vn->cmd;
	struct virtq_sg out[3], in[2];
	unsigned no = 0, ni = 0;
	u64 deadline;
	u32 len = 0;
	void *tok;
	int err;

	if (!vn->ctrl)
		return -ENOTSUP;
	out[no++] = (struct virtq_sg){ c->hdr, 2 };
	if (c->data_split && c->data_split < c->data_len) {
		out[no++] = (struct virtq_sg){ c->data, c->data_split };
		out[no++] = (struct virtq_sg){ c->data + c->data_split, c->data_len - c->data_split };
	} else if (c->data_len) {
		out[no++] = (struct virtq_sg){ c->data, c->data_len };
	}
	in[ni++] = (struct virtq_sg){ &c->ack, 1 };
	if (c->result_len)
		in[ni++] = (struct virtq_sg){ c->result, c->result_len };
	err = virtq_add(&vn->ctrl->vq, out, no, in, ni, c);
	if (err)
		return err;
	virtq_kick(&vn->ctrl->vq);
	deadline = time_ns() + CTRL_TIMEOUT_NS;
	while (!(tok = virtq_get(&vn->ctrl->vq, &len))) {
		if (virtq_is_broken(&vn->ctrl->vq) || time_ns() > deadline)
			return -ETIMEDOUT;
		pause();
	}
	return tok == c ? vnet_ctrl_ack_check(&c->ack, len) : -EPROTO;
}

/* ---- receive ---- */

static void rx_post(struct vnet *vn)
{
	bool added = false;

	while (vn->free_rx) {
		struct rxbuf *b = vn->free_rx;
		struct virtq_sg in = { b->data, b->cap };

		if (virtq_add(&vn->rx->vq, NULL, 0, &in, 1, b) < 0)
			break;
		vn->free_rx = b->next_free;
		added = true;
	}
	if (added)
		virtq_kick(&vn->rx->vq);
}

static void rx_free(struct vnet *vn, struct rxbuf *b)
{
	b->next_free = vn->free_rx;
	vn->free_rx = b;
}

/* The frame goes back where it came from, from us. */
static void echo_frame(struct vnet *vn, u8 *frame)
{
	memcpy(frame, frame + 6, 6);
	memcpy(frame + 6, vn->mac, 6);
}

static void rx_frame(struct vnet *vn, struct rxbuf *b, u32 used)
{
	struct vnet_qstats *st = &vn->st[0];
	struct vnet_rx_info info;
	u8 *frame;

	if (vnet_rx_check(&vn->rxcfg, b->data, used, b->cap, &info) < 0) {
		st->drops[info.drop]++;
		rx_free(vn, b);
		return;
	}
	/* Merged frames (MRG_RXBUF, num_buffers > 1): the rest of the buffers
	 * are taken and validated; without a stack they are only counted. */
	while (info.bufs_left) {
		u32 l2;
		struct rxbuf *more = virtq_get(&vn->rx->vq, &l2);

		if (!more) {
			virtio_set_broken(vn->vd, "merged frame missing buffers");
			rx_free(vn, b);
			return;
		}
		if (vnet_rx_merge(&vn->rxcfg, &info, l2, more->cap) < 0) {
			st->drops[info.drop]++;
			rx_free(vn, more);
			rx_free(vn, b);
			return;
		}
		rx_free(vn, more);
	}
	frame = b->data + info.frame_off;
	if (info.needs_csum)
		vnet_csum_complete(frame, info.first_len, info.csum_start, info.csum_offset);
	st->frames++;
	st->bytes += info.frame_len;
	if (echo && info.num_buffers == 1) {
		struct virtq_sg sg = { frame, info.first_len };

		echo_frame(vn, frame);
		if (vnet_tx(vn, &sg, 1, b) == 0)
			return;	/* the buffer returns to the free list on completion */
	}
	rx_free(vn, b);
}

static unsigned tx_reclaim(struct vnet *vn);

static void rx_poll(void *arg)
{
	struct vnet *vn = arg;
	struct vnet_qstats *st = &vn->st[0];
	unsigned n = 0;
	struct rxbuf *b;
	u32 len;

	st->polls++;
	st->interrupts = vn->rx->interrupts;
	while (n < RX_BUDGET && (b = virtq_get(&vn->rx->vq, &len))) {
		rx_frame(vn, b, len);
		n++;
	}
	tx_reclaim(vn);
	if (virtq_is_broken(&vn->rx->vq)) {
		virtio_set_broken(vn->vd, "receive queue broken");
		return;
	}
	rx_post(vn);
	if (n == RX_BUDGET) {
		st->budget_exhausted++;
		work_queue(&vn->rx_work);
		return;
	}
	if (!virtq_enable_cb(&vn->rx->vq)) {	/* work raced in: poll again */
		virtq_disable_cb(&vn->rx->vq);
		work_queue(&vn->rx_work);
	}
}

static void rx_irq(struct virtio_vq *q)
{
	struct vnet *vn = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&vn->rx_work);
}

/* ---- transmit ---- */

static unsigned tx_reclaim(struct vnet *vn)
{
	struct txslot *s;
	unsigned n = 0;
	u32 len;

	while ((s = virtq_get(&vn->tx->vq, &len))) {
		if (echo && s->token)
			rx_free(vn, s->token);
		s->token = NULL;
		s->next_free = vn->free_tx;
		vn->free_tx = s;
		n++;
	}
	if (n && echo)
		rx_post(vn);
	return n;
}

int vnet_tx(struct vnet *vn, const struct virtq_sg *sg, unsigned n, void *token)
{
	struct virtq_sg out[TX_MAX_SG + 1];
	struct txslot *s;
	unsigned i;
	u32 bytes = 0;

	if (vn->vd->broken || !vn->link_up || n == 0 || n > TX_MAX_SG)
		return -EIO;
	if (!vn->free_tx)
		tx_reclaim(vn);
	s = vn->free_tx;
	if (!s) {
		vn->st[1].no_room++;
		return -ENOSPC;
	}
	vnet_tx_hdr(s->hdr, vn->rxcfg.hdr_len, false, 0, 0);
	out[0] = (struct virtq_sg){ s->hdr, vn->rxcfg.hdr_len };
	for (i = 0; i < n; i++) {
		out[i + 1] = sg[i];
		bytes += sg[i].len;
	}
	if (virtq_add(&vn->tx->vq, out, n + 1, NULL, 0, s) < 0) {
		vn->st[1].no_room++;
		return -ENOSPC;
	}
	vn->free_tx = s->next_free;
	s->token = token;
	virtq_kick(&vn->tx->vq);
	/* One interrupt when everything in flight is done, to reclaim. */
	virtq_enable_cb_delayed(&vn->tx->vq, (u16)vn->tx->vq.inflight);
	vn->st[1].frames++;
	vn->st[1].bytes += bytes;
	return 0;
}

static void tx_poll(void *arg)
{
	struct vnet *vn = arg;

	vn->st[1].polls++;
	vn->st[1].interrupts = vn->tx->interrupts;
	tx_reclaim(vn);
}

static void tx_irq(struct virtio_vq *q)
{
	struct vnet *vn = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&vn->tx_work);
}

/* ---- configuration ---- */

static void read_link(struct vnet *vn, bool announce_log)
{
	struct virtio_dev *d = vn->vd;
	u16 status = VIRTIO_NET_S_LINK_UP;
	bool up;

	if (virtio_has(d, VIRTIO_NET_F_STATUS))
		status = virtio_cfg_read16(d, offsetof(struct virtio_net_config, status));
	up = status & VIRTIO_NET_S_LINK_UP;
	if (up != vn->link_up || announce_log)
		kprintf("virtio%u: net: link %s\n", d->index, up ? "up" : "down");
	vn->link_up = up;
	if ((status & VIRTIO_NET_S_ANNOUNCE) && virtio_has(d, VIRTIO_NET_F_GUEST_ANNOUNCE)) {
		kprintf("virtio%u: net: announce requested\n", d->index);
		if (vnet_ctrl_announce_ack(&vn->cmd) >= 0)
			ctrl_send(vn);
	}
}

static void config_changed(struct virtio_dev *d)
{
	read_link(d->priv, false);
}

static int net_probe(struct virtio_dev *d)
{
	struct vnet *vn = kzalloc(sizeof(*vn));
	bool mrg = virtio_has(d, VIRTIO_NET_F_MRG_RXBUF);
	u32 i, cap, nslots;
	int err;

	if (!vn)
		return -ENOMEM;
	vn->vd = d;
	d->priv = vn;
	if (virtio_has(d, VIRTIO_NET_F_MAC)) {
		virtio_cfg_read(d, offsetof(struct virtio_net_config, mac), vn->mac, 6);
	} else {
		u64 r = random_u64();

		memcpy(vn->mac, &r, 6);
		vn->mac[0] = (u8)((vn->mac[0] & 0xfe) | 0x02);	/* unicast, locally administered */
	}
	vn->mtu = 1500;
	if (virtio_has(d, VIRTIO_NET_F_MTU)) {
		u16 mtu = virtio_cfg_read16(d, offsetof(struct virtio_net_config, mtu));

		if (mtu >= 68)
			vn->mtu = mtu;
		else
			kprintf("virtio%u: net: device mtu %u is below 68, using 1500\n", d->index, mtu);
	}
	vn->rxcfg.hdr_len = vnet_hdr_len(d->modern, mrg);
	vn->rxcfg.mrg_rxbuf = mrg;
	vn->rxcfg.guest_csum = virtio_has(d, VIRTIO_NET_F_GUEST_CSUM);
	vn->rxcfg.max_frame = MIN((u32)vn->mtu + 18, (u32)VNET_FRAME_MAX);
	work_init(&vn->rx_work, rx_poll, vn);
	work_init(&vn->tx_work, tx_poll, vn);

	vn->rx = virtio_setup_vq(d, VIRTIO_NET_RXQ(0), 0, rx_irq, vn);
	vn->tx = vn->rx ? virtio_setup_vq(d, VIRTIO_NET_TXQ(0), 0, tx_irq, vn) : NULL;
	if (!vn->tx) {
		err = -EIO;
		goto fail;
	}
	if (virtio_has(d, VIRTIO_NET_F_CTRL_VQ)) {
		vn->ctrl = virtio_setup_vq(d, 2, 64, NULL, vn);
		if (vn->ctrl)
			virtq_disable_cb(&vn->ctrl->vq);	/* polled */
	}
	vn->rxcfg.max_buffers = vn->rx->num;

	/* Receive buffers: one page each with MRG_RXBUF (frames longer than a
	 * buffer span several), else big enough for a whole frame. */
	cap = mrg ? PAGE_SIZE - 64 : vn->rxcfg.hdr_len + vn->rxcfg.max_frame;
	vn->buf_pages = ALIGN_UP(cap + 64, (u32)PAGE_SIZE) / PAGE_SIZE;
	vn->nrx = MIN((u32)vn->rx->num, (u32)RX_MAX_BUFS);
	for (i = 0; i < vn->nrx; i++) {
		struct rxbuf *b = page_alloc(vn->buf_pages);

		if (!b)
			break;
		b->cap = vn->buf_pages * PAGE_SIZE - 64;
		rx_free(vn, b);
	}
	nslots = vn->tx->num;
	vn->slots = kzalloc(nslots * sizeof(*vn->slots));
	if (!vn->slots || !vn->free_rx) {
		err = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < nslots; i++) {
		vn->slots[i].next_free = vn->free_tx;
		vn->free_tx = &vn->slots[i];
	}
	virtq_disable_cb(&vn->tx->vq);
	rx_post(vn);
	virtio_device_ready(d);
	if (vn->ctrl && virtio_has(d, VIRTIO_NET_F_CTRL_RX)) {
		/* Our MAC, broadcast and all multicast (IPv6 neighbour discovery). */
		if (vnet_ctrl_rx_mode(&vn->cmd, VIRTIO_NET_CTRL_RX_PROMISC, false) >= 0 && (err = ctrl_send(vn)))
			kprintf("virtio%u: net: promisc off refused (%d)\n", d->index, err);
		if (vnet_ctrl_rx_mode(&vn->cmd, VIRTIO_NET_CTRL_RX_ALLMULTI, true) >= 0 && (err = ctrl_send(vn)))
			kprintf("virtio%u: net: allmulti on refused (%d)\n", d->index, err);
	}
	kprintf("virtio%u: net: mac %02x:%02x:%02x:%02x:%02x:%02x%s mtu %u, rx %u x %u B%s, tx ring %u, hdr %u%s%s\n",
		d->index, vn->mac[0], vn->mac[1], vn->mac[2], vn->mac[3], vn->mac[4], vn->mac[5],
		virtio_has(d, VIRTIO_NET_F_MAC) ? "" : " (random)", vn->mtu, vn->nrx, vn->buf_pages * PAGE_SIZE - 64,
		mrg ? " mergeable" : "", vn->tx->num, vn->rxcfg.hdr_len, vn->ctrl ? ", ctrl" : "",
		echo ? ", echo" : "");
	read_link(vn, true);
	if (!first)
		first = vn;
	return 0;

fail:
	kfree(vn->slots);
	while (vn->free_rx) {
		struct rxbuf *b = vn->free_rx;

		vn->free_rx = b->next_free;
		page_free(b, vn->buf_pages);
	}
	kfree(vn);
	d->priv = NULL;
	return err;
}

static void net_remove(struct virtio_dev *d)
{
	struct vnet *vn = d->priv;
	void *t;

	if (!vn)
		return;
	/* The device is reset: nothing it holds will be used again. */
	while ((t = virtq_detach_unused(&vn->rx->vq)))
		rx_free(vn, t);
	while ((t = virtq_detach_unused(&vn->tx->vq))) {
		struct txslot *s = t;

		if (echo && s->token)
			rx_free(vn, s->token);
	}
	while (vn->free_rx) {
		struct rxbuf *b = vn->free_rx;

		vn->free_rx = b->next_free;
		page_free(b, vn->buf_pages);
	}
	kfree(vn->slots);
	if (first == vn)
		first = NULL;
	kfree(vn);
	d->priv = NULL;
}

static const struct virtio_device_id net_ids[] = {
	{ VIRTIO_ID_NET, VIRTIO_VENDOR_ANY },
	{ 0, 0 },
};

static const struct virtio_driver virtio_net_driver = {
	.name = "virtio-net",
	.ids = net_ids,
	.features = VIRTIO_BIT(VIRTIO_NET_F_MAC) | VIRTIO_BIT(VIRTIO_NET_F_MTU) |
		    VIRTIO_BIT(VIRTIO_NET_F_MRG_RXBUF) | VIRTIO_BIT(VIRTIO_NET_F_STATUS) |
		    VIRTIO_BIT(VIRTIO_NET_F_GUEST_CSUM) | VIRTIO_BIT(VIRTIO_NET_F_CTRL_VQ) |
		    VIRTIO_BIT(VIRTIO_NET_F_CTRL_RX) | VIRTIO_BIT(VIRTIO_NET_F_GUEST_ANNOUNCE),
	.feature_names = net_feature_names,
	.probe = net_probe,
	.remove = net_remove,
	.config_changed = config_changed,
};
VIRTIO_DRIVER(virtio_net_driver);
