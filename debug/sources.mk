# debug/: every test-only hook, always linked (the image tested is the image
# shipped), active only when its key asks (debug=on, selftest=, vnet.echo=,
# iommu.stray=). All of it is cold.
COLD_SRCS += debug/selftest.c debug/virtio_selftest.c debug/vnet_echo.c
