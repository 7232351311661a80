/* Interrupt coalescing policy. Integer arithmetic only.
 *
 * ADAPTIVE borrows its shape from Linux's net_dim (measure over a window of
 * events, move along a small table of profiles, undo a step that cost
 * throughput, back off from re-trying it) and aims at CPU time: a wakeup is
 * worth saving only when the CPU is busy and wakeups are not yet amortised
 * over many frames. NAPI polling already gathers whatever arrived while the
 * CPU was busy, so a saturated queue that drains 30 frames per wakeup gains
 * nothing from a hold, and an idle CPU has nothing to gain at all: either way
 * the latency profile stays.
 *
 *   profile k gathers F_k = 2^k frames (k = 0..6, so 1..64) and holds a
 *   partial batch at most COAL_ADAPT_USECS (0 for k = 0).
 *   Each window (COAL_WIN_WAKEUPS wakeups or COAL_WIN_NS, whichever ends
 *   first) measures the frame rate R, the frames per wakeup f and the busy
 *   fraction u of the CPU (time not halted, which the caller counts). Then:
 *     u >= 1/2 and f < COAL_AMORTISED: step up to the least k with
 *       F_k >= 2f, so the count is above what polling gathers by itself
 *       (a smaller step would change nothing and be undone), unless R
 *       does not bring F_k frames within the hold (F_k > R x hold): then
 *       the timer would end every batch, a pure delay;
 *     u < 1/4: step down one profile (the CPU has room again);
 *     otherwise stay (hysteresis).
 *
 * Every step up is judged by the window after it (the net_dim guard): it is
 * undone if R fell by more than a quarter (the hold slowed a latency-bound
 * flow, request/response waiting on it) or if f did not grow by an eighth
 * (the hold, not the count, ends batches already: a bigger count only adds
 * latency). After an undo, step-ups are refused for COAL_HOLD_MIN windows,
 * doubling to COAL_HOLD_MAX on each repeat; a step that is kept resets that.
 *
 * The hold is the same for every profile and is the worst latency a frame
 * pays for coalescing, only ever while the CPU is at least half busy.
 *
 * Idle: no frame for COAL_IDLE_NS, or a window without frames, goes straight
 * to profile 0 and forgets the guard's history. */
#include "lib/types.h"
#include "drivers/virtio/net/coalesce.h"
#include "lib/parse.h"
#include "lib/string.h"

#define COAL_ADAPT_USECS	COAL_USECS_MAX	/* hold of every profile above 0 */
#define COAL_LEVELS		7u		/* F = 1, 2, 4 .. 64 */
#define COAL_WIN_WAKEUPS	16u
#define COAL_WIN_NS		1000000ull	/* 1 ms */
#define COAL_IDLE_NS		2000000ull	/* 2 ms */
#define COAL_HOLD_MIN		8u		/* windows */
#define COAL_HOLD_MAX		1024u
#define COAL_FPS_CAP		1000000000000ull	/* keeps the products below in u64 */
#define NS_PER_S		1000000000ull

_Static_assert((1u << (COAL_LEVELS - 1)) == COAL_FRAMES_MAX, "table tops at the bound");
_Static_assert(COAL_ADAPT_USECS <= COAL_USECS_MAX, "profile within bounds");

static u16 coal_level_frames(const struct coal_policy *p, unsigned k)
{
	u16 f = (u16)(1u << k);

	return f < p->max_frames ? f : p->max_frames;
}

static unsigned coal_top_level(const struct coal_policy *p)
{
	unsigned k = 0;

	while (k + 1 < COAL_LEVELS && (1u << (k + 1)) <= p->max_frames)
		k++;
	return k;
}

static void coal_set_params(struct coal_policy *p, u16 frames, u32 usecs)
{
	if (usecs == 0 || frames <= 1) {	/* keep: usecs == 0 iff frames == 1 */
		frames = 1;
		usecs = 0;
	}
	if (frames != p->frames || usecs != p->usecs)
		p->stats.changes++;
	p->frames = frames;
	p->usecs = usecs;
}

