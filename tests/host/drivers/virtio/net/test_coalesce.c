/* drivers/virtio/net/coalesce.c against a discrete-event simulation of one receive
 * queue: frames arrive on a schedule; the simulated device interrupts when
 * coal_frames() completions are pending or (device mode, NOTF_COAL) when
 * coal_usecs() have passed since the first pending one; the simulated driver
 * polls poll_ns after a wakeup, calls coal_sample(), re-arms and arms its
 * own timer at coal_deadline() as coalesce.h asks. Every frame's delay is
 * checked against the hold that was in force when it arrived. The CPU is a
 * cost model: each poll adds wake_ns + frames * frame_ns of busy time, which
 * is what coal_sample() is told (processing itself takes no simulated time,
 * so a busy fraction above 1 means an overloaded CPU). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/net/coalesce.h"

#define US		1000ull
#define MS		1000000ull
#define NONE		(~(u64)0)
#define POLL_NS		(1 * US)	/* wakeup to poll */
#define FIFO_CAP	(1u << 14)

enum gen_kind { GEN_PERIODIC, GEN_BURSTS, GEN_PINGPONG };

/* Arrival schedule. PERIODIC: a frame every gap from start until `until`.
 * BURSTS: `burst` frames gap apart, every period. PINGPONG: one frame
 * outstanding; the next arrives `gap` after the previous was polled. */
struct gen {
	enum gen_kind kind;
	u64 start, gap, period, until;
	u32 burst;
	u64 next;
	u32 in_burst;
	u64 burst_start;
};

struct pending {
	u64 t;		/* arrival */
	u64 bound;	/* allowed delay: hold in force at arrival + POLL_NS */
};

struct sim;
typedef void poll_hook(struct sim *s, u64 t, u32 frames, bool irq);

struct sim {
	struct coal_policy p;
	struct gen g;
	u64 wake_ns, frame_ns, busy;	/* CPU cost model */
	bool device_timer;	/* NOTF_COAL semantics (else driver-side only) */
	poll_hook *hook;
	void *hook_ctx;

	struct pending fifo[FIFO_CAP];
	u32 head, tail;
	bool cb_enabled;
	u16 armed_frames;
	u32 armed_usecs;
	u32 since_arm;
	u64 poll_at, dev_timer, drv_timer;
	bool poll_irq;

	/* results */
	u64 frames, interrupts, wakeups, timer_wakeups, empty_wakeups;
	u64 max_delay, sum_delay, late;	/* late: frames over their bound */
	u32 max_fpi;
	u64 tail_frames, tail_interrupts;	/* from tail_from on */
	u64 tail_from;
	u16 max_armed;
	u32 max_armed_usecs;
};

static struct sim S;

static void gen_first(struct gen *g)
{
	g->next = g->start;
	g->in_burst = 0;
	g->burst_start = g->start;
}

static void gen_after_arrival(struct gen *g)
{
	switch (g->kind) {
	case GEN_PERIODIC:
		g->next += g->gap;
		break;
	case GEN_BURSTS:
		if (++g->in_burst < g->burst) {
			g->next += g->gap;
		} else {
			g->in_burst = 0;
			g->burst_start += g->period;
			g->next = g->burst_start;
		}
		break;
	case GEN_PINGPONG:
		g->next = NONE;	/* until it is delivered */
		break;
	}
	if (g->next != NONE && g->next >= g->until)
		g->next = NONE;
}

static void gen_delivered(struct gen *g, u64 now)
{
	if (g->kind == GEN_PINGPONG && now + g->gap < g->until)
		g->next = now + g->gap;
}

static void arm(struct sim *s, u64 now)
{
	s->armed_frames = coal_frames(&s->p);
	s->armed_usecs = coal_usecs(&s->p);
	if (s->armed_frames > s->max_armed)
		s->max_armed = s->armed_frames;
	if (s->armed_usecs > s->max_armed_usecs)
		s->max_armed_usecs = s->armed_usecs;
	s->since_arm = 0;
	s->cb_enabled = true;
	s->dev_timer = NONE;
	s->drv_timer = coal_deadline(&s->p, now, s->device_timer);
}

