# TLS (make TLS=1): mbedTLS 3.6 fetched from Debian (net/tls/fetch-mbedtls.sh),
# built freestanding into $(BUILD)/mbedtls/libmbedtls.a with the kernel's
# flags and net/tls/mbedtls_config.h; vireo's glue in net/tls/. Included by
# the top-level Makefile always, but only TLS=1 links it into the image (a
# default image build neither fetches nor links it; make test-host fetches it
# for the key-loading tests, tests/host/net/tls/host.mk). See docs/https.md.
#
# Credentials: TLS_CERT=<chain.pem> TLS_KEY=<key.pem> at build time, or else
# none: the appliance then generates its key and a self-signed certificate at
# boot (net/tls/tls_cert.c; docs/https.md), and the log says so.

MBEDTLS_SRCDIR := $(BUILD)/mbedtls-src/mbedtls
MBEDTLS_STAMP  := $(BUILD)/mbedtls-src/stamp
MBEDTLS_LIB    := $(BUILD)/mbedtls/libmbedtls.a

# Code that includes mbedTLS headers: vireo's few libc headers for it first
# (net/tls/include), the config file, no host headers (-nostdinc).
MBEDTLS_CFLAGS := -Inet/tls/include -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"'
# net/tls/include goes before the kernel's -Ikernel (lib/string.h lacks strstr).
# -O2 whatever HOT_OPT says (MBEDTLS_COLD below are COLD_OPT).
MBEDTLS_LIB_CFLAGS := -Inet/tls/include $(KCFLAGS) -O2 -nostdinc -isystem $(LWIP_GCC_INC) $(MBEDTLS_CFLAGS) -I$(MBEDTLS_SRCDIR)/library

