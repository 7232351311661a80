/* apps/echo/echo.c over the runtime's host build (the real lwIP core on the
 * test wire, tests/host/lwip/lwip_wire.c) under ASan/UBSan: TCP echo through
 * the API's TCP services (bounded by one window received and one
 * unacknowledged, the bulk window for uploads), the per-source table, UDP
 * echo with its refusals (the runtime's and its own) and rates, datagrams
 * past one frame, and /metrics' vireo_echo_* families, which echo writes
 * as it did when it was the runtime's. After every test all connections
 * must be gone and lwIP's pools, its heap and the kernel heap shim back to
 * where they started. */
#define _GNU_SOURCE	/* memmem */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/ip_addr.h"
#include "lwip/memp.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"
#include "lwip/priv/tcp_priv.h"
#include "runtime/api.h"
#include "lib/metrics.h"
#include "net/port/lwip_port.h"
#include "net/tcp/rxmem.h"
#include "net/tcp/tcpconn.h"
#include "tests/host/lwip/lwip_wire.h"
#include "tests/host/shim/hostk.h"
#include "apps/echo/echo.h"
#include "vireo/vireo.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define V4 false
#define V6 true

static const struct echo_cfg echo_cfg_all = { .port = ECHO_PORT, .services = ECHO_TCP | ECHO_UDP };
static long base_kmem;	/* kernel heap blocks after the apps started */

static int group_setup(void **state)
{
	assert_int_equal(vireo_lwip_init(), 0);
	/* As netif_vnet does; no bulk windows but in the test that asks. */
	rxmem_init();
	rxmem_limits.bulk_max = 0;
	wire_netif_up();
	/* echo= is off: the app's init registers its metrics writer only. */
	assert_int_equal(api_apps_start(), 0);
	assert_true(hk_log_contains("app echo: TCP and UDP echo (RFC 862) on port 7 when echo= asks"));
	base_kmem = hk_kmem_live();
	return 0;
}

static int setup(void **state)
{
	wire_snapshot();
	assert_int_equal(echo_start(&echo_cfg_all), 0);
	return 0;
}

/* Stop the services, wait out TIME_WAIT (2 MSL) and check nothing is left. */
static int teardown(void **state)
{
	api_services_stop();
	echo_stop();
	run_step(2 * TCP_MSL + 10000, 250);
	wire_check_idle();
	assert_null(wire_head);
	assert_int_equal(api_handles_live(), 0);
	assert_int_equal(hk_kmem_live(), base_kmem);
	return 0;
}

/* The service's counters, as /metrics' vireo_echo_tcp_* shows them. */
static struct vireo_tcp_stats tcp_stats(u16 port)
{
	struct vireo_tcp_stats st;

	assert_int_equal(vireo_tcp_stats(port, &st), 0);
	return st;
}

static void test_start_twice(void **state)
{
	assert_int_equal(echo_start(&echo_cfg_all), -EBUSY);
}

/* ---- TCP ---- */

static void test_tcp_echo(void **state)
{
	static u8 data[20000];
	struct client c;
	size_t i;

	for (i = 0; i < sizeof data; i++)
		data[i] = (u8)(i * 7 + 3);
	cl_open(&c, V4, ECHO_PORT);
	cl_send(&c, data, sizeof data);
	for (i = 0; i < 100 && c.len < sizeof data; i++)
		run_ms(50);
	assert_int_equal(c.len, sizeof data);
	assert_memory_equal(c.buf, data, sizeof data);
	assert_int_equal(echo_stats.tcp_bytes, sizeof data);
	assert_int_equal(tcp_stats(ECHO_PORT).active, 1);
	cl_close(&c);
	run_ms(100);
	assert_int_equal(tcp_stats(ECHO_PORT).active, 0);
	assert_int_equal(tcp_stats(ECHO_PORT).accepted, 1);
}

/* A peer that sends but does not read: the echo holds at most one window
 * received and one unacknowledged, then its window closes; once the peer
 * reads, everything comes back. */
