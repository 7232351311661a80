/* coalesce: the per-queue interrupt coalescing policy (docs/architecture.md,
 * "Interrupt coalescing"). Decides how many completions (frames) and how
 * long (usecs) a queue may gather before it interrupts; the driver applies
 * the decision either device-side (VIRTIO_NET_F_NOTF_COAL / VQ_NOTF_COAL)
 * or driver-side
 * (virtq_enable_cb_delayed(frames) plus a timer at coal_deadline()). Integer
 * only, no clock of its own: time comes in as monotonic nanoseconds.
 *
 * Driver contract, once per wakeup (interrupt or coal_deadline timer):
 *   poll until the queue is empty or the budget is spent (NAPI style);
 *   coal_sample(p, now, frames handled since the last call, interrupts taken
 *               since the last call, 0 for a timer wakeup, the CPU's busy
 *               time so far: any monotonic count of ns not spent halted);
 *   re-arm with coal_frames(p) and coal_usecs(p): device-side,
 *     virtq_enable_cb() and, only when the values changed, NOTF_COAL
 *     VQ_SET/RX_SET with max_packets = frames, max_usecs = usecs; driver-side,
 *     virtq_enable_cb_delayed(vq, coal_frames(p)); either way poll again if
 *     the enable returns false;
 *   arm a timer at coal_deadline(p, now, device_side) unless it is
 *     COAL_NO_DEADLINE: driver-side it bounds a partial batch; device-side
 *     (the device bounds batches itself) it only lets ADAPTIVE see that the
 *     queue went quiet, through a zero-frame sample. */
#ifndef VIREO_COALESCE_H
#define VIREO_COALESCE_H

#include "lib/types.h"

#define COAL_FRAMES_MAX		64u	/* default bound on frames per interrupt */
#define COAL_USECS_MAX		200u	/* bound on the usecs hold time */
#define COAL_AMORTISED		16u	/* adaptive: frames per wakeup that need no help */
#define COAL_NO_DEADLINE	(~(u64)0)

enum coal_mode {
	COAL_OFF,	/* an interrupt per completion: frames 1, usecs 0 */
	COAL_FIXED,	/* the frames/usecs given to coal_init */
	COAL_ADAPTIVE,	/* chosen from the measured load, see coalesce.c */
};

struct coal_stats {
	u64 wakeups;		/* coal_sample() calls */
	u64 interrupts;		/* interrupts reported to coal_sample() */
	u64 frames;		/* frames reported to coal_sample() */
	u32 changes;		/* times frames/usecs changed (adaptive) */
	u32 idle_resets;	/* drops to the latency profile on idle */
	u32 reverts;		/* step-ups undone: the rate fell or batches did not grow */
};

/* One queue's policy. Fields are private to coalesce.c; tests read them. */
struct coal_policy {
	enum coal_mode mode;
	u16 frames;		/* in force: interrupt after this many, >= 1 */
	u32 usecs;		/* in force: or after this long; 0 iff frames == 1 */
	u16 max_frames;		/* bound, 1..COAL_FRAMES_MAX */
	u16 fixed_frames;	/* FIXED: as configured, before the bound */
	u32 fixed_usecs;
	/* adaptive state */
	u8  level;		/* index into the profile table */
	u8  prev_level;		/* level before the last step up */
	bool probing;		/* last decision was a step up, judge it next */
	bool seen_frame;	/* last_frame_ns is valid */
	bool win_open;		/* a measuring window is running */
	u16 hold;		/* windows left in which step-ups are refused */
	u16 backoff;		/* next hold length after a revert */
	u32 win_frames, win_wakeups;
	u64 win_start_ns, win_busy_ns, last_frame_ns;
	u64 probe_fps;		/* the window that triggered the step up: */
	u32 probe_frames, probe_wakeups;	/* its rate and batches */
	struct coal_stats stats;
};

/* Set up p (caller-owned) in mode. FIXED takes frames/usecs, clamped to
 * 1..COAL_FRAMES_MAX and 0..COAL_USECS_MAX, with usecs == 0 forcing
 * frames = 1 (no unbounded holds); OFF and ADAPTIVE ignore them and start at
 * frames 1, usecs 0. */
void coal_init(struct coal_policy *p, enum coal_mode mode, u16 frames, u32 usecs);

/* Lower the frames bound to what the queue can hold (e.g. ring size / 2, so
 * the device never runs out of buffers before the count is reached).
 * max_frames 0 is taken as 1. Applies at once. */
void coal_limit_frames(struct coal_policy *p, u16 max_frames);

/* Parse the command-line value of coalesce=: "off", "adaptive" or
 * "<frames>,<usecs>" in decimal (frames 1..COAL_FRAMES_MAX, usecs
 * 0..COAL_USECS_MAX, usecs > 0 when frames > 1). Returns 0 with the
 * outputs set (FIXED for the pair), or -EINVAL with them untouched. */
int coal_parse(const char *s, enum coal_mode *mode, u16 *frames, u32 *usecs);

/* Report one wakeup (see the contract above). now_ns must not go
 * backwards; busy_ns should not either (a step back counts as idle). May
 * change coal_frames()/coal_usecs(). */
void coal_sample(struct coal_policy *p, u64 now_ns, u32 frames, u32 interrupts, u64 busy_ns);

/* Completions to gather before interrupting (>= 1). */
u16 coal_frames(const struct coal_policy *p);

/* Longest a gathered completion may wait, in microseconds (0 when
 * coal_frames() is 1). */
u32 coal_usecs(const struct coal_policy *p);

/* When the driver must poll even without an interrupt, given the time it
 * re-armed the queue (no completion pending then is older than that).
 * Driver-side (device_side false): since_ns + coal_usecs(). Device-side
 * (NOTF_COAL programmed with the same values): since_ns + the idle time
 * (2 ms), for ADAPTIVE only. COAL_NO_DEADLINE when no timer is needed: every
 * completion interrupts (coal_frames() == 1), or device-side OFF/FIXED. */
u64 coal_deadline(const struct coal_policy *p, u64 since_ns, bool device_side);

#endif
