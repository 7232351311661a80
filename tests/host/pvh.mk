# PVH boot (boot/pvh_info.c) and the virtio-mmio transport's pure parts.
HOST_TESTS += test_pvh
test_pvh_SRCS := tests/host/test_pvh.c boot/pvh_info.c
