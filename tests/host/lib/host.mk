# lib/: number parsing, the formatter (against the host's vsnprintf), the
# /metrics writer and registry (lib/metrics.c, linked into every host test),
# and lib/crypto/ (ChaCha20 and SipHash-2-4 against their published vectors,
# the fast-key-erasure generator built on them), CRC-32C, the intrusive list
# (lib/list.h, inline: nothing to link).
HOST_TESTS += test_parse test_fmt test_metrics test_crypto test_crc32c test_list
test_crc32c_USES := crc32c
test_parse_USES := parse
test_fmt_USES := fmt
test_crypto_USES := chacha20 csprng siphash
