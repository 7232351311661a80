# The cloud metadata client's HTTP/1.1 messages (net/clients/mdhttp.c).
HOST_TESTS += test_mdhttp
test_mdhttp_SRCS := tests/host/test_mdhttp.c net/clients/mdhttp.c
FUZZERS += fuzz_mdhttp
fuzz_mdhttp_SRCS := tests/fuzz/fuzz_mdhttp.c net/clients/mdhttp.c
