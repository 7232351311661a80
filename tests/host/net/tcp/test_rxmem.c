/* net/tcp/rxmem.c over the real lwIP core. A simulated receive pool stands in
 * for the driver: every frame delivered to lwIP is copied into one of the
 * pool's buffers and goes up as a PBUF_REF custom pbuf, exactly as
 * net/netif/netif_vnet.c does it, and the buffer is free again only when lwIP
 * frees the pbuf. A frame that finds no free buffer is lost, as it would be
 * with an empty ring.
 *
 * Connections are lwIP talking to itself over one netif; an "attacker"
 * client leaves a hole in its byte stream (the wire drops its first data
 * segment, retransmissions included) and sends one-byte segments after it,
 * which the server keeps in its out-of-order queue. */
/* lwIP's headers first: the port's cc.h defines BYTE_ORDER as lwIP wants. */
#include "lwip/init.h"
#include "lwip/ip.h"
#include "lwip/ip_addr.h"
#include "lwip/memp.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "lwip/priv/tcp_priv.h"
#include "net/port/lwip_port.h"
#include "net/tcp/rxmem.h"
#include "tests/host/shim/hostk.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define PORT 80
#define BATCH 64		/* frames per "poll", as the driver's RX_BUDGET */
#define POOL_MAX 256
#define CLIENTS_MAX 64

/* ---- the simulated receive pool ---- */

struct simbuf {
	struct pbuf_custom pc;	/* first: the pbuf is the buffer */
	bool held;
	u8 data[1600];
};

static struct simbuf pool[POOL_MAX];
static u32 pool_n, pool_held, pool_min_free, ring_empty;
static bool use_rxmem;		/* false: the netif as it was, always zero-copy */

static void sim_free(struct pbuf *p)
{
	struct simbuf *b = (struct simbuf *)(void *)p;

	assert_true(b->held);
	b->held = false;
	pool_held--;
}

static void pool_reset(u32 n, bool rxmem)
{
	assert_int_equal(pool_held, 0);
	pool_n = n;
	pool_min_free = n;
	ring_empty = 0;
	use_rxmem = rxmem;
}

static struct pbuf *pool_frame(const u8 *data, u16 len)
{
	struct simbuf *b = NULL;
	u32 i;

	for (i = 0; i < pool_n && !b; i++)
		if (!pool[i].held)
			b = &pool[i];
	if (!b)
		return NULL;
	assert_true(len <= sizeof b->data);
	memcpy(b->data, data, len);
	b->held = true;
	pool_held++;
	b->pc.custom_free_function = sim_free;
	return pbuf_alloced_custom(PBUF_RAW, len, PBUF_REF, &b->pc, b->data, len);
}

/* ---- the wire ---- */

struct frame {
	struct frame *next;
	u16 len;
	u8 data[];
};

static struct netif nif;
static struct frame *wire_head, **wire_tail = &wire_head;
static ip_addr_t addr4, addr6;

/* The attack: client port -> sequence number of its hole (0: none). */
static bool attack;
static u32 hole[65536];

static u16 be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static u32 be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/* A client's data segment that starts at its hole, while the attack lasts. */
static bool wire_drops(const u8 *d, u16 len)
{
	const u8 *t;
	u32 ihl;

	if (!attack || len < 20 || (d[0] >> 4) != 4 || d[9] != IP_PROTO_TCP)
		return false;
	ihl = (d[0] & 15u) * 4;
	if (len < ihl + 20)
		return false;
	t = d + ihl;
	if (be16(t + 2) != PORT || len <= ihl + (t[12] >> 4) * 4u)
		return false;	/* to the server, with data */
	return hole[be16(t)] && be32(t + 4) == hole[be16(t)];
}

/* TCP segments with RST set that went on the wire, either way. */
static u32 wire_rsts;

static void wire_count_rst(const u8 *d, u16 len)
{
	u32 ihl;

	if (len < 20 || (d[0] >> 4) != 4 || d[9] != IP_PROTO_TCP)
		return;
	ihl = (d[0] & 15u) * 4;
	if (len >= ihl + 20 && (d[ihl + 13] & 0x04))
		wire_rsts++;
}

