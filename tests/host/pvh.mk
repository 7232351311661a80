# PVH boot (boot/pvh_info.c) and the virtio-mmio transport's pure parts.
HOST_TESTS += test_pvh
test_pvh_SRCS := tests/host/test_pvh.c boot/pvh_info.c
HOST_TESTS += test_vmmio
test_vmmio_SRCS := tests/host/test_vmmio.c drivers/virtio/virtio_mmio_parse.c
FUZZERS += fuzz_vmmio
fuzz_vmmio_SRCS := tests/fuzz/fuzz_vmmio.c drivers/virtio/virtio_mmio_parse.c
# The UEFI image's RELR self-relocation (boot/efi_start.c).
HOST_TESTS += test_relr
test_relr_SRCS := tests/host/test_relr.c boot/relr.c
