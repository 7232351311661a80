/*
 * Remote syslog: every console line as one RFC 5424 message over UDP to
 * syslog=A.B.C.D[:port]. A console sink (called with interrupts off, from
 * anywhere) only copies the line into a ring; a work item on the event loop
 * formats and sends what the ring holds. Nothing ever waits for the
 * network: a line that finds the ring full, or no pbuf, is dropped and
 * counted (vireo_syslog_dropped_total), never blocks the console.
 *
 * Memory, fixed at build time: SYSLOG_RING lines of at most SYSLOG_LINE
 * bytes (64 x 256 = 16 KiB, four pages taken when syslog= is set, not .bss,
 * which the image stores; longer lines cut and counted), one line being
 * assembled (256 B), one 512-byte datagram on the stack while sending.
 * The sink replays the console's log ring when added (at most
 * LOG_RING_SIZE = 8 KiB, so the boot log arrives too, less what drops).
 */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/fmt.h"
#include "kernel/io.h"
#include "kernel/loop.h"
#include "kernel/mm.h"
#include "kernel/parse.h"
#include "kernel/string.h"
#include "kernel/wallclock.h"
#include "lwip/etharp.h"
#include "lwip/ip_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "net/app/metrics.h"
#include "net/net.h"
#include "net/syslog_msg.h"

#define SYSLOG_RING 64
#define SYSLOG_LINE 256
#define SYSLOG_DGRAM 512
#define SYSLOG_WAIT_MS 500	/* no address yet: try again */
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

static struct console_sink syslog_sink = { .name = "syslog", .write = syslog_sink_write };

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
	if (etharp_find_addr(n, hop, &eth, &found) >= 0)
		return true;
	etharp_query(n, hop, NULL);
	return false;
}

static void syslog_drain(void *arg)
{
	struct netif *n = netif_default;
	char host[16], stamp[32], line[SYSLOG_LINE], dgram[SYSLOG_DGRAM];
	u64 ns;

	(void)arg;
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
	metrics_simple(b, "vireo_syslog_sent_total", METRICS_COUNTER, "console lines sent to the syslog server",
		       slog.sent);
	metrics_simple(b, "vireo_syslog_dropped_total", METRICS_COUNTER,
		       "console lines dropped: the ring was full or no buffer", slog.dropped);
	metrics_simple(b, "vireo_syslog_cut_total", METRICS_COUNTER, "console lines cut to 256 bytes", slog.cut);
	metrics_simple(b, "vireo_syslog_send_errors_total", METRICS_COUNTER, "datagrams lwIP refused to send",
		       slog.send_errors);
}

static struct metrics_source syslog_source = { "syslog", syslog_metrics, NULL };

int syslog_start(void)
{
	if (!syslog_addr)
		return 0;
	if (!slog.ring)
		slog.ring = page_alloc(SYSLOG_RING * SYSLOG_LINE / PAGE_SIZE);
	if (!slog.ring) {
		kprintf("syslog: no memory for the %u-line ring; not sending\n", SYSLOG_RING);
		return -ENOMEM;
	}
	slog.pcb = udp_new_ip_type(IPADDR_TYPE_V4);
	if (!slog.pcb)
		return -ENOMEM;
	ip_addr_set_ip4_u32_val(slog.server, lwip_htonl(syslog_addr));
	work_init(&slog.work, syslog_drain, NULL);
	metrics_register(&syslog_source);
	kprintf("syslog: to %s port %u\n", ipaddr_ntoa(&slog.server), syslog_port);
	console_add_sink(&syslog_sink);
	return 0;
}
