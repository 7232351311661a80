# apps/kv's store (keys, values, the memory bound, ETags, conditionals, listings).
HOST_TESTS += test_kv_store
test_kv_store_SRCS := apps/kv/tests/test_kv_store.c apps/kv/kv_store.c lib/crypto/siphash.c
FUZZERS += fuzz_kv_store
fuzz_kv_store_SRCS := apps/kv/tests/fuzz_kv_store.c apps/kv/kv_store.c lib/crypto/siphash.c
# apps/kv/kv.c's HTTP mapping against a stand-in for the API (in the test).
HOST_TESTS += test_kv_http
test_kv_http_SRCS := apps/kv/tests/test_kv_http.c apps/kv/kv.c apps/kv/kv_store.c lib/crypto/siphash.c lib/outbuf.c
