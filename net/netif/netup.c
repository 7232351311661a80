/*
 * Network bring-up: gives the netif the addresses it is handed (a static
 * IPv4 address, else DHCP; IPv6 link-local and SLAAC always), brings it up,
 * and says when the appliance is reachable. Knows nothing of the device
 * under the netif; the ip= and gw= keys are registered here.
 */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/time/timeline.h"
#include "lwip/dhcp.h"
#include "lwip/netif.h"
#include "net/net.h"

/* ---- ip= and gw= ---- */

static struct netup_addrs cmdline_addrs;

static int netup_parse_ip(const char *val, void *dst, char *why, size_t why_len)
{
	u32 a;
	int pfx;

	(void)dst;
	if (cmdline_parse_ipv4(val, &a, &pfx) < 0 || pfx == 0 || pfx == 32) {
		ksnprintf(why, why_len, "want A.B.C.D/len with len 1-31; using DHCP");
		return -EINVAL;
	}
	cmdline_addrs.ip4_set = true;
	cmdline_addrs.ip4_addr = a;
	cmdline_addrs.ip4_prefix = pfx < 0 ? 24 : pfx;
	return 0;
}
CMDLINE_PARAM(ip, .key = "ip", .type = CMDLINE_CUSTOM, .parse = netup_parse_ip, .def = "DHCP",
	      .values = "A.B.C.D/len (len 1-31; /24 if omitted)", .help = "static IPv4 address");

static int netup_parse_gw(const char *val, void *dst, char *why, size_t why_len)
{
	u32 a;

	(void)dst;
	if (cmdline_parse_ipv4(val, &a, NULL) < 0) {
		ksnprintf(why, why_len, "want A.B.C.D");
		return -EINVAL;
	}
	cmdline_addrs.gw_set = true;
	cmdline_addrs.gw = a;
	return 0;
}
CMDLINE_PARAM(gw, .key = "gw", .type = CMDLINE_CUSTOM, .parse = netup_parse_gw, .def = "none",
	      .values = "A.B.C.D", .help = "IPv4 default gateway, with ip=");

void netup_cmdline_addrs(struct netup_addrs *a)
{
	*a = cmdline_addrs;
	if (!a->ip4_set && a->gw_set) {
		kprintf("warning: gw= without ip= is ignored; using DHCP\n");
		a->gw_set = false;
	}
}

/* ---- bring-up ---- */

static bool netup_static, netup_announced;
static u16 netup_http_port, netup_https_port;
static void (*netup_gate)(void (*ready)(void));
static struct netif *netup_nif;

void netup_set_https_port(u16 port)
{
	netup_https_port = port;
}

void netup_set_http_port(u16 port)
{
	netup_http_port = port;
}

netup_gate_fn netup_set_gate(netup_gate_fn gate)
{
	netup_gate_fn was = netup_gate;

	netup_gate = gate;
	return was;
}

static unsigned netup_prefix_len(u32 mask_be)
{
	u32 m = lwip_ntohl(mask_be);
	unsigned n = 0;

	while (m & 0x80000000u) {
		n++;
		m <<= 1;
	}
	return n;
}

static void netup_ready(void);

/* The netif's status and link callback: serving means interface up, link
 * up, IPv4 address bound; said once (after the gate, if one is set). */
static void netup_changed(struct netif *n)
{
	char addr[IP4ADDR_STRLEN_MAX];

	if (netup_announced || !netif_is_up(n) || !netif_is_link_up(n) || ip4_addr_isany_val(*netif_ip4_addr(n)))
		return;
	netup_announced = true;
	timeline_mark("address");
	ip4addr_ntoa_r(netif_ip4_addr(n), addr, sizeof addr);
	kprintf("net: %s/%u gw %s (%s)\n", addr, netup_prefix_len(ip4_addr_get_u32(netif_ip4_netmask(n))),
		ip4addr_ntoa(netif_ip4_gw(n)), netup_static ? "static" : "dhcp");
	if (netup_gate)
		netup_gate(netup_ready);	/* calls netup_ready when done */
	else
		netup_ready();
}

/* The ready line, with the address and ports in force now. */
static void netup_ready(void)
{
	struct netif *n = netup_nif;
	char addr[IP4ADDR_STRLEN_MAX];

	if (!n)
		return;
	ip4addr_ntoa_r(netif_ip4_addr(n), addr, sizeof addr);
	timeline_mark("serving");
	timeline_print();
	if (netup_https_port)
		kprintf("vireo: ready ip=%s http=%u https=%u\n", addr, (unsigned)netup_http_port,
			(unsigned)netup_https_port);
	else
		kprintf("vireo: ready ip=%s http=%u\n", addr, (unsigned)netup_http_port);
}

int netup_start(struct netif *n, const struct netup_addrs *a, u16 http_port)
{
	ip4_addr_t addr, mask, gw;

	if (a->ip4_set && (a->ip4_prefix < 1 || a->ip4_prefix > 31)) {
		kprintf("net: prefix length %d is not 1-31\n", a->ip4_prefix);
		return -EINVAL;
	}
	netup_static = a->ip4_set;
	netup_http_port = http_port;
	netup_nif = n;
	ip4_addr_set_zero(&addr);
	ip4_addr_set_zero(&mask);
	ip4_addr_set_zero(&gw);
	if (a->ip4_set) {
		ip4_addr_set_u32(&addr, lwip_htonl(a->ip4_addr));
		ip4_addr_set_u32(&mask, lwip_htonl(~0u << (32 - a->ip4_prefix)));
		if (a->gw_set)
			ip4_addr_set_u32(&gw, lwip_htonl(a->gw));
	}
	netif_set_addr(n, &addr, &mask, &gw);
	netif_set_status_callback(n, netup_changed);
	netif_set_link_callback(n, netup_changed);
	netif_create_ip6_linklocal_address(n, 1);
	n->ip6_autoconfig_enabled = 1;	/* SLAAC */
	kprintf("net: address by %s\n", a->ip4_set ? "static configuration" : "DHCP");
	netif_set_up(n);
	if (!a->ip4_set)
		dhcp_start(n);
	return 0;
}

int netup_readdress(struct netif *n)
{
	struct netup_addrs a;
	ip4_addr_t addr, mask, gw;
	char text[IP4ADDR_STRLEN_MAX];

	netup_cmdline_addrs(&a);
	if (!n || !a.ip4_set)
		return 0;
	ip4_addr_set_u32(&addr, lwip_htonl(a.ip4_addr));
	ip4_addr_set_u32(&mask, lwip_htonl(~0u << (32 - a.ip4_prefix)));
	if (a.gw_set)
		ip4_addr_set_u32(&gw, lwip_htonl(a.gw));
	else
		ip4_addr_copy(gw, *netif_ip4_gw(n));	/* keep the route we have */
	if (ip4_addr_eq(&addr, netif_ip4_addr(n)) && ip4_addr_eq(&mask, netif_ip4_netmask(n)) &&
	    ip4_addr_eq(&gw, netif_ip4_gw(n)))
		return 0;
	if (!netup_static)
		dhcp_release_and_stop(n);
	netup_static = true;
	netif_set_addr(n, &addr, &mask, &gw);
	ip4addr_ntoa_r(&addr, text, sizeof text);
	kprintf("net: %s/%d gw %s (static, changed after boot)\n", text, a.ip4_prefix, ip4addr_ntoa(&gw));
	return 1;
}
