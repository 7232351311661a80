/*
 * The app API's TCP clients (include/vireo/net.h, vireo_tcp_connect()):
 * outbound connections on the services' connection state and delivery
 * (runtime/services.h), in a file of their own so an image whose apps never
 * connect out links none of it (nor its strings).
 *
 * An outbound connection is a struct svc_conn, its client a struct svc
 * without a listening pcb, its connections in the client's table (insert
 * and remove only: no source admission for connections the app opens).
 * Before it is established the poll callback applies the connect deadline
 * instead of the idle and send-stall timeouts, and its end is told through
 * on_fail; one refused before any pcb (the egress policy, runtime/egress.h)
 * or whose pcb lwIP refused to connect (no route) ends from its work item,
 * so on_fail never runs inside vireo_tcp_connect(). Accepted and outbound
 * connections share the 16 of the heap budget (svcs_live), outbound ones
 * at most VIREO_TCP_OUT_MAX of them.
 */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/types.h"
#include "lwip/altcp.h"
#include "runtime/api.h"
#include "runtime/egress.h"
#include "runtime/resolve.h"
#include "runtime/services.h"
#include "vireo/app.h"
#include "vireo/net.h"

/* The reasons of vireo_app_tcp_out_failures_total. */
static const char *const svc_fail_names[] = { "refused", "timeout", "unreachable", "policy", "aborted", "name" };
_Static_assert(ARRAY_SIZE(svc_fail_names) == VIREO_TCP_FAIL_NAME &&
		       offsetof(struct vireo_tcp_stats, failed_name) ==
			       offsetof(struct vireo_tcp_stats, failed_refused) + 8 * (VIREO_TCP_FAIL_NAME - 1),
	       "the failure counters are in enum vireo_tcp_fail's order, in a row");

const char *vireo_tcp_fail_str(enum vireo_tcp_fail why)
{
	return why >= VIREO_TCP_FAIL_REFUSED && why <= VIREO_TCP_FAIL_NAME ? svc_fail_names[why - 1] : "?";
}

static const struct svc_family svc_out_families[] = {
	SVC_O("vireo_app_tcp_out_connections_total", "App outbound TCP connections established.", connected),
	{ "vireo_app_tcp_out_failures_total",
	  "App outbound TCP connections that never were, by reason (refused, timeout, unreachable, "
	  "policy: the egress policy, aborted: by the app, name: no address for the name).", offsetof(struct svc, st.failed_refused), SVC_OUT, false,
	  true },
	SVC_O("vireo_app_tcp_out_refused_total", "App connects refused at once: the client's cap or memory.",
	      refused),
	{ "vireo_app_tcp_out_connections_active", "App outbound TCP connections open or opening now.",
	  offsetof(struct svc, st.active), SVC_OUT, true, false },
	SVC_O("vireo_app_tcp_out_timeouts_idle_total", "App outbound TCP connections reset for inactivity.",
	      timeouts_idle),
	SVC_O("vireo_app_tcp_out_timeouts_send_total", "App outbound TCP connections reset for a send stall.",
	      timeouts_send),
	SVC_O("vireo_app_tcp_out_received_bytes_total", "App outbound TCP bytes received.", rx_bytes),
	SVC_O("vireo_app_tcp_out_sent_bytes_total", "App outbound TCP bytes queued for sending.", tx_bytes),
};

static void svc_write_out_metrics(struct metrics_buf *b)
{
	svc_write_families(b, svc_out_families, ARRAY_SIZE(svc_out_families), svc_fail_names,
			   ARRAY_SIZE(svc_fail_names));
}

/* Outbound connections' ops: the accepted side's recv and sent, their own
 * connect, poll (the deadline first) and end. */

/* A connection by name (vireo_tcp_connect_name()): the addresses the
 * policy let through, tried in order. From the heap with the connection
 * (344 B), freed with it. */
struct svc_name {
	struct vireo_addr a[VIREO_RESOLVE_MAX];
	u16 port;
	u8 n, next;
	bool retry;	/* the last address failed: the next from the work item */
};

