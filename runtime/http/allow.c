/*
 * Address allow-lists (allow.h) and the metrics.allow= key. Pure: the
 * parser and the match touch nothing but their arguments (host tests in
 * tests/host/runtime/http/test_allow.c). Cold: parsed once at boot,
 * matched only on /metrics.
 *
 * A bad list is refused whole, with a boot warning naming the bad prefix,
 * and the key keeps its default (::/0, everyone, as before the key
 * existed): an operator who typed a list means to restrict, but a list the
 * appliance half understood would close or open it in ways nobody wrote.
 */
#include "runtime/http/allow.h"
#include "kernel/cmdline.h"
#include "lib/fmt.h"
#include "lib/parse.h"

struct allow_list metrics_allow;	/* n == 0: the default, everyone */

CMDLINE_PARAM(metrics_allow, .key = "metrics.allow", .type = CMDLINE_CUSTOM, .dst = &metrics_allow,
	      .parse = allow_parse, .def = "::/0",
	      .values = "comma-separated CIDR prefixes",
	      .help = "who may read /metrics (others: 403)");

struct allow_list proxy_trusted;	/* n == 0: the default, nobody */

CMDLINE_PARAM(proxy_trusted, .key = "proxy.trusted", .type = CMDLINE_CUSTOM, .dst = &proxy_trusted,
	      .parse = allow_parse, .def = "none",
	      .values = "comma-separated CIDR prefixes",
	      .help = "load balancers and proxies whose PROXY header (v1 or v2; on HTTPS before the TLS handshake) or X-Forwarded-For names the client");

/* An IPv6 address, the whole of s (RFC 4291 2.2: groups of 1-4 hex digits,
 * one "::" standing for one or more zero groups, a dotted quad as the last
 * 32 bits). No zone (%). */
__cold bool allow_parse_v6(const char *s, u8 out[16])
{
	u16 g[8];
	int n = 0, gap = -1;

	if (s[0] == ':' && s[1] == ':') {
		gap = 0;
		s += 2;
	} else if (*s == ':') {
		return false;
	}
	while (*s) {
		const char *q = s;
		unsigned v = 0, d = 0;
		u32 a;

		for (; parse_hexdigit(*q) >= 0 && d < 5; q++, d++)
			v = v << 4 | (unsigned)parse_hexdigit(*q);
		if (*q == '.') {
			if (n > 6 || cmdline_parse_ipv4(s, &a, NULL))
				return false;
			g[n++] = (u16)(a >> 16);
			g[n++] = (u16)a;
			break;
		}
		if (!d || d > 4 || n == 8)
			return false;
		g[n++] = (u16)v;
		s = q;
		if (!*s)
			break;
		if (*s++ != ':' || !*s)
			return false;	/* not a separator, or a single trailing ':' */
		if (*s == ':') {
			if (gap >= 0)
				return false;
			gap = n;
			s++;
		}
	}
	if (gap < 0 ? n != 8 : n == 8)
		return false;
	__builtin_memset(out, 0, 16);
	for (int i = 0; i < n; i++) {
		int at = gap >= 0 && i >= gap ? 8 - (n - i) : i;

		out[2 * at] = (u8)(g[i] >> 8);
		out[2 * at + 1] = (u8)g[i];
	}
	return true;
}

/* One prefix, the whole of s (cut at its '/' here): ADDR or ADDR/len, IPv4
 * when it has no ':'. NULL, or why it is bad. */
__cold static const char *allow_prefix(char *s, u8 a[16], u8 *len)
{
	char *slash = s;
	u64 n = 128;
	u32 v4;
	int pfx;
	bool v6 = false;

	for (; *slash && *slash != '/'; slash++)
		v6 |= *slash == ':';
	if (!v6) {
		if (cmdline_parse_ipv4(s, &v4, &pfx))
			return "bad IPv4 prefix";
		allow_addr_v4(a, v4);
		n = pfx < 0 ? 128 : 96 + (unsigned)pfx;
	} else {
		if (*slash) {
			const char *p = slash + 1;

			if (parse_dec(&p, 128, &n) || *p || (p - slash > 2 && slash[1] == '0'))
				return "bad length";
			*slash = '\0';
		}
		if (!allow_parse_v6(s, a))
			return "bad IPv6 prefix";
	}
	for (unsigned b = (unsigned)n; b < 128; b++)
		if (a[b / 8] & (0x80 >> (b % 8)))
			return "host bits set";
	*len = (u8)n;
	return NULL;
}

__cold int allow_parse(const char *s, void *out, char *why, size_t why_len)
{
	struct allow_list l;
	const char *e;

	l.n = 0;
	do {
		char one[52];	/* the longest, "ffff:(x6)255.255.255.255/128", is 49 */
		const char *bad = "too long";
		size_t k;

		for (e = s; *e && *e != ','; e++)
			;
		k = (size_t)(e - s);
		_Static_assert(ALLOW_MAX == 8, "the message below");
		if (l.n == ALLOW_MAX) {
			bad = "over 8 prefixes";
		} else if (k < sizeof one) {
			__builtin_memcpy(one, s, k);
			one[k] = '\0';
			bad = !k ? "empty" : allow_prefix(one, l.p[l.n].a, &l.p[l.n].len);
		}
		if (bad) {
			ksnprintf(why, why_len, "'%.*s': %s", (int)MIN(k, 40), s, bad);
			return -EINVAL;
		}
		l.n++;
		s = e + 1;
	} while (*e);
	*(struct allow_list *)out = l;
	return 0;
}

__cold void allow_addr_v4(u8 a[16], u32 v4)
{
	__builtin_memset(a, 0, 10);
	a[10] = a[11] = 0xff;
	for (int i = 0; i < 4; i++)
		a[12 + i] = (u8)(v4 >> (24 - 8 * i));
}

__cold void allow_addr_ip(u8 a[16], const ip_addr_t *addr)
{
	if (IP_IS_V6(addr)) {
		__builtin_memcpy(a, ip_2_ip6(addr)->addr, 16);
		return;
	}
	allow_addr_v4(a, 0);
	__builtin_memcpy(a + 12, &ip_2_ip4(addr)->addr, 4);	/* network order already */
}

__cold void allow_addr_to_ip(ip_addr_t *addr, const u8 a[16])
{
	static const u8 mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!__builtin_memcmp(a, mapped, sizeof mapped)) {
		IP_ADDR4(addr, a[12], a[13], a[14], a[15]);
		return;
	}
	ip_addr_set_zero_ip6(addr);
	__builtin_memcpy(ip_2_ip6(addr)->addr, a, 16);	/* network order, as lwIP keeps it */
}

__cold bool allow_prefix_match(const u8 prefix[16], unsigned len, const u8 a[16])
{
	unsigned b = 0;

	while (b < len && !((a[b / 8] ^ prefix[b / 8]) & (0x80 >> (b % 8))))
		b++;
	return b == len;
}

__cold bool allow_match(const struct allow_list *l, const u8 a[16])
{
	if (!l->n)
		return true;
	for (unsigned i = 0; i < l->n; i++)
		if (allow_prefix_match(l->p[i].a, l->p[i].len, a))
			return true;
	return false;
}

__cold bool allow_match_ip(const struct allow_list *l, const ip_addr_t *addr)
{
	u8 a[16];

	allow_addr_ip(a, addr);
	return allow_match(l, a);
}