static void wakeup(struct sim *s, u64 now, bool irq)
{
	s->cb_enabled = false;	/* the handler disables callbacks */
	s->dev_timer = NONE;
	s->drv_timer = NONE;
	if (s->poll_at == NONE) {
		s->poll_at = now + POLL_NS;
		s->poll_irq = false;
	}
	if (irq) {
		s->interrupts++;
		s->poll_irq = true;
	}
}

static void do_poll(struct sim *s, u64 now)
{
	u32 n = 0;

	while (s->head != s->tail && s->fifo[s->head % FIFO_CAP].t <= now) {
		struct pending *f = &s->fifo[s->head++ % FIFO_CAP];
		u64 d = now - f->t;

		if (d > s->max_delay)
			s->max_delay = d;
		if (d > f->bound)
			s->late++;
		s->sum_delay += d;
		n++;
	}
	s->frames += n;
	s->wakeups++;
	if (!s->poll_irq)
		s->timer_wakeups++;
	if (!n)
		s->empty_wakeups++;
	if (s->poll_irq && n > s->max_fpi)
		s->max_fpi = n;
	if (now >= s->tail_from) {
		s->tail_frames += n;
		s->tail_interrupts += s->poll_irq;
	}
	if (s->hook)
		s->hook(s, now, n, s->poll_irq);
	s->busy += s->wake_ns + n * s->frame_ns;
	coal_sample(&s->p, now, n, s->poll_irq ? 1 : 0, s->busy);
	s->poll_at = NONE;
	if (n)
		gen_delivered(&s->g, now);
	arm(s, now);
}

static void arrive(struct sim *s, u64 now)
{
	struct pending *f;

	assert_true(s->tail - s->head < FIFO_CAP);
	f = &s->fifo[s->tail++ % FIFO_CAP];
	f->t = now;
	/* A frame arriving with callbacks off is taken by the poll already on
	 * its way; otherwise the hold armed now bounds it. */
	f->bound = (s->cb_enabled ? (u64)s->armed_usecs * US : 0) + POLL_NS;
	gen_after_arrival(&s->g);
	if (!s->cb_enabled)
		return;
	s->since_arm++;
	if (s->since_arm >= s->armed_frames) {
		wakeup(s, now, true);
		return;
	}
	if (s->device_timer && s->dev_timer == NONE)
		s->dev_timer = now + (u64)s->armed_usecs * US;
}

static u64 min4(u64 a, u64 b, u64 c, u64 d)
{
	u64 m = a < b ? a : b;

	m = m < c ? m : c;
	return m < d ? m : d;
}

/* Run until no event is left; pending frames are always flushed because
 * every hold is bounded. */
static void run(struct sim *s)
{
	for (;;) {
		u64 t = min4(s->g.next, s->poll_at, s->dev_timer, s->drv_timer);

		if (t == NONE)
			break;
		if (s->g.next == t)
			arrive(s, t);		/* arrivals first: a poll at t takes them */
		else if (s->poll_at == t)
			do_poll(s, t);
		else if (s->dev_timer == t)
			wakeup(s, t, s->head != s->tail);
		else if (s->drv_timer == t)
			wakeup(s, t, false);
		if (s->head == s->tail && s->g.next == NONE && s->poll_at == NONE)
			break;		/* drained; only empty timer wakeups would follow */
	}
	assert_int_equal(s->head, s->tail);
}

static void sim_setup(struct sim *s, enum coal_mode mode, u16 frames, u32 usecs,
		      bool device_timer)
{
	memset(s, 0, sizeof *s);
	coal_init(&s->p, mode, frames, usecs);
	s->device_timer = device_timer;
	s->poll_at = NONE;
	s->tail_from = NONE;
	arm(s, 0);
}

static void periodic(struct sim *s, u64 gap, u64 until)
{
	s->g = (struct gen){ .kind = GEN_PERIODIC, .start = 0, .gap = gap, .until = until };
	gen_first(&s->g);
}

static void bursts(struct sim *s, u32 n, u64 gap, u64 period, u64 until)
{
	s->g = (struct gen){ .kind = GEN_BURSTS, .start = 10 * US, .gap = gap,
			     .period = period, .burst = n, .until = until };
	gen_first(&s->g);
}

static void pingpong(struct sim *s, u64 think, u64 until)
{
	s->g = (struct gen){ .kind = GEN_PINGPONG, .start = 10 * US, .gap = think, .until = until };
	gen_first(&s->g);
}

