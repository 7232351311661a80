/* The PROXY protocol's two header forms (runtime/http/proxyproto.h), as
 * HAProxy's specification (proxy-protocol.txt) defines them. */
#include "lib/types.h"
#include "lib/parse.h"
#include "kernel/cmdline.h"
#include "runtime/http/allow.h"
#include "runtime/http/proxyproto.h"

#define PP1_MAX 107	/* "PROXY TCP6 " + 2 x 39 + 2 x 5 + 3 spaces + CRLF */

static const u8 pp2_sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

/* Up to the next ' ' (or the end) of s, into tok[size]: the token's length,
 * or -1 if it is empty or too long. */
static int pp_token(const char *s, char *tok, size_t size)
{
	size_t i;

	for (i = 0; s[i] && s[i] != ' '; i++) {
		if (i + 1 >= size)
			return -1;
		tok[i] = s[i];
	}
	tok[i] = '\0';
	return i ? (int)i : -1;
}

static bool pp1_addr(const char *tok, u8 family, u8 a[16])
{
	u32 v4;

	if (family == 4) {
		if (cmdline_parse_ipv4(tok, &v4, NULL))
			return false;
		allow_addr_v4(a, v4);
		return true;
	}
	return allow_parse_v6(tok, a);
}

static bool pp1_port(const char *tok, u16 *port)
{
	const char *p = tok;
	u64 v;

	if ((tok[0] == '0' && tok[1]) || parse_dec(&p, 65535, &v) || *p)
		return false;
	*port = (u16)v;
	return true;
}

static int pp1_parse(const u8 *b, size_t n, struct proxyproto_hdr *h)
{
	char line[PP1_MAX + 1], tok[48];
	size_t len = 0;
	const char *s;
	int t;

	for (; len < n && len < PP1_MAX && b[len] != '\r'; len++)
		if (b[len] < 0x20 || b[len] > 0x7e)
			return -EINVAL;	/* a bare LF, a control byte: not this */
	if (len == PP1_MAX || (len < n && len + 1 == n))	/* no CR in reach; CR last */
		return len == PP1_MAX ? -EINVAL : 0;
	if (len == n)
		return 0;
	if (b[len + 1] != '\n')
		return -EINVAL;
	__builtin_memcpy(line, b, len);
	line[len] = '\0';
	s = line + 6;	/* after "PROXY " */
	__builtin_memset(h, 0, sizeof *h);
	if ((t = pp_token(s, tok, sizeof tok)) < 0)
		return -EINVAL;
	if (!__builtin_strcmp(tok, "UNKNOWN"))
		return (int)len + 2;	/* the rest is to be ignored */
	if (!__builtin_strcmp(tok, "TCP4"))
		h->family = 4;
	else if (!__builtin_strcmp(tok, "TCP6"))
		h->family = 6;
	else
		return -EINVAL;
	s += t;
	for (int field = 0; field < 4; field++) {
		if (*s++ != ' ' || (t = pp_token(s, tok, sizeof tok)) < 0)
			return -EINVAL;
		if (field == 0 ? !pp1_addr(tok, h->family, h->src)
		    : field == 1 ? !pp1_addr(tok, h->family, h->dst)
		    : !pp1_port(tok, field == 2 ? &h->sport : &h->dport))
			return -EINVAL;
		s += t;
	}
	return *s ? -EINVAL : (int)len + 2;
}

