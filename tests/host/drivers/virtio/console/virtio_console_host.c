/* drivers/virtio/console/virtio_console.c, unchanged, built for the host: its
 * VIRTIO_DRIVER() line defines hostbus_driver, the one driver in hostbus's table.
 * (irq_save/irq_restore are the host <arch.h>'s no-ops.) */
#include "drivers/virtio/virtio.h"
#undef VIRTIO_DRIVER
#define VIRTIO_DRIVER(drv) const struct virtio_driver *const hostbus_driver = &(drv)
#include "drivers/virtio/console/virtio_console.c"
