# drivers/virtio/net/virtio_net.c built for the host (tests/host/drivers/virtio/net/virtio_net_host.c
# includes it unchanged) with the ring, header, control and coalescing code it
# uses and the real virtio bus (drivers/virtio/virtio.c, drivers/virtio/virtio_core.c),
# against the host kernel shim (hostk, linked into every host test), the bus
# glue (hostbus: the injected driver table; it wraps two bus functions at link
# time to observe them, VIRTIO_HOST_LDFLAGS) and a simulated device.
# The wrapper is copied into $(BUILD) whenever the driver or a header changes:
# the one-command host rule records only the last source's dependencies, and
# the driver is not a source of its own here.
VNETDEV_WRAP := $(BUILD)/host/vnetdev/virtio_net_host.c
VIRTIO_HOST_LDFLAGS := -Wl,--wrap=virtio_set_broken -Wl,--wrap=virtio_keep_forever
VNETDEV_SRCS := $(VNETDEV_WRAP) tests/host/simdev/hostbus.c \
	tests/host/simdev/vnetdev.c tests/host/drivers/virtio/net/upper.c tests/host/simdev/fake_dev.c \
	drivers/virtio/virtio.c drivers/virtio/virtio_core.c drivers/virtio/virtq.c drivers/virtio/net/vnet_hdr.c drivers/virtio/net/vnet_ctrl.c drivers/virtio/net/vnet_gso.c drivers/virtio/net/coalesce.c debug/vnet_echo.c debug/virtio_selftest.c \
	lib/fmt.c
$(VNETDEV_WRAP): tests/host/drivers/virtio/net/virtio_net_host.c drivers/virtio/net/virtio_net.c \
		$(wildcard drivers/*.h drivers/*/*.h drivers/*/*/*.h debug/*.h kernel/*.h kernel/*/*.h lib/*.h lib/*/*.h tests/host/simdev/*.h)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

HOST_TESTS += test_virtio_net
test_virtio_net_SRCS := tests/host/drivers/virtio/net/test_virtio_net.c $(VNETDEV_SRCS)
test_virtio_net_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)
FUZZERS += fuzz_virtio_net
fuzz_virtio_net_SRCS := tests/fuzz/drivers/virtio/net/fuzz_virtio_net.c $(VNETDEV_SRCS)
fuzz_virtio_net_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)

# drivers/virtio/rng/virtio_rng.c the same way, with the same device (queue 0 filled at
# once) and the real virtio bus.
VRNG_WRAP := $(BUILD)/host/vnetdev/virtio_rng_host.c
$(VRNG_WRAP): tests/host/drivers/virtio/rng/virtio_rng_host.c drivers/virtio/rng/virtio_rng.c \
		$(wildcard drivers/*.h drivers/*/*.h drivers/*/*/*.h debug/*.h kernel/*.h kernel/*/*.h lib/*.h lib/*/*.h tests/host/simdev/*.h)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

HOST_TESTS += test_virtio_rng
test_virtio_rng_SRCS := tests/host/drivers/virtio/rng/test_virtio_rng.c $(VRNG_WRAP) tests/host/simdev/hostbus.c \
	tests/host/simdev/vnetdev.c tests/host/simdev/fake_dev.c drivers/virtio/virtio.c drivers/virtio/virtio_core.c drivers/virtio/virtq.c \
	drivers/virtio/net/vnet_ctrl.c
test_virtio_rng_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)

# drivers/virtio/console/virtio_console.c the same way, the device played raw.
VCONS_WRAP := $(BUILD)/host/vnetdev/virtio_console_host.c
$(VCONS_WRAP): tests/host/drivers/virtio/console/virtio_console_host.c drivers/virtio/console/virtio_console.c \
		$(wildcard drivers/*.h drivers/*/*.h drivers/*/*/*.h debug/*.h kernel/*.h kernel/*/*.h lib/*.h lib/*/*.h tests/host/simdev/*.h)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

HOST_TESTS += test_virtio_console
test_virtio_console_SRCS := tests/host/drivers/virtio/console/test_virtio_console.c $(VCONS_WRAP) tests/host/simdev/hostbus.c \
	tests/host/simdev/vnetdev.c tests/host/simdev/fake_dev.c drivers/virtio/virtio.c drivers/virtio/virtio_core.c drivers/virtio/virtq.c \
	drivers/virtio/net/vnet_ctrl.c
test_virtio_console_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)
