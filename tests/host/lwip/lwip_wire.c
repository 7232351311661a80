/* The lwIP test wire shared by the host tests of the runtime's services
 * (test_server.c, test_api.c): one in-process netif whose output queues IP
 * packets that wire_drain() delivers back to ip_input(), a fake clock moving
 * lwIP's timers, raw-API TCP clients, and HTTP responses as a client sees
 * them, and the netif's bring-up and the leak check both tests run. */
#define _GNU_SOURCE	/* memmem */
#include "tests/host/lwip/lwip_wire.h"
#include "lwip/ip.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/stats.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

/* ---- the wire: one netif, packets looped back to itself ---- */



struct netif nif;
struct frame *wire_head, **wire_tail = &wire_head;
ip_addr_t addr4, addr6;

void wire_netif_up(void)
{
	ip4_addr_t a, m, g;
	s8_t idx;

	IP4_ADDR(&a, 192, 168, 7, 2);
	IP4_ADDR(&m, 255, 255, 255, 0);
	IP4_ADDR(&g, 192, 168, 7, 1);
	assert_non_null(netif_add(&nif, &a, &m, &g, NULL, nif_init, ip_input));
	assert_true(ipaddr_aton("fd00::2", &addr6));
	assert_int_equal(netif_add_ip6_address(&nif, ip_2_ip6(&addr6), &idx), ERR_OK);
	netif_ip6_addr_set_state(&nif, idx, IP6_ADDR_PREFERRED);
	netif_set_default(&nif);
	netif_set_up(&nif);
	netif_set_link_up(&nif);
	ip_addr_copy_from_ip4(addr4, a);
	run_step(5000, 100);	/* let MLD/ND start-up chatter settle */
}

static mem_size_t wire_base_mem;
static u32 wire_base_memp[MEMP_MAX];

void wire_snapshot(void)
{
	wire_base_mem = lwip_stats.mem.used;
	for (int i = 0; i < MEMP_MAX; i++)
		wire_base_memp[i] = lwip_stats.memp[i]->used;
}

void wire_check_idle(void)
{
	assert_null(tcp_active_pcbs);
	assert_null(tcp_tw_pcbs);
	for (int i = 0; i < MEMP_MAX; i++)
		if (lwip_stats.memp[i]->used != wire_base_memp[i])
			fail_msg("pool %s: %u used, %u at start", lwip_stats.memp[i]->name,
				 (unsigned)lwip_stats.memp[i]->used, (unsigned)wire_base_memp[i]);
	assert_int_equal(lwip_stats.mem.used, wire_base_mem);
}

/* Blackhole: TCP segments without data, SYN or FIN (pure ACKs) from source
 * ports [bh_lo, bh_hi) are lost on the wire: a peer that never ACKs. */
u16 bh_lo, bh_hi;

static bool wire_lost(struct pbuf *p)
{
	u8 h[60 + 20];
	size_t ip_len, n = pbuf_copy_partial(p, h, sizeof h, 0);
	u16 sport, tot;
	u8 flags;

	if (bh_lo == bh_hi || n < 40)
		return false;
	if ((h[0] >> 4) == 4) {
		if (h[9] != 6)
			return false;
		ip_len = (size_t)(h[0] & 15) * 4;
		tot = (u16)(h[2] << 8 | h[3]);
	} else {
		if (h[6] != 6)
			return false;
		ip_len = 40;
		tot = (u16)(40 + (h[4] << 8 | h[5]));
	}
	if (n < ip_len + 20)
		return false;
	sport = (u16)(h[ip_len] << 8 | h[ip_len + 1]);
	flags = h[ip_len + 13];
	return sport >= bh_lo && sport < bh_hi && !(flags & (TCP_SYN | TCP_FIN)) &&
	       tot == ip_len + (size_t)(h[ip_len + 12] >> 4) * 4;
}