/* The end of an outbound connection: why it never was, if it never was. */
static void svc_out_free(struct tcpconn *tc, err_t err)
{
	struct svc_conn *c = svc_conn_of(tc);

	/* lwIP's ERR_ABRT here: it gave up on its SYNs. */
	if (!c->connected && !c->fail)
		c->fail = err == ERR_RST ? VIREO_TCP_FAIL_REFUSED : err == ERR_OK ? VIREO_TCP_FAIL_ABORTED :
			  err == ERR_ABRT ? VIREO_TCP_FAIL_TIMEOUT : VIREO_TCP_FAIL_UNREACHABLE;
	/* By name: a reset or no route moves to the next address while the
	 * deadline (svc_out_poll's, from the connect) has not passed. */
	if (!c->connected && c->nm && c->nm->next < c->nm->n && !c->close_req && !c->abort_req &&
	    (c->fail == VIREO_TCP_FAIL_REFUSED || c->fail == VIREO_TCP_FAIL_UNREACHABLE)) {
		c->fail = 0;
		c->tc.pcb = NULL;
		c->nm->retry = true;
		work_queue(&c->work);
		return;
	}
	kfree(c->nm);
	c->nm = NULL;
	if (!c->connected)
		(&c->svc->st.failed_refused)[c->fail - VIREO_TCP_FAIL_REFUSED]++;
	svcs_out_live--;
	svc_conn_free(tc, err);	/* on_fail when c->fail is set, else on_close */
}

/* Established. */
static err_t svc_out_connected(struct tcpconn *tc)
{
	struct svc_conn *c = svc_conn_of(tc);
	struct svc *s = c->svc;

	c->connected = true;
	c->t_active = tc->t_progress;
	s->st.connected++;
	if (s->on_connected)
		s->on_connected((vireo_tcp){ c->id }, s->cfg.arg);
	if (c->abort_req)
		return tcpconn_abort(tc);
	if (c->close_req)
		return tcpconn_close(tc);
	return ERR_OK;
}

/* The connect deadline, then the accepted side's timeouts. */
static err_t svc_out_poll(struct tcpconn *tc)
{
	struct svc_conn *c = svc_conn_of(tc);

	if (c->connected)
		return svc_poll(tc);
	if (svc_now_ms() - c->t_active < c->svc->connect_ms)
		return ERR_OK;
	c->fail = VIREO_TCP_FAIL_TIMEOUT;
	return tcpconn_abort(tc);
}

static void svc_name_try(struct svc_conn *c);

/* Refused before any pcb (policy), refused by lwIP (no route), or ended
 * by the app while connecting; by name, the next address; then the
 * accepted side's. */
static void svc_out_work(void *arg)
{
	struct svc_conn *c = arg;

	c->recv_req = false;
	if (c->nm && c->nm->retry && !c->close_req && !c->abort_req) {
		c->nm->retry = false;
		svc_name_try(c);
	} else if (c->connected) {
		svc_deliver(c);
	} else if (!c->tc.pcb) {
		if (!c->nm || c->fail || c->close_req || c->abort_req)	/* else: resolving */
			svc_out_free(&c->tc, ERR_OK);
	} else if (c->fail || c->close_req || c->abort_req) {
		if (!c->fail)
			c->fail = VIREO_TCP_FAIL_ABORTED;
		tcpconn_abort(&c->tc);
	}
}

/* Every client's connections, ended (api_services_stop()). */
static void svc_out_stop_all(void)
{
	for (u32 i = 0; i < svcs->nout; i++) {
		struct svc *s = &svcs->out[i];

		while (s->tab.head) {
			struct svc_conn *c = (struct svc_conn *)s->tab.head;

			c->abort_req = true;	/* no next address */
			if (c->tc.pcb)
				tcpconn_abort(&c->tc);
			else
				svc_out_free(&c->tc, ERR_OK);
		}
		conntab_release(&s->tab);
	}
}

static const struct tcpconn_ops svc_out_ops = {
	.recv = svc_recv,
	.sent = svc_sent,
	.poll = svc_out_poll,
	.free = svc_out_free,
	.connected = svc_out_connected,
};

int vireo_tcp_client(const struct vireo_tcp_client *cfg, vireo_tcp_out *out)
{
	struct svc *s;

	if (out)
		out->id = 0;
	if (!cfg || !out || !cfg->on_recv || !api_name_ok(cfg->name, 31, false) || cfg->max_conns > VIREO_TCP_OUT_MAX) {
		api_misuse("vireo_tcp_client %.32s: needs on_recv, a name of 1..31 [a-z0-9_-], max_conns <= %u, "
			   "a handle to fill: refused", cfg && cfg->name ? cfg->name : "(null)", VIREO_TCP_OUT_MAX);
		return -EINVAL;
	}
	if (!svcs_alloc())
		return -ENOMEM;
	if (svcs->nout == VIREO_TCP_CLIENTS_MAX) {
		api_misuse("vireo_tcp_client %s: %u clients already: refused", cfg->name, VIREO_TCP_CLIENTS_MAX);
		return -ENOSPC;
	}
	s = &svcs->out[svcs->nout++];
	__builtin_memset(s, 0, sizeof *s);
	s->out = true;
	s->cfg = (struct vireo_tcp_service){
		.name = cfg->name,
		.max_conns = cfg->max_conns ? cfg->max_conns : VIREO_TCP_OUT_DEFAULT,
		.idle_timeout_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : VIREO_TCP_IDLE_MS_DEFAULT,
		.send_timeout_ms = cfg->send_timeout_ms ? cfg->send_timeout_ms : VIREO_TCP_SEND_MS_DEFAULT,
		.on_recv = cfg->on_recv,
		.on_eof = cfg->on_eof,
		.on_writable = cfg->on_writable,
		.on_close = cfg->on_close,
		.arg = cfg->arg,
	};
	s->connect_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : VIREO_TCP_CONNECT_MS_DEFAULT;
	s->on_connected = cfg->on_connected;
	s->on_fail = cfg->on_fail;
	s->tab.max_conns = s->cfg.max_conns;
	s->tab.max_per_src = s->cfg.max_conns;	/* the table counts; the client caps */
	conntab_init(&s->tab);	/* else at the first connect */
	svc_metrics_register();
	svc_out_metrics = svc_write_out_metrics;
	svc_out_stop = svc_out_stop_all;
	out->id = svcs->nout;
	return 0;
}

