/* apps/dns: an authoritative DNS server for one zone compiled in at build
 * time, or the one on the ESP (EFI/vireo/app/zone.bin) when it checks out
 * (apps/dns/README.md). The glue between the application API and the pure
 * engine: UDP and TCP on dns.port, response-rate limiting of UDP answers,
 * configuration keys and metrics.
 *
 * Bounds (what a remote party can make it hold):
 *  - UDP: nothing past the call. One DNS_UDP_MAX-byte answer buffer (app memory);
 *    queries over DNS_UDP_QUERY_MAX bytes are dropped by the runtime.
 *  - TCP: at most DNS_TCP_CONNS connections (the runtime's table, per-source
 *    cap max_conns / 4, idle timeout dns.tcp_idle_ms), each holding one
 *    struct dns_conn from vireo_alloc: 2 + 1024 query bytes + 2 + 8192
 *    answer bytes + 9 bytes of counters = 9,230 bytes, 9,246 with
 *    VIREO_ALLOC_OVERHEAD; 8 x 9,246 = 73,968 bytes in all, under app.mem='s
 *    4 MiB default (checked below). A connection answers at most
 *    DNS_TCP_QUERIES queries, then closes after the last answer; while an
 *    answer is still going out it reads nothing more (the runtime's 8 KiB
 *    receive bound closes the peer's window). A length prefix of 0 or over
 *    1024 resets the connection.
 *  - Rate limiting: a fixed table of RRL_BUCKETS buckets (24 KiB, rrl.h).
 */
#include "vireo/vireo.h"
#include "dnsmsg.h"
#include "rrl.h"
#include "vireo/byteorder.h"
#include "vireo/string.h"

#define DNS_ESP_NAME "zone.bin"
#define DNS_ESP_PATH "EFI/vireo/app/" DNS_ESP_NAME

#define DNS_UDP_QUERY_MAX 1024
#define DNS_TCP_CONNS 8
#define DNS_TCP_ANSWER_MAX 8192
#define DNS_TCP_QUERIES 100

VIREO_CONFIG_UINT(dns_port, "dns.port", 53, 1, 65535, "UDP and TCP port of the DNS server");
VIREO_CONFIG_BOOL(dns_rrl_on, "dns.rrl", true, "rate-limit UDP answers per source prefix (reflection)");
VIREO_CONFIG_UINT(dns_rrl_rate, "dns.rrl.rate", 20, 1, 100000, "UDP answers per second to one IPv4 /24 or IPv6 /56");
VIREO_CONFIG_UINT(dns_rrl_slip, "dns.rrl.slip", 2, 0, 100,
		  "over the rate, every Nth answer goes out truncated (TC), the rest dropped; 0 drops all");
VIREO_CONFIG_UINT(dns_rrl_global, "dns.rrl.global", 0, 0, 4000000,
		  "UDP answers per second in all, whatever their source (0: no ceiling)");
VIREO_CONFIG_UINT(dns_tcp_idle_ms, "dns.tcp_idle_ms", 10000, 100, 600000, "a DNS TCP connection with no traffic closes");
VIREO_CONFIG_STR(dns_nsid, "dns.nsid", DNS_NSID_MAX + 1, "",
		 "NSID (RFC 5001) sent to clients that ask, and id.server's text; empty: no NSID");
VIREO_CONFIG_BOOL(dns_cookies, "dns.cookies", false,
		  "DNS cookies (RFC 7873): a client with a good server cookie is not rate-limited");
VIREO_CONFIG_BOOL(dns_chaos, "dns.chaos", false,
		  "answer CHAOS TXT version.bind/version.server and id.server/hostname.bind (else REFUSED)");

VIREO_COUNTER_VEC(dns_queries, "dns_queries_total", "DNS queries answered or dropped, by transport.", "transport",
		  "udp", "tcp");
VIREO_COUNTER_VEC(dns_rcodes, "dns_responses_total", "DNS responses by RCODE.", "rcode", "noerror", "formerr",
		  "servfail", "nxdomain", "notimp", "refused", "badvers");
VIREO_COUNTER(dns_ignored, "dns_ignored_total", "Datagrams or messages not answered: shorter than a header, or responses.");
VIREO_COUNTER(dns_truncated, "dns_truncated_total", "Answers cut at a whole record with TC set (UDP size, or TCP's 8 KiB).");
VIREO_COUNTER_VEC(dns_rrl, "dns_rrl_total", "UDP answers by the rate limiter's verdict.", "verdict", "pass", "drop",
		  "slip");
