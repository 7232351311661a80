/* The runtime's services: the HTTP server (its routes are the apps',
 * include/vireo/, started here) and TCP/UDP echo on port 7 when echo= asks
 * for it. Its keys: http=, echo=, echo.udp_rate=. */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/loop.h"
#include "kernel/power.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lwip/priv/tcp_priv.h"
#include "runtime/api.h"
#include "runtime/app.h"
#include "runtime/echo.h"
#include "runtime/http/http.h"
#include "runtime/http/https.h"
#include "runtime/metadata.h"
#include "runtime/http/server.h"
#include "net/net.h"
#include "net/tcp/rxmem.h"
#include "net/netif/tso_out.h"
#ifdef VIREO_TLS
#include "net/tls/tls.h"
#endif

#define ECHO_PORT 7

static u64 http_port = 80;
CMDLINE_PARAM(http, .key = "http", .type = CMDLINE_UINT, .dst = &http_port, .min = 1, .max = 65535, .def = "80",
	      .help = "the HTTP server's TCP port");

#define APP_ECHO_TCP 1u
#define APP_ECHO_UDP 2u
static unsigned int echo_services;	/* APP_ECHO_*: none by default */

/* echo=tcp, echo=udp or echo=tcp,udp (either order). */
static int app_parse_echo(const char *val, void *dst, char *why, size_t why_len)
{
	unsigned int want = 0;
	const char *s = val;

	(void)dst;
	for (;;) {
		size_t n = 0;

		while (s[n] && s[n] != ',')
			n++;
		if (n == 3 && !strncmp(s, "tcp", 3))
			want |= APP_ECHO_TCP;
		else if (n == 3 && !strncmp(s, "udp", 3))
			want |= APP_ECHO_UDP;
		else
			goto bad;
		s += n;
		if (*s == '\0')
			break;
		s++;	/* the comma; an empty item after it is rejected above */
	}
	echo_services = want;
	return 0;
bad:
	ksnprintf(why, why_len, "want tcp, udp or tcp,udp; echo stays off");
	return -EINVAL;
}
CMDLINE_PARAM(echo, .key = "echo", .type = CMDLINE_CUSTOM, .parse = app_parse_echo, .def = "off",
	      .values = "tcp, udp, tcp,udp", .help = "start the echo service (RFC 862) on port 7");

static u64 echo_udp_rate;	/* 0: echo.h's defaults */
CMDLINE_PARAM(echo_udp_rate, .key = "echo.udp_rate", .type = CMDLINE_UINT, .dst = &echo_udp_rate, .min = 1,
	      .max = 1000000, .def = "256 all, 16 per source", .def_prose = true,
	      .help = "UDP echo datagrams/s, global and per source (benchmarks)");

u16 app_http_port(void)
{
	return (u16)http_port;
}


static u16 drain_port;	/* the port HTTP listens on, once started */

void app_reapply_http(void)
{
	u16 was = drain_port;
	int err;

	if (!was || http_port == was)
		return;
	err = http_server_rebind((u16)http_port);
	if (err) {
		kprintf("warning: http: cannot listen on port %u (%d); staying on %u\n", (unsigned)http_port, err,
			(unsigned)was);
		http_port = was;
		return;
	}
	drain_port = (u16)http_port;
	netup_set_http_port(drain_port);
	kprintf("http: listening on port %u (was %u)\n", (unsigned)drain_port, (unsigned)was);
}

/* ---- power off: drain the HTTP server ---- */


static void app_drain_begin(void *ctx, struct power_drain_counts *c)
{
	(void)ctx;
	http_server_drain(&c->idle, &c->busy);
}

/* Done when the server holds no connection and lwIP has nothing of ours
 * unsent or unacknowledged (the last responses and FINs were delivered). */
static bool app_drain_done(void *ctx)
{
	struct tcp_pcb *p;

	(void)ctx;
	if (http_server_stats.conns_active)
		return false;
	for (p = tcp_active_pcbs; p; p = p->next)
		if ((p->local_port == drain_port || p->local_port == https_port()) && (p->unsent || p->unacked))
			return false;
	return true;
}

static u32 app_drain_cut(void *ctx)
{
	u32 left = (u32)http_server_stats.conns_active;

	(void)ctx;
	http_server_stop();
	return left;
}

static const struct power_drain_ops http_drain = {
	.begin = app_drain_begin,
	.done = app_drain_done,
	.cut = app_drain_cut,
};

int app_start(void)
{
	int err;

	http_set_date_source(wallclock_http_now);	/* a Date header once the clock is set */
	err = http_server_start((u16)http_port, NULL);
	if (err) {
		kprintf("http: cannot listen on port %u (%d)\n", (unsigned)http_port, err);
		api_apps_start();	/* their TCP/UDP services may still serve */
		return err;
	}
	drain_port = (u16)http_port;
	power_register_drain(&http_drain);
	metadata_start();	/* before the address: it gates the ready line */
	/* The apps' routes and services (include/vireo/); each logs itself. */
	api_apps_start();
#ifdef VIREO_TLS
	/* Each logs its own result; HTTP serves either way. */
	if (tls_start() == 0)
		https_start();
#endif
	if (echo_services) {
		struct echo_cfg ecfg = { .port = ECHO_PORT };

		if (echo_services & APP_ECHO_TCP)
			ecfg.services |= ECHO_TCP;
		if (echo_services & APP_ECHO_UDP)
			ecfg.services |= ECHO_UDP;
		if (echo_udp_rate) {
			/* One limit for all and for each source; a quarter
			 * second's worth of burst. */
			ecfg.udp_rate = ecfg.udp_src_rate = (u32)echo_udp_rate;
			ecfg.udp_burst = ecfg.udp_src_burst = MAX(ecfg.udp_rate / 4, (u32)ECHO_UDP_BURST);
		}
		err = echo_start(&ecfg);
		if (err)
			kprintf("echo: cannot listen on port %u (%d)\n", ECHO_PORT, err);
	}
	return 0;
}
