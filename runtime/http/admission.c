/*
 * Who gets a connection of the HTTP server (runtime/http/conn.h), decided
 * at accept, before anything is allocated for the peer:
 * - HTTPS: at most https_max_conns() TLS connections, at most
 *   https.handshakes= handshakes at once and https.handshakes_per_source=
 *   from one source (runtime/http/https.h); when every handshake slot is
 *   taken, a source below its share evicts the oldest handshake of the
 *   source running the most; then the handshake rates, per prefix and in
 *   all (runtime/http/hsgate.h);
 * - the connection table (runtime/conntab.h) decides first: max_conns
 *   connections, max_per_src from one source while there is room; when
 *   it is full, caps per prefix (IPv4 /32 and /24, IPv6 /64, /56, /48),
 *   and a newcomer under them takes the place of the connection idle
 *   longest (server.c keeps the idle list), else of the heaviest
 *   prefix's oldest.
 * Every check comes before any eviction: a refused newcomer ends nobody.
 * A refused connection is reset at once from the accept callback: nothing
 * is kept for the peer, so a flood costs no memory (docs/appliance.md).
 */
#include "lib/types.h"
#include "kernel/mm/mm.h"
#include "lwip/altcp.h"
#include "runtime/conntab.h"
#include "runtime/http/conn.h"
#include "runtime/http/hsgate.h"
#include "runtime/http/https.h"
#include "runtime/http/allow.h"
#include "runtime/http/proxyproto.h"
#include "runtime/http/server.h"
#include "lwip/pbuf.h"

/* Waiting for a request, nothing unacknowledged: the cheapest to end; or
 * a reader too slow for its bulk grant (server.c), the least productive. */
static bool admission_idle(const struct conntab_conn *l)
{
	const struct conn *c = (const struct conn *)l;

	return (c->state == C_READ && !c->head_started && !c->tc.inflight) || c->bulk_slow;
}

static void admission_evict(struct conntab_conn *l)
{
	server_conn_abort((struct conn *)l);
}

/* Handshakes in progress from src. */
static u32 admission_handshakes_from(const struct conntab_src *src)
{
	const struct conntab_node *n = conntab_node_find(&http_srv.tab, src);

	return n ? n->handshakes : 0;
}

/* All handshake slots taken: the oldest handshake of the source running
 * the most, if that source runs more than mine + 1 (so that evicting
 * evens the shares out, never the other way round); else NULL. One walk of
 * the table, only while the handshake slots are full. */
__cold static struct conn *admission_tls_victim(u32 mine)
{
	struct conntab_conn *l;
	struct conn *victim = NULL;
	u32 heavy = 0, n;

	for (l = conntab_newest(&http_srv.tab); l; l = conntab_older(&http_srv.tab, l)) {
		if (!((struct conn *)l)->handshaking)
			continue;
		n = l->node->handshakes;
		if (n > heavy || (n == heavy && victim && l->node == victim->link.node)) {
			heavy = n;
			victim = (struct conn *)l;	/* newest first: the last seen is the oldest */
		}
	}
	return heavy > mine + 1 ? victim : NULL;
}

/* All TLS connections taken (https_max_conns()): the first established
 * TLS connection among the CONNTAB_SCAN longest idle of the table (its
 * TLS heap is what a newcomer needs; an idle plain one frees none), or
 * NULL. O(CONNTAB_SCAN), only while the TLS connections are all taken. */
static bool admission_tls_idle(const struct conntab_conn *l)
{
	return ((const struct conn *)l)->tc.tls && !((const struct conn *)l)->handshaking && admission_idle(l);
}

__cold static struct conn *admission_tls_idle_victim(void)
{
	return (struct conn *)conntab_idle_scan(&http_srv.tab, admission_tls_idle);
}

/* HTTPS: the handshake and connection limits (https.h); false to refuse.
 * *victim: a handshake to end before the newcomer is let in, or NULL;
 * nothing is ended here. From a proxy.trusted= peer (proxied) only the
 * limits on everyone are checked here, and no handshake is evicted for it:
 * the limits per source and the prefix's rate wait for the client its
 * PROXY header names (admission_tls_proxied()). */
__cold static bool admission_tls(struct altcp_pcb *pcb, const struct conntab_src *src, bool proxied,
				 struct conn **victim, struct conn **idle_victim)
{
	u32 mine;

