/* Per-source connection accounting shared by the appliance's TCP services:
 * a list of connections keyed by source and by the prefixes holding the
 * source, a per-source cap while there is room, caps per prefix and an
 * eviction policy when the table is full. */
#ifndef VIREO_NET_APP_CONNTAB_H
#define VIREO_NET_APP_CONNTAB_H

#include "lib/list.h"
#include "lib/types.h"
#include "lwip/altcp.h"
#include "lwip/ip_addr.h"

/* A source: an IPv4 address, or the /64 prefix of an IPv6 one (one host or
 * one site: a single IPv6 host is handed a whole /64). */
struct conntab_src {
	u32 w[2];
	bool v6;
};

/*
 * The levels a connection is counted at: 0 its source (IPv4 /32, IPv6
 * /64), 1 IPv4 /24 or IPv6 /56 (a customer's allocation), 2 IPv4 /24 again
 * or IPv6 /48 (a site). Level 2 exists for IPv4 so that every connection
 * has a node at every level and a site of either family counts once there.
 */
#define CONNTAB_LEVELS 3
/* The most connections an admission looks at in one list (the idle list,
 * a prefix's list): what keeps a full table's admission O(1). */
#define CONNTAB_SCAN 16

struct conntab_node;

/* Embedded as the first member of each service's connection state (the
 * connection itself, its pcb, is the state's struct tcpconn). */
struct conntab_conn {
	struct list_node in_tab;		/* the whole table, newest first */
	struct list_node in_idle;		/* the idle list, longest idle first */
	bool idle;				/* on it (conntab_idle()) */
	struct list_node lv[CONNTAB_LEVELS];	/* its node's list at each level, oldest first */
	union {
		struct conntab_node *node;	/* its source: nodes[0] */
		struct conntab_node *nodes[CONNTAB_LEVELS];
	};
	struct conntab_src src;
};

/* One prefix at one level in the table: its connections and (at level 0)
 * what its owner counts for the source (kept here so that a per-source sum
 * is one read, not a walk). */
struct conntab_node {
	struct conntab_node *hnext;		/* hash chain */
	struct conntab_node *bnext, *bprev;	/* ring of the level's nodes holding the same n */
	struct list_node conns;			/* its connections (lv[level]), oldest first */
	struct conntab_src src;	/* the prefix, the bits past it zero */
	u32 level;
	u32 n;			/* its connections */
	u32 kids;		/* its prefixes one level down */
	u32 handshakes;		/* level 0, the HTTP server's: TLS handshakes running */
	size_t bodies;		/* level 0, the HTTP server's: request-body buffer bytes */
};

/*
 * A table of at most max_conns connections. Nodes are found through a hash
 * of 2^k >= max_conns chains under a boot-time SipHash key (a remote party
 * picks its source addresses: unkeyed, it could put them all in one
 * chain), and kept per level in rings by connection count, so the prefix
 * holding the most at each level is at hand: every operation is O(1), the
 * admission of a newcomer to a full table looks at most at CONNTAB_SCAN
 * connections. The index is allocated on the first insert, sized for
 * max_conns and max_per_src; it is sized anew when they change while the
 * table is empty (a service restarted), and neither may grow otherwise.
 */
struct conntab {
	/* The lists: set up by conntab_init() (a zeroed table has none: walk
	 * with conntab_newest(), which checks count). */
	struct list_node conns;		/* every connection (in_tab), newest first */
	struct list_node idle;		/* the idle ones (in_idle), longest idle first */
	u32 count;
	u32 max_conns;		/* table size */
	u32 max_per_src;	/* one source's cap while slots are free */
	u32 sources[CONNTAB_LEVELS];	/* distinct prefixes in the table, per level */
	u32 heavy_n[CONNTAB_LEVELS];	/* the most connections one prefix holds, per level */
	u32 hash_mask;
	u32 by_n_max;		/* the max_per_src the index was sized for */
	u32 by_n_conns;		/* the max_conns it was sized for */
	struct conntab_node **hash;	/* hash_mask + 1 chains */
	/* by_n[l][n]: level l's nodes holding n, the first to get there
	 * first; n <= max_per_src at level 0, <= max_conns above */
	struct conntab_node **by_n[CONNTAB_LEVELS];
};

enum conntab_verdict {
	CONNTAB_ADMIT,		/* room, and the source is under its cap */
	CONNTAB_EVICT,		/* full: end *victim first, then admit */
	CONNTAB_REFUSE_SOURCE,	/* the source is at max_per_src */
	CONNTAB_REFUSE_FULL,	/* full, and the newcomer's prefixes have their shares */
};

/* The table's connections, newest first: conntab_newest(t), then
 * conntab_older(t, c) until NULL (save it before c leaves the table).
 * NULL for an empty table, a zeroed one too. */
static inline struct conntab_conn *conntab_newest(const struct conntab *t)
{
	return t->count ? list_entry(t->conns.next, struct conntab_conn, in_tab) : NULL;
}