static err_t wire_put(struct pbuf *p)
{
	struct frame *f;

	if (wire_lost(p))
		return ERR_OK;
	f = malloc(sizeof *f + p->tot_len);

	assert_non_null(f);
	f->next = NULL;
	f->len = p->tot_len;
	pbuf_copy_partial(p, f->data, p->tot_len, 0);
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

err_t nif_init(struct netif *n)
{
	n->name[0] = 't';
	n->name[1] = '0';
	n->output = out4;
	n->output_ip6 = out6;
	n->mtu = 1500;
	n->flags = NETIF_FLAG_BROADCAST;
	return ERR_OK;
}

/* Deliver queued packets, and those they cause, until the wire is quiet. As a
 * driver would, each goes into a fresh PBUF_POOL pbuf. */
void wire_drain(void)
{
	unsigned n = 0;

	while (wire_head) {
		struct frame *f = wire_head;
		struct pbuf *p;

		wire_head = f->next;
		if (!wire_head)
			wire_tail = &wire_head;
		p = pbuf_alloc(PBUF_RAW, f->len, PBUF_POOL);
		assert_non_null(p);
		assert_int_equal(pbuf_take(p, f->data, f->len), ERR_OK);
		nif.input(p, &nif);
		free(f);
		assert_true(++n < 1000000);
	}
}

/* Let ms of fake time pass in steps: deliver, advance, run lwIP's timers
 * and the event loop's work and timers. */
void run_step(u64 ms, u64 step)
{
	u64 t;

	for (t = 0; t < ms; t += step) {
		wire_drain();
		hk_clock_advance_ms(step);
		sys_check_timeouts();
		hk_run(100000);	/* the kernel loop's work and timers (the apps') */
	}
	wire_drain();
	hk_run(100000);
	wire_drain();
}

void run_ms(u64 ms)
{
	run_step(ms, 10);
}

/* ---- a raw-API TCP client ---- */



void cl_push(struct client *c)
{
	while (c->pcb && c->tx_off < c->tx_len) {
		size_t n = MIN(c->tx_len - c->tx_off, (size_t)tcp_sndbuf(c->pcb));

		if (n == 0 || tcp_write(c->pcb, c->tx + c->tx_off, (u16_t)n, TCP_WRITE_FLAG_COPY))
			break;
		c->tx_off += n;
	}
	if (c->pcb)
		tcp_output(c->pcb);
}

static err_t cl_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	struct client *c = arg;

	if (!p) {
		c->eof = true;
		return ERR_OK;
	}
	if (c->len + p->tot_len > c->cap) {
		c->cap = (c->len + p->tot_len) * 2;
		c->buf = realloc(c->buf, c->cap);
		assert_non_null(c->buf);
	}
	pbuf_copy_partial(p, c->buf + c->len, p->tot_len, 0);
	c->len += p->tot_len;
	if (c->hold)
		c->held += p->tot_len;
	else
		tcp_recved(pcb, p->tot_len);
	pbuf_free(p);
	return ERR_OK;
}

static err_t cl_sent(void *arg, struct tcp_pcb *pcb, u16_t len)
{
	cl_push(arg);
	return ERR_OK;
}

static void cl_err(void *arg, err_t err)
{
	struct client *c = arg;

	c->dead = true;
	c->err = err;
	c->pcb = NULL;
}

static err_t cl_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	((struct client *)arg)->connected = true;
	return ERR_OK;
}

void cl_open_from(struct client *c, bool v6, u16 port, u16 local_port)
{
	memset(c, 0, sizeof *c);
	c->pcb = tcp_new_ip_type(v6 ? IPADDR_TYPE_V6 : IPADDR_TYPE_V4);
	assert_non_null(c->pcb);
	if (local_port)
		assert_int_equal(tcp_bind(c->pcb, v6 ? IP6_ADDR_ANY : IP4_ADDR_ANY, local_port), ERR_OK);
	tcp_arg(c->pcb, c);
	tcp_recv(c->pcb, cl_recv);
	tcp_sent(c->pcb, cl_sent);
	tcp_err(c->pcb, cl_err);
	assert_int_equal(tcp_connect(c->pcb, v6 ? &addr6 : &addr4, port, cl_connected), ERR_OK);
	run_ms(20);
}

void cl_open(struct client *c, bool v6, u16 port)
{
	cl_open_from(c, v6, port, 0);
}