static struct svc *svc_out(vireo_tcp_out h)
{
	return svcs && h.id && h.id <= svcs->nout ? &svcs->out[h.id - 1] : NULL;
}

int vireo_tcp_client_stats(vireo_tcp_out h, struct vireo_tcp_stats *st)
{
	struct svc *s = svc_out(h);

	if (!s || !st)
		return -EINVAL;
	*st = s->st;
	return 0;
}

int vireo_tcp_connect(vireo_tcp_out h, const struct vireo_addr *dst, void *ctx, vireo_tcp *out)
{
	struct svc *s = svc_out(h);
	struct svc_conn *c;
	struct altcp_pcb *pcb = NULL;
	enum egress_kind k;
	ip_addr_t ip;
	u8 a[16];
	err_t err;

	if (out)
		out->id = 0;
	if (!s || !out || !dst || !svc_ip_of(dst, &ip) || !dst->port) {
		api_misuse("vireo_tcp_connect: a bad client, address or port: refused");
		return -EINVAL;
	}
	if (s->tab.count >= s->cfg.max_conns || svcs_out_live >= VIREO_TCP_OUT_MAX ||
	    svcs_live >= VIREO_TCP_CONNS_TOTAL) {
		s->st.refused++;
		return -ENOSPC;
	}
	allow_addr_ip(a, &ip);
	k = egress_check(a);
	if (k == EGRESS_OK) {
		pcb = altcp_tcp_new_ip_type(IP_GET_TYPE(&ip));
		if (!pcb) {
			s->st.refused++;
			return -ENOMEM;
		}
	}
	c = kzalloc(sizeof *c + VIREO_TCP_RXBUF);
	if (c)
		c->id = api_handle_new(API_H_TCP, c);
	if (!c || !c->id) {
		kfree(c);
		if (pcb)
			altcp_close(pcb);	/* never connected: freed at once */
		s->st.refused++;
		return -ENOMEM;
	}
	c->svc = s;
	c->ctx = ctx;
	c->inflight_max = VIREO_TCP_INFLIGHT;
	work_init(&c->work, svc_out_work, c);
	if (!conntab_insert(&s->tab, &c->link)) {	/* no memory for the table's index */
		api_handle_free(c->id);
		kfree(c);
		if (pcb)
			altcp_close(pcb);
		s->st.refused++;
		return -ENOMEM;
	}
	svcs_live++;
	svcs_out_live++;
	s->st.active++;
	out->id = c->id;
	if (!pcb) {
		char str[VIREO_ADDR_STRLEN];

		vireo_addr_str(dst, str, sizeof str);
		vireo_log("tcp client %s: %s port %u is %s: refused by the egress policy (egress.allow=)",
			  s->cfg.name, str, dst->port, egress_kind_name(k));
		c->fail = VIREO_TCP_FAIL_POLICY;
		work_queue(&c->work);
		return 0;
	}
	tcpconn_attach(&c->tc, pcb, &svc_out_ops, c->rx, VIREO_TCP_RXBUF, SVC_POLL_TICKS);
	c->tc.rx_count = &s->st.rx_bytes;
	c->t_active = svc_now_ms();
	err = tcpconn_connect(&c->tc, &ip, dst->port);
	if (err != ERR_OK) {
		c->fail = VIREO_TCP_FAIL_UNREACHABLE;	/* ERR_RTE; or memory: no SYN left */
		work_queue(&c->work);
	}
	return 0;
}


/* ---- by name ---- */

/* The next address of c's (there is one): a pcb and its connect. lwIP
 * refusing the connect (no route) ends this try as a reset would: the
 * next address from the work item (svc_out_free), or the end. */
