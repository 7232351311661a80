/* vnet_gso: the transmit side of segmentation offload (HOST_TSO4/6) and the
 * feature dependencies of virtio-net. Pure code: no rings, no device. */
#ifndef VIREO_VNET_GSO_H
#define VIREO_VNET_GSO_H

#include "lib/types.h"

/* Drops every virtio-net feature whose requirement (virtio 1.2 §5.1.3.1)
 * is missing from `features`, repeatedly, so a chain (HOST_ECN needs
 * HOST_TSO4 or 6, which need CSUM) falls as a whole. Other bits pass. */
u64 vnet_features_fixup(u64 features);

/* Completes a transmit header (hdr_len 10 or 12 bytes, already filled by
 * vnet_hdr_tx_hdr with NEEDS_CSUM at csum_start) for a TCP frame the device is
 * to cut into segments of gso_size payload bytes: gso_type TCPV4 or TCPV6
 * from the frame's EtherType (allowed only where tso4 / tso6 say so),
 * hdr_len = csum_start + the TCP header. frame holds the first hlen bytes of
 * the frame (Ethernet first). Never sets the ECN flag (no HOST_ECN).
 * Returns 0, or -ENOTSUP (not such a frame, family not allowed, headers not
 * within hlen, gso_size 0; nothing written). */
int vnet_tx_gso_hdr(u8 *vhdr, const u8 *frame, u32 hlen, u16 csum_start, u16 gso_size, bool tso4,
		    bool tso6);

#endif
