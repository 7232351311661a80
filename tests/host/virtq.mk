HOST_TESTS += test_virtq
test_virtq_SRCS := tests/host/test_virtq.c tests/host/fake_dev.c drivers/virtio/virtq.c
FUZZERS += fuzz_virtq
fuzz_virtq_SRCS := tests/fuzz/fuzz_virtq.c drivers/virtio/virtq.c