static err_t wire_put(struct pbuf *p)
{
	struct frame *f = malloc(sizeof *f + p->tot_len);

	assert_non_null(f);
	f->next = NULL;
	f->len = p->tot_len;
	pbuf_copy_partial(p, f->data, p->tot_len, 0);
	wire_count_rst(f->data, f->len);
	if (wire_drops(f->data, f->len)) {
		free(f);
		return ERR_OK;
	}
	*wire_tail = f;
	wire_tail = &f->next;
	return ERR_OK;
}

static err_t out4(struct netif *n, struct pbuf *p, const ip4_addr_t *a)
{
	return wire_put(p);
}

static err_t out6(struct netif *n, struct pbuf *p, const ip6_addr_t *a)
{
	return wire_put(p);
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

/* One received frame, the way net/netif/netif_vnet.c takes it. */
static void rx_one(const u8 *data, u16 len)
{
	struct pbuf *p = pool_frame(data, len);

	if (!p) {
		ring_empty++;
		return;
	}
	if (use_rxmem)
		p = rxmem_admit(p, pool_held, pool_n);
	if (p && nif.input(p, &nif) != ERR_OK)
		pbuf_free(p);
	if (pool_n - pool_held < pool_min_free)
		pool_min_free = pool_n - pool_held;
}

/* Deliver queued frames (and those they cause) in batches; after each, the
 * netif's work item applies the caps. */
static void wire_drain(void)
{
	unsigned n = 0;

	while (wire_head) {
		unsigned b;

		for (b = 0; b < BATCH && wire_head; b++) {
			struct frame *f = wire_head;

			wire_head = f->next;
			if (!wire_head)
				wire_tail = &wire_head;
			rx_one(f->data, f->len);
			free(f);
			assert_true(++n < 1000000);
		}
		if (use_rxmem)
			rxmem_enforce();
	}
}

static void run_ms(u64 ms)
{
	u64 t;

	for (t = 0; t < ms; t += 10) {
		wire_drain();
		hk_clock_advance_ms(10);
		sys_check_timeouts();
	}
	wire_drain();
}

/* ---- the server: accepts, counts what it reads, closes on EOF ---- */

static struct tcp_pcb *listener;
static struct tcp_pcb *srv_by_port[65536];
static u32 srv_bytes[65536];

static err_t srv_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	u16 port = pcb->remote_port;

	if (!p) {
		srv_by_port[port] = NULL;
		tcp_arg(pcb, NULL);
		tcp_recv(pcb, NULL);
		if (tcp_close(pcb) != ERR_OK)
			tcp_abort(pcb);
		return ERR_OK;
	}
	srv_bytes[port] += p->tot_len;
	tcp_recved(pcb, p->tot_len);
	pbuf_free(p);
	return ERR_OK;
}

static void srv_err(void *arg, err_t err)
{
	srv_by_port[(uintptr_t)arg] = NULL;
}

static err_t srv_accept(void *arg, struct tcp_pcb *pcb, err_t err)
{
	if (err != ERR_OK || !pcb)
		return ERR_VAL;
	srv_by_port[pcb->remote_port] = pcb;
	srv_bytes[pcb->remote_port] = 0;
	tcp_arg(pcb, (void *)(uintptr_t)pcb->remote_port);
	tcp_recv(pcb, srv_recv);
	tcp_err(pcb, srv_err);
	return ERR_OK;
}

/* ---- clients ---- */

struct client {
	struct tcp_pcb *pcb;
	u16 port;
	bool connected;
};

static struct client cl[CLIENTS_MAX];

static err_t cl_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	((struct client *)arg)->connected = true;
	return ERR_OK;
}

static err_t cl_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	if (p) {
		tcp_recved(pcb, p->tot_len);
		pbuf_free(p);
	}
	return ERR_OK;
}

static void cl_err(void *arg, err_t err)
{

	((struct client *)arg)->pcb = NULL;
}

