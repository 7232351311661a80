/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), the checksum of
 * iSCSI, ext4 metadata and the store's records (storage/logfmt.h). */
#ifndef VIREO_CRC32C_H
#define VIREO_CRC32C_H

#include "lib/types.h"

/* The CRC of p[0..n) continuing from crc (0 to start): crc32c(0, "123456789",
 * 9) is 0xe3069283, and crc32c(crc32c(0, a, na), b, nb) is the CRC of a
 * followed by b. */
u32 crc32c(u32 crc, const void *p, size_t n);

/* The CRC of a || b from a's (crc, any start) and b's, where part is
 * crc32c(seed, b, n): what crc32c(crc, b, n) would give, without reading b
 * again (about 32 steps per set bit of n, against a table step per byte).
 * Lets a checker that has each record's CRC check the batch's too. */
u32 crc32c_extend(u32 crc, u32 seed, u32 part, size_t n);

#endif
