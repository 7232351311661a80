# apps/dns's host tests (the Makefile reads every apps/*/host.mk): the engine
# against the example zone (compiled by apps/dns/mkzone.py, whose own error
# cases and the dig/kdig tests of dns_serve run first), the TCP framing and
# the rate limiter.
DNS_HOST_ZONE := $(BUILD)/host/dns_example_zone.c
$(DNS_HOST_ZONE): apps/dns/example.zone apps/dns/mkzone.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) apps/dns/mkzone.py $< $@
$(BUILD)/host/mkzone.ok: apps/dns/mkzone.py apps/dns/tests/host_mkzone.py apps/dns/tests/host_dig.py apps/dns/tests/dns_client.py apps/dns/tests/digout.py $(BUILD)/host/dns_serve
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider apps/dns/tests/host_mkzone.py apps/dns/tests/host_dig.py >$@.log 2>&1 || { cat $@.log; exit 1; }
	$(Q)touch $@
HOST_TESTS += test_dns
test_dns_SRCS := apps/dns/tests/test_dns.c apps/dns/dnsmsg.c apps/dns/rrl.c lib/crypto/siphash.c $(DNS_HOST_ZONE)
$(BUILD)/host/test_dns: $(BUILD)/host/mkzone.ok
FUZZERS += fuzz_dns
fuzz_dns_SRCS := apps/dns/tests/fuzz_dns.c apps/dns/dnsmsg.c apps/dns/rrl.c lib/crypto/siphash.c $(DNS_HOST_ZONE)
# dns_serve: the engine behind host sockets, for dig/kdig (apps/dns/tests/host_dig.py).
$(BUILD)/host/dns_serve: apps/dns/tests/dns_serve.c apps/dns/dnsmsg.c apps/dns/rrl.c lib/crypto/siphash.c $(DNS_HOST_ZONE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $@")
	$(Q)$(HOST_CC) $(HOST_CFLAGS) -MF $@.d $(filter %.c,$^) -o $@
# apps/dns/dns.c, the glue, through the application API over the host's lwIP.
HOST_TESTS += test_dns_app
test_dns_app_SRCS := apps/dns/tests/test_dns_app.c tests/host/lwip/lwip_wire.c \
	runtime/http/server.c runtime/http/https.c runtime/metrics.c runtime/echo.c runtime/conntab.c runtime/http/http.c runtime/site.c \
	$(API_HOST_SRCS) kernel/cmdline.c lib/crypto/siphash.c \
	apps/dns/dns.c apps/dns/dnsmsg.c apps/dns/rrl.c $(DNS_HOST_ZONE) $(BUILD)/host/site_default.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_dns_app: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_dns_app: | $(LWIP_STAMP)