static void clients_open(unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		struct client *c = &cl[i];

		memset(c, 0, sizeof *c);
		c->pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
		assert_non_null(c->pcb);
		tcp_arg(c->pcb, c);
		tcp_recv(c->pcb, cl_recv);
		tcp_err(c->pcb, cl_err);
		tcp_nagle_disable(c->pcb);
		assert_int_equal(tcp_connect(c->pcb, &addr4, PORT, cl_connected), ERR_OK);
		c->port = c->pcb->local_port;
		wire_drain();	/* one handshake at a time: the listen backlog is 32 */
	}
	run_ms(100);
	for (i = 0; i < n; i++) {
		assert_true(cl[i].connected);
		assert_non_null(srv_by_port[cl[i].port]);
	}
}

static void cl_byte(struct client *c)
{
	assert_int_equal(tcp_write(c->pcb, "x", 1, TCP_WRITE_FLAG_COPY), ERR_OK);
	assert_int_equal(tcp_output(c->pcb), ERR_OK);
}

/* The client's next byte is lost (for as long as the attack lasts), the
 * `after` bytes behind it arrive one segment each. */
static void cl_hole(struct client *c, unsigned after)
{
	unsigned i;

	hole[c->port] = c->pcb->snd_nxt;
	cl_byte(c);
	for (i = 0; i < after; i++)
		cl_byte(c);
}

static void clients_close(unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		if (cl[i].pcb && tcp_close(cl[i].pcb) != ERR_OK)
			tcp_abort(cl[i].pcb);
		cl[i].pcb = NULL;
		hole[cl[i].port] = 0;
	}
}

static u32 ooseq_pbufs(const struct tcp_pcb *pcb)
{
	const struct tcp_seg *s;
	u32 n = 0;

	for (s = pcb->ooseq; s; s = s->next)
		n += pbuf_clen(s->p);
	return n;
}

/* ---- fixtures ---- */

static mem_size_t base_mem;
static u32 base_memp[MEMP_MAX];

static int group_setup(void **state)
{
	ip4_addr_t a, m, g;
	s8_t idx;

	assert_int_equal(vireo_lwip_init(), 0);
	rxmem_init();
	IP4_ADDR(&a, 192, 168, 7, 2);
	IP4_ADDR(&m, 255, 255, 255, 0);
	IP4_ADDR(&g, 192, 168, 7, 1);
	pool_reset(POOL_MAX, true);
	assert_non_null(netif_add(&nif, &a, &m, &g, NULL, nif_init, ip_input));
	assert_true(ipaddr_aton("fd00::2", &addr6));
	assert_int_equal(netif_add_ip6_address(&nif, ip_2_ip6(&addr6), &idx), ERR_OK);
	netif_ip6_addr_set_state(&nif, idx, IP6_ADDR_PREFERRED);
	netif_set_default(&nif);
	netif_set_up(&nif);
	netif_set_link_up(&nif);
	ip_addr_copy_from_ip4(addr4, a);
	run_ms(5000);	/* let MLD/ND start-up chatter settle */
	return 0;
}

static int setup(void **state)
{
	int i;

	base_mem = lwip_stats.mem.used;
	for (i = 0; i < MEMP_MAX; i++)
		base_memp[i] = lwip_stats.memp[i]->used;
	memset(&rxmem_stats, 0, sizeof rxmem_stats);
	rxmem_limits = (struct rxmem_limits){ VIREO_RXMEM_OOSEQ_PBUFS, VIREO_RXMEM_OOSEQ_BYTES,
					      VIREO_RXMEM_HEAP_RESERVE, VIREO_RXMEM_BULK_MAX,
					      VIREO_SND_BULK_MAX, VIREO_RXMEM_BULK_WND };
	attack = false;
	listener = tcp_new_ip_type(IPADDR_TYPE_ANY);
	assert_non_null(listener);
	assert_int_equal(tcp_bind(listener, IP_ANY_TYPE, PORT), ERR_OK);
	listener = tcp_listen(listener);
	assert_non_null(listener);
	tcp_accept(listener, srv_accept);
	return 0;
}

/* Everything closed, TIME_WAIT waited out: no buffer held, lwIP back to
 * where it started. */
static int teardown(void **state)
{
	int i;

	tcp_close(listener);
	run_ms(2 * TCP_MSL + 10000);
	assert_null(tcp_active_pcbs);
	assert_null(tcp_tw_pcbs);
	assert_null(wire_head);
	assert_int_equal(pool_held, 0);
	for (i = 0; i < MEMP_MAX; i++)
		if (lwip_stats.memp[i]->used != base_memp[i])
			fail_msg("pool %s: %u used, %u at start", lwip_stats.memp[i]->name,
				 (unsigned)lwip_stats.memp[i]->used, (unsigned)base_memp[i]);
	assert_int_equal(lwip_stats.mem.used, base_mem);
	pool_reset(POOL_MAX, true);
	return 0;
}

