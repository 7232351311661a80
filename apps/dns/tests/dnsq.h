/* dnsq: the question a DNS test sends, built by hand (apart from the
 * engine's own name writer, apps/dns/dnsmsg.c), shared by apps/dns's host
 * tests and its fuzzer. */
#ifndef VIREO_APPS_DNS_TESTS_DNSQ_H
#define VIREO_APPS_DNS_TESTS_DNSQ_H

#include <stddef.h>
#include <string.h>
#include "lib/types.h"

/* Writes name ("a.example", no trailing dot; "" for the root) to p as
 * uncompressed labels ending in the root's zero; returns the length
 * written. The caller keeps each label within 63 bytes and p large enough. */
static inline size_t dnsq_put_name(u8 *p, const char *name)
{
	size_t n = 0;

	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		p[n++] = (u8)l;
		memcpy(p + n, name, l);
		n += l;
		name += l + (dot ? 1 : 0);
	}
	p[n++] = 0;
	return n;
}

#endif
