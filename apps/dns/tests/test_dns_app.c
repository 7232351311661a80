/* apps/dns/dns.c, the glue, over the runtime's host build (the real lwIP
 * core on the test wire, tests/host/lwip/lwip_wire.c) under ASan/UBSan: its init
 * binds UDP and TCP 53 through the API, UDP answers go through the rate
 * limiter (dns.rrl.rate 20, slip 2 by default, on the fake clock), TCP
 * answers are framed, pipelined, held back while over the runtime's 4 KiB
 * unacknowledged bound, bounded to 100 per connection, and a bad length
 * resets the connection. Every connection's memory is back after each test. */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/memp.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/udp.h"
#include "runtime/api.h"
#include "net/port/lwip_port.h"
#include "tests/host/lwip/lwip_wire.h"
#include "apps/dns/dnsmsg.h"
#include "lib/byteorder.h"
#include "apps/dns/tests/dnsq.h"
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

static size_t mkq(u8 *q, const char *name, u16 qtype, u16 id)
{
	size_t n = 12;

	memset(q, 0, 12);
	put_be16(q, id);
	q[2] = 1;
	put_be16(q + 4, 1);
	n += dnsq_put_name(q + n, name);
	put_be16(q + n, qtype);
	put_be16(q + n + 2, 1);
	return n + 4;
}

/* ---- UDP ---- */

static struct {
	unsigned full, slip, other;
	u8 last[DNS_UDP_MAX];
	size_t last_len;
} uc;

static void uc_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	uc.last_len = pbuf_copy_partial(p, uc.last, sizeof uc.last, 0);
	if (uc.last_len >= 12 && (uc.last[2] & 0x02) && get_be16(uc.last + 6) == 0)
		uc.slip++;
	else if (uc.last_len >= 12 && get_be16(uc.last + 6) > 0)
		uc.full++;
	else
		uc.other++;
	pbuf_free(p);
}

static void uc_send(struct udp_pcb *pcb, const u8 *q, size_t n)
{
	struct pbuf *p = pbuf_alloc(PBUF_TRANSPORT, (u16_t)n, PBUF_RAM);

	assert_non_null(p);
	memcpy(p->payload, q, n);
	assert_int_equal(udp_sendto(pcb, p, &addr4, 53), ERR_OK);
	pbuf_free(p);
}

static long kmem_base;

static int group_setup(void **state)
{
	ip4_addr_t a, m, g;

	assert_int_equal(vireo_lwip_init(), 0);
	IP4_ADDR(&a, 192, 168, 7, 2);
	IP4_ADDR(&m, 255, 255, 255, 0);
	IP4_ADDR(&g, 192, 168, 7, 1);
	assert_non_null(netif_add(&nif, &a, &m, &g, NULL, nif_init, ip_input));
	netif_set_default(&nif);
	netif_set_up(&nif);
	netif_set_link_up(&nif);
	ip_addr_copy_from_ip4(addr4, a);
	run_step(5000, 100);
	assert_int_equal(api_apps_start(), 0);
	assert_true(hk_log_contains("dns: zone vireo.test. (37 records) on udp/tcp 53, rrl 20/s slip 2"));
	kmem_base = hk_kmem_live();
	return 0;
}

static int teardown(void **state)
{
	run_step(60000, 250);
	assert_int_equal(api_handles_live(), 0);
	assert_int_equal(hk_kmem_live(), kmem_base);	/* every connection's block freed */
	return 0;
}

static void test_udp_and_rate_limit(void **state)
{
	struct udp_pcb *pcb = udp_new_ip_type(IPADDR_TYPE_V4);
	u8 q[300];
	size_t n = mkq(q, "WWW.vireo.test", DNS_TYPE_A, 0x77);

	memset(&uc, 0, sizeof uc);
	assert_int_equal(udp_bind(pcb, IP4_ADDR_ANY, 40053), ERR_OK);
	udp_recv(pcb, uc_recv, NULL);
	run_ms(2000);	/* a full bucket */
	uc_send(pcb, q, n);
	wire_drain();
	assert_int_equal(uc.full, 1);
	assert_int_equal(get_be16(uc.last), 0x77);
	assert_int_equal(get_be16(uc.last + 6), 3);	/* the CNAME chain to the A */
	assert_memory_equal(uc.last + 12, q + 12, n - 12);	/* the question as asked */
	/* 60 more at one instant: 19 more fit the 20 a second burst; of the
	 * 41 over, every second one slips (TC, no answer), the rest drop. */
	for (int i = 0; i < 60; i++)
		uc_send(pcb, q, n);
	wire_drain();
	assert_int_equal(uc.full, 20);
	assert_int_equal(uc.slip, 20);
	assert_int_equal(uc.other, 0);
	/* A second later the bucket is full again. */
	run_ms(1000);
	uc_send(pcb, q, n);
	wire_drain();
	assert_int_equal(uc.full, 21);
	/* A response or a runt is not answered at all. */
	q[2] |= 0x80;
	uc_send(pcb, q, n);
	uc_send(pcb, q, 5);
	wire_drain();
	assert_int_equal(uc.full + uc.slip + uc.other, 41);
	udp_remove(pcb);
}

/* The loop of issue 29: a query spoofed from chargen's port (19), or from
 * another DNS server's (53), would make our answer a datagram to a service
 * that answers anything. The runtime drops it before the app (dns keeps
 * the default: clients ask from ephemeral ports) and counts it; the same
 * query from a high port is answered. */
