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

/* Embedded as the first member of each service's connection state (the
 * connection itself, its pcb, is the state's struct tcpconn). */
struct conntab_conn {
	struct conntab_conn *next, *prev;	/* newest first */
	struct conntab_src src;
};

struct conntab {
	struct conntab_conn *head;
	u32 count;
	u32 max_conns;		/* table size */
	u32 max_per_src;	/* one source's cap while slots are free */
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

/*
 * What to do with a new connection from src. While the table has room a
 * source may hold up to max_per_src. When it is full, a newcomer whose source
 * holds fewer than its fair share (max_conns / sources, counting its own)
 * takes a slot from the source holding the most: *victim is that source's
 * oldest connection for which is_idle() says true, else its oldest one. The
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

void conntab_insert(struct conntab *t, struct conntab_conn *c);
void conntab_remove(struct conntab *t, struct conntab_conn *c);

#endif
