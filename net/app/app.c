/* The default appliance: the static HTTP server, TCP/UDP echo on port 7,
 * and the driver's and event loop's counters on /metrics. */
#include "drivers/virtio_net.h"
#include "kernel/console.h"
#include "kernel/fmt.h"
#include "kernel/loop.h"
#include "kernel/power.h"
#include "lwip/priv/tcp_priv.h"
#include "net/app/app.h"
#include "net/app/echo.h"
#include "net/app/metrics.h"
#include "net/app/server.h"
#include "net/net.h"

#define ECHO_PORT 7

static const char *const coal_mode_names[] = { "off", "fixed", "adaptive" };

static void q_counter(struct metrics_buf *b, const char *name, const char *help,
		      const struct vnet_stats *st, size_t off)
{
	static const char *const q[2] = { "queue=\"rx\"", "queue=\"tx\"" };

	metrics_family(b, name, METRICS_COUNTER, help);
	for (int i = 0; i < 2; i++)
		metrics_sample(b, name, q[i], *(const u64 *)(const void *)((const u8 *)&st->q[i] + off));
}

static void vnet_metrics(struct metrics_buf *b)
{
	struct vnet *vn = net_device();
	struct vnet_stats st;
	char labels[64];

	if (!vn)
		return;
	vnet_get_stats(vn, &st);
	q_counter(b, "vireo_vnet_frames_total", "Frames received/sent by virtio-net", &st,
		  offsetof(struct vnet_qstats, frames));
	q_counter(b, "vireo_vnet_bytes_total", "Frame bytes received/sent", &st, offsetof(struct vnet_qstats, bytes));
	q_counter(b, "vireo_vnet_interrupts_total", "Queue interrupts taken", &st,
		  offsetof(struct vnet_qstats, interrupts));
	q_counter(b, "vireo_vnet_polls_total", "Queue polls run from the event loop", &st,
		  offsetof(struct vnet_qstats, polls));
	q_counter(b, "vireo_vnet_budget_exhausted_total", "Polls that used their whole budget", &st,
		  offsetof(struct vnet_qstats, budget_exhausted));
	q_counter(b, "vireo_vnet_csum_offloaded_total", "Frames whose TCP/UDP checksum the device handled", &st,
		  offsetof(struct vnet_qstats, csum_offloaded));
	metrics_simple(b, "vireo_vnet_tx_ring_full_total", METRICS_COUNTER, "Transmits refused: ring full",
		       st.q[1].no_room);
	metrics_family(b, "vireo_vnet_rx_drops_total", METRICS_COUNTER, "Received buffers dropped, by reason");
	for (int r = 1; r < VNET_DROP_COUNT; r++)
		metrics_sample1(b, "vireo_vnet_rx_drops_total", "reason", vnet_drop_name((enum vnet_drop)r),
				st.q[0].drops[r]);
	metrics_simple(b, "vireo_vnet_rx_buffers_posted", METRICS_GAUGE, "Receive buffers on the ring",
		       st.rx_posted);
	metrics_simple(b, "vireo_vnet_rx_buffers_held", METRICS_GAUGE, "Receive buffers held by the stack",
		       st.rx_held);
	metrics_simple(b, "vireo_vnet_rx_buffers", METRICS_GAUGE, "Receive buffers in all", st.rx_total);
	metrics_simple(b, "vireo_vnet_device_resets_total", METRICS_COUNTER, "DEVICE_NEEDS_RESET recoveries",
		       st.resets);
	ksnprintf(labels, sizeof labels, "queue=\"rx\",mode=\"%s\",where=\"%s\"",
		  coal_mode_names[st.coal_mode < 3 ? st.coal_mode : 0], st.coal_device ? "device" : "driver");
	metrics_family(b, "vireo_vnet_coalesce_frames", METRICS_GAUGE, "Completions gathered per interrupt, in force");
	metrics_sample(b, "vireo_vnet_coalesce_frames", labels, st.coal_frames);
	metrics_family(b, "vireo_vnet_coalesce_usecs", METRICS_GAUGE, "Longest hold of a completion, in force");
	metrics_sample(b, "vireo_vnet_coalesce_usecs", labels, st.coal_usecs);
	metrics_simple(b, "vireo_vnet_coalesce_changes_total", METRICS_COUNTER, "Adaptive coalescing changes",
		       st.coal.changes);
	metrics_simple(b, "vireo_vnet_coalesce_timer_wakeups_total", METRICS_COUNTER,
		       "Receive polls started by the coalescing timer", st.q[0].coal_timer_wakeups);
}

