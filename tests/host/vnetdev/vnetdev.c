/* vnetdev: a simulated virtio-net device; see vnetdev.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/vnetdev/hostbus.h"
#include "tests/host/vnetdev/vnetdev.h"

#define OFF_STATUS	offsetof(struct virtio_net_config, status)
#define OFF_MTU		offsetof(struct virtio_net_config, mtu)

static struct vnetdev *to_vd(struct virtio_dev *d)
{
	return (struct vnetdev *)((char *)d - offsetof(struct vnetdev, vd));
}

static bool has(const struct vnetdev *v, unsigned bit)
{
	return (v->vd.features >> bit) & 1;
}

static void vd_err(struct vnetdev *v, unsigned qi, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void vd_err(struct vnetdev *v, unsigned qi, const char *fmt, ...)
{
	struct fake_dev *q = &v->q[qi];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->error, sizeof q->error, fmt, ap);
	va_end(ap);
	q->errors++;
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "vnetdev: driver error: %s\n", q->error);
}

u32 vd_hdr_len(const struct vnetdev *v)
{
	return v->vd.modern || has(v, VIRTIO_NET_F_MRG_RXBUF) ? VIRTIO_NET_HDR_LEN
							       : VIRTIO_NET_HDR_LEN_LEGACY;
}

unsigned vd_errors(const struct vnetdev *v)
{
	unsigned n = 0;

	for (unsigned i = 0; i < VD_NQ; i++)
		n += v->q[i].errors;
	return n;
}

const char *vd_error(const struct vnetdev *v)
{
	for (unsigned i = 0; i < VD_NQ; i++)
		if (v->q[i].errors)
			return v->q[i].error;
	return "";
}

/* Gathers the device-readable bytes of a taken buffer into out (at most
 * max); returns their total length. */
static u32 gather(const struct fake_buf *b, u8 *out, u32 max)
{
	u32 n = 0;

	for (unsigned i = 0; i < b->nseg; i++) {
		if (b->seg[i].write)
			continue;
		for (u32 j = 0; j < b->seg[i].len; j++, n++)
			if (n < max)
				out[n] = b->seg[i].va[j];
	}
	return n;
}

/* Takes newly available buffers; with the split event index, asks to be
 * notified of the very next one, as a device that keeps up does. */
static unsigned fetch(struct vnetdev *v, unsigned qi)
{
	struct fake_dev *q = &v->q[qi];
	unsigned n = fake_dev_fetch(q);

	if (!q->packed && q->event_idx)
		fake_dev_set_avail_event(q, q->last_avail);
	return n;
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

	fetch(v, VD_CTRL);
	while (q->npending && v->ctrl_mode != VD_CTRL_SILENT) {
		const struct fake_buf *b = &q->pending[0];
		u8 bytes[2 + VNET_CTRL_DATA_MAX], ack;
		struct vd_cmd *c = &v->cmds[v->ncmds++ % VD_CMD_LOG];
		u32 n = gather(b, bytes, sizeof bytes);

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
	n = gather(b, all, VD_TX_MAX);
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
	fetch(v, VD_TX);
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
	if (!v->live[VD_TX])
		return 0;
	fetch(v, VD_TX);
	return v->q[VD_TX].npending;
}

const struct vd_txframe *vd_tx_last(const struct vnetdev *v)
{
	return v->ntx ? &v->tx[(v->ntx - 1) % VD_TX_LOG] : NULL;
}

/* ---- transport ops ---- */

static u8 op_get_status(struct virtio_dev *d)
{
	return to_vd(d)->status;
}

static void storm(struct vnetdev *v)
{
	if (!v->irq_storm || !v->irq_on)
		return;
	for (unsigned i = 0; i < VD_NQ; i++) {
		if (!v->live[i] || !v->vq[i])
			continue;
		v->storm_irqs++;
		hk_vq_interrupt(v->vq[i]);
	}
}

static void op_set_status(struct virtio_dev *d, u8 status)
{
	struct vnetdev *v = to_vd(d);

	if (status == 0)
		storm(v);	/* the driver polls the reset, interrupts on */
	if (status == 0 && v->reset_stuck) {
		v->resets++;
		return;
	}
	if (status == 0) {
		v->resets++;
		for (unsigned i = 0; i < VD_NQ; i++) {
			if (v->live[i])
				fake_dev_reset(&v->q[i]);
			v->live[i] = false;
			v->vq[i] = NULL;
		}
	}
	if ((status & VIRTIO_S_FEATURES_OK) && !v->vd.modern)
		vd_err(v, VD_RX, "FEATURES_OK on a legacy device");
	v->status = status;
}

static u64 op_get_features(struct virtio_dev *d)
{
	return to_vd(d)->offered;
}

static void op_set_features(struct virtio_dev *d, u64 features)
{
	struct vnetdev *v = to_vd(d);

	if (features & ~v->offered)
		vd_err(v, VD_RX, "driver took features %#llx not offered",
		       (unsigned long long)(features & ~v->offered));
}

static u8 op_config_generation(struct virtio_dev *d)
{
	struct vnetdev *v = to_vd(d);

	return v->gen_unstable ? v->gen++ : v->gen;
}

static int op_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 width)
{
	struct vnetdev *v = to_vd(d);

	if (width != 1 && width != 2 && width != 4)
		vd_err(v, VD_RX, "config read of width %u", width);
	if (off % width)
		vd_err(v, VD_RX, "unaligned config read at %u", off);
	if (off >= sizeof v->cfg || width > sizeof v->cfg - off)
		return -ERANGE;
	memcpy(buf, v->cfg + off, width);
	return 0;
}

