/* lwIP options for the host tests: vireo's own (net/port/lwipopts.h), with three
 * changes (the last two at the end). lwIP's heap and, through MEMP_MEM_MALLOC, its pools come from the
 * C library's malloc() (not net/port/segheap.c, tested on its own in
 * test_segheap), so AddressSanitizer sees every pbuf, segment and PCB
 * as a separate allocation: a use after free or a leak inside lwIP (or of a
 * pbuf the application forgot) is reported at the spot. lwIP keeps counting
 * lwip_stats.memp[] exactly as in the kernel, and lwip_stats.mem.used by
 * request size (the kernel's counts whole blocks). */
#ifndef VIREO_HOST_LWIPOPTS_H
#define VIREO_HOST_LWIPOPTS_H

#include "net/port/lwipopts.h"

#undef MEM_LIBC_MALLOC
#undef MEM_CUSTOM_ALLOCATOR
#undef MEM_CUSTOM_MALLOC
#undef MEM_CUSTOM_FREE
#undef MEM_CUSTOM_CALLOC
#define MEM_LIBC_MALLOC 1

/* And no DHCP option 42: its hook (dhcp_set_ntp_servers) lives in
 * net/clients/sntp.c, which only test_resolv links. */
#undef LWIP_DHCP_GET_NTP_SRV
#define LWIP_DHCP_GET_NTP_SRV 0

/* lwIP's 4-tuple index counts the PCBs its lookups examine
 * (tcp_pcb_hash_probes, net/port/patches/0010): test_lwip_port reads it. */
#define TCP_PCB_HASH_COUNT 1

#endif
