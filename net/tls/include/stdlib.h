/* <stdlib.h> for mbedTLS in the freestanding kernel. mbedTLS includes it for
 * calloc/free, which MBEDTLS_PLATFORM_*_MACRO replace (mbedtls_config.h). */
#ifndef VIREO_TLS_STDLIB_H
#define VIREO_TLS_STDLIB_H
#include <stddef.h>
#endif
