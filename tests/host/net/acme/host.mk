# net/acme/: ACME's building blocks (issue 33). The pure ones (JSON,
# base64url, renewal timing) alone; the JWS, key authorization and CSR over
# the host's mbedTLS (tests/host/net/tls/host.mk), checked against openssl
# and python3 at test time on the fixtures' keys.
HOST_TESTS += test_acme_json test_b64url test_acme_renew
test_acme_json_USES := acme_json
test_b64url_USES := b64url
test_acme_renew_USES := acme_renew
FUZZERS += fuzz_acme_json
fuzz_acme_json_USES := acme_json
