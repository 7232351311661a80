/* <assert.h> for mbedTLS in the freestanding kernel. mbedTLS uses assert()
 * only for internal invariants in debug builds (MBEDTLS_*_ASSERT); here it
 * compiles to nothing, as with NDEBUG. static_assert is C11's keyword. */
#ifndef VIREO_TLS_ASSERT_H
#define VIREO_TLS_ASSERT_H
#define assert(x) ((void)0)
#define static_assert _Static_assert
#endif
