/* The lwIP port (net/port/lwip_port.c): lwIP's 4-tuple index of active and
 * TIME_WAIT PCBs (net/port/patches/0010), its buckets as the port sizes them
 * (vireo_lwip_pcb_buckets()), at 20,000 connections: every segment reaches
 * its own connection's PCB, after aborts, TIME_WAIT and a reopened 4-tuple
 * too, and the PCBs a
 * segment's lookup examines (tcp_pcb_hash_probes, counted, never timed) stay
 * about one per segment. Hand-made IPv4 and IPv6 segments from four client
 * addresses go into ip_input(); lwIP's answers are read off the netif. With
 * the index left at one bucket (lwIP's old walk) the probe bounds fail.
 * And lwIP's timers (net/port/patches/0011) at 20,000 connections: the
 * PCBs a tcp_tmr() pass looks at (those whose last_timer it moved) and
 * the poll callbacks it makes follow the connections with something to
 * time, not the 20,000 idle ones (lwIP before the patch: 20,000 each). */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/ip_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"
#include "net/port/lwip_port.h"
#include "lib/byteorder.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/shim/inet_csum.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#if !TCP_PCB_HASH_COUNT
#error "tests/host/lwip/lwipopts.h sets TCP_PCB_HASH_COUNT"
#endif

#define NCONN		20000u
#define NV6		500u	/* of them over IPv6 */
#define PORT		80
#define SERVER_IP	0xc0a80702u	/* 192.168.7.2; fd00::c0a8:702 */
#define CLIENT_IP	0x0a000001u	/* 10.0.0.1 ..4; fd00::a00:1 ..4 */
#define NADDR		4u
#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_ACK 0x10

struct conn {
	struct tcp_pcb *pcb;	/* the server's, NULL once gone */
	u32 cseq;		/* the client's next sequence number */
	u32 sseq;		/* the server's next (what the client acknowledges) */
	u32 got;		/* payloads delivered to pcb */
	u32 gen;		/* bumped when the 4-tuple is reopened */
};

static struct conn conns[NCONN];
static struct netif nif;
static struct tcp_pcb *listener;

static bool conn_v6(u32 i)
{
	return i >= NCONN - NV6;
}

static u32 conn_addr(u32 i)
{
	return CLIENT_IP + i % NADDR;
}

static u16 conn_port(u32 i)
{
	return (u16)(1024 + i / NADDR);
}

/* ---- lwIP's output: the last segment sent, and a count ---- */

static struct {
	u32 dst;
	u16 dport;
	u32 seq, ack;
	u8 flags;
} last;
static u32 out_count;

static void out_tcp(const u8 *t, u32 dst)
{
	last.dst = dst;
	last.dport = get_be16(t + 2);
	last.seq = get_be32(t + 4);
	last.ack = get_be32(t + 8);
	last.flags = t[13];
	out_count++;
}

static err_t out4(struct netif *n, struct pbuf *p, const ip4_addr_t *a)
{
	u8 buf[128];
	u16 len = pbuf_copy_partial(p, buf, sizeof(buf), 0);

	assert_true(len >= 40 && buf[9] == IP_PROTO_TCP);
	out_tcp(buf + (buf[0] & 15) * 4, get_be32(buf + 16));
	return ERR_OK;
}

static err_t out6(struct netif *n, struct pbuf *p, const ip6_addr_t *a)
{
	u8 buf[128];
	u16 len = pbuf_copy_partial(p, buf, sizeof(buf), 0);

	if (len < 60 || buf[6] != IP_PROTO_TCP)
		return ERR_OK;	/* MLD/ND */
	out_tcp(buf + 40, get_be32(buf + 36));
	return ERR_OK;
}

static err_t nif_init(struct netif *n)
{
	n->name[0] = 't';
	n->name[1] = 'x';
	n->output = out4;
	n->output_ip6 = out6;
	n->mtu = 1500;
	return ERR_OK;
}

/* ---- the clients: hand-made segments into ip_input() ---- */

static void v6_addr(u8 *p, u32 v4)
{
	memset(p, 0, 16);
	p[0] = 0xfd;
	put_be32(p + 12, v4);
}

/* One segment from connection i's client; returns the PCBs lwIP examined
 * in its index for it. */
