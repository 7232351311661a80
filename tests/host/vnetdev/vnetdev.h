/* vnetdev: a simulated virtio-net device for host tests of the real driver.
 * It is the transport (status, features, config space, queue setup,
 * notifications) and the device side of the receive, transmit and control
 * rings (through fake_dev, which checks every ring rule the driver must
 * keep). It delivers frames with chosen headers and lengths, consumes and
 * records transmitted frames, answers control commands (NOTF_COAL
 * included), raises interrupts, and misbehaves on request. */
#ifndef VIREO_VNETDEV_H
#define VIREO_VNETDEV_H

#include "drivers/virtio.h"
#include "drivers/virtio_net_reg.h"
#include "drivers/vnet_ctrl.h"
#include "tests/host/fake_dev.h"

/* Queue 3 exists only for other device types played raw (virtio-console). */
enum { VD_RX, VD_TX, VD_CTRL, VD_Q3, VD_NQ };

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
#define VD_AUTO_MAX	100000u
#define VD_AUTO_FILL	4096u

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

struct vnetdev {
	struct virtio_dev vd;		/* what the driver and the core see */
	u8 status;
	u64 offered;
	u8 cfg[sizeof(struct virtio_net_config)];
	u8 gen;
	bool gen_unstable;		/* config_generation changes on every read */
	u16 qmax[VD_NQ];		/* 0: the queue does not exist */
	struct fake_dev q[VD_NQ];
	struct virtio_vq *vq[VD_NQ];	/* the driver's, while set up */
	bool live[VD_NQ];
	unsigned kicks[VD_NQ];
	unsigned irqs_seen[VD_NQ];	/* fake_dev interrupts already delivered */
	unsigned irqs[VD_NQ];		/* interrupts delivered */
	unsigned resets;		/* status writes of 0 */
	bool reset_stuck;		/* a write of 0 never completes: status stays */
	bool irq_on;			/* between irq_setup and irq_teardown */
	/* While interrupts are set up, an interrupt on every live queue at
	 * each queue_max read and each reset: one arriving in any window. */
	bool irq_storm;
	unsigned storm_irqs;		/* interrupts the storm delivered */

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
	/* Queue 0 as a device that fills buffers at once (virtio-rng): on
	 * each kick every posted buffer completes with rx_auto_len bytes, at
	 * most VD_AUTO_MAX in all (then an error: the driver never stops). */
	/* Raw: no net semantics on any queue; a kick only takes buffers. The
	 * test plays the device with vd_raw_write and vd_raw_complete. */
	bool raw;
	unsigned raw_done[VD_NQ];	/* buffers vd_raw_complete completed */
	u8 raw_last[VD_NQ][64];		/* readable bytes of the last of them */
	bool rx_auto;
	u32 rx_auto_len;
	unsigned rx_auto_done;
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
unsigned vd_errors(const struct vnetdev *v);
const char *vd_error(const struct vnetdev *v);

/* ---- config space ---- */
void vd_set_link(struct vnetdev *v, bool up, bool announce);	/* + config interrupt */
void vd_cfg_write16(struct vnetdev *v, u32 off, u16 val);	/* no interrupt */
void vd_needs_reset(struct vnetdev *v);		/* DEVICE_NEEDS_RESET + config interrupt */

/* ---- receive ---- */
/* Takes the buffers the driver posted since the last call; returns how
 * many are posted (taken, not used) now. */
unsigned vd_rx_posted(struct vnetdev *v);
/* Writable bytes of the i-th oldest posted buffer (0 if none). */
u32 vd_rx_buflen(struct vnetdev *v, unsigned i);
/* A well-formed packet: header h (NULL: all zero), frame bytes, spread over
 * as many buffers as needed as a device does with MRG_RXBUF. Returns the
 * buffers used, or -1 (not enough posted, or too long without MRG_RXBUF). */
int vd_rx_frame(struct vnetdev *v, const struct vd_hdr *h, const u8 *frame, u32 len);
/* Raw: writes n bytes into posted buffer i and publishes a used entry of
 * used_len (clamped to the buffer unless lie says otherwise). Returns the
 * buffer id or -1. */
int vd_rx_raw(struct vnetdev *v, unsigned i, const u8 *bytes, u32 n, u32 used_len,
	      enum fake_lie lie);
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

/* ---- raw queues ---- */
/* Writes n bytes into the oldest posted buffer of queue qi and completes
 * it with used length n. Returns the buffer id or -1 (none posted). */
int vd_raw_write(struct vnetdev *v, unsigned qi, const u8 *bytes, u32 n);
/* Takes new buffers of queue qi and completes up to max of them, oldest
 * first, with used length 0, keeping the last one's readable bytes.
 * Returns how many completed. */
unsigned vd_raw_complete(struct vnetdev *v, unsigned qi, unsigned max);
unsigned vd_raw_pending(struct vnetdev *v, unsigned qi);	/* taken, not completed */

/* ---- interrupts ---- */
/* Delivers queue qi's interrupt if the device decided to send one since the
 * last call (event index / flags), or always with force. Returns true if
 * delivered. */
bool vd_irq(struct vnetdev *v, unsigned qi, bool force);
/* Whether queue qi's driver will hear from the device about the buffers it
 * has outstanding: an interrupt the device decided on is not delivered yet,
 * or completing all of them would raise one (fake_dev_will_notify). */
bool vd_wakeup_due(struct vnetdev *v, unsigned qi);

#endif
