/* The appliance: what runs on the network once lwIP is up. */
#ifndef VIREO_NET_APP_APP_H
#define VIREO_NET_APP_APP_H

#include "kernel/types.h"

/* Starts the appliance's services (HTTP on http_port, echo on 7) and
 * registers its metrics. Called once, before the netif comes up. */
int app_start(u16 http_port);

#endif