static void test_tcp_echo_bounded(void **state)
{
	static u8 data[150000];	/* more than the client can queue (TCP_SND_BUF) */
	struct client c;
	size_t i;

	for (i = 0; i < sizeof data; i++)
		data[i] = (u8)(i % 253);
	cl_open(&c, V6, ECHO_PORT);
	c.hold = true;
	cl_send(&c, data, sizeof data);
	run_ms(3000);
	assert_true(c.len <= TCP_WND);
	assert_true(echo_stats.tcp_bytes <= 2 * TCP_WND);	/* client window + our unacked */
	assert_true(c.tx_off < sizeof data);		/* the sender is blocked */
	assert_true(c.tx_off - echo_stats.tcp_bytes <= TCP_WND + TCP_SND_BUF);	/* ours, and its queue */
	cl_resume(&c);
	for (i = 0; i < 200 && c.len < sizeof data; i++)
		run_ms(50);
	assert_int_equal(c.len, sizeof data);
	assert_memory_equal(c.buf, data, sizeof data);
	cl_close(&c);
}

/* An upload takes one of the bulk windows: more in flight, the same bytes
 * back; with every grant held the next connection gets TCP_WND, counted. */
static void test_tcp_echo_bulk(void **state)
{
	static u8 data[200000];
	struct client c[2];
	u64 refused0 = rxmem_stats.bulk_refused;
	size_t i;

	rxmem_limits.bulk_max = 1;
	for (i = 0; i < sizeof data; i++)
		data[i] = (u8)(i % 251);
	cl_open(&c[0], V4, ECHO_PORT);
	cl_open(&c[1], V6, ECHO_PORT);
	assert_int_equal(rxmem_stats.bulk_grants, 1);
	assert_int_equal(rxmem_stats.bulk_refused, refused0 + 1);
	for (i = 0; i < 2; i++)
		cl_send(&c[i], data, sizeof data);
	for (i = 0; i < 400 && (c[0].len < sizeof data || c[1].len < sizeof data); i++)
		run_ms(50);
	for (i = 0; i < 2; i++) {
		assert_int_equal(c[i].len, sizeof data);
		assert_memory_equal(c[i].buf, data, sizeof data);
		cl_close(&c[i]);
	}
	run_ms(100);
	rxmem_limits.bulk_max = 0;
}

/* Echo's table: its cap, its fair share. */
static void test_echo_per_source(void **state)
{
	struct echo_cfg cfg = { .port = ECHO_PORT, .services = ECHO_TCP, .max_conns = 2 };
	struct client c[3];
	int i;

	api_services_stop();
	echo_stop();
	assert_int_equal(echo_start(&cfg), 0);
	cl_open(&c[0], V4, ECHO_PORT);
	cl_open(&c[1], V4, ECHO_PORT);
	cl_open(&c[2], V6, ECHO_PORT);	/* full: evicts the oldest v4 */
	run_ms(100);
	assert_true(c[0].dead);
	assert_false(c[1].dead);
	assert_false(c[2].dead);
	assert_int_equal(tcp_stats(ECHO_PORT).evicted, 1);
	cl_send_str(&c[2], "abc");
	run_ms(100);
	assert_int_equal(c[2].len, 3);
	for (i = 0; i < 3; i++)
		i ? cl_close(&c[i]) : cl_abort(&c[i]);
}

/* A newcomer refused after the table chose its victim (here: no handle
 * left for it, api_handle_new() failing) evicts nobody: every refusal
 * comes before the eviction (issue 29). Once handles are free again, the
 * same newcomer takes the victim's place. */
