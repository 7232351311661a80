# Wall-clock time and SNTP messages (kernel/wallclock.c, net/sntp_msg.c).
HOST_TESTS += test_sntp
test_sntp_SRCS := tests/host/test_sntp.c kernel/wallclock.c net/sntp_msg.c
FUZZERS += fuzz_sntp
fuzz_sntp_SRCS := tests/fuzz/fuzz_sntp.c kernel/wallclock.c net/sntp_msg.c
HOST_TESTS += test_syslog
test_syslog_SRCS := tests/host/test_syslog.c net/syslog_msg.c
