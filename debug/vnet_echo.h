/* vnet.echo: the raw-frame reflector, an upper layer of virtio-net of its
 * own (debug/vnet_echo.c), for testing the driver before the IP stack. */
#ifndef VIREO_VNET_ECHO_H
#define VIREO_VNET_ECHO_H

#include "lib/types.h"

/* With on, the first virtio-net device is taken by the reflector (from the
 * loop's next pass, so after the probe) instead of the IP stack, and sends
 * every frame back to its sender. */
void vnet_set_echo(bool on);
/* Before drivers probe: does the above when the command line says vnet.echo
 * (a key of this file's); returns whether it did, so that the caller leaves
 * the network and the appliance off. Queued this early, the attach runs
 * ahead of any receive work in the loop's first pass: no frame arrives
 * before the reflector. */
bool vnet_echo_start(void);

#endif
