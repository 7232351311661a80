# net/acme/: ACME's building blocks (issue 33). The pure ones (JSON,
# base64url, renewal timing) alone; the JWS, key authorization and CSR over
# the host's mbedTLS (tests/host/net/tls/host.mk), checked against openssl
# and python3 at test time on the fixtures' keys.
HOST_TESTS += test_acme_json test_b64url test_acme_renew test_acme_client
test_acme_client_USES := acme_client acme_json acme_renew wallclock
# the machine with the store's order resumption (make STORAGE=1's)
$(BUILD)/host/test_acme_client: HOST_CFLAGS += -DVIREO_ACME_KEEP=1
$(BUILD)/fuzz/fuzz_acme_client: FUZZ_CFLAGS += -DVIREO_ACME_KEEP=1
test_acme_json_USES := acme_json
test_b64url_USES := b64url
test_acme_renew_USES := acme_renew wallclock
FUZZERS += fuzz_acme_json fuzz_acme_client
fuzz_acme_json_USES := acme_json
fuzz_acme_client_USES := acme_client acme_json acme_renew wallclock

HOST_TESTS += test_acme_sign
test_acme_sign_USES := acme_sign acme_json b64url tls_cert tls_keys wallclock
# (This file is read before tests/host/net/tls/host.mk: its names are
# used deferred, the fixtures' directory written out.)
test_acme_sign_SRCS = $(TLS_HOST) $(MBEDTLS_HOST_LIB)
$(BUILD)/host/test_acme_sign: HOST_CFLAGS += -I$(MBEDTLS_SRCDIR)/include \
	'-DMBEDTLS_CONFIG_FILE="net/tls/mbedtls_config.h"' -DTLS_FIX_DIR='"$(BUILD)/host/tls-fix"'
$(BUILD)/host/test_acme_sign: $(BUILD)/host/tls-fix/stamp
