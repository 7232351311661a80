# make APP=apps/dns: the zone (DNS_ZONE, a zone file; apps/dns/README.md) is
# compiled into a C table by apps/dns/mkzone.py at build time. The generated
# file's name carries a hash of the zone's path, so choosing another zone
# builds and links another object.
DNS_ZONE ?= apps/dns/example.zone
$(if $(wildcard $(DNS_ZONE)),,$(error DNS_ZONE=$(DNS_ZONE): no such zone file))
DNS_ZONE_C := $(BUILD)/apps/dns/zone-$(shell printf '%s' '$(DNS_ZONE)' | sha1sum | cut -c1-12).c
APP_SRCS += $(DNS_ZONE_C)
# (apps/dns/*.c are APP_SRCS already: dns.c, dnsmsg.c, rrl.c, zone.c)
$(DNS_ZONE_C): $(DNS_ZONE) apps/dns/mkzone.py
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  MKZONE  $(DNS_ZONE)")
	$(Q)$(PYTHON) apps/dns/mkzone.py $(DNS_ZONE) $@
# make run APP=apps/dns PORT=8080: DNS on host port DNS_RUN_PORT (5353), UDP and TCP.
DNS_RUN_PORT ?= 5353
APP_RUN_FWD := --fwd udp:$(DNS_RUN_PORT)-:53 --fwd tcp:$(DNS_RUN_PORT)-:53
# The zone can be replaced without a rebuild: boot/ reads the ESP's
# EFI/vireo/app/ (kernel/boot_info.h) and dns.c serves zone.bin from it
# (mkzone.py ZONE --bin zone.bin) when it checks out.
