# net/tls/: certificate/key loading (tls_keys.c) with bad input, over the
# same mbedTLS sources and configuration as the image, built for the host
# (glibc, ASan/UBSan) into one archive by a recursive make once the fetch has
# run (the list of library/*.c is only known then). tests/host/net/tls/tls_host.c is
# the platform glue (counted heap, randomness, fixtures) all three TLS
# programs below share.
HOST_TESTS += test_tls_keys
MBEDTLS_HOST_LIB := $(BUILD)/host/mbedtls/libmbedtls.a
MBEDTLS_HOST_CFLAGS := $(HOST_CFLAGS) -I$(MBEDTLS_SRCDIR)/include -I$(MBEDTLS_SRCDIR)/library \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"'
MBEDTLS_HOST_OBJS = $(patsubst %.c,$(BUILD)/host/mbedtls/%.o,$(MBEDTLS_SRCS))
TLS_HOST := tests/host/net/tls/tls_host.c
test_tls_keys_USES := tls_keys
test_tls_keys_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_tls_keys: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"'

$(MBEDTLS_HOST_OBJS): $(BUILD)/host/mbedtls/%.o: $(MBEDTLS_STAMP) net/tls/mbedtls_config.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  mbedtls/$*.c")
	$(Q)$(HOST_CC) $(MBEDTLS_HOST_CFLAGS) -MF $@.d -c $(MBEDTLS_SRCDIR)/library/$*.c -o $@

MBEDTLS_HOST_ALT_OBJS := $(patsubst net/tls/%.c,$(BUILD)/host/mbedtls/vireo-%.o,$(MBEDTLS_ALT_SRCS))
$(MBEDTLS_HOST_ALT_OBJS): $(BUILD)/host/mbedtls/vireo-%.o: net/tls/%.c $(MBEDTLS_STAMP) net/tls/mbedtls_config.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  HOSTCC  $<")
	$(Q)$(HOST_CC) $(MBEDTLS_HOST_CFLAGS) -MF $@.d -c $< -o $@

