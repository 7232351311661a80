# The simulated devices a driver's host test runs against: fake_dev (the
# device side of one ring, checking every rule the driver must keep), simdev
# (a virtio device of any type: transport, config space of its own size,
# queues, interrupts; raw queues the test plays itself), vnetdev (simdev with
# virtio-net's receive, transmit and control semantics, VNETDEV), and hostbus
# (the real virtio bus, drivers/virtio/virtio.c and virtio_core.c, whose
# driver table, the VIRTIO_DRIVER linker set, holds the one driver the test
# links; it wraps two bus functions at link time to observe them, and
# virtq_enable_cb/_delayed so shim_mb_hook runs just before and after a
# driver re-enables a callback: SIMDEV_LDFLAGS).
# A driver is built for the host unchanged: named in the test's _USES like
# any source (its VIRTIO_DRIVER line puts it in the bus's table), or, when
# the test reads its statics, through a wrapper that includes it:
# tests/host/F/x_host.c for F/x.c, $(call host_wrap,x). The wrapper is
# copied into $(BUILD) whenever the driver or any header changes: the
# one-command host rule records only the last source's dependencies, and the
# driver is not a source of its own there.
FAKE_DEV := tests/host/simdev/fake_dev.c
SIMDEV_USES := virtio virtio_core virtq dma
SIMDEV_SRCS := tests/host/simdev/hostbus.c tests/host/simdev/simdev.c $(FAKE_DEV)
VNETDEV := tests/host/simdev/vnetdev.c
SIMDEV_LDFLAGS := -Wl,--wrap=virtio_set_broken -Wl,--wrap=virtio_keep_forever \
	-Wl,--wrap=virtq_enable_cb -Wl,--wrap=virtq_enable_cb_delayed
host_wrap = $(patsubst %.c,$(BUILD)/host/wrap/%_host.c,$(call src,$(1)))
HOST_HEADERS := $(shell find include lib kernel drivers debug net runtime tests/host -name '*.h')
$(BUILD)/host/wrap/%_host.c: tests/host/%_host.c %.c $(HOST_HEADERS)
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
