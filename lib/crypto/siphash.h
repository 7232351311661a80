/* SipHash-2-4: the app API's (include/vireo/siphash.h), implemented in
 * lib/crypto/siphash.c. Used for RFC 6528 initial sequence numbers and SYN
 * cookies. Pure code, built for the host tests too. */
#ifndef VIREO_SIPHASH_H
#define VIREO_SIPHASH_H

#include "lib/types.h"
#include "vireo/siphash.h"

#endif