static u32 send_seg(u32 i, u32 seq, u32 ack, u8 flags, const void *data, u16 len)
{
	bool v6 = conn_v6(i);
	u16 ihl = v6 ? 40 : 20, tot = (u16)(ihl + 20 + len);
	u8 pkt[128] = { 0 }, *t = pkt + ihl, pseudo[40];
	u32 sum, before = tcp_pcb_hash_probes;
	size_t plen;
	struct pbuf *p;

	assert_true(tot <= sizeof(pkt));
	if (v6) {
		pkt[0] = 0x60;
		put_be16(pkt + 4, (u16)(20 + len));
		pkt[6] = IP_PROTO_TCP;
		pkt[7] = 64;
		v6_addr(pkt + 8, conn_addr(i));
		v6_addr(pkt + 24, SERVER_IP);
		memcpy(pseudo, pkt + 8, 32);
		plen = 32;
	} else {
		pkt[0] = 0x45;
		put_be16(pkt + 2, tot);
		pkt[8] = 64;
		pkt[9] = IP_PROTO_TCP;
		put_be32(pkt + 12, conn_addr(i));
		put_be32(pkt + 16, SERVER_IP);
		put_be16(pkt + 10, csum_fold(csum_add(0, pkt, 20)));
		memcpy(pseudo, pkt + 12, 8);
		plen = 8;
	}
	put_be16(t, conn_port(i));
	put_be16(t + 2, PORT);
	put_be32(t + 4, seq);
	put_be32(t + 8, ack);
	t[12] = 5 << 4;
	t[13] = flags;
	put_be16(t + 14, 65535);
	if (len)
		memcpy(t + 20, data, len);
	sum = csum_add(0, pseudo, plen);
	sum += IP_PROTO_TCP + 20u + len;
	sum = csum_add(sum, t, 20u + len);
	put_be16(t + 16, csum_fold(sum));

	p = pbuf_alloc(PBUF_RAW, tot, PBUF_POOL);
	assert_non_null(p);
	assert_int_equal(pbuf_take(p, pkt, tot), ERR_OK);
	assert_int_equal(nif.input(p, &nif), ERR_OK);
	return tcp_pcb_hash_probes - before;
}

/* ---- the server ---- */

static err_t srv_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct conn *c = arg;
	u8 b[4];

	assert_non_null(c);
	assert_ptr_equal(c->pcb, pcb);
	if (p == NULL)
		return ERR_OK;
	assert_int_equal(pbuf_copy_partial(p, b, 4, 0), 4);
	/* the payload names the connection and its generation */
	assert_int_equal(get_be32(b), (u32)(c - conns) | c->gen << 24);
	c->got++;
	tcp_recved(pcb, p->tot_len);
	pbuf_free(p);
	return ERR_OK;
}

static u32 conn_index(const struct tcp_pcb *pcb)
{
	u32 a = IP_IS_V6(&pcb->remote_ip) ? lwip_ntohl(ip_2_ip6(&pcb->remote_ip)->addr[3]) :
					      lwip_ntohl(ip4_addr_get_u32(ip_2_ip4(&pcb->remote_ip)));

	return (u32)(pcb->remote_port - 1024) * NADDR + (a - CLIENT_IP);
}

static err_t srv_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	u32 i = conn_index(pcb);

	assert_true(i < NCONN);
	assert_null(conns[i].pcb);
	conns[i].pcb = pcb;
	tcp_arg(pcb, &conns[i]);
	tcp_recv(pcb, srv_recv);
	return ERR_OK;
}

/* Probe statistics over a pass of segments. */
struct probes {
	u64 sum;
	u32 max, segs;
};

static void probes_add(struct probes *s, u32 n)
{
	s->sum += n;
	s->segs++;
	if (n > s->max)
		s->max = n;
}

/* The three-way handshake for connection i, client ISN isn; the probes of
 * each segment into s. */
static void conn_open(u32 i, u32 isn, struct probes *s)
{
	struct conn *c = &conns[i];

	c->pcb = NULL;
	probes_add(s, send_seg(i, isn, 0, F_SYN, NULL, 0));
	assert_int_equal(last.dport, conn_port(i));
	assert_int_equal(last.flags, F_SYN | F_ACK);
	assert_int_equal(last.ack, isn + 1);
	c->cseq = isn + 1;
	c->sseq = last.seq + 1;
	probes_add(s, send_seg(i, c->cseq, c->sseq, F_ACK, NULL, 0));
	assert_non_null(c->pcb);
	assert_int_equal(c->pcb->state, ESTABLISHED);
}

