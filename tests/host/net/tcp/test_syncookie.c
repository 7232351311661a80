/* SYN cookies (net/tcp/syncookie.c with net/port/patches/0001) and RFC 6528 ISNs
 * (net/tcp/tcp_isn.c) through the real lwIP core and the HTTP server. The test
 * plays the remote hosts with hand-made IPv4/TCP packets, so it can spoof
 * sources, forge ACKs and read every sequence number the server picks; what
 * the server sends is captured, not looped back. With the listen backlog
 * full of half-open connections: a SYN gets a cookie SYN-ACK and costs no
 * PCB or heap; an ACK with the cookie makes a connection that serves HTTP;
 * forged, replayed or stale cookies make nothing. IPv4 and IPv6.
 * Also TIME_WAIT reuse (net/port/patches/0002), which needs the same hand-made
 * packets: a SYN above the old connection's sequence numbers reopens a
 * 4-tuple the server closed first, any other SYN is answered as before. */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/ip_addr.h"
#include "lwip/memp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/priv/tcp_priv.h"
#include "lib/metrics.h"
#include "runtime/api.h"
#include "runtime/http/server.h"
#include "net/port/lwip_hooks.h"
#include "net/port/lwip_port.h"
#include "kernel/time/time.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/shim/inet_csum.h"
#include "lib/byteorder.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define HTTP_PORT 80
#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_PSH 0x08
#define F_ACK 0x10

/* ---- captured output ---- */

struct seg {
	struct seg *next;
	u32 src, dst;		/* host order */
	u16 sport, dport;
	u32 seq, ack;
	u8 flags;
	u16 mss;		/* 0: no MSS option */
	u16 len;
	u8 data[];
};

static struct netif nif;
static struct seg *out_head, **out_tail = &out_head;
static unsigned int out_count;

static err_t out4(struct netif *n, struct pbuf *p, const ip4_addr_t *a)
{
	u8 buf[1600];
	u16 len = p->tot_len, ihl, thl, i;
	struct seg *s;

	assert_true(len <= sizeof(buf));
	pbuf_copy_partial(p, buf, len, 0);
	if (buf[9] != IP_PROTO_TCP)
		return ERR_OK;
	ihl = (u16)((buf[0] & 15) * 4);
	thl = (u16)((buf[ihl + 12] >> 4) * 4);
	s = calloc(1, sizeof(*s) + len);
	assert_non_null(s);
	s->src = get_be32(buf + 12);
	s->dst = get_be32(buf + 16);
	s->sport = get_be16(buf + ihl);
	s->dport = get_be16(buf + ihl + 2);
	s->seq = get_be32(buf + ihl + 4);
	s->ack = get_be32(buf + ihl + 8);
	s->flags = buf[ihl + 13];
	for (i = 20; i + 3 < thl; i++)
		if (buf[ihl + i] == 2 && buf[ihl + i + 1] == 4)
			s->mss = get_be16(buf + ihl + i + 2);
	s->len = (u16)(len - ihl - thl);
	memcpy(s->data, buf + ihl + thl, s->len);
	*out_tail = s;
	out_tail = &s->next;
	out_count++;
	return ERR_OK;
}

/* IPv6: lwIP adds no extension headers to TCP; addresses keep their last
 * four bytes (the tests' hosts differ only there). */
static err_t out6(struct netif *n, struct pbuf *p, const ip6_addr_t *a)
{
	u8 buf[1600];
	u16 len = p->tot_len, thl;
	struct seg *s;

	assert_true(len <= sizeof(buf) && len >= 60);
	pbuf_copy_partial(p, buf, len, 0);
	if (buf[6] != IP_PROTO_TCP)
		return ERR_OK;
	thl = (u16)((buf[40 + 12] >> 4) * 4);
	s = calloc(1, sizeof(*s) + len);
	assert_non_null(s);
	s->src = get_be32(buf + 20);
	s->dst = get_be32(buf + 36);
	s->sport = get_be16(buf + 40);
	s->dport = get_be16(buf + 42);
	s->seq = get_be32(buf + 44);
	s->ack = get_be32(buf + 48);
	s->flags = buf[40 + 13];
	if (thl >= 24 && buf[60] == 2 && buf[61] == 4)
		s->mss = get_be16(buf + 62);
	s->len = (u16)(len - 40 - thl);
	memcpy(s->data, buf + 40 + thl, s->len);
	*out_tail = s;
	out_tail = &s->next;
	out_count++;
	return ERR_OK;
}

static err_t nif_init(struct netif *n)
{
	n->name[0] = 't';
	n->name[1] = '0';
	n->output = out4;
	n->output_ip6 = out6;
	n->mtu = 1500;
	n->flags = NETIF_FLAG_BROADCAST;
	return ERR_OK;
}

