/* virtio-net's feature negotiation (vnet_features.c): the names the bus
 * logs and the fixup it applies before offering the driver's features. */
#ifndef VIREO_VNET_FEATURES_H
#define VIREO_VNET_FEATURES_H

#include "lib/types.h"
#include "drivers/virtio/virtio.h"

extern const struct virtio_feature_name vnet_net_feature_names[];

/* The driver's wanted features, with vnet.tso=/vnet.guest_tso= applied and
 * receive TSO only with MRG_RXBUF, then vnet_features_fixup()'s rules. */
u64 vnet_net_features_fixup(u64 want);

#endif
