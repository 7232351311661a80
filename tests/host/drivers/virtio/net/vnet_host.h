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
void vnet_host_dev_pages(struct vnet *vn, void (*note)(u8 *va, u32 len));
const char *vnet_host_pool_check(struct vnet *vn);
#define VNET_HOST_CANARY 128
void vnet_host_canary(struct vnet *vn, void *out, size_t len);

#endif
