/* The kernel's virtio driver table: every VIRTIO_DRIVER() linked in. Apart
 * from drivers/virtio/virtio.c so the host harness can link the bus with the
 * driver under test instead. */
#include "drivers/virtio/virtio.h"
#include "lib/linkset.h"

extern char __virtio_drivers_start[], __virtio_drivers_end[];

const struct virtio_driver *const *virtio_driver_table(size_t *n)
{
	return (const struct virtio_driver *const *)linkset_items(__virtio_drivers_start,
								   __virtio_drivers_end, n);
}
