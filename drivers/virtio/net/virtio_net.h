/* virtio-net: MAC/MTU/link from config space, receive buffers kept posted
 * and validated, scatter-gather transmit, checksum offload, the control
 * queue, NAPI-style polling with interrupt coalescing, and per-queue
 * counters.
 *
 * The interface to a network stack (net/netif/netif_vnet.c) uses no stack types:
 *  - receive is zero-copy: the driver hands up a validated frame as a chain
 *    of its own receive buffers; the upper layer owns each buffer until it
 *    calls vnet_rx_release() (typically from a pbuf's free function), and
 *    may keep its bookkeeping in the buffer's `upper` scratch bytes;
 *  - transmit takes a scatter-gather list and a token, and hands the token
 *    back through tx_done() once the device no longer reads the buffers;
 *  - link changes arrive through link().
 * All calls and callbacks happen in the event loop, never in an interrupt.
 *
 * A device that is reset (DEVICE_NEEDS_RESET) and probed again keeps its
 * struct vnet, its attachment and the buffers the upper layer holds: the
 * upper layer sees link down, then link up. */
#ifndef VIREO_VIRTIO_NET_H
#define VIREO_VIRTIO_NET_H

#include "drivers/virtio/net/coalesce.h"
#include "drivers/virtio/net/vnet_hdr.h"
#include "drivers/virtio/virtq.h"
#include "lib/types.h"

struct vnet;

#define VNET_RX_UPPER_SIZE 64	/* scratch bytes per receive buffer for the upper layer */
#define VNET_TX_MAX_SG 16	/* segments per transmitted frame */

/* One receive buffer (one segment of a received frame). This struct is
 * kernel memory the device cannot reach (kmalloc); the frame bytes are in
 * buf, DMA-only pages (kernel/mm/dma.h) that hold nothing else. Nothing
 * here is ever read back from buf: data and len are set from the used
 * ring's length, checked against cap, the size that was posted. */
struct vnet_rxbuf {
	u8 upper[VNET_RX_UPPER_SIZE] __attribute__((aligned(16)));
	struct vnet_rxbuf *next;	/* next segment of this frame, or NULL */
	u8 *data;			/* this segment's frame bytes (in buf) */
	u32 len;
	/* Private to the driver. */
	u32 cap;			/* bytes posted: pages * PAGE_SIZE */
	u16 pages;
	struct vnet *owner;
	struct vnet_rxbuf *next_free;
	u8 *buf;			/* the device-writable pages */
};

/* rx() flags */
#define VNET_RX_CSUM_OK	0x1	/* the device vouched for the TCP/UDP checksum
				 * (DATA_VALID, or NEEDS_CSUM: a frame from the
				 * host itself that was never on a wire) */
#define VNET_RX_CONFINED 0x2	/* an IOMMU domain confines the device: its
				 * pages are all it can reach (strict copies) */
/* vnet_tx() flags */
#define VNET_TX_CSUM	0x1	/* fill the TCP checksum (offload; needs info.tx_csum) */
/* ... and have the device cut the TCP frame into segments of mss payload
 * bytes (needs VNET_TX_CSUM and info.tx_tso4 / tx_tso6 for the family). */
#define VNET_TX_GSO(mss)	((unsigned)(u16)(mss) << 16)
#define VNET_TX_GSO_SIZE(flags)	((u16)((flags) >> 16))

struct vnet_upper {
	void *ctx;
	/* A validated frame of len bytes, Ethernet header first, in the chain
	 * `frame`; every segment must come back through vnet_rx_release(). */
	void (*rx)(void *ctx, struct vnet_rxbuf *frame, u32 len, unsigned flags);
	/* The device is done with the buffers sent with token. */
	void (*tx_done)(void *ctx, void *token);
	void (*link)(void *ctx, bool up);
	/* Optional (may be NULL). The device asked the driver to announce
	 * itself (VIRTIO_NET_S_ANNOUNCE, GUEST_ANNOUNCE negotiated: typically
	 * just after a live migration): send the gratuitous packets now. The
	 * driver sends VIRTIO_NET_CTRL_ANNOUNCE_ACK once this returns. */
	void (*announce)(void *ctx);
};

