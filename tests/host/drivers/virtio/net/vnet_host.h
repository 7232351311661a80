/* Test-only views of drivers/virtio/net/virtio_net.c's private state, defined next to
 * the driver in virtio_net_host.c (see there). */
#ifndef VIREO_VNET_HOST_H
#define VIREO_VNET_HOST_H

#include "drivers/virtio/virtio.h"
#include "drivers/virtio/net/virtio_net.h"

u32 vnet_host_free_count(struct vnet *vn);	/* receive buffers on the free list */
u32 vnet_host_tx_free(struct vnet *vn);		/* transmit slots free */
struct vnet *vnet_host_for(struct virtio_dev *d);
const struct virtio_vq *vnet_host_rxq(struct vnet *vn);	/* NULL while removed */
u32 vnet_host_forget_all(void);

#endif
