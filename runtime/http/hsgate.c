/*
 * TLS handshakes' share of the CPU (hsgate.h): the rate buckets checked on
 * accept (admission.c), and the handshake-step gate altcp_tls asks before
 * each step (net/port/patches/0007, through net/port/lwipopts.h).
 *
 * The gate. A pass is the stretch of the event loop between two turns of
 * the rest of its queued work: it begins when the loop starts a new
 * iteration, or when the gate's own work item runs (everything queued
 * before it has just run). In a pass, a server handshake step starts while
 * less than https.handshake_pass_us= of handshake work ran in it, the
 * window's share (https.handshake_share=, hscpu in hsrate.h) has credit,
 * and no step put off before is waiting; otherwise the connection joins
 * its prefix's queue (hsfair in hsrate.h; its input stays queued in
 * altcp_tls, unacknowledged) and the gate's work item is queued behind
 * whatever is queued now, or, when the share is out, a timer queues it
 * once the credit is back. That item runs the waiting steps, round robin
 * by prefix, while both have budget, and waits again the same way if some
 * are left. Each step is timed by time_ns() (the TSC, calibrated at boot:
 * kernel/time/time.c) around mbedtls_ssl_handshake. A TLS client's steps
 * (runtime/tcp_out.c) are neither put off nor counted: an app started
 * them.
 */
#include "kernel/cmdline.h"
#include "lib/types.h"
#include "lib/metrics.h"
#include "runtime/http/hsgate.h"
#include "runtime/http/https.h"

#ifdef VIREO_TLS
/* Registered in make TLS=1 images only (tools/cmdline_table.py's
 * TLS_PATHS): the default image carries no handshake to limit. */
static u64 hsgate_rate_opt = HSGATE_RATE;
CMDLINE_PARAM(https_handshake_rate, .key = "https.handshake_rate", .type = CMDLINE_UINT,
	      .dst = &hsgate_rate_opt, .min = 0, .max = 100000, .def = "300",
	      .help = "TLS handshakes a second in all (more are reset on accept); 0: no limit");
static u64 hsgate_burst_opt = HSGATE_BURST;
CMDLINE_PARAM(https_handshake_burst, .key = "https.handshake_burst", .type = CMDLINE_UINT,
	      .dst = &hsgate_burst_opt, .min = 1, .max = 100000, .def = "300",
	      .help = "TLS handshakes at once above https.handshake_rate= after a quiet spell");
static u64 hsgate_rate_prefix_opt = HSGATE_RATE_PREFIX;
CMDLINE_PARAM(https_handshake_rate_per_prefix, .key = "https.handshake_rate_per_prefix", .type = CMDLINE_UINT,
	      .dst = &hsgate_rate_prefix_opt, .min = 0, .max = 100000, .def = "30",
	      .help = "TLS handshakes a second from one IPv4 /24 or IPv6 /56; 0: no limit");
static u64 hsgate_burst_prefix_opt = HSGATE_BURST_PREFIX;
CMDLINE_PARAM(https_handshake_burst_per_prefix, .key = "https.handshake_burst_per_prefix",
	      .type = CMDLINE_UINT, .dst = &hsgate_burst_prefix_opt, .min = 1, .max = 100000, .def = "100",
	      .help = "TLS handshakes at once from one prefix above its rate after a quiet spell");
static u64 hsgate_pass_us_opt = HSGATE_PASS_US;
CMDLINE_PARAM(https_handshake_pass_us, .key = "https.handshake_pass_us", .type = CMDLINE_UINT,
	      .dst = &hsgate_pass_us_opt, .min = 0, .max = 1000000, .def = "1000",
	      .help = "microseconds of TLS handshake work one event-loop pass starts steps in before "
		      "other work runs; 0: no bound");
static u64 hsgate_share_opt = HSGATE_SHARE;
CMDLINE_PARAM(https_handshake_share, .key = "https.handshake_share", .type = CMDLINE_UINT,
	      .dst = &hsgate_share_opt, .min = 0, .max = 100, .def = "25",
	      .help = "percent of each https.handshake_window_us= TLS handshake steps may take "
		      "(a token bucket on their time); 0 or 100: no bound");
static u64 hsgate_window_us_opt = HSGATE_WINDOW_US;
CMDLINE_PARAM(https_handshake_window_us, .key = "https.handshake_window_us", .type = CMDLINE_UINT,
	      .dst = &hsgate_window_us_opt, .min = 1000, .max = 10000000, .def = "10000",
	      .help = "the window https.handshake_share= is a share of, microseconds");

#include "lwip/altcp.h"
#include "lwip/altcp_tls.h"
#include "mbedtls/ssl.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "runtime/conntab.h"
#include "runtime/http/conn.h"
#include "runtime/http/hsrate.h"

/* net/port/patches/0007. */
err_t altcp_tls_handshake_resume(struct altcp_pcb *conn);

/* The prefix buckets (16 KiB) from the kernel heap at hsgate_start(), not
 * .bss (linker/vireo.ld's guard). */