/* ---- tests ---- */

/* 40 connections x 6 one-byte out-of-order segments = 240 frames against a
 * pool of 64: the netif as it was (always zero-copy) lets the stack hold
 * every buffer, and then even the frames that would fill the holes are lost.
 * This is the attack the next test must survive. */
static void test_pool_drains_without_rxmem(void **state)
{
	unsigned i;

	pool_reset(64, false);
	clients_open(40);
	attack = true;
	for (i = 0; i < 40; i++)
		cl_hole(&cl[i], 6);
	run_ms(100);
	assert_int_equal(pool_min_free, 0);
	assert_int_equal(pool_held, 64);
	assert_true(ring_empty > 0);
	/* Deaf: the hole-filling retransmissions find no buffer either. */
	attack = false;
	run_ms(10000);
	assert_int_equal(pool_held, 64);
	for (i = 0; i < 40; i++)
		assert_int_equal(srv_bytes[cl[i].port], 0);
	/* Free the held data so the fixture can check for leaks. */
	for (i = 0; i < 40; i++)
		if (srv_by_port[cl[i].port])
			tcp_free_ooseq(srv_by_port[cl[i].port]);
	assert_int_equal(pool_held, 0);
	run_ms(10000);
	clients_close(40);
}

/* The same attack with rxmem: the stack never holds more than the
 * watermark, nothing is lost for want of a buffer, and every connection
 * completes once its hole is filled. */
static void test_pool_never_drains(void **state)
{
	u32 mark = rxmem_watermark(64);
	unsigned i, kept = 0;

	pool_reset(64, true);
	clients_open(40);
	attack = true;
	for (i = 0; i < 40; i++)
		cl_hole(&cl[i], 6);
	run_ms(100);
	assert_int_equal(ring_empty, 0);
	assert_true(pool_min_free >= 64 - mark - 1);
	assert_true(pool_held <= mark);
	assert_true(rxmem_stats.held_peak <= mark + 1);
	assert_true(rxmem_stats.copied_frames > 0);
	/* The stack kept the data (under the global cap: 240 < 256). */
	for (i = 0; i < 40; i++)
		kept += ooseq_pbufs(srv_by_port[cl[i].port]);
	assert_int_equal(kept, 240);
	assert_int_equal(rxmem_stats.ooseq_pbufs, 240);
	assert_int_equal(rxmem_stats.ooseq_evictions, 0);
	assert_int_equal(rxmem_stats.nomem_drops, 0);

	attack = false;
	run_ms(10000);
	for (i = 0; i < 40; i++)
		assert_int_equal(srv_bytes[cl[i].port], 7);
	assert_int_equal(pool_held, 0);
	assert_int_equal(ring_empty, 0);
	clients_close(40);
}

/* Ten connections leave holes one after another, three pbufs each, under a
 * cap of 20 pbufs: the oldest queues go, whole, in order of age. */
static void test_ooseq_pbuf_cap_evicts_oldest(void **state)
{
	unsigned i;

	pool_reset(POOL_MAX, true);
	rxmem_limits.ooseq_pbufs = 20;
	clients_open(10);
	attack = true;
	for (i = 0; i < 10; i++) {
		cl_hole(&cl[i], 3);
		run_ms(10);
		assert_true(rxmem_stats.ooseq_pbufs <= 20);
	}
	/* 21 > 20 from the 7th connection on: one eviction each for the
	 * last four, of the four oldest. */
	for (i = 0; i < 4; i++)
		assert_null(srv_by_port[cl[i].port]->ooseq);
	for (i = 4; i < 10; i++)
		assert_int_equal(ooseq_pbufs(srv_by_port[cl[i].port]), 3);
	assert_int_equal(rxmem_stats.ooseq_evictions, 4);
	assert_int_equal(rxmem_stats.ooseq_evicted_pbufs, 12);
	assert_int_equal(rxmem_stats.ooseq_evicted_bytes, 12);
	assert_int_equal(rxmem_stats.ooseq_pbufs, 18);

	/* The peers retransmit what was freed: all data arrives. */
	attack = false;
	run_ms(10000);
	for (i = 0; i < 10; i++)
		assert_int_equal(srv_bytes[cl[i].port], 4);
	rxmem_enforce();
	assert_int_equal(rxmem_stats.ooseq_pbufs, 0);
	clients_close(10);
}

