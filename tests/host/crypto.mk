# The random generator's primitives: ChaCha20 and SipHash-2-4 against their
# published vectors, and the fast-key-erasure generator built on them.
HOST_TESTS += test_crypto
test_crypto_SRCS := tests/host/lib/test_crypto.c lib/crypto/chacha20.c lib/crypto/csprng.c lib/crypto/siphash.c