static inline struct conntab_conn *conntab_older(const struct conntab *t, const struct conntab_conn *c)
{
	return c->in_tab.next == &t->conns ? NULL : list_entry(c->in_tab.next, struct conntab_conn, in_tab);
}

/* The first connection among the CONNTAB_SCAN longest idle of t for which
 * ok(c) holds (any, if ok is NULL), or NULL. */
struct conntab_conn *conntab_idle_scan(const struct conntab *t, bool (*ok)(const struct conntab_conn *c));

/* The source key of addr (IPv4, or IPv6 by /64). */
void conntab_src_of(const ip_addr_t *addr, struct conntab_src *src);
bool conntab_src_equal(const struct conntab_src *a, const struct conntab_src *b);
/* src's prefix at level (src itself at 0). */
void conntab_prefix(const struct conntab_src *src, u32 level, struct conntab_src *prefix);

/* Connections from src in the table. */
u32 conntab_src_count(const struct conntab *t, const struct conntab_src *src);
/* src's node (level 0), or NULL when it holds no connection. */
struct conntab_node *conntab_node_find(const struct conntab *t, const struct conntab_src *src);
/* The node of src's prefix at level, or NULL. */
struct conntab_node *conntab_level_find(const struct conntab *t, const struct conntab_src *src, u32 level);

/*
 * What to do with a new connection from src. While the table has room a
 * source may hold up to max_per_src, its prefixes any number (a NAT
 * gateway, a load balancer). When it is full:
 * - caps, coarsest level first: a level-2 prefix's share is max_conns
 *   split among the level-2 prefixes in the table, a level-1 prefix's its
 *   level-2 prefix's share split among that one's level-1 prefixes, a
 *   source's its level-1 prefix's split among its sources (each counting
 *   the newcomer's, each at least 1). A newcomer whose prefix holds its share at some level may only take
 *   the place of a connection of that same prefix, one whose own prefix at
 *   the first level below where the two differ holds at least two more
 *   than the newcomer's (so that evicting evens the counts out), idle
 *   preferred, among that prefix's CONNTAB_SCAN oldest; else it is
 *   refused. A source at its share is refused.
 * - under every cap, the newcomer takes the place of the connection idle
 *   longest in the whole table (the first of the idle list's CONNTAB_SCAN
 *   oldest for which is_idle() says true), whoever holds it;
 * - nobody idle: the oldest connection (an idle one preferred, among the
 *   CONNTAB_SCAN oldest) of the prefix holding the most, coarsest level
 *   first, if it holds at least two more than the newcomer's; else refused.
 * The caller ends the victim (which must remove it from the table) before
 * it inserts the newcomer. Nothing is changed here.
 */
enum conntab_verdict conntab_admit(const struct conntab *t, const struct conntab_src *src,
				   bool (*is_idle)(const struct conntab_conn *c),
				   struct conntab_conn **victim);

/*
 * The whole admission of a new connection: conntab_admit() for pcb's source,
 * size zeroed bytes allocated (a service's state, with its struct
 * conntab_conn first), its source filled in and inserted (one over
 * max_conns for the moment). Nobody is ended here: *victim (NULL if none)
 * is the connection the caller ends, removing it from the table, once
 * nothing of its own can refuse the newcomer any more (or it removes and
 * frees the newcomer instead, and the victim stays): a refused newcomer
 * evicts nobody, as the HTTP server's admission (runtime/http/admission.c).
 * Returns NULL if refused or out of memory for either (*verdict says which
 * applied: CONNTAB_ADMIT or CONNTAB_EVICT with NULL: no memory).
 */
struct conntab_conn *conntab_accept(struct conntab *t, struct altcp_pcb *pcb, size_t size,
				    bool (*is_idle)(const struct conntab_conn *c), struct conntab_conn **victim,
				    enum conntab_verdict *verdict);

/* c (its src filled in) joins the table: false, and nothing changed, if the
 * index or c's nodes cannot be allocated. */
bool conntab_insert(struct conntab *t, struct conntab_conn *c);
void conntab_remove(struct conntab *t, struct conntab_conn *c);
/* c, in the table, is idle (its owner's word: waiting for a request,
 * nothing held) or no longer: it joins the idle list's tail or leaves it.
 * An owner that never calls it has no idle list: a full table then evicts
 * by the heaviest prefix only. */
void conntab_idle(struct conntab *t, struct conntab_conn *c, bool idle);
/* c, in the table, counts for src from now on (its owner's counters on
 * the node, handshakes and bodies, must be zero): false, and nothing
 * changed, if src's nodes cannot be allocated. */
bool conntab_rekey(struct conntab *t, struct conntab_conn *c, const struct conntab_src *src);
/* Allocates the index for max_conns and max_per_src (a service calls it
 * when it starts, so that its memory is held from then on; else the first
 * insert does): false if out of memory. */
bool conntab_init(struct conntab *t);
/* Frees the index if the table is empty (a service that stops). */
void conntab_release(struct conntab *t);

#endif
