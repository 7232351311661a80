/* The netif's side of transmit segmentation offload: frames lwIP hands to
 * the netif in one burst are offered to tso_merge; what merges goes out as
 * one pbuf chain (a header copy, then the segments' payload, zero-copy) and
 * the rest as it came, in order. The burst ends when the loop runs the
 * flush work queued by its first frame: the same loop pass, before the
 * driver's deferred kick would have told the device about the frames
 * anyway, so no frame waits for a merge partner that has not been sent. */
#ifndef VIREO_TSO_OUT_H
#define VIREO_TSO_OUT_H

#include "lib/types.h"
#include "lwip/err.h"

struct pbuf;

/* xmit sends one frame the caller still holds a reference to (it takes its
 * own, as linkoutput does). v4, v6: the families the device segments;
 * max_pieces: the scatter-gather entries a frame may use. */
void tso_out_init(err_t (*xmit)(struct pbuf *p), bool v4, bool v6, unsigned max_pieces);
/* linkoutput with the offload on: queues p (with a reference of its own)
 * into the burst, or sends it; ERR_OK unless an unmergeable frame fails. */
err_t tso_out(struct pbuf *p);
/* Ends the burst: sends what is queued. */
void tso_out_flush(void);
/* The gso_size a frame built here must be sent with, or 0. */
u16 tso_out_gso_size(const struct pbuf *p);

struct tso_out_stats {
	u64 merged_frames;	/* frames built from two or more segments */
	u64 merged_segments;	/* segments that went into them */
	u64 no_record;		/* bursts sent segment by segment: records at their cap, or no heap */
	u64 no_pbuf;		/* ... or no pbuf for the payload chain */
};
extern struct tso_out_stats tso_out_stats;

#endif