static void coal_set_level(struct coal_policy *p, unsigned k)
{
	p->level = (u8)k;
	coal_set_params(p, coal_level_frames(p, k), k ? COAL_ADAPT_USECS : 0);
}

/* Least level whose count is at least twice f = frames / wakeups; the top
 * level if none. */
static unsigned coal_level_above(const struct coal_policy *p, u32 frames, u32 wakeups)
{
	unsigned top = coal_top_level(p);

	for (unsigned k = 1; k < top; k++)
		if ((u64)coal_level_frames(p, k) * wakeups >= 2ull * frames)
			return k;
	return top;
}

static void coal_open_window(struct coal_policy *p, u64 now, u64 busy)
{
	p->win_open = true;
	p->win_start_ns = now;
	p->win_busy_ns = busy;
	p->win_frames = 0;
	p->win_wakeups = 0;
}

static void coal_idle_reset(struct coal_policy *p, u64 now, u64 busy)
{
	if (p->level != 0)
		p->stats.idle_resets++;
	coal_set_level(p, 0);
	p->probing = false;
	p->hold = 0;
	p->backoff = COAL_HOLD_MIN;
	coal_open_window(p, now, busy);
}

/* One window's verdict: fps its frame rate, frames/wakeups its batches,
 * busy/elapsed the CPU's busy fraction over it. */
static void coal_decide(struct coal_policy *p, u64 fps, u32 frames, u32 wakeups, u64 busy, u64 elapsed)
{
	bool held = p->hold > 0;
	unsigned k;

	if (held)
		p->hold--;
	if (p->probing) {
		p->probing = false;
		/* undone if the rate fell by a quarter, or f = frames / wakeups
		 * did not grow by an eighth over the window before the step */
		if (fps * 4 < p->probe_fps * 3 ||
		    (u64)frames * p->probe_wakeups * 8 < (u64)p->probe_frames * wakeups * 9) {
			coal_set_level(p, p->prev_level);
			p->hold = p->backoff;
			p->backoff = p->backoff < COAL_HOLD_MAX / 2 ? p->backoff * 2 : COAL_HOLD_MAX;
			p->stats.reverts++;
			return;
		}
		p->backoff = COAL_HOLD_MIN;
	}
	if (busy * 4 < elapsed) {
		if (p->level > 0)
			coal_set_level(p, p->level - 1u);
		return;
	}
	if (busy * 2 < elapsed || frames >= COAL_AMORTISED * wakeups || held)
		return;
	if (p->level >= coal_top_level(p))
		return;
	k = MAX(coal_level_above(p, frames, wakeups), p->level + 1u);
	/* A count the rate does not fill within the hold: the timer, not the
	 * count, would end every batch, each frame waiting for it (a
	 * request/response flow at one connection: a request or an ACK
	 * alone, held up to COAL_ADAPT_USECS on the critical path). */
	if ((NS_PER_S << k) > fps * (COAL_ADAPT_USECS * 1000u))	/* 2^k >= F_k */
		return;
	p->prev_level = p->level;
	p->probe_fps = fps;
	p->probe_frames = frames;
	p->probe_wakeups = wakeups;
	p->probing = true;
	coal_set_level(p, k);
}

void coal_init(struct coal_policy *p, enum coal_mode mode, u16 frames, u32 usecs)
{
	*p = (struct coal_policy){
		.mode = mode,
		.frames = 1,
		.max_frames = COAL_FRAMES_MAX,
		.fixed_frames = frames,
		.fixed_usecs = usecs,
		.backoff = COAL_HOLD_MIN,
	};
	if (mode == COAL_FIXED)
		coal_limit_frames(p, COAL_FRAMES_MAX);
	p->stats.changes = 0;
}

void coal_limit_frames(struct coal_policy *p, u16 max_frames)
{
	u16 f;
	u32 u;

	if (max_frames == 0)
		max_frames = 1;
	if (max_frames > COAL_FRAMES_MAX)
		max_frames = COAL_FRAMES_MAX;
	p->max_frames = max_frames;
	switch (p->mode) {
	case COAL_FIXED:
		f = p->fixed_frames < max_frames ? p->fixed_frames : max_frames;
		u = p->fixed_usecs < COAL_USECS_MAX ? p->fixed_usecs : COAL_USECS_MAX;
		coal_set_params(p, f, u);
		break;
	case COAL_ADAPTIVE:
		if (p->level > coal_top_level(p))
			coal_set_level(p, coal_top_level(p));
		break;
	default:
		coal_set_params(p, 1, 0);
		break;
	}
}

