/* The virtio core's device life cycle (probe with its unwind, remove),
 * apart from the device registry in virtio.c so the host harness runs the
 * same code. Bus-internal: drivers use virtio.h. */
#ifndef VIREO_VIRTIO_CORE_H
#define VIREO_VIRTIO_CORE_H

#include "drivers/virtio/virtio.h"

/* Resets d, walks §3.1.1 with drv and calls drv->probe. On failure the
 * queues are quiesced, the device reset, the queues freed (or kept if the
 * reset never completed) and FAILED set. Returns 0 or a negative error. */
int virtio_core_probe(struct virtio_dev *d, const struct virtio_driver *drv);
/* Quiesces, resets, calls drv->remove (d->dead tells it the device may
 * still write what it was given), frees or keeps the queues. */
void virtio_core_remove(struct virtio_dev *d);

#endif