/* ---- idle: a frame every 10 ms, each costing a lot of CPU ------------- */
static void idle_case(bool device_timer)
{
	sim_setup(&S, COAL_ADAPTIVE, 0, 0, device_timer);
	S.frame_ns = 5 * MS;		/* half the CPU: still never a hold */
	periodic(&S, 10 * MS, 1000 * MS);
	run(&S);
	assert_int_equal(S.frames, 100);
	assert_int_equal(S.interrupts, 100);	/* one each ... */
	assert_int_equal(S.timer_wakeups, 0);
	assert_int_equal(S.max_delay, POLL_NS);	/* ... at once: nothing added */
	assert_int_equal(S.max_armed, 1);
	assert_int_equal(S.late, 0);
}

static void test_idle_driver(void **state)
{
	idle_case(false);
}

static void test_idle_device(void **state)
{
	idle_case(true);
}

/* ---- bursty: 1000 frames 1 us apart every 20 ms, 2 us of CPU each ------ */
struct burst_obs {
	u64 period;
	u32 nbursts;
	u32 first_frames[64];	/* frames taken by each burst's first poll */
	bool first_irq[64];
	u16 armed_before[64];	/* coal_frames() when the burst began */
	u32 max_in_burst[64];
	bool seen[64];
};
static struct burst_obs B;

static void burst_hook(struct sim *s, u64 t, u32 frames, bool irq)
{
	u64 rel = t - s->g.start;
	u32 i = (u32)(rel / B.period);

	if (!frames || i >= 64)
		return;
	if (!B.seen[i]) {
		B.seen[i] = true;
		B.first_frames[i] = frames;
		B.first_irq[i] = irq;
		B.armed_before[i] = s->armed_frames;
		B.nbursts++;
	}
	if (irq && frames > B.max_in_burst[i])
		B.max_in_burst[i] = frames;
}

static void bursty_case(bool device_timer)
{
	memset(&B, 0, sizeof B);
	B.period = 20 * MS;
	sim_setup(&S, COAL_ADAPTIVE, 0, 0, device_timer);
	S.frame_ns = 2 * US;
	S.hook = burst_hook;
	bursts(&S, 1000, 1 * US, B.period, 1000 * MS);
	run(&S);
	assert_int_equal(S.frames, 50 * 1000);
	assert_int_equal(B.nbursts, 50);
	for (u32 i = 0; i < 50; i++) {
		/* between bursts the policy is back to an interrupt per frame */
		assert_int_equal(B.armed_before[i], 1);
		assert_int_equal(B.first_frames[i], 2);	/* frame + the one during POLL_NS */
		assert_true(B.first_irq[i]);
		/* during the burst, frames per interrupt rise to the point
		 * where wakeups are amortised */
		assert_true(B.max_in_burst[i] >= COAL_AMORTISED);
	}
	assert_int_equal(S.late, 0);
	assert_true(S.max_delay <= COAL_USECS_MAX * US + POLL_NS);
	/* far fewer interrupts than frames, yet every burst starts at 1 */
	assert_true(S.interrupts * 8 <= S.frames);
	/* back down after each burst (idle rule) */
	assert_true(S.p.stats.idle_resets >= 49);
}

static void test_bursty_driver(void **state)
{
	bursty_case(false);
}

static void test_bursty_device(void **state)
{
	bursty_case(true);
}

