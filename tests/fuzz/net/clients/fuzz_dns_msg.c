/* libFuzzer target for net/clients/dns_msg.c: arbitrary bytes as a DNS
 * server's response to a query for "www.example.com" (A or AAAA, by the
 * input's first byte). The input's own id is taken half the time, so the
 * checks behind the id are reached. Checks: no crash or over-read (an
 * exactly-sized copy), a refusal always has a printable reason, an accepted
 * answer is within its bounds (1..DNS_ADDRS_MAX addresses of the type's
 * length, a TTL no more than RFC 2181's maximum). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/clients/dns_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	u8 *copy = malloc(size ? size : 1);
	struct dns_answer a;
	const char *why = NULL;
	u16 id = size >= 2 && (data[size - 1] & 1) ? (u16)(data[0] << 8 | data[1]) : 0x1234;
	u16 qtype = size && (data[size - 1] & 2) ? DNS_TYPE_AAAA : DNS_TYPE_A;
	int r;

	memcpy(copy, data, size);
	r = dns_msg_parse(copy, size, id, "www.example.com", qtype, &a, &why);
	if (r == 0) {
		if (a.result == DNS_ANSWER && (a.n < 1 || a.n > DNS_ADDRS_MAX))
			abort();
		if (a.result != DNS_ANSWER && a.n)
			abort();
		if (a.alen != (qtype == DNS_TYPE_AAAA ? 16 : 4) || a.ttl > DNS_TTL_MAX)
			abort();
	} else {
		size_t n;

		if ((r != -EBADMSG && r != -EAGAIN) || !why)
			abort();
		n = strlen(why);
		if (n == 0 || n > 64)
			abort();
		for (size_t i = 0; i < n; i++)
			if ((u8)why[i] < 0x20 || (u8)why[i] >= 0x7f)
				abort();
	}
	free(copy);
	return 0;
}
