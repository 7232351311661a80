/* apps/proxy/pxhead.c: proxy.upstream= lists and their refusals,
 * hop-by-hop fields (RFC 9110 7.6.1) and those Connection names, the
 * request target re-encoded from the decoded path, the choice of an
 * upstream (round-robin, least-connections, ejected and tried ones),
 * latency buckets and quantiles, the Forwarded element (RFC 7239),
 * configuration durations, rise and fall of health checks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apps/proxy/pxhead.h"

static void test_upstreams(void **state)
{
	struct px_upstream_addr a[PX_UPSTREAMS_MAX];
	char long_host[300];

	(void)state;
	assert_int_equal(px_parse_upstreams("10.0.0.1:80", a, PX_UPSTREAMS_MAX), 1);
	assert_string_equal(a[0].host, "10.0.0.1");
	assert_int_equal(a[0].port, 80);
	assert_int_equal(px_parse_upstreams("api.example.com:8080,[fd00::1]:81,b:65535", a, PX_UPSTREAMS_MAX), 3);
	assert_string_equal(a[0].host, "api.example.com");
	assert_int_equal(a[0].port, 8080);
	assert_string_equal(a[1].host, "fd00::1");
	assert_int_equal(a[1].port, 81);
	assert_string_equal(a[2].host, "b");
	assert_int_equal(a[2].port, 65535);
	/* refusals */
	assert_int_equal(px_parse_upstreams("", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:1,", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams(",a:1", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams(":80", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:0", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:65536", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:99999999999999999999", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:8x", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a b:80", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a/b:80", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("fd00::1:80", a, PX_UPSTREAMS_MAX), -EINVAL);	/* v6 needs brackets */
	assert_int_equal(px_parse_upstreams("[fd00::1]80", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("[]:80", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("a:1,b:2,c:3,d:4,e:5", a, PX_UPSTREAMS_MAX), -E2BIG);
	memset(long_host, 'h', 254);
	strcpy(long_host + 254, ":80");
	assert_int_equal(px_parse_upstreams(long_host, a, PX_UPSTREAMS_MAX), -EINVAL);
	strcpy(long_host + 253, ":80");
	assert_int_equal(px_parse_upstreams(long_host, a, PX_UPSTREAMS_MAX), 1);
	assert_int_equal(strlen(a[0].host), 253);
}

/* https:// upstreams (a TLS=1 image): the scheme, its default port */
static void test_upstream_schemes(void **state)
{
	struct px_upstream_addr a[PX_UPSTREAMS_MAX];

	(void)state;
	assert_int_equal(px_parse_upstreams("https://api.example.com:8443,http://b:81,c:82", a, PX_UPSTREAMS_MAX), 3);
	assert_string_equal(a[0].host, "api.example.com");
	assert_int_equal(a[0].port, 8443);
	assert_true(a[0].tls);
	assert_string_equal(a[1].host, "b");
	assert_int_equal(a[1].port, 81);
	assert_false(a[1].tls);
	assert_false(a[2].tls);
	/* a scheme's default port */
	assert_int_equal(px_parse_upstreams("https://a.test,http://b.test,https://[fd00::1]", a, PX_UPSTREAMS_MAX), 3);
	assert_int_equal(a[0].port, 443);
	assert_true(a[0].tls);
	assert_int_equal(a[1].port, 80);
	assert_false(a[1].tls);
	assert_string_equal(a[2].host, "fd00::1");
	assert_int_equal(a[2].port, 443);
	assert_true(a[2].tls);
	/* refusals: other schemes, case, a path, a user, a scheme alone */
	assert_int_equal(px_parse_upstreams("ftp://a:21", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("HTTPS://a:443", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://a:443/", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://u@a:443", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://:443", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://a:", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://fd00::1", a, PX_UPSTREAMS_MAX), -EINVAL);
	assert_int_equal(px_parse_upstreams("https://a:443,", a, PX_UPSTREAMS_MAX), -EINVAL);
}

#define HOP(lit, conn) px_hop_by_hop(lit, sizeof(lit) - 1, conn)

static void test_target_raw(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(px_target_raw("/a%2Fb/c%20d", "x=%2F", out, sizeof out), 18);
	assert_string_equal(out, "/a%2Fb/c%20d?x=%2F");
	assert_int_equal(px_target_raw("/a b", "", out, sizeof out), 6);
	assert_string_equal(out, "/a%20b");
	assert_int_equal(px_target_raw("/abcdef", "", out, 7), 0);
	/* the decoded path loses it: the reason for the raw one */
	px_target("/a/b", "", out, sizeof out);
	assert_string_equal(out, "/a/b");
}

static void test_upgrade(void **state)
{
	(void)state;
	assert_true(px_upgrade("Upgrade", "websocket"));
	assert_true(px_upgrade("keep-alive, UPGRADE", "websocket"));
	assert_true(px_upgrade("upgrade", "h2c, websocket/13"));
	assert_false(px_upgrade(NULL, "websocket"));
	assert_false(px_upgrade("keep-alive", "websocket"));
	assert_false(px_upgrade("upgrades", "websocket"));
	assert_false(px_upgrade("upgrade", NULL));
	assert_false(px_upgrade("upgrade", ""));
	assert_false(px_upgrade("upgrade", "web\x01socket"));
	assert_false(px_upgrade("upgrade", "web\"socket"));
}

static void test_hop_by_hop(void **state)
{
	(void)state;
	assert_true(HOP("Connection", NULL));
	assert_true(HOP("keep-alive", NULL));
	assert_true(HOP("TE", NULL));
	assert_true(HOP("Trailer", NULL));
	assert_true(HOP("Transfer-Encoding", NULL));
	assert_true(HOP("UPGRADE", NULL));
	assert_true(HOP("Proxy-Authorization", NULL));
	assert_true(HOP("proxy-connection", NULL));
	assert_false(HOP("Proxy", NULL));
	assert_false(HOP("Host", NULL));
	assert_false(HOP("Trailers", NULL));
	assert_false(HOP("Tea", NULL));
	assert_false(HOP("X-Secret", NULL));
	/* named by Connection, any case, with spaces and empty items */
	assert_true(HOP("X-Secret", "keep-alive, x-secret"));
	assert_true(HOP("x-secret", " ,X-Secret ,"));
	assert_true(HOP("X-A", "close,X-B,\tX-A\t"));
	assert_false(HOP("X-Secret", "x-secret2"));
	assert_false(HOP("X-Secret", "x-secre"));
	assert_false(HOP("X-Secret", ""));
	/* the name is a span: what follows it does not count */
	assert_true(px_hop_by_hop("TE: trailers", 2, NULL));
	assert_false(px_hop_by_hop("TEx", 3, NULL));
}

static void test_target(void **state)
{
	char out[32];

	(void)state;
	assert_int_equal(px_target("/", "", out, sizeof out), 1);
	assert_string_equal(out, "/");
	assert_int_equal(px_target("/a/b.html", "x=1&y=%20", out, sizeof out), 19);
	assert_string_equal(out, "/a/b.html?x=1&y=%20");
	/* decoded bytes outside pchar are encoded again: space, %, ?, #, high bytes */
	px_target("/a b%?#\xc3\xa9", "", out, sizeof out);
	assert_string_equal(out, "/a%20b%25%3F%23%C3%A9");
	px_target("/~a-b_c.d!$&'()*+,;=:@", NULL, out, sizeof out);
	assert_string_equal(out, "/~a-b_c.d!$&'()*+,;=:@");
	/* it fits exactly, or not at all */
	assert_int_equal(px_target("/0123456789012345678901234567890", "", out, sizeof out), 0);
	assert_int_equal(px_target("/012345678901234567890123456789", "", out, sizeof out), 31);
	assert_int_equal(px_target("/0123456789012345678901234567 ", "", out, sizeof out), 0);
	assert_int_equal(px_target("/0123456789", "0123456789012345678", out, sizeof out), 31);
	assert_int_equal(px_target("/0123456789", "01234567890123456789", out, sizeof out), 0);
}

static void test_choose(void **state)
{
	struct px_choice up[3] = { 0 };
	unsigned seen[3] = { 0 };
	u32 rr = 0;

	(void)state;
	for (int i = 0; i < 30; i++)
		seen[px_choose(up, 3, 1000, false, &rr)]++;
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[1], 10);
	assert_int_equal(seen[2], 10);
	/* an ejected one is skipped until its time */
	up[1].down_until = 2000;
	memset(seen, 0, sizeof seen);
	for (int i = 0; i < 20; i++)
		seen[px_choose(up, 3, 1000, false, &rr)]++;
	assert_int_equal(seen[1], 0);
	assert_int_equal(seen[0], 10);
	assert_int_equal(seen[2], 10);
	assert_int_not_equal(px_choose(up, 3, 2000, false, &rr), -1);
	/* least connections, ties in turn */
	up[1].down_until = 0;
	up[0].active = 5;
	up[1].active = 2;
	up[2].active = 3;
	assert_int_equal(px_choose(up, 3, 1000, true, &rr), 1);
	up[2].active = 2;
	rr = 2;
	assert_int_equal(px_choose(up, 3, 1000, true, &rr), 2);
	assert_int_equal(px_choose(up, 3, 1000, true, &rr), 1);
	/* tried ones never again; all ejected: the one back soonest */
	up[1].tried = true;
	assert_int_equal(px_choose(up, 3, 1000, true, &rr), 2);
	up[0].down_until = 5000;
	up[2].down_until = 3000;
	assert_int_equal(px_choose(up, 3, 1000, false, &rr), 2);
	up[2].tried = true;
	assert_int_equal(px_choose(up, 3, 1000, false, &rr), 0);
	up[0].tried = true;
	assert_int_equal(px_choose(up, 3, 1000, false, &rr), -1);
	assert_int_equal(px_choose(up, 0, 1000, false, &rr), -1);
}

static void test_latency(void **state)
{
	u64 c[PX_LAT_BUCKETS] = { 0 };

	(void)state;
	assert_int_equal(px_lat_bucket(0), 0);
	assert_int_equal(px_lat_bucket(1), 0);
	assert_int_equal(px_lat_bucket(2), 1);
	assert_int_equal(px_lat_bucket(3), 2);
	assert_int_equal(px_lat_bucket(5000), PX_LAT_BUCKETS - 2);
	assert_int_equal(px_lat_bucket(UINT64_MAX), PX_LAT_BUCKETS - 1);
	assert_int_equal(px_lat_quantile(c, 500), 0);
	c[px_lat_bucket(1)] = 98;
	c[px_lat_bucket(40)] = 1;
	c[px_lat_bucket(900)] = 1;
	assert_int_equal(px_lat_quantile(c, 500), 1);
	assert_int_equal(px_lat_quantile(c, 980), 1);
	assert_int_equal(px_lat_quantile(c, 990), 50);
	assert_int_equal(px_lat_quantile(c, 1000), 1000);
	c[0] = 0;
	assert_int_equal(px_lat_quantile(c, 500), 50);
}

static void test_forwarded(void **state)
{
	char out[64];

	(void)state;
	assert_int_equal(px_forwarded("192.0.2.43", false, "example.com", out, sizeof out), 42);
	assert_string_equal(out, "for=192.0.2.43;proto=http;host=example.com");
	/* RFC 7239 section 6: IPv6 quoted and bracketed */
	px_forwarded("2001:db8:cafe::17", true, NULL, out, sizeof out);
	assert_string_equal(out, "for=\"[2001:db8:cafe::17]\";proto=https");
	px_forwarded(NULL, false, "", out, sizeof out);
	assert_string_equal(out, "for=unknown;proto=http");
	px_forwarded("10.0.0.1\"x", false, NULL, out, sizeof out);	/* not an address: never passed on */
	assert_string_equal(out, "for=unknown;proto=http");
	px_forwarded("::1\r\n", false, NULL, out, sizeof out);
	assert_string_equal(out, "for=unknown;proto=http");
	/* a host that is not a token is a quoted-string, its '"' and '\\' escaped */
	px_forwarded("10.0.0.1", false, "example.com:8080", out, sizeof out);
	assert_string_equal(out, "for=10.0.0.1;proto=http;host=\"example.com:8080\"");
	px_forwarded("10.0.0.1", false, "[::1]:80", out, sizeof out);
	assert_string_equal(out, "for=10.0.0.1;proto=http;host=\"[::1]:80\"");
	px_forwarded("10.0.0.1", false, "a\"b\\c;d", out, sizeof out);
	assert_string_equal(out, "for=10.0.0.1;proto=http;host=\"a\\\"b\\\\c;d\"");
	/* a control byte: the host left out rather than passed on */
	px_forwarded("10.0.0.1", false, "a\rb", out, sizeof out);
	assert_string_equal(out, "for=10.0.0.1;proto=http");
	/* it fits, or 0 */
	assert_int_equal(px_forwarded("192.0.2.43", false, "example.com", out, 43), 42);
	assert_int_equal(px_forwarded("192.0.2.43", false, "example.com", out, 42), 0);
	assert_int_equal(px_forwarded("192.0.2.43", false, "example.com", out, 0), 0);
}

static void test_parse_ms(void **state)
{
	u64 ms = 7;

	(void)state;
	assert_int_equal(px_parse_ms("2000", 100, 3600000, &ms), 0);
	assert_int_equal(ms, 2000);
	assert_int_equal(px_parse_ms("250ms", 100, 3600000, &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(px_parse_ms("3s", 100, 3600000, &ms), 0);
	assert_int_equal(ms, 3000);
	assert_int_equal(px_parse_ms("3600s", 100, 3600000, &ms), 0);
	assert_int_equal(ms, 3600000);
	ms = 7;
	assert_int_equal(px_parse_ms("3601s", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("99ms", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("0s", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("s", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("-1", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("2m", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("2 s", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("2ss", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("2msx", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(px_parse_ms("99999999999999999999999s", 100, 3600000, &ms), -EINVAL);
	assert_int_equal(ms, 7);
}

static void test_health(void **state)
{
	struct px_health h = { 0 };

	(void)state;
	/* up: fall (3) failures in a row take it down; a pass restarts the count */
	assert_int_equal(px_health_step(&h, false, 2, 3), 0);
	assert_int_equal(px_health_step(&h, false, 2, 3), 0);
	assert_int_equal(px_health_step(&h, true, 2, 3), 0);
	assert_int_equal(px_health_step(&h, false, 2, 3), 0);
	assert_int_equal(px_health_step(&h, false, 2, 3), 0);
	assert_false(h.down);
	assert_int_equal(px_health_step(&h, false, 2, 3), -1);
	assert_true(h.down);
	/* down: more failures change nothing; rise (2) passes in a row bring it back */
	assert_int_equal(px_health_step(&h, false, 2, 3), 0);
	assert_int_equal(px_health_step(&h, true, 2, 3), 0);
	assert_int_equal(px_health_step(&h, false, 2, 3), 0);
	assert_int_equal(px_health_step(&h, true, 2, 3), 0);
	assert_true(h.down);
	assert_int_equal(px_health_step(&h, true, 2, 3), 1);
	assert_false(h.down);
	assert_int_equal(px_health_step(&h, true, 2, 3), 0);
	/* rise and fall of 1: every result that disagrees flips it */
	assert_int_equal(px_health_step(&h, false, 1, 1), -1);
	assert_int_equal(px_health_step(&h, false, 1, 1), 0);
	assert_int_equal(px_health_step(&h, true, 1, 1), 1);
	assert_int_equal(px_health_step(&h, true, 1, 1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_upstreams), cmocka_unit_test(test_upstream_schemes), cmocka_unit_test(test_hop_by_hop), cmocka_unit_test(test_upgrade), cmocka_unit_test(test_target_raw), cmocka_unit_test(test_target),
		cmocka_unit_test(test_choose),	  cmocka_unit_test(test_latency),
		cmocka_unit_test(test_forwarded), cmocka_unit_test(test_parse_ms), cmocka_unit_test(test_health),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
