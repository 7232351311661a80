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

	for (l = http_srv.tab.head; l; l = l->next) {
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

/* HTTPS: the handshake and connection limits (https.h); false to refuse.
 * *victim: a handshake to end before the newcomer is let in, or NULL;
 * nothing is ended here. */
__cold static bool admission_tls(struct altcp_pcb *pcb, const struct conntab_src *src, struct conn **victim)
{
	u32 mine;

	*victim = NULL;
	if (https_stats.conns_active >= https_max_conns()) {
		https_stats.failures[HTTPS_FAIL_LIMIT]++;
		return false;
	}
	mine = admission_handshakes_from(src);
	if (mine >= https_max_handshakes_per_src()) {
		https_stats.failures[HTTPS_FAIL_LIMIT_SOURCE]++;
		return false;
	}
	if (https_stats.handshakes_active >= https_max_handshakes()) {
		*victim = admission_tls_victim(mine);
		if (!*victim) {
			https_stats.failures[HTTPS_FAIL_LIMIT]++;
			return false;
		}
	}
#ifdef VIREO_TLS
	/* The rates last: a connection the limits above refuse takes no token. */
	if (!hsgate_admit(pcb)) {
		*victim = NULL;
		return false;
	}
#else
	(void)pcb;
#endif
	return true;
}

/*
 * Every check first, then the evictions, then the newcomer: a newcomer
 * that is refused (the table, the handshake limits, the rates, no memory)
 * has ended nobody's connection. The handshake victim, if any, ends
 * first; if that made room in the table, the table's victim is spared.
 */
err_t admission_accept(void *arg, struct altcp_pcb *pcb, err_t err)
{
	bool tls = arg == &http_srv.listen_tls;
	struct conntab_conn *victim;
	struct conn *hs_victim = NULL, *c;
	struct conntab_src src;
	enum conntab_verdict v;

	if (err != ERR_OK || !pcb)
		return ERR_VAL;
	conntab_src_of(altcp_get_ip(pcb, 0), &src);
	v = conntab_admit(&http_srv.tab, &src, admission_idle, &victim);
	if (v == CONNTAB_REFUSE_SOURCE)
		http_server_stats.conns_refused_source++;
	if (v == CONNTAB_REFUSE_SOURCE || v == CONNTAB_REFUSE_FULL)
		goto refuse;
	if (tls && !admission_tls(pcb, &src, &hs_victim))
		goto refuse;
	c = kzalloc(sizeof *c);
	if (!c)
		goto refuse;
	if (hs_victim) {
		https_stats.handshakes_evicted++;
		if (&hs_victim->link == victim)
			victim = NULL;
		server_conn_abort(hs_victim);
	}
	if (victim && http_srv.tab.count >= http_srv.tab.max_conns) {
		http_server_stats.conns_evicted++;	/* not our pcb: nothing to hand back to lwIP */
		admission_evict(victim);
	}
	c->link.src = src;
	if (!conntab_insert(&http_srv.tab, &c->link)) {
		kfree(c);
		goto refuse;
	}
	server_conn_attach(c, pcb, tls);
	if (tls) {
		c->handshaking = true;
		c->link.node->handshakes++;
		https_stats.conns_active++;
		https_stats.handshakes_active++;
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
