# The host's lwIP: lwIP's core (the same LWIP_SRCS the kernel builds,
# net/port/lwip.mk, from the same tree with net/port/patches applied) and
# vireo's port (NET_PORT, net/sources.mk, with the SipHash it uses), compiled
# for the host with HOST_CFLAGS (ASan/UBSan) into one archive that a test
# lists in its NAME_SRCS, naming itself in LWIP_HOST_TESTS for the headers.
# Options: tests/host/lwip/lwipopts.h (vireo's, with lwIP's heap on malloc for
# ASan); platform: net/port/arch/cc.h as in the kernel, with the host's libc
# headers instead of net/port/include. lwip_wire.c is an in-process netif.
LWIP_HOST_LIB := $(BUILD)/host/lwip/liblwip.a
LWIP_HOST_INC := -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
LWIP_HOST_CFLAGS := $(HOST_CFLAGS) $(LWIP_HOST_INC)
LWIP_HOST_OBJS := $(patsubst %.c,$(BUILD)/host/lwip/%.o,$(LWIP_SRCS)) \
	$(patsubst %.c,$(BUILD)/host/lwip/vireo/%.o,$(call src,$(NET_PORT) siphash))
LWIP_WIRE := tests/host/lwip/lwip_wire.c

$(filter-out $(BUILD)/host/lwip/vireo/%,$(LWIP_HOST_OBJS)): $(BUILD)/host/lwip/%.o: $(LWIP_SRCDIR)/src/%.c $(LWIP_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  lwip/$*.c")
	$(Q)$(HOST_CC) $(LWIP_HOST_CFLAGS) -c $< -o $@

$(BUILD)/host/lwip/vireo/%.o: %.c $(LWIP_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $<")
	$(Q)$(HOST_CC) $(LWIP_HOST_CFLAGS) -c $< -o $@

$(LWIP_HOST_LIB): $(LWIP_HOST_OBJS)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcs $@ $^

# The lwIP port (net/port/lwip_port.c): lwIP's 4-tuple index of active and
# TIME_WAIT PCBs (net/port/patches/0010) as the port sizes it, at 20,000
# connections, the PCBs each segment examines counted.
HOST_TESTS += test_lwip_port
test_lwip_port_SRCS := $(LWIP_HOST_LIB)
LWIP_HOST_TESTS += test_lwip_port