VIREO_COUNTER(dns_tcp_bad, "dns_tcp_bad_length_total", "TCP connections reset for a length prefix of 0 or over 1024.");
VIREO_COUNTER(dns_send_fail, "dns_send_failed_total", "UDP answers the runtime could not send.");
VIREO_COUNTER_VEC(dns_cookie, "dns_cookies_total", "Queries with a DNS cookie: new (a client cookie only, or a server "
		  "cookie that did not check) or good.", "state", "new", "good");

struct dns_conn {
	struct dns_tcp_reader rd;
	u8 out[2 + DNS_TCP_ANSWER_MAX];
	u16 out_len, out_sent;
	u16 queries;
	bool closing;
};
_Static_assert(DNS_TCP_CONNS * (sizeof(struct dns_conn) + VIREO_ALLOC_OVERHEAD) + sizeof(struct rrl) +
		       DNS_UDP_MAX + 2 * VIREO_ALLOC_OVERHEAD <= VIREO_APP_MEM_DEFAULT / 4,
	       "apps/dns: the TCP blocks and the RRL table fit a quarter of app.mem's default");
_Static_assert(DNS_TCP_CONNS <= VIREO_TCP_CONNS_MAX, "apps/dns: more connections than a service may have");

/* Every live connection's block by handle id: on_close gets a handle that is
 * already stale (vireo_tcp_ctx() is NULL then), so the block is found here
 * to be freed. DNS_TCP_CONNS slots, as many as the service's max_conns. */
static struct {
	u32 id;
	struct dns_conn *d;
} dns_conns[DNS_TCP_CONNS];

/* From the app's memory at init, not .bss (a TLS=1 image's .bss is nearly
 * at its 64 KiB cap): the rate limiter's table and the one UDP answer. */
static struct rrl *dns_rrl_table;
static u8 *dns_udp_out;
static vireo_udp dns_udp_sock;
static struct dns_zone dns_zone_cur;
static struct dns_server dns_srv = { .zone = &dns_zone_cur, .version = "vireo" };

static void dns_peer_of(const struct vireo_addr *a, struct dns_peer *p)
{
	p->addr = a->ip;
	p->alen = a->family == VIREO_AF_INET ? 4 : 16;
	p->now_s = (u32)(vireo_now_ms() / 1000);
}

static void dns_count(const struct dns_result *res, unsigned transport)
{
	static const u8 rc_index[17] = { 0, 1, 2, 3, 4, 5, [16] = 6 };

	vireo_counter_vec_add(&dns_queries, transport, 1);
	if (res->cookie != DNS_COOKIE_NONE)
		vireo_counter_vec_add(&dns_cookie, res->cookie == DNS_COOKIE_GOOD, 1);
	if (res->rcode <= 5 || res->rcode == DNS_RCODE_BADVERS)
		vireo_counter_vec_add(&dns_rcodes, rc_index[res->rcode], 1);
	if (res->truncated)
		vireo_counter_inc(&dns_truncated);
}

static void dns_udp_recv(vireo_udp u, const struct vireo_addr *src, const void *data, size_t len, void *arg)
{
	u8 *out = dns_udp_out;
	struct dns_result res;
	struct dns_peer peer;
	size_t n;

	dns_peer_of(src, &peer);
	n = dns_respond(&dns_srv, &peer, data, len, out, DNS_UDP_MAX, false, &res);
	if (n == 0) {
		vireo_counter_inc(&dns_ignored);
		return;
	}
	/* A good server cookie proves the source address: no reflection. */
	if (dns_rrl_table && res.cookie != DNS_COOKIE_GOOD) {
		enum rrl_verdict v = rrl_check(dns_rrl_table, src->ip, src->family == VIREO_AF_INET ? 4 : 16,
					       vireo_now_ms() * 1000000ULL);

		vireo_counter_vec_add(&dns_rrl, (u32)v, 1);
		if (v == RRL_DROP)
			return;
		if (v == RRL_SLIP) {
			n = dns_slip(out, n, &res);
			if (n == 0)
				return;
			res.truncated = true;
		}
	}
	dns_count(&res, 0);
	if (vireo_udp_send(u, src, out, n) < 0)
		vireo_counter_inc(&dns_send_fail);
}

/* ---- TCP ---- */

