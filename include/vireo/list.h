/*
 * vireo's application API: an intrusive doubly linked list, the kernel's
 * own (lib/list.h: the HTTP server's queues, the connection table's lists).
 * Circular, with a head node: an empty list is its head pointing at itself,
 * so no operation has a NULL case, and every one is a few loads and stores,
 * inline (no call). A node lives inside the object it links (as a member);
 * list_entry() gets the object back. A node is on at most one list at a
 * time and the list does not know whether a node is on it: the caller keeps
 * that (a flag, a state) where it needs it. After list_unlink() a node's
 * links are stale until it is pushed again.
 */
#ifndef VIREO_API_LIST_H
#define VIREO_API_LIST_H

#include "vireo/types.h"

struct list_node {
	struct list_node *next, *prev;
};

/* An empty list h, as a static initialiser: struct list_node h = LIST_INIT(h). */
#define LIST_INIT(h) { &(h), &(h) }

/* The object of type `type` whose member `member` is the node p. */
#define list_entry(p, type, member) ((type *)(void *)((char *)(p) - offsetof(type, member)))

/* for (each node n of list h, front to back); n must not leave the list in
 * the body (save n->next first for that). */
#define list_for_each(n, h) for ((n) = (h)->next; (n) != (h); (n) = (n)->next)

static inline void list_init(struct list_node *h)
{
	h->next = h->prev = h;
}

static inline bool list_empty(const struct list_node *h)
{
	return h->next == h;
}

/* n (on no list) between the neighbours prev and next. */
static inline void list_insert(struct list_node *n, struct list_node *prev, struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* n (on no list) at the back of h. */
static inline void list_push_back(struct list_node *h, struct list_node *n)
{
	list_insert(n, h->prev, h);
}

/* n (on no list) at the front of h. */
static inline void list_push_front(struct list_node *h, struct list_node *n)
{
	list_insert(n, h, h->next);
}

/* n off the list it is on, wherever it is. */
static inline void list_unlink(struct list_node *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
}

/* The front node of h, NULL if h is empty. */
static inline struct list_node *list_first(const struct list_node *h)
{
	return list_empty(h) ? NULL : h->next;
}

/* The front node of h, off it; NULL if h is empty. */
static inline struct list_node *list_pop_front(struct list_node *h)
{
	struct list_node *n = list_first(h);

	if (n)
		list_unlink(n);
	return n;
}

#endif