static struct hsrate *hsgate_rate;
static struct hscpu hsgate_cpu;
static bool hsgate_on;

static struct {
	u64 limited[2];		/* refused on accept: by the prefix's bucket, the global one */
	u64 steps;		/* server handshake steps run */
	u64 step_ns;		/* their time */
	u64 step_max_ns;	/* the longest */
	u64 deferred;		/* steps put off to a later pass */
	u64 passes_full;	/* passes that used up their budget */
	u64 share_waits;	/* times the window's share put steps off */
} hsgate_stats;

/* The steps put off, round robin by prefix (hsfair in hsrate.h; only
 * handshaking connections: at most https.handshakes= of them). */
static struct hsfair hsgate_q;
static struct conn *hsgate_resuming;	/* its step runs now, queued or not */
static struct work hsgate_work;
static struct timer hsgate_timer;	/* the window's share is back */
static void hsgate_run(void *arg);
static void hsgate_wake(struct timer *t, void *arg);
static u64 hsgate_pass_iter;		/* the loop iteration the pass began in */
static u64 hsgate_t0;			/* the running step's start */

int hsgate_start(void)
{
	u8 key[16];

	if (!hsgate_rate && !(hsgate_rate = kzalloc(sizeof *hsgate_rate)))
		return -ENOMEM;
	random_bytes(key, sizeof key);
	hsrate_init(hsgate_rate, key);
	__builtin_memset(key, 0, sizeof key);
	hsrate_set(hsgate_rate, (u32)hsgate_rate_prefix_opt, (u32)hsgate_burst_prefix_opt, (u32)hsgate_rate_opt,
		   (u32)hsgate_burst_opt);
	hscpu_set(&hsgate_cpu, hsgate_pass_us_opt * 1000, (u32)hsgate_share_opt, hsgate_window_us_opt * 1000,
		  time_ns());
	hsfair_init(&hsgate_q);
	work_init(&hsgate_work, hsgate_run, NULL);
	timer_init(&hsgate_timer, hsgate_wake, NULL);
	hsgate_on = true;
	return 0;
}

bool hsgate_admit(struct altcp_pcb *pcb)
{
	return hsgate_admit_ip(altcp_get_ip(pcb, 0));
}

/* ip's address bytes as hsrate.h keys them (4 or 16: *len). */
static const u8 *hsgate_key(const ip_addr_t *ip, size_t *len)
{
	*len = IP_IS_V6(ip) ? 16 : 4;
	return IP_IS_V6(ip) ? (const u8 *)ip_2_ip6(ip)->addr : (const u8 *)&ip_2_ip4(ip)->addr;
}

bool hsgate_admit_ip(const ip_addr_t *ip)
{
	enum hsrate_verdict v;
	const u8 *key;
	size_t len;

	if (!hsgate_on || !ip)
		return true;
	key = hsgate_key(ip, &len);
	v = hsrate_take(hsgate_rate, key, len, time_ns());
	if (v == HSRATE_PASS)
		return true;
	hsgate_stats.limited[v == HSRATE_GLOBAL]++;
	return false;
}

static void hsgate_new_pass(void)
{
	hsgate_pass_iter = loop_stats.iterations;
	hscpu_new_pass(&hsgate_cpu);
}

static bool hsgate_budget_left(void)
{
	if (hsgate_pass_iter != loop_stats.iterations)
		hsgate_new_pass();
	return hscpu_may_start(&hsgate_cpu, time_ns());
}

/* Steps wait in the queues: out of the pass's budget, the gate's work item
 * runs them behind the work queued now; out of the window's share, a timer
 * queues it when the credit is back (the loop halts meanwhile if nothing
 * else is queued). */
static void hsgate_later(void)
{
	u64 now = time_ns();

	if (hscpu_share_out(&hsgate_cpu, now)) {
		if (!hsgate_timer.armed) {
			hsgate_stats.share_waits++;
			timer_start(&hsgate_timer, hscpu_ready_at(&hsgate_cpu, now));
		}
		return;
	}
	hsgate_stats.passes_full++;
	work_queue(&hsgate_work);
}

/* c's step waits its prefix's turn (the client's: c->peer, a PROXY
 * header's source when there was one). */
static void hsgate_push(struct conn *c)
{
	size_t len;
	const u8 *key = hsgate_key(&c->peer, &len);

	c->hs_slot = hsrate_slot(hsgate_rate, key, len);
	hsfair_push(&hsgate_q, &c->hs, c->hs_slot);
	c->hs_queued = true;
}

void hsgate_forget(struct conn *c)
{
	if (!c->hs_queued)
		return;
	hsfair_remove(&hsgate_q, &c->hs, c->hs_slot);
	c->hs_queued = false;
}

static void hsgate_wake(struct timer *t, void *arg)
{
	(void)t;
	(void)arg;
	work_queue(&hsgate_work);
}