/* The byte cap counts payload: 5 bytes allowed, 2 per connection. A queue
 * that empties and fills again counts as young. */
static void test_ooseq_byte_cap_and_age(void **state)
{
	pool_reset(POOL_MAX, true);
	rxmem_limits.ooseq_bytes = 5;
	clients_open(4);
	attack = true;
	cl_hole(&cl[0], 2);
	run_ms(10);
	cl_hole(&cl[1], 2);
	run_ms(10);
	assert_int_equal(rxmem_stats.ooseq_evictions, 0);
	assert_int_equal(rxmem_stats.ooseq_bytes, 4);
	/* cl[0]'s hole fills (its retransmission gets through): its queue
	 * empties; a new hole makes it the youngest. */
	hole[cl[0].port] = 0;
	run_ms(5000);
	assert_int_equal(srv_bytes[cl[0].port], 3);
	assert_null(srv_by_port[cl[0].port]->ooseq);
	cl_hole(&cl[0], 2);
	run_ms(10);
	assert_int_equal(rxmem_stats.ooseq_bytes, 4);
	cl_hole(&cl[2], 2);	/* 6 > 5: the oldest is cl[1]'s now */
	run_ms(10);
	assert_int_equal(rxmem_stats.ooseq_evictions, 1);
	assert_null(srv_by_port[cl[1].port]->ooseq);
	assert_non_null(srv_by_port[cl[0].port]->ooseq);
	assert_non_null(srv_by_port[cl[2].port]->ooseq);
	attack = false;
	run_ms(10000);
	assert_int_equal(srv_bytes[cl[0].port], 6);
	assert_int_equal(srv_bytes[cl[1].port], 3);
	assert_int_equal(srv_bytes[cl[2].port], 3);
	clients_close(4);
}

/* rxmem_admit() on its own: below the watermark the frame goes up as it
 * is; above it, a copy and the buffer back at once; with lwIP's heap short,
 * a counted drop and the buffer back at once. */
static void test_admit(void **state)
{
	static const u8 frame[60] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	mem_size_t avail = lwip_stats.mem.avail;
	struct pbuf *p, *q;

	pool_reset(8, true);
	p = pool_frame(frame, sizeof frame);
	assert_ptr_equal(rxmem_admit(p, 2, 8), p);
	pbuf_free(p);

	p = pool_frame(frame, sizeof frame);
	q = rxmem_admit(p, 3, 8);
	assert_non_null(q);
	assert_ptr_not_equal(q, p);
	assert_int_equal(pool_held, 0);
	assert_int_equal(q->tot_len, sizeof frame);
	assert_int_equal(q->len, sizeof frame);
	assert_memory_equal(q->payload, frame, sizeof frame);
	assert_int_equal(rxmem_stats.copied_frames, 1);
	assert_int_equal(rxmem_stats.copied_bytes, sizeof frame);
	pbuf_free(q);

	/* A heap with less than the reserve left (the kernel's heap publishes
	 * avail; the host's malloc-backed one does not, so fake it). */
	lwip_stats.mem.avail = lwip_stats.mem.used + rxmem_limits.heap_reserve;
	p = pool_frame(frame, sizeof frame);
	assert_null(rxmem_admit(p, 3, 8));
	assert_int_equal(pool_held, 0);
	assert_int_equal(rxmem_stats.nomem_drops, 1);
	assert_int_equal(rxmem_stats.copied_frames, 1);
	lwip_stats.mem.avail = lwip_stats.mem.used + rxmem_limits.heap_reserve + 4096;
	p = pool_frame(frame, sizeof frame);
	q = rxmem_admit(p, 3, 8);
	assert_non_null(q);
	pbuf_free(q);
	lwip_stats.mem.avail = avail;
	assert_int_equal(rxmem_stats.held_peak, 3);
}

