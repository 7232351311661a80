# storage/: the on-disk format's encoders and decoders, the memory index,
# the block layer and the store over a model disk (memdisk.c: a volatile
# write cache that a crash loses or tears sector by sector).
HOST_TESTS += test_logfmt
test_logfmt_USES := logfmt crc32c
FUZZERS += fuzz_logfmt
fuzz_logfmt_USES := logfmt crc32c
HOST_TESTS += test_index
test_index_USES := index
HOST_TESTS += test_blk
test_blk_USES := blk
test_blk_SRCS := tests/host/storage/memdisk.c
HOST_TESTS += test_store
test_store_USES := store store_compact store_open blk index logfmt crc32c fmt
test_store_SRCS := tests/host/storage/memdisk.c
HOST_TESTS += test_store_log
test_store_log_USES := store_log store store_compact store_open blk index logfmt crc32c fmt
test_store_log_SRCS := tests/host/storage/memdisk.c