static struct conn *hsgate_conn(struct altcp_pcb *pcb, struct mbedtls_ssl_context *ssl)
{
	if (ssl->MBEDTLS_PRIVATE(conf)->MBEDTLS_PRIVATE(endpoint) != MBEDTLS_SSL_IS_SERVER || !pcb->arg)
		return NULL;
	return tcpconn_owner(pcb->arg, struct conn, tc);
}

/* ALTCP_MBEDTLS_HANDSHAKE_STEP_BEGIN: whether pcb's step runs now. */
int vireo_tls_step_begin(struct altcp_pcb *pcb, struct mbedtls_ssl_context *ssl)
{
	struct conn *c = hsgate_conn(pcb, ssl);

	if (!c)
		return 1;
	if (c != hsgate_resuming) {
		if (c->hs_queued)
			return 0;	/* more input behind a step already put off */
		if (hsgate_q.queued || !hsgate_budget_left()) {
			bool first = !hsgate_q.queued;

			hsgate_push(c);
			hsgate_stats.deferred++;
			if (first)
				hsgate_later();
			return 0;
		}
	}
	hsgate_t0 = time_ns();
	return 1;
}

/* ALTCP_MBEDTLS_HANDSHAKE_STEP_END: the step that began ran. */
void vireo_tls_step_end(struct altcp_pcb *pcb, struct mbedtls_ssl_context *ssl)
{
	u64 now, dt;

	if (!hsgate_conn(pcb, ssl))
		return;
	now = time_ns();
	dt = now - hsgate_t0;
	hscpu_charge(&hsgate_cpu, now, dt);
	hsgate_stats.steps++;
	hsgate_stats.step_ns += dt;
	hsgate_stats.step_max_ns = MAX(hsgate_stats.step_max_ns, dt);
}

/* The gate's work item: a new pass; the steps put off, a prefix's at its
 * turn, while it has budget (the pass's and the window's), then later
 * (hsgate_later). */
static void hsgate_run(void *arg)
{
	struct conn *c;

	(void)arg;
	hsgate_new_pass();
	while (hsgate_q.queued && hsgate_budget_left()) {
		c = tcpconn_owner(hsfair_pop(&hsgate_q), struct conn, hs);
		c->hs_queued = false;
		hsgate_resuming = c;
		altcp_tls_handshake_resume(c->tc.pcb);	/* may free c */
		hsgate_resuming = NULL;
	}
	if (hsgate_q.queued)
		hsgate_later();
}

static void hsgate_metrics(struct metrics_buf *b)
{
	if (!hsgate_on)
		return;
	metrics_family(b, "vireo_https_handshakes_rate_limited_total", METRICS_COUNTER,
		       "TLS connections reset on accept over a handshake rate (https.handshake_rate*=), by bucket");
	metrics_sample1(b, "vireo_https_handshakes_rate_limited_total", "scope", "prefix", hsgate_stats.limited[0]);
	metrics_sample1(b, "vireo_https_handshakes_rate_limited_total", "scope", "global", hsgate_stats.limited[1]);
	metrics_simple(b, "vireo_https_handshake_rate_buckets", METRICS_GAUGE,
		       "Prefix buckets in use (not full), of 1024", hsrate_in_use(hsgate_rate, time_ns()));
	metrics_simple(b, "vireo_https_handshake_rate_buckets_replaced_total", METRICS_COUNTER,
		       "Prefix buckets given to another prefix while in use", hsgate_rate->replaced);
	metrics_simple(b, "vireo_https_handshake_steps_total", METRICS_COUNTER,
		       "Server TLS handshake steps run (mbedtls_ssl_handshake calls on input)", hsgate_stats.steps);
	metrics_family(b, "vireo_https_handshake_step_seconds_total", METRICS_COUNTER,
		       "CPU time in server handshake steps (microsecond resolution)");
	metrics_sample_fixed(b, "vireo_https_handshake_step_seconds_total", NULL, hsgate_stats.step_ns / 1000, 6);
	metrics_family(b, "vireo_https_handshake_step_max_seconds", METRICS_GAUGE,
		       "The longest server handshake step");
	metrics_sample_fixed(b, "vireo_https_handshake_step_max_seconds", NULL, hsgate_stats.step_max_ns / 1000, 6);
	metrics_simple(b, "vireo_https_handshake_steps_deferred_total", METRICS_COUNTER,
		       "Handshake steps put off to a later loop pass (https.handshake_pass_us=)",
		       hsgate_stats.deferred);
	metrics_simple(b, "vireo_https_handshake_passes_full_total", METRICS_COUNTER,
		       "Loop passes whose handshake budget ran out with steps waiting", hsgate_stats.passes_full);
	metrics_simple(b, "vireo_https_handshake_share_waits_total", METRICS_COUNTER,
		       "Times steps waited for the window's CPU share (https.handshake_share=)",
		       hsgate_stats.share_waits);
}
METRICS_SOURCE(hsgate, hsgate_metrics);

#else

int hsgate_start(void)
{
	return 0;
}

bool hsgate_admit(struct altcp_pcb *pcb)
{
	return true;
}

void hsgate_forget(struct conn *c)
{
}

#endif
