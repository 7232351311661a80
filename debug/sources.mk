# debug/: every test-only hook, always linked (the image tested is the image
# shipped), active only when its key asks (debug=on, selftest=, vnet.echo=,
# iommu.stray=). All of it is cold.
COLD_SRCS += debug/debug.c debug/selftest.c debug/virtio_selftest.c debug/virtq_fault.c debug/vnet_echo.c
