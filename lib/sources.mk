# lib/: the pure toolkit under everything (no kernel, no device): string and
# memory functions (the host's libc stands in for string.c in host builds),
# the formatter, number parsing, a bounded text buffer, ChaCha20, SipHash and
# the fast-key-erasure generator, CRC-32C, the Prometheus text writer and the
# /metrics registry. The formatter and the writer are cold: they write log
# lines and /metrics text, never a packet.
HOT_SRCS += lib/string.c lib/parse.c lib/outbuf.c lib/crc32c.c lib/crypto/chacha20.c lib/crypto/csprng.c \
	lib/crypto/siphash.c
COLD_SRCS += lib/fmt.c lib/metrics.c