static void test_udp_refuses_service_ports(void **state)
{
	static const u16 from[] = { 19, 53, 1900 };
	struct vireo_udp_stats st0, st;
	u8 q[300];
	size_t n = mkq(q, "www.vireo.test", DNS_TYPE_A, 0x19);

	memset(&uc, 0, sizeof uc);
	run_ms(2000);	/* a full rate-limit bucket */
	assert_int_equal(vireo_udp_stats((vireo_udp){ 1 }, &st0), 0);
	for (size_t i = 0; i <= ARRAY_SIZE(from); i++) {
		struct udp_pcb *pcb = udp_new_ip_type(IPADDR_TYPE_V4);

		assert_non_null(pcb);
		if (udp_bind(pcb, IP4_ADDR_ANY, i < ARRAY_SIZE(from) ? from[i] : 40019) != ERR_OK)
			pcb->local_port = from[i];	/* 53, the server's own: sends, never hears */
		udp_recv(pcb, uc_recv, NULL);
		uc_send(pcb, q, n);
		wire_drain();
		udp_remove(pcb);
	}
	assert_int_equal(uc.full, 1);	/* the last, from 40019 */
	assert_int_equal(uc.slip + uc.other, 0);
	assert_int_equal(vireo_udp_stats((vireo_udp){ 1 }, &st), 0);
	/* 53 is dns's own port too; counted as what it is first, a service's */
	assert_int_equal(st.dropped_service_port - st0.dropped_service_port, 3);
	assert_int_equal(st.dropped_own_port - st0.dropped_own_port, 0);
	assert_int_equal(st.datagrams - st0.datagrams, 1);
}

/* ---- TCP ---- */

/* The framed answers in the client's buffer: count and the last's header. */
static unsigned framed(const struct client *c, unsigned *an_total, bool *any_tc)
{
	size_t o = 0;
	unsigned k = 0;

	*an_total = 0;
	*any_tc = false;
	while (c->len - o >= 2 && c->len - o - 2 >= get_be16(c->buf + o)) {
		const u8 *m = c->buf + o + 2;

		assert_true(get_be16(c->buf + o) >= 12);
		*an_total += get_be16(m + 6);
		*any_tc |= (m[2] & 0x02) != 0;
		o += 2u + get_be16(c->buf + o);
		k++;
	}
	assert_int_equal(o, c->len);	/* nothing but whole messages */
	return k;
}

static void test_tcp_pipelined_over_the_send_bound(void **state)
{
	static u8 stream[8 * 40];
	struct client c;
	u8 q[300];
	size_t n = mkq(q, "big.vireo.test", DNS_TYPE_TXT, 9), o = 0;
	unsigned an;
	bool tc;

	for (int i = 0; i < 8; i++) {
		put_be16(stream + o, (u16)n);
		memcpy(stream + o + 2, q, n);
		o += n + 2;
	}
	cl_open(&c, V4, 53);
	cl_send(&c, stream, o);
	for (int i = 0; i < 100 && c.len < 8 * 3058; i++)
		run_ms(20);
	assert_int_equal(framed(&c, &an, &tc), 8);	/* 8 x 3,056 bytes: past 4 KiB unacknowledged */
	assert_int_equal(an, 8 * 12);
	assert_false(tc);
	assert_false(c.dead);
	cl_close(&c);
}

static void test_tcp_bounds(void **state)
{
	static u8 stream[120 * 32];
	struct client c, bad;
	u8 q[300];
	size_t n = mkq(q, "vireo.test", DNS_TYPE_A, 1), o = 0;
	unsigned an;
	bool tc;

	for (int i = 0; i < 120; i++) {
		put_be16(stream + o, (u16)n);
		memcpy(stream + o + 2, q, n);
		o += n + 2;
	}
	cl_open(&c, V4, 53);
	cl_send(&c, stream, o);
	run_ms(1000);
	assert_int_equal(framed(&c, &an, &tc), 100);	/* then the server closes */
	assert_true(c.eof || c.dead);
	cl_close(&c);
	/* A length of 0: reset, nothing answered. */
	cl_open(&bad, V4, 53);
	cl_send(&bad, "\0\0", 2);
	run_ms(200);
	assert_true(bad.dead);
	assert_int_equal(bad.len, 0);
	cl_abort(&bad);
	/* Over 1024: the same. */
	cl_open(&bad, V4, 53);
	cl_send(&bad, "\x04\x01", 2);
	run_ms(200);
	assert_true(bad.dead);
	cl_abort(&bad);
}

static void test_tcp_split_and_eof(void **state)
{
	struct client c;
	u8 q[300], m[302];
	size_t n = mkq(q, "nope.vireo.test", DNS_TYPE_A, 5);
	unsigned an;
	bool tc;

	put_be16(m, (u16)n);
	memcpy(m + 2, q, n);
	cl_open(&c, V4, 53);
	for (size_t i = 0; i < n + 2; i++)
		cl_send(&c, m + i, 1);
	run_ms(100);
	assert_int_equal(framed(&c, &an, &tc), 1);
	assert_int_equal(c.buf[2 + 3] & 0xf, DNS_RCODE_NXDOMAIN);
	/* Half a message, then the peer's FIN: the server closes too. */
	cl_send(&c, m, 7);
	tcp_shutdown(c.pcb, 0, 1);
	run_ms(200);
	assert_true(c.eof);
	cl_close(&c);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_udp_and_rate_limit),
		T(test_udp_refuses_service_ports),
		T(test_tcp_pipelined_over_the_send_bound),
		T(test_tcp_bounds),
		T(test_tcp_split_and_eof),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
