/* Per-source connection accounting shared by the appliance's TCP services:
 * a list of connections keyed by source, a per-source cap and a fair share
 * of the table when it is full. */
#ifndef VIREO_NET_APP_CONNTAB_H
#define VIREO_NET_APP_CONNTAB_H

#include "lib/types.h"
#include "lwip/altcp.h"
#include "lwip/ip_addr.h"

/* A source: an IPv4 address, or the /64 prefix of an IPv6 one (one host or
 * one site: a single IPv6 host is handed a whole /64). */
struct conntab_src {
	u32 w[2];
	bool v6;
};

struct conntab_node;

/* Embedded as the first member of each service's connection state (the
 * connection itself, its pcb, is the state's struct tcpconn). */
struct conntab_conn {
	struct conntab_conn *next, *prev;	/* the whole table, newest first */
	struct conntab_conn *snext, *sprev;	/* its source's, oldest first */
	struct conntab_node *node;		/* its source */
	struct conntab_src src;
};

/* One source in the table: its connections and what its owner counts for
 * it (kept here so that a per-source sum is one read, not a walk). */
struct conntab_node {
	struct conntab_node *hnext;		/* hash chain */
	struct conntab_node *bnext, *bprev;	/* sources holding the same n */
	struct conntab_conn *oldest, *newest;
	struct conntab_src src;
	u32 n;			/* its connections */
	u32 handshakes;		/* the HTTP server's: TLS handshakes running */
	size_t bodies;		/* the HTTP server's: request-body buffer bytes */
};

/*
 * A table of at most max_conns connections. Sources are found through a
 * hash of 2^k >= max_conns chains under a boot-time SipHash key (a remote
 * party picks its source addresses: unkeyed, it could put them all in one
 * chain), and kept in lists by connection count, so the source holding the
 * most is at hand: every operation is O(1) but the idle victim's search,
 * which walks that one source's connections (at most max_per_src). The
 * index is allocated on the first insert, sized for max_conns and
 * max_per_src; it is sized anew when they change while the table is
 * empty (a service restarted), and max_per_src must not grow otherwise.
 */
struct conntab {
	struct conntab_conn *head;
	u32 count;
	u32 max_conns;		/* table size */
	u32 max_per_src;	/* one source's cap while slots are free */
	u32 sources;		/* distinct sources in the table */
	u32 heavy_n;		/* the most connections one source holds */
	u32 hash_mask;
	u32 by_n_max;		/* the max_per_src the index was sized for */
	struct conntab_node **hash;	/* hash_mask + 1 chains */
	struct conntab_nlist {	/* sources holding n, the first to get there first */
		struct conntab_node *head, *tail;
	} *by_n;		/* by_n[n], 1 <= n <= max_per_src */
};

enum conntab_verdict {
	CONNTAB_ADMIT,		/* room, and the source is under its cap */
	CONNTAB_EVICT,		/* full: end *victim first, then admit */
	CONNTAB_REFUSE_SOURCE,	/* the source is at max_per_src */
	CONNTAB_REFUSE_FULL,	/* full, and the source has its fair share */
};

/* The source key of addr (IPv4, or IPv6 by /64). */
void conntab_src_of(const ip_addr_t *addr, struct conntab_src *src);
bool conntab_src_equal(const struct conntab_src *a, const struct conntab_src *b);

/* Connections from src in the table. */
u32 conntab_src_count(const struct conntab *t, const struct conntab_src *src);
/* src's node, or NULL when it holds no connection. */
struct conntab_node *conntab_node_find(const struct conntab *t, const struct conntab_src *src);

/*
 * What to do with a new connection from src. While the table has room a
 * source may hold up to max_per_src. When it is full, a newcomer whose source
 * holds fewer than its fair share (max_conns / sources, counting its own)
 * takes a slot from the source holding the most (of several, the one that
 * reached that count first): *victim is that source's oldest connection
 * for which is_idle() says true, else its oldest one. The
 * caller ends the victim (which must remove it from the table) before it
 * inserts the newcomer. Nothing is changed here.
 */
enum conntab_verdict conntab_admit(const struct conntab *t, const struct conntab_src *src,
				   bool (*is_idle)(const struct conntab_conn *c),
				   struct conntab_conn **victim);

/*
 * The whole admission of a new connection: conntab_admit() for pcb's source,
 * the victim (if any) ended through evict(), which must remove it from the
 * table, then size zeroed bytes allocated (a service's state, with its
 * struct conntab_conn first), its source filled in, and inserted.
 * Returns NULL if refused or out of memory; *verdict says which applied
 * (CONNTAB_ADMIT or CONNTAB_EVICT with NULL: no memory).
 */
struct conntab_conn *conntab_accept(struct conntab *t, struct altcp_pcb *pcb, size_t size,
				    bool (*is_idle)(const struct conntab_conn *c),
				    void (*evict)(struct conntab_conn *c),
				    enum conntab_verdict *verdict);

/* c (its src filled in) joins the table: false, and nothing changed, if the
 * index or c's source node cannot be allocated. */
bool conntab_insert(struct conntab *t, struct conntab_conn *c);
void conntab_remove(struct conntab *t, struct conntab_conn *c);
/* c, in the table, counts for src from now on (its owner's counters on
 * the node, handshakes and bodies, must be zero): false, and nothing
 * changed, if src's node cannot be allocated. */
bool conntab_rekey(struct conntab *t, struct conntab_conn *c, const struct conntab_src *src);
/* Allocates the index for max_conns and max_per_src (a service calls it
 * when it starts, so that its memory is held from then on; else the first
 * insert does): false if out of memory. */
bool conntab_init(struct conntab *t);
/* Frees the index if the table is empty (a service that stops). */
void conntab_release(struct conntab *t);

#endif
