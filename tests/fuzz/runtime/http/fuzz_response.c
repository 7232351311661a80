/* libFuzzer target for runtime/http/response.c and chunked.c. The first
 * byte seeds the piece sizes, the second how much of each body span the
 * reader takes (back-pressure), bit 0 of the third whether the request was
 * HEAD; the rest is an upstream's byte stream, read response after
 * response while they are kept alive. Checks: no crash or over-read
 * (ASan/UBSan); *used and the spans stay inside the input; MORE from the
 * head uses everything; a head gives a status of 100..999 and a known body
 * kind; the payload never passes body_max or a Content-Length; and the run
 * in pieces sees the same statuses, bodies (hashed) and ends as a run fed
 * all at once. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/http/response.h"

#define MAX_RESP 32

struct event {
	int r, err, status;
	u64 body;
	u32 hash;
};

static struct http_resp_parser P;

static unsigned run(const u8 *data, size_t len, size_t piece, size_t take, bool head_req, struct event *ev)
{
	static u8 pend[1 << 16];
	size_t plen = 0, pos = 0, used, avail;
	unsigned n = 0;
	bool head = false, starved = true;
	u32 h = 2166136261u;

	P.head_max = 2048;
	P.body_max = 4096;
	http_resp_reset(&P, head_req);
	while (n < MAX_RESP) {
		int r;

		if (starved) {
			size_t k = len - pos < piece ? len - pos : piece;

			if (k == 0) {
				if (head) {	/* the connection closes mid-body */
					r = http_resp_eof(&P);
					ev[n++] = (struct event){ r, P.err, P.status, P.body_seen, h };
				}
				break;
			}
			memcpy(pend + plen, data + pos, k);
			plen += k;
			pos += k;
			starved = false;
		}
		if (!head) {
			r = http_resp_head(&P, pend, plen, &used);
			if (used > plen)
				abort();
			memmove(pend, pend + used, plen - used);
			plen -= used;
			if (r == HTTP_RESP_MORE) {
				if (plen)
					abort();
				starved = true;
				continue;
			}
			if (r == HTTP_RESP_ERROR) {
				ev[n++] = (struct event){ r, P.err, 0, 0, 0 };
				return n;
			}
			if (P.status < 100 || P.status > 999 || P.body > HTTP_BODY_CLOSE)
				abort();
			(void)http_resp_header(&P, "content-length");
			head = true;
			h = 2166136261u;
		}
		r = http_resp_body(&P, pend, plen, &used, &avail);
		if (used + avail > plen)
			abort();
		if (r == HTTP_RESP_DATA) {
			size_t t = take && avail > take ? take : avail;

			for (size_t i = 0; i < t; i++)
				h = (h ^ pend[used + i]) * 16777619u;
			http_resp_take(&P, t);
			used += t;
			if (P.body_seen > P.body_max || (P.body == HTTP_BODY_LENGTH && P.body_seen > P.content_length))
				abort();
		}
		memmove(pend, pend + used, plen - used);
		plen -= used;
		if (r == HTTP_RESP_MORE || (r == HTTP_RESP_DATA && !plen))
			starved = true;
		if (r == HTTP_RESP_ERROR) {
			ev[n++] = (struct event){ r, P.err, P.status, P.body_seen, h };
			return n;
		}
		if (r == HTTP_RESP_END) {
			ev[n++] = (struct event){ r, 0, P.status, P.body_seen, h };
			if (!P.keep_alive)
				return n;
			http_resp_reset(&P, head_req);
			head = false;
		}
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct event a[MAX_RESP], b[MAX_RESP];
	unsigned na, nb;
	bool head_req;

	if (size < 3)
		return 0;
	head_req = data[2] & 1;
	na = run(data + 3, size - 3, size, 0, head_req, a);
	nb = run(data + 3, size - 3, (size_t)(data[0] % 17) + 1, data[1] % 5, head_req, b);
	if (na != nb)
		abort();
	for (unsigned i = 0; i < na; i++)
		if (a[i].r != b[i].r || a[i].err != b[i].err || a[i].status != b[i].status || a[i].body != b[i].body ||
		    a[i].hash != b[i].hash)
			abort();
	return 0;
}
