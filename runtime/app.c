/* The runtime's services: the HTTP server (its routes are the apps',
 * include/vireo/, started here with the apps themselves: apps/echo among
 * them) and the driver's and event loop's counters on /metrics (the
 * device's through the netif, net/net.h). Its key: http=. */
#include "drivers/virtio/net/virtio_net.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/loop.h"
#include "kernel/power.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lwip/priv/tcp_priv.h"
#include "runtime/api.h"
#include "runtime/app.h"
#include "runtime/http/http.h"
#include "runtime/http/https.h"
#include "runtime/metadata.h"
#include "runtime/metrics.h"
#include "runtime/http/server.h"
#include "net/net.h"
#include "net/tcp/rxmem.h"
#include "net/netif/tso_out.h"
#ifdef VIREO_TLS
#include "net/tls/tls.h"
#endif

static u64 http_port = 80;
CMDLINE_PARAM(http, .key = "http", .type = CMDLINE_UINT, .dst = &http_port, .min = 1, .max = 65535, .def = "80",
	      .help = "the HTTP server's TCP port");

u16 app_http_port(void)
{
	return (u16)http_port;
}


static u16 drain_port;	/* the port HTTP listens on, once started */

void app_reapply_http(void)
{
	u16 was = drain_port;
	int err;

	if (!was || http_port == was)
		return;
	err = http_server_rebind((u16)http_port);
	if (err) {
		kprintf("warning: http: cannot listen on port %u (%d); staying on %u\n", (unsigned)http_port, err,
			(unsigned)was);
		http_port = was;
		return;
	}
	drain_port = (u16)http_port;
	netup_set_http_port(drain_port);
	kprintf("http: listening on port %u (was %u)\n", (unsigned)drain_port, (unsigned)was);
}

static const char *const coal_mode_names[] = { "off", "fixed", "adaptive" };

static void app_q_counter(struct metrics_buf *b, const char *name, const char *help,
		      const struct vnet_stats *st, size_t off)
{
	static const char *const q[2] = { "queue=\"rx\"", "queue=\"tx\"" };

	metrics_family(b, name, METRICS_COUNTER, help);
	for (int i = 0; i < 2; i++)
		metrics_sample(b, name, q[i], *(const u64 *)(const void *)((const u8 *)&st->q[i] + off));
}

