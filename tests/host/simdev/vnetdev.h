/* vnetdev: a simulated virtio-net device for host tests of the real driver:
 * the generic simulated device (simdev.h: transport, config space, queues,
 * interrupts, misbehaviour on request) with virtio-net's semantics on its
 * receive, transmit and control queues. It delivers frames with chosen
 * headers and lengths, consumes and records transmitted frames, answers
 * control commands (NOTF_COAL included). */
#ifndef VIREO_VNETDEV_H
#define VIREO_VNETDEV_H

#include "drivers/virtio/virtio.h"
#include "drivers/virtio/net/virtio_net_reg.h"
#include "drivers/virtio/net/vnet_ctrl.h"
#include "tests/host/simdev/fake_dev.h"
#include "tests/host/simdev/simdev.h"

enum { VD_RX, VD_TX, VD_CTRL };

enum vd_ctrl_mode {
	VD_CTRL_OK,		/* ack VIRTIO_NET_OK (ERR for unnegotiated commands) */
	VD_CTRL_ERR,		/* ack VIRTIO_NET_ERR */
	VD_CTRL_SILENT,		/* never answer */
	VD_CTRL_BADLEN,		/* used len 0: nothing written */
	VD_CTRL_GARBAGE,	/* ack byte 0x5a */
};

#define VD_CMD_LOG	256
#define VD_TX_LOG	64
#define VD_TX_MAX	(65536u + 64u)

struct vd_cmd {
	u8 cls, cmd;
	u32 len;			/* data bytes */
	u8 data[VNET_CTRL_DATA_MAX];
	bool answered_ok;
};

struct vd_txframe {
	u8 hdr[VIRTIO_NET_HDR_LEN];
	u32 len;			/* frame bytes after the header */
	u8 *data;			/* malloc'd copy */
};

/* A receive header as the device writes it. */
struct vd_hdr {
	u8 flags, gso;
	u16 csum_start, csum_offset;
	u16 hdr_len, gso_size;		/* GSO frames (GUEST_TSO4/6) */
	int num_buffers;		/* < 0: the true count */
};

/* The generic device's fields are reached by their plain names (dev.vd,
 * dev.status, dev.q[...]) through the anonymous struct, and as a struct
 * simdev through sd (the same layout: a union of the two). */
struct vnetdev {
	union {
		struct simdev sd;
		struct {
			SIMDEV_FIELDS;
		};
	};

	/* control queue */
	enum vd_ctrl_mode ctrl_mode;
	unsigned ncmds;			/* commands seen (log keeps the last VD_CMD_LOG) */
	struct vd_cmd cmds[VD_CMD_LOG];
	unsigned coal_sets;		/* NOTF_COAL RX_SET / VQ_SET(rx) accepted */
	u32 coal_packets, coal_usecs;	/* the device's receive coalescing now */
	bool coal_by_vq;		/* last set was VQ_SET */
	unsigned announce_acks;

	/* transmit */
	bool tx_auto;			/* complete transmitted frames on the kick */
	unsigned ntx;			/* frames consumed (log keeps the last VD_TX_LOG) */
	struct vd_txframe tx[VD_TX_LOG];
	unsigned tx_bad;		/* frames with a header the driver must not send */
};

/* A device offering `features` (VIRTIO_BIT()s; VERSION_1 makes it modern),
 * MAC 52:54:00:12:34:56, link up, MTU 1500, queues of qsize entries. */
void vd_init(struct vnetdev *v, u64 features, u16 qsize);
/* Frees what vd_init and the logs allocated; the driver must be gone. */
void vd_fini(struct vnetdev *v);
u32 vd_hdr_len(const struct vnetdev *v);
/* Sum of the ring rules the driver broke, over all queues (0 expected). */
static inline unsigned vd_errors(const struct vnetdev *v) { return sd_errors(&v->sd); }
static inline const char *vd_error(const struct vnetdev *v) { return sd_error(&v->sd); }

/* ---- config space ---- */
void vd_set_link(struct vnetdev *v, bool up, bool announce);	/* + config interrupt */
static inline void vd_cfg_write16(struct vnetdev *v, u32 off, u16 val)	/* no interrupt */
{
	sd_cfg_write16(&v->sd, off, val);
}
static inline void vd_needs_reset(struct vnetdev *v)	/* DEVICE_NEEDS_RESET + config interrupt */
{
	sd_needs_reset(&v->sd);
}

/* ---- receive ---- */
/* Takes the buffers the driver posted since the last call; returns how
 * many are posted (taken, not used) now. */
static inline unsigned vd_rx_posted(struct vnetdev *v)
{
	return sd_posted(&v->sd, VD_RX);
}
/* Writable bytes of the i-th oldest posted buffer (0 if none). */
u32 vd_rx_buflen(struct vnetdev *v, unsigned i);
/* A well-formed packet: header h (NULL: all zero), frame bytes, spread over
 * as many buffers as needed as a device does with MRG_RXBUF. Returns the
 * buffers used, or -1 (not enough posted, or too long without MRG_RXBUF). */
int vd_rx_frame(struct vnetdev *v, const struct vd_hdr *h, const u8 *frame, u32 len);
/* Raw: writes n bytes into posted buffer i and publishes a used entry of
 * used_len (clamped to the buffer unless lie says otherwise). Returns the
 * buffer id or -1. */
static inline int vd_rx_raw(struct vnetdev *v, unsigned i, const u8 *bytes, u32 n, u32 used_len,
			    enum fake_lie lie)
{
	return sd_complete(&v->sd, VD_RX, i, bytes, n, used_len, lie);
}
/* Builds a header into buf (vd_hdr_len bytes). */
void vd_put_hdr(const struct vnetdev *v, u8 *buf, const struct vd_hdr *h, u16 nbuf);

/* ---- control ---- */
/* Answers the commands the driver made available (also late, after a
 * silent spell), as ctrl_mode says. A notify does the same. */
void vd_ctrl_serve(struct vnetdev *v);

/* ---- transmit ---- */
/* Takes newly available frames and completes up to max of the taken ones
 * (oldest first; reverse: newest first). Returns how many completed. */
unsigned vd_tx_complete(struct vnetdev *v, unsigned max, bool reverse);
unsigned vd_tx_pending(struct vnetdev *v);	/* taken, not completed */
const struct vd_txframe *vd_tx_last(const struct vnetdev *v);

/* ---- interrupts ---- */
/* Delivers queue qi's interrupt if the device decided to send one since the
 * last call (event index / flags), or always with force. Returns true if
 * delivered. */
static inline bool vd_irq(struct vnetdev *v, unsigned qi, bool force)
{
	return sd_irq(&v->sd, qi, force);
}
/* Whether queue qi's driver will hear from the device about the buffers it
 * has outstanding (sd_wakeup_due). */
static inline bool vd_wakeup_due(struct vnetdev *v, unsigned qi)
{
	return sd_wakeup_due(&v->sd, qi);
}

#endif
