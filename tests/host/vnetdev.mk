# drivers/virtio_net.c built for the host (tests/host/vnetdev/virtio_net_host.c
# includes it unchanged) with the ring, header, control and coalescing code it
# uses, against host kernel/virtio-core shims and a simulated device.
VNETDEV_SRCS := tests/host/vnetdev/virtio_net_host.c tests/host/vnetdev/hostk.c \
	tests/host/vnetdev/vnetdev.c tests/host/vnetdev/upper.c tests/host/fake_dev.c \
	drivers/virtq.c drivers/vnet_hdr.c drivers/vnet_ctrl.c drivers/coalesce.c kernel/timerq.c
HOST_TESTS += test_vnetdev
test_vnetdev_SRCS := tests/host/test_vnetdev.c $(VNETDEV_SRCS)