static void test_echo_refused_evicts_nobody(void **state)
{
	struct echo_cfg cfg = { .port = ECHO_PORT, .services = ECHO_TCP, .max_conns = 2 };
	static u32 ids[API_HANDLE_SLOTS_MAX];
	static int dummy;
	static struct client c[4];	/* static: a failed assertion leaves no pcb pointing into the stack */
	u32 n = 0, i;

	api_services_stop();
	echo_stop();
	assert_int_equal(echo_start(&cfg), 0);
	cl_open(&c[0], V4, ECHO_PORT);
	cl_open(&c[1], V4, ECHO_PORT);
	while (n < API_HANDLE_SLOTS_MAX && (ids[n] = api_handle_new(API_H_REQ, &dummy)))
		n++;
	assert_true(n > 0 && n < API_HANDLE_SLOTS_MAX);
	cl_open(&c[2], V6, ECHO_PORT);	/* full: the oldest v4 is the victim, but no handle */
	run_ms(100);
	assert_true(c[2].dead);
	assert_false(c[0].dead);
	assert_false(c[1].dead);
	assert_int_equal(tcp_stats(ECHO_PORT).evicted, 0);
	assert_int_equal(tcp_stats(ECHO_PORT).refused, 1);
	assert_int_equal(tcp_stats(ECHO_PORT).active, 2);
	for (i = 0; i < n; i++)
		api_handle_free(ids[i]);
	cl_open(&c[3], V6, ECHO_PORT);
	run_ms(100);
	assert_true(c[0].dead);
	assert_false(c[3].dead);
	assert_int_equal(tcp_stats(ECHO_PORT).evicted, 1);
	for (i = 0; i < 4; i++)
		i == 0 || i == 2 ? cl_abort(&c[i]) : cl_close(&c[i]);
}

/* Every one of the heap budget's VIREO_TCP_CONNS_TOTAL connections taken
 * by echo's table (16 of 16, one source): a newcomer from another source
 * still takes the place of the heaviest source's oldest, as with room in
 * the budget; before, the budget refused it first and one source kept
 * the whole service. */
static void test_echo_budget_full_evicts(void **state)
{
	static struct client c[VIREO_TCP_CONNS_TOTAL + 1];
	u32 i;

	_Static_assert(ECHO_MAX_CONNS == VIREO_TCP_CONNS_TOTAL, "echo's table is the whole budget");
	for (i = 0; i < VIREO_TCP_CONNS_TOTAL; i++)
		cl_open(&c[i], V4, ECHO_PORT);
	assert_int_equal(tcp_stats(ECHO_PORT).active, VIREO_TCP_CONNS_TOTAL);
	cl_open(&c[i], V6, ECHO_PORT);
	run_ms(100);
	assert_false(c[VIREO_TCP_CONNS_TOTAL].dead);
	assert_true(c[0].dead);
	assert_int_equal(tcp_stats(ECHO_PORT).evicted, 1);
	assert_int_equal(tcp_stats(ECHO_PORT).refused, 0);
	cl_send_str(&c[VIREO_TCP_CONNS_TOTAL], "abc");
	run_ms(100);
	assert_int_equal(c[VIREO_TCP_CONNS_TOTAL].len, 3);
	for (i = 0; i <= VIREO_TCP_CONNS_TOTAL; i++)
		i ? cl_close(&c[i]) : cl_abort(&c[i]);
}

/* A reader that takes a few bytes a second of what echo sends back: ACK
 * progress keeps the send stall and the idle timeout at bay, so before
 * the throughput floor it held its connection and 4 KiB in flight for
 * ever. Above the floor (4 KiB outstanding: 512 B per 8 s) it is served;
 * below, reset within two periods, counted. */
static void test_echo_slow_reader_floor(void **state)
{
	/* The client's window (5,840), echo's 4 KiB in flight and most of its
	 * rx[] (8 KiB): its window never closes (two lwIP ends with both
	 * windows at zero ACK each other's ACKs for ever). */
	static u8 data[16000];
	static struct client c;
	int t;

	for (t = 0; t < (int)sizeof data; t++)
		data[t] = (u8)(t % 253);
	cl_open(&c, V6, ECHO_PORT);
	c.hold = true;
	cl_send(&c, data, sizeof data);
	run_ms(2000);	/* the client's window fills, then echo's in flight */
	for (t = 0; t < 30; t++) {	/* 160 B/s: above the floor */
		cl_window(&c, 160);
		run_ms(1000);
	}
	assert_false(c.dead);
	assert_int_equal(tcp_stats(ECHO_PORT).timeouts_slow, 0);
	for (t = 0; t < 60 && !c.dead; t++) {	/* 16 B/s: below */
		cl_window(&c, 16);
		run_ms(1000);
	}
	assert_true(c.dead);
	assert_true(t <= 2 * TCPCONN_FLOOR_MS / 1000 + 1);
	assert_int_equal(tcp_stats(ECHO_PORT).timeouts_slow, 1);
	assert_int_equal(tcp_stats(ECHO_PORT).timeouts_send, 0);
	assert_int_equal(tcp_stats(ECHO_PORT).timeouts_idle, 0);
	cl_abort(&c);
}