static void out_clear(void)
{
	while (out_head) {
		struct seg *s = out_head;

		out_head = s->next;
		free(s);
	}
	out_tail = &out_head;
	out_count = 0;
}

/* The one segment sent to (addr, port) since the last out_clear(), or NULL. */
static struct seg *out_to(u32 addr, u16 port)
{
	struct seg *s, *found = NULL;

	for (s = out_head; s; s = s->next)
		if (s->dst == addr && s->dport == port) {
			assert_null(found);
			found = s;
		}
	return found;
}

/* ---- the remote hosts: hand-made packets into ip_input() ---- */

#define SERVER_IP 0xc0a80702u	/* 192.168.7.2 */
#define CLIENT_IP 0xc0a80732u	/* 192.168.7.50: the legitimate client */

/* IPv6 hosts are fd00::/64 with the IPv4 test address as their last four
 * bytes; the server is fd00::2. */
static bool use_v6;

static void send_tcp(u32 src, u16 sport, u32 seq, u32 ack, u8 flags, u16 mss,
		     const void *data, u16 len)
{
	u8 pkt[1600] = { 0 }, pseudo[40];
	u16 ihl = use_v6 ? 40 : 20, thl = mss ? 24 : 20, tot = (u16)(ihl + thl + len);
	u8 *t = pkt + ihl;
	size_t plen;
	struct pbuf *p;

	if (use_v6) {
		pkt[0] = 0x60;
		put_be16(pkt + 4, (u16)(thl + len));
		pkt[6] = IP_PROTO_TCP;
		pkt[7] = 64;
		pkt[8] = 0xfd;
		put_be32(pkt + 20, src);
		pkt[24] = 0xfd;
		pkt[39] = 2;
		memcpy(pseudo, pkt + 8, 32);
		put_be32(pseudo + 32, (u32)(thl + len));
		put_be32(pseudo + 36, IP_PROTO_TCP);
		plen = 40;
	} else {
		pkt[0] = 0x45;
		put_be16(pkt + 2, tot);
		pkt[8] = 64;
		pkt[9] = IP_PROTO_TCP;
		put_be32(pkt + 12, src);
		put_be32(pkt + 16, SERVER_IP);
		put_be16(pkt + 10, csum_fold(csum_add(0, pkt, 20)));
		memcpy(pseudo, pkt + 12, 8);
		pseudo[8] = 0;
		pseudo[9] = IP_PROTO_TCP;
		put_be16(pseudo + 10, (u16)(thl + len));
		plen = 12;
	}
	put_be16(t, sport);
	put_be16(t + 2, HTTP_PORT);
	put_be32(t + 4, seq);
	put_be32(t + 8, ack);
	t[12] = (u8)((thl / 4) << 4);
	t[13] = flags;
	put_be16(t + 14, 64240);
	if (mss) {
		t[20] = 2;
		t[21] = 4;
		put_be16(t + 22, mss);
	}
	if (len)
		memcpy(t + thl, data, len);
	put_be16(t + 16, csum_fold(csum_add(csum_add(0, pseudo, plen), t, thl + len)));

	p = pbuf_alloc(PBUF_RAW, tot, PBUF_POOL);
	assert_non_null(p);
	assert_int_equal(pbuf_take(p, pkt, tot), ERR_OK);
	nif.input(p, &nif);
}

/* ---- fixtures ---- */

static mem_size_t base_mem;
static u32 base_pcbs;

static u32 pcbs_used(void)
{
	return lwip_stats.memp[MEMP_TCP_PCB]->used;
}

static long base_kmem;	/* kernel heap blocks after the apps started */

static int group_setup(void **state)
{
	ip4_addr_t a, m, g;
	ip_addr_t a6;
	s8_t idx;

	assert_int_equal(vireo_lwip_init(), 0);
	IP4_ADDR(&a, 192, 168, 7, 2);
	IP4_ADDR(&m, 255, 255, 255, 0);
	IP4_ADDR(&g, 192, 168, 7, 1);
	assert_non_null(netif_add(&nif, &a, &m, &g, NULL, nif_init, ip_input));
	assert_true(ipaddr_aton("fd00::2", &a6));
	assert_int_equal(netif_add_ip6_address(&nif, ip_2_ip6(&a6), &idx), ERR_OK);
	netif_ip6_addr_set_state(&nif, idx, IP6_ADDR_PREFERRED);
	netif_set_default(&nif);
	netif_set_up(&nif);
	netif_set_link_up(&nif);
	assert_int_equal(api_apps_start(), 0);	/* the static-site app's route */
	base_kmem = hk_kmem_live();
	return 0;
}

static int setup(void **state)
{
	use_v6 = false;
	out_clear();
	base_mem = lwip_stats.mem.used;
	base_pcbs = pcbs_used();
	assert_int_equal(http_server_start(HTTP_PORT, NULL), 0);
	return 0;
}