/* Queue n bytes (kept by reference until sent) and let 50 ms pass. */
void cl_send(struct client *c, const void *data, size_t n)
{
	assert_true(c->tx_off == c->tx_len);
	c->tx = data;
	c->tx_len = n;
	c->tx_off = 0;
	cl_push(c);
	run_ms(50);
}

void cl_send_str(struct client *c, const char *s)
{
	cl_send(c, s, strlen(s));
}

/* Stop reading / read again (gives back what was held). */
void cl_resume(struct client *c)
{
	c->hold = false;
	while (c->held && c->pcb) {
		u16_t n = (u16_t)MIN(c->held, 0xffffu);

		tcp_recved(c->pcb, n);
		c->held -= n;
	}
}

void cl_detach(struct client *c)
{
	tcp_arg(c->pcb, NULL);
	tcp_recv(c->pcb, NULL);
	tcp_sent(c->pcb, NULL);
	tcp_err(c->pcb, NULL);
}

/* Orderly close (lwIP sends RST instead if unread data is held). */
void cl_close(struct client *c)
{
	if (c->pcb) {
		cl_resume(c);
		cl_detach(c);
		assert_int_equal(tcp_close(c->pcb), ERR_OK);
		c->pcb = NULL;
	}
	run_ms(20);
	free(c->buf);
	c->buf = NULL;
}

void cl_window(struct client *c, u32 n)
{
	struct tcp_pcb *pcb = c->pcb;

	n = MIN(n, c->held);
	if (!n || !pcb)
		return;
	tcp_recved(pcb, (u16_t)n);
	c->held -= n;
	pcb->rcv_ann_wnd = pcb->rcv_wnd;
	pcb->rcv_ann_right_edge = pcb->rcv_nxt + pcb->rcv_wnd;
	tcp_ack_now(pcb);
	tcp_output(pcb);
}

void cl_abort(struct client *c)
{
	if (c->pcb) {
		cl_detach(c);
		tcp_abort(c->pcb);
		c->pcb = NULL;
	}
	run_ms(20);
	free(c->buf);
	c->buf = NULL;
}

/* ---- responses as the client sees them ---- */



/* A header's value (first match, case-insensitive name), or NULL. */
const char *hdr(const struct resp *r, const char *name)
{
	static char val[512];
	size_t nl = strlen(name);
	const char *s = strstr(r->head, "\r\n");

	while (s && s[2] != '\r') {
		const char *line = s + 2, *end = strstr(line, "\r\n");

		if (strncasecmp(line, name, nl) == 0 && line[nl] == ':') {
			const char *v = line + nl + 1;
			size_t n;

			while (*v == ' ')
				v++;
			n = (size_t)(end - v);
			assert_true(n < sizeof val);
			memcpy(val, v, n);
			val[n] = '\0';
			return val;
		}
		s = end;
	}
	return NULL;
}

/* Wait (up to 5 s of fake time) for one whole response after c->off; with
 * no_body the Content-Length is not waited for (HEAD, 304). */
bool cl_response(struct client *c, bool no_body, struct resp *r)
{
	int i;

	for (i = 0; i < 500; i++) {
		const u8 *start = c->buf + c->off;
		size_t avail = c->len - c->off;
		const u8 *end = c->buf ? memmem(start, avail, "\r\n\r\n", 4) : NULL;

		if (end) {
			const char *cl;
			size_t need;

			r->head_len = (size_t)(end - start) + 4;
			assert_true(r->head_len < sizeof r->head);
			memcpy(r->head, start, r->head_len);
			r->head[r->head_len] = '\0';
			assert_int_equal(sscanf(r->head, "HTTP/1.1 %d ", &r->status), 1);
			cl = hdr(r, "Content-Length");
			assert_non_null(cl);
			need = no_body ? 0 : strtoul(cl, NULL, 10);
			if (avail - r->head_len >= need) {
				r->body = start + r->head_len;
				r->body_len = need;
				c->off += r->head_len + need;
				return true;
			}
		}
		if (c->eof || c->dead)
			return false;
		run_ms(10);
	}
	return false;
}

