/* An output builder: appends to a fixed buffer while it fits and keeps
 * counting past the end, so a caller can size what it writes (len > size:
 * it did not fit) or measure with no buffer at all (size 0). Never
 * NUL-terminates. Pure: the host tests link kernel/outbuf.c as it is. */
#ifndef VIREO_OUTBUF_H
#define VIREO_OUTBUF_H

#include "kernel/types.h"

struct outbuf {
	char *buf;
	size_t size;
	size_t len;		/* bytes appended, also those that did not fit */
};

void outbuf_mem(struct outbuf *o, const char *s, size_t n);
void outbuf_str(struct outbuf *o, const char *s);
void outbuf_u64(struct outbuf *o, u64 v);	/* decimal */

#endif