/* ---- UDP ---- */

struct udp_client {
	u8 got[9000];
	size_t len;
	u16 from;
	int answers;
};

static void udp_in(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	struct udp_client *u = arg;

	u->len = pbuf_copy_partial(p, u->got, sizeof u->got, 0);
	u->from = port;
	u->answers++;
	pbuf_free(p);
}

/* n datagrams of len bytes (a pattern) from port `from` to `to` (NULL: the
 * appliance), port ECHO_PORT; the answers, the last one kept in *u. */
static int udp_burst_len(bool v6, u16 from, const ip_addr_t *to, int n, size_t len, struct udp_client *u)
{
	struct udp_pcb *pcb = udp_new_ip_type(v6 ? IPADDR_TYPE_V6 : IPADDR_TYPE_V4);
	int i;

	memset(u, 0, sizeof *u);
	assert_non_null(pcb);
	assert_int_equal(udp_bind(pcb, v6 ? IP6_ADDR_ANY : IP4_ADDR_ANY, from), ERR_OK);
	udp_recv(pcb, udp_in, u);
	for (i = 0; i < n; i++) {
		struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)len, PBUF_RAM);

		assert_non_null(p);
		for (size_t k = 0; k < len; k++)
			((u8 *)p->payload)[k] = (u8)(k * 13 + i);
		udp_sendto(pcb, p, to ? to : v6 ? &addr6 : &addr4, ECHO_PORT);
		pbuf_free(p);
		wire_drain();
	}
	run_ms(20);
	udp_remove(pcb);
	return u->answers;
}

static int udp_burst(bool v6, u16 from, const ip_addr_t *to, int n)
{
	static struct udp_client u;

	return udp_burst_len(v6, from, to, n, 4, &u);
}

static void test_udp_echo(void **state)
{
	static struct udp_client u;

	assert_int_equal(udp_burst_len(V4, 4000, NULL, 1, 9, &u), 1);
	assert_int_equal(u.len, 9);
	assert_int_equal(u.from, ECHO_PORT);
	assert_int_equal(udp_burst_len(V6, 4000, NULL, 1, 9, &u), 1);
	assert_int_equal(echo_stats.udp_datagrams, 2);
	assert_int_equal(echo_stats.udp_bytes, 18);
}

/* Past one frame and past 4 KiB: fragmented both ways, echoed whole. */
static void test_udp_echo_large(void **state)
{
	static struct udp_client u;
	size_t k;

	assert_int_equal(udp_burst_len(V4, 4000, NULL, 1, 8900, &u), 1);
	assert_int_equal(u.len, 8900);
	for (k = 0; k < u.len; k++)
		assert_int_equal(u.got[k], (u8)(k * 13));
	assert_int_equal(udp_burst_len(V6, 4001, NULL, 1, 6000, &u), 1);
	assert_int_equal(u.len, 6000);
}