static int op_cfg_write(struct virtio_dev *d, u32 off, const void *buf, u32 width)
{
	return -ERANGE;
}

static u16 op_queue_max(struct virtio_dev *d, u16 idx)
{
	struct vnetdev *v = to_vd(d);

	storm(v);
	return idx < VD_NQ ? v->qmax[idx] : 0;
}

static bool op_queue_size_fixed(struct virtio_dev *d)
{
	return !to_vd(d)->vd.modern;
}

static int op_queue_setup(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vnetdev *v = to_vd(d);
	struct virtq_config cfg = { 0 };

	if (q->index >= VD_NQ)
		return -EINVAL;
	cfg.num = q->vq.num;
	cfg.index = q->index;
	cfg.packed = q->vq.is_packed;
	cfg.event_idx = q->vq.event_idx;
	cfg.in_order = q->vq.in_order;
	cfg.indirect = q->vq.indirect;
	fake_dev_init(&v->q[q->index], &cfg, &q->vq);
	v->vq[q->index] = q;
	v->live[q->index] = true;
	v->irqs_seen[q->index] = 0;
	return 0;
}

static void rx_auto(struct vnetdev *v)
{
	static const u8 fill[VD_AUTO_FILL] = { 0x5a };

	while (vd_rx_posted(v)) {
		if (v->rx_auto_done == VD_AUTO_MAX) {
			vd_err(v, VD_RX, "driver kept re-posting: %u completions", VD_AUTO_MAX);
			return;
		}
		v->rx_auto_done++;
		vd_rx_raw(v, 0, fill, MIN(v->rx_auto_len, (u32)VD_AUTO_FILL), v->rx_auto_len, FAKE_LIE_NONE);
	}
}

static void op_notify(struct virtio_vq *q, u32 data)
{
	struct vnetdev *v = to_vd(q->vdev);

	if (q->index >= VD_NQ || !v->live[q->index]) {
		vd_err(v, VD_RX, "notify for queue %u, not live", q->index);
		return;
	}
	if (!(v->status & VIRTIO_S_DRIVER_OK) && q->index != VD_RX)
		vd_err(v, q->index, "notify before DRIVER_OK");
	v->kicks[q->index]++;
	fake_dev_notify(&v->q[q->index], data);
	if (v->raw)
		fetch(v, q->index);
	else if (q->index == VD_CTRL)
		vd_ctrl_serve(v);
	else if (q->index == VD_TX && v->tx_auto)
		vd_tx_complete(v, ~0u, false);
	else if (q->index == VD_RX && v->rx_auto)
		rx_auto(v);
	else if (q->index == VD_RX)
		fetch(v, VD_RX);
}

static int op_irq_setup(struct virtio_dev *d)
{
	struct vnetdev *v = to_vd(d);

	if (v->irq_on)
		vd_err(v, VD_RX, "irq_setup twice");
	v->irq_on = true;
	return 0;
}

static void op_irq_teardown(struct virtio_dev *d)
{
	struct vnetdev *v = to_vd(d);

	if (!v->irq_on)
		vd_err(v, VD_RX, "irq_teardown without irq_setup");
	v->irq_on = false;
}

static const char *op_describe(struct virtio_dev *d)
{
	return "vnetdev";
}

static const struct virtio_transport_ops vd_ops = {
	.name = "vnetdev",
	.get_status = op_get_status,
	.set_status = op_set_status,
	.get_features = op_get_features,
	.set_features = op_set_features,
	.config_generation = op_config_generation,
	.cfg_read = op_cfg_read,
	.cfg_write = op_cfg_write,
	.queue_max = op_queue_max,
	.queue_size_fixed = op_queue_size_fixed,
	.queue_setup = op_queue_setup,
	.notify = op_notify,
	.irq_setup = op_irq_setup,
	.irq_teardown = op_irq_teardown,
	.describe = op_describe,
};

