/* libFuzzer target for net/clients/mdhttp.c: arbitrary bytes as a metadata
 * server's response, fed whole and in pieces (the first byte picks the
 * piece size). Checks: no crash or over-read (exactly-sized copies), the
 * result does not depend on how the bytes were split, a DONE response has
 * a status of 200-599 and a body within the bounds and the buffer, and a
 * result once reached stays. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/clients/mdhttp.h"

static char buf_a[MDHTTP_BUF], buf_b[MDHTTP_BUF];

static int run(struct mdhttp *h, char *buf, const uint8_t *data, size_t size, size_t step)
{
	int r = MDHTTP_MORE;

	mdhttp_init(h, buf, MDHTTP_BUF);
	for (size_t o = 0; o < size && r == MDHTTP_MORE; o += step) {
		size_t n = size - o < step ? size - o : step;
		uint8_t *piece = malloc(n);

		memcpy(piece, data + o, n);
		r = mdhttp_feed(h, piece, n);
		free(piece);
	}
	return r == MDHTTP_MORE ? mdhttp_eof(h) : r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mdhttp a, b;
	size_t step = size ? (size_t)data[0] % 17 + 1 : 1;
	int ra = run(&a, buf_a, data, size, size ? size : 1), rb = run(&b, buf_b, data, size, step);

	if (ra != rb || ra < MDHTTP_E_TRUNCATED || ra == MDHTTP_MORE)
		abort();
	if (ra == MDHTTP_DONE) {
		const char *ba, *bb;
		size_t la, lb;

		mdhttp_body(&a, &ba, &la);
		mdhttp_body(&b, &bb, &lb);
		if (a.status < 200 || a.status > 599 || a.status != b.status || la != lb || la > MDHTTP_BODY_MAX ||
		    ba < buf_a || ba + la > buf_a + sizeof buf_a || memcmp(ba, bb, la))
			abort();
		if (mdhttp_feed(&a, "x", 1) != MDHTTP_DONE || mdhttp_eof(&a) != MDHTTP_DONE)
			abort();
	}
	if (!mdhttp_strerror(ra)[0])
		abort();
	return 0;
}
