/* base64url without padding (RFC 4648 section 5, as RFC 7515 section 2
 * uses it): what JWS, JWK thumbprints and ACME's tokens are written in. */
#ifndef VIREO_B64URL_H
#define VIREO_B64URL_H

#include "lib/types.h"

/* The encoded length of n bytes. */
#define B64URL_LEN(n) (((n) * 4 + 2) / 3)

/* in[n] into out[cap] with a NUL: 0 and *outlen = B64URL_LEN(n), or -1
 * when it does not fit. */
int b64url_encode(const void *in, size_t n, char *out, size_t cap, size_t *outlen);

/* Strict: only A-Z a-z 0-9 - _, no padding, no white space, a length that
 * is not 1 mod 4, and the last character's unused bits zero (one text per
 * byte string). 0 and *outlen, or -1 (bad text, or more than cap bytes). */
int b64url_decode(const char *in, size_t n, u8 *out, size_t cap, size_t *outlen);

#endif
