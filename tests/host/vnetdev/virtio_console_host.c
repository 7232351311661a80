/* drivers/virtio_console.c, unchanged, built for the host: its
 * VIRTIO_DRIVER() line defines vnet_host_driver, the one driver in hostbus's table.
 * Interrupts cannot be masked in a host process: irq_save/irq_restore are
 * no-ops (the harness is single-threaded, nothing interrupts it). */
#include "kernel/io.h"
#define irq_save() ((u64)0)
#define irq_restore(f) ((void)(f))
#include "drivers/virtio.h"
#undef VIRTIO_DRIVER
#define VIRTIO_DRIVER(drv) const struct virtio_driver *const vnet_host_driver = &(drv)
#include "drivers/virtio_console.c"
