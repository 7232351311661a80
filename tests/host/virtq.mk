HOST_TESTS += test_virtq
test_virtq_SRCS := tests/host/drivers/virtio/test_virtq.c tests/host/simdev/fake_dev.c drivers/virtio/virtq.c
FUZZERS += fuzz_virtq
fuzz_virtq_SRCS := tests/fuzz/drivers/virtio/fuzz_virtq.c drivers/virtio/virtq.c
