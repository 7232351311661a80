# drivers/virtio_net.c built for the host (tests/host/vnetdev/virtio_net_host.c
# includes it unchanged) with the ring, header, control and coalescing code it
# uses and the real virtio bus (drivers/virtio.c, drivers/virtio_core.c),
# against the host kernel shim (hostk, linked into every host test), the bus
# glue (hostbus: the injected driver table; it wraps two bus functions at link
# time to observe them, VIRTIO_HOST_LDFLAGS) and a simulated device.
# The wrapper is copied into $(BUILD) whenever the driver or a header changes:
# the one-command host rule records only the last source's dependencies, and
# the driver is not a source of its own here. virtq_enable_cb and
# virtq_enable_cb_delayed are wrapped too: shim_mb_hook runs just before a
# driver re-enables a callback (hostbus.c).
VNETDEV_WRAP := $(BUILD)/host/vnetdev/virtio_net_host.c
VIRTIO_HOST_LDFLAGS := -Wl,--wrap=virtio_set_broken -Wl,--wrap=virtio_keep_forever \
	-Wl,--wrap=virtq_enable_cb -Wl,--wrap=virtq_enable_cb_delayed
VNETDEV_SRCS := $(VNETDEV_WRAP) tests/host/vnetdev/hostbus.c \
	tests/host/vnetdev/vnetdev.c tests/host/vnetdev/upper.c tests/host/fake_dev.c \
	drivers/virtio.c drivers/virtio_core.c drivers/virtq.c drivers/vnet_hdr.c drivers/vnet_ctrl.c drivers/vnet_gso.c drivers/coalesce.c drivers/vnet_echo.c drivers/virtio_selftest.c \
	kernel/fmt.c
$(VNETDEV_WRAP): tests/host/vnetdev/virtio_net_host.c drivers/virtio_net.c \
		$(wildcard drivers/*.h kernel/*.h tests/host/vnetdev/*.h)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

HOST_TESTS += test_vnetdev
test_vnetdev_SRCS := tests/host/test_vnetdev.c $(VNETDEV_SRCS)
test_vnetdev_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)
# The same driver and device with the frame reflector above: the queues'
# wakeup rules under every interleaving of the event-index race and under
# overload (issue 37).
HOST_TESTS += test_vnet_wakeup
test_vnet_wakeup_SRCS := tests/host/test_vnet_wakeup.c $(VNETDEV_SRCS)
test_vnet_wakeup_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)
FUZZERS += fuzz_vnet_rx
fuzz_vnet_rx_SRCS := tests/fuzz/fuzz_vnet_rx.c $(VNETDEV_SRCS)
fuzz_vnet_rx_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)

# drivers/virtio_rng.c the same way, with the same device (queue 0 filled at
# once) and the real virtio bus.
VRNG_WRAP := $(BUILD)/host/vnetdev/virtio_rng_host.c
$(VRNG_WRAP): tests/host/vnetdev/virtio_rng_host.c drivers/virtio_rng.c \
		$(wildcard drivers/*.h kernel/*.h tests/host/vnetdev/*.h)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

HOST_TESTS += test_vrng
test_vrng_SRCS := tests/host/test_vrng.c $(VRNG_WRAP) tests/host/vnetdev/hostbus.c \
	tests/host/vnetdev/vnetdev.c tests/host/fake_dev.c drivers/virtio.c drivers/virtio_core.c drivers/virtq.c \
	drivers/vnet_ctrl.c
test_vrng_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)

# drivers/virtio_console.c the same way, the device played raw.
VCONS_WRAP := $(BUILD)/host/vnetdev/virtio_console_host.c
$(VCONS_WRAP): tests/host/vnetdev/virtio_console_host.c drivers/virtio_console.c \
		$(wildcard drivers/*.h kernel/*.h tests/host/vnetdev/*.h)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

HOST_TESTS += test_vcons
test_vcons_SRCS := tests/host/test_vcons.c $(VCONS_WRAP) tests/host/vnetdev/hostbus.c \
	tests/host/vnetdev/vnetdev.c tests/host/fake_dev.c drivers/virtio.c drivers/virtio_core.c drivers/virtq.c \
	drivers/vnet_ctrl.c
test_vcons_LDFLAGS := $(VIRTIO_HOST_LDFLAGS)
