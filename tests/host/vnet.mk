HOST_TESTS += test_vnet_hdr test_coalesce
test_vnet_hdr_SRCS := tests/host/drivers/virtio/net/test_vnet_hdr.c drivers/virtio/net/vnet_hdr.c drivers/virtio/net/vnet_ctrl.c
test_coalesce_SRCS := tests/host/drivers/virtio/net/test_coalesce.c drivers/virtio/net/coalesce.c
FUZZERS += fuzz_vnet_hdr
fuzz_vnet_hdr_SRCS := tests/fuzz/drivers/virtio/net/fuzz_vnet_hdr.c drivers/virtio/net/vnet_hdr.c
HOST_TESTS += test_tso_merge
test_tso_merge_SRCS := tests/host/net/netif/test_tso_merge.c net/netif/tso_merge.c drivers/virtio/net/vnet_gso.c