static void svc_name_try(struct svc_conn *c)
{
	struct svc_name *nm = c->nm;
	struct altcp_pcb *pcb;
	ip_addr_t ip;

	svc_ip_of(&nm->a[nm->next++], &ip);
	pcb = altcp_tcp_new_ip_type(IP_GET_TYPE(&ip));
	if (!pcb) {
		c->fail = VIREO_TCP_FAIL_UNREACHABLE;
		nm->next = nm->n;	/* no memory: no more tries */
		svc_out_free(&c->tc, ERR_OK);
		return;
	}
	tcpconn_attach(&c->tc, pcb, &svc_out_ops, c->rx, VIREO_TCP_RXBUF, SVC_POLL_TICKS);
	c->tc.rx_count = &c->svc->st.rx_bytes;
	if (tcpconn_connect(&c->tc, &ip, nm->port) != ERR_OK) {
		c->fail = VIREO_TCP_FAIL_UNREACHABLE;
		tcpconn_abort(&c->tc);
	}
}

/* The name's addresses: each judged by the policy, the allowed ones tried. */
static void svc_name_found(void *ctx, int err, const struct vireo_addr *addrs, unsigned n, u32 ttl)
{
	struct svc_conn *c = api_handle_get(API_H_TCP, (u32)(uintptr_t)ctx);
	struct svc_name *nm;

	(void)ttl;
	if (!c || !c->nm || c->tc.pcb)
		return;	/* ended while resolving */
	nm = c->nm;
	for (unsigned i = 0; i < n; i++) {
		enum egress_kind k = EGRESS_UNSPECIFIED;
		ip_addr_t ip;
		u8 a[16];

		if (svc_ip_of(&addrs[i], &ip)) {
			allow_addr_ip(a, &ip);
			k = egress_check(a);
		}
		if (k == EGRESS_OK) {
			nm->a[nm->n] = addrs[i];
			nm->a[nm->n++].port = nm->port;
		} else {
			char str[VIREO_ADDR_STRLEN];

			vireo_addr_str(&addrs[i], str, sizeof str);
			vireo_log("tcp client %s: a name gave %s, %s: refused by the egress policy (egress.allow=)",
				  c->svc->cfg.name, str, egress_kind_name(k));
			resolve_refused_egress();
		}
	}
	if (c->close_req || c->abort_req)
		return;	/* its work item ends it */
	if (err || !n)
		c->fail = VIREO_TCP_FAIL_NAME;
	else if (!nm->n)
		c->fail = VIREO_TCP_FAIL_POLICY;
	if (c->fail) {
		svc_out_free(&c->tc, ERR_OK);
		return;
	}
	svc_name_try(c);
}

int vireo_tcp_connect_name(vireo_tcp_out h, const char *name, u16 port, void *ctx, vireo_tcp *out)
{
	struct svc *s = svc_out(h);
	struct svc_conn *c;
	int err;

	if (out)
		out->id = 0;
	if (!s || !out || !name || !port) {
		api_misuse("vireo_tcp_connect_name: a bad client, name or port: refused");
		return -EINVAL;
	}
	if (s->tab.count >= s->cfg.max_conns || svcs_out_live >= VIREO_TCP_OUT_MAX ||
	    svcs_live >= VIREO_TCP_CONNS_TOTAL) {
		s->st.refused++;
		return -ENOSPC;
	}
	c = kzalloc(sizeof *c + VIREO_TCP_RXBUF);
	if (c) {
		c->nm = kzalloc(sizeof *c->nm);
		c->id = c->nm ? api_handle_new(API_H_TCP, c) : 0;
	}
	if (!c || !c->id) {
		if (c)
			kfree(c->nm);
		kfree(c);
		s->st.refused++;
		return -ENOMEM;
	}
	c->svc = s;
	c->ctx = ctx;
	c->inflight_max = VIREO_TCP_INFLIGHT;
	c->nm->port = port;
	work_init(&c->work, svc_out_work, c);
	if (!conntab_insert(&s->tab, &c->link)) {
		err = -ENOMEM;
		goto fail;
	}
	err = vireo_resolve(name, VIREO_RESOLVE_ANY, s->connect_ms, svc_name_found, (void *)(uintptr_t)c->id);
	if (err) {
		conntab_remove(&s->tab, &c->link);
		goto fail;
	}
	svcs_live++;
	svcs_out_live++;
	s->st.active++;
	c->t_active = svc_now_ms();
	out->id = c->id;
	return 0;
fail:
	api_handle_free(c->id);
	kfree(c->nm);
	kfree(c);
	s->st.refused++;
	return err;
}