static int pp2_parse(const u8 *b, size_t n, struct proxyproto_hdr *h)
{
	size_t len, need;

	if (n < 16)
		return 0;
	if ((b[12] & 0xf0) != 0x20 || (b[12] & 0x0f) > 1)
		return -EINVAL;	/* version 2; LOCAL (0) or PROXY (1) */
	len = (size_t)b[14] << 8 | b[15];
	if (16 + len > PROXYPROTO_MAX)
		return -E2BIG;
	if (n < 16 + len)
		return 0;
	__builtin_memset(h, 0, sizeof *h);
	if ((b[12] & 0x0f) == 0)
		return (int)(16 + len);	/* LOCAL: the proxy's own connection */
	switch (b[13]) {
	case 0x11:	/* TCP over IPv4 */
		need = 12;
		if (len < need)
			return -EINVAL;
		h->family = 4;
		allow_addr_v4(h->src, (u32)b[16] << 24 | (u32)b[17] << 16 | (u32)b[18] << 8 | b[19]);
		allow_addr_v4(h->dst, (u32)b[20] << 24 | (u32)b[21] << 16 | (u32)b[22] << 8 | b[23]);
		h->sport = (u16)(b[24] << 8 | b[25]);
		h->dport = (u16)(b[26] << 8 | b[27]);
		break;
	case 0x21:	/* TCP over IPv6 */
		need = 36;
		if (len < need)
			return -EINVAL;
		h->family = 6;
		__builtin_memcpy(h->src, b + 16, 16);
		__builtin_memcpy(h->dst, b + 32, 16);
		h->sport = (u16)(b[48] << 8 | b[49]);
		h->dport = (u16)(b[50] << 8 | b[51]);
		break;
	case 0x00:	/* UNSPEC: the connection's own addresses */
		break;
	default:
		return -EINVAL;	/* UDP, UNIX: not what vireo serves */
	}
	return (int)(16 + len);
}

int proxyproto_parse(const u8 *b, size_t n, struct proxyproto_hdr *h)
{
	static const char v1[6] = "PROXY ";
	size_t i;

	if (n && b[0] == pp2_sig[0]) {
		for (i = 0; i < n && i < sizeof pp2_sig; i++)
			if (b[i] != pp2_sig[i])
				return -EINVAL;
		return i < sizeof pp2_sig ? 0 : pp2_parse(b, n, h);
	}
	for (i = 0; i < n && i < sizeof v1; i++)
		if (b[i] != (u8)v1[i])
			return -EINVAL;
	return i < sizeof v1 ? 0 : pp1_parse(b, n, h);
}

bool proxyproto_absent(const u8 *b, size_t n)
{
	static const char v1[6] = "PROXY ";
	size_t i;

	for (i = 0; i < n && i < sizeof pp2_sig && b[i] == pp2_sig[i]; i++)
		;
	if (i == n || i == sizeof pp2_sig)
		return false;
	for (i = 0; i < n && i < sizeof v1 && b[i] == (u8)v1[i]; i++)
		;
	return i < n && i < sizeof v1;
}

/* One X-Forwarded-For element s[0..len), spaces around it dropped: an
 * IPv4 dotted quad or an IPv6 address (no brackets, no port) into a[16]. */
static bool xff_addr(const char *s, size_t len, u8 a[16])
{
	char buf[46];	/* INET6_ADDRSTRLEN */
	bool v6 = false;
	u32 v4;

	while (len && (*s == ' ' || *s == '\t'))
		s++, len--;
	while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof buf)
		return false;
	for (size_t i = 0; i < len; i++) {
		buf[i] = s[i];
		v6 |= s[i] == ':';
	}
	buf[len] = '\0';
	if (v6)
		return allow_parse_v6(buf, a);
	if (cmdline_parse_ipv4(buf, &v4, NULL))
		return false;
	allow_addr_v4(a, v4);
	return true;
}

unsigned proxyproto_xff_client(const struct allow_list *trusted, const u8 hop[16], const char *const vals[],
			       size_t n, u8 client[16])
{
	unsigned hops = 0;
	u8 a[16];

	for (size_t k = 0; k < 16; k++)
		client[k] = hop[k];
	for (size_t i = n; i-- > 0;) {
		const char *v = vals[i];
		size_t end = 0, start;

		while (v[end])
			end++;
		for (;;) {
			if (!trusted->n || !allow_match(trusted, client))
				return hops;	/* the first untrusted address from the right */
			for (start = end; start && v[start - 1] != ','; start--)
				;
			if (!xff_addr(v + start, end - start, a))
				return hops;	/* garbled: the last trusted hop stands */
			for (size_t k = 0; k < 16; k++)
				client[k] = a[k];
			hops++;
			if (!start)
				break;
			end = start - 1;
		}
	}
	return hops;
}
