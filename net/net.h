/* The network layer: lwIP's netif on the first virtio-net device
 * (net/netif/netif_vnet.c) and the bring-up that gives it addresses
 * (net/netif/netup.c). The composition root (kernel/main.c) calls, in order:
 *
 *	n = netif_vnet_add();		lwIP and the netif, down, no address
 *	app_start();			the appliance's listeners (runtime/)
 *	netup_start(n, &addrs, port);	addresses, DHCP, the ready line
 *	netif_vnet_attach();		the device's link state arrives
 */
#ifndef VIREO_NET_NET_H
#define VIREO_NET_NET_H

#include "lib/types.h"

struct netif;
struct vnet_stats;
struct console_sink;

/* ---- net/netif/netif_vnet.c ---- */

/* Starts lwIP and adds the netif on the first virtio-net device that
 * probed, not yet up and with no address; logs "net: lwIP <version> on
 * virtio<N>, mtu <mtu>, checksums: tx <how>, rx <how>". Returns the netif,
 * or NULL after logging why (no device, no memory). */
struct netif *netif_vnet_add(void);

/* Binds the netif to its device: link changes (and the link state at once)
 * reach lwIP from now on, and lwIP's timers are armed. Call last. */
void netif_vnet_attach(void);

/* The device's counters, for whoever exports them (the appliance's
 * /metrics): false, with *st untouched, before a device is bound. */
bool netif_vnet_stats(struct vnet_stats *st);
/* Receive buffers the stack holds now and the pool's size (0, 0 without a
 * device). */
void netif_vnet_rx_pool(u32 *held, u32 *total);
/* The transmit backlog (frames lwIP sent while the ring was full), for
 * /metrics: frames parked, the most parked at once, frames in the driver
 * now, and how often a completion found the ring empty with frames still
 * parked (the ring drained before being refilled: 0 when completions
 * refill it as they come). Nothing in the backlog waits for a timer: it is
 * flushed from each completion (receive polls reclaim transmits too). */
struct netif_vnet_tx_stats {
	u64 backlogged, drained_with_backlog;
	u32 backlog_peak, in_driver;
};
extern struct netif_vnet_tx_stats netif_vnet_tx_stats;

/* A panic's frame (net/clients/syslog.c): frame[0..len), a whole Ethernet frame,
 * straight to the device (vnet_tx_emergency), or -EIO with no device or
 * the link down. For panic mode only: the upper layer is detached. */
int netif_vnet_emergency_tx(const void *frame, u32 len);

/* ---- net/netif/netup.c ---- */

/* IPv4 addressing: a static address (with an optional gateway), or DHCP. */
struct netup_addrs {
	bool ip4_set;		/* else DHCP */
	u32 ip4_addr;		/* host order */
	int ip4_prefix;		/* 1..31 */
	bool gw_set;
	u32 gw;			/* host order */
};

/* The addresses the command line gives (ip=, gw=; a gw= without ip= is
 * warned about and dropped). */
void netup_cmdline_addrs(struct netup_addrs *a);

/* Configures n with a (static address, else DHCP), IPv6 link-local and
 * SLAAC, and brings it up. Once n is up, its link up and an IPv4 address
 * bound, logs "net: <addr>/<len> gw <gw> (static|dhcp)" and, once per boot,
 * `vireo: ready ip=<address> http=<http_port>`. Returns 0, or -EINVAL
 * (a prefix length outside 1..31) with n untouched. */
int netup_start(struct netif *n, const struct netup_addrs *a, u16 http_port);
/* The ready line also says https=<port> (set before the address comes up). */
void netup_set_https_port(u16 port);
/* The HTTP port the ready line names, when it moved (app_reapply_http). */
void netup_set_http_port(u16 port);
/* A step between the address and the ready line (cloud metadata): once the
 * address is bound, gate(ready) runs instead of the ready line, and must
 * call ready() exactly once, within its own time bound. */
typedef void (*netup_gate_fn)(void (*ready)(void));
netup_gate_fn netup_set_gate(netup_gate_fn gate);	/* returns the gate set before (chain it) */
/* ip=/gw= changed after boot: gives n the static address they name now
 * (DHCP stopped; a missing gw= keeps the current gateway) and logs it.
 * Returns 1 if the address changed, 0 if not (or no ip= is set). */
int netup_readdress(struct netif *n);

/* The SNTP client (net/clients/sntp.c) when ntp= names a server: asks it once the
 * default netif has an IPv4 address, sets the wall clock from the answer
 * (kernel/time/wallclock.h). Returns 0 (also when off), or -ENOMEM/-EIO. Called
 * again after ntp= changed, it asks the new server (or stops, for off). */
int sntp_start(void);

/* Remote syslog (net/clients/syslog.c) when syslog= names a server: every console
 * line from now on (and the log ring's contents) as RFC 5424 over UDP,
 * bounded and dropping. Returns 0 (also when off), or -ENOMEM. Called
 * again after syslog= changed, it sends to the new server (or stops). */
int syslog_start(void);
/* One line (no newline; cut at 256 bytes and counted) queued for syslog=,
 * apart from the console (an app's access log): 0, -EAGAIN (the ring is
 * full: dropped, the caller counts it) or -ENOTCONN (syslog= is off). */
int syslog_line(const char *line, size_t len);
/* The console sink that carries console lines to syslog= (linked once
 * syslog_start() ran with a server): what console_write_except() skips
 * for a line syslog_line() sends itself. */
struct console_sink *syslog_console_sink(void);

#endif