static void test_udp_echo_refusals(void **state)
{
	struct vireo_udp_stats st;
	ip_addr_t bcast, mcast;

	IP_ADDR4(&bcast, 192, 168, 7, 255);
	assert_true(ipaddr_aton("ff02::1", &mcast));
	assert_int_equal(udp_burst(V4, 19, NULL, 1), 0);	/* chargen */
	assert_int_equal(udp_burst(V6, 13, NULL, 1), 0);	/* daytime */
	assert_int_equal(vireo_udp_stats((vireo_udp){ 1 }, &st), 0);
	assert_int_equal(st.dropped_service_port, 2);	/* the runtime's rule */
	assert_int_equal(udp_burst(V4, 5000, &bcast, 1), 0);
	assert_int_equal(udp_burst(V6, 5000, &mcast, 1), 0);
	assert_int_equal(udp_burst(V4, 5000, NULL, 1), 1);	/* and a fine one */
	assert_int_equal(echo_stats.udp_datagrams, 1);
	/* Nor broadcast and multicast. */
	assert_int_equal(vireo_udp_stats((vireo_udp){ 1 }, &st), 0);
	assert_int_equal(st.dropped_broadcast, 1);
	assert_int_equal(st.dropped_multicast, 1);
}

/* Echo on a high port: its own port is refused as a source too. */
static void test_udp_echo_own_port(void **state)
{
	struct echo_cfg cfg = { .port = 7007, .services = ECHO_UDP };
	struct vireo_udp_stats st;
	struct udp_pcb *pcb;
	struct pbuf *p;

	api_services_stop();
	echo_stop();
	assert_int_equal(echo_start(&cfg), 0);
	/* A second PCB on the same port would be refused by udp_bind(): send
	 * from the echo's own port through a connected raw-API PCB instead. */
	pcb = udp_new_ip_type(IPADDR_TYPE_V4);
	assert_non_null(pcb);
	pcb->local_port = 7007;		/* as another host's echo would */
	p = pbuf_alloc(PBUF_TRANSPORT, 4, PBUF_RAM);
	assert_non_null(p);
	pbuf_take(p, "loop", 4);
	assert_int_equal(udp_sendto(pcb, p, &addr4, 7007), ERR_OK);
	pbuf_free(p);
	run_ms(20);
	assert_int_equal(vireo_udp_stats((vireo_udp){ 1 }, &st), 0);
	assert_int_equal(st.dropped_own_port, 1);
	assert_int_equal(echo_stats.udp_datagrams, 0);
	udp_remove(pcb);
}

static void test_udp_echo_rate(void **state)
{
	struct echo_cfg cfg = { .port = ECHO_PORT, .services = ECHO_UDP };

	/* One source: its burst, then its rate. */
	assert_int_equal(udp_burst(V4, 5000, NULL, 40), ECHO_UDP_SRC_BURST);
	assert_int_equal(echo_stats.udp_refused[ECHO_UDP_RATE_SOURCE], 40 - ECHO_UDP_SRC_BURST);
	run_ms(500);
	assert_int_equal(udp_burst(V4, 5001, NULL, 40), ECHO_UDP_SRC_RATE / 2);
	/* Another source has its own bucket. */
	assert_int_equal(udp_burst(V6, 5000, NULL, 4), 4);

	/* All sources together: the global bucket. */
	cfg.udp_rate = 1;
	cfg.udp_burst = 6;
	cfg.udp_src_burst = 100;
	api_services_stop();
	echo_stop();
	assert_int_equal(echo_start(&cfg), 0);
	assert_int_equal(udp_burst(V4, 5000, NULL, 5) + udp_burst(V6, 5000, NULL, 5), 6);
	assert_int_equal(echo_stats.udp_refused[ECHO_UDP_RATE_GLOBAL], 4);
}

/* echo_start() with no service, or an unknown one, is refused. */
static void test_echo_services(void **state)
{
	struct echo_cfg none = { .port = ECHO_PORT }, bad = { .port = ECHO_PORT, .services = 4 };

	api_services_stop();
	echo_stop();
	assert_int_equal(echo_start(&none), -EINVAL);
	assert_int_equal(echo_start(&bad), -EINVAL);
	assert_int_equal(echo_start(&echo_cfg_all), 0);
}

/* ---- /metrics ---- */

static char *metrics_text(size_t *len)
{
	static char buf[64 * 1024];
	struct metrics_buf b;

	metrics_buf_init(&b, buf, sizeof buf - 1);
	metrics_write_all(&b);
	assert_false(b.overflow);
	buf[b.len] = '\0';
	*len = b.len;
	return buf;
}