/* Stop the server; the port trims the spoofed half-open PCBs (3 s), 2 MSL
 * ends TIME_WAIT; then nothing may be left. */
static int teardown(void **state)
{
	u64 t;

	http_server_stop();
	for (t = 0; t < 2 * TCP_MSL + 10000; t += 250) {
		hk_clock_advance_ms(250);
		sys_check_timeouts();
	}
	out_clear();
	assert_null(tcp_active_pcbs);
	assert_null(tcp_tw_pcbs);
	assert_int_equal(pcbs_used(), base_pcbs);
	assert_int_equal(lwip_stats.mem.used, base_mem);
	assert_int_equal(hk_kmem_live(), base_kmem);	/* the API's tables stay */
	return 0;
}

/* TCP_DEFAULT_LISTEN_BACKLOG SYNs from spoofed sources that never answer:
 * each makes a SYN_RCVD PCB, and then the backlog is full. */
static void fill_backlog(void)
{
	u32 i;

	for (i = 0; i < TCP_DEFAULT_LISTEN_BACKLOG; i++)
		send_tcp(0x0a010000u + i, (u16)(1024 + i), 1000 * i, 0, F_SYN, 1460, NULL, 0);
	assert_int_equal(pcbs_used(), base_pcbs + TCP_DEFAULT_LISTEN_BACKLOG);
	assert_int_equal(out_count, TCP_DEFAULT_LISTEN_BACKLOG);
	out_clear();
}

static struct seg *syn(u32 src, u16 sport, u32 isn, u16 mss)
{
	struct seg *s;

	send_tcp(src, sport, isn, 0, F_SYN, mss, NULL, 0);
	s = out_to(src, sport);
	assert_non_null(s);
	assert_int_equal(s->flags, F_SYN | F_ACK);
	assert_int_equal(s->ack, isn + 1);
	assert_int_equal(s->mss, use_v6 ? TCP_MSS - 20 : TCP_MSS);
	return s;
}

static struct tcp_pcb *find_pcb(u16 sport)
{
	struct tcp_pcb *pcb;

	for (pcb = tcp_active_pcbs; pcb; pcb = pcb->next)
		if (pcb->remote_port == sport)
			return pcb;
	return NULL;
}

/* ---- tests ---- */

/* Below the backlog limit nothing changes: a PCB per SYN, its ISN from the
 * RFC 6528 hook, no cookies. */
static void test_no_cookie_below_backlog(void **state)
{
	u64 sent = vireo_lwip_stats.syncookies_sent;
	ip_addr_t lip, rip;
	struct seg *s;

	s = syn(CLIENT_IP, 40000, 5000, 1460);
	assert_int_equal(pcbs_used(), base_pcbs + 1);
	assert_int_equal(vireo_lwip_stats.syncookies_sent, sent);
	IP_ADDR4(&lip, 192, 168, 7, 2);
	IP_ADDR4(&rip, 192, 168, 7, 50);
	assert_int_equal(s->seq, vireo_tcp_isn(&lip, HTTP_PORT, &rip, 40000));
}

/* RFC 6528: ISN = 4.096 us clock + keyed hash of the 4-tuple. The clock
 * part moves exactly with time; the hash part of two tuples that differ in
 * one port is unrelated (here: not within 2^20 of each other). */
static void test_isn_rfc6528(void **state)
{
	ip_addr_t lip, rip;
	u32 a0, a1, b0, d;
	u64 t0, t1;

	IP_ADDR4(&lip, 192, 168, 7, 2);
	IP_ADDR4(&rip, 192, 168, 7, 50);
	t0 = time_ns();
	a0 = vireo_tcp_isn(&lip, HTTP_PORT, &rip, 40000);
	b0 = vireo_tcp_isn(&lip, HTTP_PORT, &rip, 40001);
	hk_clock_advance_ms(7);
	t1 = time_ns();
	a1 = vireo_tcp_isn(&lip, HTTP_PORT, &rip, 40000);
	assert_int_equal(a1 - a0, (u32)((t1 >> 12) - (t0 >> 12)));
	d = b0 - a0;
	assert_true(d > (1u << 20) && d < 0u - (1u << 20));
	assert_int_equal(vireo_tcp_isn(&lip, HTTP_PORT, &rip, 40001) - b0, a1 - a0);
}

static const char GET[] = "GET / HTTP/1.0\r\n\r\n";

/* The backlog is full: 1,000 spoofed SYNs get cookie SYN-ACKs and allocate
 * nothing; the legitimate client's handshake completes on its cookie and
 * it gets its page. */
