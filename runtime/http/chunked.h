/*
 * The chunked transfer coding's decoder (RFC 9112 7.1): pure, incremental,
 * zero-copy. The HTTP client reads upstream responses with it
 * (runtime/http/response.c); it is written for the server's chunked request
 * bodies too (the same framing rules, the same bounds), so it knows nothing
 * of requests or responses: bytes in, payload spans and the end out.
 *
 * Strict where a lenient reader could disagree with another on where the
 * body ends (request smuggling): a size is hex digits only, at most 15
 * significant (below 2^60), then optional extensions (";" after optional
 * whitespace, bounded, content ignored); every line ends in CRLF (a bare LF
 * or CR is an error); the CRLF after a chunk's data is required; trailer
 * fields are "name: value" lines (no obs-fold), checked and discarded.
 *
 * Bounds: a chunk-size line (digits and extensions) CHUNKED_LINE_MAX
 * bytes, the trailer section CHUNKED_TRAILER_MAX bytes; the payload's
 * total is the caller's to cap (it sees every span).
 */
#ifndef VIREO_HTTP_CHUNKED_H
#define VIREO_HTTP_CHUNKED_H

#include "lib/types.h"

#define CHUNKED_LINE_MAX 256
#define CHUNKED_TRAILER_MAX 4096

enum chunked_result {
	CHUNKED_MORE = 0,	/* all input used: framing only, feed more */
	CHUNKED_DATA,		/* a payload span (below) */
	CHUNKED_END,		/* the last chunk and the trailers ended */
	CHUNKED_ERROR,		/* malformed or over a bound: the stream is lost */
};

/* One body's decoder: chunked_init() before its first byte. */
struct chunked {
	u64 left;	/* payload bytes of the current chunk not taken yet */
	u32 line;	/* bytes of the size line so far */
	u32 trailer;	/* bytes of the trailer section so far */
	u8 state;
};

void chunked_init(struct chunked *d);

/*
 * Decode from data[0..len). *used is always set: the bytes of framing this
 * call used. CHUNKED_DATA: data[*used .. *used + *avail) (*avail >= 1) is
 * payload; the caller takes n of it (0 <= n <= *avail) with
 * chunked_take(d, n) and feeds again from data + *used + n. CHUNKED_MORE:
 * *used == len. CHUNKED_END: the body ended at data[*used - 1]; what
 * follows belongs to the next message. CHUNKED_ERROR: for good; later
 * calls return it again (as they return END after the end).
 */
int chunked_step(struct chunked *d, const u8 *data, size_t len, size_t *used, size_t *avail);

/* n payload bytes of the span chunked_step() gave were taken. */
void chunked_take(struct chunked *d, size_t n);

#endif
