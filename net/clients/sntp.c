/*
 * The SNTP client (RFC 4330) on lwIP's raw UDP API: one request at a time to
 * the ntp= server (an address, or a name net/clients/resolv.c looks up first), each with a random transmit timestamp the reply must
 * echo (sntp_msg.c checks the rest). An answer sets kernel/time/wallclock.c; no
 * answer retries after 2, 4, 8 ... 64 s; once set, the clock is refreshed
 * every SNTP_RESYNC_MS.
 *
 * What a remote party can make this hold: one UDP pcb, one 48-byte request
 * pbuf in flight, one timer. A reply is copied (48 bytes) and freed in the
 * receive callback; datagrams from anyone but the server's port 123, or
 * while no request is outstanding, are dropped and counted. Rejections are
 * logged for the first SNTP_LOG_MAX, then only counted.
 */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/random.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lwip/ip_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/timeouts.h"
#include "lwip/udp.h"
#include "net/net.h"
#include "net/clients/resolv.h"
#include "net/clients/sntp_msg.h"

#define SNTP_FIRST_MS 1000	/* after start: let the address settle */
#define SNTP_WAIT_ADDR_MS 1000	/* no IPv4 address yet: look again */
#define SNTP_RETRY_MIN_MS 2000
#define SNTP_RETRY_MAX_MS 64000
#define SNTP_RESYNC_MS (3600 * 1000)
#define SNTP_LOG_MAX 8

static u32 sntp_server;	/* host order; 0: off, or ... */
static char sntp_name[254];	/* ... a host name to resolve (net/clients/resolv.c), or ... */
static bool sntp_dhcp;		/* ... the server a DHCP lease names (option 42) */

static int sntp_parse(const char *val, void *dst, char *why, size_t why_len)
{
	u32 a;

	(void)dst;
	if (!strcmp(val, "off") || !strcmp(val, "dhcp")) {
		sntp_server = 0;
		sntp_name[0] = '\0';
		sntp_dhcp = val[0] == 'd';
		return 0;
	}
	if (cmdline_parse_ipv4(val, &a, NULL) == 0 && a != 0 && a != 0xffffffffu) {
		sntp_server = a;
		sntp_name[0] = '\0';
		sntp_dhcp = false;
		return 0;
	}
	if (resolv_is_name(val) && strlen(val) < sizeof sntp_name) {
		sntp_server = 0;
		sntp_dhcp = false;
		strlcpy(sntp_name, val, sizeof sntp_name);
		return 0;
	}
	ksnprintf(why, why_len, "want off, dhcp, a server's A.B.C.D or its name");
	return -EINVAL;
}
CMDLINE_PARAM(ntp, .key = "ntp", .type = CMDLINE_CUSTOM, .parse = sntp_parse, .def = "off",
	      .values = "off, dhcp (option 42), A.B.C.D, host name (dns=)", .help = "SNTP server for wall-clock time (log timestamps; the Date header refined)");

static struct {
	struct udp_pcb *pcb;
	ip_addr_t server;
	bool pending;		/* a request is out */
	u64 nonce, t1;		/* its transmit timestamp; when it left (time_ns) */
	u32 retry_ms;
	u64 sent, answered, dropped, rejected;
	u32 logged;
} sntp;

static void sntp_send(void *arg);

static void sntp_arm(u32 ms)
{
	sys_untimeout(sntp_send, NULL);
	sys_timeout(ms, sntp_send, NULL);
}

static void sntp_resolved(const char *name, const ip_addr_t *a, void *arg)
{
	static bool said;

	(void)arg;
	if (!a) {
		if (sntp.logged++ < SNTP_LOG_MAX)
			kprintf("warning: ntp: %s did not resolve; trying again in %u s\n", name, sntp.retry_ms / 1000);
		return;	/* sntp_send's retry timer is armed */
	}
	if (!said)
		kprintf("ntp: %s is %s\n", name, ipaddr_ntoa(a));
	said = true;
	sntp_arm(1);	/* send now: the lookup is cached */
}