static void test_cookie_full_backlog_serves(void **state)
{
	u64 sent = vireo_lwip_stats.syncookies_sent, ok = vireo_lwip_stats.syncookies_validated;
	mem_size_t mem;
	struct seg *s, *r;
	struct tcp_pcb *pcb;
	u32 i, cookie;

	fill_backlog();
	mem = lwip_stats.mem.used;
	for (i = 0; i < 1000; i++)
		send_tcp(0x0a020000u + i, (u16)(2000 + i), 77 * i, 0, F_SYN, 1460, NULL, 0);
	assert_int_equal(out_count, 1000);
	for (s = out_head; s; s = s->next)
		assert_int_equal(s->flags, F_SYN | F_ACK);
	assert_int_equal(vireo_lwip_stats.syncookies_sent, sent + 1000);
	assert_int_equal(pcbs_used(), base_pcbs + TCP_DEFAULT_LISTEN_BACKLOG);
	assert_int_equal(lwip_stats.mem.used, mem);
	out_clear();

	/* The client: SYN (MSS 1300: cookie table entry 1220), bare ACK, then
	 * the request, as Linux sends them. */
	s = syn(CLIENT_IP, 40010, 9000, 1300);
	cookie = s->seq;
	assert_int_equal(pcbs_used(), base_pcbs + TCP_DEFAULT_LISTEN_BACKLOG);
	out_clear();
	send_tcp(CLIENT_IP, 40010, 9001, cookie + 1, F_ACK, 0, NULL, 0);
	assert_int_equal(vireo_lwip_stats.syncookies_validated, ok + 1);
	pcb = find_pcb(40010);
	assert_non_null(pcb);
	assert_int_equal(pcb->state, ESTABLISHED);
	assert_int_equal(pcb->mss, 1220);
	assert_null(out_head);	/* nothing to say yet: no RST */

	send_tcp(CLIENT_IP, 40010, 9001, cookie + 1, F_ACK | F_PSH, 0, GET, sizeof(GET) - 1);
	r = NULL;
	for (i = 0; i < 50 && !r; i++) {
		for (s = out_head; s; s = s->next)
			if (s->dport == 40010 && s->len > 0)
				r = s;
		hk_clock_advance_ms(10);
		sys_check_timeouts();
	}
	assert_non_null(r);
	assert_int_equal(r->seq, cookie + 1);
	assert_true(r->len > 12 && memcmp(r->data, "HTTP/1.1 200", 12) == 0);
	assert_true(r->len <= 1220);
}

/* The request in the ACK itself (the bare ACK was lost): one segment makes
 * the connection and delivers the request. */
static void test_cookie_ack_with_data(void **state)
{
	struct seg *s, *r = NULL;
	u32 cookie, i;

	fill_backlog();
	cookie = syn(CLIENT_IP, 40020, 123456, 1460)->seq;
	out_clear();
	send_tcp(CLIENT_IP, 40020, 123457, cookie + 1, F_ACK | F_PSH, 0, GET, sizeof(GET) - 1);
	assert_non_null(find_pcb(40020));
	assert_int_equal(find_pcb(40020)->mss, 1460);
	for (i = 0; i < 50 && !r; i++) {
		for (s = out_head; s; s = s->next)
			if (s->dport == 40020 && s->len > 0)
				r = s;
		hk_clock_advance_ms(10);
		sys_check_timeouts();
	}
	assert_non_null(r);
	assert_int_equal(r->ack, 123457 + sizeof(GET) - 1);
	assert_true(memcmp(r->data, "HTTP/1.1 200", 12) == 0);
}

/* The same over IPv6 (the cookie hashes both 16-byte addresses); a cookie
 * made for the IPv6 client does not open a connection for the IPv4 one. */
static void test_cookie_ipv6(void **state)
{
	u64 bad = vireo_lwip_stats.syncookies_rejected;
	struct seg *s, *r = NULL;
	u32 cookie, i;

	use_v6 = true;
	fill_backlog();
	for (i = 0; i < 100; i++)
		send_tcp(0x0a030000u + i, (u16)(3000 + i), i, 0, F_SYN, 1440, NULL, 0);
	assert_int_equal(out_count, 100);
	assert_int_equal(pcbs_used(), base_pcbs + TCP_DEFAULT_LISTEN_BACKLOG);
	out_clear();
	cookie = syn(CLIENT_IP, 40040, 4242, 1440)->seq;
	out_clear();
	use_v6 = false;
	send_tcp(CLIENT_IP, 40040, 4243, cookie + 1, F_ACK, 0, NULL, 0);
	assert_int_equal(vireo_lwip_stats.syncookies_rejected, bad + 1);
	assert_null(find_pcb(40040));
	out_clear();
	use_v6 = true;
	send_tcp(CLIENT_IP, 40040, 4243, cookie + 1, F_ACK | F_PSH, 0, GET, sizeof(GET) - 1);
	assert_non_null(find_pcb(40040));
	assert_int_equal(find_pcb(40040)->mss, 1440);	/* entry 1440, and 1500 - 60 */
	for (i = 0; i < 50 && !r; i++) {
		for (s = out_head; s; s = s->next)
			if (s->dport == 40040 && s->len > 0)
				r = s;
		hk_clock_advance_ms(10);
		sys_check_timeouts();
	}
	assert_non_null(r);
	assert_true(memcmp(r->data, "HTTP/1.1 200", 12) == 0);
}

