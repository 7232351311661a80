/*
 * Remote syslog: every console line as one RFC 5424 message over UDP to
 * syslog=A.B.C.D[:port]. A console sink (called with interrupts off, from
 * anywhere) only copies the line into a ring; a work item on the event loop
 * formats and sends what the ring holds. Nothing ever waits for the
 * network: a line that finds the ring full, or no pbuf, is dropped and
 * counted (vireo_syslog_dropped_total), never blocks the console.
 *
 * Memory, fixed at build time: SYSLOG_RING lines of at most SYSLOG_LINE
 * bytes (128 x 256 = 32 KiB, eight pages taken when syslog= is set, not .bss,
 * which the image stores; longer lines cut and counted), one line being
 * assembled (256 B), one 512-byte datagram on the stack while sending.
 * The sink replays the console's log ring when added (at most
 * LOG_RING_SIZE = 8 KiB, so the boot log arrives too, less what drops):
 * 128 lines hold that replay (the boot log's lines average 70-90 B, about
 * 100 of them in 8 KiB) and what the boot prints while ARP resolves the
 * next hop; 64 lost the ready line once the store's lines joined the boot
 * log.
 *
 * A panic (console_panic_mode) stops the loop for good, so its lines take
 * another way: the sink's emergency writer builds each of the first
 * SYSLOG_EMERG_LINES lines into a complete Ethernet/IPv4/UDP frame
 * (syslog_msg_frame) in a page taken at start (16 x 256 B) and hands it
 * straight to the driver (netif_vnet_emergency_tx): no lwIP, no
 * allocation, no waiting. It needs the next hop's MAC, remembered from the
 * last time the loop sent; before that (or with the link down) panic lines
 * stay on the console only. Best effort: a frame the ring has no room for
 * is lost.
 */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/parse.h"
#include "lib/string.h"
#include "lib/metrics.h"
#include "kernel/time/wallclock.h"
#include "lwip/etharp.h"
#include "lwip/ip_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "net/net.h"
#include "net/clients/syslog_msg.h"

#define SYSLOG_RING 128
#define SYSLOG_LINE 256
#define SYSLOG_DGRAM 512
#define SYSLOG_WAIT_MS 500	/* no address yet: try again */
#define SYSLOG_EMERG_LINES 16	/* panic lines sent, one frame each ... */
#define SYSLOG_EMERG_FRAME 256	/* ... of at most this many bytes, in one page */
_Static_assert(SYSLOG_EMERG_LINES * SYSLOG_EMERG_FRAME <= PAGE_SIZE, "the panic frames fit a page");
_Static_assert(SYSLOG_RING * SYSLOG_LINE % PAGE_SIZE == 0, "the ring is whole pages");

static u32 syslog_addr;		/* host order; 0: off */
static u16 syslog_port = 514;

static int syslog_parse(const char *val, void *dst, char *why, size_t why_len)
{
	char host[16];
	size_t i = 0;
	u32 a;
	u64 port = 514;

	(void)dst;
	if (!strcmp(val, "off")) {
		syslog_addr = 0;
		return 0;
	}
	while (val[i] && val[i] != ':' && i < sizeof host - 1) {
		host[i] = val[i];
		i++;
	}
	host[i] = '\0';
	if (val[i] == ':') {
		const char *p = val + i + 1;

		if (parse_dec(&p, 65535, &port) || *p || port == 0)
			goto bad;
	} else if (val[i]) {
		goto bad;
	}
	if (cmdline_parse_ipv4(host, &a, NULL) < 0 || a == 0 || a == 0xffffffffu)
		goto bad;
	syslog_addr = a;
	syslog_port = (u16)port;
	return 0;
bad:
	ksnprintf(why, why_len, "want off or A.B.C.D[:port]");
	return -EINVAL;
}
CMDLINE_PARAM(syslog, .key = "syslog", .type = CMDLINE_CUSTOM, .parse = syslog_parse, .def = "off",
	      .values = "off, A.B.C.D[:port] (port 514 if omitted)",
	      .help = "send every console line to this syslog server (RFC 5424 over UDP)");

static struct {
	char (*ring)[SYSLOG_LINE];	/* SYSLOG_RING lines, from syslog_start() */
	u16 len[SYSLOG_RING];
	u32 head, tail;		/* head - tail lines are queued */
	char cur[SYSLOG_LINE];	/* the line being assembled */
	u16 cur_len;
	bool cur_cut;
	struct udp_pcb *pcb;
	ip_addr_t server;
	struct work work;
	bool waiting;		/* a retry timer is armed */
	u64 sent, dropped, cut, send_errors;
	/* the panic path */
	u8 (*emerg)[SYSLOG_EMERG_FRAME];	/* SYSLOG_EMERG_LINES frames, one page */
	struct syslog_msg_link link;	/* as the loop last sent: addresses, next hop's MAC */
	bool link_ok;
	char eline[SYSLOG_LINE];
	u16 eline_len;
	u16 emerg_sent, ip_id;
} slog;