.PHONY: mbedtls-host-objs
mbedtls-host-objs: $(MBEDTLS_HOST_OBJS) $(MBEDTLS_HOST_ALT_OBJS)
$(MBEDTLS_HOST_LIB): $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(MBEDTLS_ALT_SRCS)
	$(Q)$(MAKE) --no-print-directory mbedtls-host-objs
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcsD $@ $(BUILD)/host/mbedtls/*.o

# Fixtures made by openssl at build time (no key is committed): two P-256
# keys (the second mismatches the certificate), RSA 2048 and 1024, P-384,
# an encrypted key, a P-256 leaf issued by ec-cert.pem (issued-*), and a
# P-256 key whose DER ends in a zero byte (drawn until one does).
TLS_FIX := $(BUILD)/host/tls-fix
$(BUILD)/host/test_tls_keys: HOST_CFLAGS += -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/host/test_tls_keys: $(TLS_FIX)/stamp
$(TLS_FIX)/stamp: tests/host/net/tls/host.mk
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  OPENSSL $(TLS_FIX)/")
	$(Q)set -e; cd $(TLS_FIX); \
	cert() { openssl req -x509 -new -key $$1-key.pem -subj /CN=test -days 30 -out $$1-cert.pem 2>/dev/null; }; \
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec-key.pem 2>/dev/null; cert ec; \
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec2-key.pem 2>/dev/null; \
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa-key.pem 2>/dev/null; cert rsa; \
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:1024 -out rsa1024-key.pem 2>/dev/null; cert rsa1024; \
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-384 -out p384-key.pem 2>/dev/null; cert p384; \
	openssl pkey -in ec-key.pem -aes256 -passout pass:secret -out enc-key.pem 2>/dev/null; \
	openssl x509 -in ec-cert.pem -outform DER -out ec-cert.der; \
	openssl pkey -in ec-key.pem -outform DER -out ec-key.der; \
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out issued-key.pem 2>/dev/null; \
	openssl req -new -key issued-key.pem -subj /CN=leaf 2>/dev/null | openssl x509 -req -CA ec-cert.pem \
		-CAkey ec-key.pem -CAcreateserial -days 30 -out issued-cert.pem 2>/dev/null; \
	cat issued-cert.pem ec-cert.pem > issued-chain.pem; \
	for i in $$(seq 4096); do \
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec00-key.pem 2>/dev/null; \
		openssl pkey -in ec00-key.pem -outform DER -out ec00-key.der; \
		[ "$$(tail -c1 ec00-key.der | od -An -tx1 | tr -d ' ')" = 00 ] && break; \
	done; cert ec00; \
	touch stamp

# HTTPS capacity from memory (net/tls/tlsmem.c): pure arithmetic.
HOST_TESTS += test_tlsmem
test_tlsmem_USES := tlsmem

# The certificate made at boot (net/tls/tls_cert.c): names, the builder over
# the fixture key, parsed back; generation under allocation failures.
HOST_TESTS += test_tls_cert
test_tls_cert_USES := tls_cert tls_keys wallclock
test_tls_cert_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_tls_cert: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/host/test_tls_cert: $(TLS_FIX)/stamp

# The certificates handshakes hold while the served one is switched or a
# TLS-ALPN-01 challenge cleared (net/tls/tls_held.c), over real keys.
HOST_TESTS += test_tls_held
test_tls_held_USES := tls_held tls_cert tls_keys wallclock
test_tls_held_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_tls_held: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/host/test_tls_held: $(TLS_FIX)/stamp

# mbedTLS's gmtime (net/tls/tls_time.c) and X.509 verification judged
# with and without a wall clock (tls_host.c's settable one).
HOST_TESTS += test_tls_time
test_tls_time_USES := tls_keys
test_tls_time_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_tls_time: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/host/test_tls_time: $(TLS_FIX)/stamp

# X25519 through vireo's ladder (net/tls/x25519_alt.c, mbedTLS patch 0002):
# RFC 7748's vectors, random agreement, low-order points.
HOST_TESTS += test_x25519_alt
test_x25519_alt_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_x25519_alt: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'

# The configuration as a server over loopback against openssl s_client.
HOST_TESTS += test_mbedtls_config
test_mbedtls_config_USES := tls_keys
test_mbedtls_config_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_mbedtls_config: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/host/test_mbedtls_config: $(TLS_FIX)/stamp

# fuzz_mbedtls_config: the server's record input (tests/fuzz/net/tls/fuzz_mbedtls_config.c), over mbedTLS
# built with clang for libFuzzer (coverage, ASan, UBSan) into its own archive.
FUZZERS += fuzz_mbedtls_config
MBEDTLS_FUZZ_LIB := $(BUILD)/fuzz/mbedtls/libmbedtls.a
MBEDTLS_FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined -Itests/host/shim -I. -DHOST_TEST \
	-I$(MBEDTLS_SRCDIR)/include -I$(MBEDTLS_SRCDIR)/library '-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"'
MBEDTLS_FUZZ_OBJS = $(patsubst %.c,$(BUILD)/fuzz/mbedtls/%.o,$(MBEDTLS_SRCS))
fuzz_mbedtls_config_USES := tls_keys
fuzz_mbedtls_config_SRCS := $(TLS_HOST) $(MBEDTLS_FUZZ_LIB)
$(BUILD)/fuzz/fuzz_mbedtls_config: FUZZ_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/fuzz/fuzz_mbedtls_config: $(TLS_FIX)/stamp

$(MBEDTLS_FUZZ_OBJS): $(BUILD)/fuzz/mbedtls/%.o: $(MBEDTLS_STAMP) net/tls/mbedtls_config.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  mbedtls/$*.c")
	$(Q)$(FUZZ_CC) $(MBEDTLS_FUZZ_CFLAGS) -c $(MBEDTLS_SRCDIR)/library/$*.c -o $@

MBEDTLS_FUZZ_ALT_OBJS := $(patsubst net/tls/%.c,$(BUILD)/fuzz/mbedtls/vireo-%.o,$(MBEDTLS_ALT_SRCS))
$(MBEDTLS_FUZZ_ALT_OBJS): $(BUILD)/fuzz/mbedtls/vireo-%.o: net/tls/%.c $(MBEDTLS_STAMP) net/tls/mbedtls_config.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(MBEDTLS_FUZZ_CFLAGS) -c $< -o $@

.PHONY: mbedtls-fuzz-objs
mbedtls-fuzz-objs: $(MBEDTLS_FUZZ_OBJS) $(MBEDTLS_FUZZ_ALT_OBJS)
$(MBEDTLS_FUZZ_LIB): $(MBEDTLS_STAMP) net/tls/mbedtls_config.h $(MBEDTLS_ALT_SRCS)
	$(Q)$(MAKE) --no-print-directory mbedtls-fuzz-objs
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@
	$(Q)$(AR) rcsD $@ $(BUILD)/fuzz/mbedtls/*.o

# Every backported Mbed TLS fix (net/tls/patches/, docs/https.md's
# advisory table), one test each (tests/host/net/tls/test_patches.c), over
# the image's own mbedTLS configuration, server and client (the TLS client
# is compiled in since connect-out turned it on).
HOST_TESTS += test_patches
test_patches_USES := tls_keys
test_patches_SRCS := $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_patches: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(TLS_FIX)"'
$(BUILD)/host/test_patches: $(TLS_FIX)/stamp
