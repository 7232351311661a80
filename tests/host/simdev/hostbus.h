/* hostbus: the virtio bus for host tests of a driver (tests/host/simdev):
 * the real drivers/virtio/virtio.c and drivers/virtio/virtio_core.c, whose driver table
 * (the VIRTIO_DRIVER linker set) holds the driver under test alone, and
 * identity DMA addresses as fake_dev expects. */
#ifndef VIREO_HOSTBUS_H
#define VIREO_HOSTBUS_H

#include "drivers/virtio/virtio.h"

/* The driver under test: the one VIRTIO_DRIVER() the test links (the test
 * stops if it links none or more). */
const struct virtio_driver *hostbus_driver(void);
/* The first call for d is the transport's report, virtio_add_device()
 * (registry, driver match, virtio_core_probe); after hk_remove() it is
 * virtio_core_probe() again. Returns the probe's result. */
int hk_probe(struct virtio_dev *d);
/* virtio_core_remove(): quiesce, reset, drv->remove, free the queues. */
void hk_remove(struct virtio_dev *d);
/* virtio_del_device(): off the bus (vd_fini calls it). */
void hk_unplug(struct virtio_dev *d);
/* virtio_keep_forever() (wrapped: the real one counts, the wrapper also
 * records): pages and heap blocks the bus counted as kept since the last
 * hk_free_kept(), which frees what was recorded. */
long hk_kept_pages(void);
unsigned hk_kept_blocks(void);
void hk_free_kept(void);
/* A config interrupt: virtio_config_interrupt() queues the bus's config
 * work (NEEDS_RESET -> remove and probe again, else drv->config_changed). */
void hk_config_interrupt(struct virtio_dev *d);
/* The transport reports a used-buffer interrupt on q. */
void hk_vq_interrupt(struct virtio_vq *q);
/* virtio_set_broken calls that marked a device (wrapped), the last reason. */
unsigned hk_broken_count(void);
const char *hk_broken_why(void);

#endif
