/* Names for the keys that take a host name (net/clients/resolv.c). */
#ifndef VIREO_NET_RESOLV_H
#define VIREO_NET_RESOLV_H

#include "lib/types.h"
#include "lwip/ip_addr.h"

/* Whether s looks like a host name: letters, digits, '-' and single dots,
 * a letter somewhere, not starting with '.' or '-', at most 253 bytes. */
bool resolv_is_name(const char *s);

/* Looks name up through lwIP's DNS client with the dns= servers (set again
 * before each query, so they win over a DHCP lease's): 0 with *addr set
 * (cached), -EBUSY while the query is out (found is called later, with
 * a NULL address if it failed), or -EIO. */
int resolv_lookup(const char *name, ip_addr_t *addr,
		  void (*found)(const char *name, const ip_addr_t *a, void *arg));

/* The servers for the apps' resolver into out[0..max): dns='s first, then
 * the other ones lwIP holds (a DHCP lease's); returns how many. */
unsigned resolv_servers_list(ip_addr_t *out, unsigned max);

#endif