/* Forged, replayed and stale cookies make no PCB: lwIP answers the stray
 * ACK with a RST, as it always did. */
static void test_cookie_forged_stale(void **state)
{
	u64 bad = vireo_lwip_stats.syncookies_rejected, ok = vireo_lwip_stats.syncookies_validated;
	u32 pcbs, cookie, i;
	mem_size_t mem;
	struct seg *s;

	fill_backlog();
	pcbs = pcbs_used();
	mem = lwip_stats.mem.used;
	cookie = syn(CLIENT_IP, 40030, 7000, 1460)->seq;
	out_clear();

	/* each of the MAC bits, the MSS index and the time step */
	for (i = 0; i < 32; i++)
		send_tcp(CLIENT_IP, 40030, 7001, (cookie ^ (1u << i)) + 1, F_ACK, 0, NULL, 0);
	/* the right cookie from another port, and with another client ISN */
	send_tcp(CLIENT_IP, 40031, 7001, cookie + 1, F_ACK, 0, NULL, 0);
	send_tcp(CLIENT_IP, 40030, 7002, cookie + 1, F_ACK, 0, NULL, 0);
	/* and from another address */
	send_tcp(CLIENT_IP + 1, 40030, 7001, cookie + 1, F_ACK, 0, NULL, 0);
	assert_int_equal(vireo_lwip_stats.syncookies_rejected, bad + 35);
	assert_int_equal(out_count, 35);
	for (s = out_head; s; s = s->next)
		assert_true(s->flags & F_RST);
	out_clear();

	/* Stale: the same ACK 35 s later (two 17.2 s steps) is refused... */
	hk_clock_advance_ms(35000);
	send_tcp(CLIENT_IP, 40030, 7001, cookie + 1, F_ACK, 0, NULL, 0);
	assert_int_equal(vireo_lwip_stats.syncookies_rejected, bad + 36);
	assert_int_equal(vireo_lwip_stats.syncookies_validated, ok);
	assert_int_equal(pcbs_used(), pcbs);
	assert_int_equal(lwip_stats.mem.used, mem);
	out_clear();

	/* ...while a fresh cookie, answered within its window, still works. */
	cookie = syn(CLIENT_IP, 40032, 8000, 1460)->seq;
	hk_clock_advance_ms(17000);
	send_tcp(CLIENT_IP, 40032, 8001, cookie + 1, F_ACK, 0, NULL, 0);
	assert_int_equal(vireo_lwip_stats.syncookies_validated, ok + 1);
	assert_non_null(find_pcb(40032));
}

/* ---- TIME_WAIT reuse (net/port/patches/0002) ---- */

static struct tcp_pcb *find_tw(u16 sport)
{
	struct tcp_pcb *pcb;

	for (pcb = tcp_tw_pcbs; pcb; pcb = pcb->next)
		if (pcb->remote_port == sport)
			return pcb;
	return NULL;
}

/* A whole connection from CLIENT_IP:sport with client ISN isn, as Linux
 * makes one: handshake, GET / with HTTP/1.0 (the server answers and closes
 * first), ACKs for everything the server sends, including its FIN, then the
 * client's FIN. The server's PCB is left in TIME_WAIT; returns its rcv_nxt
 * (the client's FIN + 1). The caller's SYN is answered with a SYN-ACK or
 * the test fails. */
static u32 serve_close(u16 sport, u32 isn)
{
	u32 cli = isn + 1, hi, acked, i;
	bool fin = false, ok = false;
	struct seg *s;

	hi = syn(CLIENT_IP, sport, isn, 1460)->seq + 1;
	out_clear();
	send_tcp(CLIENT_IP, sport, cli, hi, F_ACK | F_PSH, 0, GET, sizeof(GET) - 1);
	cli += sizeof(GET) - 1;
	acked = hi;
	for (i = 0; i < 500 && !(fin && acked == hi); i++) {
		for (s = out_head; s; s = s->next) {
			u32 end = s->seq + s->len + (s->flags & F_FIN ? 1 : 0);

			if (s->dport != sport)
				continue;
			assert_false(s->flags & (F_RST | F_SYN));
			if (s->len >= 12 && memcmp(s->data, "HTTP/1.1 200", 12) == 0)
				ok = true;
			if (TCP_SEQ_GT(end, hi))
				hi = end;
			fin |= s->flags & F_FIN;
		}
		out_clear();
		if (hi != acked) {
			send_tcp(CLIENT_IP, sport, cli, hi, F_ACK, 0, NULL, 0);
			acked = hi;
		}
		hk_clock_advance_ms(10);
		sys_check_timeouts();
	}
	assert_true(ok);
	assert_true(fin);
	assert_int_equal(acked, hi);
	out_clear();
	send_tcp(CLIENT_IP, sport, cli, hi, F_FIN | F_ACK, 0, NULL, 0);
	s = out_to(CLIENT_IP, sport);
	assert_non_null(s);
	assert_int_equal(s->flags, F_ACK);
	assert_int_equal(s->ack, cli + 1);
	out_clear();
	assert_null(find_pcb(sport));
	assert_non_null(find_tw(sport));
	assert_int_equal(find_tw(sport)->rcv_nxt, cli + 1);
	return cli + 1;
}