static void sntp_send(void *arg)
{
	struct netif *n = netif_default;
	u8 msg[SNTP_MSG_LEN];
	struct pbuf *p;

	(void)arg;
	if (!n || !netif_is_up(n) || !netif_is_link_up(n) || ip4_addr_isany_val(*netif_ip4_addr(n))) {
		sys_timeout(SNTP_WAIT_ADDR_MS, sntp_send, NULL);
		return;
	}
	if (sntp_name[0]) {
		ip_addr_t a;
		int err = resolv_lookup(sntp_name, &a, sntp_resolved);

		if (err) {
			/* -EBUSY: sntp_resolved sends once the answer is in;
			 * this timer is the retry if it never comes. */
			if (err != -EBUSY && sntp.logged++ < SNTP_LOG_MAX)
				kprintf("warning: ntp: cannot ask DNS for %s\n", sntp_name);
			sys_timeout(sntp.retry_ms, sntp_send, NULL);
			if (sntp.retry_ms < SNTP_RETRY_MAX_MS)
				sntp.retry_ms *= 2;
			return;
		}
		sntp.server = a;
	}
	/* The previous request, if any, went unanswered: it is forgotten. */
	sntp.nonce = random_u64() | 1;	/* never 0: a reply's empty originate never matches */
	sntp_msg_request(msg, sntp.nonce);
	p = pbuf_alloc(PBUF_TRANSPORT, SNTP_MSG_LEN, PBUF_RAM);
	if (p) {
		pbuf_take(p, msg, SNTP_MSG_LEN);
		sntp.t1 = time_ns();
		sntp.pending = udp_sendto(sntp.pcb, p, &sntp.server, SNTP_PORT) == ERR_OK;
		pbuf_free(p);
		sntp.sent++;
	}
	sys_timeout(sntp.retry_ms, sntp_send, NULL);
	if (sntp.retry_ms < SNTP_RETRY_MAX_MS)
		sntp.retry_ms *= 2;
}

static void sntp_recv(void *arg, struct udp_pcb *pcb, struct pbuf *p, const ip_addr_t *addr, u16_t port)
{
	u8 msg[SNTP_MSG_LEN];
	struct sntp_reply r;
	char why[64], when[32];
	u64 t4 = time_ns(), now;
	u16 len = p->tot_len;

	(void)arg;
	(void)pcb;
	if (!sntp.pending || port != SNTP_PORT || !ip_addr_cmp(addr, &sntp.server)) {
		pbuf_free(p);
		sntp.dropped++;
		return;
	}
	pbuf_copy_partial(p, msg, SNTP_MSG_LEN, 0);
	pbuf_free(p);
	if (sntp_msg_check(msg, len, sntp.nonce, &r, why, sizeof why)) {
		/* Not this request's answer: keep waiting for it (the retry
		 * timer stays armed). */
		sntp.rejected++;
		if (sntp.logged++ < SNTP_LOG_MAX)
			kprintf("warning: ntp: reply from %s refused: %s\n", ipaddr_ntoa(addr), why);
		return;
	}
	sntp.pending = false;
	sntp.answered++;
	now = sntp_msg_time_at(&r, sntp.t1, t4);
	if (wallclock_set(now, t4)) {
		kprintf("warning: ntp: time from %s out of range, not set\n", ipaddr_ntoa(addr));
		return;
	}
	wallclock_iso(now, when, sizeof when);
	kprintf("time: %s from ntp %s (stratum %u, round trip %lu us)\n", when, ipaddr_ntoa(addr), r.stratum,
		(unsigned long)((t4 - sntp.t1) / 1000));
	sntp.retry_ms = SNTP_RETRY_MIN_MS;
	sntp_arm(SNTP_RESYNC_MS);
}

