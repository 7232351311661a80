/* The network: lwIP on the first virtio-net device (net/netif_vnet.c), its
 * address configuration, and the appliance on top. */
#ifndef VIREO_NET_NET_H
#define VIREO_NET_NET_H

#include "kernel/types.h"

/* Starts lwIP, binds the netif to the first virtio-net device, configures
 * the address (ip=/gw= or DHCP) and starts the appliance. Prints
 * `vireo: ready ip=<address> http=<port>` once an IPv4 address is bound.
 * Returns 0, or a negative error (no device, no memory) after logging it. */
int net_init(void);

struct vnet;
/* The device the netif runs on, or NULL (for counters). */
struct vnet *net_device(void);

#endif
