# The random generator's primitives: ChaCha20 and SipHash-2-4 against their
# published vectors, and the fast-key-erasure generator built on them.
HOST_TESTS += test_crypto
test_crypto_SRCS := tests/host/test_crypto.c kernel/chacha20.c kernel/csprng.c kernel/siphash.c