/* ---- saturated: a frame every 2 us for 1 s, the CPU 3/4 busy ---------- */
static void saturated_case(bool device_timer)
{
	u64 off_interrupts;

	sim_setup(&S, COAL_OFF, 0, 0, device_timer);
	S.frame_ns = 1500;
	periodic(&S, 2 * US, 1000 * MS);
	run(&S);
	assert_int_equal(S.frames, 500000);
	off_interrupts = S.interrupts;
	assert_int_equal(off_interrupts, 500000);

	sim_setup(&S, COAL_ADAPTIVE, 0, 0, device_timer);
	S.frame_ns = 1500;
	periodic(&S, 2 * US, 1000 * MS);
	S.tail_from = 500 * MS;
	run(&S);
	assert_int_equal(S.frames, 500000);
	/* steady state: the count that amortises wakeups, and no further
	 * (give or take the batch cut at tail_from) */
	assert_true(S.tail_interrupts > 0);
	assert_true(S.tail_frames + COAL_AMORTISED >= COAL_AMORTISED * S.tail_interrupts);
	assert_true(S.tail_frames < 2 * COAL_AMORTISED * S.tail_interrupts);
	assert_true(S.interrupts * 8 <= off_interrupts);
	/* no frame held longer than the hold in force (+ one poll) */
	assert_int_equal(S.late, 0);
	assert_true(S.max_delay <= (u64)S.max_armed_usecs * US + POLL_NS);
	assert_true(S.max_armed_usecs <= COAL_USECS_MAX);
	assert_true(S.max_armed <= COAL_FRAMES_MAX);
	/* the count, not the timer, ends batches at this rate */
	assert_true(S.timer_wakeups * 100 <= S.wakeups);
}

static void test_saturated_driver(void **state)
{
	saturated_case(false);
}

static void test_saturated_device(void **state)
{
	saturated_case(true);
}

/* ---- the CPU decides, not the rate ------------------------------------ */
static void test_idle_cpu_no_coalescing(void **state)
{
	/* 500k frames/s, but a tenth of the CPU: never any hold. */
	sim_setup(&S, COAL_ADAPTIVE, 0, 0, false);
	S.frame_ns = 200;
	periodic(&S, 2 * US, 200 * MS);
	run(&S);
	assert_int_equal(S.interrupts, S.frames);
	assert_int_equal(S.max_delay, POLL_NS);
	assert_int_equal(S.max_armed, 1);
	assert_int_equal(S.p.stats.changes, 0);
}

static void test_busy_cpu_sparse_frames(void **state)
{
	u64 off_wakeups;

	/* 40k frames/s at 20 us of CPU each (a slow, e.g. emulated, guest at
	 * 80 %): the count cannot fill within the hold, so the timer ends
	 * batches and the policy settles on the count the hold fills. */
	sim_setup(&S, COAL_OFF, 0, 0, false);
	S.frame_ns = 20 * US;
	periodic(&S, 25 * US, 1000 * MS);
	run(&S);
	off_wakeups = S.wakeups;
	assert_int_equal(off_wakeups, S.frames);

	sim_setup(&S, COAL_ADAPTIVE, 0, 0, false);
	S.frame_ns = 20 * US;
	periodic(&S, 25 * US, 1000 * MS);
	run(&S);
	assert_int_equal(S.late, 0);
	assert_true(S.max_delay <= COAL_USECS_MAX * US + POLL_NS);
	/* every wakeup, interrupt or timer, counts here */
	assert_true(S.wakeups * 6 <= off_wakeups);
	/* 40k/s brings 8 frames in a 200 us hold: 16 is never tried */
	assert_true(S.max_armed <= 8);
}

/* One connection's request/response at 64 KiB under TCG: a request and an
 * ACK each ~370 us, the CPU 70 % busy building responses. A count of 2
 * would hold each frame for the timer (~2,700 frames/s bring 0.5 in a
 * hold): the policy must not step up at all. */
static void test_busy_cpu_latency_bound(void **state)
{
	struct coal_policy p;
	u64 t = 0, busy = 0;

	(void)state;
	coal_init(&p, COAL_ADAPTIVE, 0, 0);
	for (int i = 0; i < 20000; i++) {
		t += 370 * US;
		busy += 259 * US;
		coal_sample(&p, t, 1, 1, busy);
		assert_int_equal(coal_frames(&p), 1);
	}
	assert_int_equal(p.stats.changes, 0);
}

static void test_amortised_already(void **state)
{
	/* 32 frames at once every 100 us, 80 % busy: the poll takes them all
	 * in one wakeup, so a hold could only add latency. */
	sim_setup(&S, COAL_ADAPTIVE, 0, 0, false);
	S.frame_ns = 2500;
	bursts(&S, 32, 0, 100 * US, 200 * MS);
	run(&S);
	assert_int_equal(S.frames, 2000 * 32);
	assert_int_equal(S.interrupts, 2000);
	assert_int_equal(S.max_armed, 1);
	assert_int_equal(S.max_delay, POLL_NS);
}

