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

/* Every page a device may write apart from its posted receive buffers:
 * each queue's ring block (mapped whole) and the control reply page. */
void vnet_host_dev_pages(struct vnet *vn, void (*note)(u8 *va, u32 len))
{
	const struct virtio_vq *q[3] = { vn->rx, vn->tx, vn->ctrl };

	for (unsigned i = 0; i < 3; i++)
		if (q[i])
			note(q[i]->ring_mem, (u32)(q[i]->ring_pages * PAGE_SIZE));
	note(vn->ctrl_in, PAGE_SIZE);
}

/* The receive pool's control data after a device attacked: every buffer
 * on the free list still describes its own DMA-only pages. NULL or what is
 * wrong. Call with nothing posted or held (after remove, released). */
const char *vnet_host_pool_check(struct vnet *vn)
{
	u32 n = 0;

	for (struct vnet_rxbuf *b = vn->free_rx; b; b = b->next_free, n++) {
		if (b->owner != vn)
			return "owner changed";
		if (b->pages != vn->buf_pages || b->cap != b->pages * PAGE_SIZE)
			return "size changed";
		if (!dma_page_only((u64)(uintptr_t)b->buf))
			return "buffer not on a DMA-only page";
		if (n > vn->ntotal)
			return "free list longer than the pool (a loop)";
	}
	return n == vn->ntotal ? NULL : "buffers missing from the free list";
}

/* The upper layer's callbacks and the queue pointers, for a canary. */
void vnet_host_canary(struct vnet *vn, void *out, size_t len)
{
	const void *f[] = { vn->rx, vn->tx, vn->ctrl, vn->slots, vn->hdrs, vn->bounce, vn->ctrl_in,
			    (void *)(uintptr_t)vn->up.rx, (void *)(uintptr_t)vn->up.tx_done,
			    (void *)(uintptr_t)vn->up.link, vn->up.ctx, (void *)(uintptr_t)vn->nslots,
			    (void *)(uintptr_t)vn->buf_pages, (void *)(uintptr_t)vn->ntotal };

	memset(out, 0, len);
	memcpy(out, f, MIN(len, sizeof(f)));
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
