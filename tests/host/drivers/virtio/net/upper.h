/* upper: a checking upper layer for drivers/virtio/net/virtio_net.c (struct
 * vnet_upper). It checks every frame handed up (chain shape, segment
 * bounds, lengths, flags), keeps a copy of the last one, holds the
 * buffers until told to release them (in any order), checks that tx_done
 * comes exactly once per sent token, and records link changes. Violations
 * are counted in errors, with the last one in error. */
#ifndef VIREO_UPPER_H
#define VIREO_UPPER_H

#include "drivers/virtio/net/virtio_net.h"
#include "tests/host/simdev/vnetdev.h"

#define UP_HOLD_MAX	4096
#define UP_TOKENS	1024

struct up_token {
	bool sent, done;
	u32 len;
};

struct upper {
	struct vnet *vn;
	bool release_now;		/* give buffers back inside rx() */
	unsigned frames;		/* frames received */
	u64 bytes;
	struct vnet_rxbuf *held[UP_HOLD_MAX];	/* segments held, in arrival order */
	unsigned nheld;
	u8 *last;			/* the last frame's bytes (VNET_FRAME_MAX) */
	u32 last_len;
	unsigned last_flags, last_segs;
	bool link, link_known;
	unsigned link_ups, link_downs;
	unsigned announces;		/* announce() calls */
	void (*on_announce)(struct upper *u);	/* run inside announce(), if set */
	struct up_token tok[UP_TOKENS];
	unsigned tx_sent, tx_done;
	unsigned errors;
	char error[160];
};

void up_init(struct upper *u);
void up_fini(struct upper *u);
/* vnet_attach; returns its result. */
int up_attach(struct upper *u, struct vnet *vn);
/* Releases up to n held segments: oldest first, or newest first. */
void up_release(struct upper *u, unsigned n, bool newest_first);
void up_release_all(struct upper *u);
/* Sends frame through vnet_tx in nseg pieces (1..VNET_TX_MAX_SG) with
 * token tok[t]. Returns vnet_tx's result. */
int up_send(struct upper *u, unsigned t, const u8 *frame, u32 len, unsigned nseg, unsigned flags);
/* Tokens sent and not yet given back. */
unsigned up_tx_outstanding(const struct upper *u);
/* Checks buffer conservation through vnet_get_stats: posted + held + free
 * == total, held == what this layer holds, posted == the ring's in-flight
 * count. Returns 0 or counts an error and returns -1. */
int up_check(struct upper *u);

#endif
