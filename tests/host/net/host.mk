# net/: lwIP's heap (port/segheap.c, pure) and its size from memory (port/netmem.c), receive memory accounting
# (tcp/rxmem.c) over the real lwIP core with a simulated zero-copy receive
# pool, SYN cookies and RFC 6528 ISNs (tcp/syncookie.c) against lwIP (patched)
# and the HTTP server with hand-made packets from spoofed and real clients,
# the netif's transmit backlog (netif/netif_vnet.c, through its wrapper, as
# tests/host/simdev/host.mk builds a driver) against a scripted driver, TSO
# (netif/tso_merge.c, with virtio-net's GSO header), the clients' messages
# (SNTP with the wall clock, syslog, the metadata client's HTTP) and host
# names with dns= (clients/resolv.c, with the keys that use them).
HOST_TESTS += test_segheap test_netmem test_rxmem test_syncookie test_netif_vnet test_tso_merge
test_segheap_USES := segheap
test_netmem_USES := netmem segheap
test_rxmem_SRCS := $(LWIP_HOST_LIB)
test_syncookie_USES := $(RUNTIME_HOST_USES)
test_syncookie_SRCS := $(filter-out $(LWIP_WIRE),$(RUNTIME_HOST_SRCS))
test_netif_vnet_USES := vnet_hdr tso_out tso_merge fmt
test_netif_vnet_SRCS := $(call host_wrap,netif_vnet) $(LWIP_HOST_LIB)
test_tso_merge_USES := tso_merge vnet_gso

HOST_TESTS += test_sntp_msg test_syslog_msg test_mdhttp test_resolv
test_sntp_msg_USES := wallclock sntp_msg
test_syslog_msg_USES := syslog_msg
test_mdhttp_USES := mdhttp
test_resolv_USES := resolv sntp sntp_msg wallclock config cmdline fmt
test_resolv_SRCS := $(LWIP_HOST_LIB)
FUZZERS += fuzz_sntp_msg fuzz_mdhttp
fuzz_sntp_msg_USES := wallclock sntp_msg
fuzz_mdhttp_USES := mdhttp
LWIP_HOST_TESTS += test_rxmem test_syncookie test_netif_vnet test_resolv

# The resolver's messages (clients/dns_msg.c): queries, hostile answers;
# its cache (clients/dns_cache.c) and engine (clients/dns_client.c).
HOST_TESTS += test_dns_msg test_dns_cache test_dns_client
test_dns_msg_USES := dns_msg
test_dns_cache_USES := dns_cache
test_dns_client_USES := dns_client dns_cache dns_msg
FUZZERS += fuzz_dns_msg
fuzz_dns_msg_USES := dns_msg
