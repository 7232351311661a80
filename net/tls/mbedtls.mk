# TLS (make TLS=1): mbedTLS 3.6 fetched from Debian (net/tls/fetch-mbedtls.sh),
# built freestanding into $(BUILD)/mbedtls/libmbedtls.a with the kernel's
# flags and net/tls/mbedtls_config.h; vireo's glue in net/tls/. Included by
# the top-level Makefile always, but only TLS=1 links it into the image (a
# default image build neither fetches nor links it; make test-host fetches it
# for the key-loading tests, tests/host/net/tls/host.mk). See docs/https.md.
#
# Credentials: TLS_CERT=<chain.pem> TLS_KEY=<key.pem> at build time, or else
# a self-signed development certificate (an EC P-256 leaf, CN=vireo-dev,
# SAN localhost, 127.0.0.1, ...) generated once into $(BUILD)/tls/ with openssl: never
# committed, different for every clone; the boot log says it is one.

MBEDTLS_SRCDIR := $(BUILD)/mbedtls-src/mbedtls
MBEDTLS_STAMP  := $(BUILD)/mbedtls-src/stamp
MBEDTLS_LIB    := $(BUILD)/mbedtls/libmbedtls.a

# Code that includes mbedTLS headers: vireo's few libc headers for it first
# (net/tls/include), the config file, no host headers (-nostdinc).
MBEDTLS_CFLAGS := -Inet/tls/include -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"'
# net/tls/include goes before the kernel's -Ikernel (lib/string.h lacks strstr).
MBEDTLS_LIB_CFLAGS := -Inet/tls/include $(KCFLAGS) -nostdinc -isystem $(LWIP_GCC_INC) $(MBEDTLS_CFLAGS) -I$(MBEDTLS_SRCDIR)/library

