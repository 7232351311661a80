/*
 * vireo's application API: an output builder, the kernel's own
 * (lib/outbuf.c: response heads, /metrics). It appends to a fixed buffer
 * while it fits and keeps counting past the end, so a caller can size what
 * it writes (len > size: it did not fit) or measure with no buffer at all
 * (size 0). Never NUL-terminates.
 */
#ifndef VIREO_API_OUTBUF_H
#define VIREO_API_OUTBUF_H

#include "vireo/types.h"

struct outbuf {
	char *buf;
	size_t size;
	size_t len;		/* bytes appended, also those that did not fit */
};

void outbuf_mem(struct outbuf *o, const char *s, size_t n);
void outbuf_str(struct outbuf *o, const char *s);
void outbuf_u64(struct outbuf *o, u64 v);	/* decimal */
/* A string literal, its length known at compile time (no strlen). */
#define outbuf_lit(o, lit) outbuf_mem((o), "" lit, sizeof(lit) - 1)

/*
 * Copies s[0..n) to d and returns d + n, eight bytes a step: for the short
 * strings of a response head. Under TCG a byte loop, and rep movsb
 * (memcpy's tail), cost one step per byte; a fixed-size __builtin_memcpy is
 * one unaligned load and store. The steps are fixed-size copies so that
 * the compiler does not turn the loop back into a memcpy call.
 */
char *outbuf_put(char *d, const char *s, size_t n);

#endif