/* The capture from link-flap testing: Linux reuses the source port of a
 * connection the server closed first, seconds later, with a new ISN from its
 * RFC 6528 clock (far above the old one). The SYN drops TIME_WAIT, gets a
 * SYN-ACK from the listener and the new connection serves /; so does one a
 * single sequence number above the old connection, and over IPv6. */
static void test_timewait_newer_syn_reopens(void **state)
{
	u64 reopened = vireo_lwip_stats.tw_reopened;
	static char text[65536];
	struct metrics_buf b;
	char line[80];
	u32 rcv, pcbs;

	rcv = serve_close(40050, 1000);
	pcbs = pcbs_used();
	hk_clock_advance_ms(11000);
	/* 11 s of a 4 us ISN clock: about 2.7e6 above, beyond the window */
	rcv = serve_close(40050, rcv + 11000000u / 4);
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened + 1);
	assert_int_equal(pcbs_used(), pcbs);	/* the old PCB was freed */
	rcv = serve_close(40050, rcv + 1);
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened + 2);
	/* across the 2^32 wrap: "above" is modulo 2^32, as TCP_SEQ_GT */
	rcv = serve_close(40051, 0xfffffff0u);
	rcv = serve_close(40051, rcv + 0x7fff0000u);
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened + 3);

	use_v6 = true;
	rcv = serve_close(40052, 77);
	serve_close(40052, rcv + 5000);
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened + 4);
	assert_int_equal(pcbs_used(), base_pcbs + 3);	/* three in TIME_WAIT */

	/* and /metrics says so */
	metrics_buf_init(&b, text, sizeof(text) - 1);
	metrics_write_all(&b);
	assert_false(b.overflow);
	text[b.len] = '\0';
	snprintf(line, sizeof(line), "\nvireo_lwip_time_wait_reopened_total %llu\n",
		 (unsigned long long)(reopened + 4));
	assert_non_null(strstr(text, line));
}

/* Everything else in TIME_WAIT is as before. A SYN below rcv_nxt (a stale
 * or replayed one) gets an ACK for the old connection; a SYN at rcv_nxt
 * (inside the window) a RST; a SYN with ACK set and a RST (RFC 1337) change
 * nothing but what they always did. The TIME_WAIT PCB stays, no connection
 * is made, and it ends after 2 MSL as usual. */
static void test_timewait_older_syn_kept(void **state)
{
	u64 reopened = vireo_lwip_stats.tw_reopened;
	struct tcp_pcb *tw;
	u32 rcv, snd, pcbs;
	struct seg *s;

	rcv = serve_close(40060, 0x12345678u);
	tw = find_tw(40060);
	snd = tw->snd_nxt;
	pcbs = pcbs_used();

	send_tcp(CLIENT_IP, 40060, rcv - 100000, 0, F_SYN, 1460, NULL, 0);
	s = out_to(CLIENT_IP, 40060);
	assert_non_null(s);
	assert_int_equal(s->flags, F_ACK);
	assert_int_equal(s->seq, snd);
	assert_int_equal(s->ack, rcv);
	assert_int_equal(out_count, 1);
	out_clear();

	/* the client's RST for that ACK (its seq is the ACK's ack): ignored
	 * (RFC 1337), no answer */
	send_tcp(CLIENT_IP, 40060, rcv, 0, F_RST, 0, NULL, 0);
	assert_null(out_head);
	assert_ptr_equal(find_tw(40060), tw);

	send_tcp(CLIENT_IP, 40060, rcv - 1, 0, F_SYN, 1460, NULL, 0);
	s = out_to(CLIENT_IP, 40060);
	assert_non_null(s);
	assert_int_equal(s->flags, F_ACK);
	out_clear();

	send_tcp(CLIENT_IP, 40060, rcv, 0, F_SYN, 1460, NULL, 0);
	s = out_to(CLIENT_IP, 40060);
	assert_non_null(s);
	assert_true(s->flags & F_RST);
	out_clear();

	/* SYN+ACK above rcv_nxt, beyond the window: not a new SYN, an ACK */
	send_tcp(CLIENT_IP, 40060, rcv + 1000000, snd, F_SYN | F_ACK, 1460, NULL, 0);
	s = out_to(CLIENT_IP, 40060);
	assert_non_null(s);
	assert_int_equal(s->flags, F_ACK);
	assert_int_equal(s->ack, rcv);
	out_clear();

	/* SYN+RST above rcv_nxt: a RST, ignored */
	send_tcp(CLIENT_IP, 40060, rcv + 1000000, 0, F_SYN | F_RST, 0, NULL, 0);
	assert_null(out_head);

	assert_ptr_equal(find_tw(40060), tw);
	assert_null(find_pcb(40060));
	assert_int_equal(pcbs_used(), pcbs);
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened);

	/* 2 MSL later the 4-tuple is free for any ISN, the old one too */
	for (rcv = 0; rcv < 2 * TCP_MSL + 1000; rcv += TCP_TMR_INTERVAL) {
		hk_clock_advance_ms(TCP_TMR_INTERVAL);
		sys_check_timeouts();
	}
	assert_null(find_tw(40060));
	serve_close(40060, 0x12345678u);
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened);
}