/* ---- set-up ---- */

void vd_init(struct vnetdev *v, u64 features, u16 qsize)
{
	static const u8 mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

	memset(v, 0, sizeof(*v));
	v->vd.device_id = VIRTIO_ID_NET;
	v->vd.vendor_id = 0x1af4;
	v->vd.ops = &vd_ops;
	v->vd.modern = (features >> VIRTIO_F_VERSION_1) & 1;
	v->offered = features;
	v->qmax[VD_RX] = qsize;
	v->qmax[VD_TX] = qsize;
	v->qmax[VD_CTRL] = (features >> VIRTIO_NET_F_CTRL_VQ) & 1 ? 64 : 0;
	memcpy(v->cfg, mac, 6);
	vd_cfg_write16(v, OFF_STATUS, VIRTIO_NET_S_LINK_UP);
	vd_cfg_write16(v, OFF_MTU, 1500);
}

void vd_fini(struct vnetdev *v)
{
	hk_unplug(&v->vd);
	for (unsigned i = 0; i < VD_NQ; i++)
		fake_dev_fini(&v->q[i]);
	for (unsigned i = 0; i < VD_TX_LOG; i++) {
		free(v->tx[i].data);
		v->tx[i].data = NULL;
	}
}

/* ---- config space ---- */

void vd_cfg_write16(struct vnetdev *v, u32 off, u16 val)
{
	v->cfg[off] = (u8)val;
	v->cfg[off + 1] = (u8)(val >> 8);
	v->gen++;
}

void vd_set_link(struct vnetdev *v, bool up, bool announce)
{
	vd_cfg_write16(v, OFF_STATUS, (u16)((up ? VIRTIO_NET_S_LINK_UP : 0) |
					    (announce ? VIRTIO_NET_S_ANNOUNCE : 0)));
	hk_config_interrupt(&v->vd);
}

void vd_needs_reset(struct vnetdev *v)
{
	v->status |= VIRTIO_S_NEEDS_RESET;
	hk_config_interrupt(&v->vd);
}

/* ---- receive ---- */

unsigned vd_rx_posted(struct vnetdev *v)
{
	if (!v->live[VD_RX])
		return 0;
	fetch(v, VD_RX);
	return v->q[VD_RX].npending;
}

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

int vd_rx_raw(struct vnetdev *v, unsigned i, const u8 *bytes, u32 n, u32 used_len,
	      enum fake_lie lie)
{
	struct fake_dev *q = &v->q[VD_RX];

	if (i >= vd_rx_posted(v))
		return -1;
	q->data = bytes;
	q->data_len = n;
	q->lie = lie;
	return fake_dev_complete(q, i, used_len);
}

/* ---- raw queues ---- */

int vd_raw_write(struct vnetdev *v, unsigned qi, const u8 *bytes, u32 n)
{
	struct fake_dev *q = &v->q[qi];

	if (qi >= VD_NQ || !v->live[qi])
		return -1;
	fetch(v, qi);
	if (!q->npending)
		return -1;
	q->data = bytes;
	q->data_len = n;
	return fake_dev_complete(q, 0, n);
}

unsigned vd_raw_complete(struct vnetdev *v, unsigned qi, unsigned max)
{
	struct fake_dev *q = &v->q[qi];
	unsigned n = 0;

	if (qi >= VD_NQ || !v->live[qi])
		return 0;
	fetch(v, qi);
	while (n < max && q->npending) {
		gather(&q->pending[0], v->raw_last[qi], sizeof v->raw_last[qi]);
		if (fake_dev_complete(q, 0, 0) < 0)
			break;
		n++;
		v->raw_done[qi]++;
	}
	return n;
}

unsigned vd_raw_pending(struct vnetdev *v, unsigned qi)
{
	if (qi >= VD_NQ || !v->live[qi])
		return 0;
	fetch(v, qi);
	return v->q[qi].npending;
}

/* ---- interrupts ---- */

bool vd_irq(struct vnetdev *v, unsigned qi, bool force)
{
	if (qi >= VD_NQ || !v->live[qi] || !v->vq[qi] || !v->irq_on)
		return false;	/* no route: interrupts torn down */
	if (!force && v->q[qi].interrupts == v->irqs_seen[qi])
		return false;
	v->irqs_seen[qi] = v->q[qi].interrupts;
	v->irqs[qi]++;
	hk_vq_interrupt(v->vq[qi]);
	return true;
}

bool vd_wakeup_due(struct vnetdev *v, unsigned qi)
{
	if (qi >= VD_NQ || !v->live[qi])
		return false;
	if (v->q[qi].interrupts != v->irqs_seen[qi])
		return true;
	fetch(v, qi);
	return fake_dev_will_notify(&v->q[qi]);
}
