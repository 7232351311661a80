/* Per-instance configuration from the cloud's metadata server
 * (runtime/metadata.c; metadata=gce|aws|auto). */
#ifndef VIREO_NET_APP_METADATA_H
#define VIREO_NET_APP_METADATA_H

/* With metadata= set, asks net/netif/netup.c to run the metadata step between
 * the address and the ready line (netup_set_gate). Call before the netif
 * comes up (app_start does). */
void metadata_start(void);

#endif
