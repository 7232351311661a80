HOST_TESTS += test_vnet test_coalesce
test_vnet_SRCS := tests/host/test_vnet.c drivers/virtio/net/vnet_hdr.c drivers/virtio/net/vnet_ctrl.c
test_coalesce_SRCS := tests/host/test_coalesce.c drivers/virtio/net/coalesce.c
FUZZERS += fuzz_vnet_hdr
fuzz_vnet_hdr_SRCS := tests/fuzz/fuzz_vnet_hdr.c drivers/virtio/net/vnet_hdr.c
HOST_TESTS += test_tso
test_tso_SRCS := tests/host/test_tso.c net/netif/tso_merge.c drivers/virtio/net/vnet_gso.c