/* ---- request/response: coalescing must not slow a latency-bound flow -- */
static void test_pingpong_keeps_throughput(void **state)
{
	u64 off_frames;

	sim_setup(&S, COAL_OFF, 0, 0, false);
	S.frame_ns = 4 * US;
	pingpong(&S, 5 * US, 1000 * MS);
	run(&S);
	off_frames = S.frames;
	assert_true(off_frames > 150000);

	sim_setup(&S, COAL_ADAPTIVE, 0, 0, false);
	S.frame_ns = 4 * US;		/* 2/3 busy: the policy is tempted */
	pingpong(&S, 5 * US, 1000 * MS);
	run(&S);
	assert_true(S.p.stats.reverts > 0);	/* it tried, saw the rate fall, undid it */
	assert_true(S.frames * 100 >= off_frames * 95);
}

/* ---- OFF and FIXED ----------------------------------------------------- */
static void test_off_one_interrupt_per_frame(void **state)
{
	/* 2 us apart, so no frame lands inside another's POLL_NS */
	sim_setup(&S, COAL_OFF, 32, 100, false);	/* frames/usecs ignored */
	bursts(&S, 200, 2 * US, 20 * MS, 200 * MS);
	run(&S);
	assert_int_equal(S.frames, 2000);
	assert_int_equal(S.interrupts, S.frames);
	assert_int_equal(S.timer_wakeups, 0);
	assert_int_equal(coal_frames(&S.p), 1);
	assert_int_equal(coal_usecs(&S.p), 0);
	assert_int_equal(coal_deadline(&S.p, 5, false), COAL_NO_DEADLINE);
	assert_int_equal(S.p.stats.changes, 0);
}

static void test_fixed_count(void **state)
{
	/* Saturated: the count triggers every interrupt, 8 frames each. */
	sim_setup(&S, COAL_FIXED, 8, 50, true);
	periodic(&S, 2 * US, 100 * MS);
	run(&S);
	assert_int_equal(S.frames, 50000);
	assert_int_equal(S.interrupts, 50000 / 8);
	assert_int_equal(S.max_fpi, 8);
	assert_int_equal(S.p.stats.changes, 0);
	assert_true(S.max_delay <= 14 * US + POLL_NS);
}

static void test_fixed_usecs(void **state)
{
	/* Sparse, device timer: each frame waits exactly the 50 us hold. */
	sim_setup(&S, COAL_FIXED, 8, 50, true);
	periodic(&S, 200 * US, 100 * MS);
	run(&S);
	assert_int_equal(S.interrupts, S.frames);
	assert_int_equal(S.max_delay, 50 * US + POLL_NS);
	assert_int_equal(S.sum_delay, S.frames * (50 * US + POLL_NS));

	/* Driver-side: the timer runs from re-arm, so never later than that. */
	sim_setup(&S, COAL_FIXED, 8, 50, false);
	periodic(&S, 200 * US, 100 * MS);
	run(&S);
	assert_int_equal(S.late, 0);
	assert_true(S.max_delay <= 50 * US + POLL_NS);
	assert_true(S.max_delay > POLL_NS);
	assert_int_equal(S.interrupts, 0);	/* only the timer delivers them */
}

static void test_limit_frames(void **state)
{
	sim_setup(&S, COAL_ADAPTIVE, 0, 0, false);
	coal_limit_frames(&S.p, 4);
	S.frame_ns = 1 * US;			/* all busy */
	periodic(&S, 1 * US, 100 * MS);
	run(&S);
	assert_int_equal(S.max_armed, 4);
	assert_int_equal(S.late, 0);

	coal_init(&S.p, COAL_FIXED, 16, 40);
	coal_limit_frames(&S.p, 4);
	assert_int_equal(coal_frames(&S.p), 4);
	assert_int_equal(coal_usecs(&S.p), 40);
	coal_limit_frames(&S.p, 0);
	assert_int_equal(coal_frames(&S.p), 1);
	assert_int_equal(coal_usecs(&S.p), 0);
	assert_int_equal(coal_deadline(&S.p, 7, false), COAL_NO_DEADLINE);
	coal_limit_frames(&S.p, 1000);	/* back up, capped at the bound */
	assert_int_equal(coal_frames(&S.p), 16);
	assert_int_equal(coal_usecs(&S.p), 40);

	coal_init(&S.p, COAL_OFF, 16, 40);	/* a bound never turns OFF on */
	coal_limit_frames(&S.p, 64);
	assert_int_equal(coal_frames(&S.p), 1);
	assert_int_equal(coal_usecs(&S.p), 0);
}

