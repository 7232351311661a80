/* virtio-net: MAC/MTU/link from config space, receive buffers kept posted
 * and validated, transmit with a per-slot header, the control queue, and
 * per-queue counters. The network stack glue arrives with the appliance;
 * until then `vnet.echo` reflects received frames (a raw-frame self-test). */
#ifndef VIREO_VIRTIO_NET_H
#define VIREO_VIRTIO_NET_H

#include "drivers/vnet_hdr.h"
#include "drivers/virtq.h"
#include "kernel/types.h"

struct vnet;

struct vnet_qstats {
	u64 frames, bytes, interrupts, polls, budget_exhausted;
	u64 drops[VNET_DROP_COUNT];
	u64 no_room;		/* TX: ring full */
};

/* The first virtio-net device that probed, or NULL. */
struct vnet *vnet_get(void);
/* Sends one frame (Ethernet header first) from sg[0..n), n <= 8, copying
 * nothing: the buffers must stay valid until vnet_tx_reclaim() returns
 * them through done(token). Returns 0, -ENOSPC or -EIO. */
int vnet_tx(struct vnet *vn, const struct virtq_sg *sg, unsigned n, void *token);
/* Turns the raw-frame echo self-test on (before drivers probe). */
void vnet_set_echo(bool on);

#endif
