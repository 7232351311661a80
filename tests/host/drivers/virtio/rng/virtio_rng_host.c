/* drivers/virtio/rng/virtio_rng.c, unchanged, built for the host: its VIRTIO_DRIVER()
 * line defines hostbus_driver, the one driver in hostbus's table (the name is the
 * harness's; here the driver under test is virtio-rng). */
#include "drivers/virtio/virtio.h"
#undef VIRTIO_DRIVER
#define VIRTIO_DRIVER(drv) const struct virtio_driver *const hostbus_driver = &(drv)
#include "drivers/virtio/rng/virtio_rng.c"
