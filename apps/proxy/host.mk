# apps/proxy's host test (apps/proxy/tests/test_pxhead.c): the upstream
# list, hop-by-hop fields, the target passed on, the choice of an
# upstream, latency quantiles.
HOST_TESTS += test_pxhead
test_pxhead_SRCS := apps/proxy/pxhead.c