/* With the server stopped, a newer SYN still drops TIME_WAIT (Linux does
 * the same) and, with no listener, is answered with a RST. */
static void test_timewait_reopen_no_listener(void **state)
{
	u64 reopened = vireo_lwip_stats.tw_reopened;
	struct seg *s;
	u32 rcv;

	rcv = serve_close(40070, 4000);
	http_server_stop();
	send_tcp(CLIENT_IP, 40070, rcv + 10, 0, F_SYN, 1460, NULL, 0);
	s = out_to(CLIENT_IP, 40070);
	assert_non_null(s);
	assert_int_equal(s->flags, F_RST | F_ACK);
	assert_int_equal(s->ack, rcv + 11);
	assert_null(find_tw(40070));
	assert_int_equal(vireo_lwip_stats.tw_reopened, reopened + 1);
	assert_int_equal(http_server_start(HTTP_PORT, NULL), 0);
}

/* vireo_tcp_inpacket's ACK rule (net/port/lwip_port.c): a segment of more than
 * one MSS (receive TSO) arms TF_ACK_DELAY, so tcp_receive's tcp_ack() sends
 * the ACK now instead of holding it; one MSS or less, or a PCB not in a
 * data-receiving state, is left as lwIP would have it. */
static void test_coalesced_segment_acked_now(void **state)
{
	struct tcp_pcb *pcb = tcp_new();
	struct tcp_hdr hdr;
	struct pbuf *p;
	u64 before = vireo_lwip_stats.rx_coalesced_acks;

	assert_non_null(pcb);
	memset(&hdr, 0, sizeof(hdr));
	TCPH_HDRLEN_FLAGS_SET(&hdr, 5, TCP_ACK);
	pcb->mss = 1460;
	p = pbuf_alloc(PBUF_RAW, 2921, PBUF_RAM);
	assert_non_null(p);
	pcb->state = LISTEN + 1;	/* SYN_SENT: not yet */
	assert_int_equal(vireo_tcp_inpacket(pcb, &hdr, 0, 0, NULL, p), ERR_OK);
	assert_false(pcb->flags & TF_ACK_DELAY);
	pcb->state = ESTABLISHED;
	pbuf_realloc(p, 1460);		/* one MSS: lwIP's own rule */
	assert_int_equal(vireo_tcp_inpacket(pcb, &hdr, 0, 0, NULL, p), ERR_OK);
	assert_false(pcb->flags & TF_ACK_DELAY);
	pbuf_free(p);
	p = pbuf_alloc(PBUF_RAW, 1461, PBUF_RAM);
	assert_int_equal(vireo_tcp_inpacket(pcb, &hdr, 0, 0, NULL, p), ERR_OK);
	assert_true(pcb->flags & TF_ACK_DELAY);
	pcb->flags = 0;
	pcb->state = FIN_WAIT_2;
	assert_int_equal(vireo_tcp_inpacket(pcb, &hdr, 0, 0, NULL, p), ERR_OK);
	assert_true(pcb->flags & TF_ACK_DELAY);
	assert_int_equal(vireo_lwip_stats.rx_coalesced_acks, before + 2);
	pbuf_free(p);
	pcb->state = CLOSED;
	tcp_abort(pcb);
}

/* A segment coalesced by receive TSO, as the netif hands it to lwIP: one
 * IPv4 packet of 2.5 MSS of data in a chain of PBUF_REF pieces, its TCP
 * checksum partial (the pseudo-header sum only, NEEDS_CSUM). With the
 * netif's TCP check on, lwIP drops it (the sum is not complete); with the
 * check off, as net/netif/netif_vnet.c switches it for a frame the device vouched
 * for, lwIP takes the whole segment at once, ACKs it at once (the port's
 * rule for segments over one MSS) and the server answers the request. */
#define BIG_REQ_PAD 3600

static u8 big_pkt[4096];