static void app_vnet_metrics(struct metrics_buf *b)
{
	struct vnet_stats st;
	char labels[64];

	if (!netif_vnet_stats(&st))
		return;
	app_q_counter(b, "vireo_vnet_frames_total", "Frames received/sent by virtio-net", &st,
		  offsetof(struct vnet_qstats, frames));
	app_q_counter(b, "vireo_vnet_bytes_total", "Frame bytes received/sent", &st, offsetof(struct vnet_qstats, bytes));
	app_q_counter(b, "vireo_vnet_interrupts_total", "Queue interrupts taken", &st,
		  offsetof(struct vnet_qstats, interrupts));
	app_q_counter(b, "vireo_vnet_polls_total", "Queue polls run from the event loop", &st,
		  offsetof(struct vnet_qstats, polls));
	app_q_counter(b, "vireo_vnet_budget_exhausted_total", "Polls that used their whole budget", &st,
		  offsetof(struct vnet_qstats, budget_exhausted));
	app_q_counter(b, "vireo_vnet_csum_offloaded_total", "Frames whose TCP/UDP checksum the device handled", &st,
		  offsetof(struct vnet_qstats, csum_offloaded));
	metrics_simple(b, "vireo_vnet_tx_ring_full_total", METRICS_COUNTER, "Transmits refused: ring full",
		       st.q[1].no_room);
	metrics_simple(b, "vireo_netif_tx_backlogged_total", METRICS_COUNTER,
		       "Frames parked in the netif's transmit backlog (ring full)", netif_vnet_tx_stats.backlogged);
	metrics_simple(b, "vireo_netif_tx_backlog_peak", METRICS_GAUGE, "Most frames parked at once",
		       netif_vnet_tx_stats.backlog_peak);
	metrics_simple(b, "vireo_netif_tx_drained_with_backlog_total", METRICS_COUNTER,
		       "Completions that found the ring empty while frames were parked",
		       netif_vnet_tx_stats.drained_with_backlog);
	metrics_simple(b, "vireo_vnet_tso_frames_total", METRICS_COUNTER,
		       "Frames sent for the device to cut into segments (HOST_TSO4/6)", st.q[1].gso_frames);
	metrics_simple(b, "vireo_vnet_tso_segments_total", METRICS_COUNTER,
		       "Wire segments the device cut from them", st.q[1].gso_segments);
	metrics_simple(b, "vireo_vnet_rx_tso_frames_total", METRICS_COUNTER,
		       "TCP segments received coalesced by the device (GUEST_TSO4/6)", st.q[0].gso_frames);
	metrics_simple(b, "vireo_vnet_rx_tso_segments_total", METRICS_COUNTER,
		       "Wire segments those were coalesced from (by gso_size)", st.q[0].gso_segments);
	metrics_simple(b, "vireo_tso_merged_segments_total", METRICS_COUNTER,
		       "lwIP segments merged into offloaded frames", tso_out_stats.merged_segments);
	metrics_simple(b, "vireo_tso_unmerged_bursts_total", METRICS_COUNTER,
		       "Bursts sent segment by segment for want of a record or pbuf",
		       tso_out_stats.no_record + tso_out_stats.no_pbuf);
	metrics_family(b, "vireo_vnet_rx_drops_total", METRICS_COUNTER, "Received buffers dropped, by reason");
	for (int r = 1; r < VNET_DROP_COUNT; r++)
		metrics_sample1(b, "vireo_vnet_rx_drops_total", "reason", vnet_hdr_drop_name((enum vnet_drop)r),
				st.q[0].drops[r]);
	metrics_simple(b, "vireo_vnet_rx_buffers_posted", METRICS_GAUGE, "Receive buffers on the ring",
		       st.rx_posted);
	metrics_simple(b, "vireo_vnet_rx_buffers_held", METRICS_GAUGE, "Receive buffers held by the stack",
		       st.rx_held);
	metrics_simple(b, "vireo_vnet_rx_buffers", METRICS_GAUGE, "Receive buffers in all", st.rx_total);
	metrics_simple(b, "vireo_vnet_device_resets_total", METRICS_COUNTER, "DEVICE_NEEDS_RESET recoveries",
		       st.resets);
	metrics_simple(b, "vireo_vnet_link_resumes_total", METRICS_COUNTER,
		       "Link-up transitions: rings reclaimed, notified and polled", st.link_resumes);
	metrics_simple(b, "vireo_vnet_announces_total", METRICS_COUNTER,
		       "Announce requests from the device (GUEST_ANNOUNCE: after a live migration) answered",
		       st.announces);
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

/* Receive memory accounting (net/tcp/rxmem.h): each decision it takes. */
static void app_rxmem_metrics(struct metrics_buf *b)
{
	const struct rxmem_stats *s = &rxmem_stats;
	u32 held, total;

	netif_vnet_rx_pool(&held, &total);
	metrics_simple(b, "vireo_rxmem_held_watermark", METRICS_GAUGE,
		       "Receive buffers the stack may hold before frames are copied", rxmem_watermark(total));
	metrics_simple(b, "vireo_rxmem_held", METRICS_GAUGE, "Receive buffers the stack holds now", held);
	metrics_simple(b, "vireo_rxmem_held_peak", METRICS_GAUGE, "Most receive buffers the stack held at once",
		       s->held_peak);
	metrics_simple(b, "vireo_rxmem_copied_frames_total", METRICS_COUNTER,
		       "Frames copied into lwIP's heap above the watermark", s->copied_frames);
	metrics_simple(b, "vireo_rxmem_copied_bytes_total", METRICS_COUNTER, "Bytes of the copied frames",
		       s->copied_bytes);
	metrics_simple(b, "vireo_rxmem_nomem_drops_total", METRICS_COUNTER,
		       "Frames dropped above the watermark: lwIP's heap too short for a copy", s->nomem_drops);
	metrics_simple(b, "vireo_rxmem_ooseq_pbufs", METRICS_GAUGE,
		       "TCP out-of-order pbufs kept, all connections", s->ooseq_pbufs);
	metrics_simple(b, "vireo_rxmem_ooseq_bytes", METRICS_GAUGE,
		       "TCP out-of-order payload bytes kept, all connections", s->ooseq_bytes);
	metrics_simple(b, "vireo_rxmem_ooseq_evictions_total", METRICS_COUNTER,
		       "Out-of-order queues freed by the global cap, oldest first", s->ooseq_evictions);
	metrics_simple(b, "vireo_rxmem_ooseq_evicted_pbufs_total", METRICS_COUNTER,
		       "Pbufs in the freed out-of-order queues", s->ooseq_evicted_pbufs);
	metrics_simple(b, "vireo_rxmem_ooseq_evicted_bytes_total", METRICS_COUNTER,
		       "Payload bytes in the freed out-of-order queues", s->ooseq_evicted_bytes);
	metrics_simple(b, "vireo_rxmem_bulk_windows", METRICS_GAUGE,
		       "Connections holding the bulk receive window now", s->bulk_grants);
	metrics_simple(b, "vireo_rxmem_bulk_windows_peak", METRICS_GAUGE,
		       "Most connections holding the bulk receive window at once", s->bulk_peak);
	metrics_simple(b, "vireo_rxmem_bulk_windows_granted_total", METRICS_COUNTER,
		       "Bulk receive windows granted", s->bulk_granted);
	metrics_simple(b, "vireo_rxmem_bulk_windows_refused_total", METRICS_COUNTER,
		       "Bulk receive windows asked for while all were held (TCP_WND instead)", s->bulk_refused);
}

static void app_loop_metrics(struct metrics_buf *b)
{
	metrics_simple(b, "vireo_loop_iterations_total", METRICS_COUNTER, "Event loop iterations",
		       loop_stats.iterations);
	metrics_simple(b, "vireo_loop_halts_total", METRICS_COUNTER, "Times the loop halted for an interrupt",
		       loop_stats.halts);
	metrics_simple(b, "vireo_loop_timer_writes_total", METRICS_COUNTER,
		       "LAPIC timer programmings (armed before a halt only when the deadline changed or it fired)",
		       loop_stats.timer_writes);
	metrics_simple(b, "vireo_loop_work_runs_total", METRICS_COUNTER, "Work items run", loop_stats.work_runs);
	metrics_simple(b, "vireo_loop_timers_fired_total", METRICS_COUNTER, "Timers fired", loop_stats.timers_fired);
	/* The guest's own idle time (halted in the loop), so a profile can tell
	 * a guest waiting for work from a vCPU thread waiting for a host CPU:
	 * QMP RIP samples cannot (a vCPU woken from its halt but not yet run by
	 * the host still shows the halt's RIP). */
	metrics_simple(b, "vireo_loop_halted_microseconds_total", METRICS_COUNTER,
		       "Microseconds the loop spent halted, waiting for an interrupt",
		       time_tsc_to_ns(loop_stats.idle_tsc) / 1000);
}

/* TCP PCBs by list: connections in use vs. TIME_WAIT (bounded by the port's
 * trim), so a leak shows apart from the TIME_WAIT a closing server keeps. */
static void app_tcp_metrics(struct metrics_buf *b)
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

static struct metrics_source tcp_source = { "tcp", app_tcp_metrics, NULL };
static struct metrics_source vnet_source = { "vnet", app_vnet_metrics, NULL };
static struct metrics_source loop_source = { "loop", app_loop_metrics, NULL };
static struct metrics_source rxmem_source = { "rxmem", app_rxmem_metrics, NULL };

/* ---- power off: drain the HTTP server ---- */


static void app_drain_begin(void *ctx, struct power_drain_counts *c)
{
	(void)ctx;
	http_server_drain(&c->idle, &c->busy);
}

/* Done when the server holds no connection and lwIP has nothing of ours
 * unsent or unacknowledged (the last responses and FINs were delivered). */
static bool app_drain_done(void *ctx)
{
	struct tcp_pcb *p;

	(void)ctx;
	if (http_server_stats.conns_active)
		return false;
	for (p = tcp_active_pcbs; p; p = p->next)
		if ((p->local_port == drain_port || p->local_port == https_port()) && (p->unsent || p->unacked))
			return false;
	return true;
}

static u32 app_drain_cut(void *ctx)
{
	u32 left = (u32)http_server_stats.conns_active;

	(void)ctx;
	http_server_stop();
	return left;
}

static const struct power_drain_ops http_drain = {
	.begin = app_drain_begin,
	.done = app_drain_done,
	.cut = app_drain_cut,
};

int app_start(void)
{
	int err;

	metrics_register(&vnet_source);
	metrics_register(&loop_source);
	metrics_register(&tcp_source);
	metrics_register(&rxmem_source);
	http_set_date_source(wallclock_http_now);	/* a Date header once the clock is set */
	err = http_server_start((u16)http_port, NULL);
	if (err) {
		kprintf("http: cannot listen on port %u (%d)\n", (unsigned)http_port, err);
		api_apps_start();	/* their TCP/UDP services may still serve */
		return err;
	}
	drain_port = (u16)http_port;
	power_register_drain(&http_drain);
	metadata_start();	/* before the address: it gates the ready line */
	/* The apps' routes and services (include/vireo/); each logs itself. */
	api_apps_start();
#ifdef VIREO_TLS
	/* Each logs its own result; HTTP serves either way. */
	if (tls_start() == 0)
		https_start();
#endif
	return 0;
}
