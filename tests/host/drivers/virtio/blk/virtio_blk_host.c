/* drivers/virtio/blk/virtio_blk.c, unchanged, built for the host (its
 * VIRTIO_DRIVER() line puts it in the bus's table, as in the kernel);
 * vblk_host_forget() frees the state the driver keeps for good once a
 * device probed (the upper layer may hold it), between tests. */
#include "drivers/virtio/blk/virtio_blk.c"

void vblk_host_forget(void);
void vblk_host_forget(void)
{
	for (unsigned i = 0; i < VBLK_MAX; i++) {
		struct vblk *b = vblks[i];

		if (!b)
			continue;
		work_cancel(&b->poll_work);
		work_cancel(&b->done_work);
		timer_stop(&b->timer);
		vblk_buf_free(b->pages, 2 * PAGE_SIZE);
		kfree(b);
		vblks[i] = NULL;
	}
}