/* Four bytes of data naming the connection; returns the probes. */
static u32 conn_data(u32 i)
{
	struct conn *c = &conns[i];
	u8 b[4];
	u32 n;

	put_be32(b, i | c->gen << 24);
	n = send_seg(i, c->cseq, c->sseq, F_ACK, b, 4);
	c->cseq += 4;
	return n;
}

/* The index's bound: a lookup examines the PCBs in one bucket, about one
 * (load <= 1, a keyed hash); a segment that also takes its PCB out of the
 * index (to TIME_WAIT, or a reopen) walks that bucket once more. So at most
 * 3 on average, and the longest of 32,768 buckets holding 20,000 PCBs stays
 * far below 16. lwIP's walk of its lists examined thousands per segment
 * here (the same test with the index left at one bucket: over 5,000). */
static void probes_check(const struct probes *s, const char *what)
{
	printf("  %s: %u segments, %.2f PCBs examined each, at most %u\n", what, s->segs,
	       s->segs ? (double)s->sum / s->segs : 0.0, s->max);
	assert_true(s->segs > 0);
	assert_true(s->sum <= 3ull * s->segs);
	assert_true(s->max <= 16);
}

static struct tcp_pcb **table;
static u32 nbuckets;

static int setup(void **state)
{
	ip4_addr_t a, m, g;
	ip6_addr_t a6;
	s8_t idx;

	if (nif.input)	/* lwIP and the netif are up from the test before */
		goto listen;
	lwip_init();
	IP4_ADDR(&a, 192, 168, 7, 2);
	IP4_ADDR(&m, 255, 0, 0, 0);
	IP4_ADDR(&g, 192, 168, 7, 1);
	assert_non_null(netif_add(&nif, &a, &m, &g, NULL, nif_init, ip_input));
	assert_true(ip6addr_aton("fd00::c0a8:702", &a6));
	assert_int_equal(netif_add_ip6_address(&nif, &a6, &idx), ERR_OK);
	netif_set_default(&nif);
	netif_set_up(&nif);
	netif_set_link_up(&nif);
	/* after the link is up, which starts duplicate address detection */
	netif_ip6_addr_set_state(&nif, idx, IP6_ADDR_PREFERRED);

listen:
	listener = tcp_new_ip_type(IPADDR_TYPE_ANY);
	assert_non_null(listener);
	assert_int_equal(tcp_bind(listener, IP_ANY_TYPE, PORT), ERR_OK);
	listener = tcp_listen_with_backlog(listener, 16);
	assert_non_null(listener);
	tcp_accept(listener, srv_accept);

	nbuckets = vireo_lwip_pcb_buckets(NCONN);
	table = calloc(nbuckets, sizeof(*table));
	assert_non_null(table);
	return 0;
}

static int teardown(void **state)
{
	struct tcp_pcb *pcb;
	u32 i;

	while ((pcb = tcp_active_pcbs) != NULL)
		tcp_abort(pcb);
	while ((pcb = tcp_tw_pcbs) != NULL)
		tcp_abort(pcb);
	for (i = 0; i <= tcp_pcb_hash_mask; i++)
		assert_null(tcp_pcb_hash[i]);
	tcp_close(listener);
	tcp_pcb_hash_init(NULL, 0);
	free(table);
	return 0;
}

/* ---- the timers' work ---- */

static u32 polls;

static err_t srv_poll(void *arg, struct tcp_pcb *pcb)
{
	polls++;
	return ERR_OK;
}

static u8 *marks;

/* One tcp_tmr() pass (the fast timer, and the slow one every other pass);
 * returns the PCBs of conns[] it looked at: those whose last_timer moved. */
static u32 tmr_pass(void)
{
	u32 i, n = 0;

	for (i = 0; i < NCONN; i++)
		marks[i] = conns[i].pcb ? conns[i].pcb->last_timer : 0;
	tcp_tmr();
	for (i = 0; i < NCONN; i++)
		if (conns[i].pcb && conns[i].pcb->last_timer != marks[i])
			n++;
	return n;
}

/* lwIP before patch 0011 has no TF_PARKED: this test still builds there,
 * and fails on the passes' work. */
#ifndef TF_PARKED
#define TF_PARKED 0
#endif
#define PARKED(pcb) (TF_PARKED && ((pcb)->flags & TF_PARKED))

/* Every PCB the timers still walk is ahead of every parked one. */
static void check_order(void)
{
	struct tcp_pcb *pcb;
	bool parked = false;

	for (pcb = tcp_active_pcbs; pcb; pcb = pcb->next) {
		if (PARKED(pcb))
			parked = true;
		else
			assert_false(parked);
	}
}