	*victim = NULL;
	*idle_victim = NULL;
	if (https_stats.conns_active >= https_max_conns()) {
		*idle_victim = admission_tls_idle_victim();
		if (!*idle_victim) {
			https_stats.failures[HTTPS_FAIL_LIMIT]++;
			return false;
		}
	}
	if (proxied) {
		if (https_stats.handshakes_active < https_max_handshakes())
			return true;
		*idle_victim = NULL;
		https_stats.failures[HTTPS_FAIL_LIMIT]++;
		return false;
	}
	mine = admission_handshakes_from(src);
	if (mine >= https_max_handshakes_per_src()) {
		*idle_victim = NULL;
		https_stats.failures[HTTPS_FAIL_LIMIT_SOURCE]++;
		return false;
	}
	if (https_stats.handshakes_active >= https_max_handshakes()) {
		*victim = admission_tls_victim(mine);
		if (!*victim) {
			*idle_victim = NULL;
			https_stats.failures[HTTPS_FAIL_LIMIT]++;
			return false;
		}
	}
#ifdef VIREO_TLS
	/* The rates last: a connection the limits above refuse takes no token. */
	if (!hsgate_admit(pcb)) {
		*victim = *idle_victim = NULL;
		return false;
	}
#else
	(void)pcb;
#endif
	return true;
}

#ifdef VIREO_TLS
static void admission_proxy_wait(struct conn *c);
#endif

/*
 * Every check first, then the evictions, then the newcomer: a newcomer
 * that is refused (the table, the handshake limits, the rates, no memory
 * for its state or for its source's nodes in the table) has ended
 * nobody's connection. The handshake victim, if any, ends
 * first; if that made room in the table, the table's victim is spared.
 */
err_t admission_accept(void *arg, struct altcp_pcb *pcb, err_t err)
{
	bool tls = arg == &http_srv.listen_tls;
	struct conntab_conn *victim;
	struct conn *hs_victim = NULL, *tls_victim = NULL, *c;
	struct conntab_src src;
	enum conntab_verdict v;
	bool proxied;

	if (err != ERR_OK || !pcb)
		return ERR_VAL;
	proxied = tls && proxy_trusted.n && allow_match_ip(&proxy_trusted, altcp_get_ip(pcb, 0));
	conntab_src_of(altcp_get_ip(pcb, 0), &src);
	v = conntab_admit(&http_srv.tab, &src, admission_idle, &victim);
	if (v == CONNTAB_REFUSE_SOURCE)
		http_server_stats.conns_refused_source++;
	if (v == CONNTAB_REFUSE_SOURCE || v == CONNTAB_REFUSE_FULL)
		goto refuse;
	if (tls && !admission_tls(pcb, &src, proxied, &hs_victim, &tls_victim))
		goto refuse;
	c = kzalloc(sizeof *c);
	if (!c)
		goto refuse;
	/* In the table before anyone leaves it (one over max_conns for the
	 * moment): its nodes are the table's last allocation that can fail. */
	c->link.src = src;
	if (!conntab_insert(&http_srv.tab, &c->link)) {
		kfree(c);
		goto refuse;
	}
	if (hs_victim) {
		https_stats.handshakes_evicted++;
		if (&hs_victim->link == victim)
			victim = NULL;
		server_conn_abort(hs_victim);
	}
	if (tls_victim) {
		/* all TLS connections taken: the idle one makes room */
		https_stats.conns_evicted++;
		if (&tls_victim->link == victim)
			victim = NULL;
		server_conn_abort(tls_victim);
	}
	if (victim && http_srv.tab.count > http_srv.tab.max_conns) {
		http_server_stats.conns_evicted++;	/* not our pcb: nothing to hand back to lwIP */
		admission_evict(victim);
	}
	server_conn_attach(c, pcb, tls);
	if (tls) {
		c->handshaking = true;
		c->link.node->handshakes++;
		https_stats.conns_active++;
		https_stats.handshakes_active++;
#ifdef VIREO_TLS
		if (proxied)
			admission_proxy_wait(c);
#endif
	}
	return ERR_OK;

refuse:
	http_server_stats.conns_refused++;
	altcp_abort(pcb);
	return ERR_ABRT;
}

/* The TLS handshake of the connection whose altcp arg is arg ended (patch
 * 0004's hook, through https.c): it no longer counts as handshaking. */
void http_server_handshake_end(void *arg)
{
	struct conn *c = arg ? tcpconn_owner(arg, struct conn, tc) : NULL;

	if (c && c->handshaking) {
		c->handshaking = false;
		c->link.node->handshakes--;
		https_stats.handshakes_active--;
	}
}

/* Its ClientHello was parsed (https.c's certificate callback): past the
 * hello deadline (server.c's poll). */
void http_server_hello_seen(void *arg)
{
	struct conn *c = arg ? tcpconn_owner(arg, struct conn, tc) : NULL;

	if (c)
		c->hs_hello = true;
}

