/* vireo's image compression (make ZIMAGE=1, the default): an LZ77 byte
 * format the UEFI stub (boot/zstub.c) decodes and tools/zpack.c writes.
 * Host-tested (tests/host/boot/test_lz.c) and fuzzed (tests/fuzz/boot/fuzz_lz.c). */
#ifndef VIREO_BOOT_LZ_H
#define VIREO_BOOT_LZ_H

#include "lib/types.h"

/*
 * The stream is a run of sequences. Each starts with a token byte: its high
 * nibble is the count of literal bytes that follow, its low nibble the match
 * length less LZ_MIN_MATCH. A nibble of 15 continues in the next bytes, each
 * added to it, until one below 255. After the literals comes the match: a
 * 16-bit little-endian distance back into the output (1..65,535), then the
 * match length's continuation bytes if its nibble was 15. The last sequence
 * is literals only (its match nibble 0, perhaps no literals): the stream
 * ends right after them, and a stream that ends anywhere else is cut.
 */
#define LZ_MIN_MATCH 4
#define LZ_WINDOW 65535u

/* Decodes src[0, src_len) into dst, which must come out exactly dst_len
 * bytes long. Returns 0, or -1 for a stream that is malformed, refers
 * before the output's start, or would write past dst_len or stop short of
 * it; dst's contents are then unspecified. Reads and writes only inside the
 * two buffers whatever the input. */
int lz_decode(u8 *dst, size_t dst_len, const u8 *src, size_t src_len);

#endif