static void test_timers_idle(void **state)
{
	struct probes open = { 0 };
	u32 i, n, p0, sent;

	marks = calloc(NCONN, 1);
	assert_non_null(marks);
	tcp_pcb_hash_init(table, nbuckets);
	for (i = 0; i < NCONN; i++) {
		conn_open(i, 1000 * i, &open);
		tcp_poll(conns[i].pcb, srv_poll, 1);
		conn_data(i);
	}
	/* Busy (a request each, polled every slow tick): every PCB is
	 * looked at and polled, as before the patch. */
	polls = 0;
	n = tmr_pass();
	n += tmr_pass();
	printf("  busy: %u PCBs looked at in 2 passes, %u polls\n", n, polls);
	assert_int_equal(n, 2 * NCONN);
	assert_int_equal(polls, NCONN);

	/* Idle: their application asks for no polls (interval 0). One slow
	 * tick parks them; after it a pass looks at none and polls none. */
	for (i = 0; i < NCONN; i++)
		tcp_poll(conns[i].pcb, srv_poll, 0);
	tmr_pass();
	tmr_pass();
	polls = 0;
	n = 0;
	for (i = 0; i < 8; i++)
		n += tmr_pass();
	printf("  idle: %u PCBs looked at in 8 passes, %u polls\n", n, polls);
	assert_int_equal(n, 0);
	assert_int_equal(polls, 0);
	check_order();

	/* Data for 100 of them: each reaches its own PCB, which the timers
	 * look at again (its delayed ACK goes out) and park once it is at
	 * rest; the other 19,900 stay out of every pass. */
	for (i = 0; i < NCONN; i += NCONN / 100) {
		u32 got = conns[i].got;

		conn_data(i);
		assert_int_equal(conns[i].got, got + 1);
	}
	check_order();
	n = tmr_pass();
	printf("  100 with data: %u PCBs looked at in the next pass\n", n);
	assert_int_equal(n, 100);
	tmr_pass();
	tmr_pass();
	assert_int_equal(tmr_pass(), 0);

	/* The server writes to 50 parked ones and the clients ACK nothing:
	 * their retransmission timers run (the slow timer resends) and, busy,
	 * they are polled every slow tick again (interval 0 polls only while
	 * there is something to time). */
	for (i = 1; i < NCONN; i += NCONN / 50) {
		assert_true(PARKED(conns[i].pcb));
		assert_int_equal(tcp_write(conns[i].pcb, "abcd", 4, TCP_WRITE_FLAG_COPY), ERR_OK);
		assert_false(PARKED(conns[i].pcb));
		assert_int_equal(tcp_output(conns[i].pcb), ERR_OK);
	}
	check_order();
	sent = out_count;
	p0 = polls;
	for (i = 0; i < 16; i++)
		assert_true(tmr_pass() <= 50);
	printf("  50 unacknowledged: %u segments resent, %u polls in 16 passes\n", out_count - sent, polls - p0);
	assert_true(out_count - sent >= 50);
	assert_int_equal(polls - p0, 50 * 8);
	for (i = 1; i < NCONN; i += NCONN / 50)
		assert_non_null(conns[i].pcb->unacked);

	/* A close of a parked one: its FIN goes out and the timers take it. */
	assert_true(PARKED(conns[2].pcb));
	tcp_arg(conns[2].pcb, NULL);
	tcp_recv(conns[2].pcb, NULL);
	tcp_poll(conns[2].pcb, NULL, 0);
	assert_int_equal(tcp_close(conns[2].pcb), ERR_OK);
	assert_true(last.flags & F_FIN);
	assert_false(PARKED(conns[2].pcb));
	assert_int_equal(conns[2].pcb->state, FIN_WAIT_1);
	check_order();
	free(marks);
}

/* ---- orphans: the work of a close ---- */

/* The server closes connection i as tcpconn_close() does: callbacks
 * cleared, the port told before and after tcp_close(). */
static void srv_close(u32 i)
{
	struct tcp_pcb *pcb = conns[i].pcb;
	u32 cost;

	tcp_arg(pcb, NULL);
	tcp_recv(pcb, NULL);
	cost = vireo_lwip_orphan_closing(pcb);
	assert_int_equal(tcp_close(pcb), ERR_OK);
	vireo_lwip_orphans_close(pcb, cost);
}

