/* ELF RELR relocations ("-z pack-relative-relocs"): the UEFI image's
 * self-relocation, host-tested (tests/host/boot/test_relr.c). */
#ifndef VIREO_BOOT_RELR_H
#define VIREO_BOOT_RELR_H

#include "lib/types.h"

/*
 * Adds base to every 64-bit word the table names. An even entry is the
 * offset from base of one word to relocate; the next entries, while odd,
 * are bitmaps of the 63 words after the last one named: bit i (1..63) set
 * relocates the word i - 1 places on, and each bitmap moves on 63 words.
 * Uses no relocated data itself (it runs before anything is relocated).
 */
void relr_apply(u64 base, const u64 *relr, size_t n);

#endif
