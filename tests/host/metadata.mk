# The cloud metadata client's HTTP/1.1 messages (net/clients/mdhttp.c).
HOST_TESTS += test_mdhttp
test_mdhttp_SRCS := tests/host/net/clients/test_mdhttp.c net/clients/mdhttp.c
FUZZERS += fuzz_mdhttp
fuzz_mdhttp_SRCS := tests/fuzz/net/clients/fuzz_mdhttp.c net/clients/mdhttp.c