static void loop_metrics(struct metrics_buf *b)
{
	metrics_simple(b, "vireo_loop_iterations_total", METRICS_COUNTER, "Event loop iterations",
		       loop_stats.iterations);
	metrics_simple(b, "vireo_loop_halts_total", METRICS_COUNTER, "Times the loop halted for an interrupt",
		       loop_stats.halts);
	metrics_simple(b, "vireo_loop_work_runs_total", METRICS_COUNTER, "Work items run", loop_stats.work_runs);
	metrics_simple(b, "vireo_loop_timers_fired_total", METRICS_COUNTER, "Timers fired", loop_stats.timers_fired);
}

/* TCP PCBs by list: connections in use vs. TIME_WAIT (bounded by the port's
 * trim), so a leak shows apart from the TIME_WAIT a closing server keeps. */
static void tcp_metrics(struct metrics_buf *b)
{
	u64 active = 0, tw = 0;
	struct tcp_pcb *p;

	for (p = tcp_active_pcbs; p; p = p->next)
		active++;
	for (p = tcp_tw_pcbs; p; p = p->next)
		tw++;
	metrics_family(b, "vireo_tcp_pcbs", METRICS_GAUGE, "TCP connections by lwIP list");
	metrics_sample(b, "vireo_tcp_pcbs", "list=\"active\"", active);
	metrics_sample(b, "vireo_tcp_pcbs", "list=\"time_wait\"", tw);
}

static struct metrics_source tcp_source = { "tcp", tcp_metrics, NULL };
static struct metrics_source vnet_source = { "vnet", vnet_metrics, NULL };
static struct metrics_source loop_source = { "loop", loop_metrics, NULL };

/* ---- power off: drain the HTTP server ---- */

static u16 drain_port;

static void drain_begin(void *ctx, struct power_drain_counts *c)
{
	(void)ctx;
	http_server_drain(&c->idle, &c->busy);
}

/* Done when the server holds no connection and lwIP has nothing of ours
 * unsent or unacknowledged (the last responses and FINs were delivered). */
static bool drain_done(void *ctx)
{
	struct tcp_pcb *p;

	(void)ctx;
	if (http_server_stats.conns_active)
		return false;
	for (p = tcp_active_pcbs; p; p = p->next)
		if (p->local_port == drain_port && (p->unsent || p->unacked))
			return false;
	return true;
}

static u32 drain_cut(void *ctx)
{
	u32 left = (u32)http_server_stats.conns_active;

	(void)ctx;
	http_server_stop();
	return left;
}

static const struct power_drain_ops http_drain = {
	.begin = drain_begin,
	.done = drain_done,
	.cut = drain_cut,
};

int app_start(u16 http_port)
{
	int err;

	metrics_register(&vnet_source);
	metrics_register(&loop_source);
	metrics_register(&tcp_source);
	err = http_server_start(http_port, NULL);
	if (err) {
		kprintf("http: cannot listen on port %u (%d)\n", http_port, err);
		return err;
	}
	drain_port = http_port;
	power_register_drain(&http_drain);
	err = echo_start(ECHO_PORT);
	if (err)
		kprintf("echo: cannot listen on port %u (%d)\n", ECHO_PORT, err);
	return 0;
}
