/* virtio over MMIO (virtio 1.2 §4.2): the third transport behind
 * struct virtio_transport_ops, for platforms without PCI (QEMU microvm,
 * Firecracker). Windows come from the command line (virtio_mmio.device=)
 * and from the devices ACPI published (acpi_devices()). */
#ifndef VIREO_VIRTIO_MMIO_H
#define VIREO_VIRTIO_MMIO_H

#include "drivers/virtio/virtio_mmio_parse.h"

/* Filled by the command line (virtio_mmio.device=, registered in virtio_mmio.c). */
extern struct vmmio_list virtio_mmio_windows;

/* Adds the windows ACPI published, then maps and checks every window and
 * hands each device to the virtio bus. */
void virtio_mmio_probe(void);

#endif