static void dns_tcp_accept(vireo_tcp c, void *arg)
{
	struct dns_conn *d;
	unsigned i;

	for (i = 0; i < DNS_TCP_CONNS && dns_conns[i].d; i++)
		;
	d = i < DNS_TCP_CONNS ? vireo_alloc(sizeof *d) : NULL;
	if (!d) {	/* the runtime keeps to max_conns, so only when app.mem is short */
		vireo_tcp_abort(c);
		return;
	}
	dns_conns[i].id = c.id;
	dns_conns[i].d = d;
	vireo_tcp_set_ctx(c, d);
}

/* Sends what is left of the answer; true when none is. */
static bool dns_tcp_flush(vireo_tcp c, struct dns_conn *d)
{
	while (d->out_sent < d->out_len) {
		int r = vireo_tcp_send(c, d->out + d->out_sent, d->out_len - d->out_sent);

		if (r <= 0)
			return false;
		d->out_sent = (u16)(d->out_sent + r);
	}
	return true;
}

static size_t dns_tcp_recv(vireo_tcp c, const void *data, size_t len, void *arg)
{
	struct dns_conn *d = vireo_tcp_ctx(c);
	const u8 *p = data;
	size_t used = 0;

	if (!d)
		return len;
	while (used < len) {
		struct dns_result res;
		struct dns_peer peer = { 0 };
		struct vireo_addr a;
		size_t m, n;
		long took;

		if (d->out_sent < d->out_len)
			break;	/* the answer before is still going out: read no more */
		if (d->closing) {
			used = len;	/* past the per-connection bound: discarded */
			break;
		}
		took = dns_tcp_feed(&d->rd, p + used, len - used, &m);
		if (took < 0) {
			vireo_counter_inc(&dns_tcp_bad);
			vireo_tcp_abort(c);
			return len;
		}
		used += (size_t)took;
		if (!m)
			continue;
		if (vireo_tcp_peer(c, &a) == 0)
			dns_peer_of(&a, &peer);
		n = dns_respond(&dns_srv, &peer, d->rd.buf + 2, m, d->out + 2, DNS_TCP_ANSWER_MAX, true, &res);
		dns_tcp_next(&d->rd);
		if (n) {
			dns_count(&res, 1);
			put_be16(d->out, (u16)n);
			d->out_len = (u16)(n + 2);
			d->out_sent = 0;
			dns_tcp_flush(c, d);
		} else {
			vireo_counter_inc(&dns_ignored);
		}
		if (++d->queries >= DNS_TCP_QUERIES)
			d->closing = true;
	}
	if (d->closing && d->out_sent == d->out_len)
		vireo_tcp_close(c);
	return used;
}

static void dns_tcp_writable(vireo_tcp c, void *arg)
{
	struct dns_conn *d = vireo_tcp_ctx(c);

	if (!d || !dns_tcp_flush(c, d))
		return;
	if (d->closing)
		vireo_tcp_close(c);
	else
		vireo_tcp_recv_again(c);
}

static void dns_tcp_eof(vireo_tcp c, void *arg)
{
	struct dns_conn *d = vireo_tcp_ctx(c);

	if (d && d->out_sent < d->out_len)
		d->closing = true;	/* close once the answer is out */
	else
		vireo_tcp_close(c);
}

static void dns_tcp_closed(vireo_tcp c, void *arg)
{
	for (unsigned i = 0; i < DNS_TCP_CONNS; i++) {
		if (dns_conns[i].d && dns_conns[i].id == c.id) {
			vireo_free(dns_conns[i].d);
			dns_conns[i].d = NULL;
			return;
		}
	}
}

/* The apex as text, for the boot line. */
static void dns_apex_text(char *buf, size_t size)
{
	const u8 *n = dns_zone_cur.apex_name;
	size_t o = 0;

	for (size_t i = 0; n[i] && o + n[i] + 2 < size; i += n[i] + 1u) {
		memcpy(buf + o, n + i + 1, n[i]);
		o += n[i];
		buf[o++] = '.';
	}
	buf[o] = 0;
}

/* The built-in zone, then the ESP's when there is one and it checks out;
 * a bad one is one warning and the built-in zone stays. */