/* Interrupts are off (console sinks are called so). */
static void syslog_sink_write(struct console_sink *s, const char *buf, size_t len)
{
	(void)s;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			if (slog.cur_len < SYSLOG_LINE)
				slog.cur[slog.cur_len++] = buf[i];
			else
				slog.cur_cut = true;
			continue;
		}
		if (slog.cur_cut)
			slog.cut++;
		if (slog.head - slog.tail == SYSLOG_RING) {
			slog.dropped++;
		} else {
			u32 at = slog.head % SYSLOG_RING;

			memcpy(slog.ring[at], slog.cur, slog.cur_len);
			slog.len[at] = slog.cur_len;
			slog.head++;
		}
		slog.cur_len = 0;
		slog.cur_cut = false;
		work_queue(&slog.work);
	}
}

/* One panic line as one frame, straight to the driver. */
static void syslog_emerg_send(const char *line, size_t len)
{
	char stamp[32], host[16], dgram[SYSLOG_EMERG_FRAME - SYSLOG_MSG_FRAME_HDR];
	u8 *frame;
	size_t dlen, flen;
	u64 ns;

	if (!slog.emerg || !slog.link_ok || !syslog_addr || slog.emerg_sent >= SYSLOG_EMERG_LINES)
		return;
	frame = slog.emerg[slog.emerg_sent];
	len -= syslog_msg_unstamp(line, len);
	stamp[0] = '\0';
	if (wallclock_now(&ns))
		wallclock_iso(ns, stamp, sizeof stamp);
	ksnprintf(host, sizeof host, "%u.%u.%u.%u", slog.link.src_ip >> 24, slog.link.src_ip >> 16 & 0xff,
		  slog.link.src_ip >> 8 & 0xff, slog.link.src_ip & 0xff);
	dlen = syslog_msg_format(dgram, sizeof dgram, syslog_msg_severity(line, len), stamp, host, line, len);
	flen = dlen ? syslog_msg_frame(frame, SYSLOG_EMERG_FRAME, &slog.link, slog.ip_id++, dgram, dlen) : 0;
	if (flen && netif_vnet_emergency_tx(frame, (u32)flen) == 0)
		slog.emerg_sent++;
}

/* Panic mode: interrupts off, the loop never runs again. */
static void syslog_sink_emerg(struct console_sink *s, const char *buf, size_t len)
{
	(void)s;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n') {
			if (slog.eline_len < SYSLOG_LINE)
				slog.eline[slog.eline_len++] = buf[i];
			continue;
		}
		syslog_emerg_send(slog.eline, slog.eline_len);
		slog.eline_len = 0;
	}
}

static struct console_sink syslog_sink = {
	.name = "syslog", .write = syslog_sink_write, .emerg_write = syslog_sink_emerg,
};

struct console_sink *syslog_console_sink(void)
{
	return &syslog_sink;
}

int syslog_line(const char *line, size_t len)
{
	u64 flags;
	int err = 0;

	if (!slog.pcb || !syslog_addr)
		return -ENOTCONN;
	flags = irq_save_inline();	/* not irq_save(): kernel/arch/arch.h says why */
	if (slog.head - slog.tail == SYSLOG_RING) {
		err = -EAGAIN;
	} else {
		u32 at = slog.head % SYSLOG_RING;

		if (len > SYSLOG_LINE) {
			len = SYSLOG_LINE;
			slog.cut++;
		}
		memcpy(slog.ring[at], line, len);
		slog.len[at] = (u16)len;
		slog.head++;
		work_queue(&slog.work);
	}
	irq_restore_inline(flags);
	return err;
}

static void syslog_retry(void *arg)
{
	(void)arg;
	slog.waiting = false;
	work_queue(&slog.work);
}

static bool syslog_hop_ready(struct netif *n)
{
	const ip4_addr_t *server = ip_2_ip4(&slog.server), *hop = server;
	struct eth_addr *eth;
	const ip4_addr_t *found;

	if (!ip4_addr_net_eq(server, netif_ip4_addr(n), netif_ip4_netmask(n)))
		hop = netif_ip4_gw(n);
	if (etharp_find_addr(n, hop, &eth, &found) >= 0) {
		/* What the panic writer needs to address a frame by itself. */
		memcpy(slog.link.src_mac, n->hwaddr, 6);
		memcpy(slog.link.dst_mac, eth->addr, 6);
		slog.link.src_ip = lwip_ntohl(ip4_addr_get_u32(netif_ip4_addr(n)));
		slog.link.dst_ip = syslog_addr;
		slog.link.src_port = slog.pcb->local_port ? slog.pcb->local_port : syslog_port;
		slog.link.dst_port = syslog_port;
		slog.link_ok = true;
		return true;
	}
	etharp_query(n, hop, NULL);
	return false;
}