/* Direct samples: one measuring window of 16 wakeups at fps frames/s, f
 * frames per wakeup, the CPU pct % busy. 16 wakeups must fit in the 1 ms
 * window: fps > 16000 * f. */
static u64 W_busy;

static u64 window_at(struct coal_policy *p, u64 t, u64 fps, u32 f, u32 pct)
{
	u64 gap = (u64)f * 1000000000ull / fps;

	assert_true(gap * 16 < 1 * MS);
	for (int i = 0; i < 16; i++) {
		W_busy += gap * pct / 100;
		coal_sample(p, t += gap, f, 1, W_busy);
	}
	return t;
}

static u64 start(struct coal_policy *p)
{
	coal_init(p, COAL_ADAPTIVE, 0, 0);
	W_busy = 0;
	coal_sample(p, 0, 1, 1, 0);	/* opens the first window */
	return 0;
}

static void test_steps_and_hysteresis(void **state)
{
	struct coal_policy p;
	u64 t = start(&p);

	t = window_at(&p, t, 400000, 1, 40);		/* under half busy: stay */
	assert_int_equal(coal_frames(&p), 1);
	t = window_at(&p, t, 400000, 1, 80);		/* busy, 1 per wakeup: up to 2 */
	assert_int_equal(coal_frames(&p), 2);
	assert_int_equal(coal_usecs(&p), COAL_USECS_MAX);
	t = window_at(&p, t, 400000, 3, 80);		/* kept; 3 per wakeup: up to 8 */
	assert_int_equal(coal_frames(&p), 8);
	t = window_at(&p, t, 400000, 8, 40);		/* kept; inside the band: stay */
	assert_int_equal(coal_frames(&p), 8);
	for (int i = 0; i < 20; i++)			/* 26-49 %: stay */
		t = window_at(&p, t, 400000, 8, i & 1 ? 26 : 49);
	assert_int_equal(coal_frames(&p), 8);
	assert_int_equal(p.stats.changes, 2);
	assert_int_equal(p.stats.reverts, 0);
	t = window_at(&p, t, 400000, 8, 20);		/* under a quarter: one down */
	assert_int_equal(coal_frames(&p), 4);
	t = window_at(&p, t, 400000, 4, 20);
	assert_int_equal(coal_frames(&p), 2);
	t = window_at(&p, t, 400000, 2, 20);
	assert_int_equal(coal_frames(&p), 1);
	assert_int_equal(coal_usecs(&p), 0);
	t = window_at(&p, t, 400000, 1, 20);		/* and no lower */
	assert_int_equal(coal_frames(&p), 1);
	/* busy, but polling already gathers 16 a wakeup: nothing to gain */
	for (int i = 0; i < 10; i++)
		t = window_at(&p, t, 4000000, COAL_AMORTISED, 100);
	assert_int_equal(coal_frames(&p), 1);
	/* busy at 15 a wakeup: straight to the count above it */
	t = window_at(&p, t, 4000000, COAL_AMORTISED - 1, 100);
	assert_int_equal(coal_frames(&p), 32);
	assert_int_equal(p.stats.changes, 6);
}

/* The guard: a step up followed by a falling rate, or by batches that did
 * not grow, is undone and step-ups are refused for a while, longer each
 * time; a step that is kept resets that. */
