/*
 * Name resolution for the keys that take a host name (ntp=): lwIP's DNS
 * client (core/dns.c) asking the dns= servers, or those a DHCP lease gave.
 * dns= wins over a lease: its servers are set again before every query.
 * The apps' resolver (runtime/resolve.c) asks the dns= servers first, then
 * the lease's (resolv_servers_list()).
 */
#include "kernel/cmdline.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "lwip/dns.h"
#include "lwip/ip_addr.h"
#include "net/clients/resolv.h"

static u32 resolv_servers[2];	/* host order; 0: none */

static int resolv_parse(const char *val, void *dst, char *why, size_t why_len)
{
	u32 a[2] = { 0, 0 };
	char one[16];
	int n = 0;

	(void)dst;
	while (*val && n < 2) {
		size_t i = 0;

		while (val[i] && val[i] != ',' && i < sizeof one - 1) {
			one[i] = val[i];
			i++;
		}
		one[i] = '\0';
		if ((val[i] && val[i] != ',') || cmdline_parse_ipv4(one, &a[n], NULL) < 0 || !a[n])
			goto bad;
		n++;
		val += i;
		if (*val == ',' && *++val == '\0')
			goto bad;
	}
	if (*val || n == 0)
		goto bad;
	resolv_servers[0] = a[0];
	resolv_servers[1] = a[1];
	return 0;
bad:
	ksnprintf(why, why_len, "want one or two A.B.C.D, comma-separated");
	return -EINVAL;
}
CMDLINE_PARAM(dns, .key = "dns", .type = CMDLINE_CUSTOM, .parse = resolv_parse, .def = "DHCP's", .values =
	      "A.B.C.D[,A.B.C.D]", .help = "DNS servers for host names: ntp='s (instead of a DHCP lease's), apps' lookups (before a lease's)");

bool resolv_is_name(const char *s)
{
	size_t n = strlen(s);
	bool letter = false;

	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			letter = true;
		else if (!((c >= '0' && c <= '9') || c == '-' || (c == '.' && s[i + 1] != '.')))
			return false;
	}
	return letter;
}

unsigned resolv_servers_list(ip_addr_t *out, unsigned max)
{
	unsigned n = 0;

	for (u8 i = 0; i < 2 && n < max; i++)
		if (resolv_servers[i]) {
			ip_addr_set_ip4_u32_val(out[n], lwip_htonl(resolv_servers[i]));
			n++;
		}
	for (u8 i = 0; i < DNS_MAX_SERVERS && n < max; i++) {
		const ip_addr_t *a = dns_getserver(i);
		bool dup = ip_addr_isany(a);

		for (unsigned j = 0; j < n && !dup; j++)
			dup = ip_addr_eq(&out[j], a);
		if (!dup) {
			ip_addr_copy(out[n], *a);
			n++;
		}
	}
	return n;
}

int resolv_lookup(const char *name, ip_addr_t *addr, void (*found)(const char *name, const ip_addr_t *a, void *arg))
{
	for (u8 i = 0; i < 2; i++) {
		if (resolv_servers[i]) {
			ip_addr_t s;

			ip_addr_set_ip4_u32_val(s, lwip_htonl(resolv_servers[i]));
			dns_setserver(i, &s);
		}
	}
	switch (dns_gethostbyname_addrtype(name, addr, found, NULL, LWIP_DNS_ADDRTYPE_IPV4)) {
	case ERR_OK:
		return 0;
	case ERR_INPROGRESS:
		return -EBUSY;
	default:
		return -EIO;
	}
}
