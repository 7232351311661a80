# Wall-clock time and SNTP messages (kernel/time/wallclock.c, net/clients/sntp_msg.c).
HOST_TESTS += test_sntp_msg
test_sntp_msg_SRCS := tests/host/net/clients/test_sntp_msg.c kernel/time/wallclock.c net/clients/sntp_msg.c
FUZZERS += fuzz_sntp_msg
fuzz_sntp_msg_SRCS := tests/fuzz/net/clients/fuzz_sntp_msg.c kernel/time/wallclock.c net/clients/sntp_msg.c
HOST_TESTS += test_syslog_msg
test_syslog_msg_SRCS := tests/host/net/clients/test_syslog_msg.c net/clients/syslog_msg.c
# Host names and dns= (net/clients/resolv.c), with the keys that use them, over the host's lwIP.
HOST_TESTS += test_resolv
test_resolv_SRCS := tests/host/net/clients/test_resolv.c net/clients/resolv.c net/clients/sntp.c net/clients/sntp_msg.c kernel/time/wallclock.c \
	kernel/config.c kernel/cmdline.c lib/fmt.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_resolv: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_resolv: | $(LWIP_STAMP)