struct vnet_info {
	u32 index;		/* virtioN */
	u8 mac[6];
	u16 mtu;
	bool link_up;
	bool tx_csum;		/* VIRTIO_NET_F_CSUM: VNET_TX_CSUM works */
	bool rx_csum;		/* VIRTIO_NET_F_GUEST_CSUM: rx() may pass VNET_RX_CSUM_OK */
	bool tx_tso4, tx_tso6;	/* HOST_TSO4 / HOST_TSO6: VNET_TX_GSO works for IPv4 / IPv6 */
	bool rx_tso4, rx_tso6;	/* GUEST_TSO4 / GUEST_TSO6: rx() may pass one TCP segment
				 * of up to 64 KiB, coalesced by the device */
};

struct vnet_qstats {
	u64 frames, bytes, interrupts, polls, budget_exhausted;
	u64 drops[VNET_DROP_COUNT];
	u64 no_room;		/* TX: ring full */
	u64 csum_offloaded;	/* TX: frames sent with NEEDS_CSUM; RX: frames passed CSUM_OK */
	u64 coal_timer_wakeups;	/* RX: polls started by the coalescing timer */
	u64 gso_frames;		/* TX: frames sent for the device to segment (TSO);
				 * RX: GSO frames received (GUEST_TSO) */
	u64 gso_segments;	/* TX: the wire segments those frames become; RX: the
				 * wire segments the received ones were coalesced from */
	u64 bounced;		/* TX: frames copied (partly) into bounce pages (confined) */
	u64 bounce_bytes;	/* TX: bytes those copies took */
	u64 bounce_full;	/* TX: sends refused for want of bounce space (-ENOSPC) */
};

struct vnet_stats {
	struct vnet_qstats q[2];	/* [0] receive, [1] transmit */
	u32 rx_posted;			/* buffers on the receive ring now */
	u32 rx_held;			/* buffers held by the upper layer now */
	u32 rx_total;
	enum coal_mode coal_mode;
	u16 coal_frames;		/* in force */
	u32 coal_usecs;
	bool coal_device;		/* programmed through NOTF_COAL */
	struct coal_stats coal;
	u32 resets;			/* DEVICE_NEEDS_RESET recoveries */
	u32 link_resumes;		/* link-up transitions: rings re-kicked and polled */
	u32 announces;			/* announce requests taken (GUEST_ANNOUNCE) */
};

/* The first virtio-net device that probed, or NULL. */
struct vnet *vnet_get(void);
/* Binds the upper layer (once); link() is called at once with the state. */
int vnet_attach(struct vnet *vn, const struct vnet_upper *up);
/* For an upper layer that sends frames on as they came (no checksum offload
 * of its own): a one-buffer frame with a partial checksum (NEEDS_CSUM) is
 * completed before it is handed up. */
void vnet_set_rx_csum_whole(struct vnet *vn, bool on);
void vnet_get_info(struct vnet *vn, struct vnet_info *info);
/* Gives one receive buffer back (any segment of a frame, in any order). */
void vnet_rx_release(struct vnet_rxbuf *b);
/* Receive buffers the upper layer holds now (frames handed up, not yet
 * released; a frame being handed up counts) and the pool's size. */
void vnet_rx_pool(struct vnet *vn, u32 *held, u32 *total);
/* Sends one frame (Ethernet header first) from sg[0..n), n <= VNET_TX_MAX_SG,
 * copying nothing: the buffers must stay valid until tx_done(token). With
 * VNET_TX_CSUM the TCP checksum field is filled in (the headers through TCP
 * must be in sg[0] and writable). Returns 0, -ENOSPC (ring full: retry after
 * a tx_done) or -EIO (device broken or link down). */
int vnet_tx(struct vnet *vn, const struct virtq_sg *sg, unsigned n, unsigned flags, void *token);
void vnet_get_stats(struct vnet *vn, struct vnet_stats *st);
/* A panic's best-effort send: frame[0..len) (Ethernet header first, no
 * offload) goes on the ring and the device is notified at once. The upper
 * layer is detached first (completions reclaimed to make room call no one:
 * the machine is stopping), nothing is allocated and nothing waits.
 * Returns 0, -ENOSPC or -EIO; frame must stay valid (it does: the caller
 * halts). */
int vnet_tx_emergency(struct vnet *vn, const void *frame, u32 len);


#endif
