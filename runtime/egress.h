/* The egress policy (runtime/egress.c): where an app's outbound connection
 * may go. Addresses that name the appliance itself, its link or a private
 * network are refused unless the egress.allow= key lists them, so an app
 * that connects where a request tells it (a proxy, a webhook relay) cannot
 * be turned against the metadata service (169.254.169.254), the host or the
 * operator's private network. Addresses are compared as IPv6, an IPv4 one in
 * its mapped form ::ffff:a.b.c.d, as runtime/http/allow.h does. */
#ifndef VIREO_RUNTIME_EGRESS_H
#define VIREO_RUNTIME_EGRESS_H

#include "lib/types.h"
#include "runtime/http/allow.h"

/* The refused ranges, by kind (the reason a log line names). */
enum egress_kind {
	EGRESS_OK,
	EGRESS_UNSPECIFIED,	/* 0.0.0.0/8, ::/128 */
	EGRESS_LOOPBACK,	/* 127.0.0.0/8, ::1/128 */
	EGRESS_LINK_LOCAL,	/* 169.254.0.0/16, fe80::/10 */
	EGRESS_PRIVATE,		/* 10/8, 172.16/12, 192.168/16, fc00::/7 */
	EGRESS_MULTICAST,	/* 224.0.0.0/4, ff00::/8 */
	EGRESS_BROADCAST,	/* 240.0.0.0/4: reserved, with 255.255.255.255 */
};

/* What the kind is called in a log line. */
const char *egress_kind_name(enum egress_kind k);

/* The kind of refused range the 16-byte address a lies in, EGRESS_OK when
 * none does or egress_allow lists it. */
enum egress_kind egress_check(const u8 a[16]);

/* egress.allow=: prefixes let through although refused by default (empty,
 * the default: none). */
extern struct allow_list egress_allow;

#endif
