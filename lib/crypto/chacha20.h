/* ChaCha20 (RFC 8439 section 2.3): the block function, byte-oriented. Pure
 * code, built for the host tests too. */
#ifndef VIREO_CHACHA20_H
#define VIREO_CHACHA20_H

#include "lib/types.h"

#define CHACHA20_KEY_BYTES	32
#define CHACHA20_NONCE_BYTES	12
#define CHACHA20_BLOCK_BYTES	64

/* Writes the 64-byte keystream block for key, 32-bit block counter and
 * 96-bit nonce (RFC 8439's layout) to out. */
void chacha20_block(const u8 key[CHACHA20_KEY_BYTES], u32 counter,
		    const u8 nonce[CHACHA20_NONCE_BYTES], u8 out[CHACHA20_BLOCK_BYTES]);

#endif
