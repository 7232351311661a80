# lwIP's heap in the kernel (net/port/segheap.c): pure, no lwIP needed.
HOST_TESTS += test_segheap
test_segheap_SRCS := tests/host/net/port/test_segheap.c net/port/segheap.c