static void syslog_drain(void *arg)
{
	struct netif *n = netif_default;
	char host[16], stamp[32], line[SYSLOG_LINE], dgram[SYSLOG_DGRAM];
	u64 ns;

	(void)arg;
	if (!syslog_addr) {	/* turned off after start: drop what is queued */
		u64 flags = irq_save();

		slog.tail = slog.head;
		irq_restore(flags);
		return;
	}
	if (!n || !netif_is_up(n) || !netif_is_link_up(n) || ip4_addr_isany_val(*netif_ip4_addr(n))) {
		if (!slog.waiting) {
			slog.waiting = true;
			sys_timeout(SYSLOG_WAIT_MS, syslog_retry, NULL);
		}
		return;
	}
	/* lwIP queues one packet while it resolves a next hop and drops the
	 * rest: send only once the hop's MAC is known, asking for it (and
	 * looking again shortly) otherwise. */
	if (!syslog_hop_ready(n)) {
		if (!slog.waiting) {
			slog.waiting = true;
			sys_timeout(SYSLOG_WAIT_MS, syslog_retry, NULL);
		}
		return;
	}
	ip4addr_ntoa_r(netif_ip4_addr(n), host, sizeof host);
	for (;;) {
		u64 flags = irq_save();
		size_t len, skip, dlen;
		struct pbuf *p;
		u32 at;

		if (slog.head == slog.tail) {
			irq_restore(flags);
			break;
		}
		at = slog.tail % SYSLOG_RING;
		len = slog.len[at];
		memcpy(line, slog.ring[at], len);
		slog.tail++;
		irq_restore(flags);

		skip = syslog_msg_unstamp(line, len);
		stamp[0] = '\0';
		if (wallclock_now(&ns))
			wallclock_iso(ns, stamp, sizeof stamp);
		dlen = syslog_msg_format(dgram, sizeof dgram, syslog_msg_severity(line + skip, len - skip), stamp,
					 host, line + skip, len - skip);
		p = dlen ? pbuf_alloc(PBUF_TRANSPORT, (u16)dlen, PBUF_RAM) : NULL;
		if (!p) {
			slog.dropped++;
			continue;
		}
		pbuf_take(p, dgram, (u16)dlen);
		if (udp_sendto(slog.pcb, p, &slog.server, syslog_port) == ERR_OK)
			slog.sent++;
		else
			slog.send_errors++;
		pbuf_free(p);
	}
}

static void syslog_metrics(struct metrics_buf *b)
{
	if (!slog.pcb)
		return;	/* syslog= not set */
	metrics_simple(b, "vireo_syslog_sent_total", METRICS_COUNTER, "console lines sent to the syslog server",
		       slog.sent);
	metrics_simple(b, "vireo_syslog_dropped_total", METRICS_COUNTER,
		       "console lines dropped: the ring was full or no buffer", slog.dropped);
	metrics_simple(b, "vireo_syslog_cut_total", METRICS_COUNTER, "console lines cut to 256 bytes", slog.cut);
	metrics_simple(b, "vireo_syslog_send_errors_total", METRICS_COUNTER, "datagrams lwIP refused to send",
		       slog.send_errors);
}

METRICS_SOURCE(syslog, syslog_metrics);

int syslog_start(void)
{
	if (slog.pcb) {
		/* Again, after syslog= changed: the queue goes to the new
		 * server (the drain looks the next hop up again), or, for
		 * off, is dropped from now on. */
		slog.link_ok = false;
		ip_addr_set_ip4_u32_val(slog.server, lwip_htonl(syslog_addr));
		if (syslog_addr)
			kprintf("syslog: to %s port %u\n", ipaddr_ntoa(&slog.server), syslog_port);
		else
			kprintf("syslog: off\n");
		work_queue(&slog.work);
		return 0;
	}
	if (!syslog_addr)
		return 0;
	if (!slog.ring)
		slog.ring = page_alloc(SYSLOG_RING * SYSLOG_LINE / PAGE_SIZE);
	if (!slog.ring) {
		kprintf("syslog: no memory for the %u-line ring; not sending\n", SYSLOG_RING);
		return -ENOMEM;
	}
	if (!slog.emerg)
		slog.emerg = page_alloc(1);	/* without it, panics stay on the console */
	slog.pcb = udp_new_ip_type(IPADDR_TYPE_V4);
	if (!slog.pcb)
		return -ENOMEM;
	ip_addr_set_ip4_u32_val(slog.server, lwip_htonl(syslog_addr));
	work_init(&slog.work, syslog_drain, NULL);
	kprintf("syslog: to %s port %u\n", ipaddr_ntoa(&slog.server), syslog_port);
	console_add_sink(&syslog_sink);
	return 0;
}
