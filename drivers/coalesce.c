/* Interrupt coalescing policy. Integer arithmetic only.
 *
 * ADAPTIVE borrows its shape from Linux's net_dim (measure over a window of
 * events, move along a small table of profiles, undo a step that cost
 * throughput, back off from re-trying it) but not its objective: net_dim
 * climbs while events per ms keep falling, which under a steady load ends at
 * the top profile whatever the rate. vireo instead aims at a wakeup budget:
 *
 *   profile k gathers F_k = 2^k frames (k = 0..6, so 1..64) and holds a
 *   partial batch at most COAL_ADAPT_USECS (0 for k = 0).
 *   After each window (COAL_WIN_WAKEUPS wakeups or COAL_WIN_NS, whichever
 *   ends first) with measured frame rate R frames/s:
 *     up   = the least k with R <= T * F_k         (T = COAL_TARGET_WAKEUPS)
 *     down = the least k with R <= T * F_k * 3 / 4
 *   step up to `up` if it is above the current profile, else down to `down`
 *   if that is below it; in between, stay (hysteresis). So below T frames/s
 *   every frame interrupts at once (no added latency), and above it the
 *   interrupt rate stays near T while the batch grows with the rate.
 *
 * Why the hold time is the same for every profile: a profile is chosen when
 * R is between T*F_{k-1} and T*F_k, so its batch fills within
 * F_k / (T*F_{k-1}) = 2/T seconds (62.5 us at T = 32000). A hold of 80 us
 * lets the count, not the timer, end batches over the whole range, and it is
 * the worst latency any frame pays for coalescing. Frame-proportional holds
 * (e.g. {4,8},{8,16},..) fill only above 500k frames/s and would make the
 * timer fire before the count at every lower rate.
 *
 * Throughput guard (the net_dim idea): if the window after a step up shows
 * the rate fell by more than a quarter, the step slowed a latency-bound flow
 * (request/response waiting on our hold), so step back and refuse step-ups
 * for COAL_HOLD_MIN windows, doubling to COAL_HOLD_MAX on each repeat.
 *
 * Idle: no frame for COAL_IDLE_NS, or a window without frames, goes straight
 * to profile 0 and forgets the guard's history. */
#include "kernel/types.h"
#include "drivers/coalesce.h"

#define COAL_TARGET_WAKEUPS	32000u		/* per second, per queue */
#define COAL_ADAPT_USECS	80u		/* hold of every profile above 0 */
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

static u16 level_frames(const struct coal_policy *p, unsigned k)
{
	u16 f = (u16)(1u << k);

	return f < p->max_frames ? f : p->max_frames;
}

static unsigned top_level(const struct coal_policy *p)
{
	unsigned k = 0;

	while (k + 1 < COAL_LEVELS && (1u << (k + 1)) <= p->max_frames)
		k++;
	return k;
}

static void set_params(struct coal_policy *p, u16 frames, u32 usecs)
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

static void set_level(struct coal_policy *p, unsigned k)
{
	p->level = (u8)k;
	set_params(p, level_frames(p, k), k ? COAL_ADAPT_USECS : 0);
}

/* Least level k with fps * den <= T * F_k * num; the top level if none. */
static unsigned level_for(const struct coal_policy *p, u64 fps, u32 num, u32 den)
{
	unsigned top = top_level(p);

	for (unsigned k = 0; k < top; k++)
		if (fps * den <= (u64)COAL_TARGET_WAKEUPS * level_frames(p, k) * num)
			return k;
	return top;
}

static void open_window(struct coal_policy *p, u64 now)
{
	p->win_open = true;
	p->win_start_ns = now;
	p->win_frames = 0;
	p->win_wakeups = 0;
}

static void idle_reset(struct coal_policy *p, u64 now)
{
	if (p->level != 0)
		p->stats.idle_resets++;
	set_level(p, 0);
	p->probing = false;
	p->hold = 0;
	p->backoff = COAL_HOLD_MIN;
	open_window(p, now);
}