static void test_guard_backoff(void **state)
{
	struct coal_policy p;
	u64 t = start(&p);

	t = window_at(&p, t, 100000, 1, 90);
	assert_int_equal(coal_frames(&p), 2);
	t = window_at(&p, t, 50000, 2, 90);		/* rate fell by half: undo */
	assert_int_equal(coal_frames(&p), 1);
	assert_int_equal(p.stats.reverts, 1);
	assert_int_equal(p.hold, 8);
	assert_int_equal(p.backoff, 16);
	for (int i = 0; i < 8; i++) {			/* held, whatever the load */
		t = window_at(&p, t, 100000, 1, 90);
		assert_int_equal(coal_frames(&p), 1);
	}
	t = window_at(&p, t, 100000, 1, 90);		/* tries again */
	assert_int_equal(coal_frames(&p), 2);
	t = window_at(&p, t, 100000, 1, 90);		/* batches did not grow: undo */
	assert_int_equal(coal_frames(&p), 1);
	assert_int_equal(p.hold, 16);
	assert_int_equal(p.backoff, 32);
	for (int i = 0; i < 17; i++)
		t = window_at(&p, t, 100000, 1, 90);
	assert_int_equal(coal_frames(&p), 2);
	t = window_at(&p, t, 100000, 2, 90);		/* rate held, batches grew: kept */
	assert_int_equal(coal_frames(&p), 4);		/* and the next step taken */
	assert_int_equal(p.backoff, 8);
	assert_int_equal(p.stats.reverts, 2);
	t = window_at(&p, t, 100000, 2, 90);		/* 4 bought nothing over 2 */
	assert_int_equal(coal_frames(&p), 2);
	assert_int_equal(p.stats.reverts, 3);
}

static void test_init_clamps(void **state)
{
	struct coal_policy p;

	coal_init(&p, COAL_FIXED, 100, 500);
	assert_int_equal(coal_frames(&p), COAL_FRAMES_MAX);
	assert_int_equal(coal_usecs(&p), COAL_USECS_MAX);
	assert_int_equal(coal_deadline(&p, 1000, false), 1000 + COAL_USECS_MAX * US);
	coal_init(&p, COAL_FIXED, 8, 0);	/* no unbounded hold */
	assert_int_equal(coal_frames(&p), 1);
	assert_int_equal(coal_usecs(&p), 0);
	coal_init(&p, COAL_FIXED, 0, 10);
	assert_int_equal(coal_frames(&p), 1);
	assert_int_equal(coal_usecs(&p), 0);
	coal_init(&p, COAL_ADAPTIVE, 8, 50);	/* starts at the latency profile */
	assert_int_equal(coal_frames(&p), 1);
	assert_int_equal(coal_usecs(&p), 0);
	assert_int_equal(p.stats.changes, 0);
}

/* Empty wakeups must not count as traffic, and a quiet queue goes back to
 * the latency profile even with no frame to trigger it. */
static void test_idle_drop_without_frames(void **state)
{
	struct coal_policy p;
	u64 t = start(&p);

	t = window_at(&p, t, 1000000, 4, 100);		/* up to 8 */
	assert_int_equal(coal_frames(&p), 8);
	assert_int_equal(coal_usecs(&p), COAL_USECS_MAX);
	assert_int_equal(coal_deadline(&p, 1000, false), 1000 + COAL_USECS_MAX * US);
	assert_int_equal(coal_deadline(&p, 1000, true), 1000 + 2 * MS);
	for (int i = 0; i < 4; i++)	/* timer wakeups, nothing arrived */
		coal_sample(&p, t += coal_usecs(&p) * US, 0, 0, W_busy);
	assert_int_equal(coal_frames(&p), 8);	/* 800 us: window not over yet */
	coal_sample(&p, t += coal_usecs(&p) * US, 0, 0, W_busy);
	assert_int_equal(coal_frames(&p), 1);	/* a window with no frames */
	assert_int_equal(coal_usecs(&p), 0);
	assert_int_equal(coal_deadline(&p, 1000, false), COAL_NO_DEADLINE);
	assert_int_equal(coal_deadline(&p, 1000, true), COAL_NO_DEADLINE);
	assert_int_equal(p.stats.idle_resets, 1);
	assert_int_equal(p.stats.frames, 1 + 16 * 4);
	assert_int_equal(p.stats.wakeups, 1 + 16 + 5);
	assert_int_equal(p.stats.interrupts, 1 + 16);

	/* Device-side: one sample 2 ms after the last frame is enough. */
	t = start(&p);
	t = window_at(&p, t, 1000000, 4, 100);
	assert_int_equal(coal_frames(&p), 8);
	coal_sample(&p, t + 1 * MS - 1, 0, 0, W_busy);	/* an early empty wakeup changes nothing */
	assert_int_equal(coal_frames(&p), 8);
	coal_sample(&p, coal_deadline(&p, t, true), 0, 0, W_busy);
	assert_int_equal(coal_frames(&p), 1);
}

