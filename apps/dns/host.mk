# apps/dns's host tests (the Makefile reads every apps/*/host.mk): the engine
# against the example zone and against apps/dns/tests/rfc.zone (each compiled
# by apps/dns/mkzone.py, whose own error cases and the dig/kdig tests of
# dns_serve run first), the zone image checks, the TCP framing and the rate
# limiter.
DNS_ENGINE_SRCS := apps/dns/dnsmsg.c apps/dns/zone.c apps/dns/rrl.c kernel/siphash.c
DNS_HOST_ZONE := $(BUILD)/host/dns_example_zone.c
$(DNS_HOST_ZONE): apps/dns/example.zone apps/dns/mkzone.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) apps/dns/mkzone.py $< $@
DNS_RFC_ZONE := $(BUILD)/host/dns_rfc_zone.c
$(DNS_RFC_ZONE): apps/dns/tests/rfc.zone apps/dns/mkzone.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) apps/dns/mkzone.py $< $@
$(BUILD)/host/mkzone.ok: apps/dns/mkzone.py apps/dns/test_mkzone.py apps/dns/test_dig_host.py apps/dns/tests/dns_client.py apps/dns/tests/digout.py $(BUILD)/host/dns_serve
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider apps/dns/test_mkzone.py apps/dns/test_dig_host.py >$@.log 2>&1 || { cat $@.log; exit 1; }
	$(Q)touch $@
HOST_TESTS += test_dns
test_dns_SRCS := tests/host/test_dns.c $(DNS_ENGINE_SRCS) $(DNS_HOST_ZONE)
$(BUILD)/host/test_dns: $(BUILD)/host/mkzone.ok
# RFC 4592 wildcards, RFC 9471 glue, DO, CNAME loops and chains, DS at a
# cut, the record types, NSID, cookies, CHAOS, and zone images refused.
HOST_TESTS += test_dns_rfc
test_dns_rfc_SRCS := apps/dns/tests/test_dns_rfc.c $(DNS_ENGINE_SRCS) $(DNS_RFC_ZONE)
FUZZERS += fuzz_dns
fuzz_dns_SRCS := tests/fuzz/fuzz_dns.c $(DNS_ENGINE_SRCS) $(DNS_RFC_ZONE)
# dns_serve: the engine behind host sockets, for dig/kdig (apps/dns/test_dig_host.py).
$(BUILD)/host/dns_serve: tests/host/dns_serve.c $(DNS_ENGINE_SRCS) $(DNS_HOST_ZONE)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $@")
	$(Q)$(HOST_CC) $(HOST_CFLAGS) -MF $@.d $(filter %.c,$^) -o $@
# apps/dns/dns.c, the glue, through the application API over the host's lwIP.
HOST_TESTS += test_dns_app
test_dns_app_SRCS := tests/host/test_dns_app.c tests/host/lwip_wire.c \
	net/app/server.c net/app/https.c net/app/metrics.c net/app/echo.c net/app/conntab.c net/app/http.c net/app/site.c \
	$(API_HOST_SRCS) kernel/cmdline.c \
	apps/dns/dns.c $(DNS_ENGINE_SRCS) $(DNS_HOST_ZONE) $(BUILD)/host/site_default.c $(LWIP_HOST_LIB)
$(BUILD)/host/test_dns_app: HOST_CFLAGS += -Itests/host/lwip -Inet/port -I$(LWIP_SRCDIR)/src/include
$(BUILD)/host/test_dns_app: | $(LWIP_STAMP)