static bool has_line(const char *text, const char *line)
{
	const char *p = strstr(text, line);

	return p && (p == text || p[-1] == '\n') && p[strlen(line)] == '\n';
}

/* The families and help texts the runtime's echo wrote, each refusal
 * counted under its reason whoever drops it; none while echo is off. */
static void test_echo_metrics(void **state)
{
	struct client c;
	size_t len;
	char *m;
	ip_addr_t bcast;

	IP_ADDR4(&bcast, 192, 168, 7, 255);
	cl_open(&c, V4, ECHO_PORT);
	cl_send_str(&c, "abc");
	run_ms(100);
	udp_burst(V4, 19, NULL, 2);
	udp_burst(V4, 5000, &bcast, 1);
	udp_burst(V4, 5000, NULL, 1);
	m = metrics_text(&len);
	assert_true(has_line(m, "# HELP vireo_echo_tcp_connections_accepted_total Echo TCP connections accepted."));
	assert_true(has_line(m, "# TYPE vireo_echo_tcp_connections_accepted_total counter"));
	assert_true(has_line(m, "vireo_echo_tcp_connections_accepted_total 1"));
	assert_true(has_line(m, "# TYPE vireo_echo_tcp_connections_active gauge"));
	assert_true(has_line(m, "vireo_echo_tcp_connections_active 1"));
	assert_true(has_line(m, "vireo_echo_tcp_bytes_total 3"));
	assert_true(has_line(m, "vireo_echo_tcp_timeouts_total 0"));
	assert_true(has_line(m, "vireo_echo_udp_datagrams_total 1"));
	assert_true(has_line(m, "vireo_echo_udp_bytes_total 4"));
	assert_true(has_line(m, "vireo_echo_udp_dropped_total 3"));
	assert_true(has_line(m, "vireo_echo_udp_refused_total{reason=\"low_port\"} 2"));
	assert_true(has_line(m, "vireo_echo_udp_refused_total{reason=\"own_port\"} 0"));
	assert_true(has_line(m, "vireo_echo_udp_refused_total{reason=\"broadcast\"} 1"));
	assert_true(has_line(m, "vireo_echo_udp_refused_total{reason=\"multicast\"} 0"));
	assert_true(has_line(m, "vireo_echo_udp_refused_total{reason=\"rate_source\"} 0"));
	assert_true(has_line(m, "vireo_echo_udp_refused_total{reason=\"rate_global\"} 0"));
	/* and the runtime's view of the same services */
	assert_true(has_line(m, "vireo_app_tcp_connections_accepted_total{service=\"echo\"} 1"));
	assert_true(has_line(m, "vireo_app_udp_dropped_source_total{service=\"echo\",reason=\"broadcast\"} 1"));
	assert_true(has_line(m, "vireo_app_udp_dropped_source_total{service=\"echo\",reason=\"service_port\"} 2"));
	assert_true(has_line(m, "vireo_app_udp_dropped_source_total{service=\"echo\",reason=\"own_port\"} 0"));
	cl_close(&c);
	/* Off: no vireo_echo_ family at all. */
	echo_stop();
	m = metrics_text(&len);
	assert_null(strstr(m, "vireo_echo_"));
	assert_int_equal(echo_start(&echo_cfg_all), -EEXIST);	/* its services listen still */
	api_services_stop();
	echo_stop();
	assert_int_equal(echo_start(&echo_cfg_all), 0);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_start_twice),
		T(test_tcp_echo),
		T(test_tcp_echo_bounded),
		T(test_tcp_echo_bulk),
		T(test_echo_per_source),
		T(test_echo_refused_evicts_nobody),
		T(test_echo_budget_full_evicts),
		T(test_echo_slow_reader_floor),
		T(test_udp_echo),
		T(test_udp_echo_large),
		T(test_udp_echo_refusals),
		T(test_udp_echo_own_port),
		T(test_udp_echo_rate),
		T(test_echo_services),
		T(test_echo_metrics),
	};
#undef T
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