/* The caller's busy clock is not trusted: backwards or ahead of time. */
static void test_busy_clock_untrusted(void **state)
{
	struct coal_policy p;
	u64 t = 0;

	coal_init(&p, COAL_ADAPTIVE, 0, 0);
	coal_sample(&p, t, 1, 1, 1000 * MS);
	for (int i = 0; i < 16; i++)	/* going backwards: idle, so no step */
		coal_sample(&p, t += 10 * US, 1, 1, 1000 * MS - (u64)i * US);
	assert_int_equal(coal_frames(&p), 1);
	for (int i = 0; i < 16; i++)	/* far ahead: capped at all busy */
		coal_sample(&p, t += 10 * US, 1, 1, ~0ull - 16 + (u64)i);
	assert_int_equal(coal_frames(&p), 2);
}

/* ---- coal_parse ------------------------------------------------------- */
static void test_parse_accepts(void **state)
{
	static const struct {
		const char *s;
		enum coal_mode mode;
		u16 frames;
		u32 usecs;
	} ok[] = {
		{ "off", COAL_OFF, 1, 0 },
		{ "adaptive", COAL_ADAPTIVE, 1, 0 },
		{ "1,0", COAL_FIXED, 1, 0 },
		{ "1,200", COAL_FIXED, 1, 200 },
		{ "8,50", COAL_FIXED, 8, 50 },
		{ "64,200", COAL_FIXED, 64, 200 },
		{ "064,0200", COAL_FIXED, 64, 200 },
		{ "2,1", COAL_FIXED, 2, 1 },
	};

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		enum coal_mode m = 99;
		u16 f = 999;
		u32 u = 999;

		assert_int_equal(coal_parse(ok[i].s, &m, &f, &u), 0);
		assert_int_equal(m, ok[i].mode);
		assert_int_equal(f, ok[i].frames);
		assert_int_equal(u, ok[i].usecs);
	}
}

static void test_parse_rejects(void **state)
{
	static const char *const bad[] = {
		"", "on", "Off", "OFF", "adaptive ", " off", "offf", "of", "adapt",
		"8", "8,", ",50", ",", "0,10", "0,0", "65,10", "8,201", "8,0", "64,0",
		"8,50,1", "8;50", "-1,5", "+8,50", "8,+50", "8, 50", " 8,50", "8,50 ",
		"8,5x", "x8,50", "4294967297,1", "99999999999999999999,1", "8,4294967296",
		"8,99999999999999999999", "65536,1", "1,4294967295", "0x8,50",
	};

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		enum coal_mode m = 99;
		u16 f = 999;
		u32 u = 999;

		if (coal_parse(bad[i], &m, &f, &u) != -EINVAL)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_int_equal(m, 99);	/* outputs untouched */
		assert_int_equal(f, 999);
		assert_int_equal(u, 999);
	}
	{
		enum coal_mode m;
		u16 f;
		u32 u;

		assert_int_equal(coal_parse(NULL, &m, &f, &u), -EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_driver),
		cmocka_unit_test(test_idle_device),
		cmocka_unit_test(test_bursty_driver),
		cmocka_unit_test(test_bursty_device),
		cmocka_unit_test(test_saturated_driver),
		cmocka_unit_test(test_saturated_device),
		cmocka_unit_test(test_idle_cpu_no_coalescing),
		cmocka_unit_test(test_busy_cpu_sparse_frames),
		cmocka_unit_test(test_busy_cpu_latency_bound),
		cmocka_unit_test(test_amortised_already),
		cmocka_unit_test(test_pingpong_keeps_throughput),
		cmocka_unit_test(test_off_one_interrupt_per_frame),
		cmocka_unit_test(test_fixed_count),
		cmocka_unit_test(test_fixed_usecs),
		cmocka_unit_test(test_limit_frames),
		cmocka_unit_test(test_init_clamps),
		cmocka_unit_test(test_steps_and_hysteresis),
		cmocka_unit_test(test_guard_backoff),
		cmocka_unit_test(test_idle_drop_without_frames),
		cmocka_unit_test(test_busy_clock_untrusted),
		cmocka_unit_test(test_parse_accepts),
		cmocka_unit_test(test_parse_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