#ifdef VIREO_TLS
/* HTTPS from a proxy.trusted= peer, once its PROXY header named the client
 * (server_proxy_peer() moved the connection and its handshake to it) or
 * said it had none (the proxy's own): the handshake limit per source and
 * the prefix's rate for that client, as admission_tls() checks them for
 * anyone else on accept (no eviction on its behalf: the connection is
 * already in). false: its handshake is over, counted, and c must be
 * aborted. */
__cold static bool admission_tls_proxied(struct conn *c)
{
	enum https_fail why = HTTPS_FAIL_LIMIT_SOURCE;

	if (c->link.node->handshakes <= https_max_handshakes_per_src()) {
		if (hsgate_admit_ip(&c->peer))
			return true;
		why = HTTPS_FAIL_COUNT;	/* hsgate counted it */
	}
	if (why != HTTPS_FAIL_COUNT)
		https_stats.failures[why]++;
	c->handshaking = false;
	c->link.node->handshakes--;
	https_stats.handshakes_active--;
	http_server_stats.conns_refused++;
	return false;
}

/*
 * The PROXY header before TLS (issue 29): a proxy.trusted= peer's
 * connection to the HTTPS port may start with a PROXY header (v1 or v2,
 * proxyproto.h), read off the TCP stream here before altcp_tls sees a
 * byte: c's inner (TCP) pcb gets admission_pp_recv() as its receive
 * callback instead of altcp_tls's, which gets it back, and what followed
 * the header, once the header is taken. The header's bytes so far wait as pbufs in c->pp_rx
 * (at most PROXYPROTO_MAX, 536 B, before it is complete or refused: the
 * window holds the rest back) and are copied into c->rx (unused until the
 * handshake is done) to be parsed. Bounded in time by the hello deadline
 * (https.hello_timeout=, server.c): the header and the ClientHello must
 * both come by then. A trusted peer whose first bytes cannot start a
 * header (proxyproto_absent()) speaks TLS: it is its own client. A
 * malformed header resets the connection (vireo_http_proxy_refused_total).
 */
static altcp_recv_fn admission_tls_lower_recv;	/* altcp_tls's: the same for every connection */

__cold static err_t admission_pp_recv(void *arg, struct altcp_pcb *inner, struct pbuf *p, err_t err)
{
	struct altcp_pcb *conn = arg;
	struct conn *c = conn && conn->arg ? tcpconn_owner(conn->arg, struct conn, tc) : NULL;
	struct proxyproto_hdr h;
	struct pbuf *rest;
	u8 hdr[PROXYPROTO_MAX];	/* an HTTPS connection may have no buffer set yet */
	u16 n;
	int r;

	if (!c || !c->proxy_wait)
		return admission_tls_lower_recv(arg, inner, p, err);
	if (!p) {	/* FIN before the header: as before a ClientHello */
		c->proxy_wait = false;
		altcp_recv(inner, admission_tls_lower_recv);
		return admission_tls_lower_recv(arg, inner, NULL, err);
	}
	if (c->pp_rx)
		pbuf_cat(c->pp_rx, p);
	else
		c->pp_rx = p;
	n = (u16)MIN((u32)c->pp_rx->tot_len, (u32)PROXYPROTO_MAX);
	pbuf_copy_partial(c->pp_rx, hdr, n, 0);
	r = proxyproto_parse(hdr, n, &h);
	if (r == 0 && n < PROXYPROTO_MAX)
		return ERR_OK;	/* more to come */
	if (r > 0 || proxyproto_absent(hdr, n)) {
		/* done: altcp_tls takes the stream from here on, directly */
		c->proxy_wait = false;
		altcp_recv(inner, admission_tls_lower_recv);
		rest = c->pp_rx;
		c->pp_rx = NULL;
		if (r > 0) {
			rest = pbuf_free_header(rest, (u16)r);
			altcp_recved(inner, (u16)r);
			if (!server_proxy_peer(c, &h))
				goto refuse;
		}
		if (!admission_tls_proxied(c))
			goto refuse;
		return rest ? admission_tls_lower_recv(arg, inner, rest, ERR_OK) : ERR_OK;
refuse:
		if (rest)
			pbuf_free(rest);
		return server_conn_abort(c);
	}
	http_server_stats.proxy_refused++;
	return server_conn_abort(c);	/* frees c->pp_rx */
}

/* c, just admitted from a proxy.trusted= peer: its PROXY header first. */
__cold static void admission_proxy_wait(struct conn *c)
{
	struct altcp_pcb *inner = c->tc.pcb->inner_conn;

	if (!inner)
		return;
	admission_tls_lower_recv = inner->recv;
	c->proxy_wait = true;
	altcp_recv(inner, admission_pp_recv);
}
#endif
