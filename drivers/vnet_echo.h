/* vnet.echo: the raw-frame reflector, an upper layer of virtio-net of its
 * own (drivers/vnet_echo.c), for testing the driver before the IP stack. */
#ifndef VIREO_VNET_ECHO_H
#define VIREO_VNET_ECHO_H

#include "kernel/types.h"

/* Before drivers probe: with on, the first virtio-net device is taken by the
 * reflector (from the loop's first pass, so after the probe) instead of
 * the IP stack, and sends every frame back to its sender. */
void vnet_set_echo(bool on);

#endif