/* ntp=dhcp: the last lease's option 42 (host order; 0: none yet). */
static u32 sntp_dhcp_server;

/* Asks the DHCP lease's server, or says it waits for one. */
static void sntp_dhcp_announce(void)
{
	if (!sntp_dhcp_server) {
		kprintf("ntp: server from DHCP (option 42), none yet\n");
		return;
	}
	ip_addr_set_ip4_u32_val(sntp.server, lwip_htonl(sntp_dhcp_server));
	sntp.retry_ms = SNTP_RETRY_MIN_MS;
	kprintf("ntp: server %s (from DHCP)\n", ipaddr_ntoa(&sntp.server));
	sntp_arm(1);
}

/* lwIP's hook (LWIP_DHCP_GET_NTP_SRV), on every lease (offer taken,
 * renewal): servers[0..n) from its option 42, at most
 * LWIP_DHCP_MAX_NTP_SERVERS (1). A lease is untrusted input: an address
 * that cannot be a server's (0, broadcast, multicast, loopback) is
 * refused with one warning per lease. */
void dhcp_set_ntp_servers(u8_t n, const ip4_addr_t *servers)
{
	u32 a = n ? lwip_ntohl(ip4_addr_get_u32(&servers[0])) : 0;

	if (!sntp_dhcp)
		return;
	if (n && (a == 0 || a == 0xffffffffu || (a >> 28) == 0xe || (a >> 24) == 127)) {
		kprintf("warning: ntp: the DHCP lease's NTP server %u.%u.%u.%u is not usable\n", a >> 24,
			a >> 16 & 0xff, a >> 8 & 0xff, a & 0xff);
		return;
	}
	if (!n) {
		static bool said;

		if (!sntp_dhcp_server && !said)
			kprintf("ntp: the DHCP lease names no NTP server (option 42)\n");
		said = true;
		return;
	}
	if (a == sntp_dhcp_server)
		return;
	sntp_dhcp_server = a;
	if (sntp.pcb)
		sntp_dhcp_announce();
}

int sntp_start(void)
{
	if (sntp.pcb) {
		/* Again, after ntp= changed: the next request goes to the
		 * new server, now (the old one's pending answer no longer
		 * matches: its address differs, or its nonce is replaced). */
		sys_untimeout(sntp_send, NULL);
		sntp.pending = false;
		if (!sntp_server && !sntp_name[0] && !sntp_dhcp) {
			kprintf("ntp: off\n");
			return 0;
		}
		if (sntp_dhcp) {
			sntp_dhcp_announce();
			return 0;
		}
		ip_addr_set_ip4_u32_val(sntp.server, lwip_htonl(sntp_server));
		sntp.retry_ms = SNTP_RETRY_MIN_MS;
		kprintf("ntp: server %s\n", sntp_name[0] ? sntp_name : ipaddr_ntoa(&sntp.server));
		sntp_arm(1);
		return 0;
	}
	if (!sntp_server && !sntp_name[0] && !sntp_dhcp)
		return 0;
	sntp.pcb = udp_new_ip_type(IPADDR_TYPE_V4);
	if (!sntp.pcb)
		return -ENOMEM;
	if (udp_bind(sntp.pcb, IP4_ADDR_ANY, 0) != ERR_OK) {
		udp_remove(sntp.pcb);
		sntp.pcb = NULL;
		return -EIO;
	}
	udp_recv(sntp.pcb, sntp_recv, NULL);
	sntp.retry_ms = SNTP_RETRY_MIN_MS;
	if (sntp_dhcp) {
		sntp_dhcp_announce();
		return 0;
	}
	ip_addr_set_ip4_u32_val(sntp.server, lwip_htonl(sntp_server));
	kprintf("ntp: server %s\n", sntp_name[0] ? sntp_name : ipaddr_ntoa(&sntp.server));
	sntp_arm(SNTP_FIRST_MS);
	return 0;
}
