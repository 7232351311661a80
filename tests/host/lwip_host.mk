# lwIP's core (the same LWIP_SRCS the kernel builds, net/port/lwip.mk, from the
# same tree with net/port/patches applied) and vireo's port (with the kernel's
# SipHash it uses), compiled for the host with HOST_CFLAGS (ASan/UBSan) into
# one archive that host tests list among their sources. Options: tests/host/lwip/lwipopts.h
# (vireo's, with lwIP's heap on malloc for ASan); platform: net/port/arch/cc.h
# as in the kernel, with the host's libc headers instead of net/port/include.
LWIP_HOST_LIB := $(BUILD)/host/lwip/liblwip.a
LWIP_HOST_CFLAGS := $(HOST_CFLAGS) -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
LWIP_HOST_OBJS := $(patsubst %.c,$(BUILD)/host/lwip/%.o,$(LWIP_SRCS)) \
	$(patsubst %.c,$(BUILD)/host/lwip/vireo/%.o,$(LWIP_PORT_SRCS) lib/crypto/siphash.c)

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

# The application API's runtime (include/vireo/) as the HTTP server needs it,
# with the static-site app, which serves the site.
API_HOST_SRCS := runtime/api.c runtime/http/routes.c runtime/services.c lib/fmt.c kernel/time/wallclock.c apps/site/site.c

# The HTTP server, metrics and echo against lwIP over an in-process netif. Its
# site is the default one plus /256k.bin, a body past TCP_SND_BUF (bulk send
# grants).
$(BUILD)/host/site_server.c: tools/mksite.py tests/host/lwip_host.mk $(SITE_DATE_STAMP) $(shell find runtime/default-site -type f 2>/dev/null)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MKSITE  $@")
	$(Q)/usr/bin/python3 tools/mksite.py runtime/default-site $@ --extra 64k.bin=65536 --extra 256k.bin=262144
HOST_TESTS += test_server
test_server_SRCS := tests/host/runtime/http/test_server.c tests/host/lwip/lwip_wire.c \
	runtime/http/server.c runtime/http/https.c runtime/metrics.c runtime/echo.c runtime/conntab.c runtime/http/http.c runtime/site.c \
	$(API_HOST_SRCS) $(BUILD)/host/site_server.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_server: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_server: | $(LWIP_STAMP)

# The application API (include/vireo/): routes, bodies, streaming with
# back-pressure, finishing later, misuse, TCP and UDP services, metrics.
HOST_TESTS += test_api
test_api_SRCS := tests/host/runtime/test_api.c tests/host/lwip/lwip_wire.c \
	runtime/http/server.c runtime/http/https.c runtime/metrics.c runtime/echo.c runtime/conntab.c runtime/http/http.c runtime/site.c \
	runtime/api.c runtime/http/routes.c runtime/services.c lib/fmt.c kernel/time/wallclock.c kernel/cmdline.c \
	$(BUILD)/host/site_default.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_api: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_api: | $(LWIP_STAMP)

# SYN cookies and RFC 6528 ISNs against lwIP (patched, net/port/patches) and the
# HTTP server, with hand-made packets from spoofed and real clients.
HOST_TESTS += test_syncookie
test_syncookie_SRCS := tests/host/net/tcp/test_syncookie.c \
	runtime/http/server.c runtime/http/https.c runtime/metrics.c runtime/conntab.c runtime/http/http.c runtime/site.c \
	runtime/echo.c $(API_HOST_SRCS) $(BUILD)/host/site_default.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_syncookie: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_syncookie: | $(LWIP_STAMP)
# net/netif/netif_vnet.c's transmit backlog against a scripted driver. The wrapper
# that includes it is copied into $(BUILD) whenever it changes (as in
# vnetdev.mk: the one-command host rule tracks only the last source's headers).
NETIF_TX_WRAP := $(BUILD)/host/netif/netif_vnet_host.c
$(NETIF_TX_WRAP): tests/host/net/netif/netif_vnet_host.c net/netif/netif_vnet.c tests/host/net/netif/netif_vnet_host.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
HOST_TESTS += test_netif_vnet
test_netif_vnet_SRCS := tests/host/net/netif/test_netif_vnet.c $(NETIF_TX_WRAP) drivers/virtio/net/vnet_hdr.c \
	net/netif/tso_out.c net/netif/tso_merge.c \
	$(LWIP_HOST_LIB)
$(BUILD)/host/test_netif_vnet: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_netif_vnet: | $(LWIP_STAMP)