/* 20,000 connections, none parked (each just had a request), then 1,000 of
 * them closed by the server with their clients silent: each close leaves
 * an orphan in FIN_WAIT_1 and, past VIREO_LWIP_ORPHANS_MAX, aborts the
 * oldest. The PCBs a close's orphan bookkeeping looks at stay a handful
 * (the port before the orphan queue walked all 20,000 once 64 orphans
 * existed); the oldest are the ones aborted; a FIN_WAIT_1 orphan the
 * client then ACKs and FINs goes to TIME_WAIT and leaves the count, and
 * one the client resets is forgotten at once. */
static void test_orphans_close_work(void **state)
{
	struct probes open = { 0 };
	u32 i, n, count, bytes, first = 1000, closes = 1000;
	u64 visits, capped;

	tcp_pcb_hash_init(table, nbuckets);
	for (i = 0; i < NCONN; i++) {
		conn_open(i, 1000 * i, &open);
		conn_data(i);
	}
	visits = vireo_lwip_stats.orphan_visits;
	capped = vireo_lwip_stats.orphans_capped;
	for (i = first; i < first + closes; i++) {
		srv_close(i);
		assert_int_equal(conns[i].pcb->state, FIN_WAIT_1);	/* its FIN sent, never the one aborted */
	}
	n = (u32)(vireo_lwip_stats.orphan_visits - visits);
	printf("  %u closes at %u connections: %u PCBs looked at, %lu aborted\n", closes, NCONN, n,
	       (unsigned long)(vireo_lwip_stats.orphans_capped - capped));
	/* At most the closed PCB and the one it pushes out, per close. */
	assert_true(n <= 2 * closes);
	assert_int_equal(vireo_lwip_stats.orphans_capped - capped, closes - VIREO_LWIP_ORPHANS_MAX);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, VIREO_LWIP_ORPHANS_MAX);
	/* The oldest went, the newest 64 stay. */
	n = 0;
	for (struct tcp_pcb *pcb = tcp_active_pcbs; pcb; pcb = pcb->next) {
		if (pcb->state != FIN_WAIT_1)
			continue;
		assert_true(conn_index(pcb) >= first + closes - VIREO_LWIP_ORPHANS_MAX);
		n++;
	}
	assert_int_equal(n, VIREO_LWIP_ORPHANS_MAX);

	/* The newest orphan's client ACKs our FIN and sends its own: TIME_WAIT. */
	i = first + closes - 1;
	conns[i].sseq++;	/* our FIN */
	send_seg(i, conns[i].cseq, conns[i].sseq, F_FIN | F_ACK, NULL, 0);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, VIREO_LWIP_ORPHANS_MAX - 1);
	/* Another's client resets it: gone, and 64 more closes abort just as many. */
	i = first + closes - 2;
	send_seg(i, conns[i].cseq, 0, F_RST, NULL, 0);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, VIREO_LWIP_ORPHANS_MAX - 2);
	capped = vireo_lwip_stats.orphans_capped;
	for (i = 0; i < VIREO_LWIP_ORPHANS_MAX; i++)
		srv_close(i);
	assert_int_equal(vireo_lwip_stats.orphans_capped - capped, VIREO_LWIP_ORPHANS_MAX - 2);
	vireo_lwip_orphans_count(&count, &bytes);
	assert_int_equal(count, VIREO_LWIP_ORPHANS_MAX);
	for (i = 0; i < VIREO_LWIP_ORPHANS_MAX; i++)
		assert_int_equal(conns[i].pcb->state, FIN_WAIT_1);
}

/* ---- tests ---- */

static void test_bucket_sizing(void **state)
{
	assert_int_equal(vireo_lwip_pcb_buckets(0), 1);
	assert_int_equal(vireo_lwip_pcb_buckets(1), 1);
	assert_int_equal(vireo_lwip_pcb_buckets(708), 1024);	/* the floor's budget */
	assert_int_equal(vireo_lwip_pcb_buckets(1024), 1024);
	assert_int_equal(vireo_lwip_pcb_buckets(20000), 32768);
	assert_int_equal(vireo_lwip_pcb_buckets(65536 + 708), 131072);
}

