/* Host tests only: vireo's mbedTLS configuration (net/tls/mbedtls_config.h)
 * with the TLS client compiled in, as the connect-out and ACME issues will
 * turn it on, so the fixes for client-side advisories
 * (net/tls/patches/, docs/https.md's table) are tested before that
 * configuration ships. What those issues add beyond MBEDTLS_SSL_CLI_C
 * (certificate verification against a CA bundle, host-name checks,
 * MBEDTLS_HAVE_TIME_DATE) needs nothing more compiled for these tests. */
#ifndef VIREO_TESTS_HOST_NET_TLS_MBEDTLS_CONFIG_CLIENT_H
#define VIREO_TESTS_HOST_NET_TLS_MBEDTLS_CONFIG_CLIENT_H
#include "net/tls/mbedtls_config.h"
#define MBEDTLS_SSL_CLI_C
#endif