/* rxmem_copy() (dma.rx copy, strict): whatever the watermark, a copy the
 * device's page no longer backs, the buffer back at once, counted; a short
 * heap drops it. A chain of two buffers becomes one pbuf. */
static void test_copy(void **state)
{
	static const u8 frame[60] = { 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	mem_size_t avail = lwip_stats.mem.avail;
	struct pbuf *p, *q;

	(void)state;
	pool_reset(8, true);
	p = pool_frame(frame, 20);
	pbuf_cat(p, pool_frame(frame + 20, sizeof frame - 20));
	assert_int_equal(pool_held, 2);
	q = rxmem_copy(p);
	assert_non_null(q);
	assert_int_equal(pool_held, 0);
	assert_null(q->next);
	assert_int_equal(q->tot_len, sizeof frame);
	assert_memory_equal(q->payload, frame, sizeof frame);
	for (unsigned i = 0; i < pool_n; i++)	/* not in any device page */
		assert_false((u8 *)q->payload < pool[i].data + sizeof pool[i].data &&
			     (u8 *)q->payload + q->len > pool[i].data);
	assert_int_equal(rxmem_stats.copied_frames, 1);
	assert_int_equal(rxmem_stats.copied_bytes, sizeof frame);
	pbuf_free(q);
	lwip_stats.mem.avail = lwip_stats.mem.used + rxmem_limits.heap_reserve;
	p = pool_frame(frame, sizeof frame);
	assert_null(rxmem_copy(p));
	assert_int_equal(pool_held, 0);
	assert_int_equal(rxmem_stats.nomem_drops, 1);
	lwip_stats.mem.avail = avail;
}

/* ---- IP reassembly: lwIP's own global cap, checked from outside ---- */

static u16 ip_csum(const u8 *p, unsigned n)
{
	u32 s = 0;
	unsigned i;

	for (i = 0; i + 1 < n; i += 2)
		s += (u32)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (u16)~s;
}

static unsigned udp_got;

static void udp_in(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	udp_got++;
	pbuf_free(p);
}

/* One fragment of datagram `id`: 64 bytes at offset 0 (more to come) or
 * the last 16 at offset 64; the UDP header opens the first. */
static void frag4(u16 id, bool last)
{
	u8 f[20 + 64] = { 0 };
	unsigned dlen = last ? 16 : 64;
	u16 off = last ? 64 / 8 : 0;

	f[0] = 0x45;
	f[2] = (u8)((20 + dlen) >> 8);
	f[3] = (u8)(20 + dlen);
	f[4] = (u8)(id >> 8);
	f[5] = (u8)id;
	f[6] = (u8)((last ? 0 : 0x20) | off >> 8);
	f[7] = (u8)off;
	f[8] = 64;
	f[9] = IP_PROTO_UDP;
	memcpy(f + 12, "\xc0\xa8\x07\x09\xc0\xa8\x07\x02", 8);	/* .9 -> .2 */
	f[10] = 0;
	f[11] = 0;
	{
		u16 c = ip_csum(f, 20);

		f[10] = (u8)(c >> 8);
		f[11] = (u8)c;
	}
	if (!last) {
		f[20] = 0x30;	/* source port 12345 */
		f[21] = 0x39;
		f[22] = 0;	/* destination port 9 */
		f[23] = 9;
		f[24] = 0;	/* UDP length 80, no checksum */
		f[25] = 80;
	}
	rx_one(f, (u16)(20 + dlen));
}

static void frag6(u32 id, bool last)
{
	static const u8 src[16] = { 0xfd, [15] = 9 }, dst[16] = { 0xfd, [15] = 2 };
	u8 f[40 + 8 + 64] = { 0 };
	unsigned dlen = last ? 16 : 64;
	u16 off = last ? 64 : 0;

	f[0] = 0x60;
	f[4] = (u8)((8 + dlen) >> 8);
	f[5] = (u8)(8 + dlen);
	f[6] = 44;	/* fragment header */
	f[7] = 64;
	memcpy(f + 8, src, 16);
	memcpy(f + 24, dst, 16);
	f[40] = IP6_NEXTH_UDP;
	f[42] = (u8)(off >> 8);
	f[43] = (u8)((off & 0xf8) | (last ? 0 : 1));
	f[44] = (u8)(id >> 24);
	f[45] = (u8)(id >> 16);
	f[46] = (u8)(id >> 8);
	f[47] = (u8)id;
	if (!last) {
		f[48] = 0x30;
		f[49] = 0x39;
		f[50] = 0;
		f[51] = 9;
		f[52] = 0;
		f[53] = 80;
	}
	rx_one(f, (u16)(48 + dlen));
}

/* 50 first fragments that never complete, per IP version: lwIP keeps 16
 * pbufs per version and drops the oldest datagrams to make room, so the
 * newest completes and the oldest cannot; all expire after 15 s. */
static void reass(bool v6)
{
	struct udp_pcb *u = udp_new_ip_type(IPADDR_TYPE_ANY);
	unsigned i;

	pool_reset(POOL_MAX, true);
	assert_non_null(u);
	assert_int_equal(udp_bind(u, IP_ANY_TYPE, 9), ERR_OK);
	udp_recv(u, udp_in, NULL);
	NETIF_SET_CHECKSUM_CTRL(&nif, NETIF_CHECKSUM_ENABLE_ALL & ~NETIF_CHECKSUM_CHECK_UDP);
	udp_got = 0;
	for (i = 0; i < 50; i++) {
		if (v6)
			frag6(1000 + i, false);
		else
			frag4((u16)(1000 + i), false);
		assert_true(pool_held <= IP_REASS_MAX_PBUFS);
	}
	run_ms(10);
	assert_int_equal(pool_held, IP_REASS_MAX_PBUFS);
	if (v6) {
		frag6(1000 + 49, true);
		frag6(1000, true);
	} else {
		frag4(1000 + 49, true);
		frag4(1000, true);
	}
	run_ms(10);
	assert_int_equal(udp_got, 1);
	run_ms(16000);
	assert_int_equal(pool_held, 0);
	NETIF_SET_CHECKSUM_CTRL(&nif, NETIF_CHECKSUM_ENABLE_ALL);
	udp_remove(u);
}

static void test_reass_v4_bounded(void **state)
{
	reass(false);
}

static void test_reass_v6_bounded(void **state)
{
	reass(true);
}

/* Bulk windows: at most bulk_max connections hold one; a grant is announced
 * at once, survives the out-of-order age bookkeeping in the same ext arg,
 * lets the connection close with a FIN (lwIP sends a RST when the window is
 * not back at TCP_WND_MAX), and ends when lwIP frees the PCB. */
static void test_bulk_window_grants_bounded(void **state)
{
	struct tcp_pcb *s[3];
	u32 before;
	unsigned i;

	rxmem_limits.bulk_max = 2;
	clients_open(3);
	for (i = 0; i < 3; i++) {
		s[i] = srv_by_port[cl[i].port];
		assert_int_equal(rxmem_wnd_max(s[i]), TCP_WND);
		assert_int_equal(cl[i].pcb->snd_wnd, TCP_WND);
	}
	assert_true(rxmem_bulk_grant(s[0]));
	assert_true(rxmem_bulk_grant(s[0]));	/* held already: no second grant */
	assert_true(rxmem_bulk_grant(s[1]));
	assert_false(rxmem_bulk_available());
	assert_false(rxmem_bulk_grant(s[2]));
	assert_int_equal(rxmem_stats.bulk_grants, 2);
	assert_int_equal(rxmem_stats.bulk_peak, 2);
	assert_int_equal(rxmem_stats.bulk_granted, 2);
	assert_int_equal(rxmem_stats.bulk_refused, 1);
	run_ms(10);
	/* the window updates reached the peers */
	assert_int_equal(cl[0].pcb->snd_wnd, VIREO_RXMEM_BULK_WND);
	assert_int_equal(cl[1].pcb->snd_wnd, VIREO_RXMEM_BULK_WND);
	assert_int_equal(cl[2].pcb->snd_wnd, TCP_WND);
	assert_int_equal(rxmem_wnd_max(s[0]), VIREO_RXMEM_BULK_WND);
	assert_int_equal(rxmem_wnd_max(s[2]), TCP_WND);

	/* an out-of-order queue's age stamp comes and goes beside the grant */
	attack = true;
	cl_hole(&cl[0], 2);
	run_ms(10);
	rxmem_enforce();
	assert_non_null(s[0]->ooseq);
	assert_int_equal(rxmem_wnd_max(s[0]), VIREO_RXMEM_BULK_WND);
	attack = false;
	run_ms(5000);	/* the client retransmits the lost byte */
	rxmem_enforce();
	assert_null(s[0]->ooseq);
	assert_int_equal(srv_bytes[cl[0].port], 3);
	assert_int_equal(rxmem_wnd_max(s[0]), VIREO_RXMEM_BULK_WND);

	/* a bulk window's worth in flight at once, taken whole */
	before = srv_bytes[cl[1].port];
	{
		static u8 blk[VIREO_RXMEM_BULK_WND];

		memset(blk, 'b', sizeof blk);
		assert_int_equal(tcp_write(cl[1].pcb, blk, sizeof blk - TCP_MSS, TCP_WRITE_FLAG_COPY), ERR_OK);
		assert_int_equal(tcp_output(cl[1].pcb), ERR_OK);
	}
	run_ms(1000);
	assert_int_equal(srv_bytes[cl[1].port] - before, VIREO_RXMEM_BULK_WND - TCP_MSS);

	/* orderly closes: FIN both ways, no RST */
	wire_rsts = 0;
	clients_close(3);
	run_ms(1000);
	for (i = 0; i < 3; i++)
		assert_null(srv_by_port[cl[i].port]);
	assert_int_equal(wire_rsts, 0);
	/* TIME_WAIT over, the PCBs freed: the grants are back */
	run_ms(2 * TCP_MSL + 10000);
	assert_null(tcp_active_pcbs);
	assert_null(tcp_tw_pcbs);
	assert_int_equal(rxmem_stats.bulk_grants, 0);
	assert_true(rxmem_bulk_available());
}

/* An outbound bulk connection's window (rxmem_out_grant(), the HTTP
 * client's pools): the plan's rxmem_limits.out_wnd, 48 MSS wide, announced
 * at once (scaled past 65,535), a whole 64 KiB response and its head taken
 * in one flight, none of the bulk_max grants counted, closed with a FIN. */
static void test_out_window_wide(void **state)
{
	static u8 blk[70080];
	struct tcp_pcb *s;
	u32 before;

	(void)state;
	rxmem_limits.out_wnd = sizeof blk;
	clients_open(1);
	s = srv_by_port[cl[0].port];
	assert_int_equal(rxmem_wnd_max(s), TCP_WND);
	rxmem_out_grant(s, rxmem_limits.out_wnd);
	assert_int_equal(rxmem_wnd_max(s), sizeof blk);
	assert_int_equal(rxmem_stats.bulk_grants, 0);
	assert_true(rxmem_bulk_available());
	run_ms(10);
	assert_int_equal(cl[0].pcb->snd_wnd, sizeof blk);
	before = srv_bytes[cl[0].port];
	memset(blk, 'o', sizeof blk);
	assert_int_equal(tcp_write(cl[0].pcb, blk, 60000, TCP_WRITE_FLAG_COPY), ERR_OK);
	assert_int_equal(tcp_write(cl[0].pcb, blk, 65536 + 300 - 60000, TCP_WRITE_FLAG_COPY), ERR_OK);
	assert_int_equal(tcp_output(cl[0].pcb), ERR_OK);
	run_ms(1000);
	assert_int_equal(srv_bytes[cl[0].port] - before, 65536 + 300);
	wire_rsts = 0;
	clients_close(1);
	run_ms(1000);
	assert_null(srv_by_port[cl[0].port]);
	assert_int_equal(wire_rsts, 0);
	rxmem_limits.out_wnd = VIREO_RXMEM_BULK_WND;
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_admit),
		T(test_copy),
		T(test_pool_drains_without_rxmem),
		T(test_pool_never_drains),
		T(test_ooseq_pbuf_cap_evicts_oldest),
		T(test_ooseq_byte_cap_and_age),
		T(test_reass_v4_bounded),
		T(test_reass_v6_bounded),
		T(test_out_window_wide),
		T(test_bulk_window_grants_bounded),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
