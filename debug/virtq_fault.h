/* A malformed descriptor on purpose, through the ring's test seam
 * (virtq_arm_debug): the fault the virtio recovery self-tests and the
 * shell's `fault` verb inject. */
#ifndef VIREO_VIRTQ_FAULT_H
#define VIREO_VIRTQ_FAULT_H

#include "drivers/virtio/virtq.h"

/* The next virtq_add publishes a deliberately malformed head descriptor so
 * that a checking device (QEMU's virtio_error) flags DEVICE_NEEDS_RESET.
 * Split: the head gets NEXT with next = num, a link off the end of the
 * table. Packed (which has no next field): the head claims an indirect
 * table whose length is odd, so not a whole number of descriptors.
 * Driver-side state is left as a normal add would leave it;
 * virtq_reset_state disarms. */
void virtq_debug_corrupt_next(struct virtq *vq);

#endif
