/* virtio-console driver: console ports become console sinks and shell
 * input; a port named VCONS_LOG_PORT_NAME receives the kernel log. */
#ifndef VIREO_VIRTIO_CONSOLE_H
#define VIREO_VIRTIO_CONSOLE_H

/* The MULTIPORT port name that gets the kernel log (a sink with replay):
 * QEMU `-device virtserialport,name=vireo.log,chardev=...`. */
#define VCONS_LOG_PORT_NAME "vireo.log"

/* Prints each bound console device's ports and their counters. Loop context. */
void vcons_print_stats(void);

#endif
