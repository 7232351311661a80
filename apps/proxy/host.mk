# apps/proxy's host tests (apps/proxy/tests/): test_pxhead (the upstream
# list, hop-by-hop fields, the target passed on, the choice of an upstream,
# latency quantiles, Forwarded, durations, health rise/fall), test_pxhash (consistent
# hashing), test_pxlog (the access log's line); fuzz_pxlog (a client's
# bytes in the access log line and Forwarded: no line or field forged).
HOST_TESTS += test_pxhead test_pxhash test_pxlog
test_pxhead_SRCS := apps/proxy/pxhead.c
test_pxhash_SRCS := apps/proxy/pxhash.c apps/proxy/pxhead.c
test_pxhash_USES := siphash
test_pxlog_SRCS := apps/proxy/pxlog.c
FUZZERS += fuzz_pxlog
fuzz_pxlog_SRCS := apps/proxy/pxlog.c apps/proxy/pxhead.c