static void send_coalesced(u16 sport, u32 seq, u32 ack, const u8 *data, u16 len)
{
	u16 tot = (u16)(20 + 20 + len), off;
	u8 *t = big_pkt + 20, pseudo[12];
	struct pbuf *head = NULL;

	assert_true(tot <= sizeof(big_pkt));
	memset(big_pkt, 0, 40);
	big_pkt[0] = 0x45;
	put_be16(big_pkt + 2, tot);
	big_pkt[6] = 0x40;
	big_pkt[8] = 64;
	big_pkt[9] = IP_PROTO_TCP;
	put_be32(big_pkt + 12, CLIENT_IP);
	put_be32(big_pkt + 16, SERVER_IP);
	put_be16(big_pkt + 10, csum_fold(csum_add(0, big_pkt, 20)));
	put_be16(t, sport);
	put_be16(t + 2, HTTP_PORT);
	put_be32(t + 4, seq);
	put_be32(t + 8, ack);
	t[12] = 5 << 4;
	t[13] = F_ACK | F_PSH;
	put_be16(t + 14, 64240);
	memcpy(t + 20, data, len);
	/* partial: the pseudo-header sum, not complemented, as a device leaves it */
	memcpy(pseudo, big_pkt + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = IP_PROTO_TCP;
	put_be16(pseudo + 10, (u16)(20 + len));
	put_be16(t + 16, (u16)~csum_fold(csum_add(0, pseudo, 12)));
	for (off = 0; off < tot; off += 1000) {
		u16 n = (u16)(tot - off < 1000 ? tot - off : 1000);
		struct pbuf *q = pbuf_alloc(PBUF_RAW, n, PBUF_REF);

		assert_non_null(q);
		q->payload = big_pkt + off;
		if (head)
			pbuf_cat(head, q);
		else
			head = q;
	}
	assert_int_equal(head->tot_len, tot);
	assert_true(pbuf_clen(head) >= 4);
	if (nif.input(head, &nif) != ERR_OK)
		pbuf_free(head);
}

static void test_coalesced_segment_through_lwip(void **state)
{
	char req[BIG_REQ_PAD + 64];
	u64 acks = vireo_lwip_stats.rx_coalesced_acks;
	u32 isn = 777000, srv, chkerr = lwip_stats.tcp.chkerr;
	struct seg *s, *r = NULL;
	int n, i;

	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nHost: x\r\nX-Pad: ");
	memset(req + n, 'a', BIG_REQ_PAD);
	n += BIG_REQ_PAD;
	n += snprintf(req + n, sizeof(req) - (size_t)n, "\r\nConnection: close\r\n\r\n");
	assert_true(n > 2 * TCP_MSS);

	srv = syn(CLIENT_IP, 40100, isn, 1460)->seq;
	send_tcp(CLIENT_IP, 40100, isn + 1, srv + 1, F_ACK, 0, NULL, 0);
	assert_non_null(find_pcb(40100));

	/* the partial sum with the check on: a checksum error, nothing taken */
	out_clear();
	send_coalesced(40100, isn + 1, srv + 1, (const u8 *)req, (u16)n);
	assert_int_equal(lwip_stats.tcp.chkerr, chkerr + 1);
	assert_null(out_to(CLIENT_IP, 40100));

	/* the check off for this input, as the netif does for CSUM_OK */
	NETIF_SET_CHECKSUM_CTRL(&nif, NETIF_CHECKSUM_ENABLE_ALL & ~NETIF_CHECKSUM_CHECK_TCP);
	send_coalesced(40100, isn + 1, srv + 1, (const u8 *)req, (u16)n);
	NETIF_SET_CHECKSUM_CTRL(&nif, NETIF_CHECKSUM_ENABLE_ALL);
	assert_int_equal(vireo_lwip_stats.rx_coalesced_acks, acks + 1);
	/* acknowledged whole before any timer ran */
	for (s = out_head; s; s = s->next)
		if (s->dport == 40100 && s->ack == isn + 1 + (u32)n)
			break;
	assert_non_null(s);
	for (i = 0; i < 50 && !r; i++) {
		for (s = out_head; s; s = s->next)
			if (s->dport == 40100 && s->len > 0)
				r = s;
		hk_clock_advance_ms(10);
		sys_check_timeouts();
	}
	assert_non_null(r);
	assert_true(memcmp(r->data, "HTTP/1.1 200", 12) == 0);
	send_tcp(CLIENT_IP, 40100, isn + 1 + (u32)n, srv + 1, F_RST, 0, NULL, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_cookie_below_backlog, setup, teardown),
		cmocka_unit_test_setup_teardown(test_isn_rfc6528, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_full_backlog_serves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_ack_with_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_forged_stale, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cookie_ipv6, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timewait_newer_syn_reopens, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timewait_older_syn_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timewait_reopen_no_listener, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coalesced_segment_acked_now, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coalesced_segment_through_lwip, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