static void test_index(void **state)
{
	struct probes open = { 0 }, data = { 0 }, gone = { 0 }, again = { 0 }, tw = { 0 }, first = { 0 };
	u32 i, n, before, delivered;
	struct tcp_pcb *pcb;

	/* The first thousand on lwIP's one bucket, then the table: indexing
	 * again from the lists keeps every connection reachable. */
	for (i = 0; i < 1000; i++)
		conn_open(i, 1000 * i, &first);
	tcp_pcb_hash_init(table, nbuckets);
	assert_int_equal(tcp_pcb_hash_mask, nbuckets - 1);
	for (i = 1000; i < NCONN; i++)
		conn_open(i, 1000 * i, &open);
	probes_check(&open, "handshakes");

	/* Every connection's data reaches its own PCB. */
	for (i = 0; i < NCONN; i++) {
		probes_add(&data, conn_data(i));
		assert_int_equal(conns[i].got, 1);
	}
	probes_check(&data, "data");

	/* Abort every third connection: O(1) each off the active list and
	 * out of the index; segments for them find no PCB (the listener
	 * answers with a RST), the rest still find theirs. */
	for (i = 0; i < NCONN; i += 3) {
		before = tcp_pcb_hash_probes;
		tcp_abort(conns[i].pcb);
		probes_add(&gone, tcp_pcb_hash_probes - before);
		conns[i].pcb = NULL;
	}
	probes_check(&gone, "aborts (index removal)");
	delivered = 0;
	for (i = 0; i < NCONN; i++) {
		u32 got = conns[i].got;

		if (conns[i].pcb == NULL) {
			u8 b[4] = { 0xff, 0xff, 0xff, 0xff };

			n = send_seg(i, conns[i].cseq, conns[i].sseq, F_ACK, b, 4);
			assert_int_equal(last.dport, conn_port(i));
			assert_true(last.flags & F_RST);
		} else {
			n = conn_data(i);
			assert_int_equal(conns[i].got, got + 1);
			delivered++;
		}
		probes_add(&again, n);
	}
	assert_int_equal(delivered, NCONN - (NCONN + 2) / 3);
	probes_check(&again, "after aborts");

	/* The server closes every third of the rest (i % 3 == 1); each
	 * client acknowledges the FIN with its own: TIME_WAIT. */
	for (i = 1; i < NCONN; i += 3) {
		struct conn *c = &conns[i];

		tcp_arg(c->pcb, NULL);
		tcp_recv(c->pcb, NULL);
		assert_int_equal(tcp_close(c->pcb), ERR_OK);
		assert_int_equal(last.dport, conn_port(i));
		assert_true(last.flags & F_FIN);
		c->sseq = last.seq + 1;
		probes_add(&tw, send_seg(i, c->cseq, c->sseq, F_FIN | F_ACK, NULL, 0));
		c->cseq++;
		assert_int_equal(c->pcb->state, TIME_WAIT);
	}
	probes_check(&tw, "closes to TIME_WAIT");
	n = 0;
	for (pcb = tcp_tw_pcbs; pcb; pcb = pcb->next)
		n++;
	assert_int_equal(n, (NCONN + 1) / 3);

	/* A retransmitted FIN reaches the TIME_WAIT PCB, which ACKs it again
	 * and stays; a SYN above its rcv_nxt reopens the 4-tuple (patch 0002)
	 * and the new connection gets the data. */
	memset(&tw, 0, sizeof(tw));
	for (i = 1; i < NCONN; i += 3) {
		struct conn *c = &conns[i];
		struct tcp_pcb *old = c->pcb;

		before = out_count;
		probes_add(&tw, send_seg(i, c->cseq - 1, c->sseq, F_FIN | F_ACK, NULL, 0));
		assert_int_equal(out_count, before + 1);
		assert_int_equal(last.dport, conn_port(i));
		assert_int_equal(last.flags, F_ACK);
		assert_int_equal(last.ack, c->cseq);
		assert_int_equal(old->state, TIME_WAIT);
		if (i % 2)
			continue;
		c->gen++;
		c->got = 0;
		conn_open(i, c->cseq + 100000, &tw);
		assert_ptr_not_equal(c->pcb, NULL);
		probes_add(&tw, conn_data(i));
		assert_int_equal(c->got, 1);
	}
	probes_check(&tw, "TIME_WAIT and reopened");

	/* And everyone still open gets one more. */
	memset(&data, 0, sizeof(data));
	for (i = 0; i < NCONN; i++) {
		u32 got = conns[i].got;

		if (conns[i].pcb == NULL || conns[i].pcb->state != ESTABLISHED)
			continue;
		probes_add(&data, conn_data(i));
		assert_int_equal(conns[i].got, got + 1);
	}
	probes_check(&data, "data at the end");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bucket_sizing),
		cmocka_unit_test_setup_teardown(test_index, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timers_idle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_close_work, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