static int dns_load_zone(void)
{
	const void *img;
	size_t len;
	char err[120];
	struct dns_zone esp;
	int rc;

	if (dns_zone_open(&dns_zone_cur, dns_zone_builtin, dns_zone_builtin_len, err, sizeof err)) {
		vireo_warn("dns: the built-in zone: %s", err);	/* mkzone.py wrote it: not reached */
		return -EINVAL;
	}
	rc = vireo_esp_file(DNS_ESP_NAME, &img, &len);
	if (rc == -ENOENT) {
		vireo_log("dns: built-in zone, serial %u", (unsigned)dns_zone_cur.serial);
		return 0;
	}
	if (rc == -EOVERFLOW)
		vireo_warn("dns: " DNS_ESP_PATH ": EFI/vireo/app/ holds over 8 MiB or 256 files, refused; serving the built-in zone (serial %u)",
			   (unsigned)dns_zone_cur.serial);
	else if (rc)
		vireo_warn("dns: " DNS_ESP_PATH ": could not be read; serving the built-in zone (serial %u)",
			   (unsigned)dns_zone_cur.serial);
	else if (dns_zone_open(&esp, img, len, err, sizeof err))
		vireo_warn("dns: " DNS_ESP_PATH ": %s; serving the built-in zone (serial %u)", err,
			   (unsigned)dns_zone_cur.serial);
	else {
		dns_zone_cur = esp;
		vireo_log("dns: zone from the ESP (" DNS_ESP_PATH ", %u bytes), serial %u", (unsigned)len,
			  (unsigned)esp.serial);
	}
	return 0;
}

static int dns_init(void)
{
	struct vireo_udp_service us = {
		.name = "dns",
		.port = (u16)dns_port,
		.max_datagram = DNS_UDP_QUERY_MAX,
		.on_recv = dns_udp_recv,
	};
	struct vireo_tcp_service ts = {
		.name = "dns",
		.port = (u16)dns_port,
		.max_conns = DNS_TCP_CONNS,
		.idle_timeout_ms = (u32)dns_tcp_idle_ms,
		.on_accept = dns_tcp_accept,
		.on_recv = dns_tcp_recv,
		.on_eof = dns_tcp_eof,
		.on_writable = dns_tcp_writable,
		.on_close = dns_tcp_closed,
	};
	char apex[256];
	int rc;

	rc = dns_load_zone();
	if (rc)
		return rc;
	dns_srv.nsid = (const u8 *)dns_nsid;
	dns_srv.nsid_len = (u16)strnlen(dns_nsid, DNS_NSID_MAX);
	dns_srv.id = dns_nsid[0] ? dns_nsid : "vireo";
	dns_srv.chaos = dns_chaos;
	dns_srv.cookies = dns_cookies;
	if (dns_cookies) {
		u8 secret[16];

		vireo_random(secret, sizeof secret);	/* the kernel's CSPRNG */
		siphash_key_from_bytes(&dns_srv.cookie_key, secret);
		memset(secret, 0, sizeof secret);
	}
	dns_udp_out = vireo_alloc(DNS_UDP_MAX);
	if (!dns_udp_out)
		return -ENOMEM;
	if (dns_rrl_on) {
		u8 key[16];

		dns_rrl_table = vireo_alloc(sizeof *dns_rrl_table);
		if (!dns_rrl_table)
			return -ENOMEM;
		vireo_random(key, sizeof key);	/* the kernel's CSPRNG */
		rrl_init(dns_rrl_table, key, (u32)dns_rrl_rate, (u32)dns_rrl_slip);
		rrl_set_global(dns_rrl_table, (u32)dns_rrl_global);
	}
	rc = vireo_udp_bind(&us, &dns_udp_sock);
	if (rc)
		return rc;
	rc = vireo_tcp_listen(&ts);
	if (rc)
		return rc;
	dns_apex_text(apex, sizeof apex);
	if (dns_rrl_on)
		vireo_log("dns: zone %s (%u records) on udp/tcp %u, rrl %u/s slip %u", apex,
			  (unsigned)dns_zone_cur.nrrs, (unsigned)dns_port, (unsigned)dns_rrl_rate,
			  (unsigned)dns_rrl_slip);
	else
		vireo_log("dns: zone %s (%u records) on udp/tcp %u, rrl off", apex, (unsigned)dns_zone_cur.nrrs,
			  (unsigned)dns_port);
	if (dns_rrl_on && dns_rrl_global)
		vireo_log("dns: at most %u UDP answers a second in all (dns.rrl.global)", (unsigned)dns_rrl_global);
	if (dns_srv.nsid_len || dns_cookies || dns_chaos)
		vireo_log("dns: nsid %s, cookies %s, chaos %s", dns_srv.nsid_len ? dns_nsid : "off",
			  dns_cookies ? "on" : "off", dns_chaos ? "on" : "off");
	return 0;
}

VIREO_APP(dns, .name = "dns", .init = dns_init, .help = "authoritative DNS for one zone baked in at build time");
