# apps/dns's host tests (the Makefile reads every apps/*/host.mk): the engine
# against the example zone and against apps/dns/tests/rfc.zone (each compiled
# by apps/dns/mkzone.py, whose own error cases and the dig/kdig tests of
# dns_serve run first), the zone image checks, the TCP framing and the rate
# limiter.
DNS_HOST_ZONE := $(BUILD)/host/dns_example_zone.c
$(DNS_HOST_ZONE): apps/dns/example.zone apps/dns/mkzone.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) apps/dns/mkzone.py $< $@
DNS_RFC_ZONE := $(BUILD)/host/dns_rfc_zone.c
$(DNS_RFC_ZONE): apps/dns/tests/rfc.zone apps/dns/mkzone.py
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) apps/dns/mkzone.py $< $@
$(BUILD)/host/mkzone.ok: apps/dns/mkzone.py apps/dns/tests/host_mkzone.py apps/dns/tests/host_dig.py apps/dns/tests/dns_client.py apps/dns/tests/digout.py $(BUILD)/host/dns_serve
	@mkdir -p $(dir $@)
	$(Q)$(PYTHON) -m pytest -q -p no:cacheprovider apps/dns/tests/host_mkzone.py apps/dns/tests/host_dig.py >$@.log 2>&1 || { cat $@.log; exit 1; }
	$(Q)touch $@
DNS_ENGINE := apps/dns/dnsmsg.c apps/dns/zone.c apps/dns/rrl.c
# A compiled zone includes "zone.h" as the app's own files do (the image
# builds apps/dns with -Iapps/dns: docs/apps.md).
$(addprefix $(BUILD)/host/,test_dns test_dns_rfc test_dns_app dns_serve) $(BUILD)/fuzz/fuzz_dns: HOST_CFLAGS += -Iapps/dns
$(BUILD)/fuzz/fuzz_dns: FUZZ_CFLAGS += -Iapps/dns
HOST_TESTS += test_dns
test_dns_USES := siphash
test_dns_SRCS := $(DNS_ENGINE) $(DNS_HOST_ZONE)
$(BUILD)/host/test_dns: $(BUILD)/host/mkzone.ok
# RFC 4592 wildcards, RFC 9471 glue, DO, CNAME loops and chains, DS at a
# cut, the record types, NSID, cookies, CHAOS, and zone images refused.
HOST_TESTS += test_dns_rfc
test_dns_rfc_USES := siphash
test_dns_rfc_SRCS := $(DNS_ENGINE) $(DNS_RFC_ZONE)
FUZZERS += fuzz_dns
fuzz_dns_USES := siphash
fuzz_dns_SRCS := $(DNS_ENGINE) $(DNS_RFC_ZONE)
# dns_serve: the engine behind host sockets, for dig/kdig (apps/dns/tests/host_dig.py).
DNS_SERVE_SRCS := apps/dns/tests/dns_serve.c $(DNS_ENGINE) $(call src,siphash) $(DNS_HOST_ZONE)
$(BUILD)/host/dns_serve: $(DNS_SERVE_SRCS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $@")
	$(Q)$(HOST_CC) $(HOST_CFLAGS) -MF $@.d $(DNS_SERVE_SRCS) -o $@
# apps/dns/dns.c, the glue, through the application API over the host's lwIP.
HOST_TESTS += test_dns_app
test_dns_app_USES := $(RUNTIME_HOST_USES) siphash
test_dns_app_SRCS := apps/dns/dns.c $(DNS_ENGINE) $(DNS_HOST_ZONE) $(RUNTIME_HOST_SRCS)
LWIP_HOST_TESTS += test_dns_app
