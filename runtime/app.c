/* The runtime's services: the HTTP server (its routes are the apps',
 * include/vireo/, started here with the apps themselves: apps/echo among
 * them). Its key: http=. */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/loop.h"
#include "kernel/power.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lwip/priv/tcp_priv.h"
#include "runtime/acme.h"
#include "runtime/acme_state.h"
#include "runtime/api.h"
#include "runtime/app.h"
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

static u64 http_port = 80;
CMDLINE_PARAM(http, .key = "http", .type = CMDLINE_UINT, .dst = &http_port, .min = 1, .max = 65535, .def = "80",
	      .help = "the HTTP server's TCP port");

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

#ifdef VIREO_TLS
/* With a store, the ready line waits for HTTPS (it names its port): a
 * gate chained before any other (metadata's). */
static netup_gate_fn app_gate_next;
static void (*app_gate_ready)(void);
static bool app_tls_started;

static void app_gate_go(void)
{
	if (app_gate_next)
		app_gate_next(app_gate_ready);
	else
		app_gate_ready();
}

static void app_gate(void (*ready)(void))
{
	app_gate_ready = ready;
	if (app_tls_started)
		app_gate_go();
}

static void app_tls_start(void)
{
	/* Each logs its own result; HTTP serves either way. */
	if (tls_start(https_tls_names()) == 0 && https_start() == 0)
		acme_start();
	if (acme_keep())
		acme_keep()->boot_done();
	app_tls_started = true;
	if (app_gate_ready)
		app_gate_go();
}
#endif

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
	/* With a store (make STORAGE=1), HTTPS starts once what is kept there
	 * (the generated key, ACME's account and certificate) is read. */
	if (acme_keep()) {
		app_gate_next = netup_set_gate(app_gate);
		acme_keep()->boot(app_tls_start);
	} else
		app_tls_start();
#endif
	return 0;
}
