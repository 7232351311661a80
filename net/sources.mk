# net/: port/ (lwIP's port, its fetch and patches), tcp/ (ISNs, SYN cookies,
# receive memory, the TCP connection base every TCP user sits on), netif/ (the netif on virtio-net, bring-up, TSO), clients/
# (SNTP, syslog, DNS names, the metadata client's HTTP) and tls/ (make TLS=1;
# its own net/tls/mbedtls.mk). Cold: bring-up and the clients.
HOT_SRCS += net/port/sys_arch.c net/port/lwip_port.c net/port/segheap.c \
	net/tcp/tcp_isn.c net/tcp/syncookie.c net/tcp/rxmem.c net/tcp/tcpconn.c \
	net/netif/tso_merge.c net/netif/tso_out.c net/netif/netif_vnet.c
COLD_SRCS += net/netif/netup.c net/port/netmem.c \
	net/clients/sntp.c net/clients/sntp_msg.c net/clients/syslog.c net/clients/syslog_msg.c \
	net/clients/resolv.c net/clients/mdhttp.c net/clients/dns_msg.c net/clients/dns_cache.c net/clients/dns_client.c
# What lwIP itself calls (sys_now, the heap, the hooks): lwip-check links it
# with lwIP alone, the host tests' lwIP archive holds it.
NET_PORT := sys_arch lwip_port segheap netmem tcp_isn syncookie rxmem
