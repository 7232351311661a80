# lwIP's heap in the kernel (net/segheap.c): pure, no lwIP needed.
HOST_TESTS += test_segheap
test_segheap_SRCS := tests/host/test_segheap.c net/segheap.c
