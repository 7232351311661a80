/* libFuzzer target for apps/dns's engine (dnsmsg.c) over
 * apps/dns/tests/rfc.zone (wildcards, delegations, every type), its TCP
 * framing, the rate limiter, and the zone image check (zone.c). The first
 * byte picks UDP or TCP, the output room, and the server's options (NSID,
 * cookies, CHAOS); the rest is a query (or, for the framing, a stream).
 * With the first byte's top bits 11, the rest edits a copy of the zone
 * image instead (offset, value pairs), its checksum made right again: an
 * image dns_zone_open accepts must then be served without a fault.
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
#include "apps/dns/zone.h"
#include "lib/byteorder.h"
#include "apps/dns/tests/dnsq.h"
#include "lib/crypto/siphash.h"

static struct dns_zone zone;
static struct dns_server srv = { .zone = &zone, .version = "vireo", .id = "fuzz" };
static const u8 peer_ip[4] = { 192, 0, 2, 1 };

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

/* Mode 11: edits to the zone image; an accepted image is asked a few
 * questions that reach every part of the engine. */
static void fuzz_image(const u8 *data, size_t len)
{
	static u8 img[1 << 16] __attribute__((aligned(8)));
	static const u8 k[16] = DNS_ZONE_CHECK_KEY;
	static const char *const names[] = { "host3.example", "www.big.example", "c1.example", "a.wc.example",
					     "sec.example", "q.w3.example", "_sip._udp.example", "example" };
	static const u16 types[] = { DNS_TYPE_A, DNS_TYPE_MX, DNS_TYPE_ANY, DNS_TYPE_DS, DNS_TYPE_SRV, DNS_TYPE_NS };
	static u8 resp[8192];
	struct siphash_key key;
	struct dns_server s = srv;
	struct dns_peer p = { 0 };
	struct dns_zone z;
	struct dns_result res;
	char err[128];
	size_t ilen = dns_zone_builtin_len;

	if (ilen > sizeof img)
		abort();
	memcpy(img, dns_zone_builtin, ilen);
	for (size_t i = 0; i + 3 <= len; i += 3)
		img[(get_be16(data + i) % (ilen - 24)) + 24] = data[i + 2];
	siphash_key_from_bytes(&key, k);
	put_le64(img + 16, siphash24(&key, img + 24, ilen - 24));
	if (dns_zone_open(&z, img, ilen, err, sizeof err))
		return;
	s.zone = &z;
	for (size_t ni = 0; ni < ARRAY_SIZE(names); ni++)
		for (size_t ti = 0; ti < ARRAY_SIZE(types); ti++) {
			u8 q[300];
			size_t n;

			memset(q, 0, 12);
			put_be16(q + 4, 1);
			n = 12 + dnsq_put_name(q + 12, names[ni]);
			put_be16(q + n, types[ti]);
			put_be16(q + n + 2, 1);
			n += 4;
			check(q, n, resp, dns_respond(&s, &p, q, n, resp, sizeof resp, ti & 1, &res),
			      ti & 1 ? sizeof resp : DNS_UDP_MIN);
		}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static u8 resp[70000];
	static struct rrl rrl;
	struct dns_result res;
	struct dns_peer peer = { .addr = peer_ip, .alen = 4 };
	u8 *copy;
	size_t len, n, room;
	bool tcp;

	if (size < 1)
		return 0;
	if (!zone.base && dns_zone_open(&zone, dns_zone_builtin, dns_zone_builtin_len, (char[128]){ 0 }, 128))
		abort();
	if ((data[0] & 0xc0) == 0xc0) {
		fuzz_image(data + 1, size - 1);
		return 0;
	}
	srv.nsid = (const u8 *)"fuzz-nsid";
	srv.nsid_len = (data[0] & 0x40) ? 9 : 0;
	srv.cookies = (data[0] & 0x80) != 0;
	srv.chaos = (data[0] & 0x20) != 0;
	peer.now_s = size > 8 ? get_be32(data + size - 4) : 0;
	tcp = data[0] & 1;
	room = tcp ? DNS_UDP_MIN + (size_t)((data[0] >> 1) & 0xf) * 512 : sizeof resp;
	len = size - 1;
	copy = malloc(len ? len : 1);
	memcpy(copy, data + 1, len);
	n = dns_respond(&srv, &peer, copy, len, resp, room, tcp, &res);
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
				n = dns_respond(&srv, &peer, rd.buf + 2, m, resp, 65535, true, &res);
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