# Every library/*.c of the pinned release: the config decides what each one
# compiles to (most are empty with this config), and the linker's
# --gc-sections keeps only what the server reaches. Listed by the pinned
# release's library/ directory, read once the tree exists.
MBEDTLS_SRCS = $(notdir $(wildcard $(MBEDTLS_SRCDIR)/library/*.c))
MBEDTLS_OBJS = $(patsubst %.c,$(BUILD)/mbedtls/%.o,$(MBEDTLS_SRCS))
# Built for size (COLD_OPT, -Oz, after -O2 wins), as the kernel's cold code is: what
# runs once per handshake or less (the handshake state machines, X.509 and
# ASN.1, key parsing and writing, PSA's glue, the DRBGs, RSA's padding),
# and SHA-384/512 (transcripts of the one AES-256 suite, P-384 signatures).
# What runs per record or per handshake's arithmetic stays -O2: the record
# layer (ssl_msg, cipher: built -Os, 64 KiB responses over HTTPS at c1 made
# 31-32 MB/s in two make bench-tls runs, 36-46 at -O2 in three), AES, GCM,
# ChaCha20-Poly1305, bignum_core's multiply-accumulate, the P-256
# reduction (ecp_curves) and x25519. bignum (division, inversion,
# exponentiation around the core), ecp (the point arithmetic and combs) and
# SHA-256 are -Os too since issue 33 made room for ACME: 9,728 B of the
# image for about 3.5 % more instructions per handshake (X25519 and P-256
# ECDHE plus a P-256 signature, callgrind on a host build with these flags;
# docs/https.md, "Image size").
MBEDTLS_COLD := ssl_tls ssl_tls13_server ssl_tls13_client ssl_tls13_keys ssl_tls13_generic \
	ssl_tls12_server ssl_tls12_client ssl_client ssl_ticket ssl_ciphersuites \
	psa_crypto psa_crypto_mac psa_crypto_ecp psa_crypto_hash psa_crypto_rsa psa_crypto_slot_management \
	psa_crypto_client psa_crypto_cipher psa_crypto_aead psa_util \
	x509 x509_crt x509_create x509write x509write_crt x509write_csr \
	asn1parse asn1write oid pem base64 pk pk_wrap pk_ecc pkparse pkwrite \
	rsa rsa_alt_helpers ecdsa ecdh md hmac_drbg sha512 bignum ecp sha256
$(patsubst %,$(BUILD)/mbedtls/%.o,$(MBEDTLS_COLD)): MBEDTLS_LIB_CFLAGS += $(COLD_OPT)
# No frame pointer in mbedTLS (KCFLAGS keeps one everywhere else for
# panic backtraces): rbp is one more register for the bignum and hash code
# and no push/pop per call: 6,656 B of the TLS image, and fewer instructions
# per handshake (about 3 %). The cost: a fault inside mbedTLS prints its rip
# and registers, but the backtrace past it may stop or show a wrong frame
# (kernel/panic.c follows rbp only while it points up the stack, so a stray
# one ends the walk, never a second fault). The ALT objects get the same.
MBEDTLS_LIB_CFLAGS += -fomit-frame-pointer -momit-leaf-frame-pointer
# vireo's code behind mbedTLS's _ALT hooks (mbedtls_config.h says which; one is
# added by net/tls/patches/0002), archived with the library (as
# vireo-<name>.o) so every program that links mbedTLS (the image, the host
# tests, the fuzzer) gets them.
MBEDTLS_ALT_SRCS := net/tls/x25519_alt.c net/tls/tls_time.c
MBEDTLS_ALT_OBJS := $(patsubst net/tls/%.c,$(BUILD)/mbedtls/vireo-%.o,$(MBEDTLS_ALT_SRCS))

TLS_SRCS := net/tls/tls_port.c net/tls/tls_keys.c net/tls/tls_cert.c net/tls/tls_held.c net/tls/tls_libc.c \
	net/tls/tlsmem.c
# Key and certificate loading, generation and the boot's plan run once per
# boot or install: cold, COLD_OPT (-Os gave 1 KiB of the image when issue 29
# needed the room).
TLS_COLD_SRCS := net/tls/tls_keys.c net/tls/tls_cert.c net/tls/tlsmem.c
$(patsubst %.c,$(BUILD)/k/%.o,$(TLS_COLD_SRCS)): KCFLAGS += $(COLD_OPT)
# ACME's building blocks (net/acme/, issue 33): JSON, base64url, JWS,
# the key authorization and the CSR, renewal timing. In TLS images only (ACME needs TLS), cold: run
# once per order, so COLD_OPT. Nothing calls them yet, so --gc-sections keeps
# none of them in the image until the ACME client does.
ACME_SRCS := net/acme/acme_json.c net/acme/b64url.c net/acme/acme_renew.c net/acme/acme_sign.c \
	net/acme/acme_client.c
TLS_SRCS += $(ACME_SRCS)
$(patsubst %.c,$(BUILD)/k/%.o,$(ACME_SRCS)): KCFLAGS += $(COLD_OPT)
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
$(MBEDTLS_OBJS): $(BUILD)/mbedtls/%.o: $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(wildcard net/tls/include/*.h) net/tls/mbedtls.mk
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      mbedtls/$*.c")
	$(Q)$(CC) $(MBEDTLS_LIB_CFLAGS) -c $(MBEDTLS_SRCDIR)/library/$*.c -o $@

$(MBEDTLS_ALT_OBJS): $(BUILD)/mbedtls/vireo-%.o: net/tls/%.c $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(wildcard net/tls/include/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(MBEDTLS_LIB_CFLAGS) -c $< -o $@

# The object list is only known after the fetch: a recursive make builds the
# archive once the stamp exists.
$(MBEDTLS_LIB): $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(wildcard net/tls/include/*.h) $(MBEDTLS_ALT_SRCS) net/tls/mbedtls.mk
	$(Q)$(MAKE) --no-print-directory mbedtls-objs
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcsD $@ $(BUILD)/mbedtls/*.o

.PHONY: mbedtls-objs
mbedtls-objs: $(MBEDTLS_OBJS) $(MBEDTLS_ALT_OBJS)

$(BUILD)/k/net/tls/%.o: KCFLAGS += -nostdinc -isystem $(LWIP_GCC_INC) $(MBEDTLS_CFLAGS)
$(TLS_OBJS): | $(MBEDTLS_STAMP)

# Credentials, as a C file of two NUL-terminated arrays (empty without
# TLS_CERT= and TLS_KEY=).
TLS_CERT ?=
TLS_KEY  ?=
ifneq ($(if $(TLS_CERT),1)$(if $(TLS_KEY),1),)
ifeq ($(and $(TLS_CERT),$(TLS_KEY)),)
$(error give both TLS_CERT= and TLS_KEY=, or neither for a certificate generated at boot)
endif
endif
# TLS_CA=<bundle.pem>: the TLS clients' trust anchors baked in (an ESP's
# EFI/vireo/tls/ca.pem is preferred over it); none: every TLS client
# connection is refused (docs/https.md).
TLS_CA ?=
TLS_CRED_STAMP := $(BUILD)/tls/creds.$(shell printf '%s %s %s' '$(TLS_CERT)' '$(TLS_KEY)' '$(TLS_CA)' | sha1sum | cut -c1-12)
$(TLS_CRED_STAMP):
	@mkdir -p $(dir $@)
	$(Q)rm -f $(BUILD)/tls/creds.* && touch $@

$(BUILD)/tls_creds.c: net/tls/mkcreds.py $(TLS_CRED_STAMP) $(TLS_CERT) $(TLS_KEY) $(TLS_CA)
	$(Q)$(PYTHON) net/tls/mkcreds.py $@ '$(TLS_CA)' $(TLS_CERT) $(TLS_KEY)
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
