/* The malformed head descriptor of virtq_fault.h, written through the ring's
 * test seam. */
#include <arch.h>

#include "debug/virtq_fault.h"
#include "drivers/virtio/virtio_ring_reg.h"

static void virtq_fault_corrupt(struct virtq *vq, u16 head, u16 *head_flags)
{
	if (vq->is_packed) {
		vq->packed.desc[head].len |= 1;
		*head_flags |= VIRTQ_DESC_F_INDIRECT;
	} else {
		vq->split.desc[head].flags |= VIRTQ_DESC_F_NEXT;
		vq->split.desc[head].next = vq->num;
	}
}

void virtq_debug_corrupt_next(struct virtq *vq)
{
	klog("virtq %u: self-test: the next buffer gets a malformed head descriptor", vq->index);
	virtq_arm_debug(vq, virtq_fault_corrupt);
}
