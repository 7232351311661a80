/* Test-only views of net/netif/netif_vnet.c's transmit path (netif_vnet_host.c). */
#ifndef VIREO_NETIF_VNET_HOST_H
#define VIREO_NETIF_VNET_HOST_H

#include "drivers/virtio/net/virtio_net.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"

void nvh_setup(struct vnet *fake);
void nvh_setup_tso(struct vnet *fake);
void nvh_flush(void);
void nvh_teardown(void);
err_t nvh_linkoutput(struct pbuf *p);
void nvh_tx_done(void *token);
void nvh_link(bool up);
unsigned nvh_backlog_len(void);
struct netif *nvh_netif_add(const u8 mac[6]);
void nvh_netif_remove(void);
void nvh_announce(void);

#endif
