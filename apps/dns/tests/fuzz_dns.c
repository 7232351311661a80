/* libFuzzer target for apps/dns's engine (dnsmsg.c) over the example zone,
 * its TCP framing and the rate limiter. The first byte picks UDP or TCP and
 * the output room; the rest is a query (or, for the framing, a stream).
 * Checks: no crash or over-read (an exactly-sized copy), a response never
 * longer than its limit (512 without EDNS, DNS_UDP_MAX with it, the room
 * given over TCP), the ID echoed and QR set, every count matching whole
 * records, compression pointers only backwards, and the slip form keeping
 * only the header and question. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apps/dns/dnsmsg.h"
#include "apps/dns/rrl.h"
#include "lib/byteorder.h"

extern const struct dns_zone dns_zone_table;

/* Skips a name; 0 on anything a well-formed response cannot hold. */
static size_t skip_name(const u8 *m, size_t len, size_t o)
{
	for (;;) {
		if (o >= len)
			return 0;
		if ((m[o] & 0xc0) == 0xc0) {
			if (o + 1 >= len || ((size_t)(m[o] & 0x3f) << 8 | m[o + 1]) >= o)
				return 0;
			return o + 2;
		}
		if (m[o] & 0xc0)
			return 0;
		if (m[o] == 0)
			return o + 1;
		o += m[o] + 1u;
	}
}

static void check(const u8 *q, size_t qlen, const u8 *r, size_t n, size_t limit)
{
	size_t o = 12;
	unsigned total;

	if (n == 0)
		return;
	if (n > limit || n < 12 || r[0] != q[0] || r[1] != q[1] || !(r[2] & 0x80) || (r[3] & 0x80))
		abort();
	if (get_be16(r + 4) > 1)
		abort();
	if (get_be16(r + 4)) {
		o = skip_name(r, n, o);
		if (!o || o + 4 > n)
			abort();
		o += 4;
	}
	total = (unsigned)get_be16(r + 6) + get_be16(r + 8) + get_be16(r + 10);
	for (unsigned i = 0; i < total; i++) {
		o = skip_name(r, n, o);
		if (!o || o + 10 > n || n - o - 10 < get_be16(r + o + 8))
			abort();
		o += 10u + get_be16(r + o + 8);
	}
	if (o != n)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 resp[70000];
	static struct rrl rrl;
	struct dns_result res;
	u8 *copy;
	size_t len, n, room;
	bool tcp;

	if (size < 1)
		return 0;
	tcp = data[0] & 1;
	room = tcp ? DNS_UDP_MIN + (size_t)(data[0] >> 1) * 512 : sizeof resp;
	len = size - 1;
	copy = malloc(len ? len : 1);
	memcpy(copy, data + 1, len);
	n = dns_respond(&dns_zone_table, copy, len, resp, room, tcp, &res);
	if (n) {
		size_t limit = tcp ? room : res.edns ? DNS_UDP_MAX : DNS_UDP_MIN;

		if (res.rcode == DNS_RCODE_FORMERR || res.rcode == DNS_RCODE_NOTIMP)
			limit = DNS_HDR_LEN;
		check(copy, len, resp, n, limit);
		n = dns_slip(resp, n, &res);
		if (n) {
			if (!(resp[2] & 0x02) || get_be16(resp + 6) || get_be16(resp + 8) || get_be16(resp + 10))
				abort();
			check(copy, len, resp, n, res.qlen);
		}
	}
	/* The same bytes as a TCP stream, in two pieces. */
	{
		static struct dns_tcp_reader rd;
		size_t off = 0, m, cut = len / 2;

		dns_tcp_next(&rd);
		while (off < len) {
			long took = dns_tcp_feed(&rd, copy + off, off < cut ? cut - off : len - off, &m);

			if (took < 0)
				break;
			if (m) {
				if (m > DNS_TCP_QUERY_MAX)
					abort();
				n = dns_respond(&dns_zone_table, rd.buf + 2, m, resp, 65535, true, &res);
				check(rd.buf + 2, m, resp, n, 65535);
				dns_tcp_next(&rd);
			} else if (took == 0) {
				abort();	/* no progress without a message */
			}
			off += (size_t)took;
		}
	}
	/* The limiter on the query's first bytes as an address. */
	if (len >= 16) {
		static const u8 key[16];

		if (rrl.rate == 0)
			rrl_init(&rrl, key, 3, 2);
		rrl_check(&rrl, copy, (copy[0] & 1) ? 16 : 4, get_be32(copy + 8));
	}
	free(copy);
	return 0;
}
