# Receive memory accounting (net/tcp/rxmem.c) over the real lwIP core, with a
# simulated zero-copy receive pool in place of the driver.
HOST_TESTS += test_rxmem
test_rxmem_SRCS := tests/host/net/tcp/test_rxmem.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_rxmem: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_rxmem: | $(LWIP_STAMP)
