# PVH boot (boot/pvh_info.c) and the virtio-mmio transport's pure parts.
HOST_TESTS += test_pvh_info
test_pvh_info_SRCS := tests/host/boot/test_pvh_info.c boot/pvh_info.c
HOST_TESTS += test_virtio_mmio_parse
test_virtio_mmio_parse_SRCS := tests/host/drivers/virtio/test_virtio_mmio_parse.c drivers/virtio/virtio_mmio_parse.c
FUZZERS += fuzz_virtio_mmio_parse
fuzz_virtio_mmio_parse_SRCS := tests/fuzz/drivers/virtio/fuzz_virtio_mmio_parse.c drivers/virtio/virtio_mmio_parse.c
# The UEFI image's RELR self-relocation (boot/efi_start.c).
HOST_TESTS += test_relr
test_relr_SRCS := tests/host/boot/test_relr.c boot/relr.c
