/* The appliance: what runs on the network once lwIP is up. */
#ifndef VIREO_NET_APP_APP_H
#define VIREO_NET_APP_APP_H

#include "lib/types.h"

/* Starts the appliance's services as its keys say (HTTP on http=, then the
 * apps: apps/echo's echo on 7 when echo= asks) and registers its metrics and
 * the power-off drain.
 * Called once by the composition root, after netif_vnet_add() and before
 * the netif comes up (listeners bind to any address). Returns 0, or the
 * HTTP server's error after logging it. */
int app_start(void);

/* The HTTP server's port (http=), for the ready line. */
u16 app_http_port(void);

/* http= changed after boot (cloud metadata, runtime/metadata.c): moves the
 * listener to the new port and the ready line with it, or warns and keeps
 * the old port (http= goes back to it). */
void app_reapply_http(void);

#endif