/* Decimal digits up to stop; rejects empty, junk and values above max
 * (which also rules out overflow). */
static int coal_parse_num(const char **sp, char stop, u32 max, u32 *out)
{
	const char *s = *sp;
	u64 v;

	if (parse_dec(&s, max, &v) || *s != stop)
		return -EINVAL;
	*sp = s + (stop ? 1 : 0);
	*out = (u32)v;
	return 0;
}

int coal_parse(const char *s, enum coal_mode *mode, u16 *frames, u32 *usecs)
{
	u32 f, u;

	if (!s)
		return -EINVAL;
	if (strcmp(s, "off") == 0 || strcmp(s, "adaptive") == 0) {
		*mode = s[0] == 'o' ? COAL_OFF : COAL_ADAPTIVE;
		*frames = 1;
		*usecs = 0;
		return 0;
	}
	if (coal_parse_num(&s, ',', COAL_FRAMES_MAX, &f) || coal_parse_num(&s, '\0', COAL_USECS_MAX, &u))
		return -EINVAL;
	if (f == 0 || (f > 1 && u == 0))
		return -EINVAL;
	*mode = COAL_FIXED;
	*frames = (u16)f;
	*usecs = u;
	return 0;
}

void coal_sample(struct coal_policy *p, u64 now_ns, u32 frames, u32 interrupts, u64 busy_ns)
{
	u64 elapsed, busy, fps;

	p->stats.wakeups++;
	p->stats.interrupts += interrupts;
	p->stats.frames += frames;
	if (p->mode != COAL_ADAPTIVE)
		return;

	if (p->seen_frame && now_ns - p->last_frame_ns >= COAL_IDLE_NS &&
	    (frames || p->level)) {
		/* Frames after a quiet spell arrived before this window could
		 * have measured them: start afresh and do not count them. */
		coal_idle_reset(p, now_ns, busy_ns);
		if (frames)
			p->last_frame_ns = now_ns;
		return;
	}
	if (frames) {
		p->seen_frame = true;
		p->last_frame_ns = now_ns;
	}
	if (!p->win_open) {
		coal_open_window(p, now_ns, busy_ns);	/* these frames predate the window */
		return;
	}
	p->win_frames += frames;
	p->win_wakeups++;
	elapsed = now_ns - p->win_start_ns;
	if (p->win_wakeups < COAL_WIN_WAKEUPS && elapsed < COAL_WIN_NS)
		return;
	if (p->win_frames == 0) {
		coal_idle_reset(p, now_ns, busy_ns);
		return;
	}
	if (!elapsed)
		elapsed = 1;
	/* busy time is the caller's clock: never more than the window, never
	 * backwards */
	busy = busy_ns > p->win_busy_ns ? busy_ns - p->win_busy_ns : 0;
	if (busy > elapsed)
		busy = elapsed;
	fps = (u64)p->win_frames * NS_PER_S / elapsed;
	coal_decide(p, fps < COAL_FPS_CAP ? fps : COAL_FPS_CAP, p->win_frames, p->win_wakeups, busy, elapsed);
	coal_open_window(p, now_ns, busy_ns);
}

u16 coal_frames(const struct coal_policy *p)
{
	return p->frames;
}

u32 coal_usecs(const struct coal_policy *p)
{
	return p->usecs;
}

u64 coal_deadline(const struct coal_policy *p, u64 since_ns, bool device_side)
{
	if (p->frames <= 1)
		return COAL_NO_DEADLINE;
	if (device_side)
		return p->mode == COAL_ADAPTIVE ? since_ns + COAL_IDLE_NS : COAL_NO_DEADLINE;
	return since_ns + (u64)p->usecs * 1000u;
}