# Every library/*.c of the pinned release: the config decides what each one
# compiles to (most are empty with this config), and the linker's
# --gc-sections keeps only what the server reaches. Listed by the pinned
# release's library/ directory, read once the tree exists.
MBEDTLS_SRCS = $(notdir $(wildcard $(MBEDTLS_SRCDIR)/library/*.c))
MBEDTLS_OBJS = $(patsubst %.c,$(BUILD)/mbedtls/%.o,$(MBEDTLS_SRCS))
# vireo's code behind mbedTLS's _ALT hooks (mbedtls_config.h says which; one is
# added by net/tls/patches/0002), archived with the library (as
# vireo-<name>.o) so every program that links mbedTLS (the image, the host
# tests, the fuzzer) gets them.
MBEDTLS_ALT_SRCS := net/tls/x25519_alt.c net/tls/tls_time.c
MBEDTLS_ALT_OBJS := $(patsubst net/tls/%.c,$(BUILD)/mbedtls/vireo-%.o,$(MBEDTLS_ALT_SRCS))

TLS_SRCS := net/tls/tls_port.c net/tls/tls_keys.c net/tls/tls_libc.c
# lwIP's TLS layer for altcp (net/port/patches/0003 ports it to mbedTLS 3).
TLS_LWIP_SRCS := apps/altcp_tls/altcp_tls_mbedtls.c apps/altcp_tls/altcp_tls_mbedtls_mem.c
TLS_LWIP_OBJS := $(patsubst %.c,$(BUILD)/tls-lwip/%.o,$(TLS_LWIP_SRCS))
TLS_OBJS := $(patsubst %.c,$(BUILD)/k/%.o,$(TLS_SRCS)) $(BUILD)/k/tls_creds.o $(TLS_LWIP_OBJS)

$(TLS_LWIP_OBJS): $(BUILD)/tls-lwip/%.o: $(LWIP_SRCDIR)/src/%.c $(LWIP_STAMP) $(MBEDTLS_STAMP) net/tls/mbedtls_config.h net/port/lwipopts.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      lwip/$*.c")
	$(Q)$(CC) $(LWIP_LIB_CFLAGS) $(MBEDTLS_CFLAGS) -c $< -o $@

.PHONY: mbedtls-fetch tls-check
mbedtls-fetch: $(MBEDTLS_STAMP)

# Both fetches share $(BUILD)/apt: lwIP's goes first.
$(MBEDTLS_STAMP): net/tls/fetch-mbedtls.sh net/debsrc.sh net/tls/patches $(wildcard net/tls/patches/*.patch) | $(LWIP_STAMP)
	$(Q)net/tls/fetch-mbedtls.sh $(BUILD)

# A static pattern rule: a plain %.o one would also "build" the .d files
# make tries to remake (through its built-in %: %.o).
$(MBEDTLS_OBJS): $(BUILD)/mbedtls/%.o: $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(wildcard net/tls/include/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      mbedtls/$*.c")
	$(Q)$(CC) $(MBEDTLS_LIB_CFLAGS) -c $(MBEDTLS_SRCDIR)/library/$*.c -o $@

$(MBEDTLS_ALT_OBJS): $(BUILD)/mbedtls/vireo-%.o: net/tls/%.c $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(wildcard net/tls/include/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(MBEDTLS_LIB_CFLAGS) -c $< -o $@

# The object list is only known after the fetch: a recursive make builds the
# archive once the stamp exists.
$(MBEDTLS_LIB): $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(wildcard net/tls/include/*.h) $(MBEDTLS_ALT_SRCS)
	$(Q)$(MAKE) --no-print-directory mbedtls-objs
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcsD $@ $(BUILD)/mbedtls/*.o

.PHONY: mbedtls-objs
mbedtls-objs: $(MBEDTLS_OBJS) $(MBEDTLS_ALT_OBJS)

$(BUILD)/k/net/tls/%.o: KCFLAGS += -nostdinc -isystem $(LWIP_GCC_INC) $(MBEDTLS_CFLAGS)
$(TLS_OBJS): | $(MBEDTLS_STAMP)

# Credentials, as a C file of two NUL-terminated arrays.
TLS_CERT ?=
TLS_KEY  ?=
ifneq ($(if $(TLS_CERT),1)$(if $(TLS_KEY),1),)
ifeq ($(and $(TLS_CERT),$(TLS_KEY)),)
$(error give both TLS_CERT= and TLS_KEY=, or neither for a development certificate)
endif
TLS_CRED_CERT := $(TLS_CERT)
TLS_CRED_KEY  := $(TLS_KEY)
TLS_CRED_DEV  := 0
else
TLS_CRED_CERT := $(BUILD)/tls/dev-cert.pem
TLS_CRED_KEY  := $(BUILD)/tls/dev-key.pem
TLS_CRED_DEV  := 1
endif
# TLS_CA=<bundle.pem>: the TLS clients' trust anchors baked in (an ESP's
# EFI/vireo/tls/ca.pem is preferred over it); none: every TLS client
# connection is refused (docs/https.md).
TLS_CA ?=
TLS_CRED_STAMP := $(BUILD)/tls/creds.$(shell printf '%s %s %s' '$(TLS_CRED_CERT)' '$(TLS_CRED_KEY)' '$(TLS_CA)' | sha1sum | cut -c1-12)
$(TLS_CRED_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/tls/creds.* && touch $@

# The key is written 0600; a new one only when none exists (make clean
# removes it with the rest of build/). The certificate is a leaf, as
# browsers want of a server's even when it is its own trust anchor:
# CA:FALSE (openssl req -x509 would make a CA by default, which Firefox
# refuses for a server), digitalSignature, serverAuth, and the names a
# development appliance is reached by (docs/https.md). One made before
# that (a CA) is made again, key and all.
DEV_CERT_SAN := DNS:localhost,IP:127.0.0.1,IP:::1
ifneq ($(wildcard $(BUILD)/tls/dev-cert.pem),)
ifneq ($(shell openssl x509 -in $(BUILD)/tls/dev-cert.pem -noout -ext basicConstraints 2>/dev/null | grep -c 'CA:TRUE'),0)
$(shell rm -f $(BUILD)/tls/dev-cert.pem $(BUILD)/tls/dev-key.pem)
endif
endif
$(BUILD)/tls/dev-key.pem:
	@mkdir -p $(dir $@)
	@echo "  TLSDEV  self-signed development certificate into $(BUILD)/tls/"
	$(Q)command -v openssl >/dev/null || { echo "make TLS=1: openssl makes the development certificate: install the Debian package openssl, or give TLS_CERT= and TLS_KEY=" >&2; exit 1; }
	$(Q)umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-days 825 -subj /CN=vireo-dev -addext subjectAltName=$(DEV_CERT_SAN) \
		-addext basicConstraints=critical,CA:FALSE -addext keyUsage=critical,digitalSignature \
		-addext extendedKeyUsage=serverAuth -keyout $@ -out $(BUILD)/tls/dev-cert.pem 2>/dev/null
$(BUILD)/tls/dev-cert.pem: $(BUILD)/tls/dev-key.pem

$(BUILD)/tls_creds.c: net/tls/mkcreds.py $(TLS_CRED_STAMP) $(TLS_CRED_CERT) $(TLS_CRED_KEY) $(TLS_CA)
	$(Q)$(PYTHON) net/tls/mkcreds.py $(TLS_CRED_CERT) $(TLS_CRED_KEY) $(TLS_CRED_DEV) $@ '$(TLS_CA)'
$(BUILD)/k/tls_creds.o: $(BUILD)/tls_creds.c
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(KCFLAGS) -c $< -o $@

# ---- tls-check: what mbedTLS costs, and that it needs nothing but the kernel
# Links vireo's TLS glue with every member of the archive (an upper bound:
# the image keeps only what is reached) and lists what it needs from outside.
$(BUILD)/tls-check.o: $(MBEDTLS_LIB) $(TLS_OBJS)
	$(Q)$(LD) -r -o $@ $(TLS_OBJS) --whole-archive $(MBEDTLS_LIB) --no-whole-archive
tls-check: $(BUILD)/tls-check.o
	$(Q)echo "  CHECK   mbedTLS + glue need from the kernel: "$$(nm -u $< | awk '{ print $$2 }' | sort -u)
	$(Q)size -t $< | awk 'END { printf "  SIZE    mbedTLS (whole archive) + glue: text %d, data %d, bss %d bytes (before --gc-sections)\n", $$1, $$2, $$3 }'
