/* drivers/virtio/net/virtio_net.c, unchanged, built for the host (its
 * VIRTIO_DRIVER() line puts it in the bus's table, as in the kernel). Being
 * the same translation unit, the helpers below may read the driver's
 * statics: they are test-only views, never used by the driver. */
#include "drivers/virtio/net/virtio_net.c"

#include "tests/host/drivers/virtio/net/vnet_host.h"

u32 vnet_host_free_count(struct vnet *vn)
{
	u32 n = 0;

	for (struct vnet_rxbuf *b = vn->free_rx; b; b = b->next_free)
		n++;
	return n;
}

u32 vnet_host_tx_free(struct vnet *vn)
{
	u32 n = 0;

	for (struct txslot *s = vn->free_tx; s; s = s->next_free)
		n++;
	return n;
}

struct vnet *vnet_host_for(struct virtio_dev *d)
{
	for (unsigned i = 0; i < MAX_VNETS; i++)
		if (vnets[i] && vnets[i]->key == d)
			return vnets[i];
	return NULL;
}

const struct virtio_vq *vnet_host_rxq(struct vnet *vn)
{
	return vn->rx;
}

/* What the kernel never does: forget every device's state (the driver
 * keeps it for a re-probe once an upper layer attached). The upper layer
 * must have released every buffer. Returns buffers it still held. */
u32 vnet_host_forget_all(void)
{
	u32 held = 0;

	for (unsigned i = 0; i < MAX_VNETS; i++) {
		struct vnet *vn = vnets[i];

		if (!vn)
			continue;
		held += vn->nheld;
		timer_stop(&vn->coal_timer);
		timer_stop(&vn->recheck);
		work_cancel(&vn->rx_work);
		work_cancel(&vn->tx_work);
		work_cancel(&vn->refill_work);
		work_cancel(&vn->kick_work);
		vnet_free_buffers(vn);
		kfree(vn->slots);
		vnet_destroy(vn, false);
		vnets[i] = NULL;
	}
	coal_cfg.mode = COAL_ADAPTIVE;
	coal_cfg.frames = 0;
	coal_cfg.usecs = 0;
	return held;
}
