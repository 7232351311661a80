/* <inttypes.h> for mbedTLS in the freestanding kernel: <stdint.h> and the
 * printf formats its debug header names (x86-64, LP64). */
#ifndef VIREO_TLS_INTTYPES_H
#define VIREO_TLS_INTTYPES_H
#include <stdint.h>
#define PRId64 "ld"
#define PRIu64 "lu"
#define PRIx64 "lx"
#define PRId32 "d"
#define PRIu32 "u"
#define PRIx32 "x"
#endif