static void decide(struct coal_policy *p, u64 fps)
{
	unsigned up, down;
	bool held = p->hold > 0;

	if (held)
		p->hold--;
	if (p->probing) {
		p->probing = false;
		if (fps * 4 < p->probe_fps * 3) {
			set_level(p, p->prev_level);
			p->hold = p->backoff;
			p->backoff = p->backoff < COAL_HOLD_MAX / 2 ? p->backoff * 2 : COAL_HOLD_MAX;
			p->stats.reverts++;
			return;
		}
		p->backoff = COAL_HOLD_MIN;
	}
	up = level_for(p, fps, 1, 1);
	down = level_for(p, fps, 3, 4);
	if (up > p->level) {
		if (held)
			return;
		p->prev_level = p->level;
		p->probe_fps = fps;
		p->probing = true;
		set_level(p, up);
	} else if (down < p->level) {
		set_level(p, down);
	}
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
		set_params(p, f, u);
		break;
	case COAL_ADAPTIVE:
		if (p->level > top_level(p))
			set_level(p, top_level(p));
		break;
	default:
		set_params(p, 1, 0);
		break;
	}
}

static bool str_eq(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* Decimal digits up to stop; rejects empty, junk and values above max
 * (which also rules out overflow). */
static int parse_num(const char **sp, char stop, u32 max, u32 *out)
{
	const char *s = *sp;
	u32 v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		u32 d = (u32)(*s - '0');

		if (v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	if (*s != stop)
		return -EINVAL;
	*sp = s + (stop ? 1 : 0);
	*out = v;
	return 0;
}

int coal_parse(const char *s, enum coal_mode *mode, u16 *frames, u32 *usecs)
{
	u32 f, u;

	if (!s)
		return -EINVAL;
	if (str_eq(s, "off") || str_eq(s, "adaptive")) {
		*mode = s[0] == 'o' ? COAL_OFF : COAL_ADAPTIVE;
		*frames = 1;
		*usecs = 0;
		return 0;
	}
	if (parse_num(&s, ',', COAL_FRAMES_MAX, &f) || parse_num(&s, '\0', COAL_USECS_MAX, &u))
		return -EINVAL;
	if (f == 0 || (f > 1 && u == 0))
		return -EINVAL;
	*mode = COAL_FIXED;
	*frames = (u16)f;
	*usecs = u;
	return 0;
}

void coal_sample(struct coal_policy *p, u64 now_ns, u32 frames, u32 interrupts)
{
	u64 elapsed, fps;

	p->stats.wakeups++;
	p->stats.interrupts += interrupts;
	p->stats.frames += frames;
	if (p->mode != COAL_ADAPTIVE)
		return;

	if (p->seen_frame && now_ns - p->last_frame_ns >= COAL_IDLE_NS &&
	    (frames || p->level)) {
		/* Frames after a quiet spell arrived before this window could
		 * have measured them: start afresh and do not count them. */
		idle_reset(p, now_ns);
		if (frames)
			p->last_frame_ns = now_ns;
		return;
	}
	if (frames) {
		p->seen_frame = true;
		p->last_frame_ns = now_ns;
	}
	if (!p->win_open) {
		open_window(p, now_ns);	/* these frames predate the window */
		return;
	}
	p->win_frames += frames;
	p->win_wakeups++;
	elapsed = now_ns - p->win_start_ns;
	if (p->win_wakeups < COAL_WIN_WAKEUPS && elapsed < COAL_WIN_NS)
		return;
	if (p->win_frames == 0) {
		idle_reset(p, now_ns);
		return;
	}
	fps = (u64)p->win_frames * NS_PER_S / (elapsed ? elapsed : 1);
	decide(p, fps < COAL_FPS_CAP ? fps : COAL_FPS_CAP);
	open_window(p, now_ns);
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
