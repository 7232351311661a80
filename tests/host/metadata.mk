# The cloud metadata client's HTTP/1.1 messages (net/mdhttp.c).
HOST_TESTS += test_mdhttp
test_mdhttp_SRCS := tests/host/test_mdhttp.c net/mdhttp.c
FUZZERS += fuzz_mdhttp
fuzz_mdhttp_SRCS := tests/fuzz/fuzz_mdhttp.c net/mdhttp.c
