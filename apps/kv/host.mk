# apps/kv's host tests (apps/kv/tests/): the store (keys, values, the memory
# bound, ETags, conditionals, listings) and kv.c's HTTP mapping against a
# stand-in for the API (in the test).
KV_STORE := apps/kv/kv_store.c
HOST_TESTS += test_kv_store test_kv_http
test_kv_store_USES := siphash
test_kv_store_SRCS := $(KV_STORE)
test_kv_http_USES := siphash outbuf
test_kv_http_SRCS := apps/kv/kv.c $(KV_STORE)
FUZZERS += fuzz_kv_store
fuzz_kv_store_USES := siphash
fuzz_kv_store_SRCS := $(KV_STORE)
